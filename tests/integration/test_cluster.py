"""Foundation: a real ZooKeeper + Kafka cluster in containers (issue 2)."""

from __future__ import annotations

import time
import uuid

import pytest

from harness.cluster.cleanup import leftovers
from harness.docker_util import LABEL_CLUSTER

pytestmark = pytest.mark.docker


def _produce_consume(cluster, topic: str, n: int) -> list[str]:
    from confluent_kafka import Consumer, Producer
    values = [f"v-{i}-{uuid.uuid4().hex[:6]}" for i in range(n)]
    acked: list[str] = []
    errors: list = []
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "enable.idempotence": True})

    def cb(err, msg):
        (errors.append(err) if err else acked.append(msg.value().decode()))

    for v in values:
        p.produce(topic, v.encode(), on_delivery=cb)
    assert p.flush(30) == 0
    assert not errors, errors
    c = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": f"g-{uuid.uuid4().hex[:6]}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    seen: list[str] = []
    deadline = time.monotonic() + 60
    while len(seen) < n and time.monotonic() < deadline:
        m = c.poll(1.0)
        if m is not None and not m.error():
            seen.append(m.value().decode())
    c.close()
    assert sorted(acked) == sorted(values)
    return seen


def test_rf3_topic_acks_all_roundtrip_and_full_isr(kc_cluster_factory, kc_docker):
    cluster = kc_cluster_factory(brokers=3, zookeepers=1)
    name = cluster.name
    assert cluster.broker_ids == [1, 2, 3]
    assert all(hp.startswith("127.0.0.1:") for hp in cluster.bootstrap_servers.split(","))
    cluster.create_topic("roundtrip", partitions=3, replication_factor=3)
    seen = _produce_consume(cluster, "roundtrip", 300)
    assert len(seen) == 300 and len(set(seen)) == 300

    # describe: every partition has a leader and ISR = all three brokers
    md = cluster.admin().list_topics(topic="roundtrip", timeout=10).topics["roundtrip"]
    assert len(md.partitions) == 3
    for p in md.partitions.values():
        assert p.leader in (1, 2, 3)
        assert sorted(p.replicas) == [1, 2, 3]
        assert sorted(p.isrs) == [1, 2, 3]
    # the same seen from ZooKeeper (the controller's writes)
    import json
    state = json.loads(cluster.zk().get("/brokers/topics/roundtrip/partitions/0/state")[0])
    assert sorted(state["isr"]) == [1, 2, 3]

    # ports are published on loopback only
    for node in cluster.nodes():
        for bindings in node.container.attrs["HostConfig"]["PortBindings"].values():
            assert all(b["HostIp"] == "127.0.0.1" for b in bindings)

    cluster.remove()
    left = leftovers()
    assert not [c for c in left["containers"] if c.startswith(f"kc-{name}-")]
    assert f"kc-{name}" not in left["networks"]
    assert not kc_docker.volumes.list(filters={"label": f"{LABEL_CLUSTER}={name}"})


def test_three_node_zookeeper_ensemble_and_broker_restart(kc_cluster_factory):
    cluster = kc_cluster_factory(brokers=3, zookeepers=3,
                              broker_config={"min.insync.replicas": "2"})
    assert len(cluster.zookeepers) == 3
    assert cluster.zookeeper_connect.count("127.0.0.1:") == 3
    # broker config overrides reach the broker
    assert cluster.broker_config["min.insync.replicas"] == "2"
    cfg = cluster.brokers[1].exec(["cat", "/etc/kafka-chaos/server.properties"], check=True)[1]
    assert "min.insync.replicas=2" in cfg and "advertised.listeners=INTERNAL://broker1:9093,EXTERNAL://127.0.0.1:" in cfg

    # kill a broker: its registration disappears after the (short) session timeout; restart: a new broker epoch
    epoch_before = cluster.broker_epoch(2)
    cluster.kill_broker(2)
    deadline = time.monotonic() + 30
    while 2 in cluster.registered_brokers() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert 2 not in cluster.registered_brokers()
    cluster.start_broker(2)
    assert cluster.registered_brokers() == {1, 2, 3}
    assert cluster.broker_epoch(2) not in (None, epoch_before)

    # clean stop: deregisters immediately (controlled shutdown)
    cluster.stop_broker(3)
    assert 3 not in cluster.registered_brokers()
    cluster.start_broker(3)
    assert cluster.registered_brokers() == {1, 2, 3}


def test_files_of_a_stopped_zookeeper_can_be_read(kc_cluster_factory):
    cluster = kc_cluster_factory(brokers=1, zookeepers=1)
    zk = cluster.zookeepers[0]
    logs = [n for n in zk.list_dir("/var/lib/zookeeper/version-2") if n.startswith("log.")]
    assert logs, "ZooKeeper transaction log missing"
    zk.stop(timeout=10)
    data = zk.read_file(f"/var/lib/zookeeper/version-2/{logs[0]}")
    assert data[:4] == b"ZKLG"
    # padded in steps of preAllocSize (1 MB, node_settings.DEFAULT_ZK_CONFIG), not ZooKeeper's 64 MB:
    # the observer copies this file out after every run
    assert len(data) <= 2 * 1024 * 1024, len(data)


def test_a_picked_port_taken_before_docker_publishes_it_is_picked_again(kc_image, monkeypatch, capsys):
    """Another process binds a picked host port between the pick and the container start: Docker
    refuses to publish it, and the cluster starts again on newly picked ports."""
    import socket

    from harness.cluster import cluster as cl_mod
    from harness.cluster.cluster import Cluster, ClusterSpec, _port_taken
    squatter = socket.socket()
    squatter.bind(("127.0.0.1", 0))
    squatter.listen()
    taken = squatter.getsockname()[1]
    real = cl_mod._pick_ports
    calls = []

    def pick(n, base, what, **kw):
        calls.append(what)
        ports = real(n, base, what, **kw)
        return [taken, *ports[1:]] if len(calls) == 1 else ports   # the first ZooKeeper port is taken
    monkeypatch.setattr(cl_mod, "_pick_ports", pick)
    monkeypatch.delenv("KAFKA_CHAOS_QUIET", raising=False)          # the retry is said on stderr
    c = Cluster(ClusterSpec(brokers=1, zookeepers=1, image=kc_image.tag, distribution="apache-zk", name=f"t{uuid.uuid4().hex[:6]}"))
    try:
        c.start()
        assert c.zookeepers[0].host_port != taken
        assert "taken meanwhile" in capsys.readouterr().err
        assert len(calls) >= 4                                       # ZooKeeper + broker ports, twice
    finally:
        c.remove()
        squatter.close()
    assert not [n for n in leftovers()["containers"] if n.startswith(f"kc-{c.name}-")]
    assert _port_taken(RuntimeError("Bind for 127.0.0.1:1: failed: port is already allocated"))
    assert not _port_taken(RuntimeError("no such image"))


@pytest.mark.parametrize("override", [None, "-Dkafka.chaos.probe=1"])
def test_node_jvms_run_c1_only_unless_overridden(kc_image, monkeypatch, override):
    """Images built here run every JVM with -XX:TieredStopAtLevel=1 (the C1 JIT: far less CPU on a
    small host); KAFKA_CHAOS_JVM_OPTS replaces that for every node."""
    from harness.cluster.cluster import Cluster, ClusterSpec
    from harness.distributions.node_settings import JVM_OPTS_ENV
    if override is None:
        monkeypatch.delenv(JVM_OPTS_ENV, raising=False)
    else:
        monkeypatch.setenv(JVM_OPTS_ENV, override)
    c = Cluster(ClusterSpec(brokers=1, zookeepers=1, image=kc_image.tag, distribution="apache-zk", name=f"j{uuid.uuid4().hex[:6]}"))
    try:
        c.start()
        for n in c.nodes():
            _, args = n.exec(["sh", "-c", "ps -eo args= | grep '[j]ava '"], check=True)
            # never cache host names: a restarted node may get another node's old address
            assert "-Dsun.net.inetaddr.ttl=0" in args, (n.name, args)
            if override is None:
                assert "-XX:TieredStopAtLevel=1" in args, (n.name, args)
            else:
                assert override in args and "TieredStopAtLevel" not in args, (n.name, args)
    finally:
        c.remove()
