"""benchmarks/scenario_phases.py reads real run records (tests/fixtures/runs/real) into phase times."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "tests" / "fixtures" / "runs" / "real"
sys.path.insert(0, str(ROOT / "benchmarks"))

from scenario_phases import phases_of  # noqa: E402


def test_phases_of_a_real_record_add_up_to_its_recorded_time():
    run = REAL / "20261121T075025Z-broker_failover.kill_leader-53702c"
    p = phases_of(run)
    assert p["scenario"] == "broker_failover.kill_leader"
    parts = ["cluster", "warm-up", "faults", "stop", "drain", "finish"]
    assert all(p[k] >= 0 for k in parts), p
    assert abs(sum(p[k] for k in parts) + p["outside"] - p["wall"]) < 1e-6, p
    assert p["faults"] > p["drain"]


def test_command_prints_a_table_and_the_median_last():
    r = subprocess.run([sys.executable, "benchmarks/scenario_phases.py", str(REAL)], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == f"{len([d for d in REAL.iterdir() if d.is_dir()])} runs"
    assert any(line.startswith("faults ") for line in lines)
    assert lines[-1].startswith("scenario_phases: ") and lines[-1].endswith(" s")


def test_no_records_is_one_line_and_exit_2(tmp_path):
    r = subprocess.run([sys.executable, "benchmarks/scenario_phases.py", str(tmp_path)], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [f"scenario_phases: error: no run records under {tmp_path}"]
