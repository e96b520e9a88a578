"""How the report job's cost grows with the number of run records.

Generates N synthetic run records (tests.reports.synthetic.bulk_runs: ~75 events each, 10 % FAIL,
3 % UNKNOWN, each verdict.json what the checkers decide from its events, with evidence digests) in a
temporary directory for each size, then times the whole report job on one local SparkSession
(tables, Parquet, HTML with 50 timelines, JUnit, summary) as ``report`` runs it by default: every
record's outcome re-derived from its events (reports/outcome.py). Then the same report with
``--trust-stored`` (stored verdicts, their digests verified), and the ratio of the two. Spark start-up
and a small warm-up run are excluded and printed separately. Each size prints the load phase
(reading and judging the records into per-run summaries, reports.compact.summarize_all) and the
compute phase (tables, Parquet, HTML, JUnit) apart, and the CPU seconds the whole process tree (driver,
JVM, Python workers) spent on it: on a loaded machine the wall times are noisy, the CPU seconds much less
so (their ratio between the two modes is the cost of re-deriving). ``--summaries`` times the report
through the compacted table instead (built from scratch, then read). ``--no-trust-stored`` skips the
second report.

    python benchmarks/report_scaling.py                 # sizes 1000,10000,100000
    python benchmarks/report_scaling.py --sizes 2000,10000 --master 'local[*]'

Last line: ``report_scaling: <seconds for 10000 records, re-derived> s`` (target <= 30 s); if 10000 was
not among the sizes, the largest measured size is reported instead and named.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reports.job import Options, run_report  # noqa: E402
from reports.spark import build_session  # noqa: E402
from tests.reports.synthetic import bulk_runs  # noqa: E402


def tree_cpu_s() -> float:
    """CPU seconds (user + system, with reaped children) of this process and all its descendants (Linux
    /proc; 0.0 elsewhere)."""
    kids: dict[int, list[int]] = {}
    times: dict[int, int] = {}
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return 0.0
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as fh:
                s = fh.read()
        except OSError:
            continue
        f = s[s.rindex(")") + 2:].split()
        kids.setdefault(int(f[1]), []).append(int(p))
        times[int(p)] = sum(int(x) for x in f[11:15])
    total, stack = 0, [os.getpid()]
    while stack:
        p = stack.pop()
        total += times.get(p, 0)
        stack += kids.get(p, [])
    return total / os.sysconf("SC_CLK_TCK")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,100000", help="comma-separated record counts")
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--keep", action="store_true", help="keep the generated records and reports")
    ap.add_argument("--summaries", action="store_true", help="go through the compacted table (RUNS/_summaries)")
    ap.add_argument("--no-trust-stored", action="store_true", help="do not time the --trust-stored report")
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",") if s.strip()]
    tmp = Path(tempfile.mkdtemp(prefix="report-scaling-"))
    print(f"cpus: {os.cpu_count()}  load average: {os.getloadavg()[0]:.1f}  master: {a.master}  tmp: {tmp}",
          flush=True)
    t = time.time()
    spark = build_session(a.master, app_name="report-scaling")
    print(f"spark start: {time.time() - t:.1f} s", flush=True)
    results: dict[int, float] = {}
    try:
        warm = bulk_runs(tmp / "warmup", 50)
        t = time.time()
        run_report(spark, Options(runs_path=str(warm), out=str(tmp / "warmup-out")))
        print(f"warm-up (50 records): {time.time() - t:.1f} s", flush=True)
        for n in sizes:
            t = time.time()
            runs = bulk_runs(tmp / f"runs-{n}", n, seed=n)
            gen = time.time() - t
            modes = [False] if a.no_trust_stored else [False, True]
            took, cpu = {}, {}
            for trust in modes:
                if a.summaries:
                    shutil.rmtree(runs / "_summaries", ignore_errors=True)
                c = tree_cpu_s()
                t = time.time()
                s = run_report(spark, Options(runs_path=str(runs), out=str(tmp / f"out-{n}-{trust}"),
                                              summaries=str(runs / "_summaries") if a.summaries else None,
                                              trust_stored=trust))
                agg = took[trust] = time.time() - t
                cpu[trust] = tree_cpu_s() - c
                tot = s["totals"]
                load_s = s["timings"].get("load", 0.0)
                what = "--trust-stored" if trust else "re-derived"
                print(f"        {what}: phases: {s['timings']}", flush=True)
                print(f"        {what}: load {load_s:6.1f} s  compute {agg - load_s:6.1f} s  cpu {cpu[trust]:6.1f} s  "
                      f"(outcomes: {s['outcomes']['stored']} stored, {s['outcomes']['rederived']} re-derived; "
                      f"{tot['tampered']} tampered)", flush=True)
                print(f"{n:>7} records: generate {gen:6.1f} s  aggregate {agg:6.1f} s {what} "
                      f"({n / agg:,.0f} records/s, {tot['events']:,} events, {tot['fail']} FAIL, lost {tot['lost']}, "
                      f"gate {'PASSED' if s['gate']['passed'] else 'FAILED'})", flush=True)
            results[n] = took[False]
            if True in took:
                print(f"        re-derived / --trust-stored: x{took[False] / took[True]:.2f} "
                      f"({took[False]:.1f} s / {took[True]:.1f} s); CPU seconds "
                      f"x{cpu[False] / max(cpu[True], 1e-9):.2f} "
                      f"({cpu[False]:.1f} s / {cpu[True]:.1f} s)", flush=True)
            if not a.keep:
                shutil.rmtree(runs, ignore_errors=True)
        ns = sorted(results)
        for n1, n2 in zip(ns, ns[1:]):
            print(f"growth {n1} -> {n2}: x{results[n2] / results[n1]:.2f} time for x{n2 / n1:.0f} records "
                  f"({'no worse than linear' if results[n2] / results[n1] <= n2 / n1 * 1.1 else 'SUPERLINEAR'})")
    finally:
        spark.stop()
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    if 10000 in results:
        print(f"report_scaling: {results[10000]:.1f} s")
    else:
        n = max(results)
        print(f"report_scaling: {results[n]:.1f} s (for {n} records; 10000 not measured)")


if __name__ == "__main__":
    main()
