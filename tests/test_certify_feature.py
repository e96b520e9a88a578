"""``kafka-chaos certify --feature NAME=LEVEL``: the same parse and refusals as ``run --feature`` (one line,
exit 2, before any container starts or the certificate folder is made; docs/certify.md)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _certify(tmp_path: Path, *feature_args: str) -> subprocess.CompletedProcess:
    out = tmp_path / "cert"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "harness.cli", "certify", "--distribution", "apache-kraft",
                           "--kafka-version", "4.4.0", "--profile", "kraft-4.4", "--out", str(out),
                           "--scenario", "broker_failover.kill_leader", *feature_args],
                          capture_output=True, text=True, timeout=120, env=env, cwd=str(tmp_path))


@pytest.mark.parametrize("args,says", [
    (["--feature", "bogus=1"], "--feature bogus=1: unknown feature 'bogus'"),
    (["--feature", "transaction.version=x"], "--feature expects NAME=LEVEL"),
    (["--feature", "transaction.version"], "--feature expects NAME=LEVEL"),
])
def test_certify_feature_usage_errors_are_one_line_and_exit_2(tmp_path, args, says):
    r = _certify(tmp_path, *args)
    assert r.returncode == 2, r.stderr
    assert says in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "cert").exists()


@pytest.mark.parametrize("args,says", [
    (["--feature", "transaction.version=9"], "--feature: features.transaction.version=9: Kafka 4.4.0 knows levels 0..2"),
    (["--feature", "eligible.leader.replicas.version=1", "--feature", "metadata.version=21"],
     "needs metadata.version >= 23 (4.0-IV1); asked: metadata.version=21"),
    (["--feature", "kraft.version=1"], "kraft.version"),
])
@pytest.mark.docker        # needs the local kafka-chaos/kafka:4.4.0 image (looked up, no container started)
def test_certify_refuses_levels_the_broker_cannot_take_before_any_container(tmp_path, args, says):
    r = _certify(tmp_path, *args)
    assert r.returncode == 2, r.stderr
    assert says in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "cert").exists()
