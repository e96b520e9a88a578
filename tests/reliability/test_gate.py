"""The report gate never passes on undecided evidence (docs/reports.md, "The gate").

Records are written by the real recorder (harness.record.RunRecorder, as a run writes them); the
real command line ``python -m harness.cli report RUNS -o OUT --gate`` runs in a subprocess (its own
Spark driver, local mode) and its exit code and output lines are checked:

* every run of a scenario UNKNOWN (a coverage shortfall, cause ``workload``, included): exit 1 and a
  line naming each such scenario and "undecided";
* each scenario with at least one decided PASS (other runs UNKNOWN): the gate passes, exit 0.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness import __version__
from harness.record import RunRecorder

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[2]

COVERAGE_SHORT = {"verdict": "UNKNOWN", "reason": "producer p0 sent nothing in the last 8 s of fault 1's window",
                  "shortfalls": ["p0: no send from 22.0 to 30.0 (fault 1 kill broker 2)"],
                  "windows": [{"fault_id": 1, "fault": "kill", "target": "broker 2", "start": 20.0, "end": 30.0,
                               "writes": {"invoke": 3, "ok": 2, "fail": 0, "info": 1}, "reads": 5}],
                  "clients": {"p0": {"role": "producer", "alive": [[0.5, 22.0]],
                                     "errors": [{"t": 22.0, "error": "KafkaError{code=_FATAL}"}]}},
                  "longest_ack_gap_s": 9.5}


def record(runs: Path, scenario: str, verdict: str, cause: str | None = None, reason: str = "") -> Path:
    """One run record through the real recorder: a few sends acknowledged, then the verdict."""
    pytest.importorskip("pyspark")
    with RunRecorder(runs, scenario, {"suite": "gate-test", "kafka_version": "3.9.2", "seed": 1,
                                      "workload": {"acks": "all"}, "harness_version": __version__}) as rec:
        rec.phase("cluster.ready")
        rec.emit("client.life", process="p0", role="producer", state="started", error=None)
        for i in range(3):
            rec.emit("client", process="p0", f="send", phase="invoke", op_id=i, value=f"v{i}")
            rec.emit("client", process="p0", f="send", phase="ok", op_id=i, offset=i, partition=0, topic="t")
        if cause == "workload":
            rec.emit("client.life", process="p0", role="producer", state="fatal", error="KafkaError{code=_FATAL}")
        rec.phase("run.end")
        extra = {"coverage": COVERAGE_SHORT} if cause == "workload" else None
        return rec.finish(verdict, reason or verdict.lower(), {}, cause=cause, extra=extra)


def report(runs: Path, out: Path) -> subprocess.CompletedProcess:
    """The report over records whose verdicts the test chose (their events hold only a few sends):
    ``--trust-stored`` takes them as the recorder stored them, its evidence digests verified."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "harness.cli", "report", str(runs), "-o", str(out), "--gate",
                           "--max-timelines", "0", "--no-parquet", "--trust-stored"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)


def test_gate_fails_naming_the_scenarios_with_no_decided_run(tmp_path):
    runs = tmp_path / "runs"
    record(runs, "acks.all_below_min_isr", "UNKNOWN", "workload", "producer p0 died")      # coverage fell short
    record(runs, "acks.all_below_min_isr", "UNKNOWN", "docker-error", "docker exec failed")
    record(runs, "isr.pause_follower", "UNKNOWN", "workload", "producer p0 stalled")
    record(runs, "broker_failover.kill_leader", "UNKNOWN", "environment", "the cluster did not start")
    record(runs, "broker_failover.kill_leader", "PASS")                                 # decided: not named
    r = report(runs, tmp_path / "out")
    assert r.returncode == 1, (r.stdout, r.stderr[-3000:])
    (line,) = [ln for ln in r.stdout.splitlines() if "undecided" in ln and ln.startswith("gate: 2 ")]
    assert line == ("gate: 2 undecided scenario(s), no PASS or FAIL run: acks.all_below_min_isr (2 UNKNOWN: "
                    "docker-error 1, workload 1); isr.pause_follower (1 UNKNOWN: workload 1)")
    assert "broker_failover.kill_leader" not in line
    assert "gate: FAILED (fail_on_undecided: undecided_scenarios 2 (fails at 1))" in r.stdout.splitlines()
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["totals"]["undecided_scenarios"] == 2 and summary["totals"]["coverage_short"] == 2
    assert summary["totals"]["pass"] == 1 and summary["totals"]["unknown"] == 4
    assert summary["unknown_by_cause"] == {"workload": 2, "docker-error": 1, "environment": 1}
    assert summary["exit_code"] == 1 and summary["gate"]["failed_rules"] == ["fail_on_undecided"]


def test_gate_passes_when_every_scenario_has_a_decided_pass(tmp_path):
    runs = tmp_path / "runs"
    record(runs, "acks.all_below_min_isr", "UNKNOWN", "workload", "producer p0 died")
    record(runs, "acks.all_below_min_isr", "PASS")
    record(runs, "isr.pause_follower", "PASS")
    record(runs, "broker_failover.kill_leader", "UNKNOWN", "docker-error", "docker exec failed")
    record(runs, "broker_failover.kill_leader", "PASS")
    r = report(runs, tmp_path / "out")
    assert r.returncode == 0, (r.stdout, r.stderr[-3000:])
    assert "gate: PASSED" in r.stdout.splitlines()
    assert not any("undecided" in ln for ln in r.stdout.splitlines())
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["totals"]["undecided_scenarios"] == 0 and summary["totals"]["coverage_short"] == 1
    assert summary["undecided_scenarios"] == []
