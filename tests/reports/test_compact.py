"""The compacted table of per-run summaries gives the same report as the raw records.

One directory of records (the synthetic fixtures, with their malformed, partial and old records,
plus bulk records over several days and broker versions, a copied record and a symlinked one).
Reports from the raw records (one pass, no table) and through the compacted table (built from
scratch) must give the same tables (every Parquet table, row for row), the same totals, skipped
and duplicate records and the same gate decision; then after new records arrive (an append: only
they are read) and after a record is changed and another removed (a rewrite), the incrementally
updated table must give what a full rebuild and the raw records give.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from reports import compact
from reports.job import Options, run_report
from tests.reports.synthetic import bulk_runs

pytestmark = pytest.mark.spark

FIXTURE_RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "synthetic"
TABLES = ("runs", "pass_fail_matrix", "durability", "availability", "conformance", "flakiness", "trends",
          "scenarios", "unknown_causes", "regressions", "fault_recovery", "unavailability_windows",
          "skipped_records")
SAME = ("totals", "gate", "exit_code", "skipped_records", "skipped_reasons", "duplicate_records",
        "undecided_scenarios", "unknown_by_cause", "tables", "regressions_compared", "thresholds")


def _report(spark, runs: Path, out: Path, table: Path | None) -> dict:
    s = run_report(spark, Options(runs_path=str(runs), out=str(out), max_timelines=0,
                                  summaries=str(table) if table else None))
    s["_rows"] = {}
    for name in TABLES:
        p = out / "tables" / name
        rows = [json.dumps(r.asDict(recursive=True), sort_keys=True, default=str)
                for r in spark.read.parquet(p.as_uri()).collect()]
        s["_rows"][name] = sorted(rows)
    return s


def _assert_same(a: dict, b: dict) -> None:
    for k in SAME:
        assert a[k] == b[k], k
    for name in TABLES:
        assert a["_rows"][name] == b["_rows"][name], name


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("compact") / "runs"
    shutil.copytree(FIXTURE_RUNS, root, symlinks=True)
    bulk_runs(root / "bulk", 40, seed=3)
    first = sorted((root / "bulk").iterdir())[0]
    shutil.copytree(first, root / "bulk-copy")                              # same run id: counted once
    (root / "bulk-link").symlink_to(sorted((root / "bulk").iterdir())[1], target_is_directory=True)
    return root


def test_table_gives_the_raw_report_and_stays_equal_after_incremental_updates(spark, runs, tmp_path):
    table = tmp_path / "table"
    raw = _report(spark, runs, tmp_path / "raw", None)
    built = _report(spark, runs, tmp_path / "built", table)
    assert built["summaries_table"]["added"] == len(compact.scan(str(runs))) and built["summaries_table"]["rewritten"]
    assert raw["totals"]["runs"] > 40 and raw["totals"]["skipped_records"] == 7
    assert raw["duplicate_records"] and raw["totals"]["fail"] > 0
    _assert_same(raw, built)
    # one directory per batch, one file for a batch this small (not a file per day and broker version)
    gen = json.loads((table / "manifest.json").read_text())["generation"]
    assert len(list((table / gen).glob("batch=0/*.parquet"))) == 1
    assert not list((table / gen).glob("date=*"))

    # new records: only they are read, appended as a batch
    bulk_runs(runs / "later", 12, seed=11, first=1000)
    inc = _report(spark, runs, tmp_path / "inc", table)
    assert inc["summaries_table"]["added"] == 12 and not inc["summaries_table"]["rewritten"]
    assert len(list((table / gen).glob("batch=1/*.parquet"))) == 1
    raw2 = _report(spark, runs, tmp_path / "raw2", None)
    assert raw2["totals"]["runs"] == raw["totals"]["runs"] + 12
    _assert_same(raw2, inc)
    assert compact.update(spark, str(runs), table)["added"] == 0        # nothing new: nothing read

    # a changed record (now FAIL) and a removed one: the table is rewritten without them
    changed = sorted((runs / "later").iterdir())[0]
    v = json.loads((changed / "verdict.json").read_text())
    (changed / "verdict.json").write_text(json.dumps({**v, "verdict": "FAIL", "reason": "changed"}))
    shutil.rmtree(sorted((runs / "later").iterdir())[1])
    inc3 = _report(spark, runs, tmp_path / "inc3", table)
    assert inc3["summaries_table"]["added"] == 1 and inc3["summaries_table"]["removed"] == 1
    assert inc3["summaries_table"]["rewritten"]
    full3 = _report(spark, runs, tmp_path / "full3", tmp_path / "table-full3")     # a full rebuild
    assert full3["totals"]["runs"] == raw2["totals"]["runs"] - 1
    _assert_same(full3, inc3)
    assert len(list(table.glob("gen-*"))) == 1                          # the old generation is gone


def test_a_table_of_the_older_layout_is_rebuilt_once_and_its_generation_removed(spark, runs, tmp_path):
    table = tmp_path / "old-table"
    old_gen = table / "gen-0123456789ab"
    (old_gen / "date=2025-06-01" / "broker=3.9.0").mkdir(parents=True)
    (old_gen / "date=2025-06-01" / "broker=3.9.0" / "part-0.parquet").write_bytes(b"not read")
    (table / "manifest.json").write_text(json.dumps({
        "version": 1, "generation": old_gen.name, "batches": [0],
        "records": {d: sig for d, (_, sig) in compact.scan(str(runs)).items()}}))
    st = compact.update(spark, str(runs), table)
    assert st["rewritten"] and st["added"] == len(compact.scan(str(runs)))
    assert not old_gen.exists()
    m = json.loads((table / "manifest.json").read_text())
    assert m["version"] == compact.MANIFEST_VERSION and m["batches"] == [0]
    assert compact.read_table(spark, table).count() == st["records"]
    assert compact.update(spark, str(runs), table)["added"] == 0
