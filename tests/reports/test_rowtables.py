"""reports/rowtables.py (the tables grouped on the driver) gives exactly the rows of the Spark definitions
in reports/tables.py and reports/trends.py: the same values, types and order, on the committed fixture
records and on generated ones (tests.reports.synthetic.bulk_runs), null keys and one-sided regressions included."""

from __future__ import annotations

from pathlib import Path

import pytest

from reports import availability, rowtables, tables, trends
from reports.load import load

pytestmark = pytest.mark.spark

FIXTURE_RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "synthetic"

NAMES = ["pass_fail_matrix", "durability", "conformance", "flakiness", "scenarios", "unknown_causes"]
SPARK = {**{n: getattr(tables, n) for n in NAMES}, "version_trends": trends.version_trends,
         "scenario_flakiness": trends.scenario_flakiness}


def _rows(df) -> list[dict]:
    return [r.asDict(recursive=True) for r in df.collect()]


def _typed(rows: list[dict]) -> list[list]:
    """Rows as [(column, type name, value)] lists: 1 and 1.0 or True differ."""
    return [[(k, type(v).__name__, v) for k, v in r.items()] for r in rows]


def _same(expected: list[dict], got: list[dict]) -> None:
    assert [sorted(r) for r in got] == [sorted(r) for r in expected]
    assert _typed([dict(sorted(r.items())) for r in got]) == _typed([dict(sorted(r.items())) for r in expected])


def _written_schema(df):
    """The schema Spark writes ``df`` with: its optimized plan's, whose nullability can be tighter than
    ``df.schema`` (e.g. a fillna over an outer join). Test-only: it reads PySpark internals."""
    from pyspark.sql.types import _parse_datatype_json_string

    return _parse_datatype_json_string(df._jdf.queryExecution().optimizedPlan().schema().json())


def _schema(name: str):
    return rowtables.schema(rowtables.SCHEMAS[name])


def _spark_totals(runs):
    """The totals as one Spark aggregation (what the report job ran before reports/rowtables.py)."""
    from pyspark.sql import functions as F

    row = runs.agg(
        F.count(F.lit(1)).alias("runs"),
        F.sum((F.col("verdict") == "PASS").cast("long")).alias("pass"),
        F.sum((F.col("verdict") == "FAIL").cast("long")).alias("fail"),
        F.sum((F.col("verdict") == "UNKNOWN").cast("long")).alias("unknown"),
        F.sum(F.col("coverage_short").cast("long")).alias("coverage_short"),
        F.sum("acknowledged_writes").alias("acknowledged_writes"),
        F.sum("lost").alias("lost"), F.sum("lost_allowed").alias("lost_allowed"),
        F.sum(F.col("lost") - F.coalesce("lost_allowed", F.lit(0))).alias("lost_not_allowed"),
        F.sum("duplicates").alias("duplicates"),
        F.sum("inconsistent_offsets").alias("inconsistent_offsets"),
        F.sum(F.size("divergence_rules")).alias("conformance_divergences"),
        F.sum(F.col("lost").isNull().cast("long")).alias("runs_without_durability_checks"),
        F.sum("n_events").alias("events"),
        F.array_sort(F.collect_set("broker")).alias("_broker"),
        F.array_sort(F.collect_set("harness_version")).alias("_harness_version"),
    ).collect()[0].asDict()
    return {k: v if k.startswith("_") else int(v or 0) for k, v in row.items()}


def _check(spark, runs_df) -> None:
    runs = _rows(runs_df.select(*rowtables.COLUMNS))
    assert list(rowtables.totals(runs).items()) == list(_spark_totals(runs_df).items())
    for name, f in SPARK.items():
        df = f(runs_df)
        assert _written_schema(df) == _schema(name), name
        _same(_rows(df), getattr(rowtables, name)(runs))
    for suite in ("nightly", "smoke"):
        df = tables.trends(runs_df, suite)
        assert _written_schema(df) == _schema("trends")
        _same(_rows(df), rowtables.trends(runs, suite))
    for dim in ("broker", "harness_version", "kafka_version"):
        values = sorted({r[dim] for r in runs if r[dim]}, key=tables.version_key)
        for b, c in zip(values, values[1:]):
            df = tables.regressions(runs_df, dim, b, c)
            assert _written_schema(df) == _schema("regressions")
            _same(_rows(df), rowtables.regressions(runs, dim, b, c))


def test_fixture_records(spark, tmp_path):
    # Summarized now, and read back from the compacted table (a Parquet read: every column nullable).
    for summaries in (None, str(tmp_path / "_summaries")):
        loaded = load(spark, str(FIXTURE_RUNS), summaries)
        try:
            _check(spark, loaded.runs)
            # availability stays a Spark table; its Parquet copy is written with the declared schema
            avail = tables.availability(availability.fault_recovery(loaded.derived, loaded.runs),
                                        availability.unavailability_windows(loaded.derived, loaded.runs))
            assert _written_schema(avail) == _schema("availability")
        finally:
            loaded.unpersist()


def test_generated_records_with_nulls(spark, tmp_path):
    from pyspark.sql import functions as F

    from tests.reports.synthetic import bulk_runs

    loaded = load(spark, str(bulk_runs(tmp_path / "runs", 300, seed=7)))
    try:
        runs = loaded.runs
        _check(spark, runs)
        # Null keys and values: a null group of its own that joins nothing, sums over nulls only.
        h = F.hash("run_id") % 7
        nulled = runs
        for i, c in enumerate(("broker", "profile", "cause", "lost", "acks", "seed", "date", "conformance_checked",
                               "coverage_short", "suite", "min_isr")):
            nulled = nulled.withColumn(c, F.when(h == i - 3, F.lit(None)).otherwise(F.col(c)))
        _check(spark, nulled)
    finally:
        loaded.unpersist()
