"""Wall time of every scenario of a suite (cluster start to verdict) and of the whole suite.

    python benchmarks/conformance_suite.py [--suite conformance] [--kafka-version V] [--runs-dir DIR]
                                           [--parallel N]

Serially by default; ``--parallel N`` runs N scenarios at a time, each in its own ``kafka-chaos run``
process and cluster (what ``kafka-chaos run conformance --parallel N`` does), and a scenario's time
is then its own child's cluster-start-to-verdict time under that load.

Targets (issue 6, 2-core machine): a single-fault scenario <= 60 s from cluster start to verdict;
the whole conformance suite <= 15 min. Prints one line per scenario, then the total; the last line
is ``conformance_suite: SECONDS s``. Verdicts are printed too: a FAIL still counts its time.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness import images  # noqa: E402
from harness.parallel import Job, run_children  # noqa: E402
from harness.runner import execute  # noqa: E402
from suites.catalog import scenarios_for  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", default="conformance")
    ap.add_argument("--kafka-version")
    ap.add_argument("--distribution", help="apache-kraft (default, the newest 4.x) or apache-zk (the newest 3.9.x)")
    ap.add_argument("--runs-dir")
    ap.add_argument("--parallel", type=int, default=1, metavar="N")
    a = ap.parse_args()
    info = images.image_for(a.kafka_version, None, build_missing=True,
                            mode=images.ZK if a.distribution == "apache-zk" else images.KRAFT)
    dist = ["--distribution", a.distribution] if a.distribution else []
    chosen = [s for s in scenarios_for(a.suite) if "nightly" not in s.tags]
    runs = a.runs_dir or tempfile.mkdtemp(prefix="kc-bench-")
    print(f"{len(chosen)} scenarios of {a.suite!r} on {info.tag}, cpus {os.cpu_count()}, "
          f"load {os.getloadavg()[0]:.1f}, parallel {a.parallel}; records under {runs}", flush=True)
    t0 = time.monotonic()
    rows = []
    if a.parallel > 1:
        jobs = [Job(s.name, [s.name, "--broker-image", info.tag, "--runs-dir", runs, "--suite", "benchmark", *dist])
                for s in chosen]
        for r in run_children(jobs, a.parallel, runs):
            rows.append((r.scenario, r.verdict or "UNKNOWN", r.seconds if r.seconds is not None else float("nan")))
    else:
        for s in chosen:
            o = execute(s, runs_dir=runs, image=info.tag, suite="benchmark", distribution=a.distribution)
            rows.append((s.name, o.verdict, o.seconds))
            print(f"  {s.name:50} {o.verdict:8} {o.seconds:6.1f} s", flush=True)
    total = time.monotonic() - t0
    if a.parallel > 1:
        for name, verdict, sec in rows:
            print(f"  {name:50} {verdict:8} {sec:6.1f} s")
    single = [sec for name, _, sec in rows]
    print(f"scenarios: {len(rows)}, PASS {sum(v == 'PASS' for _, v, _ in rows)}, "
          f"slowest {max(single):.1f} s, median {sorted(single)[len(single) // 2]:.1f} s")
    print(f"conformance_suite: {total:.0f} s")


if __name__ == "__main__":
    main()
