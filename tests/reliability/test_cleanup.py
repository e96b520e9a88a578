"""Nothing outlives its owner (issue 14, item 3): what a dead harness process left is removed by the next
``kafka-chaos`` command, a live process's cluster and `cluster up` clusters never are, and a second
Ctrl-C during cleanup does not cut it short.

The first tests need no Docker (owner markers, record directories, the signal shield); the others run
real clusters and real ``kafka-chaos`` processes, killed with real signals.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from harness.cluster import lifecycle, owner
from harness.docker_util import LABEL, LABEL_OWNER_PID
from tests.subproc import sigint_default

ROOT = Path(__file__).resolve().parents[2]


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


# -- owners and record directories (no Docker) -------------------------------------------------------
def test_owner_alive_dead_reused_and_foreign():
    me = owner.this_owner()
    assert owner.owner_alive(me["pid"], me["host"], me["start"]) is True
    assert owner.owner_alive(_dead_pid(), me["host"]) is False
    assert owner.owner_alive(me["pid"], me["host"], "1") is False           # same pid, other start: reused
    assert owner.owner_alive(me["pid"], "some-other-host", me["start"]) is None
    assert owner.owner_alive(None, me["host"]) is None


def _record_left_by_a_dead_process(runs: Path, registry: Path) -> Path:
    """A real RunRecorder in a child process that dies without finishing (os._exit)."""
    code = textwrap.dedent(f"""
        import os
        from harness.cluster.owner import mark_record_dir
        from harness.record import RunRecorder
        rec = RunRecorder({str(runs)!r}, "x.y", on_open=mark_record_dir)
        rec.phase("cluster.ready")
        os._exit(9)
    """)
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**os.environ, "KAFKA_CHAOS_RECORD_REGISTRY": str(registry)},
                   check=False, timeout=60)
    (tmp,) = runs.glob(".tmp-*")
    return tmp


def test_a_dead_owners_record_dir_is_found_through_the_registry_and_removed(tmp_path, monkeypatch):
    registry = tmp_path / "registry"
    monkeypatch.setenv("KAFKA_CHAOS_RECORD_REGISTRY", str(registry))
    tmp = _record_left_by_a_dead_process(tmp_path / "runs", registry)
    assert json.loads((tmp / ".owner").read_text())["host"] == owner.this_owner()["host"]
    assert len(list(registry.glob("*.json"))) == 1
    # a live owner's in-progress record (this process) is left alone
    from harness.record import RunRecorder
    live = RunRecorder(tmp_path / "runs", "live.one", on_open=owner.mark_record_dir)
    found = lifecycle.find(docker=False)                       # no runs dir given: the registry finds it
    assert [i.name for i in found] == [str(tmp)] and found[0].kind == "record"
    assert lifecycle.reap(docker=False, dry_run=True) and tmp.is_dir()   # a dry run removes nothing
    assert [i.name for i in lifecycle.reap(docker=False)] == [str(tmp)]
    assert not tmp.exists() and live.tmp_dir.is_dir()
    live.finish("PASS", "ok")
    assert lifecycle.find(docker=False) == []
    assert not list(registry.glob("*.json"))                   # stale entries (published, removed) dropped


def test_a_record_dir_without_owner_marker_is_never_removed(tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKA_CHAOS_RECORD_REGISTRY", str(tmp_path / "registry"))
    legacy = tmp_path / "runs" / ".tmp-20250101T000000Z-old-abcdef"
    legacy.mkdir(parents=True)
    assert lifecycle.reap(docker=False, runs_dirs=[tmp_path / "runs"]) == [] and legacy.is_dir()


@pytest.fixture
def default_sigint():
    """Python's own SIGINT handler for the test (a Spark test earlier in this process installs its own),
    the process's handler back afterwards."""
    before = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def test_shield_defers_signals_until_cleanup_is_done(capfd, default_sigint):
    finished = []
    with pytest.raises(KeyboardInterrupt):
        with lifecycle.Shield("test cleanup"):
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.1)
            finished.append(True)                  # reached: neither signal interrupted the cleanup
    assert finished == [True]
    err = capfd.readouterr().err
    assert "SIGINT noted; test cleanup is finishing first" in err and "SIGTERM noted" in err
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler   # handlers restored


def test_shield_without_signal_raises_nothing():
    with lifecycle.Shield():
        pass


# -- real clusters ---------------------------------------------------------------------------------------
def _kc(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def _owned_by(pid: int) -> list[str]:
    """Names of labelled containers, networks and volumes whose owner label is ``pid``."""
    from harness import docker_util
    api = docker_util.client().api
    f = {"label": [f"{LABEL}=1", f"{LABEL_OWNER_PID}={pid}"]}
    return ([c["Names"][0] for c in api.containers(all=True, filters=f)] + [n["Name"] for n in api.networks(filters=f)]
            + [v["Name"] for v in (api.volumes(filters=f) or {}).get("Volumes") or []])


def _start_run_until_fault(runs: Path, image: str, scenario: str = "broker_failover.kill_leader"):
    """A real `kafka-chaos run` subprocess, returned once its first fault is applied (and its tmp dir)."""
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "run", scenario, "--runs-dir", str(runs),
                             "--broker-image", image, "--distribution", "apache-zk"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=sigint_default)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        for tmp in runs.glob(".tmp-*"):
            ev = tmp / "events.jsonl"
            if ev.exists() and b'"fault.start"' in ev.read_bytes():
                return proc, tmp
        time.sleep(0.3)
    proc.kill()
    out, err = proc.communicate(timeout=60)
    pytest.fail(f"the run never applied a fault (exit {proc.returncode}): {err[-1500:]}")


@pytest.mark.docker
def test_sigkill_mid_fault_then_any_command_removes_everything_it_left(kc_image, tmp_path):
    proc, tmp = _start_run_until_fault(tmp_path, kc_image.tag)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    left = _owned_by(proc.pid)
    assert len(left) >= 5, left                  # 1 ZooKeeper + 3 brokers + the network, left behind
    assert tmp.is_dir()
    res = _kc("images", "list")                  # any command
    assert res.returncode == 0, res.stderr
    assert "left by dead kafka-chaos processes" in res.stderr and str(proc.pid) in res.stderr
    assert _owned_by(proc.pid) == []
    assert not tmp.exists()


@pytest.mark.docker
def test_two_sigints_during_a_run_leave_nothing_and_publish_unknown_aborted(kc_image, tmp_path):
    from harness.record import read_run
    proc, tmp = _start_run_until_fault(tmp_path, kc_image.tag)
    proc.send_signal(signal.SIGINT)
    for later, sig in ((1.0, signal.SIGINT), (2.0, signal.SIGTERM)):   # while the first is handled: heal,
        time.sleep(later)                                              # remove the cluster, publish
        if proc.poll() is None:
            proc.send_signal(sig)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err[-2000:]
    assert "noted;" in err and "is finishing first" in err, err[-2000:]
    assert _owned_by(proc.pid) == []             # before any other command: the run removed it all itself
    assert not list(tmp_path.glob(".tmp-*"))
    (run_dir,) = [p for p in tmp_path.iterdir() if not p.name.startswith(".")]
    rec = read_run(run_dir)
    assert rec.verdict["verdict"] == "UNKNOWN" and rec.verdict["cause"] == "aborted", rec.verdict


@pytest.mark.docker
def test_a_live_owners_cluster_is_not_reaped(kc_cluster_factory):
    cl = kc_cluster_factory(brokers=1, zookeepers=1)      # owned by this (live) pytest process
    res = _kc("images", "list")
    assert res.returncode == 0 and "left by dead" not in res.stderr, res.stderr
    dry = _kc("cleanup", "--dead-only", "--dry-run")
    assert dry.returncode == 0 and cl.name not in dry.stdout, dry.stdout
    assert all(n.status() == "running" for n in cl.nodes())
    assert _owned_by(os.getpid())


@pytest.mark.docker
def test_cluster_up_clusters_outlive_their_creator_until_cluster_down(kc_image):
    name = f"h2keep{os.getpid() % 10000}"
    up = _kc("cluster", "up", "--name", name, "--brokers", "1", "--broker-image", kc_image.tag, "--distribution", "apache-zk")
    try:
        assert up.returncode == 0, up.stderr[-1500:]
        from harness.cluster.cleanup import list_clusters
        assert name in list_clusters()                   # its creator has exited
        assert _kc("images", "list").returncode == 0
        dry = _kc("cleanup", "--dead-only", "--dry-run")
        assert name not in dry.stdout
        assert name in list_clusters()
    finally:
        down = _kc("cluster", "down", "--name", name)
    assert down.returncode == 0, down.stderr
    from harness.cluster.cleanup import list_clusters
    assert name not in list_clusters()
