"""Where a scenario's wall time goes: the median and p90 of each phase over a suite's run records.

    python benchmarks/scenario_phases.py RUNS_DIR [RUNS_DIR ...]
    # records to read come from e.g.:  kafka-chaos run conformance --runs-dir /tmp/phases-runs

The phases come from the ``phase`` events of each record (docs/run-record.md; ``t`` counts from the
recorder's start, which is the cluster start) and from metadata ``started_at`` / ``ended_at``
(whole seconds):

    cluster     0 -> cluster.ready              containers created and the cluster serving
    warm-up     cluster.ready -> faults.start   topics, workload start, the scenario's own waits
    faults      faults.start -> faults.healed   the scenario script (faults, heals, expectations)
    stop        faults.healed -> drain.start    clients asked to stop and stopped
    drain       drain.start -> drain.end        the final read of every partition
    finish      drain.end -> run.end            history read (ZooKeeper txn log), last events
    outside     ended_at - started_at - run.end judging and writing the verdict (the containers are
                                                removed meanwhile; ±1 s: whole-second timestamps)

A record without one of the marks leaves that phase (and ``outside``) out. Prints a table (median,
p90, max per phase), the slowest ten runs with their largest phase, and as last line
``scenario_phases: MEDIAN s`` — the median wall time of one run (``ended_at - started_at``; the
recorded part when the timestamps are missing). Pure: reads records, starts nothing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from datetime import datetime
from pathlib import Path

PHASES = [("cluster", None, "cluster.ready"), ("warm-up", "cluster.ready", "faults.start"),
          ("faults", "faults.start", "faults.healed"), ("stop", "faults.healed", "drain.start"),
          ("drain", "drain.start", "drain.end"), ("finish", "drain.end", "run.end")]


def _ts(s) -> float | None:
    try:
        return datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").timestamp()
    except (TypeError, ValueError):
        return None


def phases_of(run_dir: Path) -> dict | None:
    """{phase: seconds, "wall": seconds, "scenario": name} of one record; None if it is not one."""
    meta_p, ev_p = run_dir / "metadata.json", run_dir / "events.jsonl"
    if not (meta_p.is_file() and ev_p.is_file()):
        return None
    meta = json.loads(meta_p.read_text())
    marks: dict[str, float] = {}
    with ev_p.open() as f:
        for line in f:
            if '"phase"' not in line:
                continue
            e = json.loads(line)
            if e.get("type") == "phase" and e.get("name") not in marks:
                marks[e["name"]] = float(e["t"])
    marks.setdefault("run.end", marks.get("drain.end"))
    out: dict = {"scenario": meta.get("scenario", run_dir.name), "path": str(run_dir)}
    for name, a, b in PHASES:
        ta = 0.0 if a is None else marks.get(a)
        tb = marks.get(b)
        if ta is not None and tb is not None and tb >= ta:
            out[name] = tb - ta
    recorded = marks.get("run.end")
    t0, t1 = _ts(meta.get("started_at")), _ts(meta.get("ended_at"))
    if t0 is not None and t1 is not None and t1 >= t0:
        out["wall"] = t1 - t0
        if recorded is not None:
            out["outside"] = max(0.0, out["wall"] - recorded)
    elif recorded is not None:
        out["wall"] = recorded
    return out


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs_dirs", nargs="+", type=Path)
    a = ap.parse_args(argv)
    rows = []
    for d in a.runs_dirs:
        if not d.is_dir():
            print(f"scenario_phases: error: {d} is not a directory", file=sys.stderr)
            return 2
        for run in sorted(p for p in d.iterdir() if p.is_dir() and not p.name.startswith(".")):
            try:
                r = phases_of(run)
            except (OSError, ValueError) as e:
                print(f"skipped {run}: {e}", file=sys.stderr)
                continue
            if r is not None and "wall" in r:
                rows.append(r)
    if not rows:
        print("scenario_phases: error: no run records under " + ", ".join(map(str, a.runs_dirs)), file=sys.stderr)
        return 2
    names = [p[0] for p in PHASES] + ["outside", "wall"]
    print(f"{len(rows)} runs")
    print(f"{'phase':<10} {'runs':>5} {'median s':>9} {'p90 s':>7} {'max s':>7}")
    for n in names:
        xs = [r[n] for r in rows if n in r]
        if xs:
            print(f"{n:<10} {len(xs):>5} {statistics.median(xs):>9.1f} {_pct(xs, 0.9):>7.1f} {max(xs):>7.1f}")
    print("slowest ten:")
    for r in sorted(rows, key=lambda r: -r["wall"])[:10]:
        big = max((n for n in names[:-1] if n in r), key=lambda n: r[n], default=None)
        what = f"largest phase {big} {r[big]:.1f} s" if big else "no phases"
        print(f"  {r['wall']:6.1f} s  {r['scenario']:<45} {what}")
    print(f"scenario_phases: {statistics.median(r['wall'] for r in rows):.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
