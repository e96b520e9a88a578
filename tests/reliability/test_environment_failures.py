"""Faults in the environment, not the broker, end a run as UNKNOWN with their cause, never FAIL.

Each test runs a real scenario through the command line (``kafka-chaos run``) on a real cluster, and
while its fault is applied does to the cluster what a host problem would: removes a broker container,
or stops the ZooKeeper container, from outside the harness.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness import docker_util

pytestmark = pytest.mark.docker
ROOT = Path(__file__).resolve().parents[2]


def _start_run(runs: Path, scenario: str, *args: str) -> subprocess.Popen:
    env = dict(os.environ, KAFKA_CHAOS_QUIET="1", TESTCONTAINERS_RYUK_DISABLED="true")
    return subprocess.Popen([sys.executable, "-m", "harness.cli", "run", scenario, "--runs-dir", str(runs), *args],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_fault(runs: Path, proc: subprocess.Popen, timeout_s: float = 240) -> list[str]:
    """Until the run in progress has recorded its first fault.start (bounded); the containers it names."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the run ended before its fault: {proc.communicate()}"
        for ev in runs.glob(".tmp-*/events.jsonl"):
            for line in ev.read_text(errors="replace").splitlines():
                if '"fault.start"' in line:
                    try:
                        return json.loads(line).get("nodes") or []
                    except ValueError:       # the line is still being written
                        break
        time.sleep(0.5)
    pytest.fail("no fault.start within the bound")


def _owned_containers(pid: int) -> dict:
    cs = docker_util.client().containers.list(all=True, filters={"label": f"{docker_util.LABEL_OWNER_PID}={pid}"})
    return {c.name: c for c in cs}


def _finish(proc: subprocess.Popen, timeout_s: float = 420) -> tuple[int, str]:
    try:
        _, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        pytest.fail(f"the run did not end within {timeout_s} s: {err[-2000:]}")
    return proc.returncode, err


def _verdict(runs: Path) -> dict:
    [d] = [p for p in runs.iterdir() if p.is_dir() and not p.name.startswith(".")]
    return json.loads((d / "verdict.json").read_text())


def test_broker_container_removed_from_outside_is_unknown_container_removed(tmp_path, kc_docker, kc_image):
    runs = tmp_path / "runs"
    proc = _start_run(runs, "broker_failover.kill_leader")
    try:
        faulted = _wait_for_fault(runs, proc)
        brokers = {n: c for n, c in _owned_containers(proc.pid).items() if c.labels.get(docker_util.LABEL_ROLE) == "broker"}
        # remove a broker the fault left running (the killed leader may not be dead yet when fault.start is
        # recorded; removing that one is UNKNOWN too: tests/verdict/test_verdict_decide.py)
        victim = next(c for n, c in brokers.items() if n not in faulted)
        victim.remove(force=True)
        rc, err = _finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    v = _verdict(runs)
    assert (v["verdict"], v["cause"]) == ("UNKNOWN", "container-removed"), (v["reason"], err[-3000:])
    assert victim.name in v["reason"]
    assert rc == 4, err[-3000:]            # ran, undecided
    # no wait for a full ISR the removed container's replicas cannot give back
    [d] = [p for p in runs.iterdir() if p.is_dir() and not p.name.startswith(".")]
    phases = [json.loads(line) for line in (d / "events.jsonl").read_text().splitlines() if '"phase"' in line]
    assert any(p.get("name") == "progress.not_awaited" and victim.name in p.get("reason", "") for p in phases)
    assert not _owned_containers(proc.pid), "the run left containers behind"


def test_zookeeper_container_stopped_from_outside_is_unknown(tmp_path, kc_docker, kc_image):
    runs = tmp_path / "runs"
    proc = _start_run(runs, "broker_failover.pause_leader", "--distribution", "apache-zk")   # a ZooKeeper to stop
    try:
        _wait_for_fault(runs, proc)
        [zk] = [c for c in _owned_containers(proc.pid).values()
                if c.labels.get(docker_util.LABEL_ROLE) == "zookeeper"]
        zk.stop(timeout=5)
        rc, err = _finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    v = _verdict(runs)
    assert (v["verdict"], v["cause"]) == ("UNKNOWN", "container-stopped"), (v["reason"], err[-3000:])
    assert zk.name in v["reason"]
    assert rc == 4
    assert not _owned_containers(proc.pid)
