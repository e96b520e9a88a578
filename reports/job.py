"""``kafka-chaos report RUNS_PATH -o OUT``: aggregate run records with Spark into reports.

:func:`main` is what the CLI calls; its return value is the exit code: 0 the gate passed,
1 the gate failed, 2 a usage or environment error (bad arguments, unreadable path, no records,
bad gate config). :func:`run_report` does the work on a given SparkSession (tests reuse one).

Outputs under OUT (a local directory): ``tables/<name>/`` Parquet, ``report.html``,
``junit.xml``, ``summary.json``. See docs/reports.md.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

from harness.errors import HarnessError
from harness.record.events import FAULT_END, FAULT_START
from harness.record.windows import client_life, fault_windows
from reports import availability, gate, html, junit, outcome, s3a, tables
from reports.gate import RULES, GateConfigError, load_config
from reports.compact import is_local, local_path
from reports.load import ReportInputError, load, timeline_events
from reports.spark import build_session, check_master, unreachable_master

log = logging.getLogger("reports.job")

TIMELINE_PARTITIONS = 8
JUNIT_COLUMNS = ("run_id", "suite", "scenario", "broker", "broker_image", "profile", "seed", "acks", "min_isr",
                 "unclean", "path", "verdict", "reason", "cause", "failed_checks", "lost", "duplicates",
                 "inconsistent_offsets", "last_t", "tampered", "stored_verdict", "distribution")
RUN_ROW_COLUMNS = list(dict.fromkeys([*tables.COLUMNS, *JUNIT_COLUMNS, "run_dir", "acknowledged_writes", "outcome"]))


@dataclass
class Options:
    runs_path: str
    out: str
    master: str = "local[*]"
    gate_config: str | None = None
    gate_overrides: dict = field(default_factory=dict)
    nightly_suite: str = "nightly"
    max_timelines: int = 50
    baseline_version: str | None = None
    candidate_version: str | None = None
    baseline_harness: str | None = None
    candidate_harness: str | None = None
    write_parquet: bool = True
    s3_endpoint: str | None = None
    read_paths: list[str] | None = None     # s3://: the complete records' s3a:// URLs (reports/s3a.py)
    summaries: str | None = None     # the compacted table's directory (None: summarize every record now)
    trust_stored: bool = False       # stored verdicts where their evidence digests match (reports/outcome.py)


class UsageError(Exception):
    """A problem with the arguments or inputs; exit code 2."""


class _ArgumentParser(argparse.ArgumentParser):
    """One error line (not the whole usage) and exit code 2, like the rest of ``kafka-chaos``."""

    def error(self, message: str):  # noqa: D401
        self.exit(2, f"kafka-chaos: error: {message} (see `{self.prog} --help`)\n")


def parse_args(argv: list[str]) -> Options:
    p = _ArgumentParser(prog="kafka-chaos report",
                                description="Aggregate run records into Parquet tables, an HTML report, JUnit XML, "
                                            "summary.json and a gating exit code (0 pass, 1 gate failed, 2 error).")
    p.add_argument("runs_path", metavar="RUNS_PATH", help="directory (or any Spark-readable path) of run records")
    p.add_argument("-o", "--out", required=True, help="output directory (local)")
    p.add_argument("--master", default="local[*]", help="Spark master URL (default: local[*])")
    p.add_argument("--gate-config", help="JSON file of gate thresholds, e.g. {\"fail_on_lost\": 1}")
    for rule, (_, default, what) in RULES.items():
        p.add_argument("--" + rule.replace("_", "-"), type=int, metavar="N", dest=rule,
                       help=f"fail the gate when {what} reach N (0 disables; default {default})")
    p.add_argument("--min-runs", type=int, metavar="N", dest="min_runs",
                   help="fail the gate with fewer than N usable runs (default 1)")
    p.add_argument("--gate", action="store_true",
                   help="exit 1 when the gate fails (always the case; accepted so scripts can say so)")
    p.add_argument("--nightly-suite", default="nightly", help="suite whose runs make the date trend")
    p.add_argument("--max-timelines", type=int, default=50, help="per-run timelines in the HTML (default 50)")
    p.add_argument("--baseline-version", help="broker version to compare from (default: second highest)")
    p.add_argument("--candidate-version", help="broker version to compare to (default: highest)")
    p.add_argument("--baseline-harness", help="harness version to compare from (default: second highest)")
    p.add_argument("--candidate-harness", help="harness version to compare to (default: highest)")
    p.add_argument("--no-parquet", action="store_true", help="skip the Parquet tables")
    p.add_argument("--s3-endpoint", metavar="URL", help="S3-compatible endpoint for an s3:// RUNS_PATH "
                                                         "(default: $AWS_ENDPOINT_URL)")
    p.add_argument("--summaries", metavar="DIR",
                   help="the compacted table of per-run summaries, updated with new records before the report "
                        "(default: RUNS_PATH/_summaries for a writable local RUNS_PATH)")
    p.add_argument("--trust-stored", action="store_true",
                   help="use each record's stored verdict.json where its evidence digests match the record's "
                        "files and this harness version (else re-derive it from the events, as by default)")
    p.add_argument("--no-summaries", action="store_true",
                   help="keep no compacted table: summarize every record for this report only")
    a = p.parse_args(argv)
    if a.summaries and a.no_summaries:
        p.error("--summaries and --no-summaries exclude each other")
    summaries = a.summaries
    if summaries is None and not a.no_summaries:
        summaries = default_summaries(a.runs_path)
    elif summaries is not None and not is_local(a.runs_path):
        p.error("--summaries needs a local RUNS_PATH (the table is updated from a listing of its directories)")
    overrides = {r: getattr(a, r) for r in [*RULES, "min_runs"]}
    for k, v in overrides.items():
        if v is not None and v < 0:
            p.error(f"--{k.replace('_', '-')} must be >= 0")
    if a.max_timelines < 0:
        p.error("--max-timelines must be >= 0")
    return Options(runs_path=a.runs_path, out=a.out, master=a.master, gate_config=a.gate_config,
                   gate_overrides=overrides, nightly_suite=a.nightly_suite, max_timelines=a.max_timelines,
                   baseline_version=a.baseline_version, candidate_version=a.candidate_version,
                   baseline_harness=a.baseline_harness, candidate_harness=a.candidate_harness,
                   write_parquet=not a.no_parquet, s3_endpoint=a.s3_endpoint,
                   summaries=summaries, trust_stored=a.trust_stored)


def default_summaries(runs_path: str) -> str | None:
    """RUNS_PATH/_summaries when RUNS_PATH is a local directory we may write (else no table)."""
    if not is_local(runs_path):
        return None
    root = Path(local_path(runs_path))
    table = root / "_summaries"
    if table.is_dir():
        return str(table) if os.access(table, os.W_OK | os.X_OK) else None
    return str(table) if root.is_dir() and os.access(root, os.W_OK | os.X_OK) else None


def _rows(df) -> list[dict]:
    return [r.asDict(recursive=True) for r in df.collect()]


def _frame(spark, rows: list[dict], schema):
    """A DataFrame of collected ``rows`` (in their order) with ``schema`` (nullability included)."""
    return spark.createDataFrame([tuple(r[f] for f in schema.names) for r in rows], schema)


TIMELINE_COLUMNS = ("run_dir", "run_id", "suite", "scenario", "broker", "verdict", "reason", "cause", "seed",
                    "acknowledged_writes", "lost", "last_t", "features")
_PRIO = {"FAIL": 0, "UNKNOWN": 1}


def _timelines(spark, run_rows: list[dict], limit: int) -> list[tuple[dict, dict]]:
    """Timeline data for at most ``limit`` runs (of the collected per-run rows): FAIL first, then
    UNKNOWN, then PASS (newest first: ``run_id`` descending, nulls last)."""
    from pyspark.sql import functions as F  # lazy: PySpark
    from pyspark.storagelevel import StorageLevel

    if limit <= 0:
        return []
    ordered = sorted(run_rows, key=lambda r: (_PRIO.get(r["verdict"], 2), tables.Desc(r["run_id"])))
    chosen = [{c: r[c] for c in TIMELINE_COLUMNS} for r in ordered[:limit]]
    if not chosen:
        return []
    ids = [r["run_dir"] for r in chosen]
    # The chosen runs' events are read (and put on ZooKeeper's ground truth) once: the rows and columns the
    # four queries below use are cached, instead of each query reading events.jsonl again.
    ty = F.col("type")
    used = ((ty == "zk.partition_state") | ty.isin(FAULT_START, FAULT_END) | (ty == "client.life")
            | ((ty == "client") & (F.col("f") == "send") & (F.col("phase") == "ok")))
    sel = (timeline_events(spark, ids).filter(used)
           .select("run_dir", "t", "seq", "type", "topic", "partition", "leader", "leader_epoch", "isr", "fault_id",
                   "fault", "f", "phase", "process", "role", "state", "error")
           .persist(StorageLevel.MEMORY_AND_DISK))
    try:
        return _timeline_data(sel, chosen, ids)
    finally:
        sel.unpersist()


def _timeline_data(sel, chosen: list[dict], ids: list[str]) -> list[tuple[dict, dict]]:
    from pyspark.sql import Window, functions as F  # lazy: PySpark

    # At most TIMELINE_PARTITIONS partitions per run (the first by topic, partition).
    first_tps = (sel.filter(F.col("type") == "zk.partition_state").select("run_dir", "topic", "partition").distinct()
                 .withColumn("rank", F.row_number().over(Window.partitionBy("run_dir").orderBy(
                     F.col("topic").startswith("__"), "topic", "partition")))
                 .filter(F.col("rank") <= TIMELINE_PARTITIONS).drop("rank"))
    ps = _rows(sel.filter(F.col("type") == "zk.partition_state")
               .join(first_tps, ["run_dir", "topic", "partition"], "left_semi")
               .select("run_dir", "t", "seq", "topic", "partition", "leader", "leader_epoch", "isr")
               .orderBy("run_dir", "t", "seq"))
    faults = _rows(sel.filter(F.col("type").isin(FAULT_START, FAULT_END))
                   .select("run_dir", "t", "type", "fault_id", "fault").orderBy("run_dir", "t"))
    acks = _rows(sel.filter((F.col("type") == "client") & (F.col("f") == "send") & (F.col("phase") == "ok"))
                 .groupBy("run_dir", F.floor("t").alias("sec")).count())
    life = _rows(sel.filter(F.col("type") == "client.life").select("run_dir", "t", "seq", "process", "role", "state",
                                                                   "error").orderBy("run_dir", "t", "seq"))
    data = {d: {"end": 0.0, "faults": [], "partitions": {}, "acks": {}, "clients": {}} for d in ids}
    # Spark names a file by its URI (a path with spaces may come back %-encoded): map it to our run_dir.
    owner = {d: d for d in ids} | {unquote(d): d for d in ids}
    for rows in (life, ps, faults, acks):
        for r in rows:
            r["run_dir"] = owner.get(r["run_dir"]) or owner[unquote(r["run_dir"])]
    for r in life:
        client_life(data[r["run_dir"]]["clients"], r)
    for r in ps:
        data[r["run_dir"]]["partitions"].setdefault(f'{r["topic"]}-{r["partition"]}', []).append(r)
    faults_of: dict = {}
    for r in faults:
        faults_of.setdefault(r["run_dir"], []).append(r)
    for run_dir, evs in faults_of.items():      # each end closes the open window of its fault id
        data[run_dir]["faults"] += [{"fault": w.fault, "start": w.start["t"], "end": w.end["t"] if w.end else None}
                                    for w in fault_windows(evs, match="open", replace=False)]
    for r in acks:
        data[r["run_dir"]]["acks"][int(r["sec"])] = r["count"]
    out = []
    for run in chosen:
        d = data[run["run_dir"]]
        d["end"] = float(run.get("last_t") or 0.0)
        out.append((run, d))
    return out


def tampered_records(run_rows: list[dict]) -> list[dict]:
    """The runs whose stored verdict disagrees with their events or whose files changed since they were
    judged (reports/outcome.py): path, run id, the stored and the re-derived verdict, what disagreed."""
    return [{"path": r["path"], "run_id": r["run_id"], "stored": r["stored_verdict"],
             "derived": f"{r['verdict']}({r['cause']})" if r.get("cause") else r["verdict"], "what": r["tampered"]}
            for r in sorted(run_rows, key=lambda r: r["path"] or "") if r.get("tampered")]


def outcome_counts(run_rows: list[dict], trust_stored: bool) -> dict:
    """Where the runs' verdicts came from: ``{"trust_stored", "stored", "rederived", "rederived_why"}``
    (``rederived_why``: with ``--trust-stored``, why a stored verdict was not used, per reason)."""
    stored = sum(1 for r in run_rows if r.get("outcome") == outcome.STORED)
    why: dict[str, int] = {}
    for r in run_rows:
        o = r.get("outcome") or ""
        if o.startswith(outcome.REDERIVED + " ("):
            for part in o[len(outcome.REDERIVED) + 2:].rstrip(")").split("; "):
                key = reason_category(re.sub(r"[0-9a-f]{12}", "X", part))
                why[key] = why.get(key, 0) + 1
    return {"trust_stored": trust_stored, "stored": stored, "rederived": len(run_rows) - stored,
            "rederived_why": why}


def gate_line(g: dict, tampered: list[dict]) -> str:
    """``gate: PASSED`` or ``gate: FAILED (rule: total value (fails at threshold), ...)``, e.g. ``fail_on_lost:
    lost_not_allowed 3 (fails at 1)`` or ``min_runs: 2 usable run(s), at least 5 needed``; a failed
    ``fail_on_tampered`` is spelled out with its value and the records (``tampered: 1 record(s) [PATH: what
    disagreed]``)."""
    if g["passed"]:
        return "gate: PASSED"
    parts = []
    for r in g["rules"]:
        if not r["failed"]:
            continue
        if r["rule"] == "fail_on_tampered":
            shown = "; ".join(f"{t['path']}: {t['what']}" for t in tampered[:2])
            more = f"; and {len(tampered) - 2} more" if len(tampered) > 2 else ""
            parts.append(f"tampered: {r['value']} record(s) (threshold {r['threshold']}) [{shown}{more}]")
        elif r["rule"] == "min_runs":
            parts.append(f"min_runs: {r['value']} usable run(s), at least {r['threshold']} needed")
        else:       # the value beside the threshold: what to change, the gate file or the broker, is plain
            parts.append(f"{r['rule']}: {r['total']} {r['value']} (fails at {r['threshold']})")
    return f"gate: FAILED ({', '.join(parts)})"


def undecided_line(undecided: list[dict]) -> str:
    """One line naming every scenario with no decided run, and why its runs were UNKNOWN."""
    parts = [f"{u['scenario']} ({u['runs']} UNKNOWN: {', '.join(u['unknown_causes']) or 'no cause recorded'})"
             for u in undecided]
    return f"gate: {len(undecided)} undecided scenario(s), no PASS or FAIL run: {'; '.join(parts)}"


def reason_category(reason: str) -> str:
    """A skip reason without its specifics, for counting: numbers -> N, details in () dropped."""
    return re.sub(r"\b\d+\b", "N", reason.strip().split(" (", 1)[0])


EXIT_ENV = 5        # harness.errors.EXIT_ENV (the reports import nothing of the harness but the record)


def progress(what: str) -> None:
    """One progress line on stderr (``report: ...``) per stage of a job that runs for tens of seconds; stdout
    keeps the results only."""
    print(f"report: {what}", file=sys.stderr, flush=True)


def run_report(spark, opts: Options) -> dict:
    """Build every output for ``opts`` on ``spark``; return the summary (with ``exit_code``)."""
    t_start = time.time()
    timings: dict[str, float] = {}
    lap_t = [t_start]

    def lap(name: str, what: str = "") -> None:
        now = time.time()
        timings[name] = round(now - lap_t[0], 3)
        lap_t[0] = now
        progress(f"{name}{': ' + what if what else ''} ({timings[name]:.1f} s)")

    file_cfg = gate.load_config(opts.gate_config)
    th = gate.thresholds(file_cfg, opts.gate_overrides)

    progress(f"reading the run records under {opts.runs_path}")
    loaded = load(spark, opts.read_paths or opts.runs_path, opts.summaries, opts.trust_stored)
    runs = loaded.runs
    for s in loaded.skipped:
        log.warning("skipped run record %s: %s", s["path"], s["reason"])
    for d in loaded.duplicates:
        log.warning("duplicate run record %s: run id %s already read from %s; counted once",
                    d["path"], d["run_id"], d["kept"])
    lap("load")

    out = Path(opts.out).resolve()
    out.mkdir(parents=True, exist_ok=True)

    derived = loaded.derived
    recovery = availability.fault_recovery(derived, runs).cache()
    windows = availability.unavailability_windows(derived, runs).cache()
    avail = tables.availability(recovery, windows)
    # The per-run rows are collected once (one job); the totals and every table but availability are
    # grouped from them on the driver (reports/tables.py).
    run_rows = _rows(runs.select(*RUN_ROW_COLUMNS))
    totals_row = tables.totals(run_rows)
    compared, pairs = [], []
    for dim, b, c in (("broker", opts.baseline_version, opts.candidate_version),
                      ("harness_version", opts.baseline_harness, opts.candidate_harness)):
        values = totals_row.pop("_" + dim)
        pair = tables.pick_pair(values, b, c)
        if pair:
            compared.append({"dimension": dim, "baseline": pair[0], "candidate": pair[1]})
            pairs.append((dim, *pair))
    collected = {
        "pass_fail_matrix": tables.pass_fail_matrix(run_rows),
        "durability": tables.durability(run_rows),
        "availability": _rows(avail),
        "conformance": tables.conformance(run_rows),
        "flakiness": tables.flakiness(run_rows),
        "trends": tables.trends(run_rows, opts.nightly_suite),
        "scenarios": tables.scenarios(run_rows),
        "unknown_causes": tables.unknown_causes(run_rows),
        "version_trends": tables.version_trends(run_rows),
        "scenario_flakiness": tables.scenario_flakiness(run_rows),
        "feature_levels": tables.feature_levels(run_rows),
        "regressions": [r for dim, b, c in pairs for r in tables.regressions(run_rows, dim, b, c)],
    }
    collected["first_failures"] = tables.first_failures(collected["version_trends"])
    # Each table is computed once: its Parquet copy is written from the rows collected here (aggregates:
    # a few rows each), with the table's schema (reports/tables.py SCHEMAS); no regressions table when no
    # two versions were there to compare.
    dfs = {name: _frame(spark, rows, tables.schema(tables.SCHEMAS[name]))
           for name, rows in collected.items() if name != "regressions" or pairs}
    lap("tables", f"{len(run_rows)} run(s)")

    totals = {k: int(v or 0) for k, v in totals_row.items()}
    totals["skipped_records"] = len(loaded.skipped)
    totals["flaky"] = sum(1 for r in collected["flakiness"] if r["flaky"])
    totals["regressions"] = sum(1 for r in collected["regressions"] if r["regressed"])
    undecided = [r for r in collected["scenarios"] if r["undecided"]]
    totals["undecided_scenarios"] = len(undecided)
    totals["duplicate_records"] = len(loaded.duplicates)
    tampered = tampered_records(run_rows)
    totals["tampered"] = len(tampered)
    for t in tampered:
        log.warning("%s run record %s: %s", "stale" if t["what"].startswith("stale") else "tampered", t["path"],
                    t["what"])
    if totals["runs"] == 0 and not loaded.skipped:
        raise UsageError(f"no run records under {opts.runs_path}")

    result = gate.evaluate(totals, th)
    reasons: dict[str, int] = {}
    for s in loaded.skipped:
        for part in s["reason"].split("; "):
            key = reason_category(part)
            reasons[key] = reasons.get(key, 0) + 1
    summary = {
        "runs_path": opts.runs_path, "out": str(out),
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "spark": {"master": spark.sparkContext.master, "version": spark.version},
        "totals": totals, "thresholds": th, "gate": result, "exit_code": 0 if result["passed"] else 1,
        "skipped_records": loaded.skipped, "skipped_reasons": reasons, "regressions_compared": compared,
        "duplicate_records": loaded.duplicates, "summaries_table": loaded.table,
        "tampered_records": tampered, "outcomes": outcome_counts(run_rows, opts.trust_stored),
        "undecided_scenarios": [{"scenario": r["scenario"], "runs": r["runs"], "coverage_short": r["coverage_short"],
                                 "unknown_causes": r["unknown_causes"]} for r in undecided],
        "unknown_by_cause": {r["cause"]: r["runs"] for r in collected["unknown_causes"]},
        "tables": {name: len(rows) for name, rows in collected.items()},
        "outputs": {"html": str(out / "report.html"), "junit": str(out / "junit.xml"),
                    "summary": str(out / "summary.json"), "tables": str(out / "tables")},
    }

    if opts.write_parquet:
        tdir = out / "tables"
        skipped_df = spark.createDataFrame([(s["path"], s["reason"]) for s in loaded.skipped] or [],
                                           "path string, reason string")
        tampered_df = spark.createDataFrame([(t["path"], t["run_id"], t["stored"], t["derived"], t["what"])
                                             for t in tampered] or [],
                                            "path string, run_id string, stored string, derived string, what string")
        jobs = [*dfs.items(), ("runs", runs), ("fault_recovery", recovery), ("unavailability_windows", windows),
                ("skipped_records", skipped_df), ("tampered_records", tampered_df)]
        progress(f"writing the Parquet tables under {tdir}")
        with ThreadPoolExecutor(max_workers=4) as pool:
            list(pool.map(lambda nd: nd[1].coalesce(1).write.mode("overwrite").parquet((tdir / nd[0]).as_uri()),
                          jobs))
        lap("parquet")

    progress("building the HTML report (timelines, bundled logs)")
    timelines = _timelines(spark, run_rows, opts.max_timelines)
    (out / "report.html").write_text(html.render(summary, collected, timelines, loaded.skipped, out=out), encoding="utf-8")
    lap("html")
    junit.write(out / "junit.xml", [{c: r[c] for c in JUNIT_COLUMNS} for r in run_rows], loaded.skipped,
                base=opts.runs_path)
    lap("junit")
    summary["seconds"] = round(time.time() - t_start, 3)
    summary["timings"] = timings
    (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True, default=str) + "\n")
    for df in (recovery, windows):
        df.unpersist()
    loaded.unpersist()
    return summary


def _has_record_files(root: Path) -> bool:
    """Does a local RUNS_PATH hold any file a run record is made of, where Spark would look (names
    starting with '.' or '_' are hidden from Spark's file listing)? Empty: said before a JVM starts."""
    for _, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
        if {"metadata.json", "verdict.json", "events.jsonl"} & set(files):
            return True
    return False


def main(argv: list[str] | None = None) -> int:
    """CLI entry: returns 0 (gate passed), 1 (gate failed), 2 (usage error) or 5 (environment: Spark could
    not start, its master not reached), as docs/cli.md "Exit codes" says."""
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s", stream=sys.stderr)
    logging.getLogger("py4j").setLevel(logging.WARNING)
    try:
        opts = parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as e:  # argparse: --help (0) or a usage error (2)
        return int(e.code or 0)
    try:
        load_config(opts.gate_config)  # fail fast before starting Spark
    except GateConfigError as e:
        print(f"kafka-chaos: error: {e}", file=sys.stderr)
        return 2
    local = not re.match(r"[A-Za-z][\w+.-]*:", opts.runs_path)
    if local and not Path(opts.runs_path).is_dir():
        # a local path: say so before a JVM starts
        what = "is not a directory" if Path(opts.runs_path).exists() else "does not exist"
        print(f"kafka-chaos: error: RUNS_PATH {opts.runs_path} {what}", file=sys.stderr)
        return 2
    if local and not _has_record_files(Path(opts.runs_path)):
        print(f"kafka-chaos: error: no run records under {opts.runs_path}", file=sys.stderr)
        return 2
    probe = Path(opts.out).absolute()
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    if not probe.is_dir():  # -o onto a file (or under one) would fail only after the whole job
        print(f"kafka-chaos: error: -o {opts.out}: {probe} is not a directory", file=sys.stderr)
        return 2
    if not os.access(probe, os.W_OK | os.X_OK):
        print(f"kafka-chaos: error: -o {opts.out}: {probe} is not writable", file=sys.stderr)
        return 2

    conf = None
    if s3a.is_remote(opts.runs_path):          # object storage: the complete records, read through s3a
        try:
            opts.read_paths = s3a.record_paths(opts.runs_path, opts.s3_endpoint)
            conf = s3a.spark_conf(opts.s3_endpoint) if opts.read_paths else None
        except (HarnessError, s3a.S3aError) as e:
            print(f"kafka-chaos: error: {e}", file=sys.stderr)
            return 2
        if not opts.read_paths:
            print(f"kafka-chaos: error: no run records under {opts.runs_path}", file=sys.stderr)
            return 2

    from pyspark.sql import SparkSession  # lazy: PySpark

    existing = SparkSession.getActiveSession()
    bad_url = None if existing else check_master(opts.master)
    if bad_url:
        print(f"kafka-chaos: error: {bad_url}", file=sys.stderr)
        return 2
    unreachable = None if existing else unreachable_master(opts.master)
    if unreachable:          # a master not reached: the environment (docs/cli.md "Exit codes": 5)
        print(f"kafka-chaos: error: {unreachable}", file=sys.stderr)
        return EXIT_ENV
    if existing is None:
        progress(f"starting Spark ({opts.master})")
    try:
        spark = existing or build_session(opts.master, conf=conf)
    except Exception as e:  # noqa: BLE001 - no Java, bad master URL, ...
        print(f"kafka-chaos: error: cannot start Spark ({opts.master}): {str(e).splitlines()[0] if str(e) else e!r}",
              file=sys.stderr)
        return EXIT_ENV          # no Java, no JVM: the host
    try:
        summary = run_report(spark, opts)
    except (ReportInputError, UsageError, GateConfigError) as e:
        print(f"kafka-chaos: error: {e}", file=sys.stderr)
        return 2
    finally:
        if existing is None:
            spark.stop()
    t = summary["totals"]
    g = summary["gate"]
    print(f"report: {t['runs']} runs ({t['pass']} PASS, {t['fail']} FAIL, {t['unknown']} UNKNOWN), "
          f"{t['skipped_records']} skipped records; acknowledged {t['acknowledged_writes']}, lost {t['lost']}")
    o = summary["outcomes"]
    if t.get("tampered"):
        print(f"report: {t['tampered']} tampered or stale record(s): the stored verdict disagrees with the "
              "events or the files changed since they were judged (table tampered_records)")
    if o["trust_stored"]:
        why = ", ".join(f"{k}: {n}" for k, n in sorted(o["rederived_why"].items()))
        print(f"report: --trust-stored: {o['stored']} stored verdict(s) used (evidence verified), "
              f"{o['rederived']} re-derived from their events" + (f" ({why})" if why else ""))
    print(gate_line(g, summary["tampered_records"]))
    if summary["undecided_scenarios"]:
        print(undecided_line(summary["undecided_scenarios"]))
    print(f"html: {summary['outputs']['html']}")
    return summary["exit_code"]


if __name__ == "__main__":
    sys.exit(main())
