"""The verdict: one run record in, one classified verdict out.

Used by the runner when a run ends, by ``certify``, by the report and by re-judging stored records,
so every consumer of a run makes the same decision. Pure: events and metadata in, no I/O.

A verdict is a claim about the broker:

``PASS``
    every check the scenario names passed and the run covered what it claims.
``FAIL``
    a broker-observable fact broke a promise: a conformance rule id, lost / duplicated acknowledged
    writes, an expectation on broker state. Data loss found in the complete part of a record is
    FAIL whatever else went wrong.
``UNKNOWN``
    the run cannot decide, with a ``cause`` from :data:`CAUSES`: something went wrong in the
    harness or on the host, or the record does not hold enough to decide.
"""

from __future__ import annotations

from dataclasses import dataclass, field

PASS, FAIL, UNKNOWN = "PASS", "FAIL", "UNKNOWN"
VERDICTS = (PASS, FAIL, UNKNOWN)

# Why a run is UNKNOWN. Each is about the harness, the host or the evidence, never the broker.
CAUSES: dict[str, str] = {
    "aborted": "the run was interrupted (Ctrl-C or another signal)",
    "harness-crash": "the harness itself failed (a bug, or its process died); the record says where",
    "container-removed": "a container of the cluster was removed by something other than the harness",
    "container-stopped": "a container of the cluster was stopped, killed or paused by something other "
                         "than the harness",
    "docker-error": "the Docker engine failed or answered a request with an error",
    "disk-full": "the run record could not be written (no space left on the device, or another write error)",
    "record-incomplete": "the record ends before the run did: only its complete part could be judged",
    "contract": "the broker does not fit the harness's contract (docs/broker-contract.md)",
    "workload": "a client died or stalled, so the run did not exercise what it claims",
    "script": "the scenario's own script raised an error (a scenario bug, not the broker)",
    "environment": "the cluster did not start or stopped answering for a reason outside the broker",
    "checker-error": "a checker raised an error on this record",
    "undecided": "the history cannot decide a check (for example no final read of the partitions)",
}


@dataclass
class Verdict:
    verdict: str
    reason: str
    cause: str | None = None          # for UNKNOWN only: a key of CAUSES
    checks: dict = field(default_factory=dict)
    coverage: dict | None = None

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, not {self.verdict!r}")
        if self.verdict == UNKNOWN and self.cause not in CAUSES:
            raise ValueError(f"an UNKNOWN verdict needs a cause from {sorted(CAUSES)}, not {self.cause!r}")
        if self.verdict != UNKNOWN:
            self.cause = None

    def to_dict(self) -> dict:
        out = {"verdict": self.verdict, "reason": self.reason, "cause": self.cause, "checks": self.checks}
        if self.coverage is not None:
            out["coverage"] = self.coverage
        return out
