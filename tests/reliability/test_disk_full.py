"""A run record on a file system that fills up: a real, small tmpfs (no mocked writes).

Each test mounts its own tmpfs (``mount -t tmpfs -o size=...``, root only; skipped with the reason
when the sandbox refuses it) and fills it with a real file, so every ENOSPC comes from the kernel.
What must hold (harness/record/__init__.py, docs/run-record.md "Write errors"):

* a record appears complete (metadata + events + verdict) or not at all: never a visible half;
* a disk that fills during the run ends it as UNKNOWN(disk-full) with the events that fitted, all
  whole lines; a FAIL found in that part stays FAIL;
* when not even the verdict can be written, one clear line (RecordWriteError) and nothing visible.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import uuid
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.record import RESERVE_BYTES, RecordWriteError, RunRecorder, list_runs, read_run


def _mount(where: Path, *opts: str) -> None:
    where.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join(opts), "tmpfs", str(where)],
                       capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({r.stderr.strip() or r.returncode}): needs root")


@pytest.fixture
def small_fs(tmp_path):
    """Mount a tmpfs; yields ``mount(size, **opts) -> Path``; unmounted afterwards."""
    mounted: list[Path] = []

    def mount(size: str, *extra: str) -> Path:
        where = tmp_path / f"fs-{len(mounted)}"
        _mount(where, f"size={size}", "mode=0755", *extra)
        mounted.append(where)
        return where
    yield mount
    for where in mounted:
        if subprocess.run(["umount", str(where)], capture_output=True, timeout=30).returncode:
            subprocess.run(["umount", "-l", str(where)], capture_output=True, timeout=30)


def fill(fs: Path, leave: int = 0) -> Path:
    """Write a real file until only ``leave`` bytes (about) are free on ``fs``."""
    filler = fs / f"filler-{uuid.uuid4().hex[:6]}"
    chunk = b"x" * 4096
    with open(filler, "wb") as fh:
        try:
            while True:
                st = os.statvfs(fs)
                if st.f_bavail * st.f_frsize <= leave:
                    break
                fh.write(chunk)
                fh.flush()
        except OSError as e:
            assert e.errno == errno.ENOSPC, e
    return filler


def _events_until_error(rec: RunRecorder, limit: int = 200_000) -> int:
    for i in range(limit):
        rec.emit("client", process="p0", f="send", phase="invoke", value=f"v{i:08d}", pad="p" * 200)
        if rec.write_error is not None:
            return i + 1
    raise AssertionError("the file system never filled")


def _visible(runs: Path) -> list[str]:
    return sorted(p.name for p in runs.iterdir() if not p.name.startswith("."))


def test_disk_filling_during_the_run_publishes_unknown_disk_full(small_fs):
    fs = small_fs("1m")
    runs = fs / "runs"
    rec = RunRecorder(runs, "broker_failover.kill_leader", {"seed": 7})
    fill(fs)                                    # the disk is full from here on (the reserve is taken)
    emitted = _events_until_error(rec)
    assert rec.write_error.errno == errno.ENOSPC
    for _ in range(10):                         # later events are dropped, not half-written
        rec.emit("client", process="p0", f="send", phase="ok")
    path = rec.finish("PASS", "all checks passed", {"durability": {"verdict": "PASS"}},
                      extra={"coverage": {"verdict": "PASS"}})
    assert _visible(runs) == [path.name] and not any(p.name.startswith(".tmp-") for p in runs.iterdir())
    r = read_run(path)                          # every line whole: read_run would raise on a torn one
    v = r.verdict
    assert (v["verdict"], v["cause"]) == ("UNKNOWN", "disk-full"), v
    assert v["judged_verdict"] == "PASS" and v["judged_reason"] == "all checks passed"
    assert "No space left on device" in v["reason"]
    info = v["record_write_error"]
    assert info["errno"] == errno.ENOSPC and info["events_written"] == len(r.events)
    assert info["events_written"] + info["events_dropped"] == emitted + 10
    assert [e["seq"] for e in r.events] == list(range(len(r.events)))
    assert r.metadata["record_write_error"] == info and r.metadata["seed"] == 7
    assert list_runs(runs) == [path]


def test_a_fail_found_before_the_disk_filled_stays_fail(small_fs):
    fs = small_fs("1m")
    rec = RunRecorder(fs / "runs", "acks.all")
    fill(fs)
    _events_until_error(rec)
    path = rec.finish("FAIL", "3 acknowledged writes lost", {"durability": {"verdict": "FAIL", "lost": {"count": 3}}})
    v = read_run(path).verdict
    assert v["verdict"] == "FAIL" and v["cause"] is None
    assert v["reason"].startswith("3 acknowledged writes lost (the run record could not be written")
    assert v["checks"]["durability"]["lost"]["count"] == 3


def test_a_verdict_too_large_for_the_space_left_is_written_without_its_checks(small_fs):
    fs = small_fs("1m")
    rec = RunRecorder(fs / "runs", "isr.shrink")
    for i in range(50):
        rec.emit("phase", name=f"p{i}")
    assert len(rec.read_events()) == 50         # read back: written to the file
    fill(fs)                                    # the run's events fit; only the reserve is left
    big = {"conformance": {"verdict": "PASS", "notes": ["n" * 100] * (4 * RESERVE_BYTES // 100)}}
    path = rec.finish("PASS", "all checks passed", big)
    r = read_run(path)
    assert len(r.events) == 50
    assert (r.verdict["verdict"], r.verdict["cause"], r.verdict["checks"]) == ("UNKNOWN", "disk-full", {})
    assert r.verdict["judged_verdict"] == "PASS"


def test_no_room_even_for_the_verdict_is_one_clear_error_and_no_visible_record(small_fs):
    # inodes, not blocks, run out: the reserve's inode is released at finish and takes metadata.json,
    # verdict.json finds none (ENOSPC from the kernel either way)
    fs = small_fs("1m", "nr_inodes=8")
    runs = fs / "runs"
    rec = RunRecorder(runs, "network.partition")
    rec.emit("phase", name="cluster.ready")
    n = 0
    while True:
        try:
            (fs / f"inode-{n}").touch()
            n += 1
        except OSError as e:
            assert e.errno == errno.ENOSPC
            break
    with pytest.raises(RecordWriteError) as ei:
        rec.finish("PASS", "all checks passed")
    e = ei.value
    assert isinstance(e, HarnessError) and e.exit_code == 5 and e.cause == "disk-full"
    assert str(e) == f"cannot write the run record under {runs}: No space left on device"
    assert "\n" not in str(e) and e.os_error.errno == errno.ENOSPC
    assert _visible(runs) == [] and list_runs(runs) == []
    # the partial record is kept (hidden) for whoever wants to look
    (tmp,) = [p for p in runs.iterdir() if p.name.startswith(".tmp-")]
    assert (tmp / "events.jsonl").read_text().count("\n") == 1


def test_a_full_disk_at_the_start_is_one_clear_error(small_fs):
    fs = small_fs("1m")
    runs = fs / "runs"
    runs.mkdir()
    fill(fs)
    with pytest.raises(RecordWriteError, match=rf"^cannot write the run record under {runs}: No space left on device$"):
        RunRecorder(runs, "acks.all")
    assert _visible(runs) == []


def test_the_with_block_publishes_an_exception_as_unknown_with_its_cause(small_fs):
    fs = small_fs("1m")
    runs = fs / "runs"
    with pytest.raises(RuntimeError):
        with RunRecorder(runs, "a.b"):
            raise RuntimeError("boom")
    with pytest.raises(KeyboardInterrupt):
        with RunRecorder(runs, "a.c"):
            raise KeyboardInterrupt
    got = {json.loads((p / "metadata.json").read_text())["scenario"]: read_run(p).verdict for p in list_runs(runs)}
    assert (got["a.b"]["verdict"], got["a.b"]["cause"]) == ("UNKNOWN", "harness-crash")
    assert (got["a.c"]["verdict"], got["a.c"]["cause"]) == ("UNKNOWN", "aborted")
    # and when the disk is full by then, the exception is still the one the caller sees
    rec_runs = fs / "runs2"
    with pytest.raises(RuntimeError, match="boom2"):
        with RunRecorder(rec_runs, "a.d") as rec:
            fill(fs)
            _events_until_error(rec)
            raise RuntimeError("boom2")
    (p,) = list_runs(rec_runs)
    v = read_run(p).verdict
    assert (v["verdict"], v["cause"]) == ("UNKNOWN", "disk-full")
