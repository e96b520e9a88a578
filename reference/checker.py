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
* Gaps (a ``zk.gap`` event or a jump of the znode ``version``) mean skipped states (§8.1 caveat 6),
  and limit rules to the interval they cover only: a partition gap exempts the one transition across
  it (only H2-H9, H12 on it), a topic gap the one topic transition (D15, H16), a ``/brokers/ids`` gap
  the writes whose admissible controller views still reach back before it (until the controller's
  frontier passes it or a controller elected after it acts), a ``/controller`` gap the epoch rules
  until the next epoch is seen. Rules resume with the next complete observation.
* Progress (P1 elections, P3 reassignments, §8.4) is judged by ``liveness.py`` with time bounds from
  ``profiles.progress_bounds``; H8 (ISR ⊆ replicas, §8.2) with the §7.10 reassignment transients.
"""

from __future__ import annotations

import gc
import itertools
from operator import itemgetter
from typing import Any

from harness.record.events import ACTION, ADMIN_METADATA, FAULT_END, FAULT_START
from reference.events import ZK_TYPES, normalize_counted, parse_gap_path
from reference.invariants import state_violations, transition_violations
from reference.liveness import Progress
from reference.actions import UNCLEAN_KEY, partitions_of, record_unclean_permission
from reference.profiles import GATE_FENCING, GATE_KIP841, GATE_RECOVERY, Profile, progress_bounds
from reference.result import MAX_REPORTED, ConformanceResult, Divergence
from reference.state import NO_LEADER, RECOVERING
from reference.topics import TopicJudge, _Topic
from reference.records import Obs, new_record
from reference.writes import WriteJudge

_ZK_TYPES = frozenset(ZK_TYPES)
_STATE_FIELDS = itemgetter("topic", "partition", "leader", "leader_epoch", "isr", "controller_epoch", "version")
_STATE_ALL = itemgetter("topic", "partition", "leader", "leader_epoch", "isr", "controller_epoch", "version",
                        "deleted", "leader_recovery_state")
_NUM = (float, int)     # the types of an event time (``zk_time`` / ``wall``)

__all__ = ["Checker", "ConformanceResult", "Divergence", "MAX_REPORTED"]

GRACEFUL_FAULTS = frozenset({"stop", "restart", "shutdown", "controlled_shutdown"})


class _Part:
    __slots__ = ("st", "gap", "epochs", "subject", "tp")

    def __init__(self, tp: tuple):
        self.tp = tp            # the partition's key, one tuple object: the dicts and sets keyed by it
        self.subject = ""       # (progress rules too) then match it by identity, without comparing
        self.st: Obs | None = None
        self.gap = False
        self.epochs: dict[int, int] = {}


# ------------------------------------------------------------------------------ the checker
class Checker(WriteJudge, TopicJudge):
    """Stateful single pass over normalized events. Use :func:`check_conformance`."""

    def __init__(self, profile: Profile, metadata: dict):
        self.p = profile
        self.apache = profile.determinism
        self.rec_supported = profile.at_least(GATE_RECOVERY)
        self.fencing = profile.at_least(GATE_FENCING)
        self.kip841 = profile.at_least(GATE_KIP841)
        self.divs: list[Divergence] = []
        self.viols: list[Divergence] = []
        self.stats: dict[str, int] = {"events": 0, "zk_events": 0, "state_writes": 0, "controller_writes": 0,
                                      "leader_isr_changes": 0, "creations": 0, "gaps": 0, "elections": 0,
                                      "views_scanned": 0}
        # the counters bumped per write, kept out of the dict on the hot path (folded in by run)
        self.n_states = self.n_cwrites = self.n_lic = self.n_elections = self.n_views = 0
        # controller
        self.epoch: int | None = None
        self.epoch_version: int | None = None
        self.controller: int | None = None
        self.owner: dict[int, int] = {}
        self.unpaired: tuple | None = None   # (broker, zxid, source) of a /controller creation without its epoch yet
        self.epoch_start: dict[int, int] = {}
        self.epoch_first_write: dict[int, int] = {}   # epoch -> snapshot index at its first controller write
        self.lo: dict[int, int] = {}
        self.epoch_gap = False
        # brokers (the controller's possible views)
        self.registered: dict[int, Any] = {}
        self.seen_brokers: set[int] = set()
        self.snaps: list[frozenset] = [frozenset()]
        self._snap_ids: dict[frozenset, frozenset] = {}
        self.last_registered: dict[int, int] = {}     # broker -> newest snapshot index with it registered
        self.broker_gap_at: int | None = None        # last snapshot before a /brokers/ids gap
        self.maybe_shutting: set[int] = set()
        self._no_sd: list[frozenset] = [frozenset()]
        self._sd_cache: dict[frozenset, list[frozenset]] = {}
        self._sd_by_reps: dict[tuple, list[frozenset]] = {}     # (RS, ISR) -> _sd_options of their brokers
        # topics / partitions
        self.topics: dict[str, _Topic] = {}
        self.parts: dict[tuple, _Part] = {}
        self._isr_sets: dict[tuple, frozenset] = {}
        self._trs_of: dict[tuple, tuple] = {}      # (RS, RR) -> (RS - RR, frozenset(RR)) (WriteJudge._write_ctx)
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
        # The pass allocates many small objects that form no cycles (states, contexts, snapshots) and
        # reads a long record's dicts: the cyclic collector's scans over them free nothing (its full
        # collection, when one falls in the pass, walks every event of the record). Paused, as in the
        # harness's checkers (harness/checkers/common.py); the previous state is restored.
        was = gc.isenabled()
        gc.disable()
        try:
            return self._run(events)
        finally:
            if was:
                gc.enable()

    def _run(self, events) -> ConformanceResult:
        handlers = {"zk.controller": self._on_controller, "zk.controller_epoch": self._on_epoch,
                    "zk.broker": self._on_broker, "zk.topic": self._on_topic,
                    "zk.partition_state": self._on_state, "zk.reassign_partitions": self._on_reassign_znode,
                    "zk.delete_topics": self._on_delete_topics, "zk.gap": self._on_gap,
                    FAULT_START: self._on_fault, FAULT_END: self.progress.on_fault_end,
                    ACTION: self._on_action, ADMIN_METADATA: self._on_metadata}
        prog = self.progress
        evs, n_zk = normalize_counted(events)
        now = None                  # prog.now, which only this loop moves
        for ev in evs:
            self._ev = ev
            # the progress clock (Progress.tick, its time update inlined: this runs on every event)
            tm = ev.get("zk_time")
            if tm is None:
                tm = ev.get("wall")
            if tm.__class__ in _NUM and (now is None or tm > now):
                now = prog.now = tm
                if prog.due is not None and now > prog.due:
                    prog.tick()
            t = ev["type"]
            # A /controller creation waits for its epoch until the next zxid (a zk.* event of another
            # transaction; zk.* events are in zxid order and the creation's zxid is u[1]): _end_txn.
            u = self.unpaired
            if u is not None and t in _ZK_TYPES and ev["zxid"] != u[1]:
                self._end_txn()
            handlers[t](ev)
        st = self.stats
        st["events"] += len(evs)
        st["zk_events"] += n_zk
        st["state_writes"] += self.n_states
        st["controller_writes"] += self.n_cwrites
        st["leader_isr_changes"] += self.n_lic
        st["elections"] += self.n_elections
        st["views_scanned"] += self.n_views
        self._end_txn(final=True)
        self.stats.update(prog.finish())
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
        self.progress.on_controller()
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
        snap = frozenset(self.registered)
        self.snaps.append(self._snap_ids.setdefault(snap, snap))     # equal snapshots share one frozenset
        self.progress.on_broker(b, ev["registered"])

    def _recompute_sd(self):
        self._sd_by_reps.clear()        # (_sd_cache, keyed by the brokers that may be stopping, holds)

    def _sd_options(self, relevant) -> list[frozenset]:
        """Possible shutting-down sets, restricted to the brokers that matter for one partition
        (its replicas): every subset of the brokers with an open graceful stop."""
        if not self.maybe_shutting:
            return self._no_sd
        ms = frozenset(self.maybe_shutting.intersection(relevant))
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
            for tp in partitions_of(params):
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
                part = self.parts[what] = _Part(what)
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


    # -- partition states -----------------------------------------------------------------------


    def _on_state(self, ev):
        # (every event of the record but a few is one of these: the fields in one call, locals throughout)
        try:
            topic, p, L, le, isr, ce, ver, deleted, rec = _STATE_ALL(ev)
        except KeyError:        # (the last two are optional; the observer always writes them)
            topic, p, L, le, isr, ce, ver = _STATE_FIELDS(ev)
            deleted, rec = ev.get("deleted"), ev.get("leader_recovery_state")
        tp = (topic, p)
        part = self.parts.get(tp)
        if deleted:
            self.parts.pop(tp, None)
            self.progress.on_state_deleted(tp)
            return
        self.n_states += 1
        isr = tuple(isr)
        rec = rec or 0
        isr_set = self._isr_sets.get(isr)   # one frozenset per distinct ISR tuple, shared
        if isr_set is None:
            isr_set = self._isr_sets[isr] = frozenset(isr)
        # Obs(...) by slot stores, without the constructor's Python-level call (this runs per state write)
        new = new_record(Obs)
        new.leader = L
        new.leader_epoch = le
        new.isr = isr
        new.isr_set = isr_set
        new.controller_epoch = ce
        new.recovery = rec
        new.version = ver
        if part is None:
            part = self.parts[tp] = _Part(tp)
            part.subject = f"{topic}-{p}"
        else:
            tp = part.tp
        subject = part.subject
        prev = part.st
        t = self.topics.get(topic)
        a = t.assign.get(p) if t is not None else None
        rs = a[0] if a else None
        rs_ok = None
        if rs is not None:
            rs_ok = t.rs_ok.get(p)
            if rs_ok is None:   # replicas a leader may legitimately be/ISR may contain (RS ∪ AR ∪ pre-U1 RS)
                rs_ok = t.rs_ok[p] = frozenset(rs) | frozenset(t.window.get(p, ())) | frozenset(a[1])
        if not ((L == NO_LEADER or L in isr_set) and (rs_ok is None or rs_ok.issuperset(isr_set))
                and (rec != RECOVERING or (len(isr) == 1 and (L == NO_LEADER or L == isr[0])))):
            # (otherwise state_violations has nothing to say: a test checks it exhaustively)
            for rule, msg in state_violations(L, isr, rec, rs_ok):
                self._report(rule, subject, msg, prev.to_dict() if prev else None, new.to_dict())
        if not isr and self.apache:
            self._report("D8", subject, "empty ISR written (ZK mode always keeps the last ISR member)",
                         prev.to_dict() if prev else None, new.to_dict())
        if self.epoch is not None and ce > self.epoch and not self.epoch_gap:
            self._report("H2", subject, f"state written with controller epoch {ce} above the "
                         f"current /controller_epoch {self.epoch}", prev.to_dict() if prev else None, new.to_dict())
        if prev is None:
            pl = pisr = pv = None
        else:
            pl, ple, pisr, pset, prec, pv = (prev.leader, prev.leader_epoch, prev.isr, prev.isr_set, prev.recovery,
                                             prev.version)
            if ver == pv and new == prev:
                return                                               # duplicate observation
        pe = part.epochs
        first = pe.get(le)
        if first is None:
            pe[le] = L
        elif first != L:
            if not (prev is not None and ple == le):                 # else reported below
                self._report("H4", subject, f"two leaders in leader epoch {le}: {first} and {L}",
                             prev.to_dict() if prev else None, new.to_dict())
        part.st = new
        prog = self.progress
        # Progress.on_state when the leader changed, the partition is obliged to elect, or its ISR
        # changed where that matters (leaderless or dead leader: a candidate; reassigning: coverage)
        if (prev is None or pl != L or tp in prog.p1
                or (pisr != isr and (L == NO_LEADER or tp in prog.p3
                                     or (L not in self.registered and L in self.seen_brokers)))):
            prog.on_state(tp, prev, new)
        gap = prev is not None and (part.gap or ver > pv + 1)
        if a is not None and (a[1] or a[2] or (self.zk_reassign and tp in self.zk_reassign)):
            # the ISR holds the target TRS = RS - RR (RS ⊆ ISR ∪ RR), or skipped states may have (H16)
            if (gap or (isr_set.union(a[2]).issuperset(a[0]) if (a[1] or a[2])
                        else isr_set.issuperset(self.zk_reassign[tp]))):
                t.trs_covered[p] = True
        if prev is None:
            self._check_creation(tp, subject, new, rs)
            part.gap = False
            return
        if (ver <= pv or le < ple
                or (le == ple
                    and not (L == pl and (L == NO_LEADER or (L in pset and L in isr_set))
                             and (rec != RECOVERING or prec == RECOVERING)
                             and (rs_ok is None or isr_set <= pset or rs_ok.issuperset(isr_set - pset))))):
            # (with both epochs up, as in every controller write, or a same-epoch write keeping its leader in
            # both ISRs, not turning RECOVERING and adding only replicas, transition_violations has nothing
            # to say: a test checks it exhaustively)
            for rule, msg in transition_violations(prev, new, rs_ok):
                self._report(rule, subject, msg, prev.to_dict(), new.to_dict())
        part.gap = False
        if gap or ver <= pv or le < ple:
            return              # skipped states: only the single-state rules and H3/H4/H9 above (§8.1 caveat 6)
        if self.broker_gap_at is not None:
            vce = ce if le > ple else (self.epoch or ce)
            if self._views(vce)[0] <= self.broker_gap_at:
                # the controller may still act on registrations the observer missed; judge nothing that
                # depends on its view, but let an explained write move its frontier past the gap
                if le > ple and rs is not None:
                    self._match_outcomes(subject, prev, new, (self._write_ctx(tp, t, a, prev, vce),), vce,
                                         report=False)
                return
        if le == ple:
            self._check_leader_isr_change(subject, prev, new, rs)
        else:
            self._check_controller_write(tp, subject, t, a, prev, new, rs)
            if self.pending_reassign:     # a pending no-op reassignment's B3 is this write at most
                self.pending_reassign.discard(tp)
