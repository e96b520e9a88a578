"""Trends across broker versions and days, first failures, and flakiness per scenario.

* :func:`version_trends`: per scenario and broker version (and per scenario and day), verdict
  counts, the fail rate over decided runs and its Wilson interval, first and last day seen;
* :func:`first_failures`: per scenario and dimension (``broker`` in natural version order,
  ``date`` in calendar order) the first value with a FAIL run, the last value before it whose
  decided runs all passed, and ``regressed`` when there is one (it passed, then failed from then on
  at least once): the version or day a regression appeared;
* :func:`scenario_flakiness`: per scenario and broker, the fail rate over decided runs with its
  Wilson interval, and ``flaky`` when the same scenario and seed both passed and failed.

The grouping runs in Spark over the per-run table; the ordering by version of the few grouped rows
(scenarios x versions) is done on the driver (:func:`reports.tables.version_key`).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from reports.tables import _verdict_counts, _with_rates, version_key

DIMENSIONS = ("broker", "date")
FIRST_FAILURES_SCHEMA = T.StructType([
    T.StructField("scenario", T.StringType()), T.StructField("dimension", T.StringType()),
    T.StructField("first_fail", T.StringType()), T.StructField("last_pass_before", T.StringType()),
    T.StructField("values_seen", T.LongType()), T.StructField("fail_runs_since", T.LongType()),
    T.StructField("decided_runs_since", T.LongType()), T.StructField("regressed", T.BooleanType()),
])


def version_trends(runs: DataFrame) -> DataFrame:
    """Per scenario x dimension value (broker version, day): counts, fail rate and Wilson interval."""
    parts = []
    for dim in DIMENSIONS:
        d = (runs.filter(F.col(dim).isNotNull()).groupBy("scenario", F.col(dim).alias("value"))
             .agg(*_verdict_counts(), F.min("date").alias("first_date"), F.max("date").alias("last_date"))
             .withColumn("dimension", F.lit(dim)))
        parts.append(_with_rates(d))
    df = parts[0].unionByName(parts[1])
    return df.select("scenario", "dimension", "value", *[c for c in df.columns
                                                         if c not in ("scenario", "dimension", "value")]
                     ).orderBy("scenario", "dimension", "value")


def _order(dim: str, v: str):
    return version_key(v) if dim == "broker" else v


def first_failures(spark, trend_rows: list[dict]) -> tuple[DataFrame, list[dict]]:
    """From :func:`version_trends` rows (collected: one per scenario and value), the first failing
    version / day per scenario (module doc); returns the DataFrame and its rows."""
    by: dict[tuple[str, str], list[dict]] = {}
    for r in trend_rows:
        by.setdefault((r["scenario"], r["dimension"]), []).append(r)
    out = []
    for (scenario, dim), rows in sorted(by.items()):
        rows.sort(key=lambda r: _order(dim, r["value"]))
        i = next((k for k, r in enumerate(rows) if r["fail"]), None)
        if i is None:
            continue
        before = [r for r in rows[:i] if r["pass"]]        # decided, and (before the first FAIL) all PASS
        since = rows[i:]
        out.append({"scenario": scenario, "dimension": dim, "first_fail": rows[i]["value"],
                    "last_pass_before": before[-1]["value"] if before else None, "values_seen": len(rows),
                    "fail_runs_since": sum(r["fail"] for r in since),
                    "decided_runs_since": sum(r["pass"] + r["fail"] for r in since),
                    "regressed": bool(before)})
    df = spark.createDataFrame([tuple(r[f] for f in FIRST_FAILURES_SCHEMA.names) for r in out],
                               FIRST_FAILURES_SCHEMA)
    return df, out


def scenario_flakiness(runs: DataFrame) -> DataFrame:
    """Per scenario x broker: fail rate over decided runs, Wilson interval, flaky seeds."""
    seeds = (runs.filter(F.col("seed").isNotNull()).groupBy("scenario", "broker", "seed")
             .agg(F.max((F.col("verdict") == "PASS").cast("int")).alias("p"),
                  F.max((F.col("verdict") == "FAIL").cast("int")).alias("f"))
             .groupBy("scenario", "broker")
             .agg(F.sum(((F.col("p") + F.col("f")) == 2).cast("long")).alias("flaky_seeds")))
    df = _with_rates(runs.groupBy("scenario", "broker").agg(*_verdict_counts()))
    return (df.join(seeds, ["scenario", "broker"], "left").fillna(0, ["flaky_seeds"])
            .withColumn("flaky", (F.col("pass") > 0) & (F.col("fail") > 0))
            .withColumn("decided", F.col("pass") + F.col("fail"))
            .select("scenario", "broker", "runs", "decided", "pass", "fail", "unknown", "fail_rate", "fail_ci_low",
                    "fail_ci_high", "flaky", "flaky_seeds")
            .orderBy(F.desc("flaky"), F.desc("fail_rate"), "scenario", "broker"))
