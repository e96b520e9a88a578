"""The protocol sampler: event fields from decoded responses, broker fail-over and stickiness, KRaft
quorum events, and error samples (against scripted servers on 127.0.0.1; the real cluster is in
tests/integration/test_kraft.py)."""

from __future__ import annotations

import socket
import struct

import pytest
from scripted_server import ScriptedServer, h

from harness.protocol.endpoint import loopback
from harness.observer.protocol_sampler import ProtocolSampler, metadata_fields, quorum_fields
from harness.protocol.messages import (BrokerInfo, MetadataResult, PartitionInfo, QuorumInfo, ReplicaState,
                                       TopicInfo)
from harness.record import RunRecorder, read_run


def _md(controller: int = 2) -> MetadataResult:
    return MetadataResult(12, [BrokerInfo(3, "127.0.0.1", 9093), BrokerInfo(1, "127.0.0.1", 9091)], "c", controller, [
        TopicInfo("t1", None, b"\x01" * 16, False, [
            PartitionInfo(1, "LEADER_NOT_AVAILABLE", -1, 4, [2, 3, 1], [3], [2]),
            PartitionInfo(0, None, 1, 7, [1, 2, 3], [1, 2]),
        ]),
        TopicInfo("__consumer_offsets", None, b"\x02" * 16, True, [PartitionInfo(0, None, 1, 0, [1], [1])]),
        TopicInfo("gone", "UNKNOWN_TOPIC_OR_PARTITION", None, False, []),
    ])


def test_metadata_fields_carry_leader_epochs():
    f = metadata_fields(_md())
    assert f["controller_id"] == 2 and f["brokers"] == [1, 3]
    assert f["partitions"] == [
        {"topic": "gone", "partition": None, "leader": None, "leader_epoch": None, "replicas": [], "isr": [],
         "offline_replicas": [], "error": "UNKNOWN_TOPIC_OR_PARTITION"},
        {"topic": "t1", "partition": 0, "leader": 1, "leader_epoch": 7, "replicas": [1, 2, 3], "isr": [1, 2],
         "offline_replicas": [], "error": None},
        {"topic": "t1", "partition": 1, "leader": -1, "leader_epoch": 4, "replicas": [2, 3, 1], "isr": [3],
         "offline_replicas": [2], "error": "LEADER_NOT_AVAILABLE"},
    ]
    assert [p["topic"] for p in metadata_fields(_md(), include_internal=True)["partitions"]].count(
        "__consumer_offsets") == 1
    assert [p["partition"] for p in metadata_fields(_md(), topics=["t1"])["partitions"]] == [0, 1]
    assert metadata_fields(_md(controller=-1))["controller_id"] is None


def test_unknown_epoch_becomes_null():
    md = MetadataResult(12, [], None, -1, [TopicInfo("t", None, None, False, [PartitionInfo(0, None, 1, -1, [1], [1])])])
    assert metadata_fields(md)["partitions"][0]["leader_epoch"] is None


def test_quorum_fields():
    q = QuorumInfo(2, None, None, 3, 9, 120, [ReplicaState(1, 120), ReplicaState(3, 118)], [ReplicaState(4, 100)])
    assert quorum_fields(q) == {"leader_id": 3, "leader_epoch": 9, "high_watermark": 120,
                                "voters": [{"id": 1, "log_end_offset": 120}, {"id": 3, "log_end_offset": 118}],
                                "observers": [{"id": 4, "log_end_offset": 100}], "error": None}
    lost = QuorumInfo(0, "NOT_CONTROLLER", None, -1, -1, -1, [], [])
    assert quorum_fields(lost)["leader_id"] is None and quorum_fields(lost)["error"] == "NOT_CONTROLLER"


# -- against scripted servers -------------------------------------------------------------------
NAME = "13" + b"__cluster_metadata".hex()


def _server(node_id: int, with_quorum: bool, leader_epoch: int = 5) -> ScriptedServer:
    apis = ("04" if with_quorum else "03") + "0003 0000 000c 00" "0012 0000 0003 00" + \
        ("0037 0000 0002 00" if with_quorum else "") + "00000000" "00"

    def answer(key, ver, cid):
        c = struct.pack(">i", cid)
        if key == 18:
            return c + h("0000", apis)
        if key == 3:
            return c + h("00", "00000000",
                         "02", f"{node_id:08x}", "0a" + b"127.0.0.1".hex(), "00002382", "00", "00",
                         "00", f"{node_id:08x}",                       # null cluster id, ControllerId = itself
                         "02", "0000", "02 74", "11" * 16, "00",      # topic "t"
                         "02", "0000 00000000", f"{node_id:08x}", f"{leader_epoch:08x}",
                         "02", f"{node_id:08x}", "02", f"{node_id:08x}", "01", "00",
                         "80000000", "00", "00")
        return c + h("00", "0000", "00", "02", NAME, "02", "00000000 0000 00",
                     "00000003 0000000b 0000000000000064",            # quorum leader 3, epoch 11, HW 100
                     "02", "00000003", "00" * 16, "0000000000000064", "ffffffffffffffff", "0000000000000000", "00",
                     "01", "00", "00", "01", "00")
    return ScriptedServer(answer)


def _dead_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_zookeeper_mode_sample_uses_metadata_controller(servers):
    servers.append(_server(1, with_quorum=False))
    smp = ProtocolSampler({1: loopback(servers[0].port)}, interval=0.1, max_samples=1)
    (ev,) = smp.sample()
    assert ev["type"] == "admin.metadata" and ev["source"] == "protocol" and ev["error"] is None
    assert ev["controller_id"] == 1 and ev["answered_by"] == 1
    assert ev["partitions"][0]["leader_epoch"] == 5


def test_kraft_sample_reports_quorum_and_its_leader_as_controller(servers, tmp_path):
    servers.append(_server(2, with_quorum=True))
    rec = RunRecorder(tmp_path, "protocol-sampler-test")
    smp = ProtocolSampler({2: loopback(servers[0].port)}, emit=rec.emit, interval=0.05, max_samples=3)
    smp.start()
    smp._thread.join(10)
    smp.stop()
    types = [e["type"] for e in smp.samples]
    assert types == ["admin.metadata", "kraft.quorum"] * 3
    md, q = smp.samples[0], smp.samples[1]
    assert md["controller_id"] == 3          # quorum leader, not Metadata's ControllerId (2)
    assert q["leader_id"] == 3 and q["leader_epoch"] == 11 and q["high_watermark"] == 100
    assert q["voters"] == [{"id": 3, "log_end_offset": 100}] and q["answered_by"] == 2
    rec.finish("PASS", "test")
    run = read_run(rec.final_dir)
    assert [e["type"] for e in run.events] == types
    assert run.events[1]["seq"] == 1 and run.events[1]["leader_epoch"] == 11


def test_fails_over_to_the_next_broker_and_sticks_to_it(servers):
    servers.append(_server(2, with_quorum=False))
    smp = ProtocolSampler({1: loopback(_dead_port()), 2: loopback(servers[0].port)}, request_timeout=2)
    assert smp.sample()[0]["answered_by"] == 2
    assert smp._order() == [2, 1]
    assert smp.sample()[0]["answered_by"] == 2


def test_no_broker_answering_is_an_error_sample():
    smp = ProtocolSampler({1: loopback(_dead_port()), 2: loopback(_dead_port())}, request_timeout=1)
    (ev,) = smp.sample()
    assert ev["type"] == "admin.metadata" and ev["brokers"] == [] and ev["partitions"] == []
    assert "cannot connect" in ev["error"] and ev["answered_by"] is None


def test_quorum_forced_on_a_broker_without_it_is_an_error_event(servers):
    servers.append(_server(1, with_quorum=False))
    md, q = ProtocolSampler({1: loopback(servers[0].port)}, quorum=True).sample()
    assert md["controller_id"] is None
    assert q["type"] == "kraft.quorum" and q["leader_id"] is None and "DescribeQuorum" in q["error"]


def test_bad_arguments():
    with pytest.raises(ValueError, match="interval"):
        ProtocolSampler({1: loopback(9092)}, interval=0)
    with pytest.raises(ValueError, match="no broker"):
        ProtocolSampler({})


def _lpr_server(node_id: int, controller: int, ongoing: bool, dtp: bool = False) -> ScriptedServer:
    """Metadata names ``controller``; ListPartitionReassignments answers NOT_CONTROLLER unless this
    broker is it; with ``dtp`` it also serves DescribeTopicPartitions (ELR [3])."""
    apis = ("05" if dtp else "04") + "0003 0000 000c 00" "0012 0000 0003 00" "002e 0000 0000 00" + \
        ("004b 0000 0000 00" if dtp else "") + "00000000" "00"

    def answer(key, ver, cid):
        c = struct.pack(">i", cid) + (b"" if key == 18 else b"\x00")
        if key == 18:
            return c + h("0000", apis)
        if key == 3:
            return c + h("00000000", "02", f"{node_id:08x}", "0a" + b"127.0.0.1".hex(), "00002382", "00", "00",
                         "00", f"{controller:08x}",
                         "02", "0000", "02 74", "11" * 16, "00", "02",
                         "0000 00000000 00000001 00000004", "04 00000001 00000002 00000003", "02 00000001",
                         "01", "00", "80000000", "00", "00")
        if key == 75:
            return c + h("00000000", "02", "0000", "02 74", "11" * 16, "00", "02",
                         "0000 00000000 00000001 00000004", "04 00000001 00000002 00000003", "02 00000001",
                         "02 00000003", "00", "01", "00", "80000000", "00", "ff", "00")
        if node_id != controller:
            return c + h("00000000", "0029", "00", "01", "00")
        if not ongoing:
            return c + h("00000000", "0000", "00", "01", "00")
        return c + h("00000000", "0000", "00", "02", "02 74", "02", "00000000",
                     "04 00000001 00000002 00000003", "02 00000003", "01", "00", "00", "00")
    return ScriptedServer(answer)


def test_reassignments_are_asked_of_the_zookeeper_mode_controller(servers):
    servers.extend([_lpr_server(1, controller=2, ongoing=True), _lpr_server(2, controller=2, ongoing=True)])
    md, ra = ProtocolSampler({1: loopback(servers[0].port), 2: loopback(servers[1].port)}).sample()
    assert md["answered_by"] == 1 and md["controller_id"] == 2
    assert ra["type"] == "admin.reassignments" and ra["answered_by"] == 2 and ra["error"] is None
    assert ra["partitions"] == [{"topic": "t", "partition": 0, "replicas": [1, 2, 3], "adding_replicas": [3],
                                 "removing_replicas": []}]


def test_no_ongoing_reassignment_and_unreachable_controller(servers):
    servers.append(_lpr_server(1, controller=1, ongoing=False))
    md, ra = ProtocolSampler({1: loopback(servers[0].port)}).sample()
    assert ra["partitions"] == [] and ra["error"] is None
    servers.append(_lpr_server(2, controller=3, ongoing=False))        # controller 3 is not a known port
    md, ra = ProtocolSampler({2: loopback(servers[1].port)}).sample()
    assert ra["partitions"] == [] and ra["error"].startswith("NOT_CONTROLLER")
    assert [e["type"] for e in ProtocolSampler({2: loopback(servers[1].port)}, reassignments=False).sample()] == \
        ["admin.metadata"]


def test_elr_from_describe_topic_partitions(servers):
    servers.append(_lpr_server(1, controller=1, ongoing=False, dtp=True))
    (md, _) = ProtocolSampler({1: loopback(servers[0].port)}, elr=True).sample()
    (p,) = md["partitions"]
    assert (p["leader"], p["leader_epoch"], p["isr"]) == (1, 4, [1])
    assert p["eligible_leader_replicas"] == [3] and p["last_known_elr"] == []
    (md2, _) = ProtocolSampler({1: loopback(servers[0].port)}).sample()       # without elr: Metadata, no ELR fields
    assert "eligible_leader_replicas" not in md2["partitions"][0]
