"""AlterPartitionReassignments through the protocol client and admin_ops.alter_reassignments: the
request reaches the ZooKeeper-mode controller (a broker that is not answers NOT_CONTROLLER), and a
per-partition refusal comes back as the controller's error (against scripted servers on 127.0.0.1;
the real controllers: reassignment.target_down on ZooKeeper mode and KRaft)."""

from __future__ import annotations

import struct
from types import SimpleNamespace

import pytest
from scripted_server import ScriptedServer, h

from harness.cluster import admin_ops as ao
from harness.protocol.endpoint import loopback
from harness.protocol import ProtocolClient

APIS = "04" "0003 0000 000c 00" "0012 0000 0003 00" "002d 0000 0000 00" "00000000" "00"


def _server(node_id: int, controller: int, asked: list) -> ScriptedServer:
    """Metadata names ``controller``; AlterPartitionReassignments answers NOT_CONTROLLER unless this
    broker is it, which refuses t-2 (INVALID_REPLICA_ASSIGNMENT) and accepts t-0."""
    def answer(key, ver, cid):
        c = struct.pack(">i", cid) + (b"" if key == 18 else b"\x00")
        if key == 18:
            return c + h("0000", APIS)
        if key == 3:
            return c + h("00000000", "02", f"{node_id:08x}", "0a" + b"127.0.0.1".hex(), "00002382", "00", "00",
                         "00", f"{controller:08x}", "01", "00")
        asked.append(node_id)
        if node_id != controller:
            return c + h("00000000", "0029", "00", "01", "00")
        return c + h("00000000", "0000", "00", "02", "02 74", "03", "00000000 0000 00 00",
                     "00000002 0027 05" + b"nope".hex() + " 00", "00", "00")
    return ScriptedServer(answer)


def test_client_round_trip(servers):
    asked: list = []
    servers.append(_server(1, controller=1, asked=asked))
    with ProtocolClient(port=servers[0].port, timeout=3) as c:
        res = c.alter_partition_reassignments({("t", 0): [1, 2], ("t", 2): [9, 1]})
    assert res.error is None
    assert res.partitions == {("t", 0): (None, None), ("t", 2): ("INVALID_REPLICA_ASSIGNMENT", "nope")}


def test_admin_ops_asks_the_controller_and_returns_refusals(servers):
    asked: list = []
    servers.extend([_server(1, controller=2, asked=asked), _server(2, controller=2, asked=asked)])
    cluster = SimpleNamespace(broker_ids=[1, 2], registered_brokers=lambda: {1, 2},
                              brokers={1: SimpleNamespace(endpoint=loopback(servers[0].port)),
                                       2: SimpleNamespace(endpoint=loopback(servers[1].port))})
    out = ao.alter_reassignments(cluster, {("t", 0): [1, 2], ("t", 2): [9, 1]}, timeout_s=3)
    assert asked == [1, 2]
    assert out == {("t", 0): (None, None), ("t", 2): ("INVALID_REPLICA_ASSIGNMENT", "nope")}
    with pytest.raises(ao.ReassignmentRefused, match="t-2: INVALID_REPLICA_ASSIGNMENT") as e:
        ao.alter_reassignment(cluster, "t", 2, [9, 1], timeout_s=3)
    assert e.value.error == "INVALID_REPLICA_ASSIGNMENT"
    ao.alter_reassignment(cluster, "t", 0, [1, 2], timeout_s=3)          # accepted: no error
    with pytest.raises(ao.AdminOpError, match="distinct"):
        ao.alter_reassignments(cluster, {("t", 0): [1, 1]})
