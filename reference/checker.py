"""Conformance checker: observed run-record events vs. the controller rules (spec §8).

Input: run-record events (``zk.*`` from ZooKeeper's transaction log or watches, plus ``fault.*``,
``action``, ``admin.metadata``) and the run metadata. Output: a :class:`ConformanceResult`.

How observed writes are judged
------------------------------
* Every partition-state write is compared with the previous observed state of the same topic
  incarnation. Writes that bump the leader epoch are *controller writes*; writes that keep it are
  *leader-initiated ISR changes* (AlterPartition / legacy direct write, §5.9-5.10).
* Hard invariants (``H*``, ``invariants.py`` and below) are checked under every profile. Apache
  determinism rules (``D*``) only under ``apache-zk-*``: the checker computes the **set of writes the
  controller was allowed to make** (``elections.py`` strategies, §4.6 removals, reassignment bumps)
  and reports a divergence when the observed write is not in it.
* **The controller's view of liveness** comes only from ``zk.broker`` events (``/brokers/ids``), never
  from fault times (H19). Because the controller processes events asynchronously, a write may be
  based on any registration snapshot from the controller's *frontier* up to the latest one; the
  frontier (per controller epoch) advances to the oldest snapshot that explains each controller
  write, so later writes cannot use an older view. Brokers never seen in ``zk.broker`` events are
  treated as live (history started mid-run).
* The shutting-down set is not in ZooKeeper: a broker with an open graceful ``stop``/``restart``
  fault may or may not be shutting down; both are allowed.
* Gaps (a ``zk.gap`` event or a jump of the znode ``version``) mean skipped states: across a gap only
  H2, H3, H4, H5-H7, H9 and H12 are checked.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from reference.elections import (clean_offline, controlled_shutdown_election, init_new_partition,
                                 preferred_election, reassign_election, remove_from_isr, unclean_offline)
from reference.events import normalize, parse_gap_path
from reference.invariants import state_violations, transition_violations
from reference.liveness import Progress
from reference.profiles import (GATE_FENCING, GATE_KIP455, GATE_KIP841, GATE_RECOVERY, Profile, profile_for,
                                progress_bounds, run_without_zookeeper)
from reference.rules import RULES, rule_id
from reference.state import NO_LEADER, RECOVERING, distinct, list_minus

GRACEFUL_FAULTS = frozenset({"stop", "restart", "shutdown", "controlled_shutdown"})
UNCLEAN_KEY = "unclean.leader.election.enable"
MAX_REPORTED = 1000


# ------------------------------------------------------------------------------ result types
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


# ------------------------------------------------------------------------------ observations
class Obs(NamedTuple):
    leader: int
    leader_epoch: int
    isr: tuple
    isr_set: frozenset
    controller_epoch: int
    recovery: int
    version: int

    def to_dict(self) -> dict:
        return {"leader": self.leader, "leader_epoch": self.leader_epoch, "isr": list(self.isr),
                "controller_epoch": self.controller_epoch, "leader_recovery_state": self.recovery,
                "version": self.version}


class _Part:
    __slots__ = ("st", "gap", "epochs", "subject")

    def __init__(self):
        self.subject = ""
        self.st: Obs | None = None
        self.gap = False
        self.epochs: dict[int, int] = {}


class _Topic:
    __slots__ = ("topic_id", "assign", "version", "window", "trs_covered", "deletion_processed", "rs_ok", "gap")

    def __init__(self, topic_id):
        self.topic_id = topic_id
        self.rs_ok: dict[int, frozenset] = {}   # cache, cleared on every topic write
        self.assign: dict[int, tuple] = {}     # p -> (rs, ar, rr)
        self.version = -1
        self.window: dict[int, tuple] = {}     # p -> previous RS, after a topic write changed p (U1/U3 window)
        self.trs_covered: dict[int, bool] = {}
        self.deletion_processed = False
        self.gap = False                       # versions of the topic znode were skipped


class _WriteCtx(NamedTuple):
    rs: tuple
    trs: tuple | None            # reassignment target when a reassignment/cancel/reorder is in flight
    trs_must_be_in_isr: bool
    removable: frozenset         # replicas the controller may drop from the ISR (RR, dropped AR)
    deleting: bool
    unclean: bool
    failover_block: bool         # D12: the leader was dead before this controller was elected


def _summ(o) -> str:
    leader, isr, rec, rule = o
    extra = " RECOVERING" if rec == RECOVERING else ""
    return f"leader={leader} isr={sorted(isr)}{extra} ({rule_id(rule) if rule in RULES else rule})"


# ------------------------------------------------------------------------------ the checker
class Checker:
    """Stateful single pass over normalized events. Use :func:`check_conformance`."""

    def __init__(self, profile: Profile, metadata: dict):
        self.p = profile
        self.apache = profile.determinism
        self.rec_supported = profile.at_least(GATE_RECOVERY)
        self.fencing = profile.at_least(GATE_FENCING)
        self.divs: list[Divergence] = []
        self.viols: list[Divergence] = []
        self.stats: dict[str, int] = {"events": 0, "zk_events": 0, "state_writes": 0, "controller_writes": 0,
                                      "leader_isr_changes": 0, "creations": 0, "gaps": 0, "elections": 0,
                                      "views_scanned": 0}
        # controller
        self.epoch: int | None = None
        self.epoch_version: int | None = None
        self.controller: int | None = None
        self.owner: dict[int, int] = {}
        self.unpaired: tuple | None = None   # (broker, zxid, source) of a /controller creation without its epoch yet
        self.epoch_start: dict[int, int] = {}
        self.lo: dict[int, int] = {}
        self.epoch_gap = False
        # brokers (the controller's possible views)
        self.registered: dict[int, Any] = {}
        self.seen_brokers: set[int] = set()
        self.snaps: list[frozenset] = [frozenset()]
        self.last_registered: dict[int, int] = {}     # broker -> newest snapshot index with it registered
        self.broker_gap_at: int | None = None        # last snapshot before a /brokers/ids gap
        self.maybe_shutting: set[int] = set()
        self._no_sd: list[frozenset] = [frozenset()]
        self._sd_cache: dict[frozenset, list[frozenset]] = {}
        # topics / partitions
        self.topics: dict[str, _Topic] = {}
        self.parts: dict[tuple, _Part] = {}
        self.deleting: set[str] = set()
        self.zk_reassign: dict[tuple, tuple] = {}
        self.pending_reassign: set = set()
        # configuration
        cfg = metadata.get("broker_config") or {}
        self.unclean_default = str(cfg.get(UNCLEAN_KEY, "false")).lower() == "true"
        self.unclean_topic: dict[str, bool] = {}
        topics = metadata.get("topics")
        for t in topics if isinstance(topics, list) else []:      # tolerate malformed metadata
            c = (t if isinstance(t, dict) else {}).get("config") or {}
            if UNCLEAN_KEY in c:
                self.unclean_topic[t["name"]] = str(c[UNCLEAN_KEY]).lower() == "true"
        self.unclean_grants: set = set()
        self._ev: dict = {}
        self.metadata = metadata
        self.progress = Progress(self, progress_bounds(profile, cfg))      # P1, P3 (liveness.py)

    # -- reporting -------------------------------------------------------------------------------
    def _report(self, rule: str, subject: str, msg: str, before=None, after=None, allowed=()):
        d = Divergence(rule=rule, subject=subject, explanation=msg, seq=self._ev.get("seq"),
                       zxid=self._ev.get("zxid"), before=before, after=after, allowed=list(allowed))
        (self.viols if rule.startswith("H") else self.divs).append(d)

    # -- driver ----------------------------------------------------------------------------------
    def run(self, events) -> ConformanceResult:
        handlers = {"zk.controller": self._on_controller, "zk.controller_epoch": self._on_epoch,
                    "zk.broker": self._on_broker, "zk.topic": self._on_topic,
                    "zk.partition_state": self._on_state, "zk.reassign_partitions": self._on_reassign_znode,
                    "zk.delete_topics": self._on_delete_topics, "zk.gap": self._on_gap,
                    "fault.start": self._on_fault, "fault.end": self.progress.on_fault_end,
                    "action": self._on_action, "admin.metadata": self._on_metadata}
        prev_zxid = None
        tick = self.progress.tick
        for ev in normalize(events):
            self._ev = ev
            self.stats["events"] += 1
            tick(ev)
            t = ev["type"]
            if t.startswith("zk."):
                self.stats["zk_events"] += 1
                z = ev["zxid"]
                if z != prev_zxid and self.unpaired is not None:
                    self._end_txn()
                prev_zxid = z
            handlers[t](ev)
        self._end_txn(final=True)
        self.stats.update(self.progress.finish())
        self.stats["transitions"] = self.stats["state_writes"]
        verdict = "FAIL" if (self.divs or self.viols) else "PASS"
        self.stats["divergences"] = len(self.divs)
        self.stats["invariant_violations"] = len(self.viols)
        return ConformanceResult(verdict, self.divs, self.viols, self.stats, self.p.name)

    # -- controller: H1, H2, D11 ---------------------------------------------------------------
    def _end_txn(self, final: bool = False) -> None:
        """A zxid group ended: 2.2+ elects atomically (§2.1 step 2, ZKC:123-178: one multi-op creates
        /controller and sets /controller_epoch := old+1), so **every** creation of /controller -- by
        another broker or by the same one again after /controller was deleted -- must come with a new
        epoch in the same transaction (H1). The watcher reads the two znodes separately, so a watched
        creation is judged when the next one arrives without an epoch increase in between."""
        u = self.unpaired
        if u is None or not self.fencing:
            return
        if u[2] == "watch" and not final:
            return
        self.unpaired = None
        if final and u[2] == "watch":
            return                               # the record may end between the two reads
        self._unpaired_h1(u)

    def _unpaired_h1(self, u) -> None:
        cid, z, _ = u
        if self.epoch is None or self.epoch_gap:
            return
        owner = self.owner.get(self.epoch)
        who = (f"epoch {self.epoch} already belongs to broker {owner}" if owner not in (None, cid) else
               f"broker {cid} was elected again (new /controller) but kept epoch {self.epoch}; every election "
               "increments it (§2.2)")
        self._report("H1", "/controller", f"broker {cid} became controller at zxid {z} without a new "
                     f"/controller_epoch: {who}")

    def _on_controller(self, ev):
        b = ev["broker_id"]
        self.controller = b
        if b is not None:
            if self.unpaired is not None and self.fencing:     # a watched creation never got its epoch
                self._unpaired_h1(self.unpaired)
            self.unpaired = (b, ev["zxid"], ev.get("source"))

    def _on_epoch(self, ev):
        e, v = ev["epoch"], ev["version"]
        if self.epoch is not None:
            if v == self.epoch_version and e == self.epoch:
                return
            if e < self.epoch:
                self._report("H1", "/controller_epoch", f"controller epoch went backwards {self.epoch} -> {e}",
                             {"epoch": self.epoch, "version": self.epoch_version}, {"epoch": e, "version": v})
            elif e == self.epoch:
                self._report("H1", "/controller_epoch", f"/controller_epoch rewritten without increasing ({e})",
                             {"epoch": self.epoch, "version": self.epoch_version}, {"epoch": e, "version": v})
            elif (self.apache and self.epoch_version is not None and v == self.epoch_version + 1
                  and not self.epoch_gap and e != self.epoch + 1):
                self._report("D11", "/controller_epoch", f"controller epoch jumped {self.epoch} -> {e} in one "
                             "election (Apache increments by exactly 1)",
                             {"epoch": self.epoch}, {"epoch": e}, [f"epoch={self.epoch + 1}"])
        elif self.apache and self.p.at_least(GATE_FENCING) and v <= 1 and e != v:
            self._report("D11", "/controller_epoch", f"fresh /controller_epoch version {v} holds {e}; "
                         "Apache 2.2+ creates it as 0 and the first controller has epoch 1", None, {"epoch": e})
        if self.epoch is None or e > self.epoch:
            if self.unpaired is not None:
                self.owner[e] = self.unpaired[0]
                self.unpaired = None
            elif self.controller is not None:
                self.owner.setdefault(e, self.controller)
            self.epoch_start[e] = len(self.snaps) - 1
            self.lo[e] = len(self.snaps) - 1
        self.epoch, self.epoch_version = max(e, self.epoch or e), v
        self.epoch_gap = False

    # -- brokers -------------------------------------------------------------------------------
    def _on_broker(self, ev):
        b = ev["broker_id"]
        self.seen_brokers.add(b)
        if ev["registered"]:
            self.registered[b] = ev.get("broker_epoch")
            self.last_registered[b] = len(self.snaps)          # index of the snapshot appended below
            if b in self.maybe_shutting:
                self.maybe_shutting.discard(b)
                self._recompute_sd()
        else:
            self.registered.pop(b, None)
        self.snaps.append(frozenset(self.registered))
        self.progress.on_broker(b, ev["registered"])

    def _recompute_sd(self):
        self._sd_cache.clear()

    def _sd_options(self, relevant) -> list[frozenset]:
        """Possible shutting-down sets, restricted to the brokers that matter for one partition
        (its replicas): every subset of the brokers with an open graceful stop."""
        if not self.maybe_shutting:
            return self._no_sd
        ms = frozenset(b for b in relevant if b in self.maybe_shutting)
        opts = self._sd_cache.get(ms)
        if opts is None:
            m = sorted(ms)
            opts = self._sd_cache[ms] = [frozenset(c) for n in range(len(m) + 1)
                                         for c in itertools.combinations(m, n)]
        return opts

    def _on_fault(self, ev):
        self.progress.on_fault_start(ev)
        ids = ev.get("broker_ids") or []
        params = ev.get("params") or {}
        graceful = params.get("graceful")
        if graceful is True or (ev.get("fault") in GRACEFUL_FAULTS and graceful is not False):
            self.maybe_shutting.update(int(b) for b in ids)
            self._recompute_sd()

    # -- actions and admin samples --------------------------------------------------------------
    def _on_action(self, ev):
        self.progress.on_action(ev)
        if ev.get("ok") is False:
            return
        a = ev.get("action")
        params = ev.get("params") or {}
        if record_unclean_permission(self, a, params):
            return
        if a in ("reassign", "cancel_reassign"):
            for tp in _partitions_of(params):
                self.pending_reassign.add(tp)

    def _on_metadata(self, ev):
        """Admin-API samples: H5 on entries with error NONE (spec §8.1 caveat 2)."""
        for p in ev.get("partitions") or []:
            if p.get("error") or p.get("leader", -1) < 0 or p.get("leader_epoch") is None:
                continue
            if p["leader"] not in (p.get("isr") or []):
                self._report("H5", f"{p.get('topic')}-{p.get('partition')}",
                             f"Metadata response: leader {p['leader']} not in ISR {p.get('isr')}", None, dict(p))

    def _on_reassign_znode(self, ev):
        self.zk_reassign = {}
        for e in ev.get("partitions") or []:
            tp = (e["topic"], int(e["partition"]))
            self.zk_reassign[tp] = tuple(e["replicas"])
        self.progress.on_reassign_znode()

    def _on_delete_topics(self, ev):
        new = set(ev.get("topics") or [])
        for t in new - self.deleting:
            if t in self.topics:
                self.topics[t].deletion_processed = False
        self.deleting = new
        self.progress.on_topic_deleting()

    def _on_gap(self, ev):
        self.stats["gaps"] += 1
        kind, what = parse_gap_path(ev["path"])
        if kind == "partition":
            part = self.parts.get(what)
            if part is None:
                part = self.parts[what] = _Part()
                part.subject = f"{what[0]}-{what[1]}"
            part.gap = True
        elif kind == "topic":
            if what in self.topics:
                self.topics[what].gap = True
        elif kind == "broker":
            # registrations between the last snapshot and the next one were missed: controller views
            # up to here are incomplete until the controller's frontier passes them (see _on_state)
            self.broker_gap_at = len(self.snaps) - 1
        elif kind == "controller":
            self.epoch_gap = True

    # -- topics: H15, H16, D15 --------------------------------------------------------------------
    def _on_topic(self, ev):
        name = ev["topic"]
        if ev.get("deleted"):
            self.topics.pop(name, None)
            for tp in [tp for tp in self.parts if tp[0] == name]:
                del self.parts[tp]
                self.progress.on_state_deleted(tp)
            self.progress.on_topic(name, None)
            return
        tid = ev.get("topic_id")
        t = self.topics.get(name)
        if t is None or (tid is not None and t.topic_id is not None and tid != t.topic_id):
            t = self.topics[name] = _Topic(tid)        # new incarnation (§6.3: key by topic id)
            for tp in [tp for tp in self.parts if tp[0] == name]:
                del self.parts[tp]
                self.progress.on_state_deleted(tp)
        elif tid is not None:
            t.topic_id = tid
        t.rs_ok.clear()
        adding = ev.get("adding_replicas") or {}
        removing = ev.get("removing_replicas") or {}
        subject = name
        v = ev.get("version")
        gap = t.gap or (isinstance(v, int) and t.version >= 0 and v > t.version + 1)
        t.gap = False
        for ps, rs in ev["partitions"].items():
            p = int(ps)
            new = (tuple(rs), tuple(adding.get(ps, ())), tuple(removing.get(ps, ())))
            old = t.assign.get(p)
            t.assign[p] = new
            self._check_topic_partition(f"{subject}-{p}", t, p, old, new, gap)
        for tp in [tp for tp in self.pending_reassign if tp[0] == name]:
            self.pending_reassign.discard(tp)
        t.version = v if isinstance(v, int) else t.version + 1
        self.progress.on_topic(name, t)

    def _check_topic_partition(self, subject, t: _Topic, p, old, new, gap: bool = False):
        rs, ar, rr = new
        if ar or rr:
            if set(ar) & set(rr) or not set(ar) <= set(rs) or not set(rr) <= set(rs) \
                    or not list_minus(rs, ar) or not list_minus(rs, rr):
                self._report("H15", subject, f"invalid reassignment state RS={list(rs)} AR={list(ar)} "
                             f"RR={list(rr)}", None, {"replicas": list(rs), "adding": list(ar), "removing": list(rr)})
        if old is None or old == new:
            t.window.pop(p, None)
            return
        if gap:
            # skipped topic versions: the transition old -> new is not one write, so D15/H16 cannot be
            # judged on it; the dropped replicas may still leave the ISR (§7.10 window), and whether the
            # target was ever in the ISR is unknown (H16 resumes with the next reassignment)
            t.window[p] = old[0]
            t.trs_covered[p] = True
            return
        ors_old = list_minus(old[0], old[1])
        trs_old = list_minus(old[0], old[2])
        if ar or rr:                                                      # U1: start / replace
            if self.apache and self.p.at_least(GATE_KIP455):
                target = list_minus(rs, rr)
                exp = distinct(target + ors_old)
                exp_ar, exp_rr = list_minus(exp, ors_old), list_minus(exp, target)
                if (rs, ar, rr) != (exp, exp_ar, exp_rr):
                    self._report("D15", subject, f"reassignment to {list(target)} written as RS={list(rs)} "
                                 f"AR={list(ar)} RR={list(rr)}", {"replicas": list(old[0])},
                                 {"replicas": list(rs), "adding": list(ar), "removing": list(rr)},
                                 [f"RS={list(exp)} AR={list(exp_ar)} RR={list(exp_rr)}"])
            if list_minus(rs, rr) != trs_old or not (old[1] or old[2]):
                t.trs_covered[p] = False
            t.window[p] = old[0]
            return
        if old[1] or old[2]:                                              # left the reassigning state
            if set(rs) == set(trs_old) and set(rs) != set(ors_old):       # completion (B6)
                if not t.trs_covered.get(p, False):
                    self._report("H16", subject, f"reassignment completed to {list(rs)} but the target "
                                 "replicas were never all in the ISR", {"replicas": list(old[0])},
                                 {"replicas": list(rs)})
                elif self.apache and tuple(rs) != trs_old:
                    self._report("D15", subject, f"completed RS {list(rs)} is not TRS {list(trs_old)} in order",
                                 None, {"replicas": list(rs)}, [f"RS={list(trs_old)}"])
                t.window.pop(p, None)
                return
            if set(rs) == set(ors_old):                                   # cancel (U1 of §7.8)
                t.window[p] = old[0]
                return
            self._report("H16", subject, f"reassignment ended with replicas {list(rs)}: neither the target "
                         f"{list(trs_old)} nor the original {list(ors_old)}", {"replicas": list(old[0])},
                         {"replicas": list(rs)})
            t.window.pop(p, None)
            return
        t.window[p] = old[0]                                              # reorder / legacy write

    # -- partition states -----------------------------------------------------------------------
    def _write_ctx(self, tp, t: _Topic | None, prev: Obs, ce: int) -> _WriteCtx:
        topic = tp[0]
        rs, ar, rr = (t.assign.get(tp[1]) if t else None) or ((), (), ())
        trs, need, removable = None, False, set()
        if ar or rr:
            trs, need = list_minus(rs, rr), True
            removable.update(rr)
        zk = self.zk_reassign.get(tp)
        if zk is not None and not (ar or rr):
            trs, need = zk, True
            removable.update(r for r in rs if r not in zk)
        if t is not None and tp[1] in t.window:
            removable.update(r for r in t.window[tp[1]] if r not in rs)
            if trs is None:
                trs = rs
        if trs is None and (tp in self.pending_reassign or (topic, None) in self.pending_reassign):
            trs = rs
        unclean = (self.unclean_topic.get(topic, self.unclean_default) or tp in self.unclean_grants
                   or (topic, None) in self.unclean_grants)
        fb = False
        if self.apache and prev.leader != NO_LEADER and ce in self.epoch_start:
            # D12: the leader was already dead when this controller initialized, and has not come back
            # since (had it, the controller would have seen it live and failover would not apply).
            L, start = prev.leader, self.epoch_start[ce]
            fb = (L in self.seen_brokers and L not in self.snaps[start]
                  and self.last_registered.get(L, -1) < start)
        return _WriteCtx(rs, trs, need, frozenset(removable), topic in self.deleting, unclean, fb)

    def _outcomes(self, prev: Obs, c: _WriteCtx, reg: frozenset, sd: frozenset) -> list[tuple]:
        """Every (leader, isr-set, recovery, rule) the Apache controller could write, given the
        registered set ``reg`` and shutting-down set ``sd`` (§4.1-§4.6, §5.2, §5.5, §7.4)."""
        online = reg - sd if sd else reg
        L, isr, rec, rs = prev.leader, prev.isr, prev.recovery, c.rs
        outs = []
        elect_possible = False
        if not c.deleting:
            if (L == NO_LEADER or L not in online) and not c.failover_block:
                e = clean_offline(rs, isr, rec, online)
                if e is not None:
                    outs.append((e.leader, frozenset(e.isr), e.recovery, "D1"))
                    elect_possible = True
                elif c.unclean and not any(i in online for i in isr):
                    e = unclean_offline(rs, online, self.rec_supported)
                    if e is not None:
                        outs.append((e.leader, frozenset(e.isr), e.recovery, "D2"))
                        elect_possible = True
            if rs and L != rs[0]:
                e = preferred_election(rs, isr, rec, online)
                if e is not None:
                    outs.append((e.leader, frozenset(e.isr), e.recovery, "D4"))
            if L in sd and L in reg:
                e = controlled_shutdown_election(rs, isr, rec, reg, sd)
                if e is not None:
                    outs.append((e.leader, frozenset(e.isr), e.recovery, "D5"))
        if c.trs is not None and (not c.trs_must_be_in_isr or prev.isr_set.issuperset(c.trs)):
            if L not in c.trs or L not in online:
                e = reassign_election(c.trs, isr, rec, online)
                if e is not None:
                    outs.append((e.leader, frozenset(e.isr), e.recovery, "D6"))
            outs.append((L, prev.isr_set, rec, "D16"))
        elif c.trs is not None:
            outs.append((L, prev.isr_set, rec, "D16"))       # A1: LE+1, nothing else
        for r in isr:
            if r in online and not c.deleting and r not in c.removable:
                continue
            if r == L and not (c.deleting or r in c.removable or c.failover_block or not elect_possible):
                continue                                     # §5.2: the election comes first (D10)
            res = remove_from_isr(L, isr, r)
            if res is not None:
                outs.append((res[0], frozenset(res[1]), rec, "D8"))
        return outs

    def _views(self, ce: int):
        lo = self.lo.get(ce, 0)
        return lo, len(self.snaps) - 1

    def _live_in_some_view(self, b: int, ce: int) -> int | None:
        """Index of the oldest admissible view in which ``b`` is registered (H19), else None."""
        if b not in self.seen_brokers:
            return self.lo.get(ce, 0)
        lo, hi = self._views(ce)
        for k in range(lo, hi + 1):
            if b in self.snaps[k]:
                return k
        return None

    def _on_state(self, ev):
        tp = (ev["topic"], ev["partition"])
        part = self.parts.get(tp)
        if ev.get("deleted"):
            self.parts.pop(tp, None)
            self.progress.on_state_deleted(tp)
            return
        self.stats["state_writes"] += 1
        isr = tuple(ev["isr"])
        rec = ev.get("leader_recovery_state") or 0
        new = Obs(ev["leader"], ev["leader_epoch"], isr, frozenset(isr), ev["controller_epoch"], rec, ev["version"])
        if part is None:
            part = self.parts[tp] = _Part()
            part.subject = f"{tp[0]}-{tp[1]}"
        subject = part.subject
        prev = part.st
        t = self.topics.get(tp[0])
        a = t.assign.get(tp[1]) if t else None
        rs = a[0] if a else None
        rs_ok = None
        if rs is not None:
            rs_ok = t.rs_ok.get(tp[1])
            if rs_ok is None:   # replicas a leader may legitimately be/ISR may contain (RS ∪ AR ∪ pre-U1 RS)
                rs_ok = t.rs_ok[tp[1]] = frozenset(rs) | frozenset(t.window.get(tp[1], ())) | frozenset(a[1])
        for rule, msg in state_violations(new.leader, new.isr, new.recovery, rs_ok):
            self._report(rule, subject, msg, prev.to_dict() if prev else None, new.to_dict())
        if self.apache and not new.isr:
            self._report("D8", subject, "empty ISR written (ZK mode always keeps the last ISR member)",
                         prev.to_dict() if prev else None, new.to_dict())
        if self.epoch is not None and new.controller_epoch > self.epoch and not self.epoch_gap:
            self._report("H2", subject, f"state written with controller epoch {new.controller_epoch} above the "
                         f"current /controller_epoch {self.epoch}", prev.to_dict() if prev else None, new.to_dict())
        if prev is not None and new.version == prev.version and new == prev:
            return                                                   # duplicate observation
        if new.leader_epoch in part.epochs and part.epochs[new.leader_epoch] != new.leader:
            if not (prev is not None and prev.leader_epoch == new.leader_epoch):   # else reported below
                self._report("H4", subject, f"two leaders in leader epoch {new.leader_epoch}: "
                             f"{part.epochs[new.leader_epoch]} and {new.leader}", prev.to_dict() if prev else None,
                             new.to_dict())
        else:
            part.epochs.setdefault(new.leader_epoch, new.leader)
        part.st = new
        self.progress.on_state(tp, prev, new)
        gap = prev is not None and (part.gap or new.version > prev.version + 1)
        if t is not None and a is not None and (a[1] or a[2] or tp in self.zk_reassign):
            trs = list_minus(a[0], a[2]) if (a[1] or a[2]) else self.zk_reassign[tp]
            if gap or new.isr_set.issuperset(trs):     # skipped states may have held the target (H16)
                t.trs_covered[tp[1]] = True
        if prev is None:
            self._check_creation(tp, subject, new, rs)
            part.gap = False
            return
        for rule, msg in transition_violations(prev, new, rs_ok):
            self._report(rule, subject, msg, prev.to_dict(), new.to_dict())
        part.gap = False
        if gap or new.version <= prev.version or new.leader_epoch < prev.leader_epoch:
            return              # skipped states: only the single-state rules and H3/H4/H9 above (§8.1 caveat 6)
        if self.broker_gap_at is not None:
            ce = new.controller_epoch if new.leader_epoch > prev.leader_epoch else (self.epoch or new.controller_epoch)
            if self._views(ce)[0] <= self.broker_gap_at:
                # the controller may still act on registrations the observer missed; judge nothing that
                # depends on its view, but let an explained write move its frontier past the gap
                if new.leader_epoch > prev.leader_epoch and rs is not None:
                    self._match_outcomes(subject, prev, new, (self._write_ctx(tp, t, prev, ce),), ce, report=False)
                return
        if new.leader_epoch == prev.leader_epoch:
            self._check_leader_isr_change(subject, prev, new, rs)
        else:
            self._check_controller_write(tp, subject, t, prev, new, rs)

    def _check_creation(self, tp, subject, new: Obs, rs):
        if new.version != 0:
            return                                     # first observation of an existing partition: baseline
        self.stats["creations"] += 1
        ce = new.controller_epoch
        if new.leader != NO_LEADER and self._live_in_some_view(new.leader, ce) is None:
            self._report("H19", subject, f"partition created with leader {new.leader} whose /brokers/ids znode "
                         "was already gone", None, new.to_dict())
            return
        if not self.apache or rs is None:
            return
        lo, hi = self._views(ce)
        allowed = []
        for k in range(lo, hi + 1):
            online = self.snaps[k] | frozenset(r for r in rs if r not in self.seen_brokers)
            for sd in self._sd_options(rs):
                e = init_new_partition(rs, online - sd)
                if e is None:
                    continue
                if new.leader_epoch == 0 and e.leader == new.leader and frozenset(e.isr) == new.isr_set:
                    self.lo[ce] = k
                    return
                if len(allowed) < 6:
                    allowed.append(_summ((e.leader, e.isr, 0, "D3")) + " LE=0")
        self._report("D3", subject, f"new partition got leader {new.leader} isr {list(new.isr)} LE "
                     f"{new.leader_epoch}; Apache picks the first online replica of {list(rs)} and all online "
                     "replicas as ISR, LE 0", None, new.to_dict(), allowed)

    def _check_leader_isr_change(self, subject, prev: Obs, new: Obs, rs):
        """Same LE: AlterPartition / legacy leader write (§5.9, §5.10): H10, H13, H19 (3.3+), D7, D9."""
        self.stats["leader_isr_changes"] += 1
        added = [r for r in new.isr if r not in prev.isr_set]
        removed = [r for r in prev.isr if r not in new.isr_set]
        if added and self.p.at_least(GATE_KIP841):
            ce = self.epoch if self.epoch is not None else new.controller_epoch
            dead = [r for r in added if self._live_in_some_view(r, ce) is None]
            if dead:
                self._report("H19", subject, f"ISR expanded with {dead} whose /brokers/ids znode was gone "
                             "(AlterPartition must reject non-live replicas, KIP-841)", prev.to_dict(), new.to_dict())
        if not self.apache:
            return
        if prev.leader == NO_LEADER and (added or removed):
            self._report("D7", subject, "ISR changed without a leader-epoch bump while there was no leader "
                         "(only controller writes can change a leaderless partition, and they bump LE)",
                         prev.to_dict(), new.to_dict(), [f"leader_epoch={prev.leader_epoch + 1}"])
        elif added and (len(added) > 1 or removed):
            self._report("D9", subject, f"leader ISR change added {added} and removed {removed} in one write; "
                         "Apache expands one replica at a time", prev.to_dict(), new.to_dict())
        elif not added and not removed and new.recovery == prev.recovery and new.leader == prev.leader:
            self._report("D7", subject, "state znode rewritten with no change and no leader-epoch bump",
                         prev.to_dict(), new.to_dict())

    def _check_controller_write(self, tp, subject, t, prev: Obs, new: Obs, rs):
        """LE increased: a controller write (§4, §5.2, §5.5, §6.2, §7.4)."""
        self.stats["controller_writes"] += 1
        ce = new.controller_epoch
        L, x = prev.leader, new.leader
        if (self.epoch is not None and ce < self.epoch and self.p.at_least(GATE_FENCING)
                and not self.epoch_gap):
            self._report("H2", subject, f"controller write with controller epoch {ce} after epoch "
                         f"{self.epoch} was established (a fenced controller's write succeeded)",
                         prev.to_dict(), new.to_dict())
        c = self._write_ctx(tp, t, prev, ce) if rs is not None else None
        self.unclean_grants.discard(tp)      # an ElectLeaders(UNCLEAN) request covers one controller write
        if x != L and x != NO_LEADER:
            self.stats["elections"] += 1
            if self._live_in_some_view(x, ce) is None:
                self._report("H19", subject, f"broker {x} elected leader after its /brokers/ids znode was gone "
                             "(the controller already considered it dead)", prev.to_dict(), new.to_dict())
                return
            if x not in prev.isr_set:
                unclean_ok = c is not None and c.unclean
                if not unclean_ok:
                    self._report("H11", subject, f"broker {x} elected from outside the ISR {list(prev.isr)} "
                                 "with unclean leader election disabled", prev.to_dict(), new.to_dict())
                    return
                if new.isr != (x,):
                    self._report("H11", subject, f"unclean election of {x} must reset the ISR to [{x}], "
                                 f"got {list(new.isr)}", prev.to_dict(), new.to_dict())
                    return
                if self.rec_supported and new.recovery != RECOVERING:
                    self._report("H12", subject, f"unclean election of {x} did not set leader_recovery_state="
                                 "RECOVERING (3.2+)", prev.to_dict(), new.to_dict())
            if c is not None and c.deleting and t is not None and t.deletion_processed and c.trs is None:
                self._report("H14", subject, f"leader moved to {x} while topic {tp[0]} is being deleted",
                             prev.to_dict(), new.to_dict())
                return
        added = [r for r in new.isr if r not in prev.isr_set]
        if added and not (x != L and x not in prev.isr_set and new.isr == (x,)):
            self._report("H13", subject, f"controller write added {added} to the ISR (only the leader expands "
                         "the ISR)", prev.to_dict(), new.to_dict())
            return
        # §2.6: the controller handles its event queue in FIFO order, so events queued before the
        # delete marker's notification (e.g. the BrokerChange of an earlier deregistration) are
        # processed as for a topic not being deleted, until the TopicDeletion event itself runs.
        # A deletion write (§6.2 step 4) shows it has run; an election never is one (§6.2: no
        # elections for a topic queued for deletion), so it does not mark the deletion processed.
        pending = c is not None and c.deleting and t is not None and not t.deletion_processed
        if (c is not None and c.deleting and t is not None and (x == L or x == NO_LEADER)
                and (x == NO_LEADER or len(new.isr) < len(prev.isr))):
            t.deletion_processed = True
        if c is None:
            return
        ctxs = (c, c._replace(deleting=False)) if pending else (c,)
        if not self.apache:
            # Compatible profile: no D-rule is reported, but the Apache explanation of the write (if
            # any) still advances the controller's view frontier, which H19 relies on.
            self._match_outcomes(subject, prev, new, ctxs, ce, report=False)
            return
        if new.leader_epoch != prev.leader_epoch + 1:
            self._report("D7", subject, f"leader epoch went {prev.leader_epoch} -> {new.leader_epoch} in one "
                         "write; every Apache controller write bumps it by exactly 1", prev.to_dict(),
                         new.to_dict(), [f"leader_epoch={prev.leader_epoch + 1}"])
        self._match_outcomes(subject, prev, new, ctxs, ce)

    def _match_outcomes(self, subject, prev: Obs, new: Obs, ctxs: tuple, ce: int, report: bool = True):
        """Find a view (and shutting-down set) under which one of the write contexts ``ctxs``
        explains ``new``; advance the frontier to it, else report (attributed with ``ctxs[0]``)."""
        c = ctxs[0]
        lo, hi = self._views(ce)
        extra = frozenset(r for r in itertools.chain(c.rs, prev.isr) if r not in self.seen_brokers)
        key = (new.leader, new.isr_set)
        seen: set = set()
        sd_opts = self._sd_options(itertools.chain(c.rs, prev.isr))
        for k in range(lo, hi + 1):
            reg = self.snaps[k] | extra if extra else self.snaps[k]
            for sd in sd_opts:
                if sd and not (sd <= reg):
                    continue
                self.stats["views_scanned"] += 1
                outs = [o for cx in ctxs for o in self._outcomes(prev, cx, reg, sd)]
                if report:
                    seen.update(outs)
                for o in outs:
                    if (o[0], o[1]) == key and (not self.rec_supported or o[2] == new.recovery):
                        self.lo[ce] = k
                        return
        if not report:
            return
        allowed = sorted({_summ(o) for o in seen})[:10]
        rule, why = self._attribute(prev, new, c, ce)
        self._report(rule, subject, why, prev.to_dict(), new.to_dict(), allowed or ["no write"])

    def _attribute(self, prev: Obs, new: Obs, c: _WriteCtx, ce: int) -> tuple[str, str]:
        """Name the Apache rule an unexpected controller write breaks, with a one-line reason."""
        L, x = prev.leader, new.leader
        lo, hi = self._views(ce)
        live_now = L in self.snaps[hi] or L not in self.seen_brokers
        if x != L and x != NO_LEADER:
            if x not in prev.isr_set:
                return "D2", f"unclean election chose {x}; Apache picks the first online replica of {list(c.rs)}"
            if c.failover_block:
                return "D12", (f"leader {L} was dead before controller epoch {ce} began: Apache first writes "
                               f"leader=-1, then elects")
            if L in self.maybe_shutting and live_now:
                return "D5", f"controlled-shutdown election chose {x} / ISR {list(new.isr)} (RS {list(c.rs)})"
            if c.trs is not None:
                return "D6", f"reassignment election chose {x}; expected the first of TRS {list(c.trs)} in the ISR"
            if live_now and L != NO_LEADER:
                return "D4", f"leader moved from live broker {L} to {x}; only RS[0]={c.rs[0] if c.rs else None} " \
                             "(preferred election) may take over"
            return "D1", (f"offline election chose {x} with ISR {list(new.isr)}; Apache picks the first replica "
                          f"of {list(c.rs)} that is online and in the ISR, ISR := ISR ∩ online")
        if x == NO_LEADER and L != NO_LEADER:
            exp = remove_from_isr(L, prev.isr, L)
            if exp is not None and frozenset(exp[1]) != new.isr_set:
                return "D8", f"leader {L} removed but ISR became {list(new.isr)}, expected {list(exp[1])}"
            return "D1", f"leader {L} set to -1 although an online ISR member could have been elected"
        removed = [r for r in prev.isr if r not in new.isr_set]
        if removed and len(removed) > 1:
            return "D10", f"one controller write removed {removed} from the ISR; Apache removes one replica per write"
        if removed:
            return "D10", f"replica {removed[0]} removed from the ISR although the controller saw it live"
        if prev.isr_set == new.isr_set and len(prev.isr) == 1 and not new.isr_set - prev.isr_set:
            if L == x:
                return "D7", "leader-epoch bump with no change and no reassignment, failover or dead replica cause"
        if not new.isr and prev.isr:
            return "D8", "the last ISR member was removed"
        return "D7", "leader-epoch bump with no change and no reassignment, failover or dead replica cause"


def record_unclean_permission(judge, action: str | None, params: dict) -> bool:
    """Note what a successful ``action`` permits about unclean elections on ``judge`` (its
    ``unclean_topic``, ``unclean_default``, ``unclean_grants``): a ``set_config`` of
    unclean.leader.election.enable (topic or broker default), or an ElectLeaders(UNCLEAN) grant for
    its partitions. Returns True when the action was one of these (shared by the ZooKeeper and
    KRaft checkers)."""
    if action == "set_config":
        cfg = params.get("config") or params.get("configs") or {}
        if UNCLEAN_KEY in cfg:
            val = str(cfg[UNCLEAN_KEY]).lower() == "true"
            topic = params.get("topic") or (params.get("entity_name") if params.get("entity_type") in
                                            ("topic", "topics") else None)
            if topic:
                judge.unclean_topic[topic] = val
            else:
                judge.unclean_default = val
        return True
    if action in ("elect_unclean", "elect_leaders"):
        if action == "elect_unclean" or str(params.get("election_type", "")).lower() == "unclean":
            for tp in _partitions_of(params):
                judge.unclean_grants.add(tp)
        return True
    return False


def _partitions_of(params: dict):
    """``action`` params -> {(topic, partition) | (topic, None)} (lenient about the shape)."""
    out = set()
    listed = params.get("partitions")
    # create_topic params carry a partition *count* (TopicSpec.to_dict); only lists name partitions
    for e in listed if isinstance(listed, list) else []:
        if isinstance(e, dict) and "topic" in e:
            out.add((e["topic"], e.get("partition")))
        elif isinstance(e, (list, tuple)) and len(e) == 2:
            out.add((e[0], int(e[1])))
    if "topic" in params:
        p = params.get("partition")
        out.add((params["topic"], None if p is None else int(p)))
    return {(t, None if p is None else int(p)) for t, p in out}


def check_conformance(events: list[dict], metadata: dict | None = None,
                      profile: str | Profile | None = None) -> ConformanceResult:
    """Check a run's observed controller behaviour against ``profile`` (spec §8).

    ``profile``: a :class:`Profile`, a profile name (``"apache-zk-3.9"``, ``"compatible"``,
    ``"kraft-3.9"``), or None to use ``metadata["profile"]`` / ``metadata["kafka_version"]``.

    KRaft hook: a ``kraft-*`` profile, or any profile on a run without ZooKeeper (metadata
    ``distribution: "apache-kraft"`` or ``cluster.zookeepers: 0``), is judged from protocol samples by
    :func:`reference.kraft.check_protocol_conformance` (same result shape). An ``apache-zk-*``
    profile on such a run is a ``ValueError``.
    """
    metadata = metadata or {}
    kraft_run = run_without_zookeeper(metadata)
    if not isinstance(profile, Profile):
        profile = profile_for(metadata.get("kafka_version"), profile or metadata.get("profile"), kraft_run)
    elif kraft_run and profile.mode == "zk" and profile.determinism:
        raise ValueError(f"profile {profile.name} describes the ZooKeeper-mode controller, but this run has no "
                         "ZooKeeper; use a kraft-<major>.<minor> profile or compatible")
    if profile.mode == "kraft" or kraft_run:
        from reference.kraft import check_protocol_conformance
        return check_protocol_conformance(events, metadata, profile)
    return Checker(profile, metadata).run(events)
