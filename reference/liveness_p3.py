"""P3, reassignment progress (spec §8.4 P3; §7.6 completion condition, §7.4 phase B, §7.7
resumption): the reassignment obligations of :class:`reference.liveness.Progress`, a mixin of it.

A reassignment in flight (``adding_replicas``/``removing_replicas`` in the topic znode, or a
``/admin/reassign_partitions`` entry) is an obligation with two clocks: "after healing" (no fault
open, every target replica registered, no replication throttle: bound ``reassign_s``) and "the ISR
holds the target" (bound ``election_s + isr_notify_s``). See reference/liveness.py for the clock and
what blocks it.
"""

from __future__ import annotations

from reference.obligations import _Ob3
from reference.state import list_minus


class ReassignmentProgress:
    """P3 obligations (``self.p3``); the clock, ``_refresh`` and ``_met`` are Progress's."""

    def on_topic(self, name: str, t) -> None:
        """The topic znode was written (or deleted, ``t`` None)."""
        for tp in [tp for tp in self.p3 if tp[0] == name]:
            if t is None or not self._in_flight(tp):
                self._met(self.p3.pop(tp))
            else:
                self.p3[tp].trs = self._target(tp)
        if t is None:
            return
        for p, a in t.assign.items():
            tp = (name, p)
            if (a[1] or a[2]) and tp not in self.p3:
                self._open_p3(tp)
        self._refresh()

    def on_reassign_znode(self) -> None:
        for tp in list(self.p3):
            if not self._in_flight(tp):
                self._met(self.p3.pop(tp))
            else:
                self.p3[tp].trs = self._target(tp)
        for tp in self.c.zk_reassign:
            if tp not in self.p3 and tp[0] in self.c.topics:
                self._open_p3(tp)
        self._refresh()

    def _open_p3(self, tp) -> None:
        ob = self.p3[tp] = _Ob3(self.now)
        ob.trs = self._target(tp)
        self.opened += 1

    def _in_flight(self, tp) -> bool:
        t = self.c.topics.get(tp[0])
        a = t.assign.get(tp[1]) if t is not None else None
        return bool(a and (a[1] or a[2])) or (tp in self.c.zk_reassign and t is not None)

    def _target(self, tp):
        t = self.c.topics.get(tp[0])
        a = t.assign.get(tp[1]) if t is not None else None
        if a and (a[1] or a[2]):
            return list_minus(a[0], a[2])
        return self.c.zk_reassign.get(tp)

    def _report_p3(self, tp, ob: _Ob3, t: float, trs, late_cov: bool) -> None:
        part = self.c.parts.get(tp)
        st = part.st.to_dict() if part is not None and part.st is not None else None
        subject = f"{tp[0]}-{tp[1]}"
        if late_cov:
            why = (f"the ISR has held every target replica {list(trs)} since t={ob.cov_since:.1f}; Apache completes "
                   f"the reassignment in that controller event (§7.6), bound {self.b.election_s + self.b.isr_notify_s:g}s")
        else:
            why = (f"no fault open and every target replica {list(trs or ())} registered since t={ob.since:.1f}; "
                   f"bound {self.b.reassign_s:g}s (session timeout + replica.lag.time.max.ms + grace)")
        self.c._report("P3", subject, f"reassignment stalled at t={t:.1f}: still in flight although {why}",
                       st, None, ["reassignment completed"])

    def _due_p3(self, ob: _Ob3) -> float | None:
        """When the P3 obligation ``ob`` falls due: the earlier of its two clocks (None: both stopped)."""
        d = None if ob.blocked else ob.since + self.b.reassign_s
        if ob.cov_since is not None and not ob.cov_blocked:
            c = ob.cov_since + self.b.election_s + self.b.isr_notify_s
            if d is None or c < d:
                d = c
        return d

    def _block_p3(self, ob: _Ob3, t: float, down: bool) -> None:
        """The "after healing" clock: stopped by a fault, a throttle or an unregistered target replica."""
        blocked = down or bool(self.faults) or self.throttled
        if not blocked and ob.trs:
            reg = self.c.registered
            for r in ob.trs:
                if r not in reg:
                    blocked = True
                    break
        if not blocked and ob.blocked:
            ob.since = t
        ob.blocked = blocked

    def _refresh_p3(self, tp, ob: _Ob3, t: float, down: bool) -> None:
        self._block_p3(ob, t, down)
        trs = ob.trs
        part = self.c.parts.get(tp)
        if not (trs and part is not None and part.st is not None and part.st.isr_set.issuperset(trs)):
            ob.cov_since, ob.cov_blocked = None, True
        elif down:
            ob.cov_blocked = True
        elif ob.cov_since is None or ob.cov_blocked:
            ob.cov_since, ob.cov_blocked = t, False
