"""Ctrl-C in the middle of a fault: `kafka-chaos run` heals, removes its cluster, and publishes the
partial run as UNKNOWN (aborted), exit 2 (issue 8, "Command line")."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from harness import docker_util
from harness.cluster.cleanup import list_clusters
from harness.runner import run_cluster_name
from harness.record import read_run
from tests.subproc import sigint_default

pytestmark = pytest.mark.docker


def _paused_nodes(cluster: str) -> list[str]:
    cs = docker_util.client().containers.list(all=True, filters={"label": f"{docker_util.LABEL_CLUSTER}={cluster}"})
    return [c.name for c in cs if c.status == "paused"]


def test_ctrl_c_mid_fault_heals_removes_and_records_unknown(kc_image, tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "run", "isr.pause_follower", "--runs-dir",
                             str(tmp_path), "--broker-image", kc_image.tag, "--distribution", "apache-zk"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=sigint_default)
    try:
        deadline = time.monotonic() + 240
        cluster = None
        while time.monotonic() < deadline and proc.poll() is None:
            tmp = [p.name for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]
            if tmp:
                cluster = run_cluster_name(tmp[0][-6:])      # with the xdist worker id under -n
                if _paused_nodes(cluster):
                    break
            time.sleep(0.2)
        assert cluster and _paused_nodes(cluster), "the pause fault was never seen applied"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err[-2000:]
    assert "interrupted" in err
    assert cluster not in list_clusters()                     # containers removed
    (run_dir,) = [p for p in tmp_path.iterdir() if not p.name.startswith(".")]  # published, no .tmp- left
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]
    rec = read_run(run_dir)
    assert rec.verdict["verdict"] == "UNKNOWN" and "aborted" in rec.verdict["reason"]
    assert [e for e in rec.of_type("phase") if e["name"] == "aborted"]
    healed = [e for e in rec.of_type("phase") if e["name"] == "faults.healed"]
    assert healed and healed[-1]["residue"] == [] and healed[-1]["errors"] == []
    starts = {e["fault_id"] for e in rec.of_type("fault.start")}
    assert starts and starts == {e["fault_id"] for e in rec.of_type("fault.end")}  # every fault ended
