"""Negative controls of the acks and unclean-election families: the suites can fail, and say why.

Two real runs are recorded: ``acks.aall_minisr2`` (acks=all, min.insync.replicas=2, the ISR shrunk
to the leader alone) and ``unclean.out_of_sync_elected`` (an out-of-sync replica elected with unclean
election on, acks=1 writes lost). Each control re-judges a copy of a record with one thing broken,
the kind of observation a misbehaving broker (or a wrong configuration) would produce, and the verdict
must turn to FAIL with a message naming what broke. The unmodified records must PASS, and the
unclean run's losses must be reported as ALLOWED by its configuration (not hidden, not failed).
"""

from __future__ import annotations

import copy

import pytest

from suites.negative import record_passing_run, rejudge

pytestmark = [pytest.mark.docker, pytest.mark.conformance]


@pytest.fixture(scope="module")
def acks_run(kc_image, tmp_path_factory):
    return record_passing_run("acks.aall_minisr2", kc_image.tag, tmp_path_factory.mktemp("runs"))


@pytest.fixture(scope="module")
def unclean_run(kc_image, tmp_path_factory):
    return record_passing_run("unclean.out_of_sync_elected", kc_image.tag, tmp_path_factory.mktemp("runs"))


def _sends(events, phase):
    return [e for e in events if e["type"] == "client" and e.get("f") == "send" and e["phase"] == phase]


# -- acks ------------------------------------------------------------------------------------------
def test_acks_record_passes_and_saw_refusals(acks_run):
    scenario, rec = acks_run
    verdict, reason, checks = rejudge(scenario, rec, copy.deepcopy(rec.events))
    assert verdict == "PASS", reason
    # the PASS rests on evidence: refusals were seen and writes were acknowledged around them
    assert checks["durability"]["checks"]["acks_semantics"]["verdict"] == "PASS"
    assert any((e.get("error") or "").startswith("NOT_ENOUGH_REPLICAS") for e in _sends(rec.events, "fail"))
    assert _sends(rec.events, "ok")


def test_acks_all_lost_acknowledged_write_fails(acks_run):
    """An acknowledged acks=all write missing from the final drain: durability FAIL naming the value."""
    scenario, rec = acks_run
    events = copy.deepcopy(rec.events)
    victim = _sends(events, "ok")[-1]          # acknowledged after the ISR came back
    events = [e for e in events if not (e["type"] == "client" and e["f"] in ("drain", "poll")
                                        and e.get("value") == victim["value"])]
    verdict, reason, checks = rejudge(scenario, rec, events)
    assert verdict == "FAIL" and "lost" in reason, reason
    lost = checks["durability"]["checks"]["lost"]
    assert lost["verdict"] == "FAIL" and lost["violations"] == 1, lost
    assert [ex["value"] for ex in lost["examples"]] == [victim["value"]], lost


def test_acks_all_acknowledged_below_min_isr_fails(acks_run):
    """A write refused with NOT_ENOUGH_REPLICAS turned into an acknowledgement (the broker would have
    accepted acks=all below min ISR): both the acks-semantics and the scenario expectation see it."""
    scenario, rec = acks_run
    events = copy.deepcopy(rec.events)
    # a refusal wholly inside an observed ISR-below-min window of chaos (margins included)
    acks = rec.verdict["checks"]["durability"]["checks"]["acks_semantics"]
    lag = acks["isr_lag_s"]
    windows = [(w["start"] + lag, (w["end"] if w["end"] is not None else float("inf")) - lag)
               for w in acks["windows"] if w["topic"] == "chaos"]
    invoked = {(e["process"], e["op_id"]): e["t"] for e in _sends(events, "invoke")}
    refused = next(e for e in _sends(events, "fail") if (e.get("error") or "").startswith("NOT_ENOUGH_REPLICAS")
                   and any(a <= invoked[(e["process"], e["op_id"])] and e["t"] <= b for a, b in windows))
    refused.update(phase="ok", error=None, offset=None)
    verdict, reason, checks = rejudge(scenario, rec, events)
    assert verdict == "FAIL", reason
    acks = checks["durability"]["checks"]["acks_semantics"]
    assert acks["verdict"] == "FAIL" and any(ex.get("value") == refused["value"] for ex in acks["examples"]), acks


def test_acks_refused_write_visible_fails(acks_run):
    """A write the broker refused (definite NOT_ENOUGH_REPLICAS) shows up in the drain anyway."""
    scenario, rec = acks_run
    events = copy.deepcopy(rec.events)
    refused = next(e for e in _sends(events, "fail") if (e.get("error") or "").startswith("NOT_ENOUGH_REPLICAS"))
    drained = [e for e in events if e["type"] == "client" and e["f"] == "drain"]
    forged = dict(drained[-1], seq=max(e["seq"] for e in events) + 1, value=refused["value"],
                  offset=drained[-1]["offset"] + 1000)
    verdict, reason, checks = rejudge(scenario, rec, events + [forged])
    assert verdict == "FAIL", reason
    fv = checks["durability"]["checks"]["failed_visible"]
    assert fv["verdict"] == "FAIL" and fv["examples"][0]["value"] == refused["value"], fv


# -- unclean election --------------------------------------------------------------------------------
def test_unclean_record_passes_with_losses_allowed(unclean_run):
    scenario, rec = unclean_run
    verdict, reason, checks = rejudge(scenario, rec, copy.deepcopy(rec.events))
    assert verdict == "PASS", reason
    conf = checks["conformance"]
    assert conf["stats"]["elections"] >= 1, conf["stats"]
    lost = checks["durability"]["checks"]["lost"]
    # the writes the out-of-sync leader never had are lost, and reported as allowed by configuration
    assert lost["verdict"] == "ALLOWED" and lost["allowed"] > 0 and lost["violations"] == 0, lost
    assert all(ex.get("allowed_by") for ex in lost["examples"]), lost


def test_unclean_election_with_unclean_disabled_fails(unclean_run):
    """The same history judged as if the topic had unclean election off: the out-of-sync election
    is a broken rule (H11), named in the reason."""
    scenario, rec = unclean_run
    md = copy.deepcopy(rec.metadata)
    for t in md["topics"]:
        t["config"]["unclean.leader.election.enable"] = "false"
    verdict, reason, checks = rejudge(scenario, rec, copy.deepcopy(rec.events), md)
    assert verdict == "FAIL" and "conformance" in reason, reason
    rules = {d["rule"] for d in checks["conformance"]["invariant_violations"] + checks["conformance"]["divergences"]}
    assert "H11" in rules, rules


def test_unclean_loss_with_acks_all_and_clean_config_fails(unclean_run):
    """The same losses with acks=all and unclean election off are not allowed: durability FAIL."""
    scenario, rec = unclean_run
    md = copy.deepcopy(rec.metadata)
    for t in md["topics"]:
        t["config"]["unclean.leader.election.enable"] = "false"
    md["workload"]["acks"] = "all"
    events = copy.deepcopy(rec.events)
    for e in events:
        if e["type"] == "client.config" and e.get("role") == "producer":
            e["config"]["acks"] = "all"
        if e["type"] == "zk.partition_state":
            e["leader_recovery_state"] = 0        # hide the observed unclean election from the checker
    verdict, reason, checks = rejudge(scenario, rec, events, md)
    assert verdict == "FAIL" and "lost" in reason, reason
    assert checks["durability"]["checks"]["lost"]["violations"] > 0
