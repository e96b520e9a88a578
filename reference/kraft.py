"""KRaft profile: conformance of a run observed through the Kafka protocol only (spec §8.1, §8.2, §9).

A KRaft cluster has no ZooKeeper, so there is no authoritative history of partition records: the
checker sees **periodic samples** (docs/run-record.md, "Additions (protocol observation, KRaft)"):

* ``admin.metadata`` (``source: "protocol"``): one broker's Metadata answer (``answered_by``), per
  partition ``leader``, ``leader_epoch`` (v7+), ``replicas``, ``isr``, ``offline_replicas``, ``error``
  and, with DescribeTopicPartitions, ``eligible_leader_replicas`` / ``last_known_elr`` (§9.5);
* ``kraft.quorum``: one DescribeQuorum answer (Raft ``leader_id`` / ``leader_epoch``, ``voters``);
* ``fault.start`` / ``fault.heal`` / ``fault.end``, ``action``, ``phase`` (``faults.healed``) as in
  ZooKeeper runs.

What a sample is worth (§8.1)
-----------------------------
* A Metadata answer is the answering broker's **cache**. A broker applies the metadata log in order,
  so its own answers never go back in time, but two brokers may disagree (one lags). Hence the leader
  epoch is checked for monotonicity **per answering broker** (H3), never across brokers.
* ``(leader_epoch -> leader)`` is a fact of the metadata log that every cache agrees on, so "one leader
  per epoch" (H4) is checked across all answers -- on entries with ``error: null`` only: an entry with
  ``LEADER_NOT_AVAILABLE`` carries ``leader = -1`` synthesized by the broker (caveat 2) but still the
  cached epoch, ISR and replicas, which the ISR-shape rules (H7, H8) and H11's "previous ISR" do use.
* **Samples skip states** (caveat 6): between two samples any number of records may have been applied.
  Rules on transitions are stated so that a gap can only hide a violation, never invent one; where
  that is impossible the remaining false-positive mode is named below and in docs/reference-model.md.

Rules (ids and sections: ``KRAFT_RULES`` in reference/kraft_rules.py)
----------------------------------------------------------------------
* Per entry: H5 leader ∈ ISR, H6 leader ∈ replicas, H7 ISR never empty (§9.3: fencing the last ISR
  member leaves it in the ISR with leader -1; only with ELR (§9.5) may the ISR be empty, and then
  the leader is -1), H8 ISR ⊆ replicas (KRaft validates it on every change, §9.4), K2 ELR shape.
* H3 per answering broker; H4 across all answers.
* H11 clean election: the first time a leader ``x`` is seen at epoch ``LE`` and the latest sample at
  ``LE - 1`` shows another leader, ``x`` must be in that sample's ISR -- unless unclean election is
  permitted (config, ``set_config``, ``elect_unclean``), ``x`` came from the ELR / last known leader
  (§9.5), or ``x`` may have joined the ISR between the two samples (a clean election after a hidden ISR
  expansion): the old leader was untouched by faults and still unfenced, or the new ISR keeps another
  old member -- an unclean election needs every old ISR member, the old leader included, fenced or
  shutting down, and resets the ISR to ``[x]``. Epoch jumps > 1 are not judged.
* H19 (``kraft-*``): a leader absent from the unfenced brokers listed in the same Metadata answer (a
  KRaft broker lists only unfenced brokers, and fencing moves leadership first).
* H19 / K3 also use faults as the liveness signal (§9.3: a broker without heartbeats is fenced after
  ``broker.session.timeout.ms``): a broker is *certainly down* from a ``kill``/``pause``/``isolate``
  (``stop``: after its ``stop_timeout_s``) until the fault is healed. H19: it is elected or added to an
  ISR although it has been down for longer than session timeout + grace (judged on two consecutive
  answers of one healthy broker, so the change happened between them). The heal restarts a broker
  before its ``fault.end`` is recorded (that waits for the restarted broker's startup): a broker is
  certainly down only until ``fault.heal`` (the heal begins). In older records without
  ``fault.heal``, a broker that one answering broker first omitted (fenced) and later lists again
  (unfenced) has registered anew (§9.3: a restarting broker registers fenced and is unfenced once
  caught up) and is no longer certainly down from that answer on. K3 (progress, §8.4): a healthy
  broker still reports it as leader later than that bound after it went down (or after the quorum
  regained a majority of voters). K3 (kind ``progress``) applies under every profile, ``compatible``
  included: a broker that keeps a dead broker as leader is broken whatever its election rules.
* H15 on ``admin.reassignments`` (ListPartitionReassignments, answered by the active controller); D15
  (``kraft-*``): its encoding ``RS = target ++ sorted(current − target)``, sorted AR/RR (§9.6, PRR).
* D8 (``kraft-*``, no ELR): a leaderless entry keeps exactly one ISR member (§9.3).
* D7 (``kraft-*`` only, §9.2): with MV ≥ 3.6 one broker's consecutive answers showing the same leader
  at exactly LE+1 require a replica removal (reassignment); before 3.6 an ISR shrink at an unchanged
  LE is the divergence (it bumped LE then). Topics with reassignments in the run are not judged.
* Quorum (``kraft.quorum``): H1 the Raft epoch never decreases in one broker's answers, one quorum
  leader per epoch across all answers (so a leader change comes with a higher epoch), K1 the leader is
  a voter.

Not checkable from samples: H2, H9 (no partition epoch in the protocol), H12 (recovery state), H10
beyond H4, H13, H14, H16 (no reassignment records), and KRaft D-rules that need the controller's view
of fencing (D3, D12, D18 timing) -- on a record with the metadata log (``meta.*``), L1-L10 (reference/kraft_log.py)
judge them. Samples as records: reference/kraft_samples.py; faults as liveness: kraft_liveness.py.
"""

from __future__ import annotations

import math

from harness.record.events import ACTION, ADMIN_METADATA, FAULT_END, FAULT_HEAL, FAULT_START, PHASE
from reference.actions import partitions_of, record_unclean_permission
from reference.kraft_liveness import Liveness
from reference.kraft_log import judge_metadata_log
from reference.kraft_rules import KRAFT_RULES, KraftDivergence
from reference.kraft_samples import STATE_ERRORS, PObs, QObs, ints, partition_obs
from reference.profiles import Profile
from reference.result import MAX_REPORTED, ConformanceResult

UNCLEAN_KEY = "unclean.leader.election.enable"
SESSION_KEY = "broker.session.timeout.ms"
DEFAULT_SESSION_S = 9.0          # broker.session.timeout.ms default (§9.3, D20)
DEFAULT_GRACE_S = 30.0           # generous slack for detection, controller failover and load (§8.4)
MV_ISR_SHRINK_NO_BUMP = (3, 6)   # MV 3.6-IV0: an ISR shrink no longer bumps LE (§9.2, D7)
ELR_CODE = (4, 0)                # ELR usable (opt-in in 4.0, default for new clusters from 4.1, §9.5)


# ------------------------------------------------------------------------------ the checker
class KraftChecker:
    """Single pass over a KRaft run's events. Use :func:`check_protocol_conformance`."""

    def __init__(self, profile: Profile, metadata: dict, grace_s: float = DEFAULT_GRACE_S):
        self.p = profile
        self.apache = profile.determinism
        self.viols: list[KraftDivergence] = []
        self.divs: list[KraftDivergence] = []
        self.notes: list[KraftDivergence] = []
        self._reported: set = set()
        cfg = metadata.get("broker_config") or {}
        try:
            self.session_s = float(cfg.get(SESSION_KEY, DEFAULT_SESSION_S * 1000)) / 1000.0
        except (TypeError, ValueError):
            raise ValueError(f"broker_config {SESSION_KEY}={cfg.get(SESSION_KEY)!r} is not a number of ms") from None
        self.grace_s = grace_s
        self.unclean_default = str(cfg.get(UNCLEAN_KEY, "false")).lower() == "true"
        self.unclean_topic: dict[str, bool] = {}
        for t in metadata.get("topics") or []:
            c = (t or {}).get("config") or {}
            if UNCLEAN_KEY in c:
                self.unclean_topic[t["name"]] = str(c[UNCLEAN_KEY]).lower() == "true"
        self.unclean_grants: set = set()
        # ELR (§9.5): may the ISR be empty?  4.0: opt-in (a feature upgrade the record does not show), 4.1+:
        # default for new clusters, compatible: another design may use it; 3.x only if answers carry an ELR.
        self.elr_possible = (not self.apache) or profile.version >= ELR_CODE
        self.live = Liveness()
        self.incarnation: dict[str, int] = {}
        self.reassigned: set[str] = set()        # topics with a reassignment in the run (D7, H8 exemptions)
        # partition state, keyed by (topic, incarnation, partition)
        self.last_by: dict[tuple, PObs] = {}     # (key, broker) -> that broker's latest answer
        self.at_le: dict[tuple, dict[int, PObs]] = {}   # key -> LE -> latest entry with that LE (any broker)
        self.epochs: dict[tuple, dict[int, PObs]] = {}  # key -> LE -> first entry with a real leader at it
        # quorum
        self.q_last: dict = {}                   # answering broker -> QObs
        self.q_epochs: dict[int, QObs] = {}
        self.voters: frozenset = frozenset()
        self.quorum_ok_since: float = -math.inf
        self._quorum_lost = False
        self.stats: dict = {"events": 0, "samples": 0, "samples_failed": 0, "partition_entries": 0,
                            "entries_without_epoch": 0, "leader_epochs": 0, "leader_changes": 0,
                            "elections_judged": 0, "elections_unclean_permitted": 0,
                            "elections_hidden_isr_expansion": 0, "epoch_jumps": 0,
                            "quorum_samples": 0, "quorum_epochs": 0, "quorum_leader_changes": 0}
        self._ev: dict = {}
        self._t = 0.0

    # -- reporting -------------------------------------------------------------------------------
    def _report(self, rule: str, subject: str, msg: str, before=None, after=None, allowed=(), key=None):
        """Report once per ``key`` (a sample repeats a bad state every interval)."""
        k = (rule, subject, key if key is not None else msg)
        if k in self._reported:
            return
        self._reported.add(k)
        d = KraftDivergence(rule=rule, subject=subject, explanation=msg, seq=self._ev.get("seq"), zxid=None,
                            before=before, after=after, allowed=list(allowed), t=self._t)
        if KRAFT_RULES[rule][1] == "invariant":
            self.viols.append(d)
        else:
            self.divs.append(d)

    # -- driver ----------------------------------------------------------------------------------
    def run(self, events) -> ConformanceResult:
        handlers = {ADMIN_METADATA: self._on_metadata, "kraft.quorum": self._on_quorum,
                    FAULT_START: self._on_fault_start, FAULT_END: self._on_fault_end,
                    FAULT_HEAL: self._on_fault_heal,
                    ACTION: self._on_action, PHASE: self._on_phase,
                    "admin.reassignments": self._on_reassignments}
        evs = sorted((e for e in events if e.get("type") in handlers), key=lambda e: e.get("seq", 0))
        self.live.heals_recorded = any(e["type"] == FAULT_HEAL for e in evs)
        for ev in evs:
            self._ev = ev
            t = ev.get("t", ev.get("wall"))
            if isinstance(t, (int, float)) and not isinstance(t, bool):
                self._t = max(self._t, float(t))
            self.stats["events"] += 1
            handlers[ev["type"]](ev)
        self.stats["transitions"] = self.stats["leader_changes"]
        self.stats["divergences"] = len(self.divs)
        self.stats["invariant_violations"] = len(self.viols)
        self.stats["notes"] = [d.to_dict() for d in self.notes[:MAX_REPORTED]]
        self.stats["observation"] = "protocol samples (spec §8.1: per-broker caches, skipped states)"
        verdict = "FAIL" if (self.divs or self.viols) else "PASS"
        return ConformanceResult(verdict, self.divs, self.viols, self.stats, self.p.name)

    # -- faults, actions ---------------------------------------------------------------------------
    def _on_fault_start(self, ev):
        self.live.start(ev, self._t)
        self._update_quorum_health()

    def _on_fault_heal(self, ev):
        self.live.heal_begins(ev, self._t)
        self._update_quorum_health()

    def _on_fault_end(self, ev):
        self.live.end(ev, self._t)
        self._update_quorum_health()

    def _on_phase(self, ev):
        if ev.get("name") == "faults.healed":
            self.live.healed(self._t)
            self._update_quorum_health()

    def _on_action(self, ev):
        a = ev.get("action")
        params = ev.get("params") or {}
        if a in ("create_topic", "delete_topic"):
            # a new incarnation restarts at LE 0 (§8.1 caveat 7); reset even when the call failed
            for name in _topics_of(params):
                self._reset_topic(name)
            return
        if ev.get("ok") is False:
            return
        if record_unclean_permission(self, a, params):
            return
        if a in ("reassign", "cancel_reassign"):
            self.reassigned.update(t for t, _ in partitions_of(params))

    def _on_reassignments(self, ev):
        """ListPartitionReassignments (answered by the active controller, §9.6): H15 and, for kraft-*, D15."""
        if ev.get("error"):
            return
        for e in ev.get("partitions") or []:
            if not e.get("topic"):
                continue
            self.reassigned.add(e["topic"])
            rs, ar, rr = ints(e.get("replicas")), ints(e.get("adding_replicas")), ints(e.get("removing_replicas"))
            subject = f"{e['topic']}-{e.get('partition')}"
            after = {"replicas": list(rs), "adding": list(ar), "removing": list(rr), "seq": ev.get("seq")}
            trs, ors = [r for r in rs if r not in rr], [r for r in rs if r not in ar]
            if set(ar) & set(rr) or not set(ar) <= set(rs) or not set(rr) <= set(rs) or not trs or not ors \
                    or not (ar or rr):
                self._report("H15", subject, f"invalid reassignment state RS={list(rs)} AR={list(ar)} RR={list(rr)}",
                             None, after, key=(rs, ar, rr))
            elif self.apache and (list(ar) != sorted(ar) or list(rr) != sorted(rr)
                                  or (rr and list(rs[-len(rr):]) != list(rr))):
                exp = trs + sorted(rr)
                self._report("D15", subject, f"reassignment written as RS={list(rs)} AR={list(ar)} RR={list(rr)}; "
                             "KRaft writes RS = target ++ sorted(current − target) with sorted AR and RR (PRR)",
                             None, after, [f"RS={exp} AR={sorted(ar)} RR={sorted(rr)}"], key=(rs, ar, rr))

    def _reset_topic(self, name: str) -> None:
        self.incarnation[name] = self.incarnation.get(name, 0) + 1

    # -- quorum: H1, K1 ----------------------------------------------------------------------------
    def _on_quorum(self, ev):
        if ev.get("error") or ev.get("leader_epoch") is None:
            return
        self.stats["quorum_samples"] += 1
        q = QObs(ev.get("seq", 0), self._t, ev.get("answered_by"), ev.get("leader_id"), int(ev["leader_epoch"]))
        voters = frozenset(int(v["id"]) for v in ev.get("voters") or [] if isinstance(v, dict) and "id" in v)
        if voters:
            self.voters = voters
            self._update_quorum_health()
        if q.leader is not None and voters and q.leader not in voters:
            self._report("K1", "quorum", f"quorum leader {q.leader} (epoch {q.epoch}) is not a voter "
                         f"{sorted(voters)}", None, q.to_dict(), key=(q.leader, q.epoch))
        prev = self.q_last.get(q.by)
        if prev is not None and q.epoch < prev.epoch:
            self._report("H1", "quorum", f"Raft epoch went backwards {prev.epoch} -> {q.epoch} in the answers of "
                         f"broker {q.by}", prev.to_dict(), q.to_dict(), key=("back", q.by, prev.epoch, q.epoch))
        if prev is None or q.epoch >= prev.epoch:
            self.q_last[q.by] = q
        if q.leader is None:
            return
        seen = self.q_epochs.get(q.epoch)
        if seen is None:
            self.q_epochs[q.epoch] = q
            self.stats["quorum_epochs"] += 1
            older = [e for e in self.q_epochs if e < q.epoch]
            if older and self.q_epochs[max(older)].leader != q.leader:
                self.stats["quorum_leader_changes"] += 1
        elif seen.leader != q.leader:
            self._report("H1", "quorum", f"two quorum leaders in Raft epoch {q.epoch}: {seen.leader} and "
                         f"{q.leader} (a leader change must raise the epoch)", seen.to_dict(), q.to_dict(),
                         key=("two", q.epoch))

    def _update_quorum_health(self) -> None:
        """Track since when a majority of the voters has been up (K3 counts from then)."""
        if not self.voters:
            return
        down = sum(1 for v in self.voters if self.live.down_since(v) is not None)
        lost = len(self.voters) - down < len(self.voters) // 2 + 1
        if self._quorum_lost and not lost:
            self.quorum_ok_since = self._t
        self._quorum_lost = lost

    # -- partitions --------------------------------------------------------------------------------
    def _on_metadata(self, ev):
        if ev.get("error"):
            self.stats["samples_failed"] += 1
            return
        self.stats["samples"] += 1
        by = ev.get("answered_by")
        # KRaft Metadata lists only unfenced brokers (KMC getAliveBrokerNodes), and the controller moves
        # leadership away in the records *before* the fencing record (RCM handleBrokerFenced), so a
        # leader missing from the same answer's broker list is a fenced leader (H19, kraft-* only).
        listed = frozenset(ev.get("brokers") or ()) if ev.get("source") == "protocol" else frozenset()
        unfenced = listed if self.apache else frozenset()
        if listed and by is not None:
            self.live.listed(int(by), listed, self._t)
        for p in ev.get("partitions") or []:
            topic = p.get("topic")
            if p.get("partition") is None:
                if p.get("error") == "UNKNOWN_TOPIC_OR_PARTITION" and topic:
                    self._reset_topic(topic)             # deleted (or not yet known): a new incarnation next
                continue
            if p.get("error") not in STATE_ERRORS:
                continue
            self.stats["partition_entries"] += 1
            o = partition_obs(ev.get("seq", 0), self._t, by, p)
            key = (topic, self.incarnation.get(topic, 0), int(p["partition"]))
            subject = f"{topic}-{p['partition']}"
            if o.elr:
                self.elr_possible = True                 # the cluster runs ELR (4.0 opt-in)
            self._check_entry(subject, topic, o)
            if o.has_leader:
                self._check_progress(subject, o)
                if unfenced and o.leader not in unfenced:
                    self._report("H19", subject, f"leader {o.leader} is not among the unfenced brokers "
                                 f"{sorted(unfenced)} of the same answer (broker {by}): a fenced broker is still "
                                 "leader (KRaft moves leadership before it writes the fencing record, §9.3)",
                                 None, o.to_dict(), key=("fenced-leader", o.leader, o.le))
            if o.le is None:
                self.stats["entries_without_epoch"] += 1
                continue
            self._check_epochs(key, subject, o, listed)

    def _check_entry(self, subject: str, topic: str, o: PObs) -> None:
        """H5, H6, H7, H8, K2 on one entry (§8.2; §9.3-§9.5)."""
        a, sk = o.to_dict(), (o.leader, o.le, o.isr, o.rs)
        if o.has_leader:
            if o.leader not in o.isr:
                self._report("H5", subject, f"leader {o.leader} is not in the ISR {list(o.isr)} (broker {o.by}'s "
                             "answer)", None, a, key=sk)
            if o.leader not in o.rs:
                self._report("H6", subject, f"leader {o.leader} is not a replica {list(o.rs)}", None, a, key=sk)
        if not o.isr:
            if o.has_leader:
                self._report("H7", subject, f"leader {o.leader} with an empty ISR", None, a, key=sk)
            elif not self.elr_possible:
                self._report("H7", subject, "empty ISR: without ELR KRaft keeps the last ISR member when it is "
                             "fenced and sets the leader to -1 (§9.3, PCB: the ISR field is left unchanged)",
                             None, a, key=sk)
        if (self.apache and not self.elr_possible and o.leader < 0 and o.error == "LEADER_NOT_AVAILABLE"
                and len(o.isr) > 1):
            self._report("D8", subject, f"leaderless with ISR {list(o.isr)}: fencing or shutting down removes every "
                         "ISR member but the last, so a partition without an electable ISR member keeps exactly one",
                         None, a, key=sk)
        outside = [r for r in o.isr if r not in o.rs]
        if outside and (self.apache or topic not in self.reassigned):
            self._report("H8", subject, f"ISR members {outside} are not replicas {list(o.rs)}", None, a, key=sk)
        if o.elr:
            both = sorted(set(o.elr) & set(o.isr))
            stray = sorted(set(o.elr) - set(o.rs))
            if both or stray:
                self._report("K2", subject, f"ELR {list(o.elr)} overlaps the ISR {both} or is not within the "
                             f"replicas {stray}", None, a, key=sk)

    def _check_epochs(self, key, subject: str, o: PObs, listed: frozenset = frozenset()) -> None:
        prev_b = self.last_by.get((key, o.by)) if o.by is not None else None
        if prev_b is not None and o.le < prev_b.le:
            self._report("H3", subject, f"leader epoch went backwards {prev_b.le} -> {o.le} in the answers of "
                         f"broker {o.by}", prev_b.to_dict(), o.to_dict(), key=(o.by, prev_b.le, o.le))
        at_le = self.at_le.setdefault(key, {})
        epochs = self.epochs.setdefault(key, {})
        if o.has_leader:
            first = epochs.get(o.le)
            if first is None:
                epochs[o.le] = o
                self.stats["leader_epochs"] += 1
                self._on_new_epoch(key, subject, o, at_le.get(o.le - 1), prev_b, listed)
            elif first.leader != o.leader:
                self._report("H4", subject, f"two leaders in leader epoch {o.le}: {first.leader} and {o.leader}",
                             first.to_dict(), o.to_dict(), key=o.le)
        if prev_b is not None and o.has_leader and prev_b.has_leader and prev_b.le <= o.le:
            self._check_pair(subject, key[0], prev_b, o)
        if prev_b is None or o.le >= prev_b.le:
            self.last_by[(key, o.by)] = o
        at_le[o.le] = o

    def _on_new_epoch(self, key, subject: str, o: PObs, prev: PObs | None, prev_b: PObs | None,
                      listed: frozenset = frozenset()) -> None:
        """First entry with a real leader at a new LE: H11 against the latest entry at LE-1, H19."""
        x = o.leader
        if prev is None:
            lower = [e for e in self.at_le[key] if e < o.le] if key in self.at_le else []
            if lower:
                self.stats["epoch_jumps"] += 1            # skipped epochs: several records hidden, not judged
            self._check_fenced(subject, o, prev_b, elected=True)
            return
        if prev.leader != x:
            self.stats["leader_changes"] += 1
            if x not in prev.isr:
                self._judge_outside_isr(key, subject, prev, o, listed)
            else:
                self.stats["elections_judged"] += 1
        self._check_fenced(subject, o, prev_b, elected=True)

    def _judge_outside_isr(self, key, subject: str, prev: PObs, o: PObs, listed: frozenset = frozenset()) -> None:
        """H11: ``o.leader`` was not in the ISR of the latest sample at LE-1 (§9.4, §9.5).

        ``x`` may have joined the ISR after that sample (ISR changes keep LE in KRaft). An unclean election
        needs every ISR member -- in particular the old leader, which is in the ISR for its whole epoch --
        to be inactive (fenced or shutting down), and resets the ISR to ``[x]``. So the election is taken
        as a clean one after a hidden ISR expansion when the old leader was untouched by faults between
        the two samples and is still listed as unfenced, or when the new ISR keeps an old member."""
        x, topic, part = o.leader, key[0], key[2]
        if self.unclean_topic.get(topic, self.unclean_default):
            self.stats["elections_unclean_permitted"] += 1
            return
        for g in ((topic, part), (topic, None)):
            if g in self.unclean_grants:
                self.unclean_grants.discard(g)
                self.stats["elections_unclean_permitted"] += 1
                return
        if not prev.isr:
            if prev.elr is not None:
                if x in prev.elr or (not prev.elr and prev.lke == (x,)):
                    self.stats["elections_judged"] += 1       # ELR member / last known leader (§9.5)
                    return
            elif self.elr_possible:
                return                                        # ELR fields not sampled: cannot judge
        kept = sorted(r for r in o.isr if r != x and r in prev.isr)
        old = prev.leader
        old_active = (old >= 0 and not self.live.touched_since(old, prev.t)
                      and (not listed or old in listed))
        if kept or old_active:
            self.stats["elections_hidden_isr_expansion"] += 1
            return
        self.stats["elections_judged"] += 1
        self._report("H11", subject, f"broker {x} became leader at epoch {o.le} but was not in the ISR "
                     f"{list(prev.isr)} at epoch {prev.le}, the old leader {old} was down or fenced (so no "
                     "preferred election after a hidden ISR expansion explains it), and unclean leader election "
                     "is not permitted",
                     prev.to_dict(), o.to_dict(), [f"leader ∈ {sorted(prev.isr)} or -1"], key=o.le)

    def _check_fenced(self, subject: str, o: PObs, prev_b: PObs | None, elected: bool) -> None:
        """H19: between two answers of one healthy broker, a broker that had been down for longer than
        session timeout + grace became leader or joined the ISR (§9.3: fenced brokers are not electable)."""
        if prev_b is None or o.by is None or not self.voters or self._quorum_lost:
            return                  # without a known quorum a new controller may not have fenced anyone yet
        hs = self.live.healthy_since(o.by)
        if hs is None or hs > prev_b.t - self.session_s:
            return
        bound = self.session_s + self.grace_s
        cands = []
        if elected and o.has_leader and prev_b.leader != o.leader:
            cands.append((o.leader, "elected leader"))
        cands += [(r, "added to the ISR") for r in o.isr if r not in prev_b.isr]
        for b, what in cands:
            d = self.live.down_since(b)
            # a new active controller starts every unfenced broker's session afresh (§9.3)
            if d is not None and max(d, self.quorum_ok_since) + bound <= prev_b.t:
                self._report("H19", subject, f"broker {b} {what} (broker {o.by}'s answers at t={prev_b.t:.1f} and "
                             f"t={o.t:.1f}) although it has been down since t={d:.1f}, longer than the session "
                             f"timeout {self.session_s:g}s + {self.grace_s:g}s: it must have been fenced",
                             prev_b.to_dict(), o.to_dict(), key=(b, what, d))

    def _check_pair(self, subject: str, topic: str, a: PObs, b: PObs) -> None:
        """Consecutive answers of one broker with real leaders: H19 ISR additions, D7, K3."""
        if b.le == a.le:
            self._check_fenced(subject, b, a, elected=False)
        if self.apache and topic not in self.reassigned and a.leader == b.leader:
            if self.p.version >= MV_ISR_SHRINK_NO_BUMP:
                if b.le == a.le + 1 and set(a.rs) <= set(b.rs):
                    self._report("D7", subject, f"leader epoch {a.le} -> {b.le} with the same leader {b.leader} and "
                                 f"no replica removed ({list(a.rs)} -> {list(b.rs)}); with MV ≥ 3.6 KRaft bumps "
                                 "it only on a leader change or a replica removal (ISR changes bump the partition "
                                 "epoch only)", a.to_dict(), b.to_dict(), [f"leader_epoch={a.le}"], key=b.le)
            elif b.le == a.le and set(a.isr) - set(b.isr):
                self._report("D7", subject, f"ISR shrank {list(a.isr)} -> {list(b.isr)} at leader epoch {b.le}; "
                             "before MV 3.6 every ISR shrink bumps the leader epoch (KAFKA-15021)",
                             a.to_dict(), b.to_dict(), [f"leader_epoch>{a.le}"], key=(b.le, b.isr))

    def _check_progress(self, subject: str, o: PObs) -> None:
        """K3: a healthy broker still names a leader that has been down for session timeout + grace."""
        x = o.leader
        if o.by is None or o.by == x or not self.voters or self._quorum_lost:
            return
        d = self.live.down_since(x)
        hs = self.live.healthy_since(o.by)
        if d is None or hs is None or hs > o.t - self.session_s:
            return
        deadline = max(d, self.quorum_ok_since) + self.session_s + self.grace_s
        if o.t > deadline:
            self._report("K3", subject, f"broker {o.by} still names broker {x} leader at t={o.t:.1f}, "
                         f"{o.t - d:.1f}s after it went down (t={d:.1f}); it should have been fenced and replaced "
                         f"(or the partition left leaderless) within {self.session_s:g}s + {self.grace_s:g}s",
                         None, o.to_dict(), ["leader != " + str(x)], key=(x, d))


def _topics_of(params: dict) -> set[str]:
    out = {t for t, _ in partitions_of(params)}
    for k in ("name", "topics"):
        v = params.get(k)
        if isinstance(v, str):
            out.add(v)
        elif isinstance(v, list):
            out.update(x for x in v if isinstance(x, str))
    return out


def check_protocol_conformance(events: list[dict], metadata: dict | None, profile: Profile,
                               grace_s: float = DEFAULT_GRACE_S) -> ConformanceResult:
    """Judge a run observed through the Kafka protocol (KRaft, or any broker without ZooKeeper).

    ``profile``: a ``kraft-*`` profile (hard invariants + KRaft determinism) or ``compatible`` (hard
    invariants and the K3 progress rule). ``grace_s``: slack added to
    ``broker.session.timeout.ms`` before a dead broker must have been fenced (H19, K3, L8). A record with
    the controller's metadata log (``meta.*``) is judged on it too: reference/kraft_log.py."""
    c = KraftChecker(profile, metadata or {}, grace_s)
    return judge_metadata_log(c.run(events), events, metadata or {}, profile, c.session_s, grace_s)
