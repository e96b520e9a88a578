"""`./run.sh test` runs `-n 2 --dist loadgroup`: the conftest's xdist groups must reach xdist.

Before the conftest's hook ran first, xdist had already read the (absent) groups, and Docker tests ran on
both workers at once. This runs a probe file under the same conftest and reads where each test ran."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("xdist")
ROOT = Path(__file__).resolve().parents[1]
PROBE = ROOT / "tests" / "xdist_probe" / "groups_probe.py"


def test_cluster_tests_share_one_worker_and_spark_tests_another(tmp_path):
    env = {**os.environ, "KC_XDIST_PROBE_OUT": str(tmp_path)}
    env.pop("PYTEST_ADDOPTS", None)
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2",
                          "--dist", "loadgroup", str(PROBE)], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    ran = {p.name: p.read_text() for p in tmp_path.iterdir()}
    assert len(ran) == 11, ran
    clusters = {ran[f"cluster{i}"] for i in range(3)} | {ran["cluster-and-spark"]}
    spark = {ran[f"spark{i}"] for i in range(3)}
    assert len(clusters) == 1, ran          # one cluster at a time: every cluster test on one worker
    assert len(spark) == 1, ran
    assert all(w.startswith("gw") for w in clusters | spark), ran
