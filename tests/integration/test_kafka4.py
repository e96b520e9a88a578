"""Apache Kafka 4.x (KRaft only, Log4j 2): the image builds offline (cached after the first time), a
KRaft scenario passes on it with the kraft-4.x profile, and ZooKeeper mode is refused in one line.

The version is ``KAFKA_CHAOS_KAFKA4_VERSION`` (default 4.1.2); the image is built on first use
(about a minute with the jars cached by an earlier build, plus Maven resolution the very first time).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from harness import images
from harness.cluster.cleanup import list_clusters
from harness.record import read_run
from harness.runner import execute
from suites.catalog import scenarios_for

pytestmark = pytest.mark.docker

KAFKA4_VERSION = os.environ.get("KAFKA_CHAOS_KAFKA4_VERSION", "4.1.2")


@pytest.fixture(scope="module")
def kafka4_image(kc_docker):
    """``kafka-chaos/kafka:<4.x>``, built here unless an up-to-date one exists."""
    built = images.build(KAFKA4_VERSION)
    return images.inspect(built.tag)


def test_image_is_kraft_only(kafka4_image):
    assert kafka4_image.kafka_version == KAFKA4_VERSION
    assert kafka4_image.distribution == "apache-kraft"
    # the classpath has Log4j 2 and no ZooKeeper (asked of the image itself, not of the cache)
    res = subprocess.run(["docker", "run", "--rm", "--entrypoint", "ls", kafka4_image.tag, "/opt/kafka/libs"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    jars = res.stdout.split()
    assert images.missing_jars(KAFKA4_VERSION, jars) == []
    assert not [j for j in jars if j.startswith(("zookeeper", "slf4j-reload4j", "reload4j"))]


def test_zookeeper_mode_is_refused(kafka4_image):
    name = f"k4zk{os.getpid() % 100000}"
    res = subprocess.run([sys.executable, "-m", "harness.cli", "cluster", "up", "--name", name,
                          "--distribution", "apache-zk", "--kafka-version", KAFKA4_VERSION],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        f"kafka-chaos: error: Kafka {KAFKA4_VERSION} has no ZooKeeper mode; use --distribution apache-kraft"]
    assert name not in list_clusters()                      # refused before anything was started


def test_kill_leader_passes_on_kafka4(kafka4_image, tmp_path):
    out = execute(scenarios_for("broker_failover.kill_leader")[0], runs_dir=tmp_path, image=kafka4_image.tag,
                  suite="pytest", distribution="apache-kraft")
    rec = read_run(out.path)
    assert out.verdict == "PASS", f"kill_leader on Kafka {KAFKA4_VERSION}: {out.reason} ({out.path})"
    major, minor = KAFKA4_VERSION.split(".")[:2]
    assert rec.metadata["profile"] == f"kraft-{major}.{minor}"
    assert rec.metadata["kafka_version"] == KAFKA4_VERSION
    assert rec.metadata["distribution"] == "apache-kraft" and rec.metadata["cluster"]["zookeepers"] == 0
    conf = rec.verdict["checks"]["conformance"]
    assert conf["verdict"] == "PASS"
    assert conf["stats"]["quorum_samples"] > 0 and conf["stats"]["elections_judged"] >= 1
    assert rec.verdict["checks"]["durability"]["verdict"] == "PASS"
    assert rec.verdict["checks"]["durability"]["stats"]["acked"] > 0
