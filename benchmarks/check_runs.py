"""Benchmark: ``kafka-chaos check`` re-judging 1,000 stored run records.

The records: copies of real run records (default: tests/fixtures/runs/real; ``--source DIR`` adds
every record under DIR, e.g. a runs directory), one per slot round-robin, in a temporary runs
directory. Every copy gets its own metadata.json (run id varied); its events are a hard link to the
source's (no disk cost), except every 10th copy, whose events lose one drained record, so that its
verdict changes (PASS -> FAIL where the source passed): the benchmark checks that exactly those are
reported as changed and every other copy reproduces its stored verdict.

Only the re-judging is timed (``harness.commands.check.cmd_check`` on the whole directory, as ``kafka-chaos
check DIR`` runs it, output captured): the figure is its CPU time (user + system) in this one process,
which unlike wall-clock time does not grow when other jobs share the machine; wall-clock is printed too.

Last line: ``check_runs: <seconds> s``.
Usage: python benchmarks/check_runs.py [--records N] [--source DIR]... [--keep DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.commands.check import cmd_check  # noqa: E402
from harness.record import list_runs  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "runs" / "real"


def _link_or_copy(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _drop_drained(src: Path, dst: Path) -> bool:
    """events.jsonl of ``src`` without its first drained record; False when it has none."""
    lines = src.read_text().splitlines()
    i = next((i for i, line in enumerate(lines) if '"f":"drain"' in line and '"type":"client"' in line), None)
    if i is None:
        return False
    del lines[i]
    dst.write_text("\n".join(lines) + "\n")
    return True


def generate(sources: list[Path], n: int, out: Path) -> set[str]:
    """``n`` record copies under ``out``; the names of those whose events were varied."""
    varied: set[str] = set()
    for i in range(n):
        src = sources[i % len(sources)]
        dst = out / f"{i:04d}-{src.name}"
        dst.mkdir(parents=True)
        vary = i % 10 == 9
        for f in src.iterdir():
            if f.is_dir():
                shutil.copytree(f, dst / f.name, copy_function=_link_or_copy)
            elif f.name == "metadata.json":
                meta = json.loads(f.read_text())
                meta["run_id"] = f"{meta.get('run_id', src.name)}-copy{i:04d}"
                (dst / f.name).write_text(json.dumps(meta))
            elif f.name == "events.jsonl" and vary:
                if _drop_drained(f, dst / f.name):
                    varied.add(dst.name)
                else:
                    _link_or_copy(f, dst / f.name)
            else:
                _link_or_copy(f, dst / f.name)
    return varied


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1000, help="records to re-judge (default 1,000)")
    ap.add_argument("--source", action="append", default=[], metavar="DIR",
                    help="also copy every record under DIR (default: only tests/fixtures/runs/real)")
    ap.add_argument("--keep", metavar="DIR", help="generate the copies in DIR (kept) instead of a temporary one")
    args = ap.parse_args()
    sources = list_runs(FIXTURES) + [d for s in args.source for d in list_runs(s)]
    sources = [d for d in sources if (d / "verdict.json").exists() and (d / "events.jsonl").exists()]
    if not sources:
        raise SystemExit("no source records")
    tmp = None
    if args.keep:
        out = Path(args.keep)
        out.mkdir(parents=True, exist_ok=False)
    else:
        tmp = tempfile.mkdtemp(prefix="kc-check-runs-")
        out = Path(tmp) / "runs"
    try:
        t0 = time.perf_counter()
        varied = generate(sources, args.records, out)
        print(f"generated {args.records:,} records from {len(sources)} source record(s) in "
              f"{time.perf_counter() - t0:.1f} s; {len(varied)} with one drained record dropped")
        ns = argparse.Namespace(paths=[str(out)], profile=None, write=False, json=True, s3_endpoint=None)
        buf, err = io.StringIO(), io.StringIO()
        t0, c0 = time.perf_counter(), time.process_time()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
            rc = cmd_check(ns)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        rows = [json.loads(line) for line in buf.getvalue().splitlines()]
        changed = {Path(r["path"]).name for r in rows if r["changed"]}
        print(err.getvalue().strip().splitlines()[-1] if err.getvalue().strip() else f"exit {rc}")
        if len(rows) != args.records:
            raise SystemExit(f"judged {len(rows)} records, expected {args.records}")
        unexpected = sorted(changed - varied)
        if unexpected:
            raise SystemExit(f"{len(unexpected)} unvaried record(s) did not reproduce their verdict, e.g. {unexpected[:3]}")
        print(f"{len(changed)} of the {len(varied)} varied records changed verdict; every other record reproduced "
              "its stored verdict")
        print(f"wall-clock {wall:.2f} s (inflated when other processes compete for the cores); "
              f"{cpu / args.records * 1000:.1f} ms CPU per record")
        print(f"check_runs: {cpu:.2f} s")
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
