"""harness.cluster.admin_ops' host-side reassignment on a real 4-broker cluster, ZooKeeper mode (3.9.2) and KRaft
(4.1.2): generate, execute, a throttle set as ``kafka-reassign-partitions --throttle`` sets it
(DescribeConfigs shows it), verify (clearing the throttles once done), list and cancel — through the
protocol only: every broker container's ``exec`` is made unusable for the test and no call reaches it.

    /work/slots/slot-run python -m pytest tests/integration/test_admin_protocol.py -x -m docker
"""

from __future__ import annotations

import time

import pytest

from harness.cluster import admin_ops as ao
from harness.cluster import reassign_plan as rp
from waiting import wait_for  # noqa: E402  (tests/integration is on sys.path)

pytestmark = pytest.mark.docker

CASES = [("apache-zk", "3.9.2"), ("apache-kraft", "4.1.2")]


@pytest.fixture(scope="module", params=CASES, ids=[f"{d}-{v}" for d, v in CASES])
def cluster(request, kc_docker):
    from harness import images
    from harness.cluster.cluster import Cluster, ClusterSpec
    dist, version = request.param
    image = images.image_for(version, build_missing=True)
    # small replica fetches: a throttled follower gets one batch per quota window, not 1 MB
    cl = Cluster(ClusterSpec(brokers=4, image=image.tag, distribution=dist, startup_timeout_s=240,
                             broker_config={"replica.fetch.max.bytes": "16384"}))
    cl.start()
    try:
        yield cl
    finally:
        cl.remove()


@pytest.fixture
def no_exec(cluster):
    """Make ``exec`` into every node's container unusable while the test runs; the calls tried are listed."""
    tried: list = []
    saved = {}
    for n in cluster.nodes():
        saved[n] = n.exec

        def refuse(cmd, check=False, _n=n):
            tried.append((_n.name, cmd))
            raise AssertionError(f"exec into {_n.name} on the protocol path: {cmd}")
        n.exec = refuse
    yield tried
    for n, f in saved.items():
        n.exec = f
    assert tried == [], f"the protocol path exec'd into containers: {tried}"


def _wait(pred, timeout, what):
    return wait_for(pred, timeout, what, interval=0.5)


def _configs(cluster, restype, name, keys):
    from confluent_kafka.admin import ConfigResource, ResourceType
    res = ConfigResource(getattr(ResourceType, restype), name)
    cfg = cluster.admin().describe_configs([res])[res].result(timeout=30)
    return {k: cfg[k].value for k in keys if k in cfg and cfg[k].value not in (None, "")}


def _broker_throttle(cluster, b):
    return _configs(cluster, "BROKER", str(b), ao.THROTTLE_KEYS)


def _topic_throttle(cluster, topic):
    return _configs(cluster, "TOPIC", topic, rp.THROTTLED_REPLICAS_KEYS)


def _preload(cluster, topic, mb):
    from confluent_kafka import Producer
    pr = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 50,
                   "batch.size": 16384})
    for _ in range(mb * 100):
        while True:
            try:
                pr.produce(topic, b"x" * 10_000, partition=0)
                break
            except BufferError:
                pr.poll(0.1)
        pr.poll(0)
    assert pr.flush(60) == 0


def test_generate_execute_verify(cluster, no_exec):
    cluster.create_topic("pa-move", assignment={0: [1, 2, 3], 1: [2, 3, 1]})
    current, proposed = ao.reassign_generate(cluster, ["pa-move"], [1, 2, 3, 4])
    assert ao.plan_targets(current) == {("pa-move", 0): [1, 2, 3], ("pa-move", 1): [2, 3, 1]}
    prop = ao.plan_targets(proposed)
    assert set(prop) == {("pa-move", 0), ("pa-move", 1)}
    assert all(len(set(r)) == 3 and set(r) <= {1, 2, 3, 4} for r in prop.values())
    plan = ao.make_plan({("pa-move", 0): [4, 2, 3]})
    assert ao.reassign_execute(cluster, plan) == [("pa-move", 0)]
    _wait(lambda: ao.reassign_verify(cluster, plan) == {("pa-move", 0): "complete"}, 90, "verify: complete")
    assert ao.topic_assignment(cluster, "pa-move") == {0: ([4, 2, 3], [], []), 1: ([2, 3, 1], [], [])}
    assert ao.reassign_list(cluster) == {}
    # a partition whose replicas are not the plan's, with nothing in progress: mismatch (as --verify says)
    assert ao.reassign_verify(cluster, ao.make_plan({("pa-move", 1): [1, 2, 3]})) == {("pa-move", 1): "mismatch"}


def test_refusals(cluster, no_exec):
    cluster.create_topic("pa-bad", assignment={0: [1, 2, 3]})
    with pytest.raises(ao.AdminOpError, match="Unknown broker id 9"):            # the tool's own check
        ao.reassign_execute(cluster, ao.make_plan({("pa-bad", 0): [1, 2, 9]}))
    with pytest.raises(ao.ReassignmentRefused, match="INVALID_REPLICA_ASSIGNMENT"):   # the controller's
        ao.reassign_execute(cluster, ao.make_plan({("pa-bad", 0): [1, 2, 9]}), check_brokers=False)
    with pytest.raises(ao.AdminOpError, match="none of the specified partition reassignments are active"):
        ao.reassign_cancel(cluster, ao.make_plan({("pa-bad", 0): [1, 2, 4]}))
    with pytest.raises(ao.AdminOpError, match="unable to find partition"):
        ao.reassign_execute(cluster, ao.make_plan({("pa-bad", 5): [1, 2, 4]}))
    assert ao.topic_assignment(cluster, "pa-bad") == {0: ([1, 2, 3], [], [])}


def test_throttled_reassignment_listed_and_cancelled(cluster, no_exec):
    cluster.create_topic("pa-cancel", assignment={0: [1, 2, 3]})
    _preload(cluster, "pa-cancel", 3)
    plan = ao.make_plan({("pa-cancel", 0): [4, 2, 3]})
    ao.reassign_execute(cluster, plan, throttle=1000)
    # the tool's throttle: both rates on every broker of the move, the moving replicas per topic
    want = {k: "1000" for k in ao.THROTTLE_KEYS}
    _wait(lambda: all(_broker_throttle(cluster, b) == want for b in (1, 2, 3, 4)), 30, "broker throttles set")
    _wait(lambda: _topic_throttle(cluster, "pa-cancel") == {"leader.replication.throttled.replicas": "0:1,0:2,0:3",
                                                            "follower.replication.throttled.replicas": "0:4"},
          30, "topic throttled replicas set")
    time.sleep(3)
    assert ao.reassign_verify(cluster, plan) == {("pa-cancel", 0): "in_progress"}
    listed = ao.reassign_list(cluster)
    assert set(listed) == {("pa-cancel", 0)}
    replicas, adding, removing = listed[("pa-cancel", 0)]
    assert set(replicas) == {1, 2, 3, 4} and adding == [4] and removing == [1]
    with pytest.raises(ao.AdminOpError, match="in progress"):                    # as the tool without --additional
        ao.reassign_execute(cluster, ao.make_plan({("pa-move-x", 0): [1, 2, 3]}))
    assert ao.reassign_cancel(cluster, plan) == [("pa-cancel", 0)]
    # §7.8 / §9.6: ORS in target-first order: [4,2,3,1] without 4
    _wait(lambda: ao.topic_assignment(cluster, "pa-cancel") == {0: ([2, 3, 1], [], [])}, 30, "cancelled")
    assert ao.reassign_list(cluster) == {}
    _wait(lambda: all(_broker_throttle(cluster, b) == {} for b in (1, 2, 3, 4)), 30, "broker throttles cleared")
    _wait(lambda: _topic_throttle(cluster, "pa-cancel") == {}, 30, "topic throttled replicas cleared")


def test_verify_clears_the_throttle_once_complete(cluster, no_exec):
    cluster.create_topic("pa-done", assignment={0: [1, 2, 3]})
    plan = ao.make_plan({("pa-done", 0): [1, 2, 4]})
    ao.reassign_execute(cluster, plan, throttle=1_000_000)       # an empty partition: done at once
    _wait(lambda: _topic_throttle(cluster, "pa-done") == {"leader.replication.throttled.replicas": "0:1,0:2,0:3",
                                                          "follower.replication.throttled.replicas": "0:4"},
          30, "topic throttled replicas set")
    _wait(lambda: ao.reassign_verify(cluster, plan) == {("pa-done", 0): "complete"}, 60, "verify: complete")
    _wait(lambda: all(_broker_throttle(cluster, b) == {} for b in (1, 2, 3, 4)), 30, "broker throttles cleared")
    _wait(lambda: _topic_throttle(cluster, "pa-done") == {}, 30, "topic throttled replicas cleared")
