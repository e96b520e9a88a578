"""`--parallel`: the next child is started ahead and waits at its gate (harness/parallel.py GATE_ENV,
harness/commands/run.py wait_at_gate); real child processes, no Docker (the children here end early)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from harness import parallel

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBE = "import sys; from harness.commands.run import wait_at_gate; print(wait_at_gate()); sys.stdout.flush()"


def _probe(env_gate: str | None, stdin: bytes | None, close: bool = True) -> str:
    env = {k: v for k, v in os.environ.items() if k != parallel.GATE_ENV}
    if env_gate is not None:
        env[parallel.GATE_ENV] = env_gate
    p = subprocess.Popen([sys.executable, "-c", PROBE], cwd=ROOT, env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE)
    if stdin:
        p.stdin.write(stdin)
        p.stdin.flush()
    if close:
        p.stdin.close()
    out = p.stdout.read().decode().strip()
    p.wait(timeout=30)
    return out


def test_a_gated_child_runs_on_go_and_not_on_eof():
    assert _probe("stdin", b"go\n") == "True"
    assert _probe("stdin", None) == "False"            # the parent closed the gate: nothing runs
    assert _probe("stdin", b"stop\n") == "False"


def test_an_ungated_child_does_not_read_stdin():
    # stdin left open and never written: an ungated child must not block on it
    assert _probe(None, None, close=False) == "True"


def test_the_child_started_ahead_waits_until_a_slot_frees():
    env = {**os.environ, parallel.GATE_ENV: "stdin"}
    p = subprocess.Popen([sys.executable, "-c", PROBE], cwd=ROOT, env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE)
    time.sleep(1.0)
    assert p.poll() is None                              # imported, waiting at its gate
    p.stdin.write(b"go\n")
    p.stdin.close()
    assert p.stdout.read().decode().strip() == "True"
    assert p.wait(timeout=30) == 0


def test_every_job_gets_one_result_in_job_order_when_children_end_early(tmp_path, monkeypatch):
    """Children that fail before their gate (no such scenario) are reaped as results without a
    verdict, the one started ahead too; one result per job, in job order, each with its own log."""
    monkeypatch.chdir(ROOT)
    jobs = [parallel.Job(f"no-such-scenario-{i}", [f"no-such-scenario-{i}", "--runs-dir", str(tmp_path)])
            for i in range(3)]
    results = parallel.run_children(jobs, 1, str(tmp_path), durations={})
    assert [r.scenario for r in results] == [j.scenario for j in jobs]
    assert all(r.verdict is None and r.returncode != 0 for r in results)
    assert sorted(p.name for p in (tmp_path / ".logs").iterdir()) == [
        f"{i + 1:03d}-no-such-scenario-{i}.log" for i in range(3)]
    assert all("no-such-scenario" in r.log.read_text() for r in results)
