"""Serial vs ``pytest -n 2`` (pytest-xdist, one isolated cluster per worker) on a scenario subset.

    python benchmarks/suite_parallel.py [-m smoke] [--workers 2]

Runs ``suites/test_scenarios.py`` with the marker expression twice: serially, then with
``-n WORKERS``; prints both wall times and, as the last line, ``suite_parallel_speedup: X x``
(serial / parallel; > 1 means parallel is faster). Both runs must pass for the figure to count.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(args: list[str]) -> tuple[float, int]:
    t0 = time.monotonic()
    rc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                         "suites/test_scenarios.py", *args], cwd=ROOT).returncode
    return time.monotonic() - t0, rc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-m", dest="marker", default="smoke")
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    print(f"marker {a.marker!r}, cpus {os.cpu_count()}, load {os.getloadavg()[0]:.1f}", flush=True)
    serial, rc1 = run(["-m", a.marker])
    print(f"serial: {serial:.0f} s (exit {rc1})", flush=True)
    par, rc2 = run(["-m", a.marker, "-n", str(a.workers)])
    print(f"-n {a.workers}: {par:.0f} s (exit {rc2})", flush=True)
    if rc1 or rc2:
        print("a run failed: the figure does not count", flush=True)
    print(f"suite_parallel_speedup: {serial / par:.2f} x")


if __name__ == "__main__":
    main()
