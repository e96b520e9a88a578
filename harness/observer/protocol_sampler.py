"""Periodic protocol-level sampler: what the brokers *say*, including what confluent-kafka 2.16
hides — the **leader epoch** of every partition (Metadata v7+) and the **KRaft quorum**
(DescribeQuorum). It is the observer for brokers without ZooKeeper (controller-spec §9.8).

Each sample asks one broker (the one that answered last, else the next in order) over
:mod:`harness.protocol` and emits:

* ``admin.metadata`` — the same fields as :mod:`harness.observer.admin_sampler` but with
  ``leader_epoch`` filled (-1 from the broker becomes null) and ``offline_replicas`` per partition;
  ``source: "protocol"``. ``controller_id``: when the cluster answers DescribeQuorum (KRaft) it is
  the quorum leader from the same sample, because a KRaft Metadata ``ControllerId`` is a random live
  broker (KA:1426–1431); otherwise (ZooKeeper mode) Metadata's ``ControllerId``.
* ``kraft.quorum`` — ``{leader_id, leader_epoch, high_watermark, voters: [{id, log_end_offset}],
  observers: [...], answered_by, error}`` when the cluster supports DescribeQuorum.
* ``admin.reassignments`` — ongoing reassignments (ListPartitionReassignments, spec §7.9) when the
  broker supports it; in ZooKeeper mode the request goes to the controller named by Metadata.
* With ``elr=True`` on brokers that serve DescribeTopicPartitions (KRaft 3.8+), the partitions of
  ``admin.metadata`` come from that response instead and carry ``eligible_leader_replicas`` and
  ``last_known_elr`` (spec §9.5; brokers and controller still from Metadata).

Caveats of MD(b) observations (§8.1) apply: an entry with an error (e.g. LEADER_NOT_AVAILABLE)
carries the answering broker's cached epoch, not an election result; only ``error: null`` entries
pair a leader with its epoch.

Bounded like the Admin sampler: stops after ``max_samples``, after ``duration`` seconds, or on
:meth:`stop`; each request is bounded by ``request_timeout`` per broker asked.
"""

from __future__ import annotations

from typing import Callable

from harness.observer.sampling import PeriodicSampler

from harness.protocol import (Endpoint, MetadataResult, ProtocolClient, ProtocolError, QuorumInfo, ReassignmentsResult,
                              UnsupportedApi)


def _none_if_negative(v: int) -> int | None:
    return v if v >= 0 else None


def metadata_fields(md: MetadataResult, topics: list[str] | None = None, include_internal: bool = False) -> dict:
    """``admin.metadata`` fields from one Metadata response (controller from Metadata itself)."""
    parts = []
    for t in sorted(md.topics, key=lambda t: t.name or ""):
        name = t.name or ""
        if topics is not None and name not in topics:
            continue
        if topics is None and not include_internal and (t.is_internal or name.startswith("__")):
            continue
        if t.error is not None and not t.partitions:
            parts.append({"topic": name, "partition": None, "leader": None, "leader_epoch": None,
                          "replicas": [], "isr": [], "offline_replicas": [], "error": t.error})
            continue
        for p in sorted(t.partitions, key=lambda p: p.partition):
            entry = {"topic": name, "partition": p.partition, "leader": p.leader,
                     "leader_epoch": _none_if_negative(p.leader_epoch), "replicas": list(p.replicas),
                     "isr": list(p.isr), "offline_replicas": list(p.offline_replicas), "error": p.error}
            if p.eligible_leader_replicas is not None or p.last_known_elr is not None:   # DescribeTopicPartitions
                entry["eligible_leader_replicas"] = list(p.eligible_leader_replicas or [])
                entry["last_known_elr"] = list(p.last_known_elr or [])
            parts.append(entry)
    return {"controller_id": _none_if_negative(md.controller_id),
            "brokers": sorted(b.node_id for b in md.brokers), "partitions": parts}


def reassignment_fields(r: ReassignmentsResult) -> dict:
    """``admin.reassignments`` fields from one ListPartitionReassignments response."""
    return {"partitions": [{"topic": o.topic, "partition": o.partition, "replicas": list(o.replicas),
                            "adding_replicas": list(o.adding_replicas),
                            "removing_replicas": list(o.removing_replicas)}
                           for o in sorted(r.partitions, key=lambda o: (o.topic, o.partition))],
            "error": r.error if r.error is None else f"{r.error}: {r.error_message or ''}".rstrip(": ")}


def quorum_fields(q: QuorumInfo) -> dict:
    """``kraft.quorum`` fields from one DescribeQuorum response."""
    return {"leader_id": _none_if_negative(q.leader_id), "leader_epoch": _none_if_negative(q.leader_epoch),
            "high_watermark": _none_if_negative(q.high_watermark),
            "voters": [{"id": v.replica_id, "log_end_offset": v.log_end_offset} for v in q.voters],
            "observers": [{"id": o.replica_id, "log_end_offset": o.log_end_offset} for o in q.observers],
            "error": q.error}


class ProtocolSampler(PeriodicSampler):
    """Samples Metadata (+ DescribeQuorum) in a background thread.

    ``brokers`` maps broker id → its :class:`~harness.protocol.endpoint.Endpoint` (``{b:
    cluster.brokers[b].endpoint}``, see :meth:`for_cluster`: 127.0.0.1:<published port> for a cluster the
    harness started, a nodes file's ``endpoint`` for one it did not). ``emit`` has the signature of :meth:`harness.record.RunRecorder.emit`;
    emitted events are also kept in :attr:`samples`. ``quorum``: None = ask DescribeQuorum when the
    broker supports it, False = never, True = always (an unsupported API is then an ``error``).
    ``reassignments`` likewise for ListPartitionReassignments; ``elr`` asks DescribeTopicPartitions
    for the partitions when the broker supports it.
    """

    def __init__(self, brokers: dict[int, Endpoint], emit: Callable[..., dict] | None = None, interval: float = 1.0,
                 max_samples: int | None = None, duration: float | None = None,
                 topics: list[str] | None = None, include_internal: bool = False,
                 request_timeout: float = 3.0, quorum: bool | None = None,
                 reassignments: bool | None = None, elr: bool = False, security=None):
        if not brokers:
            raise ValueError("no broker endpoints to sample")
        if max_samples is None and duration is None:
            max_samples = 100_000           # bounded even if the caller forgets stop()
        super().__init__(emit, interval, max_samples, duration)
        self.brokers = dict(sorted(brokers.items()))
        self.topics, self.include_internal = topics, include_internal
        self.request_timeout, self.quorum = request_timeout, quorum
        self.reassignments, self.elr = reassignments, elr
        self._preferred: int | None = None
        self.security = security        # the listener's (harness/cluster/security.py); None: PLAINTEXT

    thread_name = "protocol-sampler"

    def _join_timeout(self) -> float:
        return self.request_timeout * 2 * len(self.brokers) + 2

    @classmethod
    def for_cluster(cls, cluster, emit=None, **kw) -> "ProtocolSampler":
        """A sampler of every broker of a :class:`harness.cluster.cluster.Cluster`."""
        kw.setdefault("security", getattr(cluster, "security", None))
        return cls({b: cluster.brokers[b].endpoint for b in cluster.broker_ids}, emit, **kw)

    # -- one sample ----------------------------------------------------------------------------
    def _order(self) -> list[int]:
        ids = list(self.brokers)
        if self._preferred in self.brokers:
            ids.remove(self._preferred)
            ids.insert(0, self._preferred)
        return ids

    def _ask(self) -> dict:
        """One round on one connection to the first broker that answers: Metadata (or Metadata +
        DescribeTopicPartitions), then DescribeQuorum and ListPartitionReassignments as configured.
        Returns {"broker", "metadata", "quorum", "quorum_error", "reassign", "reassign_error"}."""
        last: Exception | None = None
        for b in self._order():
            with ProtocolClient.at(self.brokers[b], timeout=self.request_timeout,
                                client_id="kafka-chaos-protocol-sampler", security=self.security) as c:
                try:
                    if self.elr and c.supports_describe_topic_partitions():
                        md = c.metadata([])
                        md.topics = c.describe_topic_partitions(self.topics)
                    else:
                        md = c.metadata(self.topics)
                except ProtocolError as e:
                    last = e
                    continue
                self._preferred = b
                out = {"broker": b, "metadata": md, "quorum": None, "quorum_error": None, "reassign": None,
                       "reassign_error": None}
                if self.quorum is not False and (self.quorum or c.supports_describe_quorum()):
                    try:
                        out["quorum"] = c.describe_quorum()
                    except (ProtocolError, UnsupportedApi) as e:
                        out["quorum_error"] = str(e)
                if self.reassignments is not False and (self.reassignments or c.supports_list_partition_reassignments()):
                    try:
                        out["reassign"] = self._reassignments(c, b, md)
                    except (ProtocolError, UnsupportedApi) as e:
                        out["reassign_error"] = str(e)
                return out
        raise last or ProtocolError("no broker to ask")

    def _reassignments(self, c: ProtocolClient, b: int, md: MetadataResult) -> tuple[int, ReassignmentsResult]:
        """ListPartitionReassignments; a ZooKeeper-mode broker that is not the controller answers
        NOT_CONTROLLER, then the controller named by Metadata is asked."""
        r = c.list_partition_reassignments()
        ctl = md.controller_id
        if r.error == "NOT_CONTROLLER" and ctl in self.brokers and ctl != b:
            with ProtocolClient.at(self.brokers[ctl], timeout=self.request_timeout,
                                client_id="kafka-chaos-protocol-sampler", security=self.security) as cc:
                return ctl, cc.list_partition_reassignments()
        return b, r

    def sample(self) -> list[dict]:
        """Take one sample now; returns the events emitted (metadata, then quorum and reassignments
        when asked)."""
        try:
            a = self._ask()
        except ProtocolError as e:      # the cluster may be partitioned/killed on purpose
            return [self._emit("admin.metadata", {"controller_id": None, "brokers": [], "partitions": [],
                                                  "answered_by": None, "source": "protocol",
                                                  "error": str(e)})]
        b, q, q_err = a["broker"], a["quorum"], a["quorum_error"]
        fields = metadata_fields(a["metadata"], self.topics, self.include_internal)
        quorum_asked = q is not None or q_err is not None
        if quorum_asked:    # KRaft: Metadata's ControllerId is a random broker; the quorum leader is the controller
            fields["controller_id"] = _none_if_negative(q.leader_id) if q is not None and q.error is None else None
        fields.update({"answered_by": b, "source": "protocol", "error": None})
        out = [self._emit("admin.metadata", fields)]
        if quorum_asked:
            qf = quorum_fields(q) if q is not None else {"leader_id": None, "leader_epoch": None,
                                                          "high_watermark": None, "voters": [], "observers": [],
                                                          "error": q_err}
            qf["answered_by"] = b
            out.append(self._emit("kraft.quorum", qf))
        if a["reassign"] is not None:
            rb, r = a["reassign"]
            out.append(self._emit("admin.reassignments", dict(reassignment_fields(r), answered_by=rb,
                                                              source="protocol")))
        elif a["reassign_error"] is not None:
            out.append(self._emit("admin.reassignments", {"partitions": [], "answered_by": None,
                                                          "source": "protocol", "error": a["reassign_error"]}))
        return out
