"""``certify --shard I/N`` and ``certify --merge`` without a cluster: the shards of a certification's plan
cover it exactly once, and the merge finds each scenario's records of the same certification only."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness import distributions
from harness.certify.capabilities import Subject, plan
from harness.certify.fleet import merged_results, shard_todo
from suites.catalog import SCENARIOS

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "tests" / "fixtures" / "runs" / "synthetic" / "20250601T020000Z-broker_failover.kill_leader-000001"
ZK_39 = Subject("kafka-chaos/kafka:3.9.2", "sha256:abc", "3.9.2", distributions.resolve("apache-zk"))


@pytest.mark.parametrize("n", range(1, 9))
def test_certify_shards_cover_the_plan_exactly_once(n):
    plans = plan(SCENARIOS, ZK_39, None, None)
    todo = [(cp, sp) for cp in plans for sp in cp.applicable]
    names = sorted({sp.name for _, sp in todo})
    shards = [shard_todo(todo, f"{i}/{n}") for i in range(1, n + 1)]
    flat = sorted(sp.name for s in shards for _, sp in s)
    assert flat == names
    for s in shards:                       # a shard keeps the plan's order
        assert s == [x for x in todo if x in s]


def _record(root: Path, run_id: str, **meta) -> Path:
    d = root / run_id
    shutil.copytree(SOURCE, d)
    m = json.loads((d / "metadata.json").read_text())
    m.update(run_id=run_id, **meta)
    (d / "metadata.json").write_text(json.dumps(m))
    return d


def test_merge_takes_the_records_of_the_same_certification_in_start_order(tmp_path):
    same = dict(suite="certify", broker_image="kafka-chaos/kafka:3.9.2", profile="apache-zk-3.9",
                distribution="apache-zk")
    _record(tmp_path, "b-second", scenario="acks.a1_minisr1", started_at="2026-01-01T00:02:00Z", **same)
    _record(tmp_path, "a-first", scenario="acks.a1_minisr1", started_at="2026-01-01T00:01:00Z", **same)
    _record(tmp_path, "c-other", scenario="isr.pause_follower", started_at="2026-01-01T00:00:00Z", **same)
    _record(tmp_path, "d-otherimage", scenario="isr.pause_follower", started_at="2026-01-01T00:03:00Z",
            **{**same, "broker_image": "kafka-chaos/kafka:4.1.2"})
    _record(tmp_path, "e-run", scenario="isr.pause_follower", started_at="2026-01-01T00:04:00Z",
            **{**same, "suite": "smoke"})
    _record(tmp_path, "f-notasked", scenario="network.one_way", started_at="2026-01-01T00:04:00Z", **same)
    judged = []

    def judge(d, name):
        judged.append((d.name, name))
        return {"verdict": "PASS", "reason": "ok"}
    res = merged_results(str(tmp_path), {"acks.a1_minisr1", "isr.pause_follower"}, "kafka-chaos/kafka:3.9.2",
                         "apache-zk-3.9", "apache-zk", judge)
    assert [(a["run_id"], a["attempt"]) for a in res["acks.a1_minisr1"]] == [("a-first", 0), ("b-second", 1)]
    assert [a["run_id"] for a in res["isr.pause_follower"]] == ["c-other"]
    assert set(res) == {"acks.a1_minisr1", "isr.pause_follower"}
    assert res["isr.pause_follower"][0]["path"] == str((tmp_path / "c-other").resolve())


def test_certify_rejects_a_bad_shard_and_merge_without_runs_dir_before_any_docker_work():
    env = {"PATH": "/usr/bin:/bin", "DOCKER_HOST": "unix:///nonexistent"}
    r = subprocess.run([sys.executable, "-m", "harness.cli", "certify", "--profile", "apache-zk-3.9", "--shard", "0/2"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "kafka-chaos: error: --shard 0/2: I must be between 1 and N, and N at least 1"]
