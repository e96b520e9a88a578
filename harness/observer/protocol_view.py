"""The cluster view answered through the Kafka protocol, for clusters without ZooKeeper (KRaft).

It offers what scenario scripts (``ctx.leader/isr/controller/live_brokers``, ``ctx.view``) and the
nemesis' target resolution ask the ZooKeeper watcher for, from a Metadata (v7+) and DescribeQuorum
answer taken now (docs/kraft.md "How a run on KRaft is judged", item 3):

- ``controller_id`` is the KRaft quorum leader (the active controller), ``controller_epoch`` its
  Raft epoch (the analogue of ``/controller_epoch``, controller-spec §9.1);
- ``partition_state`` has ``leader``, ``leader_epoch`` and ``isr`` (no partition epoch / version:
  the protocol does not expose it, §9.8); an entry the answering broker reports with an error is
  treated as unknown (``None``), except ``LEADER_NOT_AVAILABLE`` with leader -1: a leaderless
  partition, whose leader epoch, replicas and ISR a KRaft broker still reports unfiltered
  (``KRaftMetadataCache.getPartitionMetadata``), as the ZooKeeper view shows a ``leader = -1`` state;
- ``live_brokers`` are the brokers a Metadata answer lists (registered and not fenced).

A broker's metadata cache may lag the controller (§8.1 caveat 1): waits built on this view must
wait for a state rather than read it once, which is what ``RunContext.wait_until`` does.

A broker cut from the quorum (a network fault that leaves its client link up) keeps answering from
the metadata it had: it would list itself, and itself only, as it was, for as long as the cut lasts.
The view therefore asks such brokers last: the ones the quorum leader reports behind (DescribeQuorum
v1+: a voter's or observer's ``last_caught_up_timestamp`` more than :data:`LAG_MS` older than the
freshest replica's, which is the leader's own "now", or -1: never caught up since this leader leads),
refreshed at most once a second.
"""

from __future__ import annotations

import time

from harness.errors import HarnessError
from harness.protocol import ProtocolError

LAG_MS = 5000        # a replica caught up this long before the leader's now is behind (fetches poll every 0.5 s)


def lagging_brokers(quorum, lag_ms: int = LAG_MS) -> set[int]:
    """The replicas of the metadata quorum (voters and observers) that have not caught up with its
    leader for more than ``lag_ms`` (by the leader's clock), or never since it leads (timestamp -1: a
    new leader knows none of a replica that has not fetched from it, e.g. the isolated old leader);
    empty without a leader or without any timestamp (DescribeQuorum v0)."""
    if quorum is None or quorum.error is not None or quorum.leader_id < 0:
        return set()
    reps = list(quorum.voters) + list(quorum.observers)
    seen = [r.last_caught_up_timestamp for r in reps if r.last_caught_up_timestamp >= 0]
    if not seen:
        return set()
    newest = max(seen)
    return {r.replica_id for r in reps
            if r.last_caught_up_timestamp < 0 or newest - r.last_caught_up_timestamp > lag_ms}


class ProtocolView:
    """Every read asks the brokers now. When none answers (nodes are down mid-fault) a read returns
    "unknown" (None / []) instead of raising: ``wait_until`` then keeps asking until its deadline,
    as it does with a ZooKeeper view whose node is briefly unreachable."""

    def __init__(self, cluster, timeout_s: float = 5.0):
        self.cluster = cluster
        self.timeout_s = timeout_s
        self._behind: tuple[float, frozenset[int]] = (float("-inf"), frozenset())

    # ---- helpers
    def _quorum(self):
        """DescribeQuorum, the brokers last known behind asked last; refreshes that set."""
        q = self.cluster.quorum(timeout_s=self.timeout_s, last=self._behind[1])
        self._behind = (time.monotonic(), frozenset(lagging_brokers(q)))
        return q

    def behind(self) -> frozenset[int]:
        """The brokers the quorum leader reports behind (asked at most once a second)."""
        if time.monotonic() - self._behind[0] >= 1.0:
            try:
                self._quorum()
            except ProtocolError:
                self._behind = (time.monotonic(), self._behind[1])
        return self._behind[1]

    def _metadata(self, topics):
        try:
            return self.cluster.protocol_metadata(topics, timeout_s=self.timeout_s, last=self.behind())
        except ProtocolError:
            return None

    def _partition(self, topic: str, partition: int):
        md = self._metadata([topic])
        if md is None:
            return None
        for t in md.topics:
            if t.name == topic and t.error is None:
                for p in t.partitions:
                    if p.partition == partition and (p.error is None or (
                            p.error == "LEADER_NOT_AVAILABLE" and p.leader < 0)):
                        return p
        return None

    # ---- the View protocol (harness/nemesis/view.py)
    def controller_id(self, fresh: bool = True) -> int | None:
        try:
            q = self._quorum()
        except ProtocolError:
            return None
        return q.leader_id if q.error is None and q.leader_id >= 0 else None

    def controller_epoch(self) -> int | None:
        try:
            q = self._quorum()
        except ProtocolError:
            return None
        return q.leader_epoch if q.error is None and q.leader_epoch >= 0 else None

    def live_brokers(self, fresh: bool = True) -> list[int]:
        md = self._metadata([])
        return [] if md is None else sorted(b.node_id for b in md.brokers)

    def partition_state(self, topic: str, partition: int, fresh: bool = True) -> dict | None:
        p = self._partition(topic, partition)
        if p is None:
            return None
        return {"leader": p.leader, "leader_epoch": p.leader_epoch, "isr": list(p.isr),
                "replicas": list(p.replicas), "controller_epoch": None, "version": None, "zxid": None}

    def replicas(self, topic: str, partition: int) -> list[int]:
        p = self._partition(topic, partition)
        return [] if p is None else list(p.replicas)

    # ---- the rest of the watcher API scenarios use
    def leader(self, topic: str, partition: int, fresh: bool = True) -> int | None:
        p = self._partition(topic, partition)
        return None if p is None or p.leader < 0 else p.leader

    def isr(self, topic: str, partition: int, fresh: bool = True) -> list[int]:
        p = self._partition(topic, partition)
        return [] if p is None else list(p.isr)

    def topics(self) -> list[str]:
        md = self._metadata(None)
        if md is None:
            return []
        return sorted(t.name for t in md.topics if t.error is None and t.name and not t.is_internal)

    def partitions(self, topic: str) -> list[int]:
        md = self._metadata([topic])
        if md is None:
            return []
        return sorted(p.partition for t in md.topics if t.name == topic and t.error is None for p in t.partitions)

    def followers(self, topic: str, partition: int, fresh: bool = True) -> list[int]:
        """Replicas other than the current leader, in assignment order."""
        p = self._partition(topic, partition)
        if p is None:
            return []
        return [r for r in p.replicas if r != p.leader]

    def broker_epochs(self) -> dict[int, int]:
        """Broker id -> the epoch of its current registration. Client APIs do not expose it in KRaft
        (docs/kraft.md); the metadata log does (RegisterBrokerRecord, §9.3), read when the
        distribution keeps one; {} for a broker that keeps none (a vendor's)."""
        if not self.cluster.distribution.metadata_log:
            return {}
        try:
            return self.cluster.control.broker_epochs()
        except HarnessError:
            return {}

    def topic_id(self, topic: str) -> str | None:
        """The topic id of a Metadata v10+ answer (§9.8), hex; None when the topic does not exist."""
        md = self._metadata([topic])
        tid = None if md is None else next((t.topic_id for t in md.topics if t.name == topic and t.error is None), None)
        return tid.hex() if tid and any(tid) else None
