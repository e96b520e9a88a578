"""Negative controls for the admin-operation families: reassignment (7) and preferred election (8).

One real run of ``reassignment.znode`` and one of ``preferred_election.manual`` are recorded; each
control injects one broken observation into a copy of the run's events, the kind a misbehaving
controller would produce, and re-judges it with :func:`harness.checkers.verdict.decide`. The verdict must turn
to FAIL naming the broken rule.

    python -m pytest suites/test_negative_controls_admin.py -x
"""

from __future__ import annotations

import copy

import pytest

from suites.negative import record_passing_run, rejudge

pytestmark = [pytest.mark.docker, pytest.mark.conformance]


@pytest.fixture(scope="module")
def reassign_run(kc_image, tmp_path_factory):
    return record_passing_run("reassignment.znode", kc_image.tag, tmp_path_factory.mktemp("runs"))


@pytest.fixture(scope="module")
def election_run(kc_image, tmp_path_factory):
    return record_passing_run("preferred_election.manual", kc_image.tag, tmp_path_factory.mktemp("runs"))


def _rules(checks) -> set[str]:
    c = checks["conformance"]
    return {d["rule"] for d in c["invariant_violations"] + c["divergences"]}


def _txn(events, type_, topic="chaos"):
    return [e for e in events if e["type"] == type_ and e.get("source") == "txnlog" and e.get("topic") == topic]


def test_unmodified_records_pass(reassign_run, election_run):
    for scenario, rec in (reassign_run, election_run):
        verdict, reason, _ = rejudge(scenario, rec, copy.deepcopy(rec.events))
        assert verdict == "PASS", reason


def test_reassignment_completing_to_another_replica_set_fails(reassign_run):
    """chaos-1 [2,3,1] → [3,4,2]: the completing topic-znode write (B6) names [3,4,1] instead (H16)."""
    scenario, rec = reassign_run
    events = copy.deepcopy(rec.events)
    topics = _txn(events, "zk.topic")
    i = next(k for k in range(1, len(topics)) if topics[k - 1]["adding_replicas"].get("1")
             and not topics[k]["adding_replicas"].get("1"))
    assert topics[i]["partitions"]["1"] == [3, 4, 2]
    topics[i]["partitions"]["1"] = [3, 4, 1]
    verdict, reason, checks = rejudge(scenario, rec, events)
    assert verdict == "FAIL" and "conformance" in reason
    assert "H16" in _rules(checks), checks["conformance"]


def test_reassignment_started_in_the_wrong_order_fails(reassign_run):
    """The start (U1) writes RS = ORS ++ adding ([2,3,1,4]) instead of target-first [3,4,2,1] (D15, §7.1)."""
    scenario, rec = reassign_run
    events = copy.deepcopy(rec.events)
    u1 = next(e for e in _txn(events, "zk.topic") if e["adding_replicas"].get("1"))
    assert u1["partitions"]["1"] == [3, 4, 2, 1]
    u1["partitions"]["1"] = [2, 3, 1, 4]
    verdict, reason, checks = rejudge(scenario, rec, events)
    assert verdict == "FAIL"
    assert "D15" in _rules(checks), checks["conformance"]


def test_preferred_election_of_a_non_preferred_replica_fails(election_run):
    """ElectLeaders(PREFERRED) on chaos-0 [1,2,3] led by 2 elects 3 instead of RS[0] = 1 (D4, §4.3)."""
    scenario, rec = election_run
    events = copy.deepcopy(rec.events)
    states = [e for e in _txn(events, "zk.partition_state") if e["partition"] == 0]
    k = max(i for i in range(1, len(states)) if states[i - 1]["leader"] == 2 and states[i]["leader"] == 1)
    forged = states[k]
    for later in states[k:]:            # the whole epoch the election opened names the wrong leader
        if later["leader_epoch"] == forged["leader_epoch"] and later["leader"] == 1:
            later["leader"] = 3
    verdict, reason, checks = rejudge(scenario, rec, events)
    assert verdict == "FAIL" and "conformance" in reason
    assert "D4" in _rules(checks), checks["conformance"]
