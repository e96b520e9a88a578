"""``kafka-chaos`` error paths that need a real Docker engine (the rest: tests/test_cli_usage.py).

Each test runs the real command line as a subprocess and asserts the documented exit code (2: usage
or environment error), exactly one ``error:`` line on stderr and no traceback. Only the first test
starts a cluster (one ZooKeeper + one broker); it removes it itself. tests/integration/test_cli.py
already covers an unknown version, a missing image for ``cluster up``, Docker unreachable, a port
conflict and a second ``cluster up`` after the first finished.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from harness.cluster.cleanup import list_clusters
from harness.cluster.cluster import Cluster

pytestmark = pytest.mark.docker

MISSING_IMAGE = "does/not:exist"


def kc(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "KAFKA_CHAOS_QUIET": "1"})


def one_error_line(res: subprocess.CompletedProcess, code: int = 2) -> str:
    assert "Traceback" not in res.stderr, res.stderr
    assert res.returncode == code, (res.returncode, res.stderr)
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "error:" in lines[0], res.stderr
    return lines[0]


def test_two_cluster_ups_of_one_name_at_once(kc_image):
    """Both pass "already exists" at the same moment: one must start the cluster, the other stop at once
    with one line — not collide on container names and remove the first one's containers too."""
    name = f"twice{os.getpid() % 100000}"
    cmd = [sys.executable, "-m", "harness.cli", "cluster", "up", "--name", name, "--brokers", "1",
           "--broker-image", kc_image.tag, "--distribution", "apache-zk"]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "KAFKA_CHAOS_QUIET": "1"}) for _ in range(2)]
    try:
        results = [(p, *p.communicate(timeout=300)) for p in procs]
        winners = [r for r in results if r[0].returncode == 0]
        losers = [r for r in results if r[0].returncode != 0]
        assert len(winners) == 1 and len(losers) == 1, [(p.returncode, err) for p, _, err in results]
        _, out, _ = winners[0]
        loser, _, err = losers[0]
        line = one_error_line(subprocess.CompletedProcess(cmd, loser.returncode, "", err))
        assert f"a cluster named {name!r} is being started by another `kafka-chaos cluster up`" in line
        # the winner's cluster is whole and serves what `up` printed
        nodes = Cluster.attach(name).nodes()
        assert sorted(n.role for n in nodes) == ["broker", "zookeeper"]
        assert all(n.status() == "running" for n in nodes)
        printed = dict(kv.split("=", 1) for kv in out.splitlines() if "=" in kv)
        from confluent_kafka.admin import AdminClient
        md = AdminClient({"bootstrap.servers": printed["bootstrap.servers"]}).list_topics(timeout=30)
        assert set(md.brokers) == {1}
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=60)
        kc("cluster", "down", "--name", name)
    assert name not in list_clusters()


@pytest.mark.parametrize("action", ["status", "down"])
def test_status_or_down_of_a_cluster_that_does_not_exist(kc_docker, action):
    name = f"nosuch{os.getpid() % 100000}"
    assert name not in list_clusters()
    line = one_error_line(kc("cluster", action, "--name", name))
    assert f"no cluster named {name!r}" in line and "kafka-chaos cluster status" in line


@pytest.mark.parametrize("command", [["run", "isr.pause_follower"], ["certify", "--profile", "compatible"]],
                         ids=["run", "certify"])
def test_a_broker_image_that_is_not_here(kc_docker, tmp_path, command):
    before = set(list_clusters())
    line = one_error_line(kc(*command, "--broker-image", MISSING_IMAGE, "--runs-dir", str(tmp_path / "runs")))
    assert f"image {MISSING_IMAGE} is not present locally" in line
    assert set(list_clusters()) <= before          # nothing was started
    assert not any((tmp_path / "runs").glob("*"))  # and no run record written


def test_replay_of_a_record_whose_image_is_gone(kc_docker, tmp_path):
    rec = tmp_path / "20261121T000000Z-isr.pause_follower-abcdef"
    rec.mkdir()
    (rec / "metadata.json").write_text(json.dumps({
        "schema_version": 1, "run_id": rec.name, "scenario": "isr.pause_follower", "seed": 0, "schedule": [],
        "broker_image": MISSING_IMAGE, "kafka_version": None, "profile": "compatible", "suite": "adhoc",
        "broker_config": {}}))
    line = one_error_line(kc("run", "--replay", str(rec), "--runs-dir", str(tmp_path / "runs")))
    assert f"the recorded image {MISSING_IMAGE!r} is not here" in line and "pass --broker-image" in line
