"""reports/tables.py, the one definition of each report table, gives the rows and schemas that the Spark
definitions it replaced gave (reports/tables.py and reports/trends.py before this file): values, types,
column order and row order, SQL's null logic included (null keys, sums over nulls, one-sided regressions).

tests/reports/data/tables_golden.json holds, for two inputs, the collected per-run rows and what the
Spark definitions made of them: the committed synthetic fixture records, and 120 generated records
(tests.reports.synthetic.bulk_runs(..., 120, seed=7)) with nulls put into keys and values (F.hash(run_id) % 7,
one column at a time, as tests/reports/test_rowtables.py did); plus
the schemas Spark wrote each table with (its optimized plan's, nullability included)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reports import availability, tables

GOLDEN = json.loads((Path(__file__).parent / "data" / "tables_golden.json").read_text())
FIXTURE_RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "synthetic"
NAMES = ["pass_fail_matrix", "durability", "conformance", "flakiness", "scenarios", "unknown_causes",
         "version_trends", "scenario_flakiness"]


def _typed(rows: list[dict]) -> list[list]:
    """Rows as [(column, type name, value)] lists: 1 and 1.0 or True differ."""
    return [[(k, type(v).__name__, v) for k, v in sorted(r.items())] for r in rows]


def _same(expected: list[dict], got: list[dict], name: str) -> None:
    columns = [part.split()[0] for part in tables.SCHEMAS[name].split(",")]
    assert all(list(r) == columns for r in got), name
    assert _typed(got) == _typed(expected), name


@pytest.mark.parametrize("case", sorted(GOLDEN["inputs"]))
def test_tables_as_the_spark_definitions_gave_them(case):
    runs, want = GOLDEN["inputs"][case]["runs"], GOLDEN["inputs"][case]["tables"]
    assert tables.totals(runs) == want["totals"]
    for name in NAMES:
        _same(want[name], getattr(tables, name)(runs), name)
    for suite in ("nightly", "smoke"):
        _same(want[f"trends {suite}"], tables.trends(runs, suite), "trends")
    _same(want["first_failures"], tables.first_failures(tables.version_trends(runs)), "first_failures")
    compared = []
    for dim in ("broker", "harness_version", "kafka_version"):
        values = sorted({r[dim] for r in runs if r[dim]}, key=tables.version_key)
        for b, c in zip(values, values[1:]):
            compared.append(f"{dim} {b} {c}")
            _same(want["regressions"][compared[-1]], tables.regressions(runs, dim, b, c), "regressions")
    assert compared == list(want["regressions"])


def test_schemas_as_spark_wrote_them():
    pytest.importorskip("pyspark")
    assert sorted(GOLDEN["schemas"]) == sorted(tables.SCHEMAS)
    for name, spec in tables.SCHEMAS.items():
        assert json.loads(tables.schema(spec).json()) == json.loads(GOLDEN["schemas"][name]), name


def _written_schema(df):
    """The schema Spark writes ``df`` with: its optimized plan's, whose nullability can be tighter than
    ``df.schema`` (e.g. a fillna over an outer join). Test-only: it reads PySpark internals."""
    from pyspark.sql.types import _parse_datatype_json_string

    return _parse_datatype_json_string(df._jdf.queryExecution().optimizedPlan().schema().json())


@pytest.mark.spark
def test_availability_is_written_with_its_declared_schema(spark, tmp_path):
    from reports.load import load

    # Summarized now, and read back from the compacted table (a Parquet read: every column nullable).
    for summaries in (None, str(tmp_path / "_summaries")):
        loaded = load(spark, str(FIXTURE_RUNS), summaries)
        try:
            avail = tables.availability(availability.fault_recovery(loaded.derived, loaded.runs),
                                        availability.unavailability_windows(loaded.derived, loaded.runs))
            assert _written_schema(avail) == tables.schema(tables.SCHEMAS["availability"])
        finally:
            loaded.unpersist()
