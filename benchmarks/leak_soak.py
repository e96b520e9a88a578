"""Leak soak: N short runs, each killed at a random moment by a random kind of signal, then one harness
command; count what the dead owners left behind.

    python benchmarks/leak_soak.py [--runs 50] [--seed 1] [--scenario broker_failover.kill_leader]
                                   [--runs-dir /tmp/leak-soak] [--broker-image IMG]

Each run is a real ``kafka-chaos run SCENARIO`` subprocess on its own cluster. After a random delay
(0 .. --max-delay s: before, during or after cluster start, mid-fault or while judging) it gets one
of: SIGINT, two SIGINTs 1 s apart, or SIGKILL. When it has exited, ``kafka-chaos images list`` runs
(any command reaps what dead owners left), and then the containers, networks and volumes labelled
with that run's pid, and its ``.tmp-*`` record directories, are counted. Also counted: published
records whose verdict is FAIL without a broker-observable cause (a killed run must publish
UNKNOWN(aborted) or nothing; a run that finished before its signal may publish anything it judged,
so only records of runs that were actually interrupted count).

Last line: ``leak_soak: N leaked`` (the target is 0).
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

KINDS = ("SIGINT", "SIGINT x2", "SIGKILL")


def owned_by(pid: int) -> list[str]:
    from harness import docker_util
    from harness.docker_util import LABEL, LABEL_OWNER_PID
    api = docker_util.client().api
    f = {"label": [f"{LABEL}=1", f"{LABEL_OWNER_PID}={pid}"]}
    return ([c["Names"][0] for c in api.containers(all=True, filters=f)] + [n["Name"] for n in api.networks(filters=f)]
            + [v["Name"] for v in (api.volumes(filters=f) or {}).get("Volumes") or []])


def one_run(i: int, rng: random.Random, args, runs: Path) -> dict:
    kind = rng.choice(KINDS)
    delay = round(rng.uniform(0, args.max_delay), 1)
    cmd = [sys.executable, "-m", "harness.cli", "run", args.scenario, "--runs-dir", str(runs), "--seed", str(i)]
    if args.broker_image:
        cmd += ["--broker-image", args.broker_image]
    before = {p.name for p in runs.iterdir()} if runs.exists() else set()
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        proc.wait(timeout=delay)
        signalled = False                       # it finished before its signal
    except subprocess.TimeoutExpired:
        signalled = True
        if kind == "SIGKILL":
            proc.send_signal(signal.SIGKILL)
        else:
            proc.send_signal(signal.SIGINT)
            if kind == "SIGINT x2":
                time.sleep(1.0)
                if proc.poll() is None:
                    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    seconds = time.monotonic() - t0
    reap = subprocess.run([sys.executable, "-m", "harness.cli", "images", "list"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    left = owned_by(proc.pid)
    new = [runs / n for n in {p.name for p in runs.iterdir()} - before]
    tmp_left = [p.name for p in new if p.name.startswith(".tmp-")]
    bad_fail = []
    for d in new:
        v = d / "verdict.json"
        if not d.name.startswith(".") and v.exists():
            body = json.loads(v.read_text())
            if signalled and body.get("verdict") == "FAIL":
                bad_fail.append(f"{d.name}: {body.get('reason', '')[:120]}")
            published = f"{body.get('verdict')}({body.get('cause')})"
            break
    else:
        published = "nothing"
    return {"i": i, "kind": kind if signalled else "none (finished first)", "delay": delay, "exit": proc.returncode,
            "seconds": round(seconds, 1), "left": left, "tmp_left": tmp_left, "published": published,
            "bad_fail": bad_fail, "reaped": "left by dead" in reap.stderr, "err": err.strip().splitlines()[-1:]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=50)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--scenario", default="broker_failover.kill_leader", help="a short (smoke) scenario")
    p.add_argument("--max-delay", type=float, default=45.0, help="latest moment of the signal, seconds after start")
    p.add_argument("--runs-dir", default="/tmp/leak-soak-runs")
    p.add_argument("--broker-image")
    args = p.parse_args(argv)
    if args.runs < 1:
        print("leak_soak: error: --runs must be at least 1", file=sys.stderr)
        return 2
    runs = Path(args.runs_dir)
    runs.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    leaked = bad = 0
    t0 = time.monotonic()
    for i in range(args.runs):
        r = one_run(i, rng, args, runs)
        n = len(r["left"]) + len(r["tmp_left"])
        leaked += n
        bad += len(r["bad_fail"])
        print(f"[{i + 1}/{args.runs}] {r['kind']:22} at {r['delay']:5.1f} s -> exit {r['exit']}, {r['seconds']:5.1f} s, "
              f"published {r['published']}, reaped by next command: {r['reaped']}, leaked {n}"
              + (f" {r['left'] + r['tmp_left']}" if n else "") + (f" FAIL-without-cause {r['bad_fail']}" if r["bad_fail"] else ""),
              flush=True)
    print(f"{args.runs} runs in {time.monotonic() - t0:.0f} s; interrupted runs published as FAIL without a "
          f"broker-observable cause: {bad}")
    print(f"leak_soak: {leaked} leaked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
