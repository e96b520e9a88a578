"""Rules over the metadata log's ``min.insync.replicas`` ConfigRecords while ELR is enabled (4.1+, KIP-966).

Read in the 4.4.0 bytecode (``kafka-metadata-4.4.0.jar``, ``javap -c -p``) of
``metadata/src/main/java/org/apache/kafka/controller/ConfigurationControlManager.java`` (CCM); the same
methods are in 4.1.2's jar and absent from 3.9.2's (4.0 not read: not judged there). Each rule applies only
when ``eligible.leader.replicas.version`` >= 1 is finalized at the record's offset
(FeatureControlManager.isElrFeatureEnabled) and never to the bootstrap batch (the one setting
``metadata.version``: ``kafka-storage format`` writes its records, not CCM).

* L14: a ConfigRecord of ``min.insync.replicas`` is followed in its own atomic batch by a ClearElrRecord
  naming its topic (a topic resource) or ``""`` (a broker or cluster resource). CCM.createClearElrRecordsAsNeeded
  appends one to the records of incrementalAlterConfig(s) / legacyAlterConfigs -- topic creation's configs
  included (ReplicationControlManager.createTopics calls incrementalAlterConfig). The records of one batch
  share the raft epoch and the batch's append time (raft BatchBuilder.writeRecord writes timestamp delta 0),
  so the ClearElrRecord must sit at a later offset with the same epoch and time.
* L15: no ConfigRecord the controller refuses while ELR is enabled. CCM.validateAlterConfig returns
  INVALID_CONFIG, writing nothing, for each record it would write (explicitly altered or implicitly deleted)
  that is
  - ``isDisallowedBrokerMinIsrTransition``: ``min.insync.replicas`` of a BROKER resource with a non-empty
    name (one broker's value, set or deleted): "Broker-level min.insync.replicas cannot be altered while ELR
    is enabled.";
  - ``isDisallowedClusterMinIsrTransition``: ``min.insync.replicas`` of the BROKER resource ``""`` (the
    cluster-wide value) with a null value (a deletion): "Cluster-level min.insync.replicas cannot be removed
    while ELR is enabled."
* L16: the batch that enables ELR leaves no broker-level ``min.insync.replicas`` and a cluster-wide one.
  CCM.updateFeatures, when a feature update asking ``eligible.leader.replicas.version`` > 0 succeeds, puts
  CCM.maybeGenerateElrSafetyRecords's records before the FeatureLevelRecords in one atomic batch: a
  cluster-wide ``min.insync.replicas`` ConfigRecord (the controller's static value) when the cluster has
  none, and a deletion of every broker-level ``min.insync.replicas``. So at the FeatureLevelRecord raising
  ELR from 0, the configs the log has set so far hold no broker-level value and a cluster-wide one. Not
  judged after an offset gap in the log read (a config record may have been missed).
"""

from __future__ import annotations

from reference.profiles import Profile

MIN_ISR = "min.insync.replicas"
FROM_VERSION = (4, 1)


class MinIsrConfigRules:
    """L14 and L15 over the log's ``meta.config`` events; findings go to ``report(rule, ev, msg, allowed=...)``,
    counts to ``stats`` (``min_isr_configs_judged``)."""

    def __init__(self, profile: Profile, report, stats: dict):
        self.p = profile
        self.report = report
        self.stats = stats
        self.clears: dict[tuple, list[tuple]] = {}   # (raft epoch, batch append time) -> [(offset, topic)]
        self.bootstrap: set[tuple] = set()           # batches setting metadata.version
        self.broker_values: dict[str, str] = {}      # broker id -> its min.insync.replicas, as the log set it (L16)
        self.cluster_value: str | None = None        # the cluster-wide min.insync.replicas, as the log set it (L16)

    def prepare(self, events: list[dict]) -> None:
        """Index the ClearElrRecords and the bootstrap batch (a look-ahead: a ClearElrRecord follows its config)."""
        for ev in events:
            if ev["type"] == "meta.feature" and ev.get("name") == "metadata.version":
                self.bootstrap.add((ev.get("raft_epoch"), ev.get("time_ms")))
            if ev["type"] == "meta.clear_elr":
                self.clears.setdefault((ev.get("raft_epoch"), ev.get("time_ms")), []).append(
                    (ev.get("offset", -1), ev.get("topic") or ""))

    def _judged(self) -> bool:
        return bool(self.p.determinism) and tuple(self.p.version) >= FROM_VERSION

    def config(self, ev: dict, elr_enabled: bool) -> None:
        """Judge one ``meta.config`` event, ``elr_enabled`` being the ELR feature at its offset."""
        if ev.get("name") == MIN_ISR and ev.get("resource_type") == "broker":
            name, value = ev.get("resource_name") or "", ev.get("value")
            if not name:
                self.cluster_value = value
            elif value is None:
                self.broker_values.pop(name, None)
            else:
                self.broker_values[name] = value
        if ev.get("name") != MIN_ISR or not elr_enabled or not self._judged():
            return
        if (ev.get("raft_epoch"), ev.get("time_ms")) in self.bootstrap:
            return          # the bootstrap records (kafka-storage format, written on activation) are not CCM's
        self.stats["min_isr_configs_judged"] = self.stats.get("min_isr_configs_judged", 0) + 1
        self._refused(ev)
        self._clear_elr_follows(ev)

    def _subject(self, ev: dict) -> dict:
        return {**ev, "subject": f"config {ev.get('resource_type')} {ev.get('resource_name')!r}"}

    def _refused(self, ev: dict) -> None:
        if ev.get("resource_type") != "broker":
            return
        name, value, off = ev.get("resource_name") or "", ev.get("value"), ev.get("offset", -1)
        if name:
            what = f"set to {value!r}" if value is not None else "deleted"
            self.report("L15", self._subject(ev),
                        f"min.insync.replicas of broker {name} {what} at offset {off} while ELR is enabled: the "
                        "controller refuses a broker-level min.insync.replicas with INVALID_CONFIG "
                        "(ConfigurationControlManager.isDisallowedBrokerMinIsrTransition)",
                        allowed=["no broker-level min.insync.replicas record while ELR is enabled"])
        elif value is None:
            self.report("L15", self._subject(ev),
                        f"the cluster-wide min.insync.replicas deleted at offset {off} while ELR is enabled: the "
                        "controller refuses that removal with INVALID_CONFIG "
                        "(ConfigurationControlManager.isDisallowedClusterMinIsrTransition)",
                        allowed=["the cluster-wide min.insync.replicas set, never removed, while ELR is enabled"])

    def _clear_elr_follows(self, ev: dict) -> None:
        want = (ev.get("resource_name") or "") if ev.get("resource_type") == "topic" else ""
        off = ev.get("offset", -1)
        if any(o > off and name == want for o, name in self.clears.get((ev.get("raft_epoch"), ev.get("time_ms")), ())):
            return
        where = f"topic {want}" if want else "every topic"
        self.report("L14", self._subject(ev),
                    f"min.insync.replicas set to {ev.get('value')!r} for {ev.get('resource_type')} "
                    f"{ev.get('resource_name')!r} at offset {off} with ELR enabled, but no ClearElrRecord for {where} "
                    f"follows in its batch (ConfigurationControlManager.createClearElrRecordsAsNeeded)",
                    allowed=[f"ClearElrRecord({want!r}) in the same batch"])

    def elr_enabled(self, ev: dict, after_gap: bool) -> None:
        """L16 at the FeatureLevelRecord ``ev`` that raises ``eligible.leader.replicas.version`` from 0."""
        if not self._judged() or after_gap or (ev.get("raft_epoch"), ev.get("time_ms")) in self.bootstrap:
            return
        self.stats["elr_enablings_judged"] = self.stats.get("elr_enablings_judged", 0) + 1
        off = ev.get("offset", -1)
        subject = {**ev, "subject": "feature eligible.leader.replicas.version"}
        if self.broker_values:
            left = ", ".join(f"broker {b}: {v}" for b, v in sorted(self.broker_values.items()))
            self.report("L16", subject,
                        f"ELR enabled at offset {off} while broker-level min.insync.replicas remain ({left}): the "
                        "enabling batch deletes each (ConfigurationControlManager.maybeGenerateElrSafetyRecords)",
                        allowed=["a deletion of every broker-level min.insync.replicas before the FeatureLevelRecord"])
        if self.cluster_value is None:
            self.report("L16", subject,
                        f"ELR enabled at offset {off} with no cluster-wide min.insync.replicas in the log: the "
                        "enabling batch sets one when there is none "
                        "(ConfigurationControlManager.maybeGenerateElrSafetyRecords)",
                        allowed=["a cluster-wide min.insync.replicas ConfigRecord at or before the enabling batch"])
