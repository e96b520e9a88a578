"""The protocol client's framing, version negotiation, timeouts and error reporting, against a
scripted TCP server on 127.0.0.1 (a unit test of the client; the real broker is exercised in
tests/integration/test_kraft.py)."""

from __future__ import annotations

import socket
import struct

import pytest
from scripted_server import ScriptedServer, h

from harness.protocol import ProtocolClient, ProtocolError, UnsupportedApi, first_answer
from harness.protocol import header as hdr
from harness.protocol.endpoint import Endpoint, join, loopback, parse, permit
from harness.protocol import messages as m


APIS_V3 = "04" "0003 0000 000c 00" "0012 0000 0003 00" "0037 0000 0002 00" "00000000" "00"


def _api_versions(cid: int, apis: str = APIS_V3) -> bytes:
    return struct.pack(">i", cid) + h("0000", apis)          # header v0 even for v3


def _metadata_v12(cid: int) -> bytes:
    return struct.pack(">i", cid) + h(
        "00",                                                   # header v1 tags
        "00000000", "02", "00000001", "0a" + b"127.0.0.1".hex(), "00002382", "00", "00",
        "01", "00000001", "01", "00")                           # null cluster id, controller 1, no topics


@pytest.fixture
def server():
    made = []

    def make(answer):
        s = ScriptedServer(answer)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


def test_negotiates_highest_common_version_and_decodes(server):
    def answer(key, ver, cid):
        return _api_versions(cid) if key == 18 else _metadata_v12(cid)

    s = server(answer)
    with ProtocolClient(port=s.port, timeout=3) as c:
        md = c.metadata([])
        assert [b.node_id for b in md.brokers] == [1] and md.controller_id == 1 and md.version == 12
        c.metadata([])          # ApiVersions asked once per connection
    assert [(k, v) for k, v, _ in s.requests] == [(18, 3), (3, 12), (3, 12)]
    assert len({cid for _, _, cid in s.requests}) == 3       # a fresh correlation id per request


def test_old_broker_without_describe_quorum_is_unsupported(server):
    apis = "02" "0003 0000 0008 00" "00000000" "00"               # only Metadata 0-8 (a 2.x broker)
    s = server(lambda key, ver, cid: _api_versions(cid, apis))
    with ProtocolClient(port=s.port, timeout=3) as c:
        assert not c.supports_describe_quorum()
        with pytest.raises(UnsupportedApi, match="DescribeQuorum"):
            c.describe_quorum()


def test_api_versions_fallback_when_v3_is_unknown(server):
    def answer(key, ver, cid):
        if ver == 3:   # UNSUPPORTED_VERSION, v0 layout, advertising ApiVersions 0-2 and Metadata 0-9
            return struct.pack(">i", cid) + h("0023", "00000002", "0012 0000 0002", "0003 0000 0009")
        return struct.pack(">i", cid) + h("0000", "00000002", "0012 0000 0002", "0003 0000 0009", "00000000")

    s = server(answer)
    with ProtocolClient(port=s.port, timeout=3) as c:
        assert c.api_versions().versions == {18: (0, 2), 3: (0, 9)}
    assert [(k, v) for k, v, _ in s.requests] == [(18, 3), (18, 2)]


def test_silent_broker_times_out_with_a_clear_error(server):
    s = server(lambda key, ver, cid: None)
    with ProtocolClient(port=s.port, timeout=0.5) as c:
        with pytest.raises(ProtocolError, match=rf"127.0.0.1:{s.port}: ApiVersions v3: timed out"):
            c.api_versions()


def test_wrong_correlation_id_is_rejected(server):
    s = server(lambda key, ver, cid: _api_versions(cid + 1))
    with ProtocolClient(port=s.port, timeout=3) as c:
        with pytest.raises(ProtocolError, match="correlation id"):
            c.api_versions()


def test_garbage_response_is_a_protocol_error(server):
    s = server(lambda key, ver, cid: _api_versions(cid) if key == 18 else struct.pack(">i", cid) + b"\x00\x01")
    with ProtocolClient(port=s.port, timeout=3) as c:
        with pytest.raises(ProtocolError, match="Metadata v12: truncated"):
            c.metadata()


def test_refused_connection_and_first_answer(server):
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    dead_port = closed.getsockname()[1]
    closed.close()
    with pytest.raises(ProtocolError, match="cannot connect"):
        ProtocolClient(port=dead_port, timeout=1).api_versions()
    s = server(lambda key, ver, cid: _api_versions(cid) if key == 18 else _metadata_v12(cid))
    ep, md = first_answer([loopback(dead_port), loopback(s.port)], lambda c: c.metadata([]), timeout=2)
    assert ep == Endpoint("127.0.0.1", s.port) and md.controller_id == 1
    with pytest.raises(ProtocolError, match="cannot connect"):
        first_answer([loopback(dead_port)], lambda c: c.metadata([]), timeout=1)


def test_only_loopback_and_nodes_file_hosts_are_allowed():
    with pytest.raises(ValueError, match="loopback addresses and the hosts a nodes file names, not '10.0.0.1'"):
        ProtocolClient("10.0.0.1", 9092)
    with pytest.raises(ValueError, match="loopback"):
        ProtocolClient("example.com", 9092)
    ProtocolClient("localhost", 9092)
    ProtocolClient("127.0.0.2", 9092)
    # a host a nodes file names (harness/remote/nodes_file.load permits its endpoints' hosts)
    with pytest.raises(ValueError, match="loopback"):
        ProtocolClient.at(Endpoint("192.0.2.201", 9092))
    permit(["192.0.2.201"])
    c = ProtocolClient.at(Endpoint("192.0.2.201", 9092))
    assert c.endpoint == Endpoint("192.0.2.201", 9092) and repr(c) == "ProtocolClient(192.0.2.201:9092)"
    with pytest.raises(ValueError, match="192.0.2.202"):
        ProtocolClient("192.0.2.202", 9092)


def test_endpoint_text():
    assert str(Endpoint("10.0.0.5", 9092)) == "10.0.0.5:9092" and str(Endpoint("::1", 9)) == "[::1]:9"
    assert parse(" 10.0.0.5:9092") == Endpoint("10.0.0.5", 9092) and parse("[::1]:9") == Endpoint("::1", 9)
    assert join([loopback(1), Endpoint("h", 2)]) == "127.0.0.1:1,h:2"
    assert loopback(5).is_loopback and not Endpoint("10.0.0.5", 1).is_loopback
    for bad in ("10.0.0.5", ":9092", "h:0", "h:70000", "h:x"):
        with pytest.raises(ValueError, match="not HOST:PORT"):
            parse(bad)


def test_describe_quorum_round_trip(server):
    name = "13" + b"__cluster_metadata".hex()

    def answer(key, ver, cid):
        if key == 18:
            return _api_versions(cid)
        assert (key, ver) == (55, 2)
        return struct.pack(">i", cid) + h(
            "00", "0000", "00", "02", name, "02", "00000000 0000 00", "00000001 00000004 0000000000000010",
            "02", "00000001", "00" * 16, "0000000000000010", "ffffffffffffffff", "0000000000000000", "00",
            "01", "00", "00", "01", "00")

    s = server(answer)
    with ProtocolClient(port=s.port, timeout=3) as c:
        q = c.describe_quorum()
    assert (q.leader_id, q.leader_epoch, q.high_watermark) == (1, 4, 16)
    assert [(v.replica_id, v.log_end_offset) for v in q.voters] == [(1, 16)]
    assert hdr.response_header_flexible(55, 0) and not hdr.response_header_flexible(18, 3)


def test_describe_topic_partitions_follows_the_cursor(server):
    apis = "03" "0012 0000 0003 00" "004b 0000 0000 00" "00000000" "00"
    pages = []

    def answer(key, ver, cid):
        c = struct.pack(">i", cid)
        if key == 18:
            return c + h("0000", apis)
        pages.append(cid)
        part = lambda i: "0000" + f"{i:08x}" + "00000001 00000000" + "02 00000001" * 2 + "00 00 01 00"
        if len(pages) == 1:   # first page: partition 0, cursor → t-1
            return c + h("00", "00000000", "02", "0000 02 74", "11" * 16, "00", "02", part(0), "80000000 00",
                         "01 02 74 00000001 00", "00")
        return c + h("00", "00000000", "02", "0000 02 74", "11" * 16, "00", "02", part(1), "80000000 00", "ff", "00")

    s = server(answer)
    with ProtocolClient(port=s.port, timeout=3) as c:
        (t,) = c.describe_topic_partitions(["t"], partition_limit=1)
    assert [p.partition for p in t.partitions] == [0, 1] and len(pages) == 2


def test_describe_topic_partitions_cursor_that_does_not_advance(server):
    apis = "03" "0012 0000 0003 00" "004b 0000 0000 00" "00000000" "00"

    def answer(key, ver, cid):
        c = struct.pack(">i", cid)
        if key == 18:
            return c + h("0000", apis)
        return c + h("00", "00000000", "01", "01 02 74 00000001 00", "00")

    s = server(answer)
    with ProtocolClient(port=s.port, timeout=3) as c:
        with pytest.raises(ProtocolError, match="did not advance"):
            c.describe_topic_partitions()


def test_list_partition_reassignments_round_trip(server):
    def answer(key, ver, cid):
        c = struct.pack(">i", cid)
        if key == 18:
            return c + h("0000", "03", "0012 0000 0003 00", "002e 0000 0000 00", "00000000", "00")
        return c + h("00", "00000000", "0000", "00", "02", "02 74", "02", "00000000",
                     "03 00000001 00000002", "02 00000002", "01", "00", "00", "00")

    s = server(answer)
    with ProtocolClient(port=s.port, timeout=3) as c:
        res = c.list_partition_reassignments()
    assert [(o.topic, o.partition, o.replicas, o.adding_replicas, o.removing_replicas) for o in res.partitions] == \
        [("t", 0, [1, 2], [2], [])]
