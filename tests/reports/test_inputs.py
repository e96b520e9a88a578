"""What the report does with records it cannot use, records it reads twice, and UNKNOWN causes.

One report over a directory holding good records and one record per malformed kind: each bad one
is skipped with one line naming its path and the field, and appears in every output (summary.json,
the HTML skipped table, the ``skipped_records`` Parquet table, JUnit); a symlinked run directory and
a copied record (same run id) are counted once. Plus the per-scenario counts (UNKNOWN by cause,
coverage shortfalls, undecided) and the Spark driver's listening address, read from the SparkConf
of a started local session.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from reports.parse import FIELDS, parse_run
from tests.reports.synthetic import RunBuilder

pytestmark = pytest.mark.spark

# run id -> (what is wrong, the words its skip reason must hold)
BAD = {
    "bad-topics": ("metadata.json topics is 5", "metadata.json: field 'topics' is an integer, expected a list"),
    "bad-seed": ("seed 2**70", "metadata.json: field 'seed' = 1180591620717411303424 does not fit a 64-bit integer"),
    "bad-no-verdict": ("no verdict.json", "verdict.json: missing"),
    "bad-json": ("metadata.json is not JSON", "metadata.json: not valid JSON"),
    "bad-event-line": ("an events.jsonl line is not JSON", "events.jsonl:4: not valid JSON"),
    "bad-checks": ("verdict.json checks is a list", "verdict.json: field 'checks' is a list, expected an object"),
    "bad-lost-count": ("a lost count beyond 64 bits", "verdict.json: field 'checks.lost.count' = 36893488147419103232"),
    "bad-schedule": ("schedule is a string", "metadata.json: field 'schedule' is a string, expected a list"),
}


CLIENT_LIFE = [(0.3, "started", None), (1.6, "fatal", "_FENCED: producer fenced"), (1.7, "recreated", None),
               (2.5, "stalled", "no completion for 10 s"), (3.0, "died", "client_crash: ended by the nemesis")]


def parquet(spark, path: Path) -> list[dict]:
    return [r.asDict(recursive=True) for r in spark.read.parquet(str(path)).collect()]


def _good(root: Path, run_id: str, scenario: str, verdict: str, cause: str | None = None, **kw) -> Path:
    b = RunBuilder(run_id, scenario=scenario, **kw)
    b.phase(0.1, "cluster.ready").pstate(0.5, leader=1, epoch=0, isr=[1, 2, 3]).sends([1.0, 1.5, 2.0])
    return b.write(root, verdict, f"{verdict.lower()} because", {}, cause=cause)


def make_runs(root: Path, outside: Path) -> dict:
    """The directory the report reads; returns what the test expects."""
    root.mkdir(parents=True)
    _good(root, "r1-pass", "acks.all", "PASS")
    b = RunBuilder("r2-unknown-workload", scenario="acks.all")
    b.phase(0.1, "cluster.ready").pstate(0.5, leader=1, epoch=0, isr=[1, 2, 3]).sends([1.0, 1.5, 2.0])
    b.fault(1.2, "kill", [1])
    for t, state, err in CLIENT_LIFE:
        b.emit(t, "client.life", process="p0", role="producer", state=state, error=err)
    b.emit(0.2, "client.life", process="c0", role="consumer", state="started", error=None)
    b.write(root, "UNKNOWN", "producer p0 died", {}, cause="workload")
    _good(root, "r3-unknown-workload", "isr.shrink", "UNKNOWN", cause="workload")
    _good(root, "r4-unknown-docker", "isr.shrink", "UNKNOWN", cause="docker-error")
    _good(root, "r5-unknown-old", "network.split", "UNKNOWN")          # a record from before `cause`
    _good(root, "r6-fail", "network.split", "FAIL")
    # a copy of r1 under another directory name (same run id) and a symlink to r6: counted once
    shutil.copytree(root / "r1-pass", root / "zz-copy-of-r1")
    (root / "zz-link-to-r6").symlink_to(root / "r6-fail", target_is_directory=True)
    # a record that lives elsewhere, reached only through a symlink: counted (once)
    _good(outside, "r7-elsewhere", "acks.all", "PASS")
    (root / "r7-link").symlink_to(outside / "r7-elsewhere", target_is_directory=True)

    def bad(run_id: str, **kw) -> RunBuilder:
        b = RunBuilder(run_id, scenario="acks.all", **kw)
        b.phase(0.1, "cluster.ready").sends([1.0])
        return b
    b = bad("bad-topics")
    b.metadata["topics"] = 5
    b.write(root, "PASS")
    bad("bad-seed", seed=2 ** 70).write(root, "PASS")
    bad("bad-no-verdict").write(root, "PASS", skip=("verdict.json",))
    d = bad("bad-json").write(root, "PASS")
    (d / "metadata.json").write_text('{"schema_version": 1, "scenario": ')
    d = bad("bad-event-line").write(root, "PASS")
    with open(d / "events.jsonl", "a") as fh:
        fh.write('{"seq": 99, "t": 3.0, "type": "client", "f": "send"\n')    # torn last line
    bad("bad-checks").write(root, "PASS", checks=[1, 2])
    bad("bad-lost-count").write(root, "FAIL", checks={"lost": {"verdict": "FAIL", "count": 2 ** 65}})
    b = bad("bad-schedule")
    b.metadata["schedule"] = "kill"
    b.write(root, "PASS")
    # a symlink to a malformed record: skipped once, not twice
    (root / "zz-link-to-bad-json").symlink_to(root / "bad-json", target_is_directory=True)
    return {"runs": 7}


@pytest.fixture(scope="module")
def report(spark, tmp_path_factory):
    from reports.job import Options, run_report
    tmp = tmp_path_factory.mktemp("inputs")
    make_runs(tmp / "runs", tmp / "outside")
    logger = logging.getLogger("reports.job")
    lines: list[str] = []

    class Grab(logging.Handler):
        def emit(self, record):
            lines.append(record.getMessage())
    h = Grab()
    logger.addHandler(h)
    try:
        # the verdicts here are chosen by hand (UNKNOWN causes, coverage): taken as stored, digests verified
        summary = run_report(spark, Options(runs_path=str(tmp / "runs"), out=str(tmp / "out"), max_timelines=20,
                                            trust_stored=True))
    finally:
        logger.removeHandler(h)
    return tmp, summary, lines


def test_every_malformed_kind_is_skipped_with_its_path_and_field(report):
    tmp, s, lines = report
    skipped = {Path(x["path"]).name: x["reason"] for x in s["skipped_records"]}
    assert set(skipped) == set(BAD), skipped
    for run_id, (what, words) in BAD.items():
        assert words in skipped[run_id], (what, skipped[run_id])
        (line,) = [ln for ln in lines if ln.startswith("skipped run record ") and f"/{run_id}:" in ln]
        assert str(tmp / "runs" / run_id) in line and words in line and "\n" not in line
    assert s["totals"]["skipped_records"] == len(BAD)
    assert s["skipped_reasons"]["metadata.json: field 'topics' is an integer, expected a list"] == 1


def test_skipped_records_in_every_output(spark, report):
    tmp, s, _ = report
    out = tmp / "out"
    table = parquet(spark, out / "tables" / "skipped_records")
    assert sorted(Path(r["path"]).name for r in table) == sorted(BAD)
    assert {Path(r["path"]).name: r["reason"] for r in table} == \
        {Path(x["path"]).name: x["reason"] for x in s["skipped_records"]}
    html = (out / "report.html").read_text()
    rows = re.findall(r'<table id="skipped-records">.*?</table>', html, re.S)[0]
    for run_id, (_, words) in BAD.items():
        assert f'data-key="{tmp / "runs" / run_id}"' in rows
        assert words.replace("'", "&#x27;") in rows
    assert re.search(r'id="skipped-count">8<', html)
    on_disk = json.loads((out / "summary.json").read_text())
    assert on_disk["skipped_records"] == s["skipped_records"]
    junit = ET.parse(out / "junit.xml").getroot()
    (suite,) = [ts for ts in junit if ts.get("name") == "skipped-records"]
    assert int(suite.get("tests")) == len(BAD)


def test_symlinks_and_copies_are_counted_once(spark, report):
    tmp, s, lines = report
    runs = parquet(spark, tmp / "out" / "tables" / "runs")
    ids = sorted(r["run_id"] for r in runs)
    assert ids == sorted(["r1-pass", "r2-unknown-workload", "r3-unknown-workload", "r4-unknown-docker",
                          "r5-unknown-old", "r6-fail", "r7-elsewhere"])
    assert s["totals"]["runs"] == 7 and s["totals"]["pass"] == 2 and s["totals"]["fail"] == 1
    dups = {Path(d["path"]).name: (d["run_id"], Path(d["kept"]).name) for d in s["duplicate_records"]}
    assert dups == {"zz-copy-of-r1": ("r1-pass", "r1-pass"), "zz-link-to-r6": ("r6-fail", "r6-fail")}
    assert s["totals"]["duplicate_records"] == 2
    assert any(ln.startswith("duplicate run record ") and "zz-copy-of-r1" in ln for ln in lines)
    # the symlinked copy of the malformed record is not a second skipped record
    assert not any("zz-link-to-bad-json" in x["path"] for x in s["skipped_records"])
    # acknowledged writes of the duplicates are not added twice: 3 per good run
    assert s["totals"]["acknowledged_writes"] == 3 * 7


def test_unknown_causes_coverage_shortfalls_and_undecided_scenarios(spark, report):
    tmp, s, _ = report
    assert s["unknown_by_cause"] == {"workload": 2, "docker-error": 1, "unrecorded": 1}
    assert s["totals"]["coverage_short"] == 2 and s["totals"]["unknown"] == 4
    scen = {r["scenario"]: r for r in parquet(spark, tmp / "out" / "tables" / "scenarios")}
    assert (scen["acks.all"]["decided"], scen["acks.all"]["coverage_short"], scen["acks.all"]["undecided"]) == \
        (2, 1, False)
    assert scen["isr.shrink"]["undecided"] is True and scen["isr.shrink"]["coverage_short"] == 1
    assert scen["isr.shrink"]["unknown_causes"] == ["docker-error 1", "workload 1"]
    assert scen["network.split"]["undecided"] is False
    assert s["undecided_scenarios"] == [{"scenario": "isr.shrink", "runs": 2, "coverage_short": 1,
                                         "unknown_causes": ["docker-error 1", "workload 1"]}]
    assert s["totals"]["undecided_scenarios"] == 1
    assert "fail_on_undecided" in s["gate"]["failed_rules"] and s["exit_code"] == 1
    runs = {r["run_id"]: r for r in parquet(spark, tmp / "out" / "tables" / "runs")}
    assert runs["r4-unknown-docker"]["cause"] == "docker-error" and runs["r1-pass"]["cause"] is None
    assert runs["r2-unknown-workload"]["coverage_short"] is True and runs["r4-unknown-docker"]["coverage_short"] is False
    html = (tmp / "out" / "report.html").read_text()
    assert re.search(r'id="undecided-count">1<', html) and re.search(r'id="coverage-short-count">2<', html)
    assert re.search(r'<tr data-key="workload"><td class="l" data-col="cause">workload</td>'
                     r'<td class="" data-col="runs">2</td>', html)
    assert 'data-key="isr.shrink"' in re.findall(r'<table id="scenarios">.*?</table>', html, re.S)[0]
    assert "cause <b>docker-error</b>" in html       # in the run's timeline header
    junit = (tmp / "out" / "junit.xml").read_text()
    assert 'message="UNKNOWN (docker-error): unknown because"' in junit


def test_parse_run_never_raises_on_odd_shapes():
    def row(meta: dict, verdict: dict) -> dict:
        files = {"metadata.json": json.dumps(meta).encode(), "verdict.json": json.dumps(verdict).encode()}
        return dict(zip(FIELDS, parse_run("file:/r/x", files)))
    ok_m = {"schema_version": 1, "scenario": "a.b"}
    ok_v = {"schema_version": 1, "verdict": "PASS"}
    assert row(ok_m, ok_v)["skip_reason"] is None
    for meta, verdict, words in [
            ({**ok_m, "workload": [1]}, ok_v, "metadata.json: field 'workload' is a list, expected an object"),
            ({**ok_m, "broker_config": "x"}, ok_v, "metadata.json: field 'broker_config' is a string"),
            ({**ok_m, "suite": {"a": 1}}, ok_v, "metadata.json: field 'suite' is an object"),
            ({**ok_m, "seed": True}, ok_v, "metadata.json: field 'seed' is a boolean"),
            ({**ok_m, "seed": -2 ** 63 - 1}, ok_v, "field 'seed' = -9223372036854775809 does not fit"),
            (ok_m, {**ok_v, "cause": 3}, "verdict.json: field 'cause' is an integer, expected a string"),
            (ok_m, {**ok_v, "coverage": []}, "verdict.json: field 'coverage' is a list")]:
        r = row(meta, verdict)
        assert r["skip_reason"] and words in r["skip_reason"], (words, r["skip_reason"])
        assert all(r[f] is None for f in FIELDS if f not in ("run_dir", "skip_reason"))
    assert row({**ok_m, "seed": 2 ** 63 - 1}, ok_v)["seed"] == 2 ** 63 - 1
    assert row({**ok_m, "topics": [5, {"config": 3}]}, ok_v)["min_isr"] == "1"   # odd items inside: defaults


def test_local_driver_listens_on_loopback_only(spark):
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.master").startswith("local")
    assert conf.get("spark.driver.host") == "127.0.0.1"
    assert conf.get("spark.driver.bindAddress") == "127.0.0.1"
    from reports.spark import driver_on_loopback
    assert driver_on_loopback("local[*]") and driver_on_loopback("spark://127.0.0.1:7077")
    assert driver_on_loopback("spark://localhost:7077,127.0.0.2:7078")
    assert not driver_on_loopback("spark://spark-master.example:7077")
    assert not driver_on_loopback("spark://127.0.0.1:7077,10.0.0.5:7077")
    assert not driver_on_loopback("yarn") and not driver_on_loopback("k8s://https://10.0.0.1:6443")


def test_client_life_folds_into_alive_bands_and_errors():
    from harness.record.windows import client_life
    clients: dict = {}
    for t, state, err in CLIENT_LIFE:
        client_life(clients, {"process": "p0", "role": "producer", "t": t, "state": state, "error": err})
    client_life(clients, {"process": "c0", "role": "consumer", "t": 0.2, "state": "started", "error": None})
    assert clients["p0"] == {"role": "producer", "alive": [[0.3, 1.6], [1.7, 3.0]],
                             "errors": [{"t": 1.6, "state": "fatal", "error": "_FENCED: producer fenced"},
                                        {"t": 2.5, "state": "stalled", "error": "no completion for 10 s"},
                                        {"t": 3.0, "state": "died", "error": "client_crash: ended by the nemesis"}]}
    assert clients["c0"] == {"role": "consumer", "alive": [[0.2, None]], "errors": []}


def test_timeline_shows_each_clients_alive_band_and_fatal_errors(report):
    tmp, s, _ = report
    html = (tmp / "out" / "report.html").read_text()
    tl = re.search(r'<div id="timeline-r2-unknown-workload">(.*?)</svg>', html, re.S).group(1)
    p0 = re.search(r'<g class="client" data-process="p0">(.*?)</g>', tl, re.S).group(1)
    assert re.findall(r'<title>p0 alive ([^<]*)</title>', p0) == ["0.3–1.6 s", "1.7–3.0 s"]
    errors = re.findall(r'class="client-error"[^>]*><title>([^<]*)</title>', p0)
    assert errors == ["p0 fatal at 1.6 s: _FENCED: producer fenced", "p0 stalled at 2.5 s: no completion for 10 s",
                      "p0 died at 3.0 s: client_crash: ended by the nemesis"]
    c0 = re.search(r'<g class="client" data-process="c0">(.*?)</g>', tl, re.S).group(1)
    assert re.findall(r'<title>c0 alive ([^<]*)</title>', c0) == ["0.2–end s"] and "client-error" not in c0
    assert "kill" in tl                              # beside the fault it shares the time axis with
