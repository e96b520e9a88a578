"""The exit codes (harness/errors.py) are the one table of docs/cli.md "Exit codes", and each kind of
outcome gets its own: a verdict FAIL 1, a usage error 2, INCOMPATIBLE 3, ran-but-undecided 4, an
environment error 5, an interrupt 130 (so a nightly job's retry policy can tell them apart)."""

from __future__ import annotations

import re
import types
from pathlib import Path

import pytest

from harness import errors, parallel
from harness.certify import certificate_data
from harness.record.writer import RecordWriteError

ROOT = Path(__file__).resolve().parents[1]


def test_the_docs_table_is_the_constants():
    text = (ROOT / "docs" / "cli.md").read_text()
    section = text.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    documented = [int(c) for c in re.findall(r"^\| `(\d+)` \|", section, re.M)]
    constants = sorted(v for k, v in vars(errors).items() if k.startswith("EXIT_"))
    assert documented == constants == [0, 1, 2, 3, 4, 5, 130]


def test_usage_and_environment_errors_differ():
    assert errors.HarnessError("x").exit_code == errors.EXIT_USAGE == 2
    for cls in (errors.DockerUnavailable, errors.PortConflict, errors.ClusterError, errors.NeverServes,
                RecordWriteError):
        assert issubclass(cls, errors.EnvironmentFailure) and cls.exit_code == errors.EXIT_ENV == 5, cls
    for cls in (errors.UnknownVersion, errors.ImageMissing, errors.ScenarioError):
        assert cls.exit_code == 2, cls


@pytest.mark.parametrize("verdicts, codes, expected", [
    (["PASS", "PASS"], [0, 0], 0),
    (["PASS", "FAIL"], [0, 1], 1),
    (["UNKNOWN", "FAIL"], [4, 1], 1),
    (["PASS", "UNKNOWN"], [0, 4], 4),          # every child reached a verdict: undecided
    (["PASS", None], [0, -9], 5),              # a child died without one: environment
    ([None, "FAIL"], [5, 1], 1),               # a FAIL is a FAIL whatever else happened
])
def test_parallel_exit_code(monkeypatch, tmp_path, verdicts, codes, expected):
    results = [types.SimpleNamespace(verdict=v, returncode=c) for v, c in zip(verdicts, codes)]
    monkeypatch.setattr(parallel, "run_children", lambda jobs, workers, runs_dir: results)
    assert parallel.run_parallel([object()] * len(results), 2, str(tmp_path)) == expected


@pytest.mark.parametrize("statuses, expected", [
    (["PASS", "PASS"], ("CERTIFIED", 0)),
    (["PASS", "FAIL", "UNKNOWN"], ("NOT CERTIFIED", 1)),
    (["PASS", "UNKNOWN"], ("INCONCLUSIVE", 4)),
    (["NOT-APPLICABLE"], ("NOT CERTIFIED", 2)),
])
def test_certify_overall_exit_code(statuses, expected):
    statuses = [certificate_data.NA if s == "NOT-APPLICABLE" else s for s in statuses]
    result, _why, code = certificate_data.overall(statuses)
    assert (result, code) == expected


def test_an_unreachable_object_store_is_an_environment_error(tmp_path):
    """``check s3://...`` against an endpoint where nothing listens (a loopback port just freed): one line,
    exit 5 (environment, the table's row), not 2 (usage)."""
    import os
    import socket
    import subprocess
    import sys
    pytest.importorskip("boto3")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x",
           "AWS_DEFAULT_REGION": "us-east-1", "KAFKA_CHAOS_STAGING": str(tmp_path)}
    r = subprocess.run([sys.executable, "-m", "harness.cli", "check", "s3://kc-nowhere/runs",
                        "--s3-endpoint", f"http://127.0.0.1:{port}"], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == errors.EXIT_ENV == 5, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kafka-chaos: error: ") and f"127.0.0.1:{port}" in lines[0], r.stderr
