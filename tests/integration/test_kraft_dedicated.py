"""A real KRaft cluster with a dedicated controller quorum (``apache-kraft-dedicated``: 3 controller-only
nodes 101-103 and broker-only nodes): the layout starts, brokers answer DescribeQuorum by forwarding it
to the active controller, the ``controller`` fault target is that controller-only node, and killing it
elects another one while the brokers keep their partitions; the healed node rejoins the quorum.

Bounded to about 90 s on a quiet host (2 brokers + 3 controllers: ~25-40 s to start).
"""

from __future__ import annotations

import random
import time

import pytest

from harness.cluster.cluster import Cluster, ClusterSpec
from harness.errors import HarnessError
from harness.nemesis.fault_base import Context
from harness.nemesis.faults import start_node
from harness.nemesis.targets import resolve
from harness.observer.protocol_view import ProtocolView
from harness.protocol import ProtocolClient

pytestmark = pytest.mark.docker


def _wait(what: str, predicate, timeout_s: float = 60.0):
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
        except HarnessError as e:
            last = e
        else:
            if last:
                return last
        time.sleep(0.5)
    pytest.fail(f"timed out after {timeout_s:.0f} s waiting for {what} (last: {last!r})")


def test_dedicated_quorum_survives_killing_the_active_controller(kc_docker, request):
    version = request.config.getoption("kc_kafka_version") or "4.1.2"
    spec = ClusterSpec(brokers=2, distribution="apache-kraft-dedicated", kafka_version=version,
                       name=f"dd{random.randrange(10**6)}")
    with Cluster(spec) as cl:
        assert cl.broker_ids == [1, 2] and [c.node_id for c in cl.controllers] == [101, 102, 103]
        assert {c.container.labels["kafka-chaos.role"] for c in cl.controllers} == {"controller"}
        env = dict(e.split("=", 1) for e in cl.controllers[0].container.attrs["Config"]["Env"])
        assert "process.roles=controller" in env["KC_CONFIG"] and "advertised.listeners" not in env["KC_CONFIG"]
        # the brokers forward DescribeQuorum: the quorum is the three controllers, the brokers observe it
        q = cl.quorum()
        assert q.error is None and q.leader_id in (101, 102, 103)
        assert sorted(v.replica_id for v in q.voters) == [101, 102, 103]
        assert sorted(o.replica_id for o in q.observers) == [1, 2]
        assert cl.registered_brokers() == {1, 2}
        cl.create_topic("dd", partitions=2, replication_factor=2)
        view = ProtocolView(cl)
        before = {p: (view.leader("dd", p), view.partition_state("dd", p)["leader_epoch"]) for p in (0, 1)}

        (victim,) = resolve("controller", cl, view, random.Random(0))
        assert victim.role == "controller" and victim.node_id == q.leader_id
        victim.kill()
        new = _wait("another controller", lambda: (cl.active_controller() or victim.node_id) != victim.node_id
                    and cl.active_controller(), 45)
        assert new in (101, 102, 103) and cl.quorum().leader_epoch > q.leader_epoch
        # a controller failover alone moves no partition (the brokers all live)
        assert {p: (view.leader("dd", p), view.partition_state("dd", p)["leader_epoch"]) for p in (0, 1)} == before

        start_node(Context(cl, None, random.Random(0)), victim, wait=True, timeout_s=60)
        assert victim.status() == "running" and victim.started()
        assert cl.quorum().leader_id == new          # it rejoined as a follower (start_node waited for its catch-up)
        with ProtocolClient("127.0.0.1", victim.host_port, timeout=5) as c:   # its published CONTROLLER port
            assert c.describe_quorum().error in (None, "NOT_LEADER_OR_FOLLOWER")
    assert not [c for c in kc_docker.containers.list(all=True) if c.name.startswith(f"kc-{spec.name}-")]
