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


def _time(ev: dict) -> float | None:
    t = ev.get("zk_time") if ev["type"].startswith("zk.") else None
    if t is None:
        t = ev.get("wall")
    return float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) else None


class _Ob:
    __slots__ = ("kind", "since", "opened", "cov_since")

    def __init__(self, kind: str, t: float | None):
        self.kind = kind            # P1: "elect" | "unset"; P3: "reassign"
        self.since = t              # P1 clock / P3 "after healing" clock
        self.opened = t
        self.cov_since = None       # P3: ISR ⊇ target observed since


class Progress:
    """Open P1/P3 obligations of one :class:`reference.checker.Checker` run."""

    def __init__(self, checker: "Checker", bounds: ProgressBounds):
        self.c = checker
        self.b = bounds
        self.now: float | None = None
        self.faults: dict = {}                  # fault_id -> (brokers frozenset, zookeeper: bool)
        self.leads: dict[int, set] = {}         # broker -> partitions it leads (observed state)
        self.p1: dict[tuple, _Ob] = {}
        self.p3: dict[tuple, _Ob] = {}
        self.stats = {"progress_obligations": 0, "progress_met": 0, "progress_longest_met_s": 0.0}
        md = checker.metadata
        topics = md.get("topics") if isinstance(md.get("topics"), list) else []
        cfgs = [md.get("broker_config") or {}] + [t.get("config") or {} for t in topics if isinstance(t, dict)]
        self.throttled = any(_throttle(c) for c in cfgs if isinstance(c, dict))

    # -- clock ---------------------------------------------------------------------------------
    def tick(self, ev: dict) -> None:
        """Before ``ev`` is applied: advance the clock to its time and judge the open obligations."""
        t = _time(ev)
        if t is None:
            return
        if self.now is None or t > self.now:
            self.now = t
        if not (self.p1 or self.p3):
            return
        t = self.now
        down = self._cluster_blocked()
        for tp, ob in list(self.p1.items()):
            if ob.since is None or down or (ob.kind == "elect" and not self._candidates(tp, free=True)):
                ob.since = t
            elif t - ob.since > self.b.election_s:
                del self.p1[tp]
                self._report_p1(tp, ob, t)
        for tp, ob in list(self.p3.items()):
            self._judge_p3(tp, ob, t, down)

    def _judge_p3(self, tp, ob: _Ob, t: float, down: bool) -> None:
        if down:
            ob.since = t
            if ob.cov_since is not None:
                ob.cov_since = t
            return
        trs = self._target(tp)
        if ob.since is None or self.faults or self.throttled or any(r not in self.c.registered for r in trs or ()):
            ob.since = t
        if ob.cov_since is None and self._covered(tp, trs):
            ob.cov_since = t
        late_cov = ob.cov_since is not None and t - ob.cov_since > self.b.election_s + self.b.isr_notify_s
        if late_cov or t - ob.since > self.b.reassign_s:
            del self.p3[tp]
            self._report_p3(tp, ob, t, trs, late_cov)

    # -- what blocks progress ------------------------------------------------------------------------
    def _cluster_blocked(self) -> bool:
        if any(zk for _, zk in self.faults.values()):
            return True
        ctl = self.c.controller
        return ctl is None or ctl not in self.c.registered or self._faulted(ctl)

    def _faulted(self, b: int) -> bool:
        return any(b in ids for ids, _ in self.faults.values())

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
        self.faults[ev.get("fault_id", ("seq", ev.get("seq")))] = (ids, zk)

    def on_fault_end(self, ev: dict) -> None:
        self.faults.pop(ev.get("fault_id"), None)

    def on_action(self, ev: dict) -> None:
        """A replication throttle makes catching up as slow as it likes: no "after healing" bound then."""
        params = ev.get("params") or {}
        if params.get("throttle") or _throttle(params.get("config") or params.get("configs") or {}):
            self.throttled = True

    # -- P1 --------------------------------------------------------------------------------------
    def on_state(self, tp, prev, new) -> None:
        """A partition state was observed (``prev`` None: first observation)."""
        if prev is not None and prev.leader != new.leader:
            s = self.leads.get(prev.leader)
            if s is not None:
                s.discard(tp)
        if new.leader != NO_LEADER:
            self.leads.setdefault(new.leader, set()).add(tp)
        self._p1_update(tp)
        if tp in self.p3:
            self._p3_update(tp)

    def on_state_deleted(self, tp) -> None:
        self.p1.pop(tp, None)
        self.p3.pop(tp, None)

    def on_broker(self, b: int, registered: bool) -> None:
        tps = set(self.leads.get(b, ()))
        tps.update(tp for tp in self.p1)
        if registered:      # an ISR member of a leaderless partition may have come back
            tps.update(tp for tp, part in self.c.parts.items()
                       if part.st is not None and part.st.leader == NO_LEADER and b in part.st.isr_set)
        for tp in tps:
            self._p1_update(tp)

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
            self.p1[tp] = _Ob(need, self.now)
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
        if t is None:
            return
        for p, a in t.assign.items():
            tp = (name, p)
            if (a[1] or a[2]) and tp not in self.p3:
                self._open_p3(tp)

    def on_reassign_znode(self) -> None:
        for tp in list(self.p3):
            if not self._in_flight(tp):
                self._met(self.p3.pop(tp))
        for tp in self.c.zk_reassign:
            if tp not in self.p3 and tp[0] in self.c.topics:
                self._open_p3(tp)

    def _met(self, ob: _Ob) -> None:
        """An obligation was discharged; remember the longest running clock (margin to the bound)."""
        self.stats["progress_met"] += 1
        if self.now is not None and ob.since is not None:
            took = self.now - (ob.cov_since if ob.cov_since is not None else ob.since)
            self.stats["progress_longest_met_s"] = round(max(self.stats["progress_longest_met_s"], took), 3)

    def _open_p3(self, tp) -> None:
        self.p3[tp] = _Ob("reassign", self.now)
        self.stats["progress_obligations"] += 1
        self._p3_update(tp)

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

    def _p3_update(self, tp) -> None:
        ob = self.p3[tp]
        if not self._covered(tp, self._target(tp)):
            ob.cov_since = None
        elif ob.cov_since is None:
            ob.cov_since = self.now

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
        out = dict(self.stats)
        out["progress_undecided"] = und[:MAX_UNDECIDED]
        out["progress_bounds_s"] = {"election": self.b.election_s, "reassignment": self.b.reassign_s}
        out["progress_judged"] = self.now is not None
        return out
