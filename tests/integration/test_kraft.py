"""A real Apache Kafka KRaft cluster (3 combined broker+controller nodes, no ZooKeeper), observed
only through the Kafka protocol (issue 8: KRaft and protocol-only observation; controller-spec §9).

One cluster serves the module (a KRaft start takes ~30–60 s on a loaded host); every test that kills
a node starts it again and waits until the cluster is ready, so the next test sees 3 live nodes.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid

import pytest

from harness import images
from harness.cluster.cleanup import leftovers
from harness.cluster.cluster import Cluster, ClusterSpec
from harness.docker_util import LABEL_CLUSTER
from harness.errors import HarnessError
from harness.observer.protocol_sampler import ProtocolSampler

from roundtrip import assert_round_trip  # noqa: E402  (tests/integration is on sys.path)

pytestmark = pytest.mark.docker

WAIT_S = 120.0      # generous: fencing takes broker.session.timeout.ms (9 s) plus a loaded host


def _wait(what: str, predicate, timeout_s: float = WAIT_S, interval: float = 0.5):
    """Poll ``predicate`` until it returns a truthy value; fail with ``what`` after the timeout."""
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
        except HarnessError as e:            # a broker being killed / restarted
            last = e
        else:
            if last:
                return last
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout_s:.0f} s waiting for {what} (last: {last!r})")


@pytest.fixture(scope="module")
def kraft_image(request, kc_docker):
    """The Apache image with the current entrypoint (the build is cached; it reruns only when
    harness/image_files changed, e.g. an image that predates the ``kraft`` mode)."""
    image = request.config.getoption("kc_broker_image")
    if image:
        return images.inspect(image)
    return images.inspect(images.build(request.config.getoption("kc_kafka_version")).tag)


# A "foreign" image for the generic adapter: its own entrypoint reads only KAFKA_* variables and
# CLUSTER_ID (the conventions of the official apache/kafka image), nothing of the harness's KC_CONFIG.
_GENERIC_ENTRYPOINT = r"""#!/bin/sh
set -e
mkdir -p /tmp/generic
env | grep '^KAFKA_' | while IFS='=' read -r name value; do
  key=$(echo "${name#KAFKA_}" | tr 'A-Z' 'a-z' | sed -e 's/___/-/g' -e 's/__/@/g' -e 's/_/./g' -e 's/@/_/g')
  echo "$key=$value"
done > /tmp/generic/server.properties
java -Xmx256m -cp '/opt/kafka/libs/*' kafka.tools.StorageTool format --ignore-formatted \
  -t "$CLUSTER_ID" -c /tmp/generic/server.properties
exec java -Xmx512m -Dlog4j.configuration=file:/opt/kafka/config/log4j.properties \
  -cp '/opt/kafka/libs/*' kafka.Kafka /tmp/generic/server.properties
"""


def test_generic_adapter_runs_an_image_configured_by_environment(kraft_image, kc_docker, tmp_path):
    """Runs first (no module cluster yet), so only one cluster of this module exists at a time."""
    tag = f"kafka-chaos-test/generic:{uuid.uuid4().hex[:8]}"
    (tmp_path / "entrypoint.sh").write_text(_GENERIC_ENTRYPOINT)
    (tmp_path / "Dockerfile").write_text(
        f"FROM {kraft_image.tag}\n"
        "COPY entrypoint.sh /generic-entrypoint.sh\n"
        # the base image runs as its unprivileged user (harness/images.py RUN_USER); chmod as root
        "USER root\nRUN chmod 0755 /generic-entrypoint.sh\nUSER kafka\n"
        # not a harness image: no kafka-chaos=1 / distribution / version labels
        "LABEL kafka-chaos=0 kafka-chaos.distribution=generic kafka-chaos.kafka-version=\n"
        'ENTRYPOINT ["/generic-entrypoint.sh"]\n')
    res = subprocess.run(["docker", "build", "-q", "-t", tag, str(tmp_path)], capture_output=True, text=True,
                         env={**os.environ, "DOCKER_BUILDKIT": "0"})
    assert res.returncode == 0, res.stderr
    cl = None
    try:
        info = images.inspect(tag)
        assert info.distribution == "generic" and not info.kafka_version
        with pytest.raises(HarnessError, match="generic"):
            Cluster(ClusterSpec(image=tag)).start()         # the default adapter refuses a foreign image
        cl = Cluster(ClusterSpec(brokers=3, distribution="generic", image=tag, startup_timeout_s=240))
        cl.start()
        env = dict(e.split("=", 1) for e in cl.brokers[1].container.attrs["Config"]["Env"] if "=" in e)
        assert "KC_CONFIG" not in env and env["KAFKA_NODE_ID"] == "1" and env["CLUSTER_ID"] == cl.cluster_id
        props = cl.brokers[1].exec(["cat", "/tmp/generic/server.properties"], check=True)[1]
        assert "process.roles=broker,controller" in props and "broker.session.timeout.ms=9000" in props
        q = cl.quorum()
        assert q.error is None and sorted(v.replica_id for v in q.voters) == [1, 2, 3]
        topic = "generic-rt"
        cl.create_topic(topic, partitions=1, replication_factor=3)
        # the answering broker may not list the new partition, or its full ISR, at once
        p0 = _wait(f"{topic}-0 listed with its full ISR", lambda: next(
            (p for t in cl.protocol_metadata([topic]).topics for p in t.partitions[:1]
             if p.error is None and sorted(p.isr) == [1, 2, 3]), None), 60)
        assert p0.leader_epoch == 0
    finally:
        if cl is not None:
            cl.remove()
        kc_docker.images.remove(tag, force=True)
    assert not [c for c in leftovers()["containers"] if c.startswith(f"kc-{cl.name}-")]
    assert not kc_docker.images.list(name=tag)


@pytest.fixture(scope="module")
def kraft(kraft_image, kc_docker):
    cl = Cluster(ClusterSpec(brokers=3, distribution="apache-kraft", image=kraft_image.tag,
                             startup_timeout_s=240))
    t0 = time.monotonic()
    cl.start()
    print(f"\nKRaft cluster {cl.name} ready in {time.monotonic() - t0:.1f} s")
    yield cl
    name = cl.name
    cl.remove()
    left = leftovers()
    assert not [c for c in left["containers"] if c.startswith(f"kc-{name}-")], left
    assert f"kc-{name}" not in left["networks"]
    assert not kc_docker.volumes.list(filters={"label": f"{LABEL_CLUSTER}={name}"})


def _restore(cluster: Cluster, broker_id: int) -> None:
    if cluster.brokers[broker_id].status() != "running":
        cluster.start_broker(broker_id, timeout_s=WAIT_S)
    cluster.wait_ready(WAIT_S)


def test_cluster_is_kraft_with_a_quorum_and_no_zookeeper(kraft):
    assert kraft.zookeepers == [] and kraft.cluster_id and len(kraft.cluster_id) == 22
    assert kraft.describe()["distribution"] == "apache-kraft"
    q = kraft.quorum()
    assert q.error is None and q.leader_id in (1, 2, 3) and q.leader_epoch >= 1
    assert sorted(v.replica_id for v in q.voters) == [1, 2, 3]
    assert kraft.registered_brokers() == {1, 2, 3}
    assert kraft.active_controller() == q.leader_id
    with pytest.raises(HarnessError, match="no ZooKeeper"):
        kraft.zk()
    cfg = kraft.brokers[2].exec(["cat", "/etc/kafka-chaos/server.properties"], check=True)[1]
    assert "process.roles=broker,controller" in cfg and "node.id=2" in cfg
    assert "controller.quorum.voters=1@broker1:9094,2@broker2:9094,3@broker3:9094" in cfg
    assert "zookeeper.connect" not in cfg
    # only the EXTERNAL listener is published, on loopback; CONTROLLER stays on the Docker network
    for node in kraft.nodes():
        bindings = node.container.attrs["HostConfig"]["PortBindings"]
        assert list(bindings) == [f"{node.host_port}/tcp"]
        assert all(b["HostIp"] == "127.0.0.1" for bs in bindings.values() for b in bs)
    # another process can attach to it and sees the same distribution
    other = Cluster.attach(kraft.name)
    assert other.distribution.name == "apache-kraft" and other.cluster_id == kraft.cluster_id
    assert other.brokers[1].started()


def test_rf3_topic_produces_and_consumes(kraft):
    topic = f"rt-{uuid.uuid4().hex[:6]}"
    kraft.create_topic(topic, partitions=3, replication_factor=3)
    # the answering broker's metadata cache may not have the new topic yet (spec §8.1 caveat 1): ask again
    deadline = time.monotonic() + 30
    while True:
        (t,) = kraft.protocol_metadata([topic]).topics
        if t.error is None and len(t.partitions) == 3 or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert t.error is None and len(t.partitions) == 3
    for p in t.partitions:
        assert sorted(p.replicas) == [1, 2, 3] and sorted(p.isr) == [1, 2, 3] and p.leader_epoch == 0
    assert_round_trip(kraft.bootstrap_servers, topic, 200, 60)
    # each broker says it holds a replica of every partition (DescribeLogDirs), with the data written
    from harness.protocol import ProtocolClient
    for b, node in kraft.brokers.items():
        with ProtocolClient(port=node.host_port, timeout=5) as c:
            dirs = c.describe_log_dirs({topic: [0, 1, 2]})
        assert dirs.hosted() == {(topic, 0), (topic, 1), (topic, 2)}, (b, dirs)
        assert sum(size for d in dirs.dirs for size in d.partitions.values()) > 0, (b, dirs)  # 200 records


def test_sampler_sees_the_leader_epoch_rise_when_the_leader_is_killed(kraft):
    topic = f"le-{uuid.uuid4().hex[:6]}"
    kraft.create_topic(topic, partitions=1, replication_factor=3)
    sampler = ProtocolSampler.for_cluster(kraft, interval=0.5, topics=[topic], duration=WAIT_S * 2)

    def part(ev):
        return next((p for p in ev.get("partitions", []) if p["topic"] == topic and p["partition"] == 0), None)

    with sampler:
        first = _wait("a sample with a leader", lambda: next(
            (part(e) for e in list(sampler.samples)
             if e["type"] == "admin.metadata" and part(e) and part(e)["error"] is None and part(e)["leader"] >= 0),
            None))
        leader, epoch = first["leader"], first["leader_epoch"]
        assert epoch is not None and sorted(first["isr"]) == [1, 2, 3]
        assert any(e["type"] == "kraft.quorum" and e["leader_id"] in (1, 2, 3) for e in sampler.samples)
        kraft.kill_broker(leader)
        try:
            after = _wait("a new leader with a higher epoch", lambda: next(
                (part(e) for e in list(sampler.samples)
                 if e["type"] == "admin.metadata" and part(e) and part(e)["error"] is None
                 and part(e)["leader"] not in (-1, leader) and part(e)["leader_epoch"] > epoch), None))
        finally:
            _restore(kraft, leader)
    assert after["leader"] in {1, 2, 3} - {leader}
    assert leader not in after["isr"]                  # the fenced broker left the ISR
    # H3 on the sampled history: per answering broker, the epoch never decreases
    by_broker: dict[int, list[int]] = {}
    for e in sampler.samples:
        p = part(e) if e["type"] == "admin.metadata" else None
        if p and p["error"] is None:
            by_broker.setdefault(e["answered_by"], []).append(p["leader_epoch"])
    assert all(eps == sorted(eps) for eps in by_broker.values()), by_broker


def test_describe_quorum_names_a_new_leader_when_the_leader_is_killed(kraft):
    """Kill the quorum leader, which follows (does not lead) a partition: a new quorum leader with a
    higher Raft epoch; the partition keeps its leader, and the fenced follower leaves the ISR with no
    leader epoch bump when the metadata version is 3.6-IV0 or newer, one bump before
    (``isLeaderEpochBumpRequiredOnIsrShrink``, spec §9.2); the ISR expansion never bumps it."""
    q0 = kraft.quorum()
    assert q0.error is None and q0.leader_id in (1, 2, 3)
    old = q0.leader_id
    others = sorted({1, 2, 3} - {old})
    topic = f"qf-{uuid.uuid4().hex[:6]}"
    kraft.create_topic(topic, assignment={0: [others[0], old, others[1]]})

    def part():
        ts = kraft.protocol_metadata([topic]).topics
        if len(ts) != 1 or not ts[0].partitions:    # the answering broker does not know the topic yet
            raise HarnessError(f"{topic}-0 not in the answer yet")
        return ts[0].partitions[0]

    p0 = _wait("the follower in the ISR", lambda: (lambda p: p if p.error is None and sorted(p.isr) == [1, 2, 3]
                                                   else None)(part()))
    assert p0.leader == others[0]
    kraft.kill_broker(old)
    try:
        q1 = _wait("a new quorum leader", lambda: (lambda q: q if q.error is None and q.leader_id not in (-1, old)
                                                   else None)(kraft.quorum()))
        p1 = _wait("the fenced follower out of the ISR", lambda: (lambda p: p if p.error is None
                                                                   and old not in p.isr else None)(part()))
    finally:
        _restore(kraft, old)
    assert q1.leader_id in set(others) and q1.leader_epoch > q0.leader_epoch
    shrink_bump = 1 if _version(kraft) < (3, 6) else 0     # default metadata version of the release
    assert (p1.leader, p1.leader_epoch) == (p0.leader, p0.leader_epoch + shrink_bump)
    assert sorted(p1.isr) == others
    # the restarted node (storage formatted before: --ignore-formatted) rejoins the quorum and the ISR
    q2 = _wait("the restarted voter caught up", lambda: (lambda q: q if q.error is None and all(
        v.log_end_offset >= 0 for v in q.voters) and old in {v.replica_id for v in q.voters} else None)(kraft.quorum()))
    assert kraft.registered_brokers() == {1, 2, 3}
    assert q2.leader_epoch >= q1.leader_epoch
    # formatted once, at the first start: the restart skipped the storage tool (and kept its data)
    logs = kraft.brokers[old].container.logs().decode(errors="replace")
    assert logs.count("Formatting ") == 1 and "already formatted" not in logs
    p2 = _wait("the ISR restored", lambda: (lambda p: p if p.error is None and sorted(p.isr) == [1, 2, 3]
                                            else None)(part()))
    assert p2.leader_epoch == p1.leader_epoch          # ISR expansion: no leader epoch bump


def _version(cluster: Cluster) -> tuple[int, ...]:
    return tuple(int(x) for x in (cluster.image.kafka_version or "99.0").split(".")[:2])


def _reassign_tool(cluster: Cluster, *args: str) -> str:
    tool = ("org.apache.kafka.tools.reassign.ReassignPartitionsCommand" if _version(cluster) >= (3, 7)
            else "kafka.admin.ReassignPartitionsCommand")
    cmd = ["/opt/kafka-chaos/kafka-run-class", tool, "--bootstrap-server", "broker1:9093",
           "--reassignment-json-file", "/tmp/reassign.json", *args]
    code, out = cluster.brokers[1].exec(cmd)
    assert code == 0, out
    return out


def test_reassignment_in_flight_is_listed_and_cancel_reverts_it(kraft):
    """ListPartitionReassignments and DescribeTopicPartitions through the protocol client, on a
    reassignment kept in flight: inside broker 3 an iptables rule rejects its connections to the
    leader's INTERNAL port (replica fetches), while its heartbeats to the controllers (port 9094) go
    on, so broker 3 stays live for the tool but never catches up. Spec §9.6: the start record only
    grows the replica set, RS = T ++ sorted(current − T) (no leader epoch bump); a cancel reverts to
    RS − AR and bumps LE once (the replica set shrinks, §9.2).

    The plan moves a replica ([1, 2] → [1, 3]) rather than only adding one: the Java port of the
    reassignment tool (3.7 up to the fix in apache/kafka PR #20003) lost a negation and ``--cancel``
    skips reassignments whose removing set is empty."""
    import json
    from confluent_kafka import Producer

    from harness.protocol import ProtocolClient
    topic = f"ra-{uuid.uuid4().hex[:6]}"
    kraft.create_topic(topic, assignment={0: [1, 2]})
    prod = Producer({"bootstrap.servers": kraft.bootstrap_servers, "acks": "all", "linger.ms": 20})
    for _ in range(200):
        prod.produce(topic, b"x" * 1000, partition=0)
    assert prod.flush(60) == 0

    def part():
        (t,) = kraft.protocol_metadata([topic]).topics
        return t.partitions[0]

    p0 = _wait("both replicas in the ISR", lambda: (lambda p: p if p.error is None and sorted(p.isr) == [1, 2]
                                                    else None)(part()))
    rule = ["OUTPUT", "-p", "tcp", "-d", kraft.brokers[p0.leader].ip(), "--dport", "9093", "-j", "REJECT"]
    kraft.brokers[3].exec(["iptables", "-A", *rule], check=True)
    plan = {"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [1, 3]}]}
    kraft.brokers[1].exec(["sh", "-c", f"echo '{json.dumps(plan)}' > /tmp/reassign.json"], check=True)
    sampler = ProtocolSampler.for_cluster(kraft, interval=0.5, topics=[topic], duration=WAIT_S * 3)
    try:
        with sampler:
            _reassign_tool(kraft, "--execute")

            def ongoing():
                for e in list(sampler.samples):
                    if e["type"] == "admin.reassignments" and e["error"] is None:
                        hit = [p for p in e["partitions"] if p["topic"] == topic]
                        if hit:
                            return hit[0]
                return None

            listed = _wait("the reassignment listed by ListPartitionReassignments", ongoing)
            assert listed == {"topic": topic, "partition": 0, "replicas": [1, 3, 2], "adding_replicas": [3],
                              "removing_replicas": [2]}
            p1 = _wait("the new replica set in metadata", lambda: (lambda p: p if p.replicas == [1, 3, 2]
                                                                   else None)(part()))
            assert 3 not in p1.isr
            assert (p1.leader, p1.leader_epoch) == (p0.leader, p0.leader_epoch)    # start: PE + 1 only
            with ProtocolClient(port=kraft.brokers[p1.leader].host_port, timeout=5) as c:
                assert c.supports_describe_topic_partitions() == (_version(kraft) >= (3, 8))   # KRaft 3.8+
                if _version(kraft) >= (3, 8):
                    (t,) = c.describe_topic_partitions([topic])
                    d = t.partitions[0]
                    assert d.replicas == [1, 3, 2] and d.leader == p1.leader and d.leader_epoch == p1.leader_epoch
                    assert not d.eligible_leader_replicas      # ELR is not enabled on 3.9 (spec §9.5)
            n_before = len(sampler.samples)
            assert "Successfully cancelled partition reassignment" in _reassign_tool(kraft, "--cancel")

            def reverted():
                for e in list(sampler.samples)[n_before:]:
                    if e["type"] == "admin.reassignments" and e["error"] is None and \
                            not [p for p in e["partitions"] if p["topic"] == topic]:
                        return e
                return None

            _wait("the reassignment no longer listed", reverted)
            p2 = _wait("the replica set reverted", lambda: (lambda p: p if p.error is None and p.replicas == [1, 2]
                                                            else None)(part()))
    finally:
        kraft.brokers[3].exec(["iptables", "-D", *rule])
    assert sorted(p2.isr) == [1, 2]
    assert p2.leader_epoch == p0.leader_epoch + 1      # the replica set shrank: leader re-set, LE + 1
    epochs = [p["leader_epoch"] for e in sampler.samples if e["type"] == "admin.metadata"
              for p in e["partitions"] if p["topic"] == topic and p["error"] is None]
    assert epochs == sorted(epochs) and set(epochs) <= {p0.leader_epoch, p0.leader_epoch + 1}
