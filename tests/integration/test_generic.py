"""The ``generic`` distribution against an image configured exactly like the official
``apache/kafka`` image (issue 8): docs/examples/official-style-image, whose entrypoint hands the
KAFKA_* environment to Kafka's own ``kafka.docker.KafkaDockerWrapper setup`` (the conversion the
official 3.7+ images run) and then starts the broker as ``appuser``. The image carries no
kafka-chaos label, so the harness knows nothing of it but the env-var contract.

The image is built FROM the harness's Kafka image (``--broker-image`` / ``--kafka-version``, 3.7+
where the wrapper exists), offline; Docker's cache makes a rebuild take about a second. Every test
makes at most one cluster and removes it before the next one starts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from harness import distributions, images
from harness.cluster.cleanup import leftovers
from harness.cluster.cluster import Cluster, ClusterSpec
from harness.errors import HarnessError
from harness.record import read_run
from harness.runner import execute
from suites.catalog import scenarios_for

from roundtrip import assert_round_trip  # noqa: E402  (tests/integration is on sys.path)

pytestmark = pytest.mark.docker

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "official-style-image"
WAIT_S = 120.0


def _version(v: str | None) -> tuple[int, ...]:
    return tuple(int(x) for x in (v or "0").split(".")[:2])


@pytest.fixture(scope="module")
def official_image(kc_image, kc_docker):
    """The example image built FROM the harness's Kafka image (kept: the tag names its base version)."""
    if _version(kc_image.kafka_version) < (3, 7):
        pytest.skip(f"kafka.docker.KafkaDockerWrapper exists from Kafka 3.7; {kc_image.tag} is "
                    f"{kc_image.kafka_version}")
    tag = f"kafka-chaos-example/official-style:{kc_image.kafka_version}"
    t0 = time.monotonic()
    res = subprocess.run(["docker", "build", "-q", "-t", tag, "--build-arg", f"KAFKA_IMAGE={kc_image.tag}",
                          str(EXAMPLE)], capture_output=True, text=True, env={**os.environ, "DOCKER_BUILDKIT": "0"})
    assert res.returncode == 0, res.stderr
    print(f"\n{tag} built in {time.monotonic() - t0:.1f} s")
    return images.inspect(tag)


def _server_properties(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            k, v = line.split("=", 1)
            out[k] = v
    return out


def test_the_example_image_is_foreign_to_the_harness(official_image, kc_docker):
    labels = kc_docker.images.get(official_image.tag).labels or {}
    assert not [k for k in labels if k.startswith("kafka-chaos")], labels
    assert official_image.distribution == "generic" and official_image.kafka_version is None
    for name in ("apache-zk", "apache-kraft"):
        with pytest.raises(HarnessError, match="generic"):
            distributions.resolve(name).check_image(official_image)


def test_generic_cluster_is_configured_by_kafka_docker_wrapper(official_image, kc_docker):
    """Every property the harness plans reaches the broker through the real wrapper unchanged; the
    broker runs unprivileged; a killed node restarts on its formatted storage and rejoins; records
    produced with acks=all are all consumed; removal leaves no container or anonymous volume."""

    cl = Cluster(ClusterSpec(brokers=3, distribution="generic", image=official_image.tag, startup_timeout_s=240))
    volumes: list[str] = []
    try:
        t0 = time.monotonic()
        cl.start()
        print(f"\ngeneric cluster {cl.name} ready in {time.monotonic() - t0:.1f} s")
        for node in cl.brokers.values():
            volumes += [m["Name"] for m in node.container.attrs["Mounts"] if m.get("Type") == "volume"]
            env = dict(e.split("=", 1) for e in node.container.attrs["Config"]["Env"] if "=" in e)
            assert "KC_CONFIG" not in env and env["CLUSTER_ID"] == cl.cluster_id
            # the broker's actual configuration, written by KafkaDockerWrapper from the environment
            written = _server_properties(node.exec(["cat", "/opt/kafka/config/server.properties"], check=True)[1])
            planned = cl.distribution.node_config(cl.broker_config, node, [cl.brokers[b] for b in cl.broker_ids])
            assert written == planned
            # the broker JVM runs as the image's user (the harness's own execs run as root)
            users = node.exec(["sh", "-c", "ps -eo user=,args= | grep '[k]afka.Kafka' | awk '{print $1}' | sort -u"],
                              check=True)[1].split()
            assert users == ["appuser"], users
        assert len(volumes) == 6                     # the image's two VOLUMEs, per node
        assert "Formatting metadata directory /var/lib/kafka/data" in cl.brokers[2].logs(tail=5000)
        q = cl.quorum()
        assert q.error is None and sorted(v.replica_id for v in q.voters) == [1, 2, 3]
        assert cl.registered_brokers() == {1, 2, 3}

        topic = f"gen-{uuid.uuid4().hex[:6]}"
        cl.create_topic(topic, partitions=3, replication_factor=3)
        deadline = time.monotonic() + 60
        while True:
            (t,) = cl.protocol_metadata([topic]).topics
            if t.error is None and len(t.partitions) == 3 or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        assert t.error is None and all(sorted(p.isr) == [1, 2, 3] for p in t.partitions)

        # a killed node comes back on the storage formatted at its first start ("already formatted")
        cl.kill_broker(3)
        cl.start_broker(3, timeout_s=WAIT_S)
        cl.wait_ready(WAIT_S)
        assert "already formatted" in cl.brokers[3].logs(tail=5000)

        assert_round_trip(cl.bootstrap_servers, topic, 300, 90)
    finally:
        cl.remove()
    assert not [c for c in leftovers()["containers"] if c.startswith(f"kc-{cl.name}-")]
    left = {v.name for v in kc_docker.volumes.list()}
    assert not left & set(volumes)


def test_kill_leader_passes_on_the_official_style_image(official_image, tmp_path):
    """broker_failover.kill_leader through the runner, judged with the ``compatible`` profile."""
    out = execute(scenarios_for("broker_failover.kill_leader")[0], runs_dir=tmp_path, image=official_image.tag,
                  suite="pytest", distribution="generic", profile="compatible")
    rec = read_run(out.path)
    assert out.verdict == "PASS", f"{out.reason} ({out.path})"
    assert rec.metadata["distribution"] == "generic" and rec.metadata["cluster"]["zookeepers"] == 0
    assert not rec.of_type("zk.partition_state", "zk.controller")
    conf = rec.verdict["checks"]["conformance"]
    assert conf["stats"]["samples"] > 0 and conf["stats"]["quorum_samples"] > 0
    assert conf["stats"]["leader_changes"] >= 1 and conf["stats"]["elections_judged"] >= 1
    assert rec.verdict["checks"]["durability"]["verdict"] == "PASS"


@pytest.mark.long      # ~5 min: every KRaft-capable reassignment scenario; test_certify covers certify's path
def test_certify_takes_a_foreign_image_as_generic(official_image, tmp_path):
    """Without --distribution, certify runs a foreign image as ``generic`` (no ZooKeeper): a
    ZooKeeper-mode profile is refused before any cluster starts; with ``compatible`` and
    ``--parallel 2`` (a ``kafka-chaos run --distribution generic`` child) the reassignment capability
    is certified: Kafka's reassignment tool ran inside the image, which has no harness launcher."""
    def certify(*args):
        return subprocess.run([sys.executable, "-m", "harness.cli", "certify", "--broker-image", official_image.tag,
                               "--out", str(tmp_path / "cert"), *args],
                              capture_output=True, text=True, timeout=1200)
    r = certify("--capability", "broker_failover", "--profile", "apache-zk-3.9")
    assert r.returncode == 2 and "has no ZooKeeper" in r.stderr, r.stderr
    assert not (tmp_path / "cert" / "runs").exists()
    r = certify("--capability", "reassignment", "--profile", "compatible", "--parallel", "2")
    assert r.returncode == 0, r.stderr[-3000:]
    cert = json.loads((tmp_path / "cert" / "certificate.json").read_text())
    assert cert["overall"] == "CERTIFIED" and cert["subject"]["distribution"] == "generic"
    (cap,) = [c for c in cert["capabilities"] if c["name"] == "reassignment"]
    ran = [s for s in cap["scenarios"] if s["status"] != "NOT-APPLICABLE"]   # the others need ZooKeeper
    kraft_capable = [s.name for s in scenarios_for("reassignment") if s.kraft and "conformance" in s.tags]
    assert "reassignment.move_replicas" in kraft_capable
    assert cap["status"] == "PASS" and [(s["name"], s["status"]) for s in ran] == [(n, "PASS") for n in kraft_capable]
    (move,) = [s for s in ran if s["name"] == "reassignment.move_replicas"]
    rec = read_run(tmp_path / "cert" / move["runs"][-1]["path"])
    assert rec.metadata["distribution"] == "generic"
    acts = [e for e in rec.of_type("action") if e["action"] == "reassign"]
    assert [(e["params"]["via"], e["ok"]) for e in acts] == [("tool", True)], acts
