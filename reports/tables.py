"""The aggregated report tables, each a Spark DataFrame built from the per-run table.

Column meanings are documented in docs/reports.md. Rates over verdicts use *decided* runs
(PASS + FAIL) as the denominator; UNKNOWN runs (environment failures) are counted separately.
"""

from __future__ import annotations

import re

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from reports.stats import ratio, wilson_cols

PCTS = [0.5, 0.95]


def _verdict_counts():
    v = F.col("verdict")
    return [F.count(F.lit(1)).alias("runs"),
            F.sum((v == "PASS").cast("long")).alias("pass"),
            F.sum((v == "FAIL").cast("long")).alias("fail"),
            F.sum((v == "UNKNOWN").cast("long")).alias("unknown")]


def _with_rates(df: DataFrame) -> DataFrame:
    decided = F.col("pass") + F.col("fail")
    low, high = wilson_cols(F.col("fail"), decided)
    return (df.withColumn("pass_rate", ratio(F.col("pass"), decided))
            .withColumn("fail_rate", ratio(F.col("fail"), decided))
            .withColumn("fail_ci_low", low).withColumn("fail_ci_high", high)
            .withColumn("unknown_rate", ratio(F.col("unknown"), F.col("runs"))))


def pass_fail_matrix(runs: DataFrame) -> DataFrame:
    """suite x scenario x fault kind x broker version/image: verdict counts and rates.

    A run with several fault kinds counts once in each of its kinds ("none": no fault).
    """
    keys = ["suite", "scenario", "fault_kind", "broker", "kafka_version", "broker_image"]
    df = runs.select("*", F.explode("fault_kinds").alias("fault_kind")).groupBy(*keys).agg(*_verdict_counts())
    return _with_rates(df).orderBy(*keys)


def durability(runs: DataFrame) -> DataFrame:
    """Per configuration (acks, min ISR, unclean): writes and anomalies, Wilson intervals over runs.

    ``runs_with_X / runs_checked_X`` is the share of runs (with that check present) showing at
    least one X; the interval is the Wilson 95 % interval of that share.
    """
    keys = ["acks", "min_isr", "unclean"]
    aggs = [F.count(F.lit(1)).alias("runs"),
            F.sum("acknowledged_writes").alias("acknowledged_writes"),
            F.sum("lost_allowed").alias("lost_allowed")]
    for col in ("lost", "duplicates", "inconsistent_offsets"):
        aggs += [F.sum(col).alias(col), F.count(col).alias(f"runs_checked_{col}"),
                 F.sum((F.col(col) > 0).cast("long")).alias(f"runs_with_{col}")]
    df = (runs.withColumn("acks", F.coalesce("acks", F.lit("unknown"))).groupBy(*keys).agg(*aggs)
          .fillna(0, [f"runs_with_{c}" for c in ("lost", "duplicates", "inconsistent_offsets")]))
    for col in ("lost", "duplicates", "inconsistent_offsets"):
        k, n = F.col(f"runs_with_{col}"), F.col(f"runs_checked_{col}")
        low, high = wilson_cols(k, n)
        df = (df.withColumn(f"{col}_run_rate", ratio(k, n))
              .withColumn(f"{col}_ci_low", low).withColumn(f"{col}_ci_high", high))
    df = df.withColumn("lost_per_acknowledged", ratio(F.col("lost"), F.col("acknowledged_writes")))
    df = df.withColumn("configuration", F.concat(F.lit("acks="), F.col("acks"), F.lit(" min.isr="),
                                                 F.col("min_isr"), F.lit(" unclean="), F.col("unclean")))
    return df.select("configuration", *[c for c in df.columns if c != "configuration"]).orderBy(*keys)


def _dist(col: str, prefix: str) -> list:
    p = F.percentile(F.col(col), PCTS)
    return [F.count(col).alias(f"{prefix}_n"), p[0].alias(f"{prefix}_p50"), p[1].alias(f"{prefix}_p95"),
            F.max(col).alias(f"{prefix}_max")]


def availability(recovery: DataFrame, windows: DataFrame) -> DataFrame:
    """Per fault kind and broker: recovery-time and leaderless-window distributions (p50/p95/max)."""
    keys = ["fault", "broker"]
    rec = recovery.groupBy(*keys).agg(
        F.count(F.lit(1)).alias("faults"),
        *_dist("time_to_new_leader", "new_leader_s"),
        F.sum("leader_unrecovered").alias("leader_unrecovered"),
        *_dist("time_to_isr_restored", "isr_restored_s"),
        F.sum((F.col("isr_unrestored") > 0).cast("long")).alias("isr_unrestored_faults"))
    win = windows.groupBy(*keys).agg(
        F.count(F.lit(1)).alias("unavailable_windows"),
        F.sum("duration_s").alias("unavailable_total_s"),
        *_dist("duration_s", "unavailable_s")[1:],
        F.sum(F.col("open").cast("long")).alias("unavailable_open"))
    return (rec.join(win, keys, "full_outer").fillna(0, ["faults", "unavailable_windows", "new_leader_s_n",
                                                         "isr_restored_s_n"])
            .orderBy(*keys))


def conformance(runs: DataFrame) -> DataFrame:
    """Divergences by rule id, broker version and profile, with the share of checked runs affected."""
    checked = runs.filter(F.col("conformance_checked"))
    totals = checked.groupBy("broker", "profile").agg(F.count(F.lit(1)).alias("runs_checked"))
    per = (checked.select("run_dir", "broker", "profile", F.explode("divergence_rules").alias("rule"))
           .groupBy("rule", "broker", "profile")
           .agg(F.count(F.lit(1)).alias("divergences"), F.countDistinct("run_dir").alias("runs_affected")))
    df = per.join(totals, ["broker", "profile"], "left")
    low, high = wilson_cols(F.col("runs_affected"), F.col("runs_checked"))
    return (df.withColumn("run_rate", ratio(F.col("runs_affected"), F.col("runs_checked")))
            .withColumn("run_ci_low", low).withColumn("run_ci_high", high)
            .select("rule", "broker", "profile", "divergences", "runs_affected", "runs_checked", "run_rate",
                    "run_ci_low", "run_ci_high")
            .orderBy(F.desc("divergences"), "rule", "broker", "profile"))


def flakiness(runs: DataFrame) -> DataFrame:
    """Same scenario + seed (on the same broker) with different verdicts across runs.

    ``flaky`` is true when both PASS and FAIL occur; mixes with UNKNOWN only are listed too.
    """
    keys = ["scenario", "seed", "broker"]
    df = (runs.filter(F.col("seed").isNotNull()).groupBy(*keys)
          .agg(*_verdict_counts(), F.array_sort(F.collect_set("verdict")).alias("verdicts"),
               F.slice(F.array_sort(F.collect_list("run_id")), 1, 20).alias("run_ids")))
    return (df.filter(F.size("verdicts") > 1)
            .withColumn("flaky", (F.col("pass") > 0) & (F.col("fail") > 0))
            .orderBy(F.desc("flaky"), *keys))


def trends(runs: DataFrame, suite: str = "nightly") -> DataFrame:
    """Per date (from started_at) for one suite: verdict counts, pass rate, lost writes."""
    df = (runs.filter((F.col("suite") == suite) & F.col("date").isNotNull()).groupBy("date")
          .agg(*_verdict_counts(), F.sum("lost").alias("lost"),
               F.sum("acknowledged_writes").alias("acknowledged_writes")))
    return _with_rates(df).orderBy("date")


def version_key(v: str) -> tuple:
    """Natural sort key: "3.10.0" > "3.9.1" > "3.9.0"."""
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"(\d+)", v or "") if p)


def pick_pair(values: list[str], baseline: str | None, candidate: str | None) -> tuple[str, str] | None:
    """(baseline, candidate): given ones, else the two highest versions present; None if < 2."""
    vals = sorted({v for v in values if v}, key=version_key)
    if baseline and candidate:
        return baseline, candidate
    if candidate and len(vals) >= 2:
        older = [v for v in vals if version_key(v) < version_key(candidate)]
        return (older[-1], candidate) if older else None
    if baseline and len(vals) >= 2:
        newer = [v for v in vals if version_key(v) > version_key(baseline)]
        return (baseline, newer[-1]) if newer else None
    if len(vals) < 2:
        return None
    return vals[-2], vals[-1]


def regressions(runs: DataFrame, dimension: str, baseline: str, candidate: str) -> DataFrame:
    """Per suite x scenario x fault kind: baseline vs candidate value of ``dimension``.

    ``regressed``: both sides ran it and the candidate fails more often (a higher fail rate), or
    the candidate lost acknowledged writes where the baseline lost none.
    """
    keys = ["suite", "scenario", "fault_kind"]
    ex = runs.select("*", F.explode("fault_kinds").alias("fault_kind"))

    def side(value: str, p: str) -> DataFrame:
        d = (ex.filter(F.col(dimension) == value).groupBy(*keys)
             .agg(*_verdict_counts(), F.sum("lost").alias("lost")))
        d = _with_rates(d)
        return d.select(*keys, *[F.col(c).alias(f"{p}_{c}") for c in
                                 ("runs", "pass", "fail", "unknown", "fail_rate", "lost")])

    df = side(baseline, "base").join(side(candidate, "cand"), keys, "full_outer")
    both = (F.col("base_runs") > 0) & (F.col("cand_runs") > 0)
    worse = (F.coalesce("cand_fail_rate", F.lit(0.0)) > F.coalesce("base_fail_rate", F.lit(0.0)))
    new_loss = (F.coalesce("cand_lost", F.lit(0)) > 0) & (F.coalesce("base_lost", F.lit(0)) == 0)
    return (df.withColumn("dimension", F.lit(dimension)).withColumn("baseline", F.lit(baseline))
            .withColumn("candidate", F.lit(candidate))
            .withColumn("regressed", F.coalesce(both & (worse | new_loss), F.lit(False)))
            .select("dimension", "baseline", "candidate", *keys, *[c for c in df.columns if c not in keys],
                    "regressed")
            .orderBy(F.desc("regressed"), *keys))


def scenarios(runs: DataFrame) -> DataFrame:
    """Per scenario: verdict counts, ``decided`` (PASS + FAIL), ``coverage_short`` (UNKNOWN runs whose
    coverage fell short, cause ``workload``), the UNKNOWN runs by cause, and ``undecided``: no run of
    the scenario was decided, so the report has no evidence about the broker for it (the gate's
    ``fail_on_undecided``)."""
    cause = F.coalesce(F.col("cause"), F.lit("unrecorded"))
    per_cause = (runs.filter(F.col("verdict") == "UNKNOWN").groupBy("scenario", cause.alias("cause"))
                 .agg(F.count(F.lit(1)).alias("n"))
                 .groupBy("scenario").agg(F.array_sort(F.collect_list(F.concat(
                     F.col("cause"), F.lit(" "), F.col("n").cast("string")))).alias("unknown_causes")))
    df = (runs.groupBy("scenario")
          .agg(*_verdict_counts(), F.sum(F.coalesce(F.col("coverage_short"), F.lit(False)).cast("long"))
               .alias("coverage_short"), F.array_sort(F.collect_set("suite")).alias("suites"))
          .join(per_cause, "scenario", "left"))
    return (df.withColumn("decided", F.col("pass") + F.col("fail"))
            .withColumn("undecided", F.col("decided") == 0)
            .withColumn("unknown_causes", F.coalesce("unknown_causes", F.array().cast("array<string>")))
            .select("scenario", "suites", "runs", "pass", "fail", "unknown", "decided", "coverage_short",
                    "unknown_causes", "undecided")
            .orderBy(F.desc("undecided"), "scenario"))


def unknown_causes(runs: DataFrame) -> DataFrame:
    """UNKNOWN runs by ``cause`` (harness/checkers/verdict.py CAUSES; ``unrecorded`` for records
    written before verdict.json had one), with the scenarios they hit."""
    return (runs.filter(F.col("verdict") == "UNKNOWN")
            .groupBy(F.coalesce(F.col("cause"), F.lit("unrecorded")).alias("cause"))
            .agg(F.count(F.lit(1)).alias("runs"), F.countDistinct("scenario").alias("scenarios"),
                 F.slice(F.array_sort(F.collect_set("scenario")), 1, 20).alias("scenario_names"))
            .orderBy(F.desc("runs"), "cause"))
