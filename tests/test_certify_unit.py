"""`kafka-chaos certify` without a cluster: the capability table, planning, verdict aggregation,
judging a run against the declared configuration, and the certificate (JSON, HTML, and the HTML
as Chromium draws it)."""

from __future__ import annotations

import json
import types
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from harness import distributions
from harness.certify import command as certify
from harness.certify import capabilities, certificate_data
from harness.certify.capabilities import Subject
from harness.distributions.capability_table import CAPABILITIES, NO_SCENARIO
from harness.certify.certificate_data import CERTIFIED, FAIL, INCONCLUSIVE, NA, NOT_CERTIFIED, PASS, UNKNOWN
from harness.errors import HarnessError
from harness.scenario.scenario import Scenario, TopicSpec
from reports.certificate import read_certificate, render_html, write_certificate
from tests.reports.synthetic import RunBuilder

FIXTURES = Path(__file__).parent / "fixtures" / "runs" / "synthetic"
CHROMIUM = "/usr/bin/chromium"

ZK_39 = Subject("kafka-chaos/kafka:3.9.2", "sha256:abc", "3.9.2", distributions.resolve("apache-zk"))
KRAFT = Subject("kafka-chaos/kafka-kraft:4.0.0", "sha256:def", "4.0.0", distributions.resolve("apache-kraft"))
FOREIGN = Subject("example/broker:1", None, None, distributions.resolve("generic"))


def scen(name: str, tags=("conformance", "chaos"), min_version=None, broker_config=None, kraft=False) -> Scenario:
    return Scenario(name, f"test scenario {name}", None, tags=tags, min_version=min_version,
                    broker_config=broker_config or {}, kraft=kraft)


# -- the table -------------------------------------------------------------------------------------
def test_table_maps_every_capability_of_the_issue_to_its_family():
    want = {"acks", "broker_failover", "controller_failover", "isr", "topics", "restart", "reassignment",
            "preferred_election", "zookeeper", "quorum", "network", "unclean", "transactions", "consumer-groups",
            "storage", "dynamic-quorum", "share-groups"}
    assert {c.name for c in CAPABILITIES} == want
    family = {"consumer-groups": "groups", "dynamic-quorum": "dynamic_quorum", "share-groups": "share"}
    assert {c.name: c.families for c in CAPABILITIES} == {n: (family.get(n, n),) for n in want}
    families = [f for c in CAPABILITIES for f in c.families]
    assert len(families) == len(set(families)), "a family is evidence for one capability only"
    assert [(c.name, c.needs_role) for c in CAPABILITIES if c.needs_role] == [("zookeeper", "zookeeper"),
                                                                               ("quorum", "controller"),
                                                                               ("dynamic-quorum", "dynamic-quorum"),
                                                                               ("share-groups", "controller")]
    assert all(c.title for c in CAPABILITIES)


def test_unknown_capability_is_a_usage_error():
    with pytest.raises(HarnessError, match="unknown capability 'acks_typo'; known: acks, "):
        capabilities.plan([], ZK_39, ["acks_typo"])


# -- planning --------------------------------------------------------------------------------------
def test_plan_marks_missing_families_version_gates_and_tags():
    scenarios = [scen("broker_failover.kill_leader"), scen("broker_failover.soak", tags=("nightly",)),
                 scen("reassignment.api", min_version="2.4"), scen("reassignment.future", min_version="4.1"),
                 scen("isr.new", min_version="9.0")]
    plans = {p.capability.name: p for p in capabilities.plan(scenarios, ZK_39)}
    assert list(plans) == [c.name for c in CAPABILITIES]            # table order, every capability
    assert plans["restart"].na_reason == NO_SCENARIO and plans["restart"].scenarios == []
    bf = plans["broker_failover"]
    assert bf.na_reason == "" and [s.name for s in bf.applicable] == ["broker_failover.kill_leader"]
    assert "not a conformance scenario" in bf.scenarios[1].reason
    ra = plans["reassignment"]
    assert [s.name for s in ra.applicable] == ["reassignment.api"]
    assert ra.scenarios[1].reason == "needs Kafka 4.1+ (this is 3.9.2)"
    isr = plans["isr"]
    assert isr.applicable == [] and isr.na_reason == "no applicable scenario: needs Kafka 9.0+ (this is 3.9.2)"


def test_plan_without_zookeeper_and_with_unknown_version():
    scenarios = [scen("zookeeper.expire_session"), scen("reassignment.api", min_version="2.4", kraft=True)]
    kraft = {p.capability.name: p for p in capabilities.plan(scenarios, KRAFT)}
    assert kraft["zookeeper"].na_reason == "the broker runs no zookeeper nodes (apache-kraft)"
    assert kraft["zookeeper"].applicable == []
    assert [s.reason for s in kraft["zookeeper"].scenarios] == ["needs zookeeper nodes"]
    # a foreign broker runs the generic adapter's KRaft-shaped layout: no ZooKeeper either
    foreign = {p.capability.name: p for p in capabilities.plan(scenarios, FOREIGN)}
    assert foreign["zookeeper"].na_reason == "the broker runs no zookeeper nodes (generic)"
    (sp,) = foreign["reassignment"].applicable   # version unknown: run it, and say so
    assert "version is unknown" in sp.reason


def test_quorum_capability_needs_a_controller_quorum():
    scenarios = [Scenario("quorum.kill_leader", "q", None, kraft=True, needs_roles=("controller",))]
    zk = {p.capability.name: p for p in capabilities.plan(scenarios, ZK_39)}
    assert zk["quorum"].na_reason == "the broker runs no controller nodes (apache-zk)"
    assert [s.reason for s in zk["quorum"].scenarios] == ["needs controller nodes"]
    kraft = {p.capability.name: p for p in capabilities.plan(scenarios, KRAFT)}
    assert kraft["quorum"].na_reason == "" and [s.name for s in kraft["quorum"].applicable] == ["quorum.kill_leader"]


def test_plan_selection_and_unmapped_scenarios():
    scenarios = [scen("controller_failover.kill_controller"), scen("acks.x"), scen("chaosmonkey.random")]
    plans = capabilities.plan(scenarios, ZK_39, ["controller_failover"])
    assert [p.capability.name for p in plans] == ["controller_failover"]
    assert capabilities.unmapped_scenarios(scenarios) == ["chaosmonkey.random"]
    # --scenario: only those, and only their capabilities
    scenarios.append(scen("controller_failover.delete_controller_znode"))
    plans = capabilities.plan(scenarios, ZK_39, None, ["controller_failover.delete_controller_znode"])
    assert [(p.capability.name, [s.name for s in p.scenarios]) for p in plans] == \
        [("controller_failover", ["controller_failover.delete_controller_znode"])]
    assert capabilities.plan(scenarios, ZK_39, ["acks", "controller_failover"], ["acks.x"])[0].capability.name == "acks"
    with pytest.raises(HarnessError, match="unknown scenario 'acks.y'"):
        capabilities.plan(scenarios, ZK_39, None, ["acks.y"])
    with pytest.raises(HarnessError, match="evidence for no capability"):
        capabilities.plan(scenarios, ZK_39, None, ["chaosmonkey.random"])


def test_plan_of_the_real_catalog_finds_the_existing_families():
    from suites.catalog import SCENARIOS
    plans = {p.capability.name: p for p in capabilities.plan(SCENARIOS, ZK_39)}
    families = {s.family for s in SCENARIOS if "conformance" in s.tags}
    for name, p in plans.items():
        if p.capability.needs_role == "controller":      # a KRaft quorum: no such nodes in ZooKeeper mode
            assert p.applicable == [] and p.na_reason == "the broker runs no controller nodes (apache-zk)"
        elif p.capability.needs_role == "dynamic-quorum":   # KIP-853: apache-kraft-dynamic only
            assert p.applicable == [] and p.na_reason == ("apache-zk formats no dynamic KRaft quorum: the capability "
                                                          "needs --distribution apache-kraft-dynamic (Kafka 4.x)")
        elif name == "storage":                          # layout shared-storage only (a store service)
            assert p.na_reason == ("no applicable scenario: needs layout shared-storage; this distribution's "
                                   "layout is replicated")
        elif set(p.capability.families) & families:
            assert p.applicable, f"{name}: its conformance scenarios exist but none applies"
        else:
            assert p.na_reason in (NO_SCENARIO,) or p.na_reason.startswith("no applicable scenario")
    kraft = {p.capability.name: p for p in capabilities.plan(SCENARIOS, KRAFT)}
    assert len(kraft["quorum"].applicable) >= 5
    assert kraft["dynamic-quorum"].na_reason.startswith("apache-kraft formats no dynamic KRaft quorum")
    # issue 17: one short evidence scenario each (the rest of the families are chaos only)
    for cp in (plans, kraft):
        assert [s.name for s in cp["transactions"].applicable] == ["transactions.coordinator_kill"]
        assert [s.name for s in cp["consumer-groups"].applicable] == ["groups.member_kill"]


# -- profiles ----------------------------------------------------------------------------------------
def test_resolve_profile():
    assert capabilities.resolve_profile("apache-zk-3.9", ZK_39) == "apache-zk-3.9"
    assert capabilities.resolve_profile("apache-zk", ZK_39) == "apache-zk-3.9"
    assert capabilities.resolve_profile("compatible", ZK_39) == "compatible"
    assert capabilities.resolve_profile("compatible", KRAFT) == "compatible"
    with pytest.raises(HarnessError, match="certifies Apache Kafka 3.7.x, but .* is Kafka 3.9.2"):
        capabilities.resolve_profile("apache-zk-3.7", ZK_39)
    with pytest.raises(HarnessError, match="describes the ZooKeeper-mode controller, but .*compatible"):
        capabilities.resolve_profile("apache-zk-3.9", KRAFT)
    with pytest.raises(HarnessError, match="unknown conformance profile 'zk-apache-3.9'"):
        capabilities.resolve_profile("zk-apache-3.9", ZK_39)


# -- aggregation ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("statuses,want", [
    ([], NA), ([PASS, PASS], PASS), ([PASS, FAIL], FAIL), ([PASS, UNKNOWN], UNKNOWN), ([UNKNOWN, FAIL], FAIL)])
def test_capability_status(statuses, want):
    assert certificate_data.capability_status(statuses) == want


@pytest.mark.parametrize("statuses,result,code", [
    ([PASS, NA, PASS], CERTIFIED, 0),
    ([PASS, FAIL, NA], NOT_CERTIFIED, 1),
    ([PASS, UNKNOWN, NA], INCONCLUSIVE, 4),
    ([FAIL, UNKNOWN], NOT_CERTIFIED, 1),
    ([NA, NA], NOT_CERTIFIED, 2),
])
def test_overall(statuses, result, code):
    got, why, exit_code = certificate_data.overall(statuses)
    assert (got, exit_code) == (result, code) and why


def test_scenario_status_is_the_last_attempt():
    assert certificate_data.scenario_status([{"verdict": UNKNOWN}, {"verdict": PASS}]) == PASS
    assert certificate_data.scenario_status([]) == UNKNOWN


# -- judging runs ------------------------------------------------------------------------------------
def test_declared_config_reverts_only_the_overrides():
    applied = {"unclean.leader.election.enable": "true", "min.insync.replicas": "1", "foo": "x", "keep": "1"}
    got = certify.declared_config(applied, {"min.insync.replicas": "2"},
                                  {"unclean.leader.election.enable": "true", "min.insync.replicas": "1", "foo": "x"},
                                  {"unclean.leader.election.enable": "false", "min.insync.replicas": "1"})
    assert got == {"unclean.leader.election.enable": "false", "min.insync.replicas": "2", "keep": "1"}


def test_failing_rules_from_fixture_records():
    from harness.record import read_run
    rec = read_run(FIXTURES / "20250601T050000Z-network.isolate_leader-000004", with_events=False)
    rules = certify.failing_rules(rec.verdict["checks"])
    assert {r["check"] for r in rules} == {"conformance", "durability"}
    assert any(r["check"] == "durability" and r["rule"] == "lost" for r in rules)
    flat = read_run(FIXTURES / "20250601T070000Z-controller.failover-000010", with_events=False)
    assert certify.failing_rules(flat.verdict["checks"]) == []
    real_shape = {"conformance": {"verdict": "FAIL", "invariant_violations": [
                      {"rule": "H11", "rule_id": "§8.2/§4.1.3/H11", "subject": "chaos-0", "explanation": "unclean"}],
                      "divergences": []},
                  "durability": {"verdict": "FAIL", "checks": {"lost": {"verdict": "PASS"},
                                                               "acks_semantics": {"verdict": "FAIL", "reason": "r"}}},
                  "expectations": {"verdict": "FAIL", "items": [{"what": "a leader", "ok": False},
                                                                {"what": "b", "ok": True}], "error": "boom"}}
    assert certify.failing_rules(real_shape) == [
        {"check": "conformance", "rule": "H11", "detail": "chaos-0 unclean (§8.2/§4.1.3/H11)"},
        {"check": "durability", "rule": "acks_semantics", "detail": "r"},
        {"check": "expectations", "rule": "expectation", "detail": "a leader"},
        {"check": "expectations", "rule": "script", "detail": "boom"}]


def _below_min_isr_run(root: Path, applied_min_isr: str) -> Path:
    """ISR of t-0 shrinks to [1] from t=5 to t=20 while acks=all writes are acknowledged; then drained."""
    b = RunBuilder("20250701T000000Z-acks.all_below_min_isr-0000aa", scenario="acks.all_below_min_isr",
                   min_isr=None, unclean="false")
    b.metadata["broker_config"]["min.insync.replicas"] = applied_min_isr
    b.metadata["workload"].update(acks="all", enable_idempotence=True)
    b.phase(0.5, "cluster.ready").pstate(1.0, leader=1, epoch=0, isr=[1, 2, 3])
    b.pstate(5.0, leader=1, epoch=0, isr=[1])
    b.sends([8.0 + 0.5 * i for i in range(10)])
    b.pstate(20.0, leader=1, epoch=0, isr=[1, 2, 3])
    b.phase(21.0, "drain.start")
    for i in range(10):
        b.emit(21.5, "client", process="drain", f="drain", phase="ok", op_id=i, topic="t", partition=0,
               offset=i, value=f"v{i}", error=None, leader_epoch=None)
    b.emit(22.0, "partition.end", topic="t", partition=0, end_offset=10)
    b.phase(22.5, "drain.end")
    return b.write(root, "PASS", "all checks passed",
                   {"expectations": {"verdict": "PASS", "items": [{"what": "ISR shrinks", "ok": True}], "error": None}})


def test_judge_run_against_the_declared_configuration(tmp_path):
    s = Scenario("acks.all_below_min_isr", "d", None, broker_config={"min.insync.replicas": "2"},
                 topics=[TopicSpec("t", 1, 3)], checks=("durability", "expectations"))
    run = _below_min_isr_run(tmp_path, applied_min_isr="1")
    # no overrides: the record's own verdict
    j = certify.judge_run(run, s, {})
    assert (j["verdict"], j["run_verdict"], j["failing_rules"]) == ("PASS", "PASS", [])
    assert j["judged_against"] == "applied configuration"
    # the broker ran with min.insync.replicas=1 although the certification declares 2: every acks=all
    # write acknowledged while the ISR was [1] breaks the declared contract
    j = certify.judge_run(run, s, {"min.insync.replicas": "1"}, defaults={"min.insync.replicas": "1"})
    assert j["run_verdict"] == "PASS" and j["verdict"] == "FAIL", j
    assert [r["rule"] for r in j["failing_rules"]] == ["acks_semantics"]
    assert "min.insync.replicas=2" in j["judged_against"]
    # an override the scenario does not care about changes nothing
    j = certify.judge_run(run, s, {"log.retention.ms": "1000"}, defaults={})
    assert j["verdict"] == "PASS" and j["run_verdict"] == "PASS"


def _unclean_election_run(root: Path, applied_unclean: str) -> Path:
    """Replicas 1-3 of t-0 die in turn (ISR [1] at the end, leader -1); broker 2, out of sync,
    returns and is elected with isr [2], RECOVERING: an unclean election (§4.1.3)."""
    b = RunBuilder("20250701T000000Z-unclean.all_isr_dead-0000cc", scenario="unclean.all_isr_dead",
                   min_isr=None, unclean=applied_unclean)
    zxid = iter(range(100, 1000))

    def broker(t, i, registered):
        z = next(zxid)
        b.emit(t, "zk.broker", broker_id=i, registered=registered, broker_epoch=z if registered else None,
               zxid=z, source="watch")

    def state(t, leader, epoch, isr, recovery=0):
        b.emit(t, "zk.partition_state", topic="t", partition=0, leader=leader, leader_epoch=epoch, isr=isr,
               controller_epoch=1, leader_recovery_state=recovery, version=epoch, deleted=False,
               zxid=next(zxid), source="watch")
    for i in (1, 2, 3, 4):
        broker(0.1, i, True)
    z = next(zxid)
    b.emit(0.2, "zk.controller", broker_id=4, zxid=z, source="watch")
    b.emit(0.2, "zk.controller_epoch", epoch=1, version=1, zxid=z, source="watch")
    b.emit(0.3, "zk.topic", topic="t", topic_id="abc", partitions={"0": [1, 2, 3]}, adding_replicas={},
           removing_replicas={}, version=0, deleted=False, zxid=next(zxid), source="watch")
    state(0.4, 1, 0, [1, 2, 3])
    b.fault(1.0, "kill", [2])
    broker(1.5, 2, False)
    state(1.6, 1, 1, [1, 3])
    b.fault(2.0, "kill", [3])
    broker(2.5, 3, False)
    state(2.6, 1, 2, [1])
    b.fault(3.0, "kill", [1])
    broker(3.5, 1, False)
    state(3.6, -1, 3, [1])
    broker(5.0, 2, True)
    state(5.2, 2, 4, [2], recovery=1)
    b.metadata["workload"] = {}      # no clients: the record is complete without a final read
    return b.write(root, "PASS", "all checks passed", {"expectations": {"verdict": "PASS", "items": [], "error": None}})


def test_unclean_election_forced_on_fails_against_the_declared_configuration(tmp_path):
    from harness.record import read_run
    from harness.checkers.verdict import decide
    s = Scenario("unclean.all_isr_dead", "d", None, brokers=4, broker_config={"unclean.leader.election.enable": "false"},
                 topics=[TopicSpec("t", 1, 3)], checks=("conformance", "expectations"))
    run = _unclean_election_run(tmp_path, applied_unclean="true")
    rec = read_run(run)
    assert decide(rec.events, rec.metadata, checks=s.checks, expectations=[]).verdict == "PASS"   # as applied, allowed
    j = certify.judge_run(run, s, {"unclean.leader.election.enable": "true"},
                          defaults={"unclean.leader.election.enable": "false"})
    assert j["verdict"] == "FAIL" and [r["rule"] for r in j["failing_rules"]] == ["H11"], j
    assert "with unclean leader election disabled" in j["reason"]


def test_judge_run_keeps_an_environment_failure_unknown(tmp_path, monkeypatch):
    b = RunBuilder("20250701T000000Z-acks.x-0000bb", scenario="acks.x")
    b.phase(0.5, "environment.error")
    run = b.write(tmp_path, "UNKNOWN", "cluster did not start")
    called = []
    monkeypatch.setattr(certify, "decide", lambda *a, **k: called.append(a))
    j = certify.judge_run(run, scen("acks.x"), {"a": "b"}, defaults={})
    assert j["verdict"] == UNKNOWN and j["reason"] == "cluster did not start" and not called


# -- the certificate ---------------------------------------------------------------------------------
def _fixture_certificate(out_dir: Path, *, with_failure: bool, required: list[str] | None = None) -> dict:
    scenarios = [scen("broker_failover.kill_leader"), scen("controller_failover.kill_controller"),
                 scen("reassignment.future", min_version="4.1")]
    plans = capabilities.plan(scenarios, ZK_39, ["broker_failover", "controller_failover", "reassignment", "network"])
    runs = {"broker_failover.kill_leader": ["20250601T020000Z-broker_failover.kill_leader-000001"],
            "controller_failover.kill_controller": ["20250601T070000Z-controller.failover-000010"]}
    if with_failure:
        runs["broker_failover.kill_leader"].append("20250601T030000Z-broker_failover.kill_leader-000002")
    results = {}
    for name, ids in runs.items():
        for i, rid in enumerate(ids):
            j = certify.judge_run(FIXTURES / rid, None, {})
            j.update(run_id=rid, path=str(FIXTURES / rid), seconds=12.0, attempt=i)
            results.setdefault(name, []).append(j)
    return certificate_data.build_certificate(
        plans, results, subject=ZK_39, profile="apache-zk-3.9", overrides={"x.y": "1"} if with_failure else {},
        started_at="2026-11-21T08:00:00Z", finished_at="2026-11-21T08:10:00Z", out_dir=out_dir,
        git={"git_sha": "0123456789abcdef", "git_dirty": False},
        selected=["broker_failover", "controller_failover", "reassignment", "network"], unmapped=["foo.bar"],
        required=required)


def test_certificate_data_from_fixture_runs(tmp_path):
    cert = _fixture_certificate(tmp_path, with_failure=False)
    caps = {c["name"]: c for c in cert["capabilities"]}
    assert [c["status"] for c in cert["capabilities"]] == [PASS, PASS, NA, NA]
    assert caps["network"]["reason"] == NO_SCENARIO
    assert caps["reassignment"]["reason"].startswith("no applicable scenario: needs Kafka 4.1+")
    assert (cert["overall"], cert["exit_code"]) == (CERTIFIED, 0)
    assert cert["scope"] == {"capabilities": ["broker_failover", "controller_failover", "reassignment", "network"],
                             "scenarios": None, "complete": False}
    (run,) = caps["broker_failover"]["scenarios"][0]["runs"]
    assert not Path(run["path"]).is_absolute() and (tmp_path / run["path"] / "verdict.json").is_file()

    bad = _fixture_certificate(tmp_path, with_failure=True)
    caps = {c["name"]: c for c in bad["capabilities"]}
    assert caps["broker_failover"]["status"] == FAIL and caps["controller_failover"]["status"] == PASS
    assert (bad["overall"], bad["exit_code"]) == (NOT_CERTIFIED, 1)
    failing = caps["broker_failover"]["scenarios"][0]["runs"][-1]
    assert failing["run_id"].endswith("-000002") and failing["verdict"] == FAIL
    assert any(r["rule"] == "lost" for r in failing["failing_rules"])


def test_a_required_capability_must_be_decided(tmp_path):
    """--require: a decided required capability is named in the scope; a required one that is
    NOT-APPLICABLE to the broker makes the certificate INCOMPATIBLE (exit 3), never CERTIFIED."""
    ok = _fixture_certificate(tmp_path, with_failure=False, required=["broker_failover"])
    assert (ok["overall"], ok["exit_code"]) == (CERTIFIED, 0)
    assert ok["scope"]["required"] == ["broker_failover"] and "required: broker_failover (decided)" in ok["scope_text"]
    na = _fixture_certificate(tmp_path, with_failure=False, required=["broker_failover", "reassignment"])
    assert (na["overall"], na["exit_code"]) == (certificate_data.INCOMPATIBLE, certificate_data.EXIT_INCOMPATIBLE)
    assert na["overall_reason"].startswith("required capability reassignment is not applicable: no applicable "
                                           "scenario: needs Kafka 4.1+")
    assert "reassignment (NOT decided)" in na["scope_text"]


def test_require_before_any_run(tmp_path, monkeypatch, capsys):
    """The CLI refuses a required capability that is not selected (exit 2), and writes an INCOMPATIBLE
    certificate without running anything when the plan leaves a required capability NOT-APPLICABLE."""
    from harness import cli
    assert cli.main(["certify", "--profile", "apache-zk-3.9", "--capability", "isr", "--require", "acks",
                     "--out", str(tmp_path / "a")]) == 2
    assert "--require acks: the capability is not selected; add --capability acks" in capsys.readouterr().err
    ran = []
    monkeypatch.setattr(certify, "_run_serial", lambda *a, **k: ran.append(a))
    from harness import request
    monkeypatch.setattr(request.images, "image_for", lambda *a, **k: types.SimpleNamespace(
        tag="kafka-chaos/kafka:3.9.2", kafka_version="3.9.2", distribution="apache-zk", image_id="sha256:x",
        labels={}))
    code = cli.main(["certify", "--profile", "apache-zk-3.9", "--capability", "quorum", "--require", "quorum",
                     "--out", str(tmp_path / "b")])
    assert code == certificate_data.EXIT_INCOMPATIBLE and not ran
    cert = json.loads((tmp_path / "b" / "certificate.json").read_text())
    assert cert["overall"] == certificate_data.INCOMPATIBLE and cert["required"] == ["quorum"]
    assert "required capability quorum is not applicable" in cert["overall_reason"]


def test_certificate_files(tmp_path):
    cert = _fixture_certificate(tmp_path, with_failure=True)
    page, js = write_certificate(cert, tmp_path)
    assert read_certificate(tmp_path) == json.loads(json.dumps(cert))
    text = page.read_text()
    assert "<script" not in text and "http://" not in text and "https://" not in text and "<link" not in text
    assert re.search(r'id="overall"[^>]*>NOT CERTIFIED<', text)
    for want in ("kafka-chaos/kafka:3.9.2", "apache-zk-3.9", "0123456789abcdef", "2026-11-21T08:00:00Z",
                 "x.y=1", "partial: broker_failover, controller_failover, reassignment, network only",
                 NO_SCENARIO, "foo.bar", "lost acknowledged writes"):
        assert want in text, want
    # every evidence link resolves to the run record, relative to the certificate
    hrefs = re.findall(r'href="([^"]+/verdict\.json)"', text)
    assert len(hrefs) == 3 and all((tmp_path / h).is_file() for h in hrefs)
    row = re.search(r'<tr id="cap-broker_failover" data-status="FAIL">(.*?)</tr>', text, re.S).group(1)
    assert "20250601T030000Z-broker_failover.kill_leader-000002" in row and "<code>lost</code>" in row


def test_html_escapes_what_it_shows(tmp_path):
    cert = _fixture_certificate(tmp_path, with_failure=False)
    cert["subject"]["broker_image"] = "<img src=x>"
    assert "<img src=x>" not in render_html(cert) and "&lt;img src=x&gt;" in render_html(cert)


# -- what a person sees --------------------------------------------------------------------------------
def _chromium(args: list[str], html: Path) -> subprocess.CompletedProcess:
    prof = tempfile.mkdtemp(prefix="chromium-")
    try:
        return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                               "--no-first-run", "--disable-background-networking", "--disable-component-update",
                               "--disable-sync", "--hide-scrollbars", f"--user-data-dir={prof}", *args,
                               html.as_uri()], capture_output=True, text=True, timeout=120)
    finally:
        shutil.rmtree(prof, ignore_errors=True)


def screenshot_rows(html: Path, png: Path, size=(1000, 500)) -> tuple[int, list[bytes]]:
    """Render ``html`` in headless Chromium; (channels, pixel rows) of the screenshot."""
    sys.path.insert(0, str(Path(__file__).parent / "reports"))
    import pngutil
    r = _chromium([f"--screenshot={png}", f"--window-size={size[0]},{size[1]}"], html)
    assert png.exists(), r.stderr[-2000:]
    w, h, ch, rows = pngutil.read_png(png)
    assert (w, h) == size
    return ch, rows


def badge_rows(ch: int, rows: list[bytes], colour: tuple[int, int, int]) -> list[int]:
    """Rows with a long run of the badge colour: where the overall badge is drawn."""
    px = bytes(colour)
    out = []
    for y, row in enumerate(rows):
        n = sum(1 for x in range(0, len(row) // ch, 2) if row[x * ch:x * ch + 3] == px)
        if n > 60:
            out.append(y)
    return out


def assert_shows_overall(page: Path, result: str, tmp: Path) -> None:
    """The screenshot of ``page`` shows the overall badge, in its colour, carrying exactly the glyphs
    of ``result``: its pixels equal those of a page that holds only the heading and that badge, and
    differ from the same page with any other result."""
    from reports import certificate as rc
    colour = tuple(int(rc.COLOURS[result][0][i:i + 2], 16) for i in (1, 3, 5))
    ch, rows = screenshot_rows(page, tmp / "page.png")
    ys = badge_rows(ch, rows, colour)
    assert len(ys) > 30 and ys[0] < 150, f"no {result} badge near the top of the page (rows {ys[:3]})"

    def reference(text: str) -> list[bytes]:
        ref = tmp / f"ref-{text.replace(' ', '_')}.html"
        ref.write_text(f"<!DOCTYPE html><html><head><meta charset='utf-8'><style>{rc.CSS}</style></head><body>"
                       f"<h1>kafka-chaos conformance certificate</h1><div>{rc._badge(result, 'overall', 'overall')}"
                       "</div></body></html>".replace(f">{result}<", f">{text}<"))
        return screenshot_rows(ref, tmp / f"{ref.stem}.png")[1]
    same = reference(result)
    assert all(rows[y] == same[y] for y in ys), f"the badge does not read {result!r}"
    for other in {"CERTIFIED", "NOT CERTIFIED", "INCONCLUSIVE"} - {result}:
        assert any(rows[y] != reference(other)[y] for y in ys)


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="/usr/bin/chromium missing: apt-get install -y chromium")
@pytest.mark.parametrize("with_failure,result", [(False, CERTIFIED), (True, NOT_CERTIFIED)])
def test_chromium_shows_the_overall_result(tmp_path, with_failure, result):
    cert = _fixture_certificate(tmp_path, with_failure=with_failure)
    page, _ = write_certificate(cert, tmp_path)
    dom = _chromium(["--dump-dom"], page).stdout
    assert re.search(rf'id="overall"[^>]*>{result}<', dom)
    assert_shows_overall(page, result, tmp_path)


def test_interrupted_certificate_is_inconclusive(tmp_path):
    plans = capabilities.plan([scen("controller_failover.kill_controller"), scen("controller_failover.other")], ZK_39,
                         ["controller_failover"])
    rid = "20250601T070000Z-controller.failover-000010"
    j = certify.judge_run(FIXTURES / rid, None, {})
    j.update(run_id=rid, path=str(FIXTURES / rid), seconds=1.0, attempt=0)
    cert = certificate_data.build_certificate(
        plans, {"controller_failover.kill_controller": [j]}, subject=ZK_39, profile="apache-zk-3.9", overrides={},
        started_at="a", finished_at="b", out_dir=tmp_path, git={"git_sha": None, "git_dirty": None},
        selected=["controller_failover"], unmapped=[], interrupted=True)
    (cap,) = cert["capabilities"]
    assert [s["status"] for s in cap["scenarios"]] == [PASS, UNKNOWN]
    assert cap["scenarios"][1]["note"] == "not run (interrupted)"
    assert (cap["status"], cert["overall"], cert["exit_code"]) == (UNKNOWN, INCONCLUSIVE, 4)
    assert "Interrupted" in render_html(cert)


# -- undecided capabilities ----------------------------------------------------------------------------
def _unknown_run(root: Path, run_id: str, scenario: str, cause: str | None, reason: str) -> Path:
    b = RunBuilder(run_id, scenario=scenario)
    b.phase(0.5, "cluster.ready").sends([1.0, 2.0])
    return b.write(root, "UNKNOWN", reason, cause=cause)


def _undecided_certificate(tmp_path: Path, *, with_failure: bool = False) -> dict:
    """broker_failover passes; isr stays UNKNOWN after a retry (workload, then workload again);
    network's run is UNKNOWN(docker-error) then not decided; reassignment is not applicable."""
    scenarios = [scen("broker_failover.kill_leader"), scen("isr.pause_follower"), scen("network.split"),
                 scen("reassignment.future", min_version="4.1")]
    plans = capabilities.plan(scenarios, ZK_39, ["broker_failover", "isr", "network", "reassignment"])
    runs = tmp_path / "runs"
    rid = "20250601T020000Z-broker_failover.kill_leader-000002" if with_failure else \
        "20250601T020000Z-broker_failover.kill_leader-000001"
    made = {
        "broker_failover.kill_leader": [FIXTURES / rid],
        "isr.pause_follower": [
            _unknown_run(runs, "isr-1", "isr.pause_follower", "workload", "producer p0 stalled from 12.0 s"),
            _unknown_run(runs, "isr-2", "isr.pause_follower", "workload", "producer p0 died: fatal error")],
        "network.split": [_unknown_run(runs, "net-1", "network.split", "docker-error", "docker exec failed"),
                          _unknown_run(runs, "net-2", "network.split", None, "cluster did not start")],
    }
    if with_failure:
        made["broker_failover.kill_leader"] = [FIXTURES / "20250601T030000Z-broker_failover.kill_leader-000002"]
    results = {}
    for name, paths in made.items():
        for i, p in enumerate(paths):
            j = certify.judge_run(p, None, {})
            j.update(run_id=p.name, path=str(p), seconds=3.0, attempt=i)
            results.setdefault(name, []).append(j)
    return certificate_data.build_certificate(
        plans, results, subject=ZK_39, profile="apache-zk-3.9", overrides={}, started_at="a", finished_at="b",
        out_dir=tmp_path, git={"git_sha": "abc", "git_dirty": False},
        selected=["broker_failover", "isr", "network", "reassignment"], unmapped=[])


def test_undecided_capabilities_are_listed_with_their_causes_and_never_certified(tmp_path):
    cert = _undecided_certificate(tmp_path)
    caps = {c["name"]: c for c in cert["capabilities"]}
    assert caps["broker_failover"]["status"] == PASS
    assert caps["isr"]["status"] == UNKNOWN and caps["isr"]["causes"] == ["workload"]
    assert caps["network"]["causes"] == [certificate_data.UNRECORDED]      # the last attempt's cause counts
    assert (cert["overall"], cert["exit_code"]) == (INCONCLUSIVE, 4)
    assert cert["overall_reason"] == ("2 of 3 applicable capabilities could not be decided (their runs stayed "
                                      "UNKNOWN); no capability failed; undecided after retries: isr (workload); "
                                      "network (unrecorded)")
    assert [u["name"] for u in cert["undecided"]] == ["isr", "network"]
    (isr,) = [u for u in cert["undecided"] if u["name"] == "isr"]
    assert isr["scenarios"] == [{"scenario": "isr.pause_follower", "cause": "workload",
                                 "reason": "producer p0 died: fatal error", "attempts": 2}]
    assert cert["decided"] == ["broker_failover"]
    assert [n["name"] for n in cert["not_applicable"]] == ["reassignment"]
    # the scope says exactly what was selected, decided, undecided (why) and not applicable (why)
    assert cert["scope"]["complete"] is False       # --capability chose four
    assert cert["scope_text"] == (
        "partial: broker_failover, isr, reassignment, network only; decided (1): broker_failover; "
        "undecided (2): isr (workload), network (unrecorded); not applicable (1): reassignment "
        "(no applicable scenario: needs Kafka 4.1+ (this is 3.9.2))")
    assert "all capabilities" not in cert["scope_text"] and "all " not in cert["scope_text"]


def test_undecided_with_a_failure_is_not_certified_and_still_lists_them(tmp_path):
    cert = _undecided_certificate(tmp_path, with_failure=True)
    assert (cert["overall"], cert["exit_code"]) == (NOT_CERTIFIED, 1)
    assert "undecided after retries: isr (workload); network (unrecorded)" in cert["overall_reason"]
    assert cert["decided"] == ["broker_failover"] and len(cert["undecided"]) == 2


def test_undecided_html_matches_the_json(tmp_path):
    cert = _undecided_certificate(tmp_path)
    page, js = write_certificate(cert, tmp_path)
    text = page.read_text()
    assert read_certificate(tmp_path)["scope_text"] == cert["scope_text"]
    assert re.search(r'id="overall"[^>]*>INCONCLUSIVE<', text)
    import html as h
    assert f'<span id="scope" class="partial">{h.escape(cert["scope_text"])}</span>' in text
    assert h.escape(cert["overall_reason"]) in text
    table = re.search(r'<table id="undecided">(.*?)</table>', text, re.S).group(1)
    rows = dict(re.findall(r'<tr data-key="([^"]+)">.*?data-col="causes">([^<]*)<', table, re.S))
    assert rows == {u["name"]: ", ".join(u["causes"]) for u in cert["undecided"]}
    assert "producer p0 died: fatal error (2 attempt(s))" in table
    assert "all capabilities" not in text


def test_scope_says_all_only_when_every_capability_was_decided(tmp_path):
    plans = capabilities.plan([scen("controller_failover.kill_controller")], ZK_39, ["controller_failover"])
    rid = "20250601T070000Z-controller.failover-000010"
    j = certify.judge_run(FIXTURES / rid, None, {})
    j.update(run_id=rid, path=str(FIXTURES / rid), seconds=1.0, attempt=0)
    cert = certificate_data.build_certificate(
        plans, {"controller_failover.kill_controller": [j]}, subject=ZK_39, profile="apache-zk-3.9", overrides={},
        started_at="a", finished_at="b", out_dir=tmp_path, git={"git_sha": None, "git_dirty": None},
        selected=["controller_failover"], unmapped=[])
    assert cert["overall"] == CERTIFIED and cert["undecided"] == [] and j["cause"] is None
    assert cert["scope_text"] == "partial: controller_failover only; all 1 decided: controller_failover"
    # every capability of the table selected, the catalog's scenarios: the NOT-APPLICABLE ones are named
    plans = capabilities.plan([scen("controller_failover.kill_controller")], ZK_39)
    cert = certificate_data.build_certificate(
        plans, {"controller_failover.kill_controller": [j]}, subject=ZK_39, profile="apache-zk-3.9", overrides={},
        started_at="a", finished_at="b", out_dir=tmp_path, git={"git_sha": None, "git_dirty": None},
        selected=None, unmapped=[])
    assert cert["overall"] == CERTIFIED and cert["scope"]["complete"] is True
    n = len(CAPABILITIES)
    assert cert["scope_text"].startswith(f"every capability of this harness version was selected ({n}); "
                                         f"decided (1): controller_failover; not applicable ({n - 1}): acks (")
    assert "all capabilities" not in render_html(cert)


def test_container_logs_of_a_run_are_linked_from_the_certificate(tmp_path):
    """A run whose record holds its containers' logs (harness/cluster/container_logs.py): the certificate's
    evidence row links each log, and each link resolves relative to the certificate."""
    import gzip
    import shutil
    rid = "20250601T020000Z-broker_failover.kill_leader-000001"
    run = tmp_path / "runs" / rid
    shutil.copytree(FIXTURES / rid, run)
    meta = json.loads((run / "metadata.json").read_text())
    meta["container_logs"] = [{"container": "kc-r0a1b2c-b1", "path": "logs/kc-r0a1b2c-b1.log.gz", "bytes": 5,
                               "truncated": False}, {"container": "kc-r0a1b2c-zk1", "error": "gone"}]
    (run / "metadata.json").write_text(json.dumps(meta))
    (run / "logs").mkdir()
    (run / "logs" / "kc-r0a1b2c-b1.log.gz").write_bytes(gzip.compress(b"hello"))
    j = certify.judge_run(run, None, {})
    assert j["container_logs"] == ["logs/kc-r0a1b2c-b1.log.gz"]
    j.update(run_id=rid, path=str(run), seconds=12.0, attempt=0)
    plans = capabilities.plan([scen("broker_failover.kill_leader")], ZK_39, ["broker_failover"])
    cert = certificate_data.build_certificate(
        plans, {"broker_failover.kill_leader": [j]}, subject=ZK_39, profile="apache-zk-3.9", overrides={},
        started_at="2026-11-21T08:00:00Z", finished_at="2026-11-21T08:10:00Z", out_dir=tmp_path,
        git={"git_sha": "0123456789abcdef", "git_dirty": False}, selected=["broker_failover"], unmapped=[])
    page, _ = write_certificate(cert, tmp_path)
    links = re.findall(r'href="([^"]+\.log\.gz)">([^<]+)<', page.read_text())
    assert [label for _, label in links] == ["b1 log"]
    assert gzip.decompress((tmp_path / links[0][0]).read_bytes()) == b"hello"


def test_measured_facts_are_medians_over_the_runs_that_measured_them(tmp_path):
    verdict = {"coverage": {"measured": {"group_join_s": 3.5, "first_ack_s": 0.4, "unavailable_s": None}}}
    assert certificate_data.measured_facts(verdict) == {"group_join_s": 3.5, "first_ack_s": 0.4}
    assert certificate_data.measured_facts({"verdict": "PASS"}) == {}          # older records: nothing measured
    runs = [{"measured": {"unavailable_s": 6.0, "group_join_s": 2.0}}, {"measured": {"unavailable_s": 9.0}},
            {"measured": {"unavailable_s": 7.0}}, {}]
    assert certificate_data.measured_medians(runs) == {"unavailable_s": {"median": 7.0, "runs": 3},
                                              "group_join_s": {"median": 2.0, "runs": 1}}
    assert certificate_data.measured_medians(runs[:2])["unavailable_s"] == {"median": 7.5, "runs": 2}
    cert = _fixture_certificate(tmp_path, with_failure=False)
    assert all(c["measured"] == {} for c in cert["capabilities"])     # the fixtures predate the facts
    cert["capabilities"][0]["measured"] = certificate_data.measured_medians(runs)
    page, _ = write_certificate(cert, tmp_path)
    row = re.search(r'<tr id="cap-broker_failover" data-status="PASS">(.*?)</tr>', page.read_text(), re.S).group(1)
    assert "measured: group join 2 s, unavailable under fault 7 s" in row, row


def test_parallel_children_of_a_distribution_file_skip_the_preflight_their_parent_ran(monkeypatch, tmp_path):
    """certify --parallel ran the file's preflight once; each child `kafka-chaos run` gets
    --preflight-passed and starts no cluster of its own for it (it cost 15-21 s per scenario); a
    built-in distribution's children get no such flag."""
    seen = []

    def fake_children(jobs, workers, runs_dir):
        seen.extend(j.argv for j in jobs)
        return [types.SimpleNamespace(path=None, returncode=2, log=tmp_path / "x.log", rest="", seconds=0.0)
                for _ in jobs]
    monkeypatch.setattr(certify, "run_children", fake_children)
    sp = types.SimpleNamespace(name="broker_failover.kill_leader")
    cp = types.SimpleNamespace(capability=types.SimpleNamespace(name="broker_failover"))
    from harness.request import Broker
    kfake = Path(__file__).resolve().parents[1] / "docs" / "examples" / "kfake.toml"
    for dist, flagged in ((distributions.resolve(file=str(kfake)), True), (distributions.resolve("apache-kraft"), False),
                          (distributions.resolve(), False)):
        seen.clear()
        args = types.SimpleNamespace(retries=0, seed=0, parallel=2)
        broker = Broker(types.SimpleNamespace(tag="img"), dist, "compatible")
        certify._run_parallel([(cp, sp)], args, broker, {}, tmp_path, {})
        assert ("--preflight-passed" in seen[0]) is flagged, (dist, seen)


def test_certificate_cites_each_evidence_runs_digests_and_rechecks_them(tmp_path):
    """Each evidence run carries the SHA-256 of its record's files (certificate.json and, shortened, the
    HTML); judging a record again re-checks verdict.json's evidence against the files: a record changed
    after its verdict, or a verdict without evidence, is judged from its events, and a disagreement named."""
    from harness.record.writer import file_sha256
    from tests.reports.synthetic import bulk_runs
    runs = bulk_runs(tmp_path / "runs", 12, seed=11)
    recs = sorted(runs.iterdir())
    good = next(d for d in recs if json.loads((d / "verdict.json").read_text())["verdict"] == PASS)
    j = certify.judge_run(good, None, {})
    assert j["record"] == {"evidence": "verified",
                           "sha256": {n.split(".")[0] + "_sha256": file_sha256(good / n)
                                      for n in ("metadata.json", "events.jsonl", "verdict.json")}}
    assert j["verdict"] == PASS and j["judged_against"] == "applied configuration"
    # a verdict.json edited to PASS over a lost write, its evidence removed: judged from the events
    fail = next(d for d in recs if json.loads((d / "verdict.json").read_text())["verdict"] == FAIL)
    v = json.loads((fail / "verdict.json").read_text())
    del v["evidence"]
    v.update(verdict=PASS, checks={})
    (fail / "verdict.json").write_text(json.dumps(v))
    j = certify.judge_run(fail, None, {})
    assert j["verdict"] == FAIL and any(r["rule"] == "lost" for r in j["failing_rules"])
    assert j["record"]["disagrees"] == "verdict.json says PASS, the events give FAIL"
    assert j["judged_against"].startswith("re-derived from the events (verdict.json has no evidence digests")
    # events changed after the verdict: the digest differs, the events are judged again
    text = (good / "events.jsonl").read_text().replace('"name":"cluster.ready"', '"name":"cluster.ready","x":1', 1)
    (good / "events.jsonl").write_text(text)
    j2 = certify.judge_run(good, None, {})
    assert j2["record"]["evidence"].startswith("events.jsonl sha256 ") and j2["verdict"] == PASS
    assert "disagrees" not in j2["record"]
    j.update(run_id=fail.name, path=str(fail), seconds=1.0, attempt=0)
    plans = capabilities.plan([scen("broker_failover.kill_leader")], ZK_39, ["broker_failover"])
    cert = certificate_data.build_certificate(
        plans, {"broker_failover.kill_leader": [j]}, subject=ZK_39, profile="apache-zk-3.9", overrides={},
        started_at="2026-11-21T08:00:00Z", finished_at="2026-11-21T08:10:00Z", out_dir=tmp_path,
        git={"git_sha": "0123456789abcdef", "git_dirty": False}, selected=["broker_failover"], unmapped=[])
    assert cert["overall"] == NOT_CERTIFIED
    page, js = write_certificate(cert, tmp_path)
    (run,) = read_certificate(tmp_path)["capabilities"][0]["scenarios"][0]["runs"]
    assert run["record"]["sha256"]["events_sha256"] == file_sha256(fail / "events.jsonl")
    html = page.read_text()
    assert "events:" + file_sha256(fail / "events.jsonl")[:12] in html and "the events give FAIL" in html
