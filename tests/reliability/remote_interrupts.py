"""Interrupt ``--nodes`` runs at random moments and count what is left on the hosts (issue 39).

    python3 tests/reliability/remote_interrupts.py --nodes NODES.toml [-n 20] [--seed 1]

Each run is ``kafka-chaos run <scenario> --nodes FILE`` (a kill, a pause or a partition scenario, chosen
at random), interrupted after a random delay with SIGINT, a double SIGINT (0.3 s apart) or SIGKILL.
Afterwards every host is checked: no ``KC_`` iptables chain, the service process of every node running
(not stopped, not paused). After SIGINT the harness must leave the hosts clean by itself; after SIGKILL
it cannot, and the next command (``kafka-chaos cleanup --nodes FILE``) must. Prints one line per run and
the count; exit 0 when every run ended clean.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.remote.hosts import host_leftovers as leftovers  # noqa: E402  (one copy: tests/remote/hosts.py)

SCENARIOS = ("broker_failover.kill_leader", "isr.pause_follower", "isr.partition_follower")
MODES = ("SIGINT", "double SIGINT", "SIGKILL")


def cli(args: list[str], **kw) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT), KAFKA_CHAOS_QUIET="1")
    return subprocess.Popen([sys.executable, "-m", "harness.cli", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, **kw)


def one(i: int, path: str, rng: random.Random, runs: str) -> tuple[str, bool, str]:
    scenario, mode = rng.choice(SCENARIOS), MODES[i % len(MODES)]
    delay = rng.uniform(0.5, 16.0)      # a run takes ~20 s here: from connecting to judging
    p = cli(["run", scenario, "--nodes", path, "--runs-dir", runs])
    time.sleep(delay)
    interrupted = p.poll() is None
    if interrupted:
        if mode == "SIGKILL":
            p.send_signal(signal.SIGKILL)
        else:
            p.send_signal(signal.SIGINT)
            if mode == "double SIGINT":
                time.sleep(0.3)
                p.send_signal(signal.SIGINT)
    try:
        p.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        return mode, False, f"{scenario}: did not exit within 300 s of {mode}"
    note = f"{scenario}, {mode} after {delay:.1f} s, exit {p.returncode}" + (
        "" if interrupted else " (the run had ended before the signal)")
    if mode == "SIGKILL":
        before = leftovers(path)
        c = cli(["cleanup", "--nodes", path])
        out, _ = c.communicate(timeout=300)
        note += f"; left {len(before)} thing(s), `cleanup --nodes`: {out.strip().splitlines()[-1] if out.strip() else '?'}"
    left = leftovers(path)
    return mode, not left, note + ("" if not left else f"; LEFT: {left}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", required=True)
    ap.add_argument("-n", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    if leftovers(a.nodes):
        print(f"the hosts are not clean before the first run: {leftovers(a.nodes)}")
        return 2
    counts = {m: [0, 0] for m in MODES}
    with tempfile.TemporaryDirectory(prefix="remote-interrupts-") as runs:
        for i in range(a.n):
            mode, clean, note = one(i, a.nodes, rng, runs)
            counts[mode][0] += clean
            counts[mode][1] += 1
            print(f"[{i + 1}/{a.n}] {'clean' if clean else 'NOT CLEAN'}: {note}", flush=True)
    total = sum(c for c, _ in counts.values())
    print(f"{total}/{a.n} interrupted --nodes runs left no harness chain and no stopped or paused broker ("
          + ", ".join(f"{m}: {c}/{n}" for m, (c, n) in counts.items()) + "; after SIGKILL: once the next command, "
          "`cleanup --nodes`, ran)")
    return 0 if total == a.n else 1


if __name__ == "__main__":
    sys.exit(main())
