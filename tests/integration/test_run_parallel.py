"""`kafka-chaos run FAMILY --parallel 2`: two scenarios at once, each in its own process and cluster."""

from __future__ import annotations

import subprocess
import sys

import pytest

from harness.cluster.cleanup import list_clusters
from harness.record import read_run

pytestmark = pytest.mark.docker


def test_two_scenarios_in_parallel_each_with_its_own_cluster(kc_image, tmp_path):
    out = subprocess.run([sys.executable, "-m", "harness.cli", "run", "controller_failover", "--parallel", "2",
                          "--seed", "5", "--runs-dir", str(tmp_path), "--broker-image", kc_image.tag, "--distribution", "apache-zk"],
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    recs = [read_run(p) for p in sorted(tmp_path.iterdir()) if not p.name.startswith(".")]
    assert sorted(r.metadata["scenario"] for r in recs) == ["controller_failover.delete_controller_znode",
                                                             "controller_failover.kill_controller"]
    assert all(r.verdict["verdict"] == "PASS" for r in recs)
    assert len({r.metadata["cluster_name"] for r in recs}) == 2       # isolated clusters
    assert all(r.metadata["seed"] == 5 and r.metadata["suite"] == "adhoc" for r in recs)
    # they really overlapped in time: each started before the other ended
    a, b = sorted(recs, key=lambda r: r.metadata["started_at"])
    assert b.metadata["started_at"] <= a.metadata["ended_at"]
    assert "2/2 PASS" in out.stderr
    assert not {r.metadata["cluster_name"] for r in recs} & set(list_clusters())   # both removed
    logs = sorted((tmp_path / ".logs").iterdir())
    assert len(logs) == 2 and all("PASS" in p.read_text() for p in logs)
