"""Negative controls: the suites can fail, and say why.

One real run (leader kill under acks=all) is recorded; each control then injects one broken
observation into a copy of its events, the kind a misbehaving broker would produce, and re-judges it.
The verdict must turn to FAIL with a message naming the broken rule.
"""

from __future__ import annotations

import copy

import pytest

from harness.checkers.verdict import decide
from suites.negative import record_passing_run, rejudge

pytestmark = [pytest.mark.docker, pytest.mark.smoke, pytest.mark.conformance]


@pytest.fixture(scope="module")
def real_run(kc_image, tmp_path_factory):
    return record_passing_run("broker_failover.kill_leader", kc_image.tag, tmp_path_factory.mktemp("runs"))


def _last_state(events, source="txnlog"):
    return max((e for e in events if e["type"] == "zk.partition_state" and e.get("source") == source
                and e["topic"] == "chaos" and e["partition"] == 0 and not e.get("deleted")),
               key=lambda e: e["zxid"])


def _append(events, ev):
    ev = dict(ev, seq=max(e["seq"] for e in events) + 1, zxid=max(e.get("zxid", 0) for e in events) + 1)
    return events + [ev]


def test_unmodified_record_passes(real_run):
    scenario, rec = real_run
    verdict, reason, _ = rejudge(scenario, rec, copy.deepcopy(rec.events))
    assert verdict == "PASS", reason


def test_broker_failover_election_outside_isr_fails(real_run):
    """A broker not in the ISR becomes leader with unclean election disabled (H11)."""
    scenario, rec = real_run
    events = copy.deepcopy(rec.events)
    st = _last_state(events)
    outsider = next(b for b in (1, 2, 3) if b != st["leader"])
    forged = dict(st, leader=outsider, leader_epoch=st["leader_epoch"] + 1, isr=[st["leader"]],
                  version=st["version"] + 1)
    verdict, reason, checks = rejudge(scenario, rec, _append(events, forged))
    assert verdict == "FAIL"
    assert "conformance" in reason
    rules = {d["rule"] for d in checks["conformance"]["invariant_violations"] + checks["conformance"]["divergences"]}
    assert rules & {"H5", "H11"}, rules


def test_leader_epoch_regression_fails(real_run):
    """The leader epoch goes backwards (H3)."""
    scenario, rec = real_run
    events = copy.deepcopy(rec.events)
    st = _last_state(events)
    forged = dict(st, leader_epoch=max(0, st["leader_epoch"] - 1), version=st["version"] + 1)
    verdict, reason, checks = rejudge(scenario, rec, _append(events, forged))
    assert verdict == "FAIL"
    assert any(d["rule"] == "H3" for d in checks["conformance"]["invariant_violations"]), checks["conformance"]


def test_controller_epoch_regression_fails(real_run):
    """Controller failover family: /controller_epoch decreases (H1)."""
    scenario, rec = real_run
    events = copy.deepcopy(rec.events)
    ce = max((e for e in events if e["type"] == "zk.controller_epoch" and e.get("source") == "txnlog"),
             key=lambda e: e["zxid"])
    forged = dict(ce, epoch=ce["epoch"] - 1, version=ce["version"] + 1)
    verdict, reason, checks = rejudge(scenario, rec, _append(events, forged))
    assert verdict == "FAIL"
    assert any(d["rule"] == "H1" for d in checks["conformance"]["invariant_violations"]), checks["conformance"]


def test_lost_acknowledged_write_fails(real_run):
    """Durability family: an acknowledged write missing from the final drain is reported lost, with its offset."""
    scenario, rec = real_run
    events = copy.deepcopy(rec.events)
    victim = next(e for e in events if e["type"] == "client" and e["f"] == "send" and e["phase"] == "ok")
    events = [e for e in events if not (e["type"] == "client" and e["f"] in ("drain", "poll")
                                        and e.get("value") == victim["value"])]
    verdict, reason, checks = rejudge(scenario, rec, events)
    assert verdict == "FAIL" and "lost" in reason
    lost = checks["durability"]["checks"]["lost"]
    assert lost["count"] == 1
    assert any(ex.get("offset") == victim["offset"] for ex in lost["examples"]), lost


def test_failed_expectation_fails(real_run):
    """Scenario expectations: a step that never happened fails the run with its description."""
    scenario, rec = real_run
    items = copy.deepcopy(rec.verdict["checks"]["expectations"]["items"])
    items[1]["ok"] = False
    v = decide(copy.deepcopy(rec.events), rec.metadata, checks=scenario.checks, expectations=items)
    assert v.verdict == "FAIL" and items[1]["what"] in v.reason
