"""The report job end to end on the committed synthetic fixtures (tests/fixtures/runs/synthetic,
built by tests/fixtures/make_fixture_runs.py, which documents the expected number of each run).

One SparkSession and one report for the whole module; the tests assert the numbers in the
Parquet tables, summary.json, JUnit XML and the HTML as rendered by headless Chromium.

The fixtures' verdicts are chosen by hand to exercise the tables (their events do not decide them:
re-derived, every one is tampered, test_fixture_verdicts_are_claims_the_events_do_not_support), so
the report reads them with ``--trust-stored``: their verdict.json evidence names their files' digests."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from reports.job import Options, main, run_report

pytestmark = pytest.mark.spark

FIXTURE_RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "synthetic"
CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="module")
def report(spark, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    summary = run_report(spark, Options(runs_path=str(FIXTURE_RUNS), out=str(out), trust_stored=True))
    return out, summary


def table(spark, out: Path, name: str, keys: list[str]) -> dict:
    rows = [r.asDict(recursive=True) for r in spark.read.parquet(str(out / "tables" / name)).collect()]
    return {tuple(r[k] for k in keys): r for r in rows}


def r3(x):
    return None if x is None else round(x, 3)


def test_summary_totals_and_gate(report):
    out, s = report
    t = s["totals"]
    assert (t["runs"], t["pass"], t["fail"], t["unknown"]) == (10, 6, 3, 1)
    assert (t["acknowledged_writes"], t["lost"], t["duplicates"], t["inconsistent_offsets"]) == (90, 8, 1, 1)
    assert (t["lost_allowed"], t["lost_not_allowed"]) == (0, 8)
    assert t["conformance_divergences"] == 4 and t["runs_without_durability_checks"] == 1
    assert t["flaky"] == 1 and t["regressions"] == 1
    assert s["gate"]["passed"] is False and s["gate"]["failed_rules"] == ["fail_on_lost", "fail_on_fail"]
    assert s["exit_code"] == 1
    on_disk = json.loads((out / "summary.json").read_text())
    assert on_disk["totals"] == t and on_disk["exit_code"] == 1


def test_malformed_partial_and_old_records_are_skipped_and_named(report):
    out, s = report
    got = {Path(x["path"]).name: x["reason"] for x in s["skipped_records"]}
    assert s["totals"]["skipped_records"] == 7 == len(got)
    expect = {"bad.metadata_json": "metadata.json: not valid JSON", "bad.missing_verdict": "verdict.json: missing",
              "bad.old_schema": "metadata.json: schema_version 0 not supported",
              "bad.verdict_value": "verdict.json: verdict 'MAYBE'",
              "bad.truncated_events": "events.jsonl:14: not valid JSON",
              "bad.missing_events": "events.jsonl: missing",
              "bad.only_events": "metadata.json: missing; verdict.json: missing"}
    for tag, reason in expect.items():
        (name,) = [n for n in got if tag in n]
        assert reason in got[name]
    assert not any("inprogress" in n for n in got)  # .tmp- directories are not records
    assert s["skipped_reasons"]["verdict.json: missing"] == 2  # missing_verdict, only_events
    assert s["skipped_reasons"]["events.jsonl:N: not valid JSON"] == 1
    assert s["skipped_reasons"]["metadata.json: not valid JSON"] == 1


def test_runs_table(spark, report):
    out, _ = report
    runs = table(spark, out, "runs", ["run_id"])
    assert len(runs) == 10
    r2 = runs[("20250601T030000Z-broker_failover.kill_leader-000002",)]
    assert (r2["acknowledged_writes"], r2["sends"], r2["send_unknown"], r2["lost"]) == (8, 10, 2, 2)
    assert r2["max_ack_gap_s"] == pytest.approx(0.5) and r2["fault_kinds"] == ["kill"]
    r4 = runs[("20250601T050000Z-network.isolate_leader-000004",)]
    assert (r4["send_failed"], r4["acks"], r4["min_isr"], r4["unclean"]) == (1, "1", "1", "true")
    r9 = runs[("20250602T020000Z-random.mixed-000009",)]
    assert r9["lost"] is None and r9["verdict"] == "UNKNOWN"
    assert runs[("20250601T070000Z-controller.failover-000010",)]["fault_kinds"] == ["none"]


def test_pass_fail_matrix(spark, report):
    out, _ = report
    m = table(spark, out, "pass_fail_matrix", ["suite", "scenario", "fault_kind", "broker"])
    assert len(m) == 7
    k = m[("smoke", "broker_failover.kill_leader", "kill", "3.9.0")]
    assert (k["runs"], k["pass"], k["fail"], k["unknown"]) == (3, 2, 1, 0)
    assert (r3(k["pass_rate"]), r3(k["fail_ci_low"]), r3(k["fail_ci_high"])) == (0.667, 0.061, 0.792)
    assert k["broker_image"] == "kafka-chaos/kafka:3.9.0"
    i = m[("chaos", "network.isolate_leader", "isolate", "3.7.0")]
    assert (i["fail"], r3(i["fail_ci_low"]), r3(i["fail_ci_high"])) == (1, 0.207, 1.0)
    n = m[("nightly", "random.mixed", "pause", "3.9.0")]
    assert (n["runs"], n["pass"], n["fail"], n["unknown"]) == (3, 1, 1, 1)
    assert (r3(n["pass_rate"]), r3(n["unknown_rate"]), r3(n["fail_ci_low"])) == (0.5, 0.333, 0.095)
    assert m[("conformance", "controller.failover", "none", "3.9.0")]["pass"] == 1


def test_durability_with_wilson_intervals(spark, report):
    out, _ = report
    d = table(spark, out, "durability", ["acks", "min_isr", "unclean"])
    strict = d[("all", "2", "false")]
    assert (strict["runs"], strict["acknowledged_writes"], strict["lost"], strict["lost_allowed"]) == (8, 55, 3, 0)
    assert (strict["runs_with_lost"], strict["runs_checked_lost"]) == (2, 7)  # the UNKNOWN run has no checks
    assert (r3(strict["lost_run_rate"]), r3(strict["lost_ci_low"]), r3(strict["lost_ci_high"])) == (0.286, 0.082, 0.641)
    assert (strict["duplicates"], r3(strict["duplicates_ci_low"]), r3(strict["duplicates_ci_high"])) == (0, 0.0, 0.354)
    assert r3(strict["lost_per_acknowledged"]) == r3(3 / 55)
    loose = d[("1", "1", "true")]
    assert (loose["runs"], loose["acknowledged_writes"], loose["lost"], loose["duplicates"],
            loose["inconsistent_offsets"]) == (2, 35, 5, 1, 1)
    assert (r3(loose["lost_run_rate"]), r3(loose["lost_ci_low"]), r3(loose["lost_ci_high"])) == (0.5, 0.095, 0.905)
    assert loose["configuration"] == "acks=1 min.isr=1 unclean=true"


def test_availability_distributions(spark, report):
    out, _ = report
    a = table(spark, out, "availability", ["fault", "broker"])
    k = a[("kill", "3.9.0")]
    assert (k["faults"], k["new_leader_s_n"]) == (3, 3)
    assert (k["new_leader_s_p50"], r3(k["new_leader_s_p95"]), k["new_leader_s_max"]) == (3.0, 4.8, 5.0)
    assert (k["isr_restored_s_p50"], r3(k["isr_restored_s_p95"]), k["isr_restored_s_max"]) == (14.0, 19.4, 20.0)
    assert (k["unavailable_windows"], k["unavailable_total_s"], k["unavailable_s_max"]) == (1, 4.0, 4.0)
    iso = a[("isolate", "3.7.0")]
    assert (iso["new_leader_s_p50"], iso["isr_restored_s_n"], iso["isr_unrestored_faults"]) == (6.0, 0, 1)
    assert a[("isolate", "3.9.0")]["isr_restored_s_max"] == 8.0
    assert a[("kill", "3.7.0")]["new_leader_s_max"] == 4.0
    p = a[("pause", "3.9.0")]
    assert (p["faults"], p["new_leader_s_n"], p["unavailable_windows"]) == (2, 0, 0)
    rec = table(spark, out, "fault_recovery", ["run_id", "fault_id"])
    assert len(rec) == 10
    win = [r.asDict() for r in spark.read.parquet(str(out / "tables" / "unavailability_windows")).collect()]
    assert [(w["start"], w["end"], w["fault"], w["open"]) for w in win] == [(11.0, 15.0, "kill", False)]


def test_conformance_flakiness_trends_regressions(spark, report):
    out, _ = report
    c = table(spark, out, "conformance", ["rule", "broker", "profile"])
    assert set(c) == {("§5.2", "3.7.0", "apache-zk-3.7"), ("§8.1", "3.7.0", "apache-zk-3.7"),
                      ("§8.1", "3.9.0", "apache-zk-3.9")}
    x = c[("§5.2", "3.7.0", "apache-zk-3.7")]
    assert (x["divergences"], x["runs_affected"], x["runs_checked"], r3(x["run_rate"])) == (2, 1, 2, 0.5)
    y = c[("§8.1", "3.9.0", "apache-zk-3.9")]
    assert (y["runs_checked"], r3(y["run_rate"]), r3(y["run_ci_low"]), r3(y["run_ci_high"])) == (7, 0.143, 0.026, 0.513)

    f = table(spark, out, "flakiness", ["scenario", "seed", "broker"])
    assert list(f) == [("broker_failover.kill_leader", 1, "3.9.0")]
    fl = f[("broker_failover.kill_leader", 1, "3.9.0")]
    assert fl["flaky"] is True and fl["verdicts"] == ["FAIL", "PASS"] and len(fl["run_ids"]) == 2

    tr = table(spark, out, "trends", ["date"])
    assert sorted(tr) == [("2025-06-01",), ("2025-06-02",)]
    assert (tr[("2025-06-01",)]["runs"], r3(tr[("2025-06-01",)]["pass_rate"])) == (1, 1.0)
    d2 = tr[("2025-06-02",)]
    assert (d2["runs"], d2["fail"], d2["unknown"], d2["pass_rate"], d2["lost"]) == (2, 1, 1, 0.0, 1)

    rg = table(spark, out, "regressions", ["dimension", "suite", "scenario", "fault_kind"])
    kill = rg[("broker", "smoke", "broker_failover.kill_leader", "kill")]
    assert (kill["baseline"], kill["candidate"], kill["base_fail_rate"], r3(kill["cand_fail_rate"])) == \
        ("3.7.0", "3.9.0", 0.0, 0.333)
    assert kill["regressed"] is True
    assert rg[("broker", "chaos", "network.isolate_leader", "isolate")]["regressed"] is False
    h = rg[("harness_version", "smoke", "broker_failover.kill_leader", "kill")]
    assert (h["baseline"], h["candidate"], h["base_runs"], h["cand_runs"], h["regressed"]) == \
        ("0.1.0", "0.2.0", 3, 1, False)
    assert sum(r["regressed"] for r in rg.values()) == 1


def test_junit_xml(report):
    out, _ = report
    root = ET.parse(out / "junit.xml").getroot()
    assert (root.get("tests"), root.get("failures"), root.get("skipped")) == ("17", "3", "8")
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {"smoke", "chaos", "nightly", "conformance", "skipped-records"}
    assert suites["smoke"].get("tests") == "4" and suites["smoke"].get("failures") == "1"
    # named family.scenario[distribution-version] (reports/junit.py), a repeat of the same scenario " #2"
    cases = [c for c in suites["chaos"].iter("testcase") if c.get("name").startswith("network.isolate_leader[")]
    names = [c.get("name") for c in cases]
    assert len(cases) >= 1 and len(set(names)) == len(names), names
    (case,) = [c for c in cases if c.find("failure") is not None]
    failure = case.find("failure")
    assert "lost: 5" in failure.text and "durability.lost" in failure.text
    unknown = suites["nightly"].find(".//skipped")
    assert "cluster did not start" in unknown.get("message")


def _chromium(args: list[str], html: Path) -> subprocess.CompletedProcess:
    prof = tempfile.mkdtemp(prefix="chromium-")
    try:
        return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                               "--no-first-run", "--disable-background-networking", "--disable-component-update",
                               "--disable-sync", f"--user-data-dir={prof}", *args, html.as_uri()],
                              capture_output=True, text=True, timeout=120)
    finally:
        shutil.rmtree(prof, ignore_errors=True)


def test_html_is_self_contained(report):
    out, _ = report
    text = (out / "report.html").read_text()
    assert "<script" not in text and "http://" not in text and "https://" not in text
    assert "<link" not in text and text.count("<svg") >= 10 + 4  # 10 timelines + charts


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="/usr/bin/chromium missing: apt-get install -y chromium")
def test_html_rendered_in_chromium(report):
    import re
    import sys
    sys.path.insert(0, str(Path(__file__).parent))
    import pngutil

    out, _ = report
    html = out / "report.html"
    dom = _chromium(["--dump-dom"], html).stdout

    def by_id(i):
        m = re.search(rf'id="{i}"[^>]*>([^<]*)<', dom)
        assert m, f"#{i} not in the rendered DOM"
        return m.group(1)
    assert by_id("gate-status") == "FAILED"
    assert (by_id("total-runs"), by_id("count-pass"), by_id("count-fail"), by_id("count-unknown")) == \
        ("10", "6", "3", "1")
    assert (by_id("total-acked"), by_id("total-lost"), by_id("skipped-count")) == ("90", "8", "7")
    row = re.search(r'<tr data-key="acks=all min.isr=2 unclean=false">(.*?)</tr>', dom).group(1)
    assert re.search(r'data-col="lost_ci_low">0\.082<', row) and re.search(r'data-col="lost_ci_high">0\.641<', row)
    row = re.search(r'<tr data-key="kill\|3\.9\.0">(.*?)</tr>', dom).group(1)
    assert re.search(r'data-col="new_leader_s_p95">4\.800<', row)
    assert 'id="timeline-20250601T030000Z-broker_failover.kill_leader-000002"' in dom
    assert dom.count('id="timeline-') == 10
    assert "bad.truncated_events" in dom
    assert "ISR not restored after 1 fault(s)" in dom   # isolate on 3.7.0: ISR never came back

    png = out / "report.png"
    r = _chromium([f"--screenshot={png}", "--window-size=1400,2000"], html)
    assert png.exists(), r.stderr[-2000:]
    st = pngutil.stats(png)
    assert (st["width"], st["height"]) == (1400, 2000)
    assert st["variance"] > 500 and st["colours"] > 50     # not blank: text, cards, coloured bars
    assert st["red_pixels"] > 20                           # the FAILED badge and the FAIL bar are visible


def test_main_exit_codes(spark, report, tmp_path):
    # Reuses the module's active session (and leaves it running). --no-summaries: the committed fixtures
    # must not get a compacted table (tests/reports/test_pure.py compares them with their generator).
    assert main([str(FIXTURE_RUNS), "-o", str(tmp_path / "a"), "--no-parquet", "--max-timelines", "0", "--no-summaries",
                 "--fail-on-lost", "0", "--fail-on-fail", "0", "--trust-stored"]) == 0
    s = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert s["gate"]["passed"] is True and s["totals"]["runs"] == 10
    cfg = tmp_path / "gate.json"
    cfg.write_text(json.dumps({"fail_on_lost": 0, "fail_on_fail": 0, "fail_on_skipped": 7}))
    assert main([str(FIXTURE_RUNS), "-o", str(tmp_path / "b"), "--no-parquet", "--max-timelines", "0",
                 "--no-summaries", "--gate-config", str(cfg), "--trust-stored"]) == 1
    assert json.loads((tmp_path / "b" / "summary.json").read_text())["gate"]["failed_rules"] == ["fail_on_skipped"]
    assert main([str(tmp_path / "does-not-exist"), "-o", str(tmp_path / "c")]) == 2
    (tmp_path / "empty").mkdir()
    assert main([str(tmp_path / "empty"), "-o", str(tmp_path / "d")]) == 2
    assert main([str(FIXTURE_RUNS)]) == 2                       # -o missing
    assert main([str(FIXTURE_RUNS), "-o", str(tmp_path / "e"), "--no-summaries", "--fail-on-lost", "-1"]) == 2
    bad = tmp_path / "bad.json"
    bad.write_text('{"fail_on_everything": 1}')
    assert main([str(FIXTURE_RUNS), "-o", str(tmp_path / "f"), "--no-summaries", "--gate-config", str(bad)]) == 2
    assert spark.sparkContext._jsc is not None                 # the shared session was not stopped


def test_fixture_verdicts_are_claims_the_events_do_not_support(spark, tmp_path):
    """Without --trust-stored the report believes the events: every hand-made fixture verdict is named
    tampered (its evidence names its files, so verdict.json was "edited"), and the gate fails on it."""
    assert main([str(FIXTURE_RUNS), "-o", str(tmp_path / "a"), "--no-parquet", "--max-timelines", "0",
                 "--no-summaries", "--fail-on-lost", "0", "--fail-on-fail", "0", "--fail-on-undecided", "0"]) == 1
    s = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert s["totals"]["tampered"] == 10 == s["totals"]["runs"] and s["gate"]["failed_rules"] == ["fail_on_tampered"]
    assert all(t["what"].startswith("tampered: verdict.json says ") for t in s["tampered_records"])
    assert s["outcomes"]["rederived"] == 10 and s["totals"]["skipped_records"] == 7
