"""Protocol samples as the KRaft checker sees them: :class:`PObs` (one partition entry of one
Metadata answer, built by :func:`partition_obs`) and :class:`QObs` (one DescribeQuorum answer), and
which entry errors still carry a real leader (:data:`LEADER_ERRORS`) or a real leader epoch, ISR and
replicas (:data:`STATE_ERRORS`). docs/run-record.md describes the sampled events.

The checker that judges them: reference/kraft.py.
"""

from __future__ import annotations

from typing import NamedTuple

LEADER_ERRORS = (None, "NONE", "REPLICA_NOT_AVAILABLE")           # entries that pair a real leader with LE
STATE_ERRORS = LEADER_ERRORS + ("LEADER_NOT_AVAILABLE", "LISTENER_NOT_FOUND")   # real LE/ISR/replicas


def ints(xs) -> tuple:
    """A sampled id list (``None``: empty) as a tuple of ints."""
    return tuple(int(x) for x in (xs or ()))


class PObs(NamedTuple):
    """One partition entry of one Metadata answer."""

    seq: int
    t: float
    by: int | None
    leader: int
    le: int | None
    isr: tuple
    rs: tuple
    elr: tuple | None
    lke: tuple | None
    error: str | None

    @property
    def has_leader(self) -> bool:
        return self.error in LEADER_ERRORS and self.leader >= 0

    def to_dict(self) -> dict:
        d = {"leader": self.leader, "leader_epoch": self.le, "isr": list(self.isr), "replicas": list(self.rs),
             "answered_by": self.by, "error": self.error, "seq": self.seq, "t": self.t}
        if self.elr is not None:
            d["eligible_leader_replicas"] = list(self.elr)
            d["last_known_elr"] = list(self.lke or ())
        return d


class QObs(NamedTuple):
    seq: int
    t: float
    by: int | None
    leader: int | None
    epoch: int

    def to_dict(self) -> dict:
        return {"leader_id": self.leader, "leader_epoch": self.epoch, "answered_by": self.by, "seq": self.seq,
                "t": self.t}


def partition_obs(seq: int, t: float, by: int | None, p: dict) -> PObs:
    """The partition entry ``p`` of a Metadata answer (sequence ``seq``, time ``t``, answered by broker
    ``by``) as a :class:`PObs`: leader -1 when absent, ELR and last known ELR only when the answer has an ELR."""
    le = p.get("leader_epoch")
    elr = p.get("eligible_leader_replicas")
    return PObs(seq, t, by, -1 if p.get("leader") is None else int(p["leader"]),
                None if le is None else int(le), ints(p.get("isr")), ints(p.get("replicas")),
                None if elr is None else ints(elr),
                None if elr is None else ints(p.get("last_known_elr")), p.get("error"))
