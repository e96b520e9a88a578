"""What the report believes of a record (reports/outcome.py): re-derived outcomes, tampered and stale
verdicts, ``--trust-stored``.

A mixed folder of self-consistent generated records (tests.reports.synthetic.bulk_runs: each verdict.json
is what the checkers decide from its events, with its evidence digests) plus: a verdict.json edited to
PASS over a lost write, a record whose events changed after it was judged (same outcome), a verdict
judged by another harness version that the current checkers do not reproduce, an unreadable
events.jsonl, a directory as verdict.json, and a symlinked record. The report runs as the CLI runs it
(``reports.job.main``) on the module's SparkSession; its stdout, exit code and summary.json are checked.
The pure part (one record -> one row) is checked without Spark.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
from pathlib import Path

import pytest

from harness import __version__
from harness.record import list_runs
from reports import compact, outcome
from reports.summary import SUMMARY_FIELDS, summarize
from tests.reports.synthetic import bulk_runs


def _verdict(d: Path) -> dict:
    return json.loads((d / "verdict.json").read_text())


def _put(d: Path, body: dict) -> None:
    (d / "verdict.json").write_text(json.dumps(body))


def make_mixed(root: Path) -> dict[str, Path]:
    """The mixed folder; returns the special records by role."""
    runs = bulk_runs(root, 40, seed=11)
    recs = list_runs(runs)
    by = {"PASS": [], "FAIL": [], "UNKNOWN": []}
    for d in recs:
        by[_verdict(d)["verdict"]].append(d)
    assert len(by["FAIL"]) >= 2 and len(by["PASS"]) >= 6, {k: len(v) for k, v in by.items()}
    roles = {"good": by["PASS"][0], "fail": by["FAIL"][0]}
    # a verdict.json edited to PASS over a lost write (its evidence left as it was)
    d = roles["tampered"] = by["FAIL"][1]
    v = _verdict(d)
    v.update(verdict="PASS", reason="all checks passed", checks={})
    _put(d, v)
    # events changed after the verdict was judged (the outcome the same: a field no checker reads)
    d = roles["digest"] = by["PASS"][1]
    text = (d / "events.jsonl").read_text().replace('"name":"cluster.ready"', '"name":"cluster.ready","note":"x"', 1)
    (d / "events.jsonl").write_text(text)
    # judged by an older harness, and the current checkers say otherwise
    d = roles["stale"] = by["PASS"][2]
    v = _verdict(d)
    v.update(verdict="FAIL", reason="lost acknowledged writes")
    v["evidence"]["harness_version"] = "0.0.1"
    _put(d, v)
    # judged by an older harness, and the current checkers agree: re-derived, not flagged
    d = roles["older_agrees"] = by["PASS"][3]
    v = _verdict(d)
    v["evidence"]["harness_version"] = "0.0.1"
    _put(d, v)
    # unreadable: a torn last events line; a directory as verdict.json
    d = roles["torn"] = by["PASS"][4]
    with open(d / "events.jsonl", "a") as fh:
        fh.write('{"seq":999,"t":50.0,"type":"pha')
    d = roles["dir_verdict"] = by["PASS"][5]
    (d / "verdict.json").unlink()
    (d / "verdict.json").mkdir()
    # a symlinked record: read twice, counted once
    link = runs / "zz-link"
    link.symlink_to(roles["good"], target_is_directory=True)
    roles["link"] = link
    return roles


def row_of(d: Path, trust_stored: bool = False) -> dict:
    files = {n: (d / n).read_bytes() for n in ("metadata.json", "verdict.json", "events.jsonl") if (d / n).is_file()}
    return dict(zip(SUMMARY_FIELDS, summarize(f"file:{d}", files, None, trust_stored)))


def test_one_record_rederived_compared_and_trusted_only_when_its_evidence_matches(tmp_path):
    roles = make_mixed(tmp_path / "runs")
    good = row_of(roles["good"])
    assert (good["verdict"], good["stored_verdict"], good["tampered"], good["outcome"]) == (
        "PASS", "PASS", None, outcome.REDERIVED)
    t = row_of(roles["tampered"])
    assert t["verdict"] == "FAIL" and t["lost"] >= 1 and t["stored_verdict"] == "PASS"
    assert t["tampered"].startswith("tampered: verdict.json says PASS, the events give FAIL (lost None -> ")
    dg = row_of(roles["digest"])
    assert dg["verdict"] == "PASS" and dg["tampered"].startswith("tampered: events.jsonl sha256 ")
    st = row_of(roles["stale"])
    assert st["verdict"] == "PASS" and st["tampered"].startswith("stale: verdict.json says FAIL, the events give PASS")
    assert "judged by harness 0.0.1, this is " + __version__ in st["tampered"]
    assert row_of(roles["older_agrees"])["tampered"] is None
    for role in ("torn", "dir_verdict"):           # never a run, never PASS
        r = row_of(roles[role])
        assert r["verdict"] is None and r["skip_reason"], role
    assert "events.jsonl:" in row_of(roles["torn"])["skip_reason"]
    # --trust-stored: the stored verdict where the evidence names these files and this version ...
    trusted = row_of(roles["good"], trust_stored=True)
    assert trusted["outcome"] == outcome.STORED and trusted["verdict"] == "PASS"
    # ... (an edit of verdict.json alone is not caught then: the digests cover metadata and events only)
    assert row_of(roles["tampered"], trust_stored=True)["outcome"] == outcome.STORED
    # ... else re-derived, saying why
    dg = row_of(roles["digest"], trust_stored=True)
    assert dg["outcome"].startswith(outcome.REDERIVED + " (events.jsonl sha256 ") and dg["tampered"]
    old = row_of(roles["older_agrees"], trust_stored=True)
    assert old["outcome"] == f"{outcome.REDERIVED} (judged by harness 0.0.1, this is {__version__})"
    assert old["tampered"] is None


def test_rederivation_is_counted_and_skipped_under_trust_stored(tmp_path, monkeypatch):
    runs = bulk_runs(tmp_path / "runs", 30, seed=5)
    calls = []
    real = outcome.decide
    monkeypatch.setattr(outcome, "decide", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    listing = compact.scan(str(runs))
    compact.summarize_local(listing, trust_stored=True)
    assert calls == []                                   # every digest matched: nothing re-derived
    compact.summarize_local(listing)
    assert len(calls) == 30
    d = sorted(runs.iterdir())[0]
    with open(d / "metadata.json", "a") as fh:            # the file changed: its digest no longer matches
        fh.write(" ")
    calls.clear()
    rows = [dict(zip(SUMMARY_FIELDS, r)) for r in compact.summarize_local(compact.scan(str(runs)), trust_stored=True)]
    assert len(calls) == 1
    (changed,) = [r for r in rows if r["outcome"] != outcome.STORED]
    assert changed["run_dir"] == f"file:{d}" and changed["tampered"].startswith("tampered: metadata.json sha256")


def _report(args: list[str]) -> tuple[int, str]:
    from reports.job import main
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(args)
    return rc, buf.getvalue()


@pytest.mark.spark
def test_report_over_a_mixed_folder(spark, tmp_path):
    roles = make_mixed(tmp_path / "runs")
    runs = tmp_path / "runs"
    out = tmp_path / "out"
    rc, text = _report([str(runs), "-o", str(out), "--no-summaries", "--max-timelines", "0"])
    s = json.loads((out / "summary.json").read_text())
    assert rc == 1 and s["exit_code"] == 1
    tampered = {Path(t["path"]).name: t for t in s["tampered_records"]}
    assert sorted(tampered) == sorted(roles[r].name for r in ("tampered", "digest", "stale"))
    assert tampered[roles["tampered"].name]["stored"] == "PASS" and tampered[roles["tampered"].name]["derived"] == "FAIL"
    assert s["totals"]["tampered"] == 3 and s["totals"]["skipped_records"] == 2 and s["totals"]["runs"] == 40 - 2
    assert {Path(x["path"]).name for x in s["skipped_records"]} == {roles["torn"].name, roles["dir_verdict"].name}
    assert [Path(x["path"]).name for x in s["duplicate_records"]] == ["zz-link"]
    assert s["outcomes"] == {"trust_stored": False, "stored": 0, "rederived": 38, "rederived_why": {}}
    gate = [ln for ln in text.splitlines() if ln.startswith("gate: ")][0]
    assert gate.startswith("gate: FAILED (") and "tampered: 3 record(s) (threshold 1) [" in gate
    assert roles["digest"].name in gate or roles["stale"].name in gate or roles["tampered"].name in gate
    assert "report: 3 tampered or stale record(s)" in text
    html = (out / "report.html").read_text()
    assert 'id="tampered-count">3<' in html and roles["tampered"].name in html
    junit = (out / "junit.xml").read_text()
    assert junit.count('type="TAMPERED"') == 3
    # every finding but tampering switched off: the tampered records alone fail the gate
    quiet = ["--fail-on-lost", "0", "--fail-on-fail", "0", "--fail-on-undecided", "0"]
    rc, text = _report([str(runs), "-o", str(tmp_path / "o2"), "--no-summaries", "--no-parquet",
                        "--max-timelines", "0", *quiet])
    assert rc == 1 and [ln for ln in text.splitlines() if ln.startswith("gate: ")][0].startswith(
        "gate: FAILED (tampered: 3 record(s)")
    rc, _ = _report([str(runs), "-o", str(tmp_path / "o3"), "--no-summaries", "--no-parquet", "--max-timelines", "0",
                     *quiet, "--fail-on-tampered", "0"])
    assert rc == 0
    # --trust-stored: stored verdicts where the digests match; the digest-mismatched and the stale (another
    # version) records are re-derived and still named, the verdict.json-only edit is believed (documented)
    rc, text = _report([str(runs), "-o", str(tmp_path / "o4"), "--no-summaries", "--no-parquet",
                        "--max-timelines", "0", "--trust-stored"])
    s = json.loads((tmp_path / "o4" / "summary.json").read_text())
    assert s["outcomes"]["stored"] == 38 - 3 and s["outcomes"]["rederived"] == 3
    assert sorted(Path(t["path"]).name for t in s["tampered_records"]) == sorted(
        roles[r].name for r in ("digest", "stale"))
    assert "report: --trust-stored: 35 stored verdict(s) used (evidence verified), 3 re-derived" in text
    assert rc == 1


@pytest.mark.spark
def test_compacted_table_is_rebuilt_when_the_outcome_mode_changes(spark, tmp_path):
    runs = bulk_runs(tmp_path / "runs", 12, seed=2)
    d = sorted(runs.iterdir())[0]
    v = _verdict(d)
    v["verdict"] = "FAIL" if v["verdict"] != "FAIL" else "PASS"
    _put(d, v)
    common = ["--no-parquet", "--max-timelines", "0", "--fail-on-fail", "0", "--fail-on-lost", "0"]
    rc, _ = _report([str(runs), "-o", str(tmp_path / "a"), "--trust-stored", *common])
    assert rc == 0                                # the edited verdict trusted (its digests match)
    rc, text = _report([str(runs), "-o", str(tmp_path / "b"), *common])
    s = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert s["summaries_table"]["rewritten"] and s["summaries_table"]["added"] == 12
    assert rc == 1 and [Path(t["path"]).name for t in s["tampered_records"]] == [d.name]
    shutil.rmtree(tmp_path / "b")
    assert os.path.isdir(runs / "_summaries")


@pytest.mark.spark
def test_records_judged_in_a_spark_job_give_the_rows_the_driver_gives(spark, tmp_path, monkeypatch):
    """With a local master and enough records the records are read and judged by mapPartitions over their
    paths (reports.compact.summarize_listed): the same rows as one after the other on the driver."""
    runs = bulk_runs(tmp_path / "runs", 24, seed=9)
    d = sorted(runs.iterdir())[3]
    v = _verdict(d)
    v["verdict"] = "FAIL" if v["verdict"] == "PASS" else "PASS"
    _put(d, v)
    listing = compact.scan(str(runs))
    rows, on_driver = {}, []
    local = compact.summarize_local
    monkeypatch.setattr(compact, "summarize_local", lambda *a, **kw: on_driver.append(1) or local(*a, **kw))
    for name, minimum in (("driver", 10 ** 9), ("spark", 1)):
        monkeypatch.setattr(compact, "PARALLEL_MIN", minimum)
        on_driver.clear()
        df = compact.summarize_listed(spark, listing)
        rows[name] = sorted(json.dumps(r.asDict(recursive=True), sort_keys=True, default=str) for r in df.collect())
        assert on_driver == ([1] if name == "driver" else []), name
    assert rows["driver"] == rows["spark"] and len(rows["spark"]) == 24
    assert sum('"tampered": "tampered: ' in r for r in rows["spark"]) == 1
