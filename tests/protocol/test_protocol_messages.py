"""Requests and responses against bytes written out field by field from the message schemas
(apache/kafka clients/src/main/resources/common/message/*.json at 3.9.0)."""

from __future__ import annotations

import pytest

from harness.protocol import admin_messages as a
from harness.protocol import header as hdr
from harness.protocol import messages as m
from harness.protocol.wire import DecodeError


def h(*parts: str) -> bytes:
    return bytes.fromhex("".join(p.replace(" ", "") for p in parts))


CLIENT = "kc"           # 00 02 6b 63 as an int16-prefixed string
UUID_T = "11" * 16


# -- requests ------------------------------------------------------------------------------------
def test_api_versions_v3_request():
    got = m.encode_api_versions_request(3, 7, CLIENT, "kafka-chaos", "1")
    assert got == h("0012 0003 00000007 0002 6b63 00",          # header v2: key 18, v3, cid 7, client, tags
                    "0c" + "kafka-chaos".encode().hex(),       # compact string, 11 chars + 1
                    "02 31",                                   # "1"
                    "00")                                      # body tags


def test_api_versions_v0_request_has_empty_body():
    assert m.encode_api_versions_request(0, 1, CLIENT) == h("0012 0000 00000001 0002 6b63")


def test_metadata_v12_request_for_one_topic():
    got = m.encode_metadata_request(12, 7, CLIENT, ["t"])
    assert got == h("0003 000c 00000007 0002 6b63 00",          # header v2
                    "02",                                      # compact array of 1 topic
                    "00" * 16, "02 74", "00",                  # zero topic id, name "t", tags
                    "00",                                      # AllowAutoTopicCreation false
                    "00",                                      # IncludeTopicAuthorizedOperations false
                    "00")                                      # tags


def test_metadata_v12_request_all_topics_is_null_array():
    got = m.encode_metadata_request(12, 1, CLIENT, None)
    assert got == h("0003 000c 00000001 0002 6b63 00", "00", "00", "00", "00")


def test_metadata_v7_request_has_no_authorized_operation_flags():
    got = m.encode_metadata_request(7, 2, CLIENT, None)
    assert got == h("0003 0007 00000002 0002 6b63", "ffffffff", "00")


def test_metadata_v8_and_v9_requests():
    assert m.encode_metadata_request(8, 2, CLIENT, ["t"]) == h(
        "0003 0008 00000002 0002 6b63", "00000001 0001 74", "00", "00", "00")
    assert m.encode_metadata_request(9, 2, CLIENT, ["t"]) == h(
        "0003 0009 00000002 0002 6b63 00", "02 0274 00", "00", "00", "00", "00")


def test_describe_quorum_v2_request():
    got = m.encode_describe_quorum_request(2, 9, CLIENT)
    assert got == h("0037 0002 00000009 0002 6b63 00",          # key 55, v2, header v2
                    "02", "13" + "__cluster_metadata".encode().hex(),   # 1 topic, 18-char name
                    "02 00000000 00",                          # 1 partition: index 0, tags
                    "00", "00")                                # topic tags, body tags


def test_unimplemented_versions_are_refused():
    with pytest.raises(ValueError, match="Metadata v6 is not implemented"):
        m.encode_metadata_request(6, 1, CLIENT)
    with pytest.raises(ValueError, match="DescribeQuorum v3"):
        m.encode_describe_quorum_request(3, 1, CLIENT)


# -- ApiVersions responses -----------------------------------------------------------------------
def test_api_versions_v3_response_skips_tagged_features():
    body = h("0000",                                            # no error
             "03", "0003 0000 000c 00", "0037 0000 0002 00",    # 2 apis: Metadata 0-12, DescribeQuorum 0-2
             "00000000",                                        # throttle
             "01 00 01 01")                                     # one tagged field (tag 0, 1 byte)
    res = m.decode_api_versions_response(body, 3)
    assert res.error is None
    assert res.versions == {3: (0, 12), 55: (0, 2)}
    assert res.max_version(3, (7, 12)) == 12
    assert res.max_version(55, (0, 2)) == 2
    assert res.max_version(75, (0, 0)) is None


def test_api_versions_negotiation_bounds():
    res = m.ApiVersionsResult(None, {3: (0, 8), 55: (0, 1), 1: (4, 9)})
    assert res.max_version(3, (7, 12)) == 8
    assert res.max_version(55, (0, 2)) == 1
    assert res.max_version(1, (0, 3)) is None        # broker minimum above ours


def test_api_versions_unsupported_version_is_decoded_as_v0():
    body = h("0023", "00000001", "0012 0000 0002")             # UNSUPPORTED_VERSION, v0 layout
    res = m.decode_api_versions_response(body, 3)
    assert res.error == "UNSUPPORTED_VERSION"
    assert res.versions == {18: (0, 2)}


# -- Metadata responses --------------------------------------------------------------------------
def _broker_v12(node: int, port: int) -> str:
    return f"{node:08x}" + "0a" + "127.0.0.1".encode().hex() + f"{port:08x}" + "00" + "00"


def test_metadata_v12_response_with_leader_epoch():
    body = h("00000000",                                        # throttle
             "03", _broker_v12(1, 9090), _broker_v12(2, 9091),  # 2 brokers, null rack
             "03 6162",                                         # cluster id "ab"
             "00000001",                                        # controller id
             "02",                                              # 1 topic
             "0000", "02 74", UUID_T, "00",                     # no error, "t", topic id, not internal
             "03",                                              # 2 partitions
             "0000 00000000 00000002 00000005",                 # p0: leader 2, epoch 5
             "03 00000002 00000001", "02 00000002", "01", "00", # replicas [2,1], isr [2], offline [], tags
             "0005 00000001 ffffffff 00000003",                 # p1: LEADER_NOT_AVAILABLE, leader -1, epoch 3
             "02 00000001", "02 00000001", "02 00000001", "00",
             "80000000", "00",                                  # topic authorized ops, tags
             "00")                                              # body tags
    md = m.decode_metadata_response(body, 12)
    assert [(b.node_id, b.host, b.port, b.rack) for b in md.brokers] == [(1, "127.0.0.1", 9090, None),
                                                                      (2, "127.0.0.1", 9091, None)]
    assert md.cluster_id == "ab" and md.controller_id == 1
    (t,) = md.topics
    assert (t.name, t.error, t.topic_id, t.is_internal) == ("t", None, bytes.fromhex(UUID_T), False)
    p0, p1 = t.partitions
    assert (p0.partition, p0.error, p0.leader, p0.leader_epoch, p0.replicas, p0.isr, p0.offline_replicas) == \
        (0, None, 2, 5, [2, 1], [2], [])
    assert (p1.error, p1.leader, p1.leader_epoch, p1.offline_replicas) == ("LEADER_NOT_AVAILABLE", -1, 3, [1])


def test_metadata_v7_response_classic_encoding():
    body = h("00000000",
             "00000001", "00000003", "0009" + "127.0.0.1".encode().hex(), "00002382", "ffff",  # broker 3:9090
             "ffff",                                            # null cluster id
             "00000003",
             "00000001",                                        # 1 topic
             "0000", "0001 74", "01",                           # "t", internal
             "00000001", "0000 00000000 00000003 00000002",     # p0 leader 3 epoch 2
             "00000001 00000003", "00000001 00000003", "00000000")
    md = m.decode_metadata_response(body, 7)
    assert md.cluster_id is None and md.controller_id == 3
    assert [(b.node_id, b.port) for b in md.brokers] == [(3, 9090)]
    (t,) = md.topics
    assert t.is_internal and t.topic_id is None
    assert [(p.leader, p.leader_epoch, p.isr) for p in t.partitions] == [(3, 2, [3])]


def test_metadata_v8_response_reads_authorized_operations():
    body = h("00000000", "00000000", "ffff", "ffffffff",
             "00000001", "0003", "0001 74", "00", "00000000", "80000000",   # UNKNOWN_TOPIC_OR_PARTITION
             "80000000")                                        # cluster authorized ops (v8-10)
    md = m.decode_metadata_response(body, 8)
    assert md.controller_id == -1
    assert md.topics[0].error == "UNKNOWN_TOPIC_OR_PARTITION" and md.topics[0].partitions == []


def test_metadata_truncated_response_is_a_decode_error():
    with pytest.raises(DecodeError):
        m.decode_metadata_response(h("00000000", "03"), 12)


# -- DescribeQuorum responses --------------------------------------------------------------------
NAME = "13" + "__cluster_metadata".encode().hex()


def test_describe_quorum_v0_response():
    body = h("0000",                                            # no top-level error
             "02", NAME,                                        # 1 topic
             "02", "00000000 0000",                             # 1 partition, index 0, no error
             "00000002 00000007 0000000000000064",              # leader 2, epoch 7, HW 100
             "03", "00000001 0000000000000064 00", "00000002 000000000000005a 00",  # voters 1@100, 2@90
             "01", "00",                                        # no observers, partition tags
             "00", "00")                                        # topic tags, body tags
    q = m.decode_describe_quorum_response(body, 0)
    assert (q.error, q.leader_id, q.leader_epoch, q.high_watermark) == (None, 2, 7, 100)
    assert [(v.replica_id, v.log_end_offset, v.last_fetch_timestamp) for v in q.voters] == [(1, 100, -1), (2, 90, -1)]
    assert q.observers == []


def test_describe_quorum_v2_response_with_directory_ids_and_nodes():
    body = h("0000", "00",                                      # no error, null message
             "02", NAME,
             "02", "00000000 0000 00",                          # partition 0, no error, null message
             "00000003 0000000b 00000000000000c8",              # leader 3, epoch 11, HW 200
             "02", "00000003", UUID_T, "00000000000000c8", "ffffffffffffffff", "0000018b00000000", "00",
             "02", "00000004", "00" * 16, "00000000000000c7", "0000018b00000001", "0000018b00000002", "00",
             "00",                                              # partition tags
             "00",                                              # topic tags
             "02", "00000003", "02", "0b" + "CONTROLLER".encode().hex(), "08" + "broker3".encode().hex(),
             "2396", "00", "00",                                # nodes: 3 → CONTROLLER broker3:9110
             "00")
    q = m.decode_describe_quorum_response(body, 2)
    assert (q.leader_id, q.leader_epoch, q.high_watermark) == (3, 11, 200)
    assert [(v.replica_id, v.log_end_offset) for v in q.voters] == [(3, 200)]
    assert [(o.replica_id, o.log_end_offset, o.last_caught_up_timestamp) for o in q.observers] == \
        [(4, 199, 0x18B00000002)]


def test_describe_quorum_top_level_error():
    body = h("0029", "01", "00")                                # NOT_CONTROLLER, no topics, tags (v0/v1)
    q = m.decode_describe_quorum_response(body, 1)
    assert q.error == "NOT_CONTROLLER" and q.leader_id == -1 and q.voters == []


def test_describe_quorum_error_message_v2():
    body = h("0023", "06" + "nope!".encode().hex(), "01", "01", "00")
    q = m.decode_describe_quorum_response(body, 2)
    assert (q.error, q.error_message) == ("UNSUPPORTED_VERSION", "nope!")


def test_error_names():
    assert hdr.error_name(0) is None
    assert hdr.error_name(6) == "NOT_LEADER_OR_FOLLOWER"
    assert hdr.error_name(9999) == "ERROR_9999"


# -- ListPartitionReassignments (key 46, v0, flexible) ------------------------------------------
def test_list_partition_reassignments_requests():
    assert a.encode_list_partition_reassignments_request(0, 3, CLIENT, None, 10000) == h(
        "002e 0000 00000003 0002 6b63 00",                     # key 46, v0, header v2
        "00002710",                                            # TimeoutMs 10000
        "00",                                                  # null topics: everything
        "00")
    assert a.encode_list_partition_reassignments_request(0, 3, CLIENT, {"t": [0, 2]}, 500) == h(
        "002e 0000 00000003 0002 6b63 00", "000001f4",
        "02", "02 74", "03 00000000 00000002", "00",           # topic "t", partitions [0, 2], tags
        "00")


def test_list_partition_reassignments_response():
    body = h("00000000", "0000", "00",                         # throttle, no error, null message
             "02", "02 74",                                    # topic "t"
             "02", "00000001", "05 00000001 00000002 00000003 00000004",  # p1: replicas [1,2,3,4]
             "02 00000004", "02 00000001", "00",               # adding [4], removing [1], tags
             "00",                                             # topic tags
             "00")
    res = a.decode_list_partition_reassignments_response(body, 0)
    assert res.error is None and res.error_message is None
    (o,) = res.partitions
    assert (o.topic, o.partition, o.replicas, o.adding_replicas, o.removing_replicas) == \
        ("t", 1, [1, 2, 3, 4], [4], [1])


def test_list_partition_reassignments_not_controller():
    body = h("00000000", "0029", "05" + b"nope".hex(), "01", "00")
    res = a.decode_list_partition_reassignments_response(body, 0)
    assert (res.error, res.error_message, res.partitions) == ("NOT_CONTROLLER", "nope", [])


# -- AlterPartitionReassignments (key 45, v0, flexible) -----------------------------------------
def test_alter_partition_reassignments_request():
    assert a.encode_alter_partition_reassignments_request(0, 5, CLIENT, {("t", 2): [4, 1], ("t", 0): None}, 30000) == h(
        "002d 0000 00000005 0002 6b63 00",                     # key 45, v0, header v2
        "00007530",                                            # TimeoutMs 30000
        "02", "02 74",                                         # one topic "t"
        "03", "00000000 00", "00",                             # p0: null replicas (cancel), tags
        "00000002 03 00000004 00000001", "00",                 # p2: [4, 1], tags
        "00",                                                  # topic tags
        "00")


def test_alter_partition_reassignments_response():
    body = h("00000000", "0000", "00",                         # throttle, no error, null message
             "02", "02 74",                                    # topic "t"
             "03", "00000000 0000 00 00",                      # p0: no error
             "00000002 0027 05" + b"nope".hex() + " 00",       # p2: INVALID_REPLICA_ASSIGNMENT "nope"
             "00", "00")
    res = a.decode_alter_partition_reassignments_response(body, 0)
    assert (res.error, res.error_message) == (None, None)
    assert res.partitions == {("t", 0): (None, None), ("t", 2): ("INVALID_REPLICA_ASSIGNMENT", "nope")}
    top = a.decode_alter_partition_reassignments_response(h("00000000", "0029", "00", "01", "00"), 0)
    assert (top.error, top.partitions) == ("NOT_CONTROLLER", {})


# -- DescribeTopicPartitions (key 75, v0, flexible) ---------------------------------------------
def test_describe_topic_partitions_requests():
    assert m.encode_describe_topic_partitions_request(0, 4, CLIENT, ["t"], 2000, None) == h(
        "004b 0000 00000004 0002 6b63 00",                     # key 75, v0, header v2
        "02", "02 74 00",                                      # topics ["t"]
        "000007d0",                                            # ResponsePartitionLimit 2000
        "ff",                                                  # null cursor
        "00")
    assert m.encode_describe_topic_partitions_request(0, 4, CLIENT, None, 1, ("t", 1)) == h(
        "004b 0000 00000004 0002 6b63 00",
        "01",                                                  # no topics: all of them
        "00000001",
        "01", "02 74", "00000001", "00",                       # cursor present: "t", partition 1, tags
        "00")
    with pytest.raises(ValueError, match="partition_limit"):
        m.encode_describe_topic_partitions_request(0, 4, CLIENT, None, 0)


def _dtp_partition(idx: int, elr: str, last: str) -> str:
    return ("0000" + f"{idx:08x}" + "00000002" + "00000006"   # no error, leader 2, epoch 6
            + "04 00000001 00000002 00000003" + "02 00000002"  # replicas [1,2,3], isr [2]
            + elr + last + "01" + "00")                        # ELR, last-known ELR, offline [], tags


def test_describe_topic_partitions_response_with_elr_and_cursor():
    body = h("00000000",
             "02", "0000", "02 74", UUID_T, "00",              # topic "t", id, not internal
             "03", _dtp_partition(0, "02 00000003", "00"),     # p0: ELR [3], last-known ELR null
             _dtp_partition(1, "00", "02 00000001"),           # p1: ELR null, last-known [1]
             "80000000", "00",                                 # authorized ops, topic tags
             "01", "02 74", "00000002", "00",                  # next cursor: t-2
             "00")
    res = m.decode_describe_topic_partitions_response(body, 0)
    (t,) = res.topics
    assert (t.name, t.topic_id) == ("t", bytes.fromhex(UUID_T))
    p0, p1 = t.partitions
    assert (p0.leader, p0.leader_epoch, p0.isr, p0.eligible_leader_replicas, p0.last_known_elr) == \
        (2, 6, [2], [3], None)
    assert (p1.eligible_leader_replicas, p1.last_known_elr) == (None, [1])
    assert res.next_cursor == ("t", 2)


def test_describe_topic_partitions_last_page():
    body = h("00000000", "01", "ff", "00")                     # no topics, null cursor
    res = m.decode_describe_topic_partitions_response(body, 0)
    assert res.topics == [] and res.next_cursor is None


# -- DescribeLogDirs (DescribeLogDirsRequest.json / DescribeLogDirsResponse.json) -------------------
def test_describe_log_dirs_requests():
    # v1: int16 strings / int32 arrays; null topics = every replica
    assert a.encode_describe_log_dirs_request(1, 7, CLIENT, None) == h(
        "0023 0001 00000007 0002 6b63", "ffffffff")
    # v4: flexible header (client id stays int16-prefixed, then an empty tag section), compact arrays
    assert a.encode_describe_log_dirs_request(4, 7, CLIENT, {"t": [0, 2]}) == h(
        "0023 0004 00000007 0002 6b63 00", "02", "02 74", "03 00000000 00000002", "00", "00")


def test_describe_log_dirs_response_v4_keeps_current_logs_apart_from_future_ones():
    part = lambda idx, size, future: h(f"{idx:08x}", f"{size:016x}", "0000000000000000", "01" if future else "00", "00")
    body = h("00000000", "0000",                                # throttle, top-level error
             "02",                                              # one result
             "0000", "05 2f642f6c",                             # no error, "/d/l"
             "02", "02 74", "03") + part(0, 512, False) + part(2, 0, True) + h("00",   # topic t: 0 current, 2 future
             "ffffffffffffffff", "0000000000001000", "00",      # total, usable bytes, result tags
             "00")                                              # response tags
    res = a.decode_describe_log_dirs_response(body, 4)
    assert res.error is None and res.dirs[0].path == "/d/l" and res.dirs[0].error is None
    assert res.dirs[0].partitions == {("t", 0): 512} and res.dirs[0].future == {("t", 2)}
    assert res.hosted() == {("t", 0)}


def test_describe_log_dirs_response_v1_reports_a_log_dir_error():
    body = h("00000000", "00000001", "0009", "0002 2f64", "00000000")   # one dir "/d", error 9, no topics
    res = a.decode_describe_log_dirs_response(body, 1)
    assert res.error is None
    assert res.dirs[0].error == "REPLICA_NOT_AVAILABLE" and res.hosted() == set()
