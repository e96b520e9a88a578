"""harness.cluster.admin_ops and harness.cluster.admin_tool: reassignment through Kafka's tool (run in a broker
container) and the znode, cancel, throttles and preferred election on a real 4-broker cluster
(``-m docker``), plus the pure parts (plans, tool output parsing, version switch). The protocol path
(host-side, no exec) is tests/integration/test_admin_protocol.py.

    python -m pytest tests/integration/test_admin_ops.py -x            # all (starts one cluster)
    python -m pytest tests/integration/test_admin_ops.py -m "not docker"   # pure parts only
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from harness.cluster import admin_ops as ao
from harness.cluster import admin_tool as at
from waiting import wait_for  # noqa: E402  (tests/integration is on sys.path)


# ---------------------------------------------------------------------------- pure parts
def test_parse_verify_both_wordings():
    out = ("Status of partition reassignment:\n"
           "Reassignment of partition t-0 is completed.\n"         # 3.7+
           "Reassignment of partition t-1 is complete.\n"          # up to 3.6
           "Reassignment of partition my-topic-12 is still in progress.\n"
           "There is no active reassignment of partition t-3, but replica set is 1,2 rather than 2,1.\n"
           "Clearing broker-level throttles on brokers 1,2,3\n")
    assert at.parse_verify(out) == {("t", 0): "complete", ("t", 1): "complete",
                                    ("my-topic", 12): "in_progress", ("t", 3): "mismatch"}


def test_make_plan_round_trip_and_rejections():
    plan = ao.make_plan({("b", 1): [3, 4], ("a", 0): [1, 2, 3]})
    assert plan == {"version": 1, "partitions": [{"topic": "a", "partition": 0, "replicas": [1, 2, 3]},
                                                 {"topic": "b", "partition": 1, "replicas": [3, 4]}]}
    assert ao.plan_targets(plan) == {("a", 0): [1, 2, 3], ("b", 1): [3, 4]}
    assert ao.action_params(plan, via="tool")["partitions"][0] == {"topic": "a", "partition": 0, "replicas": [1, 2, 3]}
    for bad, why in (({}, "at least one"), ({("a", 0): []}, "non-empty"), ({("a", 0): [1, 1]}, "distinct"),
                     ({("a", 0): [-1]}, ">= 0")):
        with pytest.raises(ao.AdminOpError, match=why):
            ao.make_plan(bad)
    with pytest.raises(ao.AdminOpError, match="not a reassignment plan"):
        ao.plan_targets({"partitions": [{"topic": "a"}]})


def test_tool_class_and_version_gates():
    def cl(v):
        return SimpleNamespace(image=SimpleNamespace(kafka_version=v))
    assert at.tool_class(cl("3.9.2"), "reassign") == "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
    assert at.tool_class(cl("3.6.2"), "reassign") == "kafka.admin.ReassignPartitionsCommand"
    assert at.tool_class(cl("2.8.2"), "elect") == "kafka.admin.LeaderElectionCommand"
    assert at.tool_class(cl("3.7.0"), "elect") == "org.apache.kafka.tools.LeaderElectionCommand"
    with pytest.raises(ao.AdminOpError, match="unknown tool"):
        at.tool_class(cl("3.9.2"), "nope")
    with pytest.raises(ao.AdminOpError, match="needs Kafka 2.6"):
        ao.require_version(cl("2.5.1"), (2, 6), "--cancel")
    ao.require_version(cl("2.8.2"), (2, 6), "--cancel")
    assert ao.supports_reassign_znode(cl("3.9.2")) and not ao.supports_reassign_znode(cl("4.0.0"))
    assert ao.by_name({("t", 0): 1, "x": 2}) == {"t-0": 1, "x": 2}


# ---------------------------------------------------------------------------- real cluster
@pytest.fixture(scope="module")
def cluster(kc_image):
    from harness.cluster.cluster import Cluster, ClusterSpec
    # small replica fetches: a throttled follower gets one batch per quota window, not 1 MB
    cl = Cluster(ClusterSpec(brokers=4, image=kc_image.tag, distribution="apache-zk", broker_config={"replica.fetch.max.bytes": "16384"}))
    cl.start()
    yield cl
    cl.remove()


def _wait(pred, timeout, what):
    return wait_for(pred, timeout, what, interval=0.5)


@pytest.mark.docker
def test_kraft_cluster_zookeeper_helpers_name_the_substitute(kc_image):
    """On a KRaft cluster (no ZooKeeper) topic_assignment works over the protocol, and every
    ZooKeeper-only helper says which part is missing and which helper to use instead.

    Placed before the first test of the module cluster, with its own cluster removed at its end, so
    only one cluster of this module exists at a time."""
    from harness.cluster.cluster import Cluster, ClusterSpec
    from harness.errors import NotSupported
    from harness.runner import classify_exception
    cl = Cluster(ClusterSpec(brokers=3, distribution="apache-kraft", image=kc_image.tag, startup_timeout_s=240))
    try:
        cl.start()
        assert not ao.supports_reassign_znode(cl)
        plan = ao.make_plan({("kr-ops", 0): [3, 2]})
        for call, helper, instead in [
                (lambda: ao.write_reassign_znode(cl, plan), "write_reassign_znode", "admin_ops.reassign_execute"),
                (lambda: ao.reassign_znode(cl), "reassign_znode", "admin_ops.reassign_list"),
                (lambda: ao.last_zxid(cl), "last_zxid", "cluster.protocol_metadata()"),
                (lambda: ao.zk_writes_since(cl, 0), "zk_writes_since", "admin_ops.topic_assignment")]:
            with pytest.raises(NotSupported) as ei:
                call()
            msg = str(ei.value)
            assert msg.startswith(f"admin_ops.{helper} needs ZooKeeper; this cluster (apache-kraft) has none: use ")
            assert instead in msg, msg
            assert classify_exception(ei.value) == "script"       # the scenario's mistake, not the environment

        assert ao.topic_assignment(cl, "kr-absent") == {}
        cl.create_topic("kr-ops", assignment={0: [1, 2], 1: [2, 3]})
        assert ao.topic_assignment(cl, "kr-ops") == {0: ([1, 2], [], []), 1: ([2, 3], [], [])}
        ao.reassign_execute(cl, plan)
        _wait(lambda: ao.topic_assignment(cl, "kr-ops")[0] == ([3, 2], [], []), 90, "kr-ops-0 moved to [3, 2]")
        assert ao.topic_assignment(cl, "kr-ops")[1] == ([2, 3], [], [])
    finally:
        cl.remove()


def _state(cluster, topic, p=0):
    import json
    data, _ = cluster.zk().get(f"/brokers/topics/{topic}/partitions/{p}/state")
    return json.loads(data)


def _preload(cluster, topic, mb):
    from confluent_kafka import Producer
    pr = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 50,
                   "batch.size": 16384})
    for _ in range(mb * 100):
        pr.produce(topic, b"x" * 10_000, partition=0)
        pr.poll(0)
    assert pr.flush(60) == 0


def _broker_throttle(cluster, b):
    from confluent_kafka.admin import ConfigResource, ResourceType
    res = ConfigResource(ResourceType.BROKER, str(b))
    cfg = cluster.admin().describe_configs([res])[res].result(timeout=30)
    return {k: cfg[k].value for k in ao.THROTTLE_KEYS if k in cfg}


@pytest.mark.docker
def test_generate_execute_verify(cluster):
    cluster.create_topic("ops-move", assignment={0: [1, 2, 3]})
    current, proposed = at.reassign_generate(cluster, ["ops-move"], [1, 2, 3, 4])
    assert ao.plan_targets(current) == {("ops-move", 0): [1, 2, 3]}
    prop = ao.plan_targets(proposed)[("ops-move", 0)]
    assert len(set(prop)) == 3 and set(prop) <= {1, 2, 3, 4}
    plan = ao.make_plan({("ops-move", 0): [4, 2, 3]})
    out = at.reassign_execute(cluster, plan)
    assert "Successfully started" in out
    _wait(lambda: at.reassign_verify(cluster, plan) == {("ops-move", 0): "complete"}, 90, "verify: complete")
    assert ao.topic_assignment(cluster, "ops-move") == {0: ([4, 2, 3], [], [])}
    st = _state(cluster, "ops-move")
    assert st["leader"] == 4 and sorted(st["isr"]) == [2, 3, 4]       # 1 left: 4 = first of the target


@pytest.mark.docker
def test_rejected_reassignments(cluster):
    cluster.create_topic("ops-bad", assignment={0: [1, 2, 3]})
    with pytest.raises(ao.AdminOpError, match="(?i)broker|replica"):
        at.reassign_execute(cluster, ao.make_plan({("ops-bad", 0): [1, 2, 9]}))
    with pytest.raises(ao.AdminOpError, match="at least 1000"):
        at.reassign_execute(cluster, ao.make_plan({("ops-bad", 0): [1, 2, 4]}), throttle=10)
    with pytest.raises(ao.AdminOpError, match="cancel not confirmed"):
        at.reassign_cancel(cluster, ao.make_plan({("ops-bad", 0): [1, 2, 4]}))
    assert ao.topic_assignment(cluster, "ops-bad") == {0: ([1, 2, 3], [], [])}


@pytest.mark.docker
def test_reassign_through_znode(cluster):
    cluster.create_topic("ops-zk", assignment={0: [1, 2, 3]})
    marker = ao.last_zxid(cluster)
    ao.write_reassign_znode(cluster, ao.make_plan({("ops-zk", 0): [4, 1, 2]}))
    _wait(lambda: ao.topic_assignment(cluster, "ops-zk") == {0: ([4, 1, 2], [], [])}
          and ao.reassign_znode(cluster) is None, 90, "znode reassignment done and the znode deleted")
    evs = ao.zk_writes_since(cluster, marker, ("zk.topic", "zk.reassign_partitions"))
    assert evs[0]["type"] == "zk.reassign_partitions" and evs[0]["partitions"][0]["replicas"] == [4, 1, 2]
    firsts = [e for e in evs if e["type"] == "zk.topic" and e["topic"] == "ops-zk"]
    assert firsts[0]["partitions"]["0"] == [4, 1, 2, 3]                  # RS' = target ++ ORS (§7.1)
    assert firsts[0]["adding_replicas"] == {"0": [4]} and firsts[0]["removing_replicas"] == {"0": [3]}
    assert evs[-1]["type"] == "zk.reassign_partitions" and evs[-1]["partitions"] is None


@pytest.mark.docker
def test_throttled_reassignment_cancelled(cluster):
    cluster.create_topic("ops-cancel", assignment={0: [1, 2, 3]})
    _preload(cluster, "ops-cancel", 3)
    plan = ao.make_plan({("ops-cancel", 0): [4, 2, 3]})
    at.reassign_execute(cluster, plan, throttle=1000)
    # dynamic broker configs reach the broker through a ZooKeeper change notification: read until applied
    _wait(lambda: _broker_throttle(cluster, 4) == {k: "1000" for k in ao.THROTTLE_KEYS}, 30, "throttles set")
    time.sleep(3)
    assert at.reassign_verify(cluster, plan) == {("ops-cancel", 0): "in_progress"}
    assert "ops-cancel-0" in at.reassign_list(cluster)
    out = at.reassign_cancel(cluster, plan)
    assert "Successfully cancelled" in out
    # §7.8: ORS in target-first order: [4,2,3,1] without 4
    _wait(lambda: ao.topic_assignment(cluster, "ops-cancel") == {0: ([2, 3, 1], [], [])}, 30, "cancelled")
    _wait(lambda: _broker_throttle(cluster, 4) == {}, 30, "throttles cleared")   # the tool cleared them


@pytest.mark.docker
def test_throttle_set_and_clear(cluster):
    # dynamic broker configs reach the broker through a ZooKeeper change notification: read until applied
    ao.set_replication_throttle(cluster, 5000, [2, 3])
    want = {k: "5000" for k in ao.THROTTLE_KEYS}
    _wait(lambda: _broker_throttle(cluster, 2) == want and _broker_throttle(cluster, 3) == want, 30, "throttles set")
    ao.clear_replication_throttle(cluster, [2, 3])
    _wait(lambda: _broker_throttle(cluster, 2) == {} and _broker_throttle(cluster, 3) == {}, 30, "throttles cleared")


@pytest.mark.docker
def test_preferred_election_api_and_tool(cluster):
    cluster.create_topic("ops-elect", assignment={0: [1, 2, 3]})
    assert ao.elect_preferred(cluster, [("ops-elect", 0)]) == {("ops-elect", 0): "ELECTION_NOT_NEEDED"}
    # a reorder completes at once and keeps leader 1 (it is in the target, §7.5): 2 is now preferred
    ao.write_reassign_znode(cluster, ao.make_plan({("ops-elect", 0): [2, 1, 3]}))
    _wait(lambda: ao.reassign_znode(cluster) is None
          and ao.topic_assignment(cluster, "ops-elect") == {0: ([2, 1, 3], [], [])}, 60, "reorder")
    e0 = _state(cluster, "ops-elect")
    assert e0["leader"] == 1
    assert ao.elect_preferred(cluster, [("ops-elect", 0)]) == {("ops-elect", 0): None}
    st = _wait(lambda: (s := _state(cluster, "ops-elect"))["leader"] == 2 and s, 30, "leader 2")
    assert st["leader_epoch"] == e0["leader_epoch"] + 1 and sorted(st["isr"]) == sorted(e0["isr"])
    # the same through kafka-leader-election
    ao.write_reassign_znode(cluster, ao.make_plan({("ops-elect", 0): [3, 2, 1]}))
    _wait(lambda: ao.reassign_znode(cluster) is None, 60, "second reorder")
    out = at.elect_preferred_tool(cluster, [("ops-elect", 0)])
    assert "Successfully completed leader election" in out, out
    _wait(lambda: _state(cluster, "ops-elect")["leader"] == 3, 30, "leader 3")
    out = at.elect_preferred_tool(cluster, [("ops-elect", 0)])
    assert "Valid replica already elected" in out, out
