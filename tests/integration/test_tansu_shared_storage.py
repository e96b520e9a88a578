"""Layout shared-storage on real containers: Tansu 0.6.0 (three stateless brokers) over a SeaweedFS S3
store run as the distribution file's ``[[service]]`` (docs/examples/tansu.toml; images from
``kafka-chaos images build-tansu``). The preflight passes with every broker reporting node id 111 at
its own published address; the store is paused, cut from the brokers and killed through the nemesis
(``service:store``), and what the brokers acknowledged before the faults is read back after the heals."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from harness import distributions
from harness import docker_util
from harness.cluster.cluster import Cluster, ClusterSpec
from harness.foreign_images import build_seaweedfs, build_tansu
from harness.nemesis import Nemesis
from harness.certify.preflight import preflight
from harness.record import RunRecorder

# long: the first `images build-tansu` compiles Tansu with cargo (15-45 min on 2 cores), far past the CI
# budget; run on demand: ./run.sh test -m long -k tansu (or pytest -m long tests/integration/test_tansu_shared_storage.py)
pytestmark = [pytest.mark.docker, pytest.mark.long]

TANSU = Path(__file__).resolve().parents[2] / "docs" / "examples" / "tansu.toml"


@pytest.fixture(scope="module")
def tansu_images(kc_docker):
    build_tansu()           # cached by input hash: instant once built (the first cargo build takes 15-30 min)
    build_seaweedfs()


def left_behind(name: str) -> list[str]:
    client = docker_util.client()
    cs = client.containers.list(all=True, filters={"label": f"{docker_util.LABEL_CLUSTER}={name}"})
    return [c.name for c in cs] + [n.name for n in client.networks.list(names=[f"kc-{name}"])]


def test_the_tansu_file_passes_the_preflight(tansu_images):
    r = preflight(distributions.resolve(file=TANSU))
    assert r.ok, r.line
    assert r.node_ids == [1, 2, 3]
    # each stateless broker reports itself as node 111, at its own published address
    assert r.facts["reported_node_ids"] == {"1": [111], "2": [111], "3": [111]}, r.facts
    assert len(set(r.advertised.values())) == 3 and all(a.startswith("127.0.0.1:") for a in r.advertised.values())


def _produce(cl: Cluster, topic: str, values: list[bytes], timeout_s: float) -> list[bytes]:
    """The values the brokers acknowledged (acks=all) within ``timeout_s``."""
    from confluent_kafka import Producer
    acked: list[bytes] = []
    p = Producer({"bootstrap.servers": cl.bootstrap_servers, "acks": "all", "enable.idempotence": True,
                  "message.timeout.ms": int(timeout_s * 1000)})
    for v in values:
        p.produce(topic, v, on_delivery=lambda err, msg: acked.append(msg.value()) if err is None else None)
    p.flush(timeout_s + 5)
    return acked


def _read_all(cl: Cluster, topic: str, want: int, timeout_s: float = 60) -> list[bytes]:
    import time

    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": cl.bootstrap_servers, "group.id": f"read-{uuid.uuid4().hex[:6]}",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        got: list[bytes] = []
        deadline = time.monotonic() + timeout_s
        while len(got) < want and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value())
        return got
    finally:
        c.close()


def test_store_faults_are_applied_and_healed(tansu_images, tmp_path):
    name = f"h94ss{uuid.uuid4().hex[:5]}"
    cl = Cluster(ClusterSpec(brokers=3, distribution=f"file:{TANSU}", name=name))
    try:
        cl.start()
        (store,) = cl.services
        assert (store.service, store.alias) == ("store", "store1") and store.started()
        assert store.container.labels[docker_util.LABEL_ROLE] == "service"
        cl.create_topic("ss", partitions=1, replication_factor=1)
        acked = _produce(cl, "ss", [f"before-{i}".encode() for i in range(20)], 20)
        assert len(acked) == 20

        nem = Nemesis(cl, RunRecorder(tmp_path / "runs", "storage.test"), seed=1)
        paused = nem.apply("pause", "service:store")
        assert store.status() == "paused"
        nem.heal(paused)
        assert store.status() == "running"
        cut = nem.apply("partition", "service:store")
        # the store takes no rules: every broker drops its traffic to and from it
        assert cut.detail["rules"] > 0 and set(cut.installed) == {f"kc-{name}-b{b}" for b in (1, 2, 3)}
        nem.heal(cut)
        killed = nem.apply("kill", "service:store")
        assert store.status() in ("exited", "dead")
        nem.heal(killed)                  # started again, ready once it logged its ready line again
        assert store.status() == "running" and store.started()
        assert nem.heal_all() == []

        acked += _produce(cl, "ss", [f"after-{i}".encode() for i in range(20)], 60)
        assert len(acked) == 40, acked
        # everything acknowledged, before and after the faults, is in the store and read back in order
        assert _read_all(cl, "ss", len(acked)) == acked
    finally:
        cl.remove()
    assert left_behind(name) == []
