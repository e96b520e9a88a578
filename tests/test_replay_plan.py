"""Replay planning from a run record (pure: no Docker) and the CLI's replay error paths."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness import distributions
from harness.errors import ScenarioError
from harness.commands.replay import plan_replay
from harness.scenario.schedule import generate_schedule
from suites.scenarios.nightly import SHORT


def _record(tmp_path: Path, **meta) -> Path:
    d = tmp_path / "20261121T000000Z-nightly.short-abcdef"
    d.mkdir()
    base = {"schema_version": 1, "run_id": d.name, "scenario": "nightly.short", "seed": 3,
            "schedule": generate_schedule(3, SHORT).to_json(), "broker_image": "kafka-chaos/kafka:3.9.2",
            "kafka_version": "3.9.2", "profile": "apache-zk-3.9", "suite": "chaos",
            "broker_config": {"min.insync.replicas": "2", "zookeeper.session.timeout.ms": "6000"}}
    base.update(meta)
    (d / "metadata.json").write_text(json.dumps({k: v for k, v in base.items() if v is not ...}))
    return d


def test_plan_takes_the_stored_schedule_not_a_regenerated_one(tmp_path):
    stored = [{"at": 1.5, "fault": "pause", "target": "broker:2", "duration": 3.0, "params": {}}]
    plan = plan_replay(_record(tmp_path, schedule=stored))
    assert plan.scenario == "nightly.short" and plan.seed == 3 and plan.run_id.endswith("abcdef")
    assert plan.schedule.to_json() == stored          # not generate_schedule(3, SHORT)
    assert plan.broker_config["min.insync.replicas"] == "2"
    assert (plan.broker_image, plan.kafka_version, plan.profile, plan.suite) == (
        "kafka-chaos/kafka:3.9.2", "3.9.2", "apache-zk-3.9", "chaos")


def test_plan_of_a_generated_schedule_equals_the_generator(tmp_path):
    assert plan_replay(_record(tmp_path)).schedule.to_json() == generate_schedule(3, SHORT).to_json()


@pytest.mark.parametrize("meta, message", [
    ({"scenario": ...}, "no 'scenario' name"),
    ({"seed": "x"}, "'seed' must be an integer"),
    ({"schedule": [{"at": 1, "fault": "explode", "target": "broker:1", "duration": 1}]}, "unknown fault 'explode'"),
    ({"schedule": [{"at": -1, "fault": "kill", "target": "broker:1", "duration": 1}]}, "schedule[0].at"),
    ({"schedule": [{"at": 1, "fault": "kill", "target": "nobody", "duration": 1}]}, "schedule[0].target"),
    ({"schedule": ...}, "has no 'schedule' field"),
    ({"broker_config": [1]}, "'broker_config' must be an object"),
])
def test_malformed_records_are_refused_naming_the_file(tmp_path, meta, message):
    with pytest.raises(ScenarioError) as e:
        plan_replay(_record(tmp_path, **meta))
    assert message in str(e.value) and "metadata.json" in str(e.value)


def test_not_a_record(tmp_path):
    with pytest.raises(ScenarioError, match="not a run record directory"):
        plan_replay(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ScenarioError, match="metadata.json: missing"):
        plan_replay(tmp_path / "empty")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "metadata.json").write_text("{not json")
    with pytest.raises(ScenarioError, match="not valid JSON"):
        plan_replay(bad)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "harness.cli", "run", *args], capture_output=True, text=True,
                          timeout=60)


@pytest.mark.parametrize("extra, message", [
    (["isr.pause_follower"], "is a run of 'nightly.short', not 'isr.pause_follower'"),
    (["--seed", "4"], "cannot be combined with --replay"),
    (["--length", "10"], "cannot be combined with --replay"),
])
def test_cli_replay_usage_errors_exit_2_with_one_line(tmp_path, extra, message):
    rec = _record(tmp_path)
    r = _cli("--replay", str(rec), *extra)
    assert r.returncode == 2, r
    assert message in r.stderr and "Traceback" not in r.stderr


def test_cli_replay_of_an_unknown_scenario(tmp_path):
    r = _cli("--replay", str(_record(tmp_path, scenario="no_such.family")))
    assert r.returncode == 2 and "'no_such.family' is not in this harness version" in r.stderr
    assert "Traceback" not in r.stderr


def test_scenario_applicability():
    """min_version and kraft decide what runs where (run, pytest suites and certify skip the rest)."""
    from suites.catalog import scenarios_for
    move = scenarios_for("reassignment.move_replicas")[0]
    assert move.not_applicable("2.5.1", distributions.resolve("apache-zk")) == "needs Kafka 2.6+ (this is 2.5.1)"
    assert move.not_applicable("2.8.2", distributions.resolve("apache-zk")) is None and move.not_applicable("3.10.0", distributions.resolve("apache-zk")) is None
    assert move.not_applicable(None, distributions.resolve("apache-zk")) is None                  # a foreign image: run it
    assert move.not_applicable("3.9.2", distributions.resolve("apache-kraft")) is None
    zk = scenarios_for("zookeeper.session_expiry")[0]
    assert zk.not_applicable("3.9.2", distributions.resolve("apache-kraft")) == "it acts on ZooKeeper itself, which this cluster does not run"
    assert zk.not_applicable("3.9.2", distributions.resolve("apache-zk")) is None
    assert zk.not_applicable("4.4.0", distributions.resolve()) == "it acts on ZooKeeper itself, which this cluster does not run"


@pytest.mark.parametrize("recorded, spec", [
    ({"protocol": "SASL_SSL", "mechanism": "SCRAM-SHA-512", "username": "kafka-chaos", "ca": "given"},
     "SASL_SSL:SCRAM-SHA-512"),
    ({"protocol": "SSL", "ca": "given"}, "SSL"), ({"protocol": "PLAINTEXT"}, None), (..., None)])
def test_plan_keeps_the_listener_security_it_ran_with(tmp_path, recorded, spec):
    """docs/security.md: a replay runs on the protocol and mechanism recorded (new certificates, new password)."""
    assert plan_replay(_record(tmp_path, security=recorded)).security == spec
