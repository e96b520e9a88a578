"""Negative controls' shared steps: record one real passing run, then re-judge modified copies.

A negative control proves a suite can fail: it takes a real run record (which must PASS first),
injects one broken observation into a copy of its events (what a misbehaving broker would
produce) and re-judges it with the same checks; the verdict must turn to FAIL naming the rule.
"""

from __future__ import annotations

from harness.record import RunRecord, read_run
from harness.checkers.verdict import decide
from harness.runner import execute
from harness.scenario.scenario import Scenario
from suites.catalog import scenarios_for


def record_passing_run(name: str, image: str, runs_dir, distribution: str = "apache-zk") -> tuple[Scenario, RunRecord]:
    """Run scenario ``name`` on a fresh cluster of ``distribution`` (the negative controls were written for
    ZooKeeper mode); it must PASS (else the control would prove nothing)."""
    scenario = scenarios_for(name)[0]
    assert scenario.name == name, f"no scenario named {name!r}"
    out = execute(scenario, runs_dir=runs_dir, image=image, suite="pytest", distribution=distribution)
    assert out.verdict == "PASS", f"{name}: the real run must pass first: {out.reason} ({out.path})"
    return scenario, read_run(out.path)


def rejudge(scenario: Scenario, rec: RunRecord, events: list[dict], metadata: dict | None = None):
    """(verdict, reason, checks) of ``events`` judged like the original run (its expectations kept)."""
    items = rec.verdict["checks"]["expectations"]["items"]
    v = decide(events, metadata or rec.metadata, checks=scenario.checks, expectations=items)
    return v.verdict, v.reason, v.checks
