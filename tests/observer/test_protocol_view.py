"""The protocol view (KRaft scenarios and targets): answers from Metadata / DescribeQuorum, and
"unknown" instead of an error while no broker answers (mid-fault)."""

from __future__ import annotations

from harness.observer.protocol_view import ProtocolView
from harness.protocol import ProtocolError
from harness.protocol.messages import BrokerInfo, MetadataResult, PartitionInfo, TopicInfo


class _Cluster:
    def __init__(self, md=None, quorum_leader=None, fail=False):
        self.md, self.leader, self.fail = md, quorum_leader, fail

    def protocol_metadata(self, topics=None, timeout_s=5.0):
        if self.fail:
            raise ProtocolError("127.0.0.1:1: cannot connect")
        return self.md

    def active_controller(self):
        if self.fail:
            raise ProtocolError("127.0.0.1:1: cannot connect")
        return self.leader

    def quorum(self, timeout_s=5.0):
        raise ProtocolError("127.0.0.1:1: cannot connect")


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
