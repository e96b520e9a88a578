"""KRaft runs judged on the controller's metadata log (``meta.*`` events, ``source: "metadata_log"``).

A KRaft record carries, after the run, every record the controller committed to ``__cluster_metadata``
replayed into ``meta.partition`` (full partition state after each PartitionRecord / PartitionChangeRecord),
``meta.broker``, ``meta.feature``, ``meta.topic`` / ``meta.topic_removed`` and ``meta.leader_change``
events (docs/run-record.md, "Additions (KRaft metadata log)"). Nothing is skipped, so the rules below are
exact -- unlike the sample rules of reference/kraft.py, where "a gap can only hide a violation".

Rules (ids in ``KRAFT_RULES``, reference/kraft_rules.py; sources: apache/kafka ``metadata/.../controller/
PartitionChangeBuilder.java`` (PCB), ``ReplicationControlManager.java`` (RCM),
``PartitionReassignmentReplicas.java`` (PRR), ``BrokerHeartbeatManager.java`` (BHM)):

* L1 (§8.2/§9.4): after every record the leader is -1 or an ISR member (PCB.electLeader picks from the
  target ISR, an ELR member / last known leader / unclean choice resets the ISR to ``[leader]``).
* L2 (§8.2/§9.3/§9.4/§9.5): ISR ⊆ replicas (RCM ``Replicas.validateIsr``; completion and cancel remove the
  same members from both); the ISR is empty only when ELR is enabled (PCB.build writes an empty ISR only
  with ``eligibleLeaderReplicasEnabled``): ``eligible.leader.replicas.version`` ≥ 1 in the log, an ELR
  already in the log, or the ``compatible`` profile.
* L3 (§9.6, PRR): adding ⊆ replicas, removing ⊆ replicas, adding ∩ removing = ∅.
* L4 (§9.5, PCB.maybePopulateTargetElr): ELR ∩ ISR = ∅.
* L5 (§9.4/§9.5, PCB.electAnyLeader / tryElection): a record that changes the leader to ``x ≥ 0``
  takes ``x`` from the previous ISR, unless ``x`` was in the previous ELR, was the last known leader of a
  partition with empty ISR and ELR (balanced recovery), the record completes a reassignment (the leader's
  AlterPartition adds the target to the ISR and the same record elects from it, RCM.alterPartition), or
  unclean election is permitted for the topic at any time in the run (config, ``set_config``,
  ``elect_unclean``; lenient: ordering of actions and log records is not needed).
* L6 (§9.3/§9.4, RCM ``LeaderAcceptor`` = ``ClusterControlManager.isActive``): a leader newly set, and
  the leader of a new partition, is registered, unfenced and not in controlled shutdown at that offset
  (handleBrokerUnfenced writes the unfencing before the elections it enables; handleBrokerFenced moves
  leadership before the fencing). Not judged: a last-known-leader election (PCB.canElectLastKnownLeader
  accepts a leader that is not acceptable).
* L7 (§9.3, RCM.ineligibleReplicasForIsr, KIP-841/903; creation filters the ISR with ``isActive``): a
  broker added to an ISR (or in the ISR of a new partition) is registered, unfenced and not in controlled
  shutdown at that offset. The elected leader of an ELR / unclean election is L6's, a cancel refilling an
  empty ISR is allowed only with unclean election permitted (RCM cancel), a last known leader is not judged.
* L10 (``kraft-*`` only, §9.2, PCB.triggerLeaderEpochBump*): a PartitionChangeRecord re-sets the same
  leader (LE + 1 without a leader change) exactly when the replicas lose a member or -- with
  ``metadata.version`` < 3.6-IV0 (feature level 12, ``isLeaderEpochBumpRequiredOnIsrShrink``) -- the ISR
  shrinks. The decision is the controller's, not the replay's: the record either sets ``Leader`` or not.

* L11 (``kraft-*`` only, ELR enabled by ``eligible.leader.replicas.version`` ≥ 1 in the log, §9.5, KIP-966,
  PCB.maybePopulateTargetElr / maybeUpdateRecordElr): the ELR a PartitionChangeRecord leaves follows the
  controller's rule, with ``m`` = min(the topic's effective ``min.insync.replicas``, replication factor)
  (RCM.getTopicEffectiveMinIsr; the value from the log's ConfigRecords, topic before cluster default, else
  the run's static broker configuration, else 1): an ISR of at least ``m`` members clears the ELR; an ISR
  below ``m`` keeps every previous ISR / ELR member outside the new ISR in the ELR and adds nobody else
  -- except a broker that registered a new incarnation since the partition's previous record or in this
  record's batch (ClusterControlManager.registerBroker writes RCM.handleBrokerUncleanShutdown's cleanup
  before the RegisterBrokerRecord, in one atomic batch). An unclean election
  clears the ELR. Not judged: partitions under reassignment (the replication factor moves), topics with a
  per-broker ``min.insync.replicas`` override (the controller reads its own node's), last known ELR.

Offset gaps (records missing from the log read: metadata ``observer.offset_gaps``; the replay then merges
later delta records into the state from before the gap): every field of every known partition is stale
until a record sets it again, every broker until it registers again. Single-state rules (L1-L4) keep judging
the fields that are known; transition rules (L5-L7, L10, L11, L13) are not judged on a partition until it is
fully known again (a PartitionRecord, or records re-setting every field), L6/L7 not on a stale broker, L11
not after the first gap (a min ISR ConfigRecord may have been missed). Counted in the stats, never reported.

L8 (fencing within the session timeout), L9 (protocol samples against the log) and L12 (no superseded state
served past a bound while no fault is active): reference/kraft_log_cross.py.
Not kept as rules, because the replay makes them hold by construction: leader epoch never decreasing and
partition epoch + 1 per record (harness/observer/kraft_events.py computes both from the records);
"ELR ⊆ replicas" (a reassignment completing below min ISR may leave a removed replica in the ELR, PCB).
"""

from __future__ import annotations

from reference.actions import UNCLEAN_KEY, record_unclean_permission
from reference.kraft_config_rules import MIN_ISR, MinIsrConfigRules
from reference.kraft_log_cross import cross_check, fencing_deadlines, served_staleness
from reference.kraft_rules import KRAFT_RULES, KraftDivergence
from reference.kraft_voters import judge_voters
from reference.profiles import Profile
from reference.result import ConformanceResult

MV_NO_BUMP_ON_SHRINK = 12       # MetadataVersion IBP_3_6_IV0 feature level (KAFKA-15021)
ELR_FEATURE = "eligible.leader.replicas.version"
META_TYPES = ("meta.partition", "meta.broker", "meta.feature", "meta.config", "meta.topic",
              "meta.topic_removed", "meta.leader_change", "meta.voters", "meta.kraft_version", "meta.clear_elr")
_STATE_FIELDS = ("leader", "isr", "replicas", "adding", "removing", "elr", "last_known_elr")


class _Unclean:
    """Unclean-election permissions granted at any time in the run (``record_unclean_permission``'s judge)."""

    def __init__(self, metadata: dict):
        cfg = metadata.get("broker_config") or {}
        self.unclean_default = str(cfg.get(UNCLEAN_KEY, "false")).lower() == "true"
        self.unclean_topic: dict[str, bool] = {}
        self.unclean_grants: set = set()
        self.any_default = self.unclean_default
        self.topics: set[str] = set()
        for t in metadata.get("topics") or []:
            c = (t or {}).get("config") or {}
            if str(c.get(UNCLEAN_KEY, "false")).lower() == "true":
                self.topics.add(t["name"])

    def action(self, ev: dict) -> None:
        if ev.get("ok") is False:
            return
        record_unclean_permission(self, ev.get("action"), ev.get("params") or {})
        self.any_default |= self.unclean_default
        self.topics.update(t for t, v in self.unclean_topic.items() if v)

    def permitted(self, topic, partition) -> bool:
        return (self.any_default or topic in self.topics or (topic, partition) in self.unclean_grants
                or (topic, None) in self.unclean_grants)


class _MinIsr:
    """The effective ``min.insync.replicas`` of a topic as the KRaft controller resolves it
    (ConfigurationControlManager.getTopicConfig: topic, the controller's node, cluster default, static),
    from the log's ConfigRecords (``meta.config``) and the run's static broker configuration."""

    def __init__(self, metadata: dict):
        v = (metadata.get("broker_config") or {}).get(MIN_ISR)
        self.static = _int(v) if v is not None else 1        # Kafka's default (ServerLogConfigs)
        self.cluster: int | None = None
        self.topic: dict[str, int] = {}
        self.node_override = False                            # a per-broker value: which node decides is unknown

    def config(self, ev: dict) -> None:
        if ev.get("name") != MIN_ISR:
            return
        kind, name, v = ev.get("resource_type"), ev.get("resource_name"), ev.get("value")
        v = None if v is None else _int(v)
        if kind == "topic":
            if v is None:
                self.topic.pop(name, None)
            else:
                self.topic[name] = v
        elif kind == "broker" and name == "":
            self.cluster = v
        elif kind == "broker":
            self.node_override = True

    def effective(self, topic: str | None, rf: int) -> int | None:
        if self.node_override or topic is None or rf <= 0:
            return None
        v = self.topic.get(topic, self.cluster if self.cluster is not None else self.static)
        return None if v is None else min(v, rf)


def _int(v) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _active(b: dict | None) -> bool:
    return bool(b) and b.get("registered") is True and b.get("fenced") is False and not b.get("in_controlled_shutdown")


def _bstate(b: dict | None) -> str:
    if not b:
        return "never registered"
    if not b.get("registered"):
        return "unregistered"
    return "fenced" if b.get("fenced") else "in controlled shutdown" if b.get("in_controlled_shutdown") else "active"


class LogChecker:
    """One pass over the ``meta.*`` events in log order; findings go to ``report(rule, ev, subject, msg, ...)``."""

    def __init__(self, profile: Profile, metadata: dict, report):
        self.p = profile
        self.report = report
        self.unclean = _Unclean(metadata)
        self.brokers: dict[int, dict] = {}
        self.parts: dict[tuple, dict] = {}       # (topic_id, partition) -> last meta.partition
        self.mv: int | None = None
        self.elr_on = not profile.determinism    # compatible: another design may use ELR
        self.elr_feature = False                 # eligible.leader.replicas.version >= 1 logged (L11)
        self.min_isr = _MinIsr(metadata)
        self.registrations: dict[int, list[tuple]] = {}   # broker -> (offset, time_ms) of RegisterBrokerRecords
        obs = metadata.get("observer") if isinstance(metadata.get("observer"), dict) else {}
        self.gaps = sorted((int(g[0]), int(g[1])) for g in obs.get("offset_gaps") or []
                           if isinstance(g, (list, tuple)) and len(g) == 2)   # (last offset before, first after)
        self.stale: dict[tuple, set] = {}        # partition -> its fields a gap may have changed unseen
        self.stale_brokers: set[int] = set()     # brokers whose registration a gap may have changed unseen
        self.after_gap = False
        self.stats = {"records": 0, "partition_records": 0, "leader_changes": 0, "elections_judged": 0,
                      "elections_unclean_permitted": 0, "elections_elr": 0, "elections_last_known_leader": 0,
                      "elections_reassignment": 0, "isr_additions": 0, "broker_records": 0, "elr_records_judged": 0}
        self.config_rules = MinIsrConfigRules(profile, report, self.stats)   # L14-L16 (reference/kraft_config_rules.py)

    def run(self, events: list[dict], actions: list[dict]) -> None:
        for a in actions:
            self.unclean.action(a)
        for ev in events:          # looked ahead by L11: a new incarnation's cleanup precedes its registration
            if ev["type"] == "meta.broker" and ev.get("record") == "RegisterBrokerRecord":
                self.registrations.setdefault(int(ev["broker_id"]), []).append((ev.get("offset", -1), ev.get("time_ms")))
        self.config_rules.prepare(events)
        gaps = list(self.gaps)
        for ev in events:
            self.stats["records"] += 1
            while gaps and isinstance(ev.get("offset"), int) and ev["offset"] >= gaps[0][1]:
                self._offset_gap(gaps.pop(0))
            t = ev["type"]
            if t == "meta.partition":
                self._partition(ev)
            elif t == "meta.broker":
                self.stats["broker_records"] += 1
                self.brokers[int(ev["broker_id"])] = ev
                if ev.get("record") == "RegisterBrokerRecord":
                    self.stale_brokers.discard(int(ev["broker_id"]))   # a full registration: known again
            elif t == "meta.config":
                self.min_isr.config(ev)
                self.config_rules.config(ev, self.elr_feature)       # L14, L15
            elif t == "meta.feature":
                if ev.get("name") == "metadata.version":
                    self.mv = int(ev["level"])
                elif ev.get("name") == ELR_FEATURE:
                    if int(ev.get("level") or 0) >= 1 and not self.elr_feature:
                        self.config_rules.elr_enabled(ev, self.after_gap)   # L16
                    self.elr_feature = int(ev.get("level") or 0) >= 1
                    self.elr_on |= self.elr_feature

    def _offset_gap(self, gap: tuple) -> None:
        """Records ``gap[0] + 1 .. gap[1] - 1`` are missing from the log read (the observer's
        ``offset_gaps``): any partition or broker record may be among them. The replay merged every later
        delta record into the state from before the gap, so each field of every known partition is stale
        until a record sets it again, and every broker until it registers again. Rules whose inputs are all
        known keep being judged (single-state rules on re-set fields; transition rules once a partition is
        fully known again); the rest are counted as not judged, never reported."""
        self.stats["offset_gaps"] = self.stats.get("offset_gaps", 0) + 1
        self.after_gap = True
        for key in self.parts:
            self.stale[key] = set(_STATE_FIELDS)
        self.stale_brokers |= set(self.brokers)

    def _old_mv(self) -> bool:
        if self.mv is not None:
            return self.mv < MV_NO_BUMP_ON_SHRINK
        return self.p.version < (3, 6)

    def _partition(self, ev: dict) -> None:
        self.stats["partition_records"] += 1
        key = (ev.get("topic_id"), ev.get("partition"))
        prev = self.parts.get(key) if ev.get("record") in ("PartitionChangeRecord", "ClearElrRecord") else None
        self.parts[key] = ev
        stale = self.stale.get(key)
        if stale is not None:                      # after an offset gap: judge only what is known
            self._partition_after_gap(ev, key, stale, prev)
            return
        if ev.get("record") == "ClearElrRecord":      # the replay of a ClearElrRecord: ELR / last known ELR emptied
            self.stats["elr_cleared"] = self.stats.get("elr_cleared", 0) + 1
            return
        if ev.get("elr") or ev.get("last_known_elr"):
            self.elr_on = True
        topic, part = ev.get("topic"), ev.get("partition")
        leader, isr, rs = ev["leader"], list(ev.get("isr") or []), list(ev.get("replicas") or [])
        ar, rr, elr = list(ev.get("adding") or []), list(ev.get("removing") or []), list(ev.get("elr") or [])
        s = f"state after offset {ev.get('offset')} ({ev.get('record')}): leader {leader}, ISR {isr}, replicas {rs}"
        if leader >= 0 and leader not in isr:
            self.report("L1", ev, f"leader {leader} is not in the ISR {isr}; {s}", prev)
        if leader >= 0 and leader not in rs:
            self.report("L1", ev, f"leader {leader} is not a replica {rs}; {s}", prev)
        if not set(isr) <= set(rs):
            self.report("L2", ev, f"ISR members {sorted(set(isr) - set(rs))} are not replicas; {s}", prev)
        if not isr and not self.elr_on:
            self.report("L2", ev, f"empty ISR without ELR enabled (the controller keeps the last member, PCB); {s}",
                        prev)
        if not set(ar) <= set(rs) or not set(rr) <= set(rs) or set(ar) & set(rr):
            self.report("L3", ev, f"invalid reassignment state adding {ar}, removing {rr}; {s}", prev)
        if set(elr) & set(isr):
            self.report("L4", ev, f"ELR {elr} overlaps the ISR {isr}; {s}", prev)
        how = self._election(ev, prev, topic, part, leader, isr, s)
        self._isr_additions(ev, prev, topic, part, leader, isr, how, s)
        if prev is not None and self.p.determinism:
            self._epoch_bump(ev, prev, leader, isr, rs, s)
            if self.elr_feature:
                self._elr(ev, prev, topic, isr, elr, how, s)

    def _partition_after_gap(self, ev: dict, key: tuple, stale: set, prev: dict | None) -> None:
        """A partition record while some of its fields are stale (see :meth:`_offset_gap`): the single-state
        rules whose fields are all known are judged; the transition rules (L5-L7, L10, L11, L13) are not,
        since the previous state is not known. The record's own fields are known from here on."""
        if ev.get("record") == "PartitionRecord":
            stale.clear()
        else:
            stale.difference_update(ev.get("changed") or ())
        leader, isr, rs = ev["leader"], list(ev.get("isr") or []), list(ev.get("replicas") or [])
        ar, rr, elr = list(ev.get("adding") or []), list(ev.get("removing") or []), list(ev.get("elr") or [])
        s = f"state after offset {ev.get('offset')} ({ev.get('record')}): leader {leader}, ISR {isr}, replicas {rs}"
        known = lambda *f: not stale.intersection(f)       # noqa: E731
        if known("leader", "isr") and leader >= 0 and leader not in isr:
            self.report("L1", ev, f"leader {leader} is not in the ISR {isr}; {s}", None)
        if known("leader", "replicas") and leader >= 0 and leader not in rs:
            self.report("L1", ev, f"leader {leader} is not a replica {rs}; {s}", None)
        if known("isr", "replicas") and not set(isr) <= set(rs):
            self.report("L2", ev, f"ISR members {sorted(set(isr) - set(rs))} are not replicas; {s}", None)
        if known("adding", "removing", "replicas") and (not set(ar) <= set(rs) or not set(rr) <= set(rs)
                                                        or set(ar) & set(rr)):
            self.report("L3", ev, f"invalid reassignment state adding {ar}, removing {rr}; {s}", None)
        if known("elr", "isr") and set(elr) & set(isr):
            self.report("L4", ev, f"ELR {elr} overlaps the ISR {isr}; {s}", None)
        self.stats["records_after_gap_transition_not_judged"] = \
            self.stats.get("records_after_gap_transition_not_judged", 0) + 1
        if not stale:
            del self.stale[key]                    # fully known again: the next record is judged in full

    def _election(self, ev, prev, topic, part, x, isr, s) -> str | None:
        """L5 and L6 on a leader newly set to ``x`` (or the leader of a new partition)."""
        if x < 0 or (prev is not None and prev["leader"] == x):
            return None
        how = "created"
        if prev is not None:
            self.stats["leader_changes"] += 1
            pisr, pelr, plke = prev.get("isr") or [], prev.get("elr") or [], prev.get("last_known_elr") or []
            completes = (prev.get("adding") or prev.get("removing")) and not (ev.get("adding") or ev.get("removing"))
            if x in pisr:
                how = "clean"
                self.stats["elections_judged"] += 1
            elif x in pelr:
                how = "elr"
                self.stats["elections_elr"] += 1
                if list(isr) != [x] or x in (ev.get("elr") or []):
                    self.report("L13", ev, f"broker {x} elected from the ELR {list(pelr)} at offset "
                                f"{ev.get('offset')} but the record leaves ISR {list(isr)} / ELR "
                                f"{list(ev.get('elr') or [])}: an ELR member is elected only when the target ISR "
                                f"is empty, and the ISR becomes [{x}] (PCB.isValidNewLeader, tryElection); {s}",
                                prev, [f"isr=[{x}]"])
            elif not pisr and not pelr and list(plke) == [x]:
                self.stats["elections_last_known_leader"] += 1
                return "last_known_leader"          # not judged by L6/L7 (PCB.canElectLastKnownLeader)
            elif completes and x in isr:
                how = "reassignment"
                self.stats["elections_reassignment"] += 1
            elif self.unclean.permitted(topic, part):
                how = "unclean"
                self.stats["elections_unclean_permitted"] += 1
            else:
                how = "outside"
                self.report("L5", ev, f"broker {x} elected leader at offset {ev.get('offset')} but was not in the "
                            f"previous ISR {list(pisr)} (ELR {list(pelr)}, last known ELR {list(plke)}) and unclean "
                            f"leader election is not permitted; {s}", prev,
                            [f"leader ∈ {sorted(pisr)} or -1"])
        b = self.brokers.get(x)
        if x in self.stale_brokers:
            self.stats["broker_state_not_judged_after_gap"] = self.stats.get("broker_state_not_judged_after_gap", 0) + 1
        elif not _active(b):
            self.report("L6", ev, f"broker {x} became leader at offset {ev.get('offset')} while {_bstate(b)} in the "
                        f"log (a leader must be registered, unfenced and not shutting down: RCM LeaderAcceptor); {s}",
                        prev, key=(x, ev.get("leader_epoch")))
        return how

    def _isr_additions(self, ev, prev, topic, part, leader, isr, how, s) -> None:
        """L7: brokers added to an ISR (or in a new partition's ISR) are active at that offset."""
        if how == "last_known_leader":
            return
        pisr = set(prev.get("isr") or []) if prev is not None else set()
        added = [r for r in isr if r not in pisr and not (r == leader and how in ("elr", "unclean", "outside"))]
        if not added:
            return
        if prev is not None and not pisr and self.unclean.permitted(topic, part):
            return                                   # cancel refilling an empty ISR (allowed with unclean only)
        self.stats["isr_additions"] += len(added)
        for r in added:
            b = self.brokers.get(r)
            if r in self.stale_brokers:
                continue                             # its registration may have changed in an offset gap
            if not _active(b):
                self.report("L7", ev, f"broker {r} added to the ISR at offset {ev.get('offset')} while {_bstate(b)} "
                            f"in the log (RCM rejects ineligible ISR members, KIP-841/903); {s}", prev,
                            key=(r, ev.get("offset")))

    def _elr(self, ev, prev, topic, isr, elr, how, s) -> None:
        """L11: the ELR a record leaves, by PCB.maybePopulateTargetElr (see the module docstring)."""
        if how == "outside" or prev.get("adding") or prev.get("removing") or ev.get("adding") or ev.get("removing"):
            return                                   # L5 reported it / the replication factor moves
        if how == "unclean":
            if elr:
                self.report("L11", ev, f"ELR {elr} kept by an unclean election (PCB.maybeUpdateRecordElr clears "
                            f"it); {s}", prev, ["elr=[]"])
            return
        m = self.min_isr.effective(topic, len(prev.get("replicas") or []))
        if m is None or self.after_gap:              # a ConfigRecord may have been missed in an offset gap
            return
        self.stats["elr_records_judged"] += 1
        if len(isr) >= m:
            if elr:
                self.report("L11", ev, f"ELR {elr} kept although the ISR {isr} has at least min ISR {m} members "
                            f"(PCB.maybePopulateTargetElr clears it); {s}", prev, ["elr=[]"])
            return
        pool = set(prev.get("elr") or []) | set(prev.get("isr") or [])
        want = pool - set(isr)
        excused = {b for b in want if self._new_incarnation(b, prev, ev)}
        stray, missing = sorted(set(elr) - want), sorted(want - set(elr) - excused)
        if stray or missing:
            what = "; ".join(x for x in (f"not eligible: {stray}" if stray else "",
                                         f"missing: {missing}" if missing else "") if x)
            self.report("L11", ev, f"ISR {isr} below min ISR {m} and ELR {elr} is not the previous ISR / ELR "
                        f"members outside the ISR ({sorted(want)}; {what}; PCB.maybePopulateTargetElr); {s}",
                        prev, [f"elr={sorted(want)}"])

    def _new_incarnation(self, b: int, prev: dict, ev: dict) -> bool:
        """``b`` registered a new incarnation between the partition's previous record and this one, or in
        this record's batch: ClusterControlManager.registerBroker puts the unclean-shutdown cleanup
        (RCM.handleBrokerUncleanShutdown, removing ``b`` from every ELR) before the RegisterBrokerRecord in
        one atomic batch, whose records share the batch's append time."""
        lo, off, tm = prev.get("offset", -1), ev.get("offset", -1), ev.get("time_ms")
        return any(lo < o <= off or (o > off and tm is not None and t == tm) for o, t in self.registrations.get(b, ()))

    def _epoch_bump(self, ev, prev, leader, isr, rs, s) -> None:
        """L10: a leader re-set to itself (LE + 1) iff a replica was removed or, MV < 3.6, the ISR shrank."""
        changed = ev.get("changed") or []
        if "leader" in changed and leader != prev["leader"]:
            return
        rs_lost = not set(prev.get("replicas") or []) <= set(rs)
        shrunk = "isr" in changed and not set(prev.get("isr") or []) <= set(isr)
        needed = rs_lost or (shrunk and self._old_mv())
        mv = f"metadata.version level {self.mv}" if self.mv is not None else f"MV of {self.p.name}"
        if "leader" in changed and not needed:
            self.report("L10", ev, f"leader {leader} re-set (leader epoch {prev['leader_epoch']} -> "
                        f"{ev['leader_epoch']}) with no replica removed and "
                        f"{'no ISR shrink' if self._old_mv() else 'at most an ISR change'} ({mv}); {s}", prev,
                        [f"leader_epoch={prev['leader_epoch']}"])
        elif "leader" not in changed and needed:
            why = "replicas lost a member" if rs_lost else f"the ISR shrank and {mv} < 3.6-IV0 (KAFKA-15021)"
            self.report("L10", ev, f"no leader epoch bump although {why}; {s}", prev,
                        [f"leader_epoch={prev['leader_epoch'] + 1}"])


def judge_metadata_log(res: ConformanceResult, events: list[dict], metadata: dict, profile: Profile,
                       session_s: float, grace_s: float) -> ConformanceResult:
    """Add the metadata-log rules to ``res`` (the sample checker's result). A record without ``meta.*``
    events is returned unchanged."""
    meta = [e for e in events if e.get("type") in META_TYPES]
    if not meta:
        return res
    meta.sort(key=lambda e: e.get("seq", 0))
    viols, divs, seen = [], [], set()
    t0 = next((e["wall"] - e["t"] for e in meta if isinstance(e.get("wall"), (int, float))
               and isinstance(e.get("t"), (int, float))), None)

    def report(rule, ev, msg, before=None, allowed=(), key=None):
        subject = f"{ev.get('topic')}-{ev.get('partition')}" if "partition" in ev else \
            f"broker {ev.get('broker_id')}" if "broker_id" in ev else str(ev.get("subject", "cluster"))
        k = (rule, subject, key if key is not None else msg)
        if k in seen:
            return
        seen.add(k)
        tm = ev.get("time_ms")
        t = (tm / 1000.0 - t0) if (t0 is not None and isinstance(tm, (int, float))) else ev.get("t")
        after = {f: ev.get(f) for f in ("offset", "time_ms", "leader", "leader_epoch", "partition_epoch", "isr",
                                        "replicas", "adding", "removing", "elr", "last_known_elr", "changed",
                                        "answered_by", "broker_id") if f in ev}
        bef = None if before is None else {f: before.get(f) for f in ("offset", "leader", "leader_epoch", "isr",
                                                                     "replicas", "elr", "last_known_elr")}
        d = KraftDivergence(rule=rule, subject=subject, explanation=msg, seq=ev.get("seq"), zxid=None,
                            before=bef, after=after, allowed=list(allowed), t=t)
        (viols if KRAFT_RULES[rule][1] == "invariant" else divs).append(d)

    lc = LogChecker(profile, metadata, report)
    lc.run(meta, [e for e in events if e.get("type") == "action"])
    stats = dict(lc.stats)
    stats.update(cross_check(events, meta, metadata, report))
    stats["quorum"] = judge_voters(events, meta, report)      # the dynamic quorum, KIP-853
    if profile.determinism:
        stats.update(fencing_deadlines(events, meta, session_s, grace_s, report))
        stats.update(served_staleness(events, meta, session_s, grace_s, report))
    res.invariant_violations.extend(viols)
    res.divergences.extend(divs)
    res.stats["metadata_log"] = stats
    res.stats["divergences"] = len(res.divergences)
    res.stats["invariant_violations"] = len(res.invariant_violations)
    res.stats["observation"] += "; the controller's metadata log (every committed record)"
    res.verdict = "FAIL" if (res.divergences or res.invariant_violations) else "PASS"
    return res
