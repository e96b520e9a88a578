"""Result types of the conformance checkers (ZooKeeper ``checker.py``, KRaft ``kraft.py``): one
reported problem (:class:`Divergence`, kind ``invariant`` for ``H*``, ``progress`` for ``P*``,
``divergence`` for ``D*``) and the whole result (:class:`ConformanceResult`, ``verdict.json``
``checks.conformance``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from reference.rules import rule_id

MAX_REPORTED = 1000


@dataclass
class Divergence:
    """One reported problem: a hard-invariant violation (``H*``) or an Apache divergence (``D*``)."""

    rule: str
    subject: str
    explanation: str
    seq: int | None = None
    zxid: int | None = None
    before: dict | None = None
    after: dict | None = None
    allowed: list[str] = field(default_factory=list)

    @property
    def rule_id(self) -> str:
        return rule_id(self.rule)

    @property
    def kind(self) -> str:
        return {"H": "invariant", "P": "progress"}.get(self.rule[:1], "divergence")

    def to_dict(self) -> dict:
        return {"rule": self.rule, "rule_id": self.rule_id, "kind": self.kind, "subject": self.subject,
                "seq": self.seq, "zxid": self.zxid, "before": self.before, "after": self.after,
                "allowed": list(self.allowed), "explanation": self.explanation}

    def __str__(self) -> str:
        return f"[{self.rule_id}] {self.subject} seq={self.seq} zxid={self.zxid}: {self.explanation}"


@dataclass
class ConformanceResult:
    verdict: str
    divergences: list[Divergence]
    invariant_violations: list[Divergence]
    stats: dict
    profile: str = ""

    def to_dict(self) -> dict:
        return {"verdict": self.verdict, "profile": self.profile,
                "divergences": [d.to_dict() for d in self.divergences[:MAX_REPORTED]],
                "invariant_violations": [d.to_dict() for d in self.invariant_violations[:MAX_REPORTED]],
                "stats": dict(self.stats)}

    def rules(self) -> set[str]:
        """All rule ids reported (``{"H5", "D1", ...}``), handy in tests."""
        return {d.rule for d in self.divergences} | {d.rule for d in self.invariant_violations}
