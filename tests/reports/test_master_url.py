"""``kafka-chaos report --master URL`` against a real Spark standalone cluster on 127.0.0.1.

The module starts a standalone master and one worker (1 core, 1 GB) with the ``spark_standalone``
fixture of ``tests/conftest.py`` (PySpark's own classes, own process groups, bounded waits, killed at
the module's end). The report job then runs as the CLI, in a subprocess (its own driver JVM), once
with ``--master spark://127.0.0.1:PORT`` and once with the default ``local[*]``; both must give the
same totals, and summary.json must name the master the job really ran on.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
SYNTHETIC = ROOT / "tests" / "fixtures" / "runs" / "synthetic"
REPORT_TIMEOUT_S = 1500


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def standalone_master(spark_standalone, tmp_path_factory):
    """``spark://127.0.0.1:PORT`` of a running standalone master with one registered worker."""
    with spark_standalone(tmp_path_factory.mktemp("spark-standalone"), workers=1) as url:
        yield url


def _report(out: Path, *extra: str) -> tuple[subprocess.CompletedProcess, dict, float]:
    t0 = time.monotonic()
    # --trust-stored: the fixtures' verdicts are chosen by hand (tests/reports/test_job.py)
    r = subprocess.run([sys.executable, "-m", "harness.cli", "report", str(SYNTHETIC), "-o", str(out), "--no-summaries",
                        "--trust-stored", *extra],
                       capture_output=True, text=True, timeout=REPORT_TIMEOUT_S, cwd=ROOT)
    seconds = time.monotonic() - t0
    summary = json.loads((out / "summary.json").read_text()) if (out / "summary.json").exists() else {}
    return r, summary, seconds


def test_report_on_a_standalone_master_matches_local(standalone_master, tmp_path):
    remote, s_remote, t_remote = _report(tmp_path / "standalone", "--master", standalone_master)
    assert remote.returncode == 1, remote.stderr[-3000:]          # the synthetic fixtures fail the gate
    assert s_remote, remote.stderr[-3000:]
    assert s_remote["spark"]["master"] == standalone_master
    assert "report: 10 runs (6 PASS, 3 FAIL, 1 UNKNOWN)" in remote.stdout
    # the executors (in the worker) wrote the Parquet tables into OUT
    assert any((tmp_path / "standalone" / "tables" / "runs").glob("part-*.parquet"))

    local, s_local, t_local = _report(tmp_path / "local", "--no-parquet", "--max-timelines", "0")
    assert local.returncode == 1, local.stderr[-3000:]
    assert s_local["spark"]["master"] == "local[*]"
    assert s_remote["totals"] == s_local["totals"]
    assert s_remote["gate"] == s_local["gate"] and s_remote["skipped_records"] == s_local["skipped_records"]
    assert {k: v for k, v in s_remote["tables"].items()} == s_local["tables"]
    print(f"report on {standalone_master}: {t_remote:.1f} s; local[*]: {t_local:.1f} s")


@pytest.mark.parametrize("master", ["nonsense://nowhere", "spark://no-port", "local[x]"])
def test_bad_master_url_is_one_error_line_and_exit_2(master, tmp_path):
    r = subprocess.run([sys.executable, "-m", "harness.cli", "report", str(SYNTHETIC), "-o", str(tmp_path / "o"),
                        "--master", master], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [f"kafka-chaos: error: --master {master!r} is not a Spark master URL (expected "
                                             "local, local[N], local[*], local[N,F], spark://HOST:PORT[,HOST:PORT], "
                                             "yarn, k8s://URL)"]
    assert r.stdout == "" and not (tmp_path / "o").exists()       # refused before Spark started


def test_unreachable_master_is_one_error_line_and_exit_5(tmp_path):
    master = f"spark://127.0.0.1:{_free_port()}"          # nothing listens there
    r = subprocess.run([sys.executable, "-m", "harness.cli", "report", str(SYNTHETIC), "-o", str(tmp_path / "o"),
                        "--master", master], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 5          # environment (docs/cli.md "Exit codes")
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith(f"kafka-chaos: error: cannot reach the Spark master {master} (127.0.0.1:") and "refused" in line
    assert not (tmp_path / "o").exists()
