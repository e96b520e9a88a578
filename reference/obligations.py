"""The obligations of the progress rules (``reference/liveness.py``): one record per partition that
must make progress, with its clock."""

from __future__ import annotations


class _Ob:
    """One obligation. A clock runs from ``since`` while not ``blocked``; it restarts (``since`` :=
    the time of the event that unblocks it) each time the blocker goes away. P1 obligations are this
    (opened and discharged by the ten thousand on long histories: four slots); P3 ones :class:`_Ob3`."""

    __slots__ = ("kind", "since", "opened", "blocked")
    cov_since = None                # (P3 only)

    def __init__(self, kind: str, t: float | None):
        self.kind = kind            # P1: "elect" | "unset"; P3: "reassign"
        self.since = t              # P1 clock / P3 "after healing" clock
        self.opened = t
        self.blocked = True         # until the first refresh


class _Ob3(_Ob):
    """A P3 obligation: also the ISR-covers-the-target clock and the target replicas."""

    __slots__ = ("cov_since", "cov_blocked", "trs")

    def __init__(self, t: float | None):
        super().__init__("reassign", t)
        self.cov_since = None       # ISR ⊇ target observed since (None: not covered)
        self.cov_blocked = True
        self.trs = None             # the target replicas
