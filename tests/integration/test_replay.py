"""A seeded random schedule runs on a real cluster, is stored in the run record, and
``kafka-chaos run --replay RUN_DIR`` re-runs exactly that schedule (issue 3, "Seeded schedules")."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from harness.record import read_run
from harness.runner import execute
from harness import distributions
from harness.scenario.schedule import generate_schedule
from suites.catalog import scenarios_for
from suites.scenarios.nightly import SHORT

pytestmark = pytest.mark.docker


def _faults(rec):
    return [(e["fault"], e["target"]) for e in rec.of_type("fault.start")]


def test_seeded_schedule_runs_and_replays_identically(kc_image, tmp_path):
    scenario = scenarios_for("nightly.short")[0]
    first = execute(scenario, runs_dir=tmp_path, image=kc_image.tag, distribution="apache-zk", suite="pytest", seed=3)
    assert first.verdict == "PASS", first.reason
    rec = read_run(first.path)
    planned = generate_schedule(3, SHORT, distributions.resolve("apache-zk").roles)   # the mix as this cluster can run it
    assert rec.metadata["seed"] == 3 and rec.metadata["schedule"] == planned.to_json()
    items = rec.of_type("schedule.item")
    assert [i["index"] for i in items] == list(range(len(planned))) and all(i["ok"] for i in items), items
    assert _faults(rec) == [(i.fault, i.target) for i in planned]
    # each fault was in effect at least its planned duration, and none overlapped (a slow heal shifts the rest)
    spans = {e["fault_id"]: e["t"] for e in rec.of_type("fault.start")}
    ends = {e["fault_id"]: e["t"] for e in rec.of_type("fault.end")}
    ordered = sorted(spans)
    for fid, item in zip(ordered, planned):
        assert ends[fid] - spans[fid] >= item.duration - 0.5
    for a, b in zip(ordered, ordered[1:]):
        assert spans[b] >= ends[a]

    out = subprocess.run([sys.executable, "-m", "harness.cli", "run", "--replay", str(first.path),
                          "--runs-dir", str(tmp_path / "replays")], capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    (replay_dir,) = [p for p in (tmp_path / "replays").iterdir() if not p.name.startswith(".")]
    again = read_run(replay_dir)
    assert again.metadata["replay_of"] == rec.run_id
    assert again.metadata["scenario"] == "nightly.short" and again.metadata["seed"] == 3
    assert again.metadata["schedule"] == rec.metadata["schedule"]
    assert again.metadata["broker_image"] == rec.metadata["broker_image"]
    assert _faults(again) == _faults(rec)
    # random-broker targets are drawn from the run seed: with every broker up at each fault time (each heal
    # waits for the broker to register again), the replay picks the same brokers in the same order
    def randoms(r):
        return [e["broker_ids"] for e in r.of_type("fault.start") if e["target"] == "random-broker"]
    assert randoms(rec) and randoms(again) == randoms(rec)
    assert json.loads((replay_dir / "verdict.json").read_text())["verdict"] == "PASS"
