"""The run record: one directory per run (see docs/run-record.md).

Writing is atomic: a record is assembled under ``<runs>/.tmp-<id>/`` and renamed to
``<runs>/<id>/`` only once ``verdict.json`` is written, so no reader ever sees a half-written
record. Readers ignore directories whose names start with a dot.

Write errors (ENOSPC, EIO, a read-only remount, ...) never crash a run half-way: the recorder
remembers the first one (:attr:`RunRecorder.write_error`), keeps ``events.jsonl`` made of whole
lines only (a chunk that did not fit is cut off again), and :meth:`RunRecorder.finish` publishes
what it can as ``UNKNOWN`` with cause ``disk-full`` (a FAIL stays FAIL: data loss found in the
complete part is never UNKNOWN). A small reserve file taken when the run starts is released before
``metadata.json`` and ``verdict.json`` are written, so a disk that filled during the run still takes
them. When even that fails, :class:`RecordWriteError` says so in one line and the partial record
stays under ``.tmp-<id>``, invisible to readers.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import threading
import time
from pathlib import Path
from typing import Any, Callable

from harness.errors import EnvironmentFailure, HarnessError
from harness.record.events import PHASE, PHASE_ABORTED
from harness.record.read import SCHEMA_VERSION, RecordError, file_digests, iter_events, parse_event_lines
from harness.record.verdicts import FAIL, UNKNOWN, VERDICTS, WRITE_CAUSE
RESERVE_BYTES = 64 * 1024          # released at finish so metadata.json + verdict.json still fit
FLUSH_BYTES = 8 * 1024             # events reach the file in chunks of about this size (as a buffered file did)


class RecordWriteError(EnvironmentFailure):
    """The run record could not be written at all (no space left, I/O error, read-only file system).

    ``str(e)`` is one line for a person; ``path`` is the directory that could not be written,
    ``os_error`` the underlying :class:`OSError`. Exit code 5 (an environment error)."""

    cause = WRITE_CAUSE

    def __init__(self, path: Path, os_error: OSError, what: str = "the run record"):
        self.path = Path(path)
        self.os_error = os_error
        why = os_error.strerror or str(os_error) or os_error.__class__.__name__
        super().__init__(f"cannot write {what} under {path}: {why}")


def describe_os_error(e: OSError) -> str:
    return e.strerror or str(e) or e.__class__.__name__


def new_run_id(scenario: str) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in scenario)[:80]
    return f"{stamp}-{safe}-{secrets.token_hex(3)}"


def file_sha256(path: Path) -> str | None:
    """The SHA-256 of a file's bytes (hex), None when it cannot be read."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    except OSError:
        return None
    return h.hexdigest()


def evidence(record_dir: Path, harness_version: str | None) -> dict:
    """verdict.json ``evidence``: what the verdict judged (the SHA-256 of metadata.json and events.jsonl,
    :func:`harness.record.read.file_digests`) and the harness version that judged it."""
    return {**file_digests(record_dir), "harness_version": harness_version}


def _write_json_atomic(path: Path, obj: Any) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(obj, fh, indent=2, sort_keys=True, default=str)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)      # a half-written file must not keep the blocks a smaller retry needs
        except OSError:
            pass
        raise


class RunRecorder:
    """Collects events for one run and publishes the record atomically on ``finish``.

    Thread-safe: the observer, workload threads and nemesis all call :meth:`emit`.
    """

    def __init__(self, runs_dir: str | os.PathLike, scenario: str, metadata: dict | None = None,
                 run_id: str | None = None, on_open: Callable[[Path], None] | None = None):
        """``on_open(tmp_dir)`` is called once the unpublished directory exists (the runner registers it
        with :func:`harness.cluster.owner.mark_record_dir`, so the next command reaps it if this process dies)."""
        self.runs_dir = Path(runs_dir)
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        self.run_id = run_id or new_run_id(scenario)
        self.tmp_dir = self.runs_dir / f".tmp-{self.run_id}"
        self.final_dir = self.runs_dir / self.run_id
        if self.final_dir.exists():
            raise RecordError(f"run record {self.final_dir} already exists")
        try:
            self.tmp_dir.mkdir()
            if on_open is not None:
                on_open(self.tmp_dir)
            self._events = open(self.tmp_dir / "events.jsonl", "wb", buffering=0)
            self._reserve_path = self.tmp_dir / ".reserve"
            with open(self._reserve_path, "wb") as fh:   # real blocks (not a sparse file), released at finish
                fh.write(b"\0" * RESERVE_BYTES)
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as e:
            raise RecordWriteError(self.runs_dir, e) from e
        self._lock = threading.Lock()
        self._seq = 0
        self._t0 = time.monotonic()
        self._buf: list[bytes] = []        # whole event lines not yet written to the file
        self._buf_bytes = 0
        self._size = 0                     # bytes of whole lines in events.jsonl
        self.write_error: OSError | None = None   # the first write error; later events are dropped
        self.dropped_events = 0
        self.metadata: dict = {
            "schema_version": SCHEMA_VERSION,
            "run_id": self.run_id,
            "scenario": scenario,
            "started_at": _iso_now(),
            "ended_at": None,
        }
        if metadata:
            self.metadata.update(metadata)
        self._finished = False

    # -- events ---------------------------------------------------------------------------
    def now(self) -> float:
        return time.monotonic() - self._t0

    def emit(self, type_: str, **fields: Any) -> dict:
        with self._lock:
            if self._finished:
                return {}
            ev = {"seq": self._seq, "t": round(self.now(), 6), "wall": round(time.time(), 6), "type": type_}
            ev.update(fields)
            self._seq += 1
            if self.write_error is not None:
                self.dropped_events += 1
                return ev
            line = (json.dumps(ev, separators=(",", ":"), default=str) + "\n").encode("utf-8")
            self._buf.append(line)
            self._buf_bytes += len(line)
            if self._buf_bytes >= FLUSH_BYTES:
                self._flush_locked()
            return ev

    def _flush_locked(self) -> None:
        """Write the buffered lines; on an OSError cut the file back to whole lines and remember it."""
        if not self._buf or self.write_error is not None:
            return
        data = b"".join(self._buf)
        n_lines = len(self._buf)
        self._buf, self._buf_bytes = [], 0
        view, done = memoryview(data), 0
        try:
            while done < len(data):
                done += self._events.write(view[done:])
        except OSError as e:
            self.write_error = e
            self.dropped_events += n_lines
            try:   # a partial line would make the whole record unreadable; shrinking needs no space
                os.ftruncate(self._events.fileno(), self._size)
                os.lseek(self._events.fileno(), self._size, os.SEEK_SET)
            except OSError:
                pass
            return
        self._size += len(data)

    def phase(self, name: str, **fields: Any) -> dict:
        return self.emit(PHASE, name=name, **fields)

    def read_events(self) -> list[dict]:
        """Every event emitted so far, read back from the (unpublished) events file: the whole lines
        written by the time of the call (other threads go on writing while it reads; a line being
        written then would be cut in the middle)."""
        with self._lock:
            limit = None
            if not self._finished:
                self._flush_locked()
                limit = self._size
            path = self._published_dir() / "events.jsonl"
        if limit is None:
            with open(path, "rb") as fh:
                return list(parse_event_lines(fh, path, strict=False))
        with open(path, "rb") as fh:
            data = fh.read(limit)
        return list(parse_event_lines(data.splitlines(keepends=True), path, strict=False))

    def _published_dir(self) -> Path:
        return self.final_dir if self._finished and self.final_dir.is_dir() else self.tmp_dir

    def update_metadata(self, **fields: Any) -> None:
        with self._lock:
            self.metadata.update(fields)

    def write_artifact(self, relpath: str, data: bytes) -> None:
        """A file of evidence in the run record (e.g. ``metadata_log/<segment>``), before :meth:`finish`.
        A write error is kept like an event's (:attr:`write_error`), not raised: evidence is optional."""
        rel = Path(relpath)
        if rel.is_absolute() or ".." in rel.parts:
            raise ValueError(f"artifact path must stay inside the run record, got {relpath!r}")
        with self._lock:
            if self._finished:
                raise RecordError("the run record is already finished")
            try:
                dest = self.tmp_dir / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(data)
            except OSError as e:
                self.write_error = self.write_error or e

    # -- publishing -----------------------------------------------------------------------
    def finish(self, verdict: str, reason: str, checks: dict | None = None,
               stats: dict | None = None, cause: str | None = None, extra: dict | None = None) -> Path:
        """Write metadata and verdict, then publish the record with one rename.

        ``cause``: why an UNKNOWN run was undecided (harness/record/verdicts.py ``CAUSES``); None for
        PASS and FAIL. ``extra``: more top-level verdict.json sections (e.g. ``coverage``).

        After a write error (:attr:`write_error`) the record is published as UNKNOWN with cause
        ``disk-full`` (a FAIL stays FAIL), ``record_write_error`` in verdict.json and metadata.json;
        if the full verdict does not fit, a minimal one is written. Raises :class:`RecordWriteError`
        when not even that can be written or the rename fails (the partial record stays in
        ``.tmp-<id>``)."""
        if verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, not {verdict!r}")
        with self._lock:
            if self._finished:
                return self.final_dir
            self._finished = True
            self._flush_locked()
            try:
                os.fsync(self._events.fileno())
            except OSError as e:
                self.write_error = self.write_error or e
            try:
                self._events.close()
            except OSError as e:
                self.write_error = self.write_error or e
            try:
                os.unlink(self._reserve_path)   # give its blocks to metadata.json and verdict.json
            except OSError:
                pass
            self.metadata["ended_at"] = _iso_now()
            body = {"schema_version": SCHEMA_VERSION, "verdict": verdict, "reason": reason, "cause": cause,
                    "checks": checks or {}, "stats": stats or {}, **(extra or {})}
            if self.write_error is not None:
                body, self.metadata["record_write_error"] = self._write_error_verdict(body)
            try:
                self._write_pair(body)
            except OSError as e:
                if self.write_error is None:
                    self.write_error = e
                    body, self.metadata["record_write_error"] = self._write_error_verdict(body)
                try:   # what fits: the verdict without checks and stats
                    self._write_pair({k: v for k, v in body.items() if k not in ("checks", "stats", "coverage")}
                                     | {"checks": {}, "stats": {}})
                except OSError as e2:
                    raise RecordWriteError(self.runs_dir, e2) from e2
            try:
                os.replace(self.tmp_dir, self.final_dir)
                _fsync_dir(self.runs_dir)
            except OSError as e:
                raise RecordWriteError(self.runs_dir, e) from e
        return self.final_dir

    def _write_error_verdict(self, body: dict) -> tuple[dict, dict]:
        """verdict.json after a write error: UNKNOWN(disk-full) unless the complete part showed a FAIL."""
        err = self.write_error
        info = {"error": describe_os_error(err), "errno": err.errno, "events_written": self._seq - self.dropped_events,
                "events_dropped": self.dropped_events}
        line = (f"the run record could not be written ({info['error']}); events.jsonl holds the first "
                f"{info['events_written']} of {self._seq} events")
        body = dict(body, record_write_error=info)
        if body["verdict"] == FAIL:
            body["reason"] = f"{body['reason']} ({line})"
        else:
            body.update(verdict=UNKNOWN, cause=WRITE_CAUSE, reason=line,
                        judged_verdict=body["verdict"], judged_reason=body["reason"])
        return body, info

    def _write_pair(self, verdict_body: dict) -> None:
        _write_json_atomic(self.tmp_dir / "metadata.json", self.metadata)
        verdict_body = {**verdict_body, "evidence": evidence(self.tmp_dir, self.metadata.get("harness_version"))}
        _write_json_atomic(self.tmp_dir / "verdict.json", verdict_body)

    def __enter__(self) -> "RunRecorder":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if not self._finished:
            aborted = exc_type is not None and issubclass(exc_type, (KeyboardInterrupt, SystemExit))
            why = "aborted" if aborted else "harness error"
            self.emit(PHASE, name=PHASE_ABORTED, error=repr(exc) if exc else None)
            cause = "aborted" if aborted else "harness-crash"
            try:
                self.finish(UNKNOWN, f"{why}: {exc!r}" if exc else why, cause=cause)
            except RecordWriteError as e:
                if exc is None:
                    raise
                exc.add_note(f"kafka-chaos: {e}")   # the caller still sees the exception that ended the run


def _fsync_dir(path: Path) -> None:
    """Make a rename in ``path`` durable (best effort: not every file system supports it)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _iso_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


