"""What the cluster told the history about each partition's ISR, for the acks semantics check.

:class:`IsrObservations` digests the ``zk.partition_state``, ``zk.topic`` and ``admin.metadata``
events of the durability scan (``scan.py``) into :class:`IsrWindows` (one per source), ZooKeeper's
txn-log copies of each ISR and the partitions seen recovering from an unclean election. The judge
(``durability.py``, ``acks_semantics``) reads them. These events are rare: nothing here is on the
scan's hot path but :meth:`IsrObservations.ack`, called only for an ack while its partition is below.
"""

from __future__ import annotations

import math

from harness.checkers.config import RunFacts
from harness.record.truth import TXNLOG


class IsrWindows:
    """Intervals where an observed ISR was smaller than the effective min ISR, and the
    ``acks=all`` acknowledgements that fall wholly inside one (controller-spec §5.12, H17).

    The ISR is observed late (watch latency, metadata propagation), so a window is trusted
    only from ``start + lag`` to ``end - lag``: an ack counts as a violation only if its
    invoke is at or after ``start + lag`` and its completion at or before ``end - lag``.
    """

    def __init__(self, source: str, lag: float):
        self.source = source
        self.lag = lag
        self.below: dict[tuple, tuple[float, int, int]] = {}  # tp -> (since, isr size, min isr)
        self.candidates: dict[tuple, list] = {}
        self.violations: list[dict] = []
        self.windows: list[dict] = []
        self.seen: set = set()  # partitions with at least one observation

    def observe(self, tp: tuple, t: float, isr_size: int | None, min_isr: int,
                committed: float | None = None) -> None:
        """An ISR observed at ``t``; ``committed``: when the state was written, if known (ZooKeeper's
        commit time, earlier than the watch saw it). A window opens at the observation (late: the
        leader may apply a controller's shrink later still) and closes at the commit (early: the
        leader counts an expansion once it is written), so both ends stay conservative."""
        self.seen.add(tp)
        is_below = isr_size is not None and isr_size < min_isr
        cur = self.below.get(tp)
        if is_below and cur is None:
            self.below[tp] = (t, isr_size, min_isr)
        elif is_below and isr_size < cur[1]:
            self.below[tp] = (cur[0], isr_size, min_isr)  # keep the start, record the smallest size
        elif not is_below and cur is not None:
            self._close(tp, t if committed is None else max(cur[0], min(t, committed)))

    def ack(self, tp: tuple, t_inv: float, t_ok: float, value, offset, process) -> None:
        """Called only while ``tp`` is in ``self.below``."""
        since = self.below[tp][0]
        if t_inv is not None and t_inv >= since + self.lag:
            self.candidates.setdefault(tp, []).append((t_inv, t_ok, value, offset, process))

    def _close(self, tp: tuple, end: float) -> None:
        since, size, min_isr = self.below.pop(tp)
        self.windows.append({"topic": tp[0], "partition": tp[1], "start": since,
                             "end": None if math.isinf(end) else end, "isr_size": size, "min_isr": min_isr})
        for t_inv, t_ok, value, offset, process in self.candidates.pop(tp, ()):
            if t_ok <= end - self.lag:
                self.violations.append({
                    "value": value, "topic": tp[0], "partition": tp[1], "offset": offset,
                    "process": process, "invoke_t": t_inv, "ok_t": t_ok,
                    "window": [since, None if math.isinf(end) else end],
                    "isr_size": size, "min_isr": min_isr, "source": self.source})

    def finish(self) -> None:
        """Windows still open at the end of the history close at +infinity."""
        for tp in list(self.below):
            self._close(tp, math.inf)


class IsrObservations:
    """The ISR observations of a run, by source: ``zk`` (the ZooKeeper watch) and ``admin``
    (admin.metadata) windows, ``txn_isr`` (tp -> [(commit t, ISR size)] from ZooKeeper's own txn log)
    and ``unclean_observed`` (partitions whose state said ``leader_recovery_state=1``)."""

    def __init__(self, facts: RunFacts, lag: float):
        self.facts = facts
        self.zk = IsrWindows("zk.partition_state", lag)
        self.admin = IsrWindows("admin.metadata", lag)
        self.unclean_observed: set = set()
        # ZooKeeper's own history of each partition's ISR (the txn-log copies): tp -> [(commit t, ISR size)]
        self.txn_isr: dict[tuple, list[tuple[float, int]]] = {}

    def ack(self, tp: tuple, t_inv: float, t_ok: float, value, offset, process) -> None:
        """An ``acks=all`` ack of a partition that either source has below its min ISR."""
        if tp in self.zk.below:
            self.zk.ack(tp, t_inv, t_ok, value, offset, process)
        if tp in self.admin.below:
            self.admin.ack(tp, t_inv, t_ok, value, offset, process)

    def zk_state(self, ev: dict) -> None:
        """A ``zk.partition_state`` event: the watch's copy of a partition's state, or the txn log's."""
        tp = (ev.get("topic"), ev.get("partition"))
        if ev.get("leader_recovery_state") == 1:
            self.unclean_observed.add(tp)
        if ev.get("deleted"):
            if tp in self.zk.below:
                self.zk._close(tp, ev["t"])
            return
        isr = ev.get("isr")
        committed = None
        zt, wall = ev.get("zk_time"), ev.get("wall")
        if isinstance(zt, (int, float)) and isinstance(wall, (int, float)):
            committed = ev["t"] - (wall - zt)          # ZooKeeper's clock is the host's (same kernel)
        if ev.get("source") == TXNLOG:
            # copies from ZooKeeper's txn log, appended after the run: no acknowledgement comes after
            # them in the record, so they cannot delimit a window (the watch's copies do); they tell
            # every state the watch may have missed, at its commit time (the judge's acks_semantics)
            if committed is not None and isinstance(isr, list):
                self.txn_isr.setdefault(tp, []).append((committed, len(isr)))
            return
        self.zk.observe(tp, ev["t"], len(isr) if isr is not None else None,
                            self.facts.effective_min_isr(*tp), committed)

    def zk_topic(self, ev: dict) -> None:
        """A ``zk.topic`` event: each partition's replica count (the effective min ISR depends on it)."""
        topic = ev.get("topic")
        for p, replicas in (ev.get("partitions") or {}).items():
            if replicas:
                self.facts.replicas[(topic, int(p))] = len(replicas)

    def admin_metadata(self, ev: dict) -> None:
        """An ``admin.metadata`` event: every partition's replicas and ISR as a broker answered."""
        t = ev["t"]
        for p in ev.get("partitions") or []:
            if p.get("error"):
                continue
            tp = (p.get("topic"), p.get("partition"))
            if p.get("replicas") and tp not in self.facts.replicas:
                self.facts.replicas[tp] = len(p["replicas"])
            isr = p.get("isr")
            self.admin.observe(tp, t, len(isr) if isr is not None else None,
                                   self.facts.effective_min_isr(*tp))

    def finish(self) -> None:
        self.zk.finish()
        self.admin.finish()
