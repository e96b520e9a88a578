"""Replay the KRaft metadata log (:mod:`harness.observer.kraft_metadata`) into run-record ``meta.*`` events.

Every event has ``offset`` (the metadata log offset: the total order of the controller's decisions),
``time_ms`` (the append time of the record's batch), ``raft_epoch`` (the batch's partitionLeaderEpoch:
the Raft epoch of the controller that wrote it) and ``source: "metadata_log"``.

A ``meta.partition`` carries the partition's FULL state after the record, replayed the way
``PartitionRegistration.merge`` does it (Kafka's metadata module): a PartitionChangeRecord field that is
absent (null; ``leader`` -2; ``leaderRecoveryState`` -1) keeps the old value; a set ``leader`` — even
the same broker — raises the leader epoch by one; every PartitionChangeRecord raises the partition
epoch by one. A PartitionRecord sets everything, epochs included.

Metadata transactions (BeginTransactionRecord .. EndTransactionRecord, e.g. Kafka 4's "Bootstrap
records") are applied at their end; an AbortTransactionRecord discards them, as
``MetadataBatchLoader`` does. Events of a transaction keep their own offsets.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from harness.observer.gc_pause import gc_paused
from harness.observer.kraft_metadata import MetadataLog, MetaRecord

SOURCE = "metadata_log"
NO_LEADER_CHANGE = -2
# PartitionChangeRecord field -> event field (the names ``changed`` lists)
_CHANGE_FIELDS = {"leader": "leader", "isr": "isr", "replicas": "replicas", "adding_replicas": "adding",
                  "removing_replicas": "removing", "leader_recovery_state": "leader_recovery_state",
                  "eligible_leader_replicas": "elr", "last_known_elr": "last_known_elr",
                  "directories": "directories"}
_CHANGE_RANK = {k: i for i, k in enumerate(_CHANGE_FIELDS)}
_CHANGE_ORDER: dict[tuple, tuple] = {}      # a PartitionChangeRecord's field names -> its changes, in order


def _change_order(names: tuple) -> tuple:
    """The ``(field, event name)`` pairs among ``names``, in ``_CHANGE_FIELDS`` order."""
    out = tuple((k, _CHANGE_FIELDS[k]) for k in sorted((k for k in names if k in _CHANGE_RANK),
                                                        key=_CHANGE_RANK.__getitem__))
    if len(_CHANGE_ORDER) < 4096:
        _CHANGE_ORDER[names] = out
    return out
CONFIG_RESOURCE = {2: "topic", 4: "broker", 8: "broker_logger", 16: "client_metrics", 32: "group"}
_REPLAYED = {"TopicRecord", "PartitionRecord", "PartitionChangeRecord", "RemoveTopicRecord",
             "RegisterBrokerRecord", "UnregisterBrokerRecord", "FenceBrokerRecord", "UnfenceBrokerRecord",
             "BrokerRegistrationChangeRecord", "FeatureLevelRecord", "ConfigRecord", "LeaderChangeMessage",
             "BeginTransactionRecord", "EndTransactionRecord", "AbortTransactionRecord", "ClearElrRecord",
             "VotersRecord", "KRaftVersionRecord"}


@dataclass
class KraftHistory:
    """The meta.* history found in one node's metadata log, and what is known about its completeness."""
    events: list[dict]
    first_offset: int | None
    last_offset: int | None
    starts_at_beginning: bool               # False: the log's prefix was replaced by a snapshot
    offset_gaps: list[tuple[int, int]]
    torn_tails: list[str]                   # partially written last batches that were dropped
    undecoded: list[str]                    # replayed record types that did not decode (history inexact)
    problems: list[str] = field(default_factory=list)
    record_counts: dict[str, int] = field(default_factory=dict)
    node: str | None = None                 # whose log it is (set by kraft_history)
    segments: dict[str, bytes] = field(default_factory=dict, repr=False)   # its segment files (kraft_history)

    @property
    def complete(self) -> bool:
        return self.starts_at_beginning and not self.offset_gaps and not self.undecoded

    def summary(self) -> dict:
        """JSON-able counts and completeness, for the run's metadata."""
        by_type: dict[str, int] = {}
        for ev in self.events:
            by_type[ev["type"]] = by_type.get(ev["type"], 0) + 1
        return {"source": SOURCE, "node": self.node, "complete": self.complete,
                "first_offset": self.first_offset, "last_offset": self.last_offset,
                "starts_at_beginning": self.starts_at_beginning,
                "offset_gaps": [list(g) for g in self.offset_gaps], "events": len(self.events),
                "events_by_type": by_type, "records_by_type": dict(self.record_counts),
                "torn_tails": list(self.torn_tails), "undecoded": list(self.undecoded),
                "problems": list(self.problems)}


def _ints(v) -> list[int]:
    return list(v) if v is not None else []


class KraftEventBuilder:
    """Stateful replay; feed records in offset order with :meth:`feed`."""

    def __init__(self) -> None:
        self.topics: dict[str, str] = {}                    # topic id -> name
        self.partitions: dict[tuple[str, int], dict] = {}   # (topic id, partition) -> state
        self.brokers: dict[int, dict] = {}
        self.events: list[dict] = []
        self.problems: list[str] = []
        self._txn: tuple[int, list[dict], tuple] | None = None   # (begin offset, pending events, saved state)

    # -- entry point ------------------------------------------------------------------------
    def feed(self, rec: MetaRecord) -> None:
        if rec.problem or rec.type not in _REPLAYED:
            return
        handler = getattr(self, "_" + rec.type)
        handler(rec, rec.fields)

    def handlers(self) -> dict:
        """Record type -> this builder's handler ``(rec, fields)``: what :meth:`feed` calls, for a loop."""
        return {t: getattr(self, "_" + t) for t in _REPLAYED}

    def finish(self) -> None:
        if self._txn is not None:
            self.problems.append(f"the log ends inside the metadata transaction begun at offset {self._txn[0]}: "
                                 f"{len(self._txn[1])} event(s) not applied")
            self._restore()

    # -- plumbing ---------------------------------------------------------------------------
    def _emit(self, rec: MetaRecord, type_: str, fields: dict) -> None:
        ev = {"type": type_, "offset": rec.offset, "time_ms": rec.time_ms, "raft_epoch": rec.raft_epoch,
              "source": SOURCE}
        ev.update(fields)
        (self._txn[1] if self._txn is not None else self.events).append(ev)

    def _state(self) -> tuple:
        return (self.topics, self.partitions, self.brokers)

    def _restore(self) -> None:
        self.topics, self.partitions, self.brokers = self._txn[2]
        self._txn = None

    # -- metadata transactions ----------------------------------------------------------------
    def _BeginTransactionRecord(self, rec, f):
        if self._txn is not None:
            self.problems.append(f"offset {rec.offset}: BeginTransactionRecord inside the transaction "
                                 f"begun at {self._txn[0]}")
            return
        self._txn = (rec.offset, [], copy.deepcopy(self._state()))

    def _EndTransactionRecord(self, rec, f):
        if self._txn is None:
            self.problems.append(f"offset {rec.offset}: EndTransactionRecord without a transaction")
            return
        self.events.extend(self._txn[1])
        self._txn = None

    def _AbortTransactionRecord(self, rec, f):
        if self._txn is None:
            self.problems.append(f"offset {rec.offset}: AbortTransactionRecord without a transaction")
            return
        self.problems.append(f"offset {rec.offset}: metadata transaction begun at {self._txn[0]} aborted "
                             f"({f.get('reason') or 'no reason'}): {len(self._txn[1])} event(s) discarded")
        self._restore()

    # -- topics and partitions ----------------------------------------------------------------
    def _TopicRecord(self, rec, f):
        self.topics[f["topic_id"]] = f["name"]
        self._emit(rec, "meta.topic", {"topic": f["name"], "topic_id": f["topic_id"]})

    def _RemoveTopicRecord(self, rec, f):
        tid = f["topic_id"]
        name = self.topics.pop(tid, None)
        if name is None:
            self.problems.append(f"offset {rec.offset}: RemoveTopicRecord for unknown topic id {tid}")
        for key in [k for k in self.partitions if k[0] == tid]:
            del self.partitions[key]
        self._emit(rec, "meta.topic_removed", {"topic": name, "topic_id": tid})

    def _PartitionRecord(self, rec, f):
        st = {"leader": f["leader"], "leader_epoch": f["leader_epoch"], "partition_epoch": f["partition_epoch"],
              "isr": _ints(f["isr"]), "replicas": _ints(f["replicas"]), "adding": _ints(f["adding_replicas"]),
              "removing": _ints(f["removing_replicas"]), "elr": _ints(f.get("eligible_leader_replicas")),
              "last_known_elr": _ints(f.get("last_known_elr")),
              "leader_recovery_state": f.get("leader_recovery_state", 0)}
        self.partitions[(f["topic_id"], f["partition_id"])] = st
        changed = ["replicas", "isr", "removing", "adding", "leader", "leader_epoch", "partition_epoch",
                   "leader_recovery_state"] + [_CHANGE_FIELDS[k] for k in
                                               ("directories", "eligible_leader_replicas", "last_known_elr")
                                               if f.get(k) is not None]
        self._emit_partition(rec, f, st, changed)

    def _PartitionChangeRecord(self, rec, f):
        tid, pid = f["topic_id"], f["partition_id"]
        st = self.partitions.get((tid, pid))
        if st is None:
            self.problems.append(f"offset {rec.offset}: PartitionChangeRecord for unknown partition {tid}-{pid}")
            return
        changed = []
        if len(f) > 2:                              # some tagged field (the two others are the key)
            keys = _CHANGE_ORDER.get(tuple(f))
            if keys is None:
                keys = _change_order(tuple(f))
            for k, name in keys:
                v = f[k]
                if v is None or (k == "leader" and v == NO_LEADER_CHANGE) or (k == "leader_recovery_state" and v == -1):
                    continue
                changed.append(name)
                if k == "leader":
                    st["leader"], st["leader_epoch"] = v, st["leader_epoch"] + 1
                elif k != "directories":
                    st[name] = list(v) if isinstance(v, list) else v
        st["partition_epoch"] += 1                  # in place: events hold the state's items, not the dict
        # the state's lists are shared with the event (and later events): the replay never changes a
        # list, it puts a new one in the state
        ev = {"type": "meta.partition", "offset": rec.offset, "time_ms": rec.time_ms, "raft_epoch": rec.raft_epoch,
              "source": SOURCE, "topic": self.topics.get(tid), "partition": pid, "topic_id": tid, **st,
              "record": "PartitionChangeRecord", "changed": changed}
        (self._txn[1] if self._txn is not None else self.events).append(ev)

    def _emit_partition(self, rec, f, st, changed):
        ev = {"type": "meta.partition", "offset": rec.offset, "time_ms": rec.time_ms, "raft_epoch": rec.raft_epoch,
              "source": SOURCE, "topic": self.topics.get(f["topic_id"]), "partition": f["partition_id"],
              "topic_id": f["topic_id"], **st, "record": rec.type, "changed": changed}
        (self._txn[1] if self._txn is not None else self.events).append(ev)

    def _ClearElrRecord(self, rec, f):
        """A ``min.insync.replicas`` change with ELR enabled (4.1+: ConfigurationControlManager
        .createClearElrRecordsAsNeeded): every partition of the topic (all topics for ``""``) with a non-empty
        ELR or last known ELR gets both emptied, partition epoch + 1 (ReplicationControlManager.removeTopicElrs
        merges a PartitionChangeRecord; no such record is written to the log)."""
        name = f.get("topic_name") or ""
        self._emit(rec, "meta.clear_elr", {"topic": name})
        for (tid, pid), st in self.partitions.items():
            if (name and self.topics.get(tid) != name) or not (st["elr"] or st["last_known_elr"]):
                continue
            st["elr"], st["last_known_elr"] = [], []
            st["partition_epoch"] += 1
            ev = {"type": "meta.partition", "offset": rec.offset, "time_ms": rec.time_ms,
                  "raft_epoch": rec.raft_epoch, "source": SOURCE, "topic": self.topics.get(tid), "partition": pid,
                  "topic_id": tid, **st, "record": "ClearElrRecord", "changed": ["elr", "last_known_elr"]}
            (self._txn[1] if self._txn is not None else self.events).append(ev)

    # -- brokers, features, the quorum ----------------------------------------------------------
    def _broker(self, rec, broker_id: int, **change) -> None:
        b = self.brokers.setdefault(broker_id, {"broker_epoch": None, "fenced": None, "registered": False,
                                                "in_controlled_shutdown": False})
        b.update(change)
        self._emit(rec, "meta.broker", {"broker_id": broker_id, **b, "record": rec.type})

    def _RegisterBrokerRecord(self, rec, f):
        self._broker(rec, f["broker_id"], broker_epoch=f["broker_epoch"], fenced=f["fenced"], registered=True,
                     in_controlled_shutdown=bool(f.get("in_controlled_shutdown")))

    def _UnregisterBrokerRecord(self, rec, f):
        self._broker(rec, f["broker_id"], broker_epoch=f["broker_epoch"], fenced=None, registered=False,
                     in_controlled_shutdown=False)

    def _FenceBrokerRecord(self, rec, f):
        self._broker(rec, f["broker_id"], broker_epoch=f["broker_epoch"], fenced=True)

    def _UnfenceBrokerRecord(self, rec, f):
        self._broker(rec, f["broker_id"], broker_epoch=f["broker_epoch"], fenced=False)

    def _BrokerRegistrationChangeRecord(self, rec, f):
        change = {"broker_epoch": f["broker_epoch"]}
        if f.get("fenced") in (1, -1):              # 1 fenced, -1 unfenced, 0 / absent: no change
            change["fenced"] = f["fenced"] == 1
        if f.get("in_controlled_shutdown") == 1:
            change["in_controlled_shutdown"] = True
        self._broker(rec, f["broker_id"], **change)

    def _FeatureLevelRecord(self, rec, f):
        self._emit(rec, "meta.feature", {"name": f["name"], "level": f["feature_level"]})

    def _ConfigRecord(self, rec, f):
        # ConfigResource.Type ids (clients/.../config/ConfigResource.java): 2 TOPIC, 4 BROKER (name "" = the
        # cluster-wide default), 8 BROKER_LOGGER, 16 CLIENT_METRICS, 32 GROUP; a null value deletes the key
        self._emit(rec, "meta.config", {"resource_type": CONFIG_RESOURCE.get(f["resource_type"], f["resource_type"]),
                                        "resource_name": f["resource_name"], "name": f["name"], "value": f["value"]})

    def _LeaderChangeMessage(self, rec, f):
        self._emit(rec, "meta.leader_change", {
            "leader_id": f["leader_id"], "voters": [v["voter_id"] for v in f.get("voters") or []],
            "granting_voters": [v["voter_id"] for v in f.get("granting_voters") or []]})


    # the dynamic quorum (KIP-853): the voter set and kraft.version (reference/kraft_voters.py)
    def _VotersRecord(self, rec, f):
        self._emit(rec, "meta.voters", {"voters": [
            {"id": v["voter_id"], "directory_id": v.get("voter_directory_id"),
             "endpoints": [f"{e.get('name')}://{e.get('host')}:{e.get('port')}" for e in v.get("endpoints") or []]}
            for v in f.get("voters") or []]})

    def _KRaftVersionRecord(self, rec, f):
        self._emit(rec, "meta.kraft_version", {"level": f["kraft_version"]})


def history_from_metadata_log(log: MetadataLog) -> KraftHistory:
    """All meta.* events of a node's metadata log, with its completeness facts."""
    b = KraftEventBuilder()
    counts: dict[str, int] = {}
    undecoded = []
    handlers = b.handlers()
    with gc_paused():
        for rec in log.records:
            t = rec.type
            counts[t] = counts.get(t, 0) + 1
            if rec.problem:
                (undecoded if t in _REPLAYED else b.problems).append(f"offset {rec.offset}: {rec.problem}")
                continue
            handler = handlers.get(t)
            if handler is not None:
                handler(rec, rec.fields)
    b.finish()
    return KraftHistory(events=b.events, first_offset=log.first_offset, last_offset=log.last_offset,
                        starts_at_beginning=log.starts_at_beginning, offset_gaps=list(log.offset_gaps),
                        torn_tails=log.torn_tails, undecoded=undecoded, problems=b.problems,
                        record_counts=counts)


def emit_history(emit, hist: KraftHistory) -> None:
    """Write the history into a run record, one event per ``meta.*`` entry (``source: "metadata_log"``)."""
    for ev in hist.events:
        emit(ev["type"], **{k: v for k, v in ev.items() if k != "type"})
