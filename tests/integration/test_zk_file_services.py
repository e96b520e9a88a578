"""Service containers of a distribution file on real containers: docs/examples/apache-zk-3.9.toml (Apache
Kafka 3.9.2 in ZooKeeper mode whose ZooKeeper is a ``[[service]]`` of role ``zookeeper``) plus a store
service, one cluster. The ZooKeeper service is the cluster's ZooKeeper (readiness by registration,
the ZooKeeper observer's watch and transaction log see the controller's writes, the ZooKeeper fault
targets find it), the store is started first, labelled, paused and cut from the brokers by the
nemesis through ``service:<name>``, and nothing is left running afterwards."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from harness import docker_util
from harness.cluster.cluster import Cluster, ClusterSpec
from harness.nemesis import Nemesis, ZkView
from harness.nemesis.targets import resolve, zookeeper_mode
from harness.observer.zk_history import read_zk_history
from harness.observer.zk_watcher import ZkWatcher
from harness.record import RunRecorder

from waiting import wait_for  # noqa: E402  (tests/integration is on sys.path)

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[2]
ZK_EXAMPLE = ROOT / "docs" / "examples" / "apache-zk-3.9.toml"
# a store that only needs to run: the Kafka image's shell, listening nowhere, with a ready line
STORE = """
[[service]]
name = "store"
port = 9000
ready_log_line = "store ready"
command = ["sh", "-c", "echo store ready; exec sleep 100000"]
"""


def left_behind(name: str) -> list[str]:
    client = docker_util.client()
    cs = client.containers.list(all=True, filters={"label": f"{docker_util.LABEL_CLUSTER}={name}"})
    nets = client.networks.list(names=[f"kc-{name}"])
    return [c.name for c in cs] + [n.name for n in nets]


def test_file_defined_zookeeper_mode_cluster(kc_docker, tmp_path):
    f = tmp_path / "apache-zk-store.toml"
    f.write_text(ZK_EXAMPLE.read_text() + STORE)
    name = f"svc{uuid.uuid4().hex[:6]}"
    cl = Cluster(ClusterSpec(brokers=3, zookeepers=1, distribution=f"file:{f}", name=name))
    try:
        cl.start()
        (zk,) = cl.zookeepers
        (store,) = cl.services
        assert (zk.service, zk.alias, store.service, store.alias) == ("zookeeper", "zookeeper1", "store", "store1")
        labels = zk.container.labels
        assert labels[docker_util.LABEL_SERVICE] == "zookeeper" and labels[docker_util.LABEL_ROLE] == "zookeeper"
        assert store.container.labels[docker_util.LABEL_ROLE] == "service" and store.started()
        # readiness was the brokers' registration in the service's ZooKeeper
        assert cl.registered_brokers() == {1, 2, 3}
        controller = cl.active_controller()
        assert controller in (1, 2, 3)

        # the observer: the live watch and the transaction log see the controller's writes
        watcher = ZkWatcher(cl.zookeeper_connect, emit=lambda *a, **k: None).start()
        try:
            marker = cl.control.history_marker()
            cl.create_topic("svc-t", partitions=2, replication_factor=3)
            deadline = time.monotonic() + 30
            while watcher.partition_state("svc-t", 1) is None and time.monotonic() < deadline:
                time.sleep(0.2)
            assert watcher.controller_id() == controller
            assert watcher.partition_state("svc-t", 1)["leader"] in (1, 2, 3)
        finally:
            watcher.stop()
        writes = cl.control.writes_since(marker)
        assert {(w["kind"], w["partition"]) for w in writes if w.get("topic") == "svc-t"} >= {
            ("assignment", 0), ("state", 0), ("state", 1)}, writes
        hist = read_zk_history(cl)
        assert hist is not None and any(e.get("type") == "zk.controller" for e in hist.events)

        # faults on services, through the nemesis and the targets a schedule names
        rec = RunRecorder(tmp_path / "runs", "services.test")
        nem = Nemesis(cl, rec, ZkView(cl), seed=1)
        # srvr through `nc -w 2` in the container: a loaded host may miss one answer (TargetUnresolved)
        assert wait_for(lambda: zookeeper_mode(zk), 30, "srvr answered") == "standalone"
        assert resolve("zookeeper-leader", cl, None, None) == [zk]
        assert resolve("service:zookeeper", cl, None, None) == [zk]
        paused = nem.apply("pause", "service:store")
        assert store.status() == "paused"
        nem.heal(paused)
        assert store.status() == "running"
        cut = nem.apply("partition", "service:store")
        # the store takes no rules: every other node drops its traffic
        assert cut.detail["rules"] > 0 and set(cut.installed) == {f"kc-{name}-b{b}" for b in (1, 2, 3)} | {zk.name}
        nem.heal(cut)
        killed = nem.apply("kill", "service:store")
        assert store.status() in ("exited", "dead")
        nem.heal(killed)
        assert store.status() == "running" and store.started()
        assert nem.heal_all() == []
    finally:
        cl.remove()
    assert left_behind(name) == []
