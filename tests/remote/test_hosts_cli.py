"""tests/remote/hosts.py's command line: bad input is one line and exit 2, before Docker is asked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("args, message", [
    (["up", "--name", "Bad_Name", "--out", "x"], "host set name 'Bad_Name'"),
    (["up", "--name", "h1x", "--out", "x", "--kafka", "4.4.0", "--zookeeper"], "Kafka 4.4.0 has no ZooKeeper mode"),
    (["up", "--name", "h1x", "--out", "x", "--brokers", "2"], "KRaft host sets have 1 or at least 3 nodes"),
    (["up", "--name", "h1x", "--out", "x", "--kafka", "banana"], "unknown Kafka version 'banana'"),
])
def test_bad_input_is_one_line_and_exit_2(args, message, tmp_path):
    res = subprocess.run([sys.executable, "-m", "tests.remote.hosts", *args], cwd=ROOT, capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], res.stderr
    assert not (ROOT / "x").exists()
