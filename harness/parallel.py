"""``kafka-chaos run ... --parallel N``: scenarios in N child processes, one isolated cluster each.

Each job runs as its own ``kafka-chaos run SCENARIO --seed S ...`` child (its own Docker network,
ports, recorder and ZooKeeper client), so one scenario's faults and failures cannot touch another's.
Children run in their own process groups: Ctrl-C reaches this process only, which forwards exactly
one SIGINT to every running child (each heals, removes its cluster and publishes its record as
UNKNOWN) and waits for them, bounded; a second Ctrl-C meanwhile is noted, not obeyed
(harness/cluster/lifecycle.py Shield), and what a child SIGKILLed after the grace time left is removed. Each child's output goes to
``RUNS_DIR/.logs/<n>-<scenario>.log`` (readers of run records skip dot-directories); its result line
is echoed here. Exit code: 1 if any child found a FAIL, else 0 if every one PASSed, else 4 when every
child reached a verdict (some UNKNOWN), 5 when one did not (it died, or its environment failed): the
codes of a serial run (harness/errors.py).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from harness.cluster.lifecycle import Shield, summary
from harness.errors import EXIT_ENV, EXIT_FAIL, EXIT_OK, EXIT_UNKNOWN
from harness.cluster.lifecycle import reap as reap_dead
from harness.shard import longest_first

RESULT = re.compile(r"^\[1/1\] (\S+): (PASS|FAIL|UNKNOWN) in (.*)$")
SECONDS = re.compile(r"([\d.]+) s")           # the rest of a result line starts with "38 s"
RECORD = re.compile(r"\(([^()]+)\)\s*$")      # a result line ends with "(RUN_DIR)"
STOP_GRACE_S = 300.0
# a child started with this set to "stdin" waits, once ready to run, for "go" on its stdin (EOF: it ends
# without running anything): harness/commands/run.py ``wait_at_gate``
GATE_ENV = "KAFKA_CHAOS_START_GATE"


@dataclass
class Job:
    scenario: str
    argv: list[str]          # arguments after ``kafka-chaos run``


@dataclass
class _Child:
    n: int
    job: Job
    proc: subprocess.Popen
    log: Path
    fh: object


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _result_line(log: Path) -> tuple[str | None, str]:
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return None, ""
    for line in reversed(lines):
        m = RESULT.match(line)
        if m:
            return m.group(2), m.group(3)
    tail = next((ln for ln in reversed(lines) if ln.strip()), "")
    return None, tail


@dataclass
class ChildResult:
    """What one child run ended with: its verdict line (None when it printed none), the rest of that
    line, the run record it names (None when there is none), its exit code and its log."""
    scenario: str
    verdict: str | None
    rest: str
    path: Path | None
    returncode: int
    log: Path

    @property
    def seconds(self) -> float | None:
        """The child's own cluster-start-to-verdict time from its result line (None without one)."""
        m = SECONDS.match(self.rest) if self.verdict else None
        return float(m.group(1)) if m else None


def _record_path(rest: str) -> Path | None:
    m = RECORD.search(rest)
    return Path(m.group(1)) if m else None


def _stop_children(running: list[_Child], reap) -> None:
    """One SIGINT to every running child (each heals, removes its cluster and records UNKNOWN), a bounded
    wait, SIGKILL for those still running, then removal of whatever the killed ones left."""
    _say(f"interrupted: stopping {len(running)} running scenario(s) (each heals and records UNKNOWN) ...")
    for c in running:
        try:
            os.killpg(c.proc.pid, signal.SIGINT)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + STOP_GRACE_S
    killed = []
    for c in running:
        try:
            c.proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(c.proc.pid, signal.SIGKILL)
            c.proc.wait()
            killed.append(c.proc.pid)
        reap(c)
    if killed:
        try:
            done = reap_dead(pids=killed)
            _say(f"removed {summary(done) or 'nothing'} left by the {len(killed)} killed scenario(s)")
        except Exception as e:  # noqa: BLE001 - the next kafka-chaos command reaps them
            _say(f"could not remove what the killed scenarios left ({type(e).__name__}: {e}); "
                 "the next kafka-chaos command removes it")


def run_parallel(jobs: list[Job], workers: int, runs_dir: str, done: list | None = None) -> int:
    """Run ``jobs`` ``workers`` at a time; the exit code of the whole (see the module docstring).
    ``done`` gets each child's record path (None: the child left none)."""
    results = run_children(jobs, workers, runs_dir)
    if done is not None:
        done.extend(r.path for r in results)
    verdicts = [r.verdict or "UNKNOWN" for r in results]
    codes = [r.returncode for r in results]
    passed = verdicts.count("PASS")
    _say(f"{passed}/{len(jobs)} PASS; run records under {runs_dir}/")
    if 1 in codes or "FAIL" in verdicts:
        return EXIT_FAIL
    if all(c == 0 for c in codes) and passed == len(jobs):
        return EXIT_OK
    # every child ran to a verdict: undecided (4); a child without one (it died, its host failed): environment (5)
    return EXIT_UNKNOWN if all(r.verdict for r in results) else EXIT_ENV


def run_children(jobs: list[Job], workers: int, runs_dir: str,
                 durations: dict[str, float] | None = None) -> list[ChildResult]:
    """Run ``jobs`` as ``kafka-chaos run`` children, ``workers`` at a time, longest expected first
    (``durations``: seconds per scenario, default the shipped table), with a progress line as each
    starts and ends; their results in job order. Ctrl-C stops them (see the module docstring)
    and is raised again once they are reaped."""
    logs = Path(runs_dir) / ".logs"
    logs.mkdir(parents=True, exist_ok=True)
    # longest expected duration first (suites/durations.json), so no long scenario starts last
    pending = [(i + 1, jobs[i]) for i in longest_first([j.scenario for j in jobs], durations)]
    running: list[_Child] = []
    ready: list[_Child] = []        # at most one child started ahead, waiting at its gate
    results: dict[int, ChildResult] = {}
    total = len(jobs)

    def spawn(n: int, job: Job) -> _Child:
        """The child process of ``job``, started ahead: it imports and resolves its image, then waits
        at its gate (``GATE_ENV``) until :func:`go` (Python's start and the imports took ~0.7 s of a
        slot per scenario on a loaded 2-core host)."""
        log = logs / f"{n:03d}-{job.scenario}.log"
        fh = open(log, "w", encoding="utf-8")
        proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "run", *job.argv], stdout=fh,
                                stderr=subprocess.STDOUT, stdin=subprocess.PIPE, start_new_session=True,
                                env={**os.environ, "PYTHONUNBUFFERED": "1", GATE_ENV: "stdin"})
        return _Child(n, job, proc, log, fh)

    def go(c: _Child) -> None:
        try:
            c.proc.stdin.write(b"go\n")
            c.proc.stdin.close()
        except OSError:
            pass                     # it ended before its gate opened: reaped as a child without a verdict
        running.append(c)
        _say(f"[{c.n}/{total}] {c.job.scenario}: running ... (log {c.log})")

    def reap(c: _Child) -> None:
        c.fh.close()
        verdict, rest = _result_line(c.log)
        results[c.n] = ChildResult(c.job.scenario, verdict, rest, _record_path(rest) if verdict else None,
                                   c.proc.returncode, c.log)
        if verdict:
            _say(f"[{c.n}/{total}] {c.job.scenario}: {verdict} in {rest}")
        else:
            _say(f"[{c.n}/{total}] {c.job.scenario}: no verdict (exit {c.proc.returncode}): {rest}  (log {c.log})")

    try:
        while pending or running or ready:
            while (pending or ready) and len(running) < workers:
                go(ready.pop() if ready else spawn(*pending.pop(0)))
            if pending and not ready:
                ready.append(spawn(*pending.pop(0)))
            time.sleep(0.1)      # a slot freed is filled within 0.1 s (0.5 s left it idle 0.25 s per scenario on average)
            for c in [c for c in running if c.proc.poll() is not None]:
                running.remove(c)
                reap(c)
    except KeyboardInterrupt:
        with Shield(f"stopping {len(running)} scenario(s)"):   # a second Ctrl-C must not strand their clusters
            for c in ready:          # never started: no cluster, no record, no result
                _close_gate(c)
            _stop_children(running, reap)
        raise
    return [results[n] for n in sorted(results)]


def _close_gate(c: _Child) -> None:
    """End a child still waiting at its gate: EOF on its stdin ends it without a run (bounded wait)."""
    try:
        c.proc.stdin.close()
    except OSError:
        pass
    try:
        c.proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(c.proc.pid, signal.SIGKILL)
        c.proc.wait()
    c.fh.close()
