"""The KRaft metadata log reader against a real Kafka 4.1.2 KRaft cluster: kill a partition leader, and
the history read out of the containers (the killed one included: ``docker cp`` works on a stopped
container) shows the controller's re-election with leader epoch + 1, and ends in exactly the state the
brokers report over the protocol (leader, leader epoch, ISR).

The version is ``KAFKA_CHAOS_KAFKA4_VERSION`` (default 4.1.2), as in test_kafka4.py.
"""

from __future__ import annotations

import os
import time
import uuid

import pytest

from harness import images
from harness.cluster.cleanup import leftovers
from harness.cluster.cluster import Cluster, ClusterSpec
from harness.observer.kraft_history import events_since, metadata_marker, read_kraft_history, read_node_history

pytestmark = pytest.mark.docker

KAFKA4_VERSION = os.environ.get("KAFKA_CHAOS_KAFKA4_VERSION", "4.1.2")
TOPIC = "km"


@pytest.fixture(scope="module")
def kraft4(kc_docker):
    image = images.inspect(images.build(KAFKA4_VERSION).tag)
    cl = Cluster(ClusterSpec(brokers=3, distribution="apache-kraft", image=image.tag,
                             name=f"kmeta-{uuid.uuid4().hex[:6]}", startup_timeout_s=240))
    try:
        cl.start()
        yield cl
    finally:
        cl.remove()
    assert not [c for c in leftovers()["containers"] if c.startswith(f"kc-{cl.name}-")]


def _protocol_view(cl) -> dict[int, tuple]:
    (t,) = cl.protocol_metadata([TOPIC]).topics
    return {p.partition: (p.leader, p.leader_epoch, sorted(p.isr)) for p in t.partitions if p.error is None}


def _log_view(hist) -> dict[int, tuple]:
    last = {e["partition"]: e for e in hist.events if e["type"] == "meta.partition" and e["topic"] == TOPIC}
    return {p: (e["leader"], e["leader_epoch"], sorted(e["isr"])) for p, e in last.items()}


def _until(what, fn, timeout_s=60.0):
    deadline, last = time.monotonic() + timeout_s, None
    while time.monotonic() < deadline:
        try:
            last = fn()
            if last:
                return last
        except Exception as e:  # noqa: BLE001 - a node being killed
            last = e
        time.sleep(0.5)
    pytest.fail(f"timed out waiting for {what} (last: {last!r})")


def test_leader_kill_is_in_the_metadata_log_and_the_log_agrees_with_the_brokers(kraft4):
    cl = kraft4
    cl.create_topic(TOPIC, partitions=2, replication_factor=3)
    before = _until("full ISRs", lambda: (lambda v: v if len(v) == 2 and all(len(s[2]) == 3 for s in v.values())
                                          else None)(_protocol_view(cl)))
    hist0 = _until("the topic in the metadata log", lambda: (lambda h: h if _log_view(h) == before else None)(
        read_kraft_history(cl)))
    assert hist0.complete and hist0.first_offset == 0
    marker = metadata_marker(cl)
    assert marker >= hist0.last_offset >= max(e["offset"] for e in hist0.events)

    killed, epoch0 = before[0][0], before[0][1]
    cl.kill_broker(killed)
    after = _until("a new leader of km-0 without the killed broker in the ISR", lambda: (
        lambda v: v if v.get(0, (-1,))[0] not in (-1, killed) and killed not in v[0][2] else None)(_protocol_view(cl)))

    # the log and the brokers agree (a broker's metadata cache may lag the log for a moment)
    hist = _until("the metadata log to agree with the protocol", lambda: (
        lambda h, v: h if _log_view(h) == v else None)(read_kraft_history(cl), _protocol_view(cl)), 30)
    assert hist.complete and not hist.undecoded and hist.node != cl.brokers[killed].name
    assert _log_view(hist)[0] == after[0] == (after[0][0], epoch0 + 1, after[0][2])

    new = events_since(hist, marker)
    moves = [e for e in new if e["type"] == "meta.partition" and e["partition"] == 0 and "leader" in e["changed"]]
    assert moves and moves[0]["record"] == "PartitionChangeRecord"
    assert moves[0]["leader"] not in (-1, killed) and moves[0]["leader_epoch"] == epoch0 + 1
    assert moves[0]["partition_epoch"] > before_partition_epoch(hist0)
    fenced = [e for e in new if e["type"] == "meta.broker" and e["broker_id"] == killed and e["fenced"]]
    # the controller fences the silent broker in the same atomic write, after moving its leaderships
    assert fenced and fenced[0]["offset"] > moves[0]["offset"]
    offsets = [e["offset"] for e in hist.events]
    assert offsets == sorted(set(offsets))              # one event per record, in log order

    # the killed node's container is stopped, and its log can still be read
    assert cl.brokers[killed].status() == "exited"
    dead = read_node_history(cl, cl.brokers[killed])
    assert dead is not None and dead.first_offset == 0 and dead.last_offset <= hist.last_offset
    assert dead.last_offset >= hist0.last_offset


def before_partition_epoch(hist) -> int:
    return max(e["partition_epoch"] for e in hist.events if e["type"] == "meta.partition"
               and e["topic"] == TOPIC and e["partition"] == 0)
