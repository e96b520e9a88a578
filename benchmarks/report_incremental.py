"""How long the compacted table of run summaries takes to take in new records.

Generates ``--base`` synthetic run records (tests.reports.synthetic.bulk_runs), builds their compacted
table (RUNS/_summaries, reports.compact.update) and times it, then adds ``--new`` records and
times the incremental update (only the new records are read and appended as one batch), and the
report read from the updated table (tables, Parquet, HTML, JUnit; no record re-read).

    python benchmarks/report_incremental.py                       # 100000 + 1000
    python benchmarks/report_incremental.py --base 10000 --new 1000

Last line: ``report_incremental: <seconds of the incremental update> s`` (target <= 30 s for
100000 + 1000 on the reference machine).
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

from reports import compact  # noqa: E402
from reports.job import Options, run_report  # noqa: E402
from reports.spark import build_session  # noqa: E402
from tests.reports.synthetic import bulk_runs  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", type=int, default=100000, help="records in the table before the update")
    ap.add_argument("--new", type=int, default=1000, help="records added")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--keep", action="store_true", help="keep the generated records, table and report")
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="report-incremental-"))
    runs, table = tmp / "runs", tmp / "runs" / "_summaries"
    print(f"cpus: {os.cpu_count()}  load average: {os.getloadavg()[0]:.1f}  master: {a.master}  tmp: {tmp}",
          flush=True)
    t = time.time()
    spark = build_session(a.master, app_name="report-incremental")
    print(f"spark start: {time.time() - t:.1f} s", flush=True)
    try:
        t = time.time()
        bulk_runs(runs / "base", a.base, seed=1)
        print(f"generate {a.base} records: {time.time() - t:.1f} s", flush=True)
        st = compact.update(spark, str(runs), table)
        print(f"build table of {st['records']} records: {st['seconds']:.1f} s", flush=True)
        t = time.time()
        bulk_runs(runs / "new", a.new, seed=2, first=a.base)
        print(f"generate {a.new} new records: {time.time() - t:.1f} s", flush=True)
        st = compact.update(spark, str(runs), table)
        assert st["added"] == a.new and not st["rewritten"], st
        inc = st["seconds"]
        print(f"incremental update (+{st['added']} records, table of {st['records']}): {inc:.1f} s", flush=True)
        t = time.time()
        s = run_report(spark, Options(runs_path=str(runs), out=str(tmp / "out"), summaries=str(table)))
        rep = time.time() - t
        tot = s["totals"]
        print(f"report from the table: {rep:.1f} s (load {s['timings']['load']:.1f} s: listing and "
              f"nothing new; {tot['runs']} runs, {tot['fail']} FAIL, gate "
              f"{'PASSED' if s['gate']['passed'] else 'FAILED'})", flush=True)
    finally:
        spark.stop()
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"report_incremental: {inc:.1f} s")


if __name__ == "__main__":
    main()
