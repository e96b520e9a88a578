"""The controller's writes, one format for every control plane: what a scenario reads when it checks
*how* the controller got to a state (which writes, in which order, with which epochs), not only the
state it ended in.

ZooKeeper mode takes them from ZooKeeper's transaction log (``zk.*`` events,
harness/observer/txn_events.py), KRaft from the ``__cluster_metadata`` log (``meta.*`` events,
harness/observer/kraft_metadata.py). Both are ground truth: every write, in the order the controller
made it, none missed however short-lived. :meth:`harness.distributions.control_plane.ControlPlane.writes_since`
gives them to scenarios in this form (docs/scenarios.md "The controller's writes"):

``{"kind": "state", "topic", "partition", "seq", "leader", "leader_epoch", "isr", "partition_epoch",
"leader_recovery_state", "elr", "last_known_elr"}``
    a write of the partition's leadership: the state znode (every write of it), or a metadata record
    that set the leader, the ISR, the leader recovery state (0 RECOVERED, 1 RECOVERING; 0 where the
    znode has none, before 3.2) or the ELR / last known ELR (KRaft §9.5, KIP-966; always [] in
    ZooKeeper mode), or created the partition;
``{"kind": "assignment", "topic", "partition", "seq", "replicas", "adding", "removing"}``
    a write of the partition's replica assignment: the topic znode (each write lists every partition),
    or a metadata record that set the replicas (or created the partition);
``{"kind": "topic_removed", "topic", "seq"}``
    the topic is gone (its znode deleted, a RemoveTopicRecord);
``{"kind": "broker", "broker_id", "broker_epoch", "registered", "seq"}``
    a broker registration (znode created / deleted; RegisterBrokerRecord / UnregisterBrokerRecord);
``{"kind": "fence", "broker_id", "broker_epoch", "fenced", "seq"}``
    KRaft only: the controller fenced (``fenced`` true) or unfenced a registered broker
    (FenceBrokerRecord / UnfenceBrokerRecord, or a BrokerRegistrationChangeRecord that changes the
    fenced flag; controller-spec §9.3). A new registration starts fenced and is a ``broker`` write;
    ZooKeeper mode has no fencing (a broker is registered or not);
``{"kind": "controller_epoch", "epoch", "leader_id", "seq"}``
    a new controller epoch (``/controller_epoch`` written; a LeaderChange control record of the quorum,
    which also names the new quorum leader: ``leader_id``, None in ZooKeeper mode);
``{"kind": "feature", "name", "level", "seq"}``
    KRaft only: a finalized feature level (FeatureLevelRecord, e.g. ``metadata.version`` or
    ``eligible.leader.replicas.version``; a KRaftVersionRecord as ``kraft.version``, which a static quorum
    never writes); :func:`feature_levels` folds them. ZooKeeper mode has none.

``seq`` orders the writes of one history (the zxid; the metadata log offset) and is the marker
:meth:`~harness.distributions.control_plane.ControlPlane.history_marker` returns.
"""

from __future__ import annotations

# the Kafka field names a PartitionChangeRecord sets, as the metadata decoder lists them in ``changed``
_STATE_FIELDS = {"leader", "isr", "leader_recovery_state", "elr", "last_known_elr"}
_ASSIGNMENT_FIELDS = {"replicas", "adding", "removing", "addingReplicas", "removingReplicas"}


def from_zk_events(events: list[dict], since: int = 0) -> list[dict]:
    """The writes of ``zk.*`` txn-log events with a zxid above ``since``, in zxid order."""
    out: list[dict] = []
    for e in sorted((e for e in events if e.get("zxid", 0) > since), key=lambda e: e["zxid"]):
        t, z = e.get("type"), e["zxid"]
        if t == "zk.partition_state" and not e.get("deleted"):
            out.append({"kind": "state", "topic": e["topic"], "partition": e["partition"], "seq": z,
                        "leader": e["leader"], "leader_epoch": e["leader_epoch"], "isr": list(e["isr"]),
                        "partition_epoch": e.get("version"),
                        "leader_recovery_state": e.get("leader_recovery_state") or 0, "elr": [],
                        "last_known_elr": []})
        elif t == "zk.topic" and e.get("deleted"):
            out.append({"kind": "topic_removed", "topic": e["topic"], "seq": z})
        elif t == "zk.topic":
            adding, removing = e.get("adding_replicas") or {}, e.get("removing_replicas") or {}
            for p, rs in sorted((e.get("partitions") or {}).items(), key=lambda kv: int(kv[0])):
                out.append({"kind": "assignment", "topic": e["topic"], "partition": int(p), "seq": z,
                            "replicas": list(rs), "adding": list(adding.get(p, [])),
                            "removing": list(removing.get(p, []))})
        elif t == "zk.broker":
            out.append({"kind": "broker", "broker_id": e["broker_id"], "broker_epoch": e.get("broker_epoch"),
                        "registered": bool(e.get("registered")), "seq": z})
        elif t == "zk.controller_epoch":
            out.append({"kind": "controller_epoch", "epoch": e.get("epoch"), "leader_id": None, "seq": z})
    return out


def from_metadata_events(events: list[dict], since: int = -1) -> list[dict]:
    """The writes of ``meta.*`` metadata-log events with an offset above ``since``, in log order."""
    out: list[dict] = []
    fenced: dict[int, bool | None] = {}       # each broker's fenced flag so far (the whole log is replayed)
    for e in sorted((e for e in events if e.get("offset", -1) >= 0), key=lambda e: e["offset"]):
        t, o = e.get("type"), e["offset"]
        if t == "meta.broker":
            was, now = fenced.get(e["broker_id"]), e.get("fenced")
            fenced[e["broker_id"]] = now
            if (o > since and e.get("registered") and now is not None and was is not None and now != was
                    and e.get("record") not in ("RegisterBrokerRecord", "UnregisterBrokerRecord")):
                out.append({"kind": "fence", "broker_id": e["broker_id"], "broker_epoch": e.get("broker_epoch"),
                            "fenced": bool(now), "seq": o})
        if o <= since:
            continue
        if t == "meta.partition":
            created = e.get("record") == "PartitionRecord"
            changed = set(e.get("changed") or ())
            if created or changed & _STATE_FIELDS:
                out.append({"kind": "state", "topic": e["topic"], "partition": e["partition"], "seq": o,
                            "leader": e["leader"], "leader_epoch": e["leader_epoch"], "isr": list(e["isr"]),
                            "partition_epoch": e.get("partition_epoch"),
                            "leader_recovery_state": e.get("leader_recovery_state") or 0,
                            "elr": list(e.get("elr") or []), "last_known_elr": list(e.get("last_known_elr") or [])})
            if created or changed & _ASSIGNMENT_FIELDS:
                out.append({"kind": "assignment", "topic": e["topic"], "partition": e["partition"], "seq": o,
                            "replicas": list(e["replicas"]), "adding": list(e.get("adding") or []),
                            "removing": list(e.get("removing") or [])})
        elif t == "meta.topic_removed":
            out.append({"kind": "topic_removed", "topic": e["topic"], "seq": o})
        elif t == "meta.broker" and e.get("record") in ("RegisterBrokerRecord", "UnregisterBrokerRecord"):
            out.append({"kind": "broker", "broker_id": e["broker_id"], "broker_epoch": e.get("broker_epoch"),
                        "registered": bool(e.get("registered")), "seq": o})
        elif t == "meta.feature":
            out.append({"kind": "feature", "name": e.get("name"), "level": e.get("level"), "seq": o})
        elif t == "meta.kraft_version":       # the quorum's own feature: a KRaftVersionRecord, not a FeatureLevelRecord
            out.append({"kind": "feature", "name": "kraft.version", "level": e.get("level"), "seq": o})
        elif t == "meta.leader_change":
            out.append({"kind": "controller_epoch", "epoch": e.get("raft_epoch"), "leader_id": e.get("leader_id"),
                        "seq": o})
    return out


def of_partition(writes: list[dict], kind: str, topic: str, partition: int) -> list[dict]:
    """The writes of one kind for ``topic-partition``, in order."""
    return [w for w in writes if w["kind"] == kind and w.get("topic") == topic and w.get("partition") == partition]


def feature_levels(writes: list[dict]) -> dict[str, int]:
    """Feature name -> its finalized level after ``writes`` (the last ``feature`` write of each; a
    feature never written is absent, i.e. level 0). Pass the whole history (``writes_since(-1)``): the
    levels are written when the cluster is bootstrapped. ZooKeeper mode: {}."""
    out: dict[str, int] = {}
    for w in writes:
        if w["kind"] == "feature" and w.get("name"):
            out[w["name"]] = int(w.get("level") or 0)
    return out
