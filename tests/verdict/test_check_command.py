"""``kafka-chaos check``: stored records judged again, through the real command line."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "tests" / "fixtures" / "runs" / "real"
KILL_LEADER = REAL / "20261121T075025Z-broker_failover.kill_leader-53702c"


def _check(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.cli", "check", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


def _copy(tmp_path: Path, name: str = "rec") -> Path:
    d = tmp_path / "runs" / name
    shutil.copytree(KILL_LEADER, d)
    return d


def _drop_one_drained_record(d: Path) -> None:
    lines = (d / "events.jsonl").read_text().splitlines()
    i = next(i for i, line in enumerate(lines) if '"f":"drain"' in line)
    del lines[i]
    (d / "events.jsonl").write_text("\n".join(lines) + "\n")


def test_unchanged_records_reproduce_their_verdicts():
    r = _check(str(REAL))
    assert r.returncode == 1, r.stderr           # the fixtures include one FAIL
    lines = r.stdout.splitlines()
    assert len(lines) == 4 and all(line.startswith("same ") for line in lines), r.stdout
    assert "4 record(s): 2 PASS, 1 FAIL, 1 UNKNOWN, 0 unreadable; 0 changed" in r.stderr


def test_a_changed_record_is_reported_and_written_only_when_asked(tmp_path):
    d = _copy(tmp_path)
    _drop_one_drained_record(d)
    r = _check(str(d))
    assert r.returncode == 1
    assert r.stdout.startswith("changed  PASS -> FAIL"), r.stdout
    assert "lost" in r.stdout
    assert json.loads((d / "verdict.json").read_text())["verdict"] == "PASS"     # nothing written
    r = _check(str(d), "--write")
    new = json.loads((d / "verdict.json").read_text())
    assert (new["verdict"], new["cause"]) == ("FAIL", None)
    assert json.loads((d / "verdict.previous.json").read_text())["verdict"] == "PASS"
    assert _check(str(d)).stdout.startswith("same     FAIL")


def test_symlinked_record_is_judged_once_and_a_bad_record_is_one_line(tmp_path):
    d = _copy(tmp_path)
    (tmp_path / "runs" / "link").symlink_to(d, target_is_directory=True)
    bad = _copy(tmp_path, "bad")
    (bad / "verdict.json").write_text("{not json")
    r = _check(str(tmp_path / "runs"), "--json")
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(rows) == 1 and rows[0]["verdict"] == "PASS"
    errors = [line for line in r.stderr.splitlines() if line.startswith("kafka-chaos: error:")]
    assert len(errors) == 1 and "verdict.json" in errors[0] and "not valid JSON" in errors[0]
    assert r.returncode == 4           # a record that cannot be read: undecided, never PASS


def test_missing_path_is_one_line_exit_2(tmp_path):
    r = _check(str(tmp_path / "nowhere"))
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [f"kafka-chaos: error: {tmp_path / 'nowhere'}: no such run record or folder"]


def test_a_stored_record_whose_sends_stop_at_the_first_fault_is_not_pass(tmp_path):
    """Issue 23: a stored record (no client.life events) whose producer stopped sending at the first
    fault, re-judged with `kafka-chaos check`, is UNKNOWN(workload), never PASS."""
    d = _copy(tmp_path)
    events = [json.loads(line) for line in (d / "events.jsonl").read_text().splitlines()]
    cut = next(e["t"] for e in events if e["type"] == "fault.start") + 1.0
    gone = {e["value"] for e in events if e["type"] == "client" and e.get("f") == "send"
            and e.get("phase") == "invoke" and e["t"] > cut}
    ops = {(e["process"], e["op_id"]) for e in events if e["type"] == "client" and e.get("value") in gone}
    kept = [e for e in events if not (e["type"] == "client" and (e.get("value") in gone or (
        e.get("f") == "send" and (e.get("process"), e.get("op_id")) in ops)))]
    assert gone and len(kept) < len(events)
    (d / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in kept))
    r = _check(str(d), "--json")
    (row,) = [json.loads(line) for line in r.stdout.splitlines()]
    assert (row["verdict"], row["cause"]) == ("UNKNOWN", "workload"), row
    assert r.returncode == 4, r.stderr
