"""Progress rules of the ZooKeeper-mode checker (spec §8.4): P1 leader election, P3 reassignment.

The safety rules (``checker.py``) judge every write that happened; these judge writes that should
have happened and did not. Both are obligations with a deadline, fed by the checker as it walks the
record and evaluated at the time of every later event (``zk_time`` of a ``zk.*`` event, else its
``wall``; the clock is the latest such time so far, since events are not time-ordered, and never goes
back). A finding needs an event **after** the deadline, so a record that ends first cannot FAIL a
progress rule: the open obligation is listed in ``stats["progress_undecided"]`` instead.

P1 (§8.4 P1; §5.2 steps 3-4, §4.6, §4.8): a partition whose leader's ``/brokers/ids`` znode is gone,
or whose leader is -1, while a registered broker is in its ISR, gets a live leader within
``election_s``; a partition whose dead leader has no registered ISR member left gets ``leader = -1``
(the §4.6 write) or a live leader within the same bound. A broker counts as dead only from the removal
of its znode (the controller's view, H19), never from a fault.

P3 (§8.4 P3; §7.6 completion condition, §7.4 phase B, §7.7 resumption; its obligations in
``liveness_p3.py``): a reassignment in flight
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
from typing import Any, Protocol

from reference.profiles import ProgressBounds
from reference.liveness_p3 import ReassignmentProgress
from reference.obligations import _Ob, _Ob3
from reference.state import NO_LEADER

_new_ob = object.__new__

_ZK_NODE = re.compile(r"(?:^|[-_])zk\d*$|zookeeper")
ZK_FAULTS = frozenset({"zk_kill", "zk_pause", "zk_stop", "zk_isolate", "zk_partition"})
MAX_UNDECIDED = 100


def _throttle(cfg) -> bool:
    """A config setting a replication throttle (``*.replication.throttled.rate`` / ``*.throttled.replicas``)."""
    if not isinstance(cfg, dict):
        return False
    for k, v in cfg.items():        # (a loop, not any() over a generator: every set_config action asks)
        if "throttle" in str(k) and v not in (None, "", "0"):
            return True
    return False


def _earliest(a: float | None, b: float | None) -> float | None:
    """The earlier of two due times (None: no clock runs)."""
    return b if a is None or (b is not None and b < a) else a


class CheckerState(Protocol):
    """What :class:`Progress` reads of the checker it serves (:class:`reference.checker.Checker`, which
    builds its ``Progress`` with itself): the observed cluster state and where findings go."""
    metadata: dict
    controller: int | None
    registered: dict[int, Any]
    seen_brokers: set[int]
    topics: dict[str, Any]
    parts: dict[tuple, Any]
    deleting: set[str]
    zk_reassign: dict[tuple, tuple]

    def _report(self, rule: str, subject: str, msg: str, before=None, after=None, allowed=()) -> None: ...


class Progress(ReassignmentProgress):
    """Open P1/P3 obligations of one :class:`reference.checker.Checker` run."""

    def __init__(self, checker: CheckerState, bounds: ProgressBounds):
        self.c = checker
        self.b = bounds
        self.now: float | None = None
        self.faults: dict = {}                  # fault_id -> (brokers frozenset, zookeeper: bool)
        self.zk_open = 0                        # open faults on ZooKeeper
        self.open_on: dict[int, int] = {}       # broker -> number of open faults on it
        self.leads: dict[int, set] = {}         # broker -> partitions it leads (observed state)
        self.leaderless: set = set()            # partitions observed with leader -1
        self.p1: dict[tuple, _Ob] = {}
        self.p3: dict[tuple, _Ob3] = {}
        self.due: float | None = None           # earliest time an unblocked obligation falls due
        self._down = True                       # _cluster_blocked(), kept current (no controller yet)
        self._stale = False                     # ``due`` may be earlier than the earliest bound
        self.opened = 0                         # obligations opened, discharged; longest clock met
        self.met = 0
        self.longest = 0.0
        md = checker.metadata
        topics = md.get("topics") if isinstance(md.get("topics"), list) else []
        cfgs = [md.get("broker_config") or {}] + [t.get("config") or {} for t in topics if isinstance(t, dict)]
        self.throttled = any(_throttle(c) for c in cfgs if isinstance(c, dict))

    # -- clock ---------------------------------------------------------------------------------
    # ``now`` is the latest time of the events applied so far (events are not time-ordered: ``zk.*``
    # follow zxids, the rest their sequence), never going back. Blocking can only change when the
    # checker applies an event that changes its inputs (a fault, a registration, /controller, the
    # partition's state, the topic znode, a throttle): those refresh. Between them only time passes,
    # so the checker (Checker.run, which keeps ``now``) compares ``now`` with the earliest due time
    # and calls ``tick`` past it: cheap on the long histories of benchmarks/conformance_check.py.
    def tick(self) -> None:
        """Judge the obligations that fell due: called by the checker, before it applies an event,
        once ``now`` (the event's time, never going back; it keeps it) is past ``due``."""
        if self._stale:                 # ``due`` may be early (see _refresh_tp): act only past the true one
            self._recompute_due()
            if self.due is None or self.now <= self.due:
                return
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
        """``due`` := the earliest bound of an unblocked clock (None: none runs)."""
        self._stale = False
        due = None
        for ob in self.p1.values():
            due = _earliest(due, self._due_p1(ob))
        for ob in self.p3.values():
            due = _earliest(due, self._due_p3(ob))
        self.due = due

    def _due_p1(self, ob: _Ob) -> float | None:
        """When the P1 obligation ``ob`` falls due (None: its clock is stopped)."""
        return None if ob.blocked else ob.since + self.b.election_s

    def _refresh(self) -> None:
        """Re-evaluate what blocks every obligation after a change to the cluster (fault, registration,
        controller, throttle, reassignment znode)."""
        down = self._down = self._cluster_blocked()
        if not (self.p1 or self.p3):
            return
        t = self.now
        if t is None:
            return
        for tp, ob in self.p1.items():
            self._refresh_p1(tp, ob, t, down)
        for tp, ob in self.p3.items():
            self._refresh_p3(tp, ob, t, down)
        self._recompute_due()

    def _refresh_tp(self, tp) -> None:
        """Re-evaluate the obligations of one partition after its state changed. ``due`` only moves
        earlier here (a clock that starts); one that stops may leave ``due`` early (``_stale``), and
        ``tick`` recomputes it before it acts, so ``now`` moves exactly as with a full refresh."""
        t = self.now
        if t is None:
            return
        down = self._down               # current: every input of _cluster_blocked() updates it
        due = self.due
        ob = self.p1.get(tp)
        if ob is not None:
            self._refresh_p1(tp, ob, t, down)
            if not ob.blocked:          # due = _earliest(due, self._due_p1(ob)), inlined
                d = ob.since + self.b.election_s
                if due is None or d < due:
                    due = d
        ob = self.p3.get(tp)
        if ob is not None:
            self._refresh_p3(tp, ob, t, down)
            due = _earliest(due, self._due_p3(ob))
        self.due, self._stale = due, True

    def _refresh_p1(self, tp, ob: _Ob, t: float, down: bool) -> None:
        blocked = down or (ob.kind == "elect" and not self._free_candidate(tp))
        if not blocked and ob.blocked:
            ob.since = t
        ob.blocked = blocked

    def on_controller(self) -> None:
        if self._cluster_blocked() != self._down:   # else nothing the controller feeds has changed
            self._refresh()

    # -- what blocks progress ------------------------------------------------------------------------
    def _cluster_blocked(self) -> bool:
        if self.zk_open:
            return True
        ctl = self.c.controller
        return ctl is None or ctl not in self.c.registered or ctl in self.open_on

    def _candidates(self, tp) -> list[int]:
        """Registered ISR members other than the leader."""
        part = self.c.parts.get(tp)
        st = part.st if part is not None else None
        if st is None:
            return []
        return [r for r in st.isr if r != st.leader and r in self.c.registered]

    def _free_candidate(self, tp) -> bool:
        """A registered ISR member other than the leader and under no open fault exists."""
        part = self.c.parts.get(tp)
        st = part.st if part is not None else None
        if st is None:
            return False
        reg, faulted, L = self.c.registered, self.open_on, st.leader
        for r in st.isr:
            if r != L and r in reg and r not in faulted:
                return True
        return False

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
        params = ev.get("params")
        if not params:
            return
        cfg = params.get("config") or params.get("configs")
        if params.get("throttle") or (cfg and _throttle(cfg)):
            if self.throttled:          # already: nothing more can change
                return
            self.throttled = True
            self._refresh()

    # -- P1 --------------------------------------------------------------------------------------
    def on_state(self, tp, prev, new) -> None:
        """A partition state was observed (``prev`` None: first observation)."""
        L = new.leader      # (the checker calls this unless the same live leader kept an unobliged partition)
        if prev is None or prev.leader != L:
            leads = self.leads
            if prev is not None:
                s = leads.get(prev.leader)
                if s is not None:
                    s.discard(tp)
            if L != NO_LEADER:
                s = leads.get(L)
                if s is None:
                    s = leads[L] = set()
                s.add(tp)
                self.leaderless.discard(tp)
            else:
                self.leaderless.add(tp)
        p1 = self.p1
        if tp in p1 or L == NO_LEADER or (L not in self.c.registered and L in self.c.seen_brokers):
            self._p1_update(tp, new)
        if tp in p1 or tp in self.p3:
            self._refresh_tp(tp)

    def on_state_deleted(self, tp) -> None:
        self.p1.pop(tp, None)
        self.p3.pop(tp, None)
        self.leaderless.discard(tp)

    def on_broker(self, b: int, registered: bool) -> None:
        """Partitions whose obligation ``b`` changes: led by it, or with it in the ISR while leaderless
        or already obliged (it may be a candidate)."""
        down = self._cluster_blocked()
        changed, self._down = down != self._down, down
        led = self.leads.get(b, ())
        p1 = self.p1
        # a partition b leads changes only if b died (its leader is now dead) or it is obliged already
        tps = {tp for tp in led if tp in p1} if registered else set(led)
        parts = self.c.parts
        for tp in self.p1:
            part = parts.get(tp)
            if part is not None and b in part.st.isr_set:
                tps.add(tp)
        if registered:      # an ISR member of a leaderless partition may have come back
            for tp in self.leaderless:
                part = parts.get(tp)
                if part is not None and b in part.st.isr_set:
                    tps.add(tp)
        if len(tps) > 1:
            tps = sorted(tps)           # a set: findings due at the same event come out in one order
        for tp in tps:
            self._p1_update(tp)
        if not (self.p1 or self.p3):
            return
        t = self.now
        if t is None:
            return
        if changed:                     # the cluster's ability to act changed (b is the controller)
            self._refresh()
            return
        # Otherwise only what b's registration feeds: the P1 obligations of ``tps`` (b leads them or is
        # in their ISR, so may be a candidate; new ones are among them) and the P3 ones with b as target.
        due = self.due                  # only clocks that start can bring it earlier (see _refresh_tp)
        es = self.b.election_s
        for tp in tps:
            ob = p1.get(tp)
            if ob is not None:
                self._refresh_p1(tp, ob, t, down)
                if not ob.blocked:      # due = _earliest(due, self._due_p1(ob)), inlined
                    d = ob.since + es
                    if due is None or d < due:
                        due = d
        bounds = self.b
        for ob in self.p3.values():     # blocking only: coverage is the ISR's, which b does not change
            if ob.trs and b in ob.trs:
                self._block_p3(ob, t, down)
                # due = _earliest(due, self._due_p3(ob)), inlined: the earliest of its two clocks
                if not ob.blocked:
                    d = ob.since + bounds.reassign_s
                    if due is None or d < due:
                        due = d
                if ob.cov_since is not None and not ob.cov_blocked:
                    d = ob.cov_since + bounds.election_s + bounds.isr_notify_s
                    if due is None or d < due:
                        due = d
        self.due, self._stale = due, True

    def on_topic_deleting(self) -> None:
        for tp in [tp for tp in self.p1 if tp[0] in self.c.deleting]:
            del self.p1[tp]

    def _p1_update(self, tp, st=None) -> None:
        """Open, re-kind or discharge the P1 obligation of ``tp`` (state ``st``, looked up when None;
        ``_need`` inlined: this runs for every partition a registration change or an election touches)."""
        c = self.c
        if st is None:
            part = c.parts.get(tp)
            st = part.st if part is not None else None
        need = None
        if st is not None and tp[0] not in c.deleting:
            L, reg = st.leader, c.registered
            dead = L != NO_LEADER and L not in reg and L in c.seen_brokers
            if L == NO_LEADER or dead:
                need = "unset" if dead else None
                for r in st.isr:
                    if r != L and r in reg:
                        need = "elect"
                        break
        p1 = self.p1
        ob = p1.get(tp)
        if need is None:
            if ob is not None:          # discharged (_met, inlined)
                del p1[tp]
                self.met += 1
                if self.now is not None and ob.since is not None:
                    took = self.now - ob.since          # a P1 obligation has no cov_since
                    if took > self.longest:
                        self.longest = took
            return
        if ob is None:
            ob = p1[tp] = _new_ob(_Ob)      # _Ob(need, now) by slot stores: P1 opens by the ten thousand
            ob.kind, ob.since, ob.opened, ob.blocked = need, self.now, self.now, True
            self.opened += 1
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

    def _met(self, ob: _Ob) -> None:
        """An obligation was discharged; remember the longest running clock (margin to the bound)."""
        self.met += 1
        now = self.now
        if now is not None and ob.since is not None:
            took = now - (ob.cov_since if ob.cov_since is not None else ob.since)
            if took > self.longest:
                self.longest = took

    # -- end of record ---------------------------------------------------------------------------
    def finish(self) -> dict:
        """Stats: counts and the obligations the record ended too early (or too blocked) to decide."""
        und = []
        for rule, obs in (("P1", self.p1), ("P3", self.p3)):
            for tp, ob in obs.items():
                if self.now is None:
                    break
                und.append({"rule": rule, "subject": f"{tp[0]}-{tp[1]}", "kind": ob.kind,
                            "open_since": ob.opened, "clock_since": ob.since,
                            "record_ends": self.now})
        out = {"progress_obligations": self.opened, "progress_met": self.met,
               "progress_longest_met_s": round(self.longest, 3)}
        out["progress_undecided"] = und[:MAX_UNDECIDED]
        out["progress_bounds_s"] = {"election": self.b.election_s, "reassignment": self.b.reassign_s}
        out["progress_judged"] = self.now is not None
        return out
