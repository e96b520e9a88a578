"""Unit tests of the report's pure parts (no Spark): parsing, statistics, availability
derivation, gate, JUnit, version pairing, and that the committed fixtures match their generator."""

from __future__ import annotations

import filecmp
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from reports import gate, junit
from reports.availability import derive_run
from harness.record.verdicts import check_count
from reports.parse import FIELDS, parse_run
from reports.stats import percentile, wilson
from reports.tables import pick_pair, version_key

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def row(run_dir: str, files: dict) -> dict:
    return dict(zip(FIELDS, parse_run(run_dir, files)))


def meta(**kw) -> bytes:
    m = {"schema_version": 1, "run_id": "r1", "suite": "smoke", "scenario": "s", "kafka_version": "3.9.0",
         "broker_image": "img:1", "workload": {"acks": -1}, "topics": [{"name": "t", "config": {}}],
         "broker_config": {"min.insync.replicas": "2"}, "schedule": [{"fault": "kill"}, {"fault": "pause"}],
         "started_at": "2025-06-03T01:02:03Z", "seed": 5}
    m.update(kw)
    return json.dumps(m).encode()


def verdict(v="PASS", checks=None, **kw) -> bytes:
    d = {"schema_version": 1, "verdict": v, "reason": "r", "checks": checks or {}}
    d.update(kw)
    return json.dumps(d).encode()


# -- parse --------------------------------------------------------------------------------------
def test_parse_valid_record_flattens_fields():
    r = row("file:/x/r1", {"metadata.json": meta(), "verdict.json": verdict(
        "FAIL", {"durability": {"verdict": "FAIL", "lost": {"verdict": "FAIL", "count": 3},
                                "duplicates": {"verdict": "PASS", "count": 0}},
                 "conformance": {"verdict": "FAIL", "divergences": [{"rule": "§5.2"}, {}]}})})
    assert r["skip_reason"] is None
    assert (r["verdict"], r["suite"], r["broker"], r["seed"]) == ("FAIL", "smoke", "3.9.0", 5)
    assert (r["acks"], r["min_isr"], r["unclean"]) == ("all", "2", "false")  # -1 -> all; unclean default
    assert r["date"] == "2025-06-03"
    assert r["schedule_fault_kinds"] == ["kill", "pause"]
    assert (r["lost"], r["duplicates"], r["inconsistent_offsets"]) == (3, 0, None)  # missing check -> None
    assert r["lost_allowed"] == 0
    assert r["divergence_rules"] == ["§5.2", "unknown"]
    assert r["failed_checks"] == ["conformance", "durability", "durability.lost"]


def test_parse_topic_config_wins_over_broker_config_and_foreign_image_label():
    r = row("/x/r", {"metadata.json": meta(kafka_version=None, topics=[{"config": {"min.insync.replicas": 3}}]),
                     "verdict.json": verdict()})
    assert r["min_isr"] == "3" and r["broker"] == "img:1"
    assert r["lost"] is None and r["conformance_checked"] is False


@pytest.mark.parametrize("files, reason", [
    ({"verdict.json": verdict()}, "metadata.json: missing"),
    ({"metadata.json": b"{", "verdict.json": verdict()}, "metadata.json: not valid JSON"),
    ({"metadata.json": b"[1]", "verdict.json": verdict()}, "metadata.json: expected a JSON object, found list"),
    ({"metadata.json": meta(schema_version=2), "verdict.json": verdict()}, "metadata.json: schema_version 2"),
    ({"metadata.json": meta(), "verdict.json": verdict("OK")}, "verdict.json: verdict 'OK' is not one of"),
    ({"metadata.json": meta(scenario=None), "verdict.json": verdict()}, "metadata.json: no scenario"),
    ({"metadata.json": meta(), "verdict.json": b"\xff\xfe"}, "verdict.json: not valid JSON"),
])
def test_parse_bad_records_give_a_reason_never_raise(files, reason):
    r = row("/x/r", files)
    assert r["skip_reason"] is not None and reason in r["skip_reason"]
    assert r["verdict"] is None


def test_lost_allowed_by_configuration_as_the_durability_checker_writes_it():
    checks = {"durability": {"verdict": "PASS", "checks": {"lost": {"verdict": "ALLOWED", "count": 4,
                                                                    "violations": 0, "allowed": 4}}}}
    r = row("/x/r", {"metadata.json": meta(), "verdict.json": verdict("PASS", checks)})
    assert (r["lost"], r["lost_allowed"], r["failed_checks"]) == (4, 4, [])
    r = row("/x/r", {"metadata.json": meta(), "verdict.json": verdict("PASS", {})})
    assert (r["lost"], r["lost_allowed"]) == (None, None)


def test_conformance_rules_include_invariant_violations():
    checks = {"conformance": {"verdict": "FAIL", "profile": "compatible", "divergences": [{"rule": "D1"}],
                              "invariant_violations": [{"rule": "H5"}, {"rule": "H5"}]}}
    r = row("/x/r", {"metadata.json": meta(profile=None), "verdict.json": verdict("FAIL", checks)})
    assert r["divergence_rules"] == ["D1", "H5", "H5"] and r["profile"] == "compatible"


def test_check_count_shapes():
    assert check_count({"lost": {"count": 2}}, "lost") == 2
    assert check_count({"durability": {"checks": {"lost_acknowledged_writes": {"count": 4}}}}, "lost") == 4
    assert check_count({"lost": {"values": [1, 2, 3]}}, "lost") == 3
    assert check_count({"lost": {"verdict": "PASS"}}, "lost") is None
    assert check_count({"lost": "garbage"}, "lost") is None
    assert check_count({"duplicated": {"count": "7"}}, "duplicates") == 7


# -- statistics ----------------------------------------------------------------------------------
def test_wilson_known_values():
    assert [round(x, 3) for x in wilson(1, 3)] == [0.061, 0.792]
    assert [round(x, 3) for x in wilson(2, 7)] == [0.082, 0.641]
    assert [round(x, 3) for x in wilson(0, 1)] == [0.0, 0.793]
    assert wilson(0, 0) == (None, None)


def test_percentile_linear_interpolation():
    assert percentile([5, 2, 3], 0.5) == 3
    assert percentile([2, 3, 5], 0.95) == pytest.approx(4.8)
    assert percentile([7.0], 0.95) == 7.0
    assert percentile([], 0.5) is None


# -- availability derivation ----------------------------------------------------------------------
def ps(t, leader, isr, seq=0, partition=0):
    return {"type": "zk.partition_state", "t": t, "seq": seq, "topic": "t", "partition": partition,
            "leader": leader, "isr": isr, "deleted": False}


def fault(t, fid, kind="kill", end=False):
    return {"type": "fault.end" if end else "fault.start", "t": t, "seq": 0, "fault_id": fid, "fault": kind}


def test_derive_leader_and_isr_recovery_and_leaderless_window():
    evs = [ps(1, 1, [1, 2, 3]), fault(10, 0), ps(11, -1, [1]), ps(15, 3, [3]), fault(20, 0, end=True),
           ps(30, 3, [3, 1, 2]), ps(1, 2, [2, 3], partition=1), ps(12, 2, [2], partition=1)]
    faults, windows = derive_run(evs, last_t=40)
    (f,) = faults
    assert f["time_to_new_leader"] == 5.0 and f["partitions_leader_changed"] == 1
    # partition 1: ISR 2 -> 1 and never back: ISR not restored for the fault
    assert f["partitions_isr_shrunk"] == 2 and f["isr_unrestored"] == 1 and f["time_to_isr_restored"] is None
    assert f["t_end"] == 20
    assert windows == [{"topic": "t", "partition": 0, "start": 11, "end": 15, "duration_s": 4, "open": False,
                        "fault": "kill", "fault_id": 0}]


def test_derive_same_leader_reelected_after_leaderless_counts_and_window_bounds():
    evs = [ps(1, 1, [1]), fault(5, 0), ps(6, -1, []), ps(9, 1, [1]), fault(20, 1, "pause"), ps(21, 2, [1])]
    faults, windows = derive_run(evs, last_t=30)
    assert faults[0]["time_to_new_leader"] == 4.0      # same broker back after leader = -1
    assert faults[0]["time_to_isr_restored"] == 4.0    # ISR 0 < 1 then full again
    assert faults[1]["time_to_new_leader"] == 1.0      # next fault's window: leader 1 -> 2
    assert len(windows) == 1 and windows[0]["duration_s"] == 3


def test_derive_follower_fault_no_leader_change_and_open_window():
    evs = [ps(1, 1, [1, 2]), fault(5, 0, "stop"), ps(7, 1, [1]), ps(9, 1, [1, 2]), ps(12, -1, [])]
    faults, windows = derive_run(evs, last_t=20)
    assert faults[0]["time_to_new_leader"] is None and faults[0]["leader_unrecovered"] == 1
    assert faults[0]["time_to_isr_restored"] == 4.0
    assert windows[0]["open"] is True and windows[0]["end"] == 20 and windows[0]["fault"] == "stop"


def test_derive_no_faults_window_attributed_to_none():
    faults, windows = derive_run([ps(1, -1, []), ps(2, 1, [1])])
    assert faults == [] and windows[0]["fault"] == "none" and windows[0]["duration_s"] == 1


# -- gate ---------------------------------------------------------------------------------------------
def test_gate_defaults_fail_on_lost_and_fail_not_on_unknown():
    th = gate.thresholds({}, {})
    assert gate.evaluate({"runs": 3, "unknown": 2}, th)["passed"] is True
    r = gate.evaluate({"runs": 3, "lost": 1, "lost_not_allowed": 1}, th)
    assert r["passed"] is False and r["failed_rules"] == ["fail_on_lost"]
    # losses the configuration permits (acks=1) are reported, and gated only when asked to
    assert gate.evaluate({"runs": 3, "lost": 4, "lost_allowed": 4, "lost_not_allowed": 0}, th)["passed"] is True
    th2 = gate.thresholds({}, {"fail_on_lost_allowed": 1})
    assert gate.evaluate({"runs": 3, "lost_allowed": 4}, th2)["failed_rules"] == ["fail_on_lost_allowed"]
    assert gate.evaluate({"runs": 0}, th)["failed_rules"] == ["min_runs"]


def test_gate_precedence_file_then_flags(tmp_path):
    cfg = tmp_path / "g.json"
    cfg.write_text(json.dumps({"fail_on_lost": 10, "fail_on_unknown": 1}))
    th = gate.thresholds(gate.load_config(str(cfg)), {"fail_on_unknown": 0, "fail_on_lost": None})
    assert th["fail_on_lost"] == 10 and th["fail_on_unknown"] == 0
    r = gate.evaluate({"runs": 1, "lost_not_allowed": 9, "unknown": 5}, th)
    assert r["passed"] is True
    assert gate.evaluate({"runs": 1, "lost_not_allowed": 10}, th)["failed_rules"] == ["fail_on_lost"]


@pytest.mark.parametrize("text, msg", [("{", "gate config"), ('{"nope": 1}', "unknown key 'nope'"),
                                       ('{"fail_on_lost": -1}', "non-negative"), ("[1]", "JSON object")])
def test_gate_config_errors(tmp_path, text, msg):
    p = tmp_path / "g.json"
    p.write_text(text)
    with pytest.raises(gate.GateConfigError, match=msg):
        gate.load_config(str(p))


# -- JUnit, versions ----------------------------------------------------------------------------------
def test_junit_one_testcase_per_run_and_skipped_records():
    runs = [{"run_id": "a", "suite": "smoke", "scenario": "s", "verdict": "PASS", "reason": "ok"},
            {"run_id": "b", "suite": "smoke", "scenario": "s", "verdict": "FAIL", "reason": "lost",
             "failed_checks": ["durability.lost"], "lost": 2},
            {"run_id": "c", "suite": "chaos", "scenario": "x", "verdict": "UNKNOWN", "reason": "docker died"}]
    root = junit.build(runs, [{"path": "/r/bad", "reason": "metadata.json: missing"}])
    assert root.get("tests") == "4" and root.get("failures") == "1" and root.get("skipped") == "2"
    cases = root.findall(".//testcase")
    assert [c.get("name") for c in cases] == ["x[unknown]", "s[unknown]", "s[unknown] #2", "/r/bad"]
    assert [c.find("properties/property[@name='run_id']").get("value") for c in cases[:3]] == ["c", "a", "b"]
    fail = root.find(".//testcase[@classname='smoke']/failure")
    assert "durability.lost" in fail.text and "lost: 2" in fail.text
    ET.tostring(root)  # serialisable


def _junit_runs(build_stamp: str, root: str) -> list[dict]:
    """The runs of one CI build: the same scenarios, new run ids and another workspace."""
    return [{"run_id": f"{build_stamp}-broker_failover.kill_leader-00{i}", "suite": "smoke",
             "scenario": "broker_failover.kill_leader", "distribution": dist, "broker": ver, "verdict": "PASS",
             "path": f"file:{root}/runs/{build_stamp}-{i}"}
            for i, (dist, ver) in enumerate([("apache-kraft", "4.4.0"), ("apache-zk", "3.9.2"),
                                              (f"file:{root}/kfake.toml", "kafka-chaos/kfake:latest"),
                                              ("apache-kraft", "4.4.0")])]


def test_junit_names_are_stable_across_builds_and_paths_relative():
    names, paths = [], []
    for stamp, root in (("20261128T074825Z", "/home/ci/build-1"), ("20261129T010203Z", "/tmp/other-workspace")):
        xml = junit.build(_junit_runs(stamp, root), [{"path": f"{root}/runs/bad", "reason": "no verdict"}],
                          base=f"{root}/runs")
        names.append([(c.get("classname"), c.get("name")) for c in xml.iter("testcase")])
        paths.append([p.get("value") for p in xml.iter("property") if p.get("name") == "path"])
        assert stamp in ET.tostring(xml, encoding="unicode")           # the run id is kept, as a property
        assert root not in ET.tostring(xml, encoding="unicode")        # no absolute path of the workspace
    assert names[0] == names[1] == [
        ("smoke", "broker_failover.kill_leader[apache-kraft-4.4.0]"),
        ("smoke", "broker_failover.kill_leader[apache-zk-3.9.2]"),
        ("smoke", "broker_failover.kill_leader[kfake-kafka-chaos/kfake:latest]"),
        ("smoke", "broker_failover.kill_leader[apache-kraft-4.4.0] #2"),
        ("skipped-records", "bad")]
    assert paths[0][0].endswith("-0") and not paths[0][0].startswith("/")
    assert junit.relative("s3://bucket/runs/x", "s3://bucket/runs") == "s3://bucket/runs/x"


def test_version_pairs():
    assert sorted(["3.10.0", "3.9.1", "3.9.0"], key=version_key) == ["3.9.0", "3.9.1", "3.10.0"]
    assert pick_pair(["3.9.0", "3.7.0", "3.10.0"], None, None) == ("3.9.0", "3.10.0")
    assert pick_pair(["3.9.0", "3.7.0", "3.10.0"], "3.7.0", None) == ("3.7.0", "3.10.0")
    assert pick_pair(["3.9.0", "3.7.0", "3.10.0"], None, "3.9.0") == ("3.7.0", "3.9.0")
    assert pick_pair(["3.9.0"], None, None) is None


# -- fixtures -----------------------------------------------------------------------------------------
def test_committed_fixtures_match_generator(tmp_path):
    sys.path.insert(0, str(FIXTURES))
    try:
        import make_fixture_runs
    finally:
        sys.path.remove(str(FIXTURES))
    out = make_fixture_runs.make(tmp_path / "runs")
    committed = FIXTURES / "runs" / "synthetic"

    def same(a: Path, b: Path):
        cmp = filecmp.dircmp(a, b, ignore=[])
        assert not cmp.left_only and not cmp.right_only, (cmp.left_only, cmp.right_only)
        _, mismatch, errors = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
        assert not mismatch and not errors, (a, mismatch, errors)
        for d in cmp.common_dirs:
            same(a / d, b / d)
    same(out, committed)


def test_html_table_shows_bounded_rows_with_note():
    from reports.html import table as html_table

    rows = [{"k": f"r{i}", "v": i * 0.5} for i in range(5)]
    out = html_table("t", rows, [("k", "key"), ("v", "value")], key=["k"], left=("k",), max_rows=2)
    assert out.count("<tr data-key=") == 2 and "3 more rows in the Parquet table" in out
    assert 'data-col="v">0.500<' in out
    assert html_table("t", [], [("k", "key")], empty="nothing") == '<p class="muted" id="t">nothing</p>'
