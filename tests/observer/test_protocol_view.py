"""The protocol view (KRaft scenarios and targets): answers from Metadata / DescribeQuorum, and
"unknown" instead of an error while no broker answers (mid-fault)."""

from __future__ import annotations

from harness.observer.protocol_view import ProtocolView, lagging_brokers
from harness.protocol import ProtocolError
from harness.protocol.messages import BrokerInfo, MetadataResult, PartitionInfo, QuorumInfo, ReplicaState, TopicInfo


def _q(leader=3, epoch=7, caught_up=None):
    caught_up = caught_up or {1: 10_000, 2: 10_000, 3: 10_000}
    voters = [ReplicaState(b, 100, ts, ts) for b, ts in sorted(caught_up.items()) if b <= 3]
    observers = [ReplicaState(b, 100, ts, ts) for b, ts in sorted(caught_up.items()) if b > 3]
    return QuorumInfo(1, None, None, leader, epoch, 100, voters, observers)


class _Cluster:
    def __init__(self, md=None, quorum_leader=None, fail=False, quorum=None):
        self.md, self.leader, self.fail = md, quorum_leader, fail
        self.q = quorum if quorum is not None or quorum_leader is None else _q(quorum_leader)
        self.asked_last: list = []

    def protocol_metadata(self, topics=None, timeout_s=5.0, last=()):
        self.asked_last.append(set(last))
        if self.fail:
            raise ProtocolError("127.0.0.1:1: cannot connect")
        return self.md

    def quorum(self, timeout_s=5.0, last=()):
        if self.fail or self.q is None:
            raise ProtocolError("127.0.0.1:1: cannot connect")
        return self.q


def _md():
    parts = [PartitionInfo(0, None, 2, 5, [1, 2, 3], [2, 3]), PartitionInfo(1, "LEADER_NOT_AVAILABLE", -1, 4, [2, 3, 1], [3]),
             PartitionInfo(2, "LISTENER_NOT_FOUND", -1, 4, [2, 3, 1], [3])]
    return MetadataResult(12, [BrokerInfo(1, "h", 1), BrokerInfo(2, "h", 2)], "c", 2,
                          [TopicInfo("t", None, None, False, parts), TopicInfo("__x", None, None, True, [])])


def test_answers_from_metadata():
    v = ProtocolView(_Cluster(_md(), quorum_leader=3))
    assert v.partition_state("t", 0) == {"leader": 2, "leader_epoch": 5, "isr": [2, 3], "replicas": [1, 2, 3],
                                         "controller_epoch": None, "version": None, "zxid": None}
    assert (v.leader("t", 0), v.isr("t", 0), v.replicas("t", 0), v.followers("t", 0)) == (2, [2, 3], [1, 2, 3], [1, 3])
    # a leaderless partition (KRaftMetadataCache: LEADER_NOT_AVAILABLE, leader -1, the ISR unfiltered)
    assert v.partition_state("t", 1) == {"leader": -1, "leader_epoch": 4, "isr": [3], "replicas": [2, 3, 1],
                                         "controller_epoch": None, "version": None, "zxid": None}
    assert v.leader("t", 1) is None and v.isr("t", 1) == [3]
    assert v.partition_state("t", 2) is None and v.leader("t", 2) is None   # another error: unknown
    assert v.controller_id() == 3 and v.live_brokers() == [1, 2]
    assert v.topics() == ["t"] and v.partitions("t") == [0, 1, 2]


def test_unknown_while_no_broker_answers():
    v = ProtocolView(_Cluster(fail=True))
    assert v.controller_id() is None and v.controller_epoch() is None
    assert v.partition_state("t", 0) is None and v.isr("t", 0) == [] and v.live_brokers() == []
    assert v.topics() == [] and v.partitions("t") == []


def test_lagging_brokers_are_those_the_leader_saw_caught_up_long_before_its_now():
    assert lagging_brokers(_q(caught_up={1: 10_000, 2: 9_000, 3: 3_000, 4: 4_999})) == {3, 4}
    assert lagging_brokers(_q(caught_up={1: 10_000, 2: 10_000, 3: 10_000})) == set()
    assert lagging_brokers(_q(leader=-1, caught_up={1: 10_000, 3: 1})) == set()        # no leader: no judgement
    assert lagging_brokers(_q(caught_up={1: -1, 2: -1, 3: -1})) == set()               # v0: no timestamps
    # a new leader (3) has no timestamp for the isolated old leader (1), which never fetched from it
    assert lagging_brokers(_q(caught_up={1: -1, 2: 9_800, 3: 10_000})) == {1}


def test_a_broker_behind_the_quorum_is_asked_last():
    cl = _Cluster(_md(), quorum=_q(caught_up={1: 1_000, 2: 10_000, 3: 10_000}))
    v = ProtocolView(cl)
    assert v.live_brokers() == [1, 2] and cl.asked_last[-1] == {1}
    assert v.controller_id() == 3 and v.controller_epoch() == 7
