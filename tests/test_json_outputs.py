"""``--json`` on ``doctor`` and ``cluster status`` (harness/commands/doctor.py, cluster_status.py): one JSON
object on stdout, the exit code of the text form (doctor with Docker down: 5 and the docker check FAIL)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NO_DOCKER = "unix:///nonexistent/kafka-chaos-json.sock"


def kc(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DOCKER_HOST": NO_DOCKER}
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def test_doctor_json_with_docker_down(tmp_path):
    r = kc("doctor", "--json", "--runs-dir", str(tmp_path / "runs"), cwd=tmp_path)
    assert r.returncode == 5, r.stderr
    doc = json.loads(r.stdout)
    assert doc["exit_code"] == 5
    docker = next(c for c in doc["checks"] if c["check"] == "docker")
    assert docker["status"] == "FAIL" and NO_DOCKER in docker["detail"] and docker["todo"]
    assert {"ports", "java"} <= {c["check"] for c in doc["checks"]}
    assert r.stderr == ""


def test_cluster_status_json_with_docker_down_is_one_line_exit_5(tmp_path):
    r = kc("cluster", "status", "--json", cwd=tmp_path)
    assert r.returncode == 5 and r.stdout == ""
    assert r.stderr.splitlines() == [r.stderr.strip()] and "Docker engine unreachable" in r.stderr
