"""The journal of host changes (harness/remote/journal.py): written before the change, undone by its owner,
and — after the owner is SIGKILLed — by the next process from the journal alone. The "hosts" here are
this machine: the undo scripts run in a real shell against real processes (a SIGSTOPped ``sleep``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from harness.cluster.owner import owner_alive, this_owner
from harness.remote.journal import Journal

ROOT = Path(__file__).resolve().parents[1]


def _sh(node: str, script: str) -> None:
    r = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise RuntimeError(r.stdout + r.stderr)


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as fh:
        return fh.read().rsplit(")", 1)[1].split()[0]


def _wait_state(pid: int, want: str) -> str:
    for _ in range(200):
        if _state(pid) == want:
            break
        time.sleep(0.05)
    return _state(pid)


def test_a_change_is_journaled_before_it_is_made_and_undone_by_its_owner(tmp_path):
    j = Journal("t", this_owner(), owner_alive, tmp_path / "t.jsonl")
    sleeper = subprocess.Popen(["sleep", "300"])
    try:
        eid = j.record("n1", "paused", f"kill -CONT {sleeper.pid}", pid=sleeper.pid)
        line = json.loads((tmp_path / "t.jsonl").read_text().splitlines()[-1])   # on disk before the change
        assert line["id"] == eid and line["owner"]["pid"] == str(os.getpid()) and line["kind"] == "paused"
        os.kill(sleeper.pid, signal.SIGSTOP)
        assert _wait_state(sleeper.pid, "T") == "T"
        assert [e["id"] for e in j.pending()] == [eid]
        assert j.undo(_sh, "dead") == (0, [])            # a live owner's change is not the next command's
        assert _state(sleeper.pid) == "T"
        assert j.undo(_sh, "mine") == (1, [])
        assert _wait_state(sleeper.pid, "S") == "S" and j.pending() == []
        assert (tmp_path / "t.jsonl").read_text() == ""   # compacted: nothing pending
    finally:
        sleeper.kill()
        sleeper.wait()


def test_done_all_marks_a_heal_and_a_cut_line_is_ignored(tmp_path):
    j = Journal("t", this_owner(), owner_alive, tmp_path / "t.jsonl")
    j.record("n1", "stopped", "true")
    j.record("n1", "stopped", "true")
    j.record("n2", "chains", "true", chains=["KC_x_IN", "KC_x_OUT"])
    with open(tmp_path / "t.jsonl", "a") as fh:
        fh.write('{"op": "did", "id": "cut-by-a-cr')          # a crash mid-write: that change was never made
    j.done_all("n1", "stopped")
    assert [e["kind"] for e in j.pending()] == ["chains"]


CHILD = """
import os, signal, subprocess, sys, time
sys.path.insert(0, {root!r})
from harness.cluster.owner import owner_alive, this_owner
from harness.remote.journal import Journal
j = Journal("t", this_owner(), owner_alive, {path!r})
sleeper = subprocess.Popen(["sleep", "300"], start_new_session=True, stdout=subprocess.DEVNULL)
j.record("n1", "paused", f"kill -CONT {{sleeper.pid}}", pid=sleeper.pid)
os.kill(sleeper.pid, signal.SIGSTOP)
print(sleeper.pid, flush=True)
time.sleep(300)
"""


def test_a_sigkilled_owner_s_changes_are_undone_from_the_journal_alone(tmp_path):
    path = tmp_path / "t.jsonl"
    child = subprocess.Popen([sys.executable, "-c", CHILD.format(root=str(ROOT), path=str(path))],
                             stdout=subprocess.PIPE, text=True)
    pid = int(child.stdout.readline())
    try:
        assert _wait_state(pid, "T") == "T"
        j = Journal("t", this_owner(), owner_alive, path)
        assert j.undo(_sh, "dead") == (0, [])             # the owner lives: not ours to undo
        child.send_signal(signal.SIGKILL)
        child.wait()
        assert _state(pid) == "T"                          # the SIGKILLed harness left it paused
        assert j.undo(_sh, "dead") == (1, [])
        assert _wait_state(pid, "S") == "S" and j.pending() == []
    finally:
        child.kill()
        os.kill(pid, signal.SIGKILL)


def test_every_line_is_copied_to_its_node_s_host_and_another_machine_adopts_what_is_pending(tmp_path):
    """The copies on the hosts (Journal.mirror, Journal.adopt): here each "host" copy is a list. A second
    machine's journal (another state file, another owner host) takes in the pending lines it lacks; whether
    their owner still runs cannot be told there, so only ``which="all"`` (cleanup) undoes them."""
    copies: dict[str, list[dict]] = {}
    machine_a = {"pid": "4242", "host": "harness-machine-a", "start": ""}
    first = Journal("t", machine_a, owner_alive, tmp_path / "a.jsonl",
                    mirror=lambda node, e: copies.setdefault(node, []).append(dict(e)))
    sleeper = subprocess.Popen(["sleep", "300"])
    try:
        healed = first.record("n1", "stopped", "true")
        eid = first.record("n2", "paused", f"kill -CONT {sleeper.pid}", pid=sleeper.pid)
        first.done(healed)
        os.kill(sleeper.pid, signal.SIGSTOP)
        assert [e["op"] for e in copies["n1"]] == ["did", "undone"] and [e["id"] for e in copies["n2"]] == [eid]
        assert copies["n2"][0]["undo"] == f"kill -CONT {sleeper.pid}"      # the line itself, before the change
        second = Journal("t", this_owner(), owner_alive, tmp_path / "b.jsonl")     # this machine
        lines = [e for node in copies.values() for e in node] + [{"op": "did", "id": "x"}, "not a dict"]
        adopted = second.adopt([e for e in lines if isinstance(e, dict)])
        assert [e["id"] for e in adopted] == [eid] and second.adopt(lines[:3]) == []   # once
        assert second.undo(_sh, "dead") == (0, []) and _state(sleeper.pid) == "T"
        assert second.undo(_sh, "all") == (1, [])                              # cleanup --nodes
        assert _wait_state(sleeper.pid, "S") == "S" and second.pending() == []
    finally:
        sleeper.kill()
        sleeper.wait()
    # a copy that cannot be written does not stop the change (the local line is the authority)
    def broken(node, e):
        raise OSError("host gone")
    j = Journal("t", this_owner(), owner_alive, tmp_path / "c.jsonl", mirror=broken)
    j.done(j.record("n1", "chains", "true"))
    assert j.pending() == []
