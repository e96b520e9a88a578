"""Progress rules of the ZooKeeper-mode checker (spec §8.4): P1 leader election, P3 reassignment.

The safety rules (``checker.py``) judge every write that happened; these judge writes that should
have happened and did not. Both are obligations with a deadline, fed by the checker as it walks the
record and evaluated at the time of every later event (``zk_time`` of a ``zk.*`` event, else its
``wall``). A finding needs an event **after** the deadline, so a record that ends first cannot FAIL a
progress rule: the open obligation is listed in ``stats["progress_undecided"]`` instead.

P1 (§8.4 P1; §5.2 steps 3-4, §4.6, §4.8): a partition whose leader's ``/brokers/ids`` znode is gone,
or whose leader is -1, while a registered broker is in its ISR, gets a live leader within
``election_s``; a partition whose dead leader has no registered ISR member left gets ``leader = -1``
(the §4.6 write) or a live leader within the same bound. A broker counts as dead only from the removal
of its znode (the controller's view, H19), never from a fault.

P3 (§8.4 P3; §7.6 completion condition, §7.4 phase B, §7.7 resumption): a reassignment in flight
(``adding_replicas``/``removing_replicas`` in the topic znode, or a ``/admin/reassign_partitions``
entry) completes -- the topic znode leaves the reassigning state -- within ``election_s`` (+ 60 s
before 2.7, §1.8) once the observed ISR contains every target replica (Apache completes it in the
same controller event, KC:2306-2315), and within ``reassign_s`` once no fault is open and every
target replica is registered (the adding replicas catch up and join the ISR, §5.8).

The clock of an obligation starts again whenever the cluster could not act on it (the bound runs
from when it could):

* ZooKeeper unavailable: a fault on a ZooKeeper node (``zk_kill``, ``zk_pause``, any fault whose nodes
  are ZooKeeper containers) is open;
* no controller: ``/controller`` absent, its broker unregistered, or under an open fault (paused,
  isolated, partitioned, stopping);
* P1 ``elect``: every registered ISR member is itself under an open fault (a paused or isolated
  broker keeps its znode until its session expires, but the controller cannot make it lead);
* P3 after healing: any fault open, a target replica not registered, or a replication throttle set
  in the run (metadata configs, an ``action`` with a ``throttle`` or a ``*throttle*`` config): catching
  up is then as slow as the throttle makes it, so only the bound after the ISR holds the target applies.

A whole-cluster pause therefore stops every clock (the controller is paused). Topics queued for
deletion are exempt from P1 (§6.2: no elections while deleting). Histories without times (no
``wall``/``zk_time``) are not judged.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from reference.profiles import ProgressBounds
from reference.state import NO_LEADER, list_minus

if TYPE_CHECKING:   # pragma: no cover
    from reference.checker import Checker

_ZK_NODE = re.compile(r"(?:^|[-_])zk\d*$|zookeeper")
ZK_FAULTS = frozenset({"zk_kill", "zk_pause", "zk_stop", "zk_isolate", "zk_partition"})
MAX_UNDECIDED = 100


def _throttle(cfg) -> bool:
    """A config setting a replication throttle (``*.replication.throttled.rate`` / ``*.throttled.replicas``)."""
    return isinstance(cfg, dict) and any("throttle" in str(k) and v not in (None, "", "0") for k, v in cfg.items())


_NUM = (float, int)


def _time(ev: dict) -> float | None:
    """ZooKeeper's time of a ``zk.*`` event (``zk_time``, only they carry it), else its ``wall``."""
    t = ev.get("zk_time")
    if t is None:
        t = ev.get("wall")
    return t if t.__class__ in _NUM else None


class _Ob:
    """One obligation. A clock runs from ``since`` while not ``blocked``; it restarts (``since`` :=
    the time of the event that unblocks it) each time the blocker goes away."""

    __slots__ = ("kind", "since", "opened", "blocked", "cov_since", "cov_blocked", "trs")

    def __init__(self, kind: str, t: float | None):
        self.kind = kind            # P1: "elect" | "unset"; P3: "reassign"
        self.since = t              # P1 clock / P3 "after healing" clock
        self.opened = t
        self.blocked = True         # until the first refresh
        self.cov_since = None       # P3: ISR ⊇ target observed since (None: not covered)
        self.cov_blocked = True
        self.trs = None             # P3: the target replicas


class Progress:
    """Open P1/P3 obligations of one :class:`reference.checker.Checker` run."""

    def __init__(self, checker: "Checker", bounds: ProgressBounds):
        self.c = checker
        self.b = bounds
        self.now: float | None = None
        self.faults: dict = {}                  # fault_id -> (brokers frozenset, zookeeper: bool)
        self.zk_open = 0                        # open faults on ZooKeeper
        self.open_on: dict[int, int] = {}       # broker -> number of open faults on it
        self.leads: dict[int, set] = {}         # broker -> partitions it leads (observed state)
        self.leaderless: set = set()            # partitions observed with leader -1
        self.p1: dict[tuple, _Ob] = {}
        self.p3: dict[tuple, _Ob] = {}
        self.due: float | None = None           # earliest time an unblocked obligation falls due
        self.stats = {"progress_obligations": 0, "progress_met": 0, "progress_longest_met_s": 0.0}
        md = checker.metadata
        topics = md.get("topics") if isinstance(md.get("topics"), list) else []
        cfgs = [md.get("broker_config") or {}] + [t.get("config") or {} for t in topics if isinstance(t, dict)]
        self.throttled = any(_throttle(c) for c in cfgs if isinstance(c, dict))

    # -- clock ---------------------------------------------------------------------------------
    # Blocking can only change when the checker applies an event that changes its inputs (a fault,
    # a registration, /controller, the partition's state, the topic znode, a throttle): those call
    # ``_refresh``. Between them only time passes, so ``tick`` compares the event time with the
    # earliest due time (cheap on the long histories of benchmarks/conformance_check.py).
    def _clock(self) -> float | None:
        """The time of the event being applied (never going back): ``now``."""
        t = _time(self.c._ev)
        if t is not None and (self.now is None or t > self.now):
            self.now = t
        return self.now

    def tick(self, ev: dict) -> None:
        """Before ``ev`` is applied (called while an obligation is due, ``due`` set): judge them at its time."""
        t = _time(ev)
        if t is None or t <= self.due:
            return
        if self.now is None or t > self.now:
            self.now = t
        t = self.now
        for tp, ob in list(self.p1.items()):
            if not ob.blocked and t - ob.since > self.b.election_s:
                del self.p1[tp]
                self._report_p1(tp, ob, t)
        for tp, ob in list(self.p3.items()):
            late_cov = (ob.cov_since is not None and not ob.cov_blocked
                        and t - ob.cov_since > self.b.election_s + self.b.isr_notify_s)
            if late_cov or (not ob.blocked and t - ob.since > self.b.reassign_s):
                del self.p3[tp]
                self._report_p3(tp, ob, t, self._target(tp), late_cov)
        self._recompute_due()

    def _recompute_due(self) -> None:
        """``due`` := the earliest bound of an unblocked clock (None: none runs). One pass, no lists:
        this runs after every refresh."""
        due = None
        if self.p1:
            for ob in self.p1.values():
                if not ob.blocked and (due is None or ob.since < due):
                    due = ob.since
            if due is not None:
                due += self.b.election_s
        if self.p3:
            reassign_s, cov_s = self.b.reassign_s, self.b.election_s + self.b.isr_notify_s
            for ob in self.p3.values():
                if not ob.blocked:
                    d = ob.since + reassign_s
                    if due is None or d < due:
                        due = d
                if ob.cov_since is not None and not ob.cov_blocked:
                    d = ob.cov_since + cov_s
                    if due is None or d < due:
                        due = d
        self.due = due

    def _refresh(self, tps=None) -> None:
        """Re-evaluate what blocks the obligations of ``tps`` (all when None) after a change."""
        if not (self.p1 or self.p3):
            return
        t = self._clock()
        if t is None:
            return
        down = self._cluster_blocked()
        for tp in (self.p1 if tps is None else [tp for tp in tps if tp in self.p1]):
            ob = self.p1[tp]
            blocked = down or (ob.kind == "elect" and not self._candidates(tp, free=True))
            if not blocked and ob.blocked:
                ob.since = t
            ob.blocked = blocked
        for tp in (self.p3 if tps is None else [tp for tp in tps if tp in self.p3]):
            ob = self.p3[tp]
            trs = ob.trs
            blocked = down or bool(self.faults) or self.throttled or any(r not in self.c.registered for r in trs or ())
            if not blocked and ob.blocked:
                ob.since = t
            ob.blocked = blocked
            if not self._covered(tp, trs):
                ob.cov_since, ob.cov_blocked = None, True
            elif down:
                ob.cov_blocked = True
            elif ob.cov_since is None or ob.cov_blocked:
                ob.cov_since, ob.cov_blocked = t, False
        self._recompute_due()

    def on_controller(self) -> None:
        self._refresh()

    # -- what blocks progress ------------------------------------------------------------------------
    def _cluster_blocked(self) -> bool:
        if self.zk_open:
            return True
        ctl = self.c.controller
        return ctl is None or ctl not in self.c.registered or ctl in self.open_on

    def _faulted(self, b: int) -> bool:
        return b in self.open_on

    def _candidates(self, tp, free: bool = False) -> list[int]:
        """Registered ISR members other than the leader (``free``: and under no open fault)."""
        part = self.c.parts.get(tp)
        st = part.st if part is not None else None
        if st is None:
            return []
        return [r for r in st.isr if r != st.leader and r in self.c.registered
                and not (free and self._faulted(r))]

    # -- faults --------------------------------------------------------------------------------
    def on_fault_start(self, ev: dict) -> None:
        nodes = [str(n) for n in ev.get("nodes") or []]
        zk = ev.get("fault") in ZK_FAULTS or any(_ZK_NODE.search(n) for n in nodes)
        ids = frozenset(int(b) for b in ev.get("broker_ids") or [] if isinstance(b, int) or str(b).isdigit())
        key = ev.get("fault_id", ("seq", ev.get("seq")))
        self.on_fault_end({"fault_id": key})            # a reused id replaces the open fault
        self.faults[key] = (ids, zk)
        self.zk_open += zk
        for b in ids:
            self.open_on[b] = self.open_on.get(b, 0) + 1
        self._refresh()

    def on_fault_end(self, ev: dict) -> None:
        rec = self.faults.pop(ev.get("fault_id"), None)
        if rec is None:
            return
        ids, zk = rec
        self.zk_open -= zk
        for b in ids:
            n = self.open_on[b] - 1
            if n:
                self.open_on[b] = n
            else:
                del self.open_on[b]
        self._refresh()

    def on_action(self, ev: dict) -> None:
        """A replication throttle makes catching up as slow as it likes: no "after healing" bound then."""
        params = ev.get("params") or {}
        if params.get("throttle") or _throttle(params.get("config") or params.get("configs") or {}):
            self.throttled = True
            self._refresh()

    # -- P1 --------------------------------------------------------------------------------------
    def on_state(self, tp, prev, new) -> None:
        """A partition state was observed (``prev`` None: first observation)."""
        L = new.leader                      # (the checker calls this when leader or ISR changed, or tp is in p1)
        if prev is None or prev.leader != L:
            if prev is not None:
                s = self.leads.get(prev.leader)
                if s is not None:
                    s.discard(tp)
            if L != NO_LEADER:
                self.leads.setdefault(L, set()).add(tp)
                self.leaderless.discard(tp)
            else:
                self.leaderless.add(tp)
        if tp in self.p1 or L == NO_LEADER or (L not in self.c.registered and L in self.c.seen_brokers):
            self._p1_update(tp)
        if tp in self.p1 or tp in self.p3:
            self._refresh((tp,))

    def on_state_deleted(self, tp) -> None:
        self.p1.pop(tp, None)
        self.p3.pop(tp, None)
        self.leaderless.discard(tp)

    def on_broker(self, b: int, registered: bool) -> None:
        """Partitions whose obligation ``b`` changes: led by it, or with it in the ISR while leaderless
        or already obliged (it may be a candidate)."""
        tps = set(self.leads.get(b, ()))
        parts = self.c.parts
        tps.update(tp for tp in self.p1 if tp in parts and b in parts[tp].st.isr_set)
        if registered:      # an ISR member of a leaderless partition may have come back
            tps.update(tp for tp in self.leaderless if tp in parts and b in parts[tp].st.isr_set)
        for tp in tps:
            self._p1_update(tp)
        self._refresh()

    def on_topic_deleting(self) -> None:
        for tp in [tp for tp in self.p1 if tp[0] in self.c.deleting]:
            del self.p1[tp]

    def _need(self, tp) -> str | None:
        part = self.c.parts.get(tp)
        st = part.st if part is not None else None
        if st is None or tp[0] in self.c.deleting:
            return None
        L = st.leader
        dead = L != NO_LEADER and L in self.c.seen_brokers and L not in self.c.registered
        if L != NO_LEADER and not dead:
            return None
        if self._candidates(tp):
            return "elect"
        return "unset" if dead else None

    def _p1_update(self, tp) -> None:
        need = self._need(tp)
        ob = self.p1.get(tp)
        if need is None:
            if ob is not None:
                del self.p1[tp]
                self._met(ob)
            return
        if ob is None:
            self.p1[tp] = _Ob(need, self._clock())
            self.stats["progress_obligations"] += 1
        elif ob.kind != need:
            ob.kind = need

    def _report_p1(self, tp, ob: _Ob, t: float) -> None:
        part = self.c.parts[tp]
        st = part.st
        cands = self._candidates(tp)
        if ob.kind == "elect":
            what = (f"leader {st.leader} (znode gone)" if st.leader != NO_LEADER else "no leader (-1)") + \
                   f" while ISR member(s) {cands} were registered"
            want = "a live leader"
        else:
            what = f"dead broker {st.leader} kept as leader (its /brokers/ids znode is gone, no ISR member is live)"
            want = "leader -1 (§4.6) or a live leader"
        self.c._report("P1", part.subject, f"{what} for {t - ob.since:.1f}s (t={ob.since:.1f}..{t:.1f}) with a "
                       f"controller and ZooKeeper available; expected {want} within {self.b.election_s:g}s",
                       st.to_dict(), None, [want])

    # -- P3 --------------------------------------------------------------------------------------
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

    def _met(self, ob: _Ob) -> None:
        """An obligation was discharged; remember the longest running clock (margin to the bound)."""
        self.stats["progress_met"] += 1
        now = self._clock()
        if now is not None and ob.since is not None:
            took = now - (ob.cov_since if ob.cov_since is not None else ob.since)
            self.stats["progress_longest_met_s"] = round(max(self.stats["progress_longest_met_s"], took), 3)

    def _open_p3(self, tp) -> None:
        ob = self.p3[tp] = _Ob("reassign", self._clock())
        ob.trs = self._target(tp)
        self.stats["progress_obligations"] += 1

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

    def _covered(self, tp, trs) -> bool:
        part = self.c.parts.get(tp)
        return bool(trs) and part is not None and part.st is not None and part.st.isr_set.issuperset(trs)

    def _report_p3(self, tp, ob: _Ob, t: float, trs, late_cov: bool) -> None:
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

    # -- end of record ---------------------------------------------------------------------------
    def finish(self, events: list[dict]) -> dict:
        """Stats: counts and the obligations the record ended too early (or too blocked) to decide."""
        if self.p1 or self.p3 or self.now is None:
            # the record's last time (events are not time-ordered): one pass, no list of 100k times
            last = max((t for t in map(_time, events) if t is not None), default=None)
            if last is not None and (self.now is None or last > self.now):
                self.now = last
        und = []
        for rule, obs in (("P1", self.p1), ("P3", self.p3)):
            for tp, ob in obs.items():
                if self.now is None:
                    break
                und.append({"rule": rule, "subject": f"{tp[0]}-{tp[1]}", "kind": ob.kind,
                            "open_since": ob.opened, "clock_since": ob.since,
                            "record_ends": self.now})
        out = dict(self.stats)
        out["progress_undecided"] = und[:MAX_UNDECIDED]
        out["progress_bounds_s"] = {"election": self.b.election_s, "reassignment": self.b.reassign_s}
        out["progress_judged"] = self.now is not None
        return out
