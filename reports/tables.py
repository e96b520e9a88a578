"""The report's tables, each defined once.

The per-run table has one row per run (10,000 runs: 10,000 rows), and each aggregated table over it
has a few rows (scenarios x brokers x ...). Spark reads and summarizes the records (reports/load.py) and
the per-run rows are collected to the driver once; every table over them is grouped here in plain
Python (a Spark job per table cost shuffles and code generation each time, most of a report's time
whatever the number of runs; measured in docs/reports.md). Only :func:`availability`, an aggregate over
the per-fault and per-window rows derived from the events (reports/availability.py), is a Spark
aggregate: it sums fractional seconds, whose result depends on the order of addition, and its inputs
grow with the events.

The tables follow SQL's null logic, as the Spark definitions they replace did (a null key is a group of
its own and matches nothing in a join; sums and minima skip nulls and are null over nulls only;
ascending orders put nulls first, descending ones last), with the same floating-point operations
(:func:`reports.stats.wilson`). :data:`SCHEMAS` are the tables' Parquet schemas (nullability included);
tests/reports/test_tables.py holds rows and schemas to those the Spark definitions gave. Strings sort
as Spark sorted them: UTF-8 bytes, which is code point order.
"""

from __future__ import annotations

import functools
import re
from collections import defaultdict
from typing import Callable, Iterable

from reports.stats import wilson

# The per-run columns the tables read.
COLUMNS = ("run_dir", "run_id", "suite", "scenario", "fault_kinds", "broker", "kafka_version", "broker_image",
           "profile", "seed", "acks", "min_isr", "unclean", "date", "harness_version", "verdict", "cause",
           "coverage_short", "acknowledged_writes", "lost", "lost_allowed", "duplicates", "inconsistent_offsets",
           "conformance_checked", "divergence_rules", "n_events", "features")


class Asc:
    """Sort key of an ascending column, nulls first."""
    __slots__ = ("v",)

    def __init__(self, v):
        self.v = v

    def __lt__(self, o):
        if self.v is None:
            return o.v is not None
        return o.v is not None and self.v < o.v

    def __eq__(self, o):
        return self.v == o.v


class Desc(Asc):
    """Sort key of a descending column, nulls last."""

    def __lt__(self, o):
        if self.v is None:
            return False
        return o.v is None or self.v > o.v


def _order(rows: list[dict], *cols: str, desc: Iterable[str] = ()) -> list[dict]:
    d = set(desc)
    return sorted(rows, key=lambda r: tuple((Desc if c in d else Asc)(r[c]) for c in cols))


def _sum(values: Iterable) -> int | None:
    """SQL SUM: nulls skipped; null when every value is null (or there are none)."""
    vs = [v for v in values if v is not None]
    return sum(vs) if vs else None


def _min(values: Iterable):
    vs = [v for v in values if v is not None]
    return min(vs) if vs else None


def _max(values: Iterable):
    vs = [v for v in values if v is not None]
    return max(vs) if vs else None


def _is(v, value) -> int | None:
    """``(col == value).cast("long")``: null for a null column."""
    return None if v is None else int(v == value)


def _group(rows: Iterable[dict], key: Callable[[dict], tuple]) -> dict[tuple, list[dict]]:
    g: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        g[key(r)].append(r)
    return g


def _counts(rs: list[dict]) -> dict:
    return {"runs": len(rs), "pass": _sum(_is(r["verdict"], "PASS") for r in rs),
            "fail": _sum(_is(r["verdict"], "FAIL") for r in rs),
            "unknown": _sum(_is(r["verdict"], "UNKNOWN") for r in rs)}


def _add(a, b):
    return None if a is None or b is None else a + b


def _ratio(k, n) -> float | None:
    """k / n as a double, null when n is null or <= 0 (or k null)."""
    if n is None or n <= 0 or k is None:
        return None
    return float(k) / float(n)


def _wilson(k, n) -> tuple:
    """The Wilson interval of k in n: null when n is null or <= 0 (or k null)."""
    if n is None or n <= 0 or k is None:
        return None, None
    return wilson(k, n)


def _with_rates(row: dict) -> dict:
    decided = _add(row["pass"], row["fail"])
    low, high = _wilson(row["fail"], decided)
    row.update(pass_rate=_ratio(row["pass"], decided), fail_rate=_ratio(row["fail"], decided),
               fail_ci_low=low, fail_ci_high=high, unknown_rate=_ratio(row["unknown"], row["runs"]))
    return row


def totals(runs: list[dict]) -> dict:
    """The report's totals over every run (0 where SQL's SUM would be null), and the values of the
    two compared dimensions (``_broker``, ``_harness_version``: SQL's collect_set, nulls left out)."""
    def total(values: Iterable) -> int:
        return _sum(values) or 0

    return {
        "runs": len(runs), **{k: v or 0 for k, v in _counts(runs).items() if k != "runs"},
        "coverage_short": total(None if r["coverage_short"] is None else int(r["coverage_short"]) for r in runs),
        **{c: total(r[c] for r in runs) for c in ("acknowledged_writes", "lost", "lost_allowed")},
        "lost_not_allowed": total(None if r["lost"] is None else r["lost"] - (r["lost_allowed"] or 0) for r in runs),
        **{c: total(r[c] for r in runs) for c in ("duplicates", "inconsistent_offsets")},
        "conformance_divergences": total(None if r["divergence_rules"] is None else len(r["divergence_rules"])
                                         for r in runs),
        "runs_without_durability_checks": sum(r["lost"] is None for r in runs),
        "events": total(r["n_events"] for r in runs),
        "_broker": sorted({r["broker"] for r in runs if r["broker"] is not None}),
        "_harness_version": sorted({r["harness_version"] for r in runs if r["harness_version"] is not None}),
    }


def _table(name: str):
    """Give the function's rows with exactly the columns of ``SCHEMAS[name]``, in its order."""
    def wrap(f):
        @functools.wraps(f)
        def table(*args, **kwargs) -> list[dict]:
            names = [part.split()[0] for part in SCHEMAS[name].split(",")]
            return [{c: r[c] for c in names} for r in f(*args, **kwargs)]
        return table
    return wrap


def _exploded(runs: list[dict]) -> list[tuple[str, dict]]:
    return [(k, r) for r in runs for k in (r["fault_kinds"] or [])]


@_table("pass_fail_matrix")
def pass_fail_matrix(runs: list[dict]) -> list[dict]:
    keys = ("suite", "scenario", "fault_kind", "broker", "kafka_version", "broker_image")
    g = _group(_exploded(runs), lambda kr: (kr[1]["suite"], kr[1]["scenario"], kr[0], kr[1]["broker"],
                                             kr[1]["kafka_version"], kr[1]["broker_image"]))
    out = [_with_rates({**dict(zip(keys, k)), **_counts([r for _, r in krs])}) for k, krs in g.items()]
    return _order(out, *keys)


DURABILITY_CHECKS = ("lost", "duplicates", "inconsistent_offsets")


@_table("durability")
def durability(runs: list[dict]) -> list[dict]:
    keys = ("acks", "min_isr", "unclean")
    g = _group(runs, lambda r: ("unknown" if r["acks"] is None else r["acks"], r["min_isr"], r["unclean"]))
    out = []
    for k, rs in g.items():
        row = {**dict(zip(keys, k)), "runs": len(rs), "acknowledged_writes": _sum(r["acknowledged_writes"] for r in rs),
               "lost_allowed": _sum(r["lost_allowed"] for r in rs)}
        for c in DURABILITY_CHECKS:
            vals = [r[c] for r in rs]
            with_ = _sum(None if v is None else int(v > 0) for v in vals)
            row.update({c: _sum(vals), f"runs_checked_{c}": sum(v is not None for v in vals),
                        f"runs_with_{c}": 0 if with_ is None else with_})
        for c in DURABILITY_CHECKS:
            kk, n = row[f"runs_with_{c}"], row[f"runs_checked_{c}"]
            low, high = _wilson(kk, n)
            row.update({f"{c}_run_rate": _ratio(kk, n), f"{c}_ci_low": low, f"{c}_ci_high": high})
        row["lost_per_acknowledged"] = _ratio(row["lost"], row["acknowledged_writes"])
        row["configuration"] = (None if None in k else f"acks={k[0]} min.isr={k[1]} unclean={k[2]}")
        out.append(row)
    return _order(out, *keys)


@_table("conformance")
def conformance(runs: list[dict]) -> list[dict]:
    checked = [r for r in runs if r["conformance_checked"]]
    totals = {k: len(rs) for k, rs in _group(checked, lambda r: (r["broker"], r["profile"])).items()}
    g = _group(((rule, r) for r in checked for rule in (r["divergence_rules"] or [])),
               lambda rr: (rr[0], rr[1]["broker"], rr[1]["profile"]))
    out = []
    for (rule, broker, profile), rrs in g.items():
        affected = len({r["run_dir"] for _, r in rrs if r["run_dir"] is not None})
        n = None if broker is None or profile is None else totals.get((broker, profile))
        low, high = _wilson(affected, n)
        out.append({"rule": rule, "broker": broker, "profile": profile, "divergences": len(rrs),
                    "runs_affected": affected, "runs_checked": n, "run_rate": _ratio(affected, n),
                    "run_ci_low": low, "run_ci_high": high})
    return _order(out, "divergences", "rule", "broker", "profile", desc=("divergences",))


@_table("flakiness")
def flakiness(runs: list[dict]) -> list[dict]:
    keys = ("scenario", "seed", "broker")
    g = _group((r for r in runs if r["seed"] is not None), lambda r: (r["scenario"], r["seed"], r["broker"]))
    out = []
    for k, rs in g.items():
        verdicts = sorted({r["verdict"] for r in rs if r["verdict"] is not None})
        if len(verdicts) <= 1:
            continue
        row = {**dict(zip(keys, k)), **_counts(rs), "verdicts": verdicts,
               "run_ids": sorted(r["run_id"] for r in rs if r["run_id"] is not None)[:20]}
        row["flaky"] = _and(_gt0(row["pass"]), _gt0(row["fail"]))
        out.append(row)
    return _order(out, "flaky", *keys, desc=("flaky",))


def _gt0(v) -> bool | None:
    return None if v is None else v > 0


def _and(a, b) -> bool | None:
    """SQL AND (three-valued)."""
    if a is False or b is False:
        return False
    if a is None or b is None:
        return None
    return True


@_table("trends")
def trends(runs: list[dict], suite: str = "nightly") -> list[dict]:
    g = _group((r for r in runs if r["suite"] == suite and r["date"] is not None), lambda r: (r["date"],))
    out = [_with_rates({"date": k[0], **_counts(rs), "lost": _sum(r["lost"] for r in rs),
                        "acknowledged_writes": _sum(r["acknowledged_writes"] for r in rs)}) for k, rs in g.items()]
    return _order(out, "date")


def _cause(r: dict) -> str:
    return "unrecorded" if r["cause"] is None else r["cause"]


@_table("scenarios")
def scenarios(runs: list[dict]) -> list[dict]:
    per_cause: dict = defaultdict(list)
    for (scenario, cause), rs in _group((r for r in runs if r["verdict"] == "UNKNOWN"),
                                        lambda r: (r["scenario"], _cause(r))).items():
        if scenario is not None:       # a null key joins nothing
            per_cause[scenario].append(f"{cause} {len(rs)}")
    out = []
    for (scenario,), rs in _group(runs, lambda r: (r["scenario"],)).items():
        row = {"scenario": scenario, "suites": sorted({r["suite"] for r in rs if r["suite"] is not None}),
               **_counts(rs), "coverage_short": sum(bool(r["coverage_short"]) for r in rs),
               "unknown_causes": sorted(per_cause.get(scenario, []))}
        row["decided"] = _add(row["pass"], row["fail"])
        row["undecided"] = None if row["decided"] is None else row["decided"] == 0
        out.append(row)
    return _order(out, "undecided", "scenario", desc=("undecided",))


@_table("unknown_causes")
def unknown_causes(runs: list[dict]) -> list[dict]:
    out = []
    for (cause,), rs in _group((r for r in runs if r["verdict"] == "UNKNOWN"),
                               lambda r: (_cause(r),)).items():
        names = sorted({r["scenario"] for r in rs if r["scenario"] is not None})
        out.append({"cause": cause, "runs": len(rs), "scenarios": len(names), "scenario_names": names[:20]})
    return _order(out, "runs", "cause", desc=("runs",))


@_table("version_trends")
def version_trends(runs: list[dict], dimensions: tuple[str, ...] = ("broker", "date")) -> list[dict]:
    out = []
    for dim in dimensions:
        for (scenario, value), rs in _group((r for r in runs if r[dim] is not None),
                                            lambda r: (r["scenario"], r[dim])).items():
            out.append(_with_rates({"scenario": scenario, "value": value, **_counts(rs),
                                    "first_date": _min(r["date"] for r in rs),
                                    "last_date": _max(r["date"] for r in rs), "dimension": dim}))
    return _order(out, "scenario", "dimension", "value")


@_table("scenario_flakiness")
def scenario_flakiness(runs: list[dict]) -> list[dict]:
    seeds: dict = defaultdict(list)
    for (scenario, broker, _), rs in _group((r for r in runs if r["seed"] is not None),
                                            lambda r: (r["scenario"], r["broker"], r["seed"])).items():
        p = _max(None if r["verdict"] is None else int(r["verdict"] == "PASS") for r in rs)
        f = _max(None if r["verdict"] is None else int(r["verdict"] == "FAIL") for r in rs)
        seeds[(scenario, broker)].append(None if p is None or f is None else int(p + f == 2))
    out = []
    for (scenario, broker), rs in _group(runs, lambda r: (r["scenario"], r["broker"])).items():
        row = _with_rates({"scenario": scenario, "broker": broker, **_counts(rs)})
        flaky_seeds = None if scenario is None or broker is None else _sum(seeds.get((scenario, broker), []))
        row["flaky_seeds"] = 0 if flaky_seeds is None else flaky_seeds
        row["flaky"] = _and(_gt0(row["pass"]), _gt0(row["fail"]))
        row["decided"] = _add(row["pass"], row["fail"])
        out.append(row)
    return _order(out, "flaky", "fail_rate", "scenario", "broker", desc=("flaky", "fail_rate"))


@_table("feature_levels")
def feature_levels(runs: list[dict]) -> list[dict]:
    """Verdicts per scenario, broker and finalized feature levels (the feature-level matrix, docs/kraft.md
    "Feature levels"): runs without recorded levels (ZooKeeper mode, older records) are left out."""
    g = _group((r for r in runs if r.get("features") is not None),
               lambda r: (r["scenario"], r["broker"], r["features"]))
    out = [_with_rates({"scenario": k[0], "broker": k[1], "features": k[2], **_counts(rs)}) for k, rs in g.items()]
    return _order(out, "scenario", "broker", "features")


REGRESSION_SIDE = ("runs", "pass", "fail", "unknown", "fail_rate", "lost")


@_table("regressions")
def regressions(runs: list[dict], dimension: str, baseline: str, candidate: str) -> list[dict]:
    keys = ("suite", "scenario", "fault_kind")

    def side(value: str, p: str) -> dict[tuple, dict]:
        g = _group((kr for kr in _exploded(runs) if kr[1][dimension] == value),
                   lambda kr: (kr[1]["suite"], kr[1]["scenario"], kr[0]))
        out = {}
        for k, krs in g.items():
            rs = [r for _, r in krs]
            d = _with_rates({**_counts(rs), "lost": _sum(r["lost"] for r in rs)})
            out[k] = {f"{p}_{c}": d[c] for c in REGRESSION_SIDE}
        return out

    base, cand = side(baseline, "base"), side(candidate, "cand")
    none_b = dict.fromkeys(f"base_{c}" for c in REGRESSION_SIDE)
    none_c = dict.fromkeys(f"cand_{c}" for c in REGRESSION_SIDE)
    # A full outer join on the keys: a key with a null never matches, so it stays one-sided.
    pairs = [(k, b, cand.get(k) if None not in k else None) for k, b in base.items()]
    pairs += [(k, None, c) for k, c in cand.items() if None in k or k not in base]
    out = []
    for k, b, c in pairs:
        row = {"dimension": dimension, "baseline": baseline, "candidate": candidate, **dict(zip(keys, k)),
               **(b or none_b), **(c or none_c)}
        both = _and(_gt0(row["base_runs"]), _gt0(row["cand_runs"]))
        worse = (row["cand_fail_rate"] or 0.0) > (row["base_fail_rate"] or 0.0)
        new_loss = (row["cand_lost"] or 0) > 0 and (row["base_lost"] or 0) == 0
        reg = _and(both, worse or new_loss)
        row["regressed"] = False if reg is None else reg
        out.append(row)
    return _order(out, "regressed", *keys, desc=("regressed",))


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


@_table("first_failures")
def first_failures(trend_rows: list[dict]) -> list[dict]:
    """From :func:`version_trends` rows, per scenario and dimension (``broker`` in natural version order,
    ``date`` in calendar order): the first value with a FAIL run, the last value before it whose decided
    runs all passed, and ``regressed`` when there is one (it passed, then failed from then on at least
    once): the version or day a regression appeared."""
    by: dict[tuple[str, str], list[dict]] = {}
    for r in trend_rows:
        by.setdefault((r["scenario"], r["dimension"]), []).append(r)
    out = []
    for (scenario, dim), rows in sorted(by.items()):
        rows.sort(key=lambda r: version_key(r["value"]) if dim == "broker" else r["value"])
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
    return out


PCTS = [0.5, 0.95]


def availability(recovery, windows):
    """The one Spark table: per fault kind and broker, recovery-time and leaderless-window distributions
    (count, exact p50/p95 with linear interpolation, max) over the DataFrames of
    :func:`reports.availability.fault_recovery` and :func:`reports.availability.unavailability_windows`."""
    from pyspark.sql import functions as F  # lazy: PySpark

    def dist(col: str, prefix: str) -> list:
        p = F.percentile(F.col(col), PCTS)
        return [F.count(col).alias(f"{prefix}_n"), p[0].alias(f"{prefix}_p50"), p[1].alias(f"{prefix}_p95"),
                F.max(col).alias(f"{prefix}_max")]

    keys = ["fault", "broker"]
    rec = recovery.groupBy(*keys).agg(
        F.count(F.lit(1)).alias("faults"),
        *dist("time_to_new_leader", "new_leader_s"),
        F.sum("leader_unrecovered").alias("leader_unrecovered"),
        *dist("time_to_isr_restored", "isr_restored_s"),
        F.sum((F.col("isr_unrestored") > 0).cast("long")).alias("isr_unrestored_faults"))
    win = windows.groupBy(*keys).agg(
        F.count(F.lit(1)).alias("unavailable_windows"),
        F.sum("duration_s").alias("unavailable_total_s"),
        *dist("duration_s", "unavailable_s")[1:],
        F.sum(F.col("open").cast("long")).alias("unavailable_open"))
    return (rec.join(win, keys, "full_outer").fillna(0, ["faults", "unavailable_windows", "new_leader_s_n",
                                                         "isr_restored_s_n"])
            .orderBy(*keys))


_TYPES = {"string": "StringType", "long": "LongType", "double": "DoubleType", "boolean": "BooleanType"}


def _type(spec: str):
    from pyspark.sql import types as T  # lazy: PySpark

    if spec.startswith("array<"):
        inner = spec[len("array<"):-1]
        return T.ArrayType(_type(inner.rstrip("!")), containsNull=not inner.endswith("!"))
    return getattr(T, _TYPES[spec])()


def schema(spec: str):
    """A StructType from ``"name type, name type!, name array<string!>"`` (``!``: not null)."""
    from pyspark.sql import types as T  # lazy: PySpark

    fields = []
    for part in spec.split(","):
        name, t = part.split()
        fields.append(T.StructField(name, _type(t.removesuffix("!")), nullable=not t.endswith("!")))
    return T.StructType(fields)


# The Parquet schema of each table (nullability included): the Spark definitions' optimized plans' schemas
# (tests/reports/test_tables.py holds them to those).
SCHEMAS = {
    # availability is computed by Spark (above); this is the schema its optimized plan writes it with
    # (the fillna over the outer join makes the counts non-null)
    "availability": ("fault string, broker string, faults long!, new_leader_s_n long!, new_leader_s_p50 double, "
        "new_leader_s_p95 double, new_leader_s_max double, leader_unrecovered long, isr_restored_s_n long!, "
        "isr_restored_s_p50 double, isr_restored_s_p95 double, isr_restored_s_max double, "
        "isr_unrestored_faults long, unavailable_windows long!, unavailable_total_s double, "
        "unavailable_s_p50 double, unavailable_s_p95 double, unavailable_s_max double, unavailable_open long"),
    "pass_fail_matrix": ("suite string, scenario string, fault_kind string, broker string, kafka_version string, "
        "broker_image string, runs long!, pass long, fail long, unknown long, pass_rate double, "
        "fail_rate double, fail_ci_low double, fail_ci_high double, unknown_rate double"),
    "durability": ("configuration string, acks string!, min_isr string, unclean string, runs long!, "
        "acknowledged_writes long, lost_allowed long, lost long, runs_checked_lost long!, "
        "runs_with_lost long!, duplicates long, runs_checked_duplicates long!, "
        "runs_with_duplicates long!, inconsistent_offsets long, "
        "runs_checked_inconsistent_offsets long!, runs_with_inconsistent_offsets long!, "
        "lost_run_rate double, lost_ci_low double, lost_ci_high double, "
        "duplicates_run_rate double, duplicates_ci_low double, duplicates_ci_high double, "
        "inconsistent_offsets_run_rate double, inconsistent_offsets_ci_low double, "
        "inconsistent_offsets_ci_high double, lost_per_acknowledged double"),
    "conformance": ("rule string, broker string, profile string, divergences long!, runs_affected long!, "
        "runs_checked long, run_rate double, run_ci_low double, run_ci_high double"),
    "flakiness": ("scenario string, seed long, broker string, runs long!, pass long, fail long, "
        "unknown long, verdicts array<string!>!, run_ids array<string!>!, flaky boolean"),
    "trends": ("date string, runs long!, pass long, fail long, unknown long, lost long, "
        "acknowledged_writes long, pass_rate double, fail_rate double, fail_ci_low double, "
        "fail_ci_high double, unknown_rate double"),
    "scenarios": ("scenario string, suites array<string!>!, runs long!, pass long, fail long, unknown long, "
        "decided long, coverage_short long, unknown_causes array<string>!, undecided boolean"),
    "unknown_causes": ("cause string!, runs long!, scenarios long!, scenario_names array<string!>!"),
    "version_trends": ("scenario string, dimension string!, value string, runs long!, pass long, fail long, "
        "unknown long, first_date string, last_date string, pass_rate double, fail_rate double, "
        "fail_ci_low double, fail_ci_high double, unknown_rate double"),
    "scenario_flakiness": ("scenario string, broker string, runs long!, decided long, pass long, fail long, "
        "unknown long, fail_rate double, fail_ci_low double, fail_ci_high double, flaky boolean, "
        "flaky_seeds long!"),
    "regressions": ("dimension string!, baseline string!, candidate string!, suite string, scenario string, "
        "fault_kind string, base_runs long, base_pass long, base_fail long, base_unknown long, "
        "base_fail_rate double, base_lost long, cand_runs long, cand_pass long, cand_fail long, "
        "cand_unknown long, cand_fail_rate double, cand_lost long, regressed boolean!"),
    "feature_levels": ("scenario string, broker string, features string, runs long!, pass long, fail long, "
        "unknown long, pass_rate double, fail_rate double, fail_ci_low double, fail_ci_high double, "
        "unknown_rate double"),
    "first_failures": ("scenario string, dimension string, first_fail string, last_pass_before string, "
        "values_seen long, fail_runs_since long, decided_runs_since long, regressed boolean"),
}
