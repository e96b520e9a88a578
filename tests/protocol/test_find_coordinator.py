"""FindCoordinator (key 10): request layouts v1-v6 and response decoding, and the round trip through
the client against a scripted server (the real brokers answer it in tests/integration and in every
transactions.* / groups.* run, whose coordinator faults resolve with it)."""

from __future__ import annotations

import struct

from scripted_server import ScriptedServer

from harness.protocol import ProtocolClient
from harness.protocol import messages as m
from harness.protocol.endpoint import loopback
from harness.protocol.wire import Reader, Writer


def _req_body(version: int, key: str, key_type: int):
    r = Reader(m.encode_find_coordinator_request(version, 7, "kc", key, key_type))
    assert (r.int16(), r.int16(), r.int32()) == (10, version, 7)
    r.string(False)                                    # client id keeps its int16 length
    if version >= 3:
        r.tagged_fields()
    if version <= 3:
        got = (r.string(version >= 3), r.int8())
    else:
        kt = r.int8()
        got = (r.array(lambda rr: rr.string(True), True), kt)
    if version >= 3:
        r.tagged_fields()
    r.expect_end("request")
    return got


def test_request_layouts():
    assert _req_body(1, "kc-tx-txn", 1) == ("kc-tx-txn", 1)
    assert _req_body(3, "g", 0) == ("g", 0)
    assert _req_body(4, "kc-tx-txn", 1) == (["kc-tx-txn"], 1)
    assert _req_body(6, "g", 0) == (["g"], 0)


def _resp(version: int, entries: list[tuple]) -> bytes:
    w = Writer().int32(0)
    if version <= 3:
        key, node, host, port, err = entries[0]
        flex = version >= 3
        w.int16(err).string(None, compact=flex).int32(node).string(host, compact=flex).int32(port)
        if flex:
            w.empty_tagged_fields()
        return w.bytes()

    def one(ww, e):
        key, node, host, port, err = e
        ww.string(key, compact=True).int32(node).string(host, compact=True).int32(port).int16(err)
        ww.string(None, compact=True).empty_tagged_fields()
    w.array(entries, one, compact=True).empty_tagged_fields()
    return w.bytes()


def test_response_decoding():
    c = m.decode_find_coordinator_response(_resp(1, [("g", 2, "b2", 9092, 0)]), 1, "g", 0)
    assert (c.node_id, c.host, c.port, c.error) == (2, "b2", 9092, None)
    c = m.decode_find_coordinator_response(_resp(3, [("g", -1, "", -1, 15)]), 3, "g", 0)
    assert (c.node_id, c.error) == (-1, "COORDINATOR_NOT_AVAILABLE")
    c = m.decode_find_coordinator_response(_resp(4, [("a", 1, "b1", 1, 0), ("t", 3, "b3", 2, 0)]), 4, "t", 1)
    assert (c.key, c.node_id, c.key_type) == ("t", 3, 1)
    c = m.decode_find_coordinator_response(_resp(5, [("t", -1, "", -1, 14)]), 5, "t", 1)
    assert c.error == "COORDINATOR_LOAD_IN_PROGRESS"


def test_round_trip_negotiates_the_version():
    apis = "03" "0012 0000 0003 00" "000a 0000 0004 00" "00000000" "00"     # ApiVersions v3, FindCoordinator v0-v4

    def answer(key, ver, cid):
        if key == 18:
            return struct.pack(">i", cid) + bytes.fromhex("0000" + apis)
        assert (key, ver) == (10, 4)
        return struct.pack(">i", cid) + b"\x00" + _resp(4, [("kc-tx-txn", 3, "broker3", 9092, 0)])

    s = ScriptedServer(answer)
    try:
        with ProtocolClient(port=s.port, timeout=3) as c:
            got = c.find_coordinator("kc-tx-txn", "transaction")
        assert (got.node_id, got.key_type, got.version, got.error) == (3, 1, 4, None)
    finally:
        s.close()


def test_cluster_coordinator_skips_error_answers_and_asks_last_ones_last():
    from harness.cluster.cluster import Cluster

    def server(node, err):
        def answer(key, ver, cid):
            if key == 18:
                return struct.pack(">i", cid) + bytes.fromhex(
                    "0000" "03" "0012 0000 0003 00" "000a 0000 0004 00" "00000000" "00")
            return struct.pack(">i", cid) + b"\x00" + _resp(4, [("tx", node, "h", 1, err)])
        return ScriptedServer(answer)

    down, up = server(-1, 15), server(2, 0)
    try:
        class Fake:
            def _protocol_endpoints(self, last=()):
                eps = [loopback(down.port), loopback(up.port)]
                return [p for p in eps if p not in last] + [p for p in eps if p in last]
        ep, info = Cluster.coordinator(Fake(), "tx", "transaction")
        assert (ep, info.node_id) == (loopback(up.port), 2)
        class OnlyDown(Fake):
            def _protocol_endpoints(self, last=()):
                return [loopback(down.port)]
        assert Cluster.coordinator(OnlyDown(), "tx", "transaction")[1].error == "COORDINATOR_NOT_AVAILABLE"
    finally:
        down.close()
        up.close()
