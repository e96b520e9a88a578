"""The run record: one directory per run (see docs/run-record.md).

Writing is atomic: a record is assembled under ``<runs>/.tmp-<id>/`` and renamed to
``<runs>/<id>/`` only once ``verdict.json`` is written, so no reader ever sees a half-written
record. Readers ignore directories whose names start with a dot.
"""

from __future__ import annotations

import json
import os
import secrets
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

SCHEMA_VERSION = 1
VERDICTS = ("PASS", "FAIL", "UNKNOWN")


class RecordError(ValueError):
    """A run record is missing, malformed, or of an unsupported schema version."""


def new_run_id(scenario: str) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in scenario)[:80]
    return f"{stamp}-{safe}-{secrets.token_hex(3)}"


def _write_json_atomic(path: Path, obj: Any) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(obj, fh, indent=2, sort_keys=True, default=str)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


class RunRecorder:
    """Collects events for one run and publishes the record atomically on ``finish``.

    Thread-safe: the observer, workload threads and nemesis all call :meth:`emit`.
    """

    def __init__(self, runs_dir: str | os.PathLike, scenario: str, metadata: dict | None = None,
                 run_id: str | None = None):
        self.runs_dir = Path(runs_dir)
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        self.run_id = run_id or new_run_id(scenario)
        self.tmp_dir = self.runs_dir / f".tmp-{self.run_id}"
        self.final_dir = self.runs_dir / self.run_id
        if self.final_dir.exists():
            raise RecordError(f"run record {self.final_dir} already exists")
        self.tmp_dir.mkdir()
        self._lock = threading.Lock()
        self._seq = 0
        self._t0 = time.monotonic()
        self._events = open(self.tmp_dir / "events.jsonl", "w", encoding="utf-8")
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
            self._events.write(json.dumps(ev, separators=(",", ":"), default=str))
            self._events.write("\n")
            return ev

    def phase(self, name: str, **fields: Any) -> dict:
        return self.emit("phase", name=name, **fields)

    def read_events(self) -> list[dict]:
        """Every event emitted so far, read back from the (unpublished) events file."""
        with self._lock:
            if not self._finished:
                self._events.flush()
            path = (self.final_dir if self._finished else self.tmp_dir) / "events.jsonl"
        return list(iter_events(path))

    def update_metadata(self, **fields: Any) -> None:
        with self._lock:
            self.metadata.update(fields)

    # -- publishing -----------------------------------------------------------------------
    def finish(self, verdict: str, reason: str, checks: dict | None = None,
               stats: dict | None = None, cause: str | None = None, extra: dict | None = None) -> Path:
        """Write metadata and verdict, then publish the record with one rename.

        ``cause``: why an UNKNOWN run was undecided (harness/checkers/verdict.py ``CAUSES``); None for
        PASS and FAIL. ``extra``: more top-level verdict.json sections (e.g. ``coverage``)."""
        if verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, not {verdict!r}")
        with self._lock:
            if self._finished:
                return self.final_dir
            self._finished = True
            self._events.flush()
            os.fsync(self._events.fileno())
            self._events.close()
            self.metadata["ended_at"] = _iso_now()
            _write_json_atomic(self.tmp_dir / "metadata.json", self.metadata)
            _write_json_atomic(self.tmp_dir / "verdict.json", {
                "schema_version": SCHEMA_VERSION,
                "verdict": verdict,
                "reason": reason,
                "cause": cause,
                "checks": checks or {},
                "stats": stats or {},
                **(extra or {}),
            })
            os.replace(self.tmp_dir, self.final_dir)
        return self.final_dir

    def __enter__(self) -> "RunRecorder":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if not self._finished:
            why = "aborted" if exc_type in (KeyboardInterrupt, SystemExit) else "harness error"
            self.emit("phase", name="aborted", error=repr(exc) if exc else None)
            self.finish("UNKNOWN", f"{why}: {exc!r}" if exc else why)


def _iso_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# -- reading ----------------------------------------------------------------------------------
@dataclass
class RunRecord:
    path: Path
    metadata: dict
    verdict: dict
    events: list[dict] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        return self.metadata.get("run_id", self.path.name)

    def of_type(self, *types: str) -> list[dict]:
        return [e for e in self.events if e.get("type") in types]


def load_json_object(path: str | os.PathLike) -> dict:
    """One JSON object file of a run record; RecordError naming the file when missing or malformed."""
    path = Path(path)
    try:
        with open(path, encoding="utf-8") as fh:
            obj = json.load(fh)
    except FileNotFoundError:
        raise RecordError(f"{path}: missing") from None
    except json.JSONDecodeError as e:
        raise RecordError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(obj, dict):
        raise RecordError(f"{path}: expected a JSON object")
    return obj


def iter_events(path: Path) -> Iterator[dict]:
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                ev = json.loads(line)
            except json.JSONDecodeError as e:
                raise RecordError(f"{path}:{n}: not valid JSON ({e})") from None
            if not isinstance(ev, dict) or "type" not in ev or "t" not in ev:
                raise RecordError(f"{path}:{n}: event without 'type' and 't'")
            yield ev


def read_run(path: str | os.PathLike, with_events: bool = True) -> RunRecord:
    """Read and validate one run record; raises RecordError with a message naming the file."""
    p = Path(path)
    if not p.is_dir():
        raise RecordError(f"{p}: not a run record directory")
    meta = load_json_object(p / "metadata.json")
    verdict = load_json_object(p / "verdict.json")
    for name, obj in (("metadata.json", meta), ("verdict.json", verdict)):
        v = obj.get("schema_version")
        if v != SCHEMA_VERSION:
            raise RecordError(f"{p / name}: schema_version {v!r} not supported (expected {SCHEMA_VERSION})")
    if verdict.get("verdict") not in VERDICTS:
        raise RecordError(f"{p / 'verdict.json'}: verdict {verdict.get('verdict')!r} is not one of {VERDICTS}")
    if with_events and not (p / "events.jsonl").exists():
        raise RecordError(f"{p / 'events.jsonl'}: missing")
    events = list(iter_events(p / "events.jsonl")) if with_events else []
    return RunRecord(p, meta, verdict, events)


def list_runs(runs_dir: str | os.PathLike) -> list[Path]:
    """Run directories under ``runs_dir`` (recursively), skipping in-progress ``.tmp-*`` ones."""
    root = Path(runs_dir)
    out = []
    for meta in sorted(root.rglob("metadata.json")):
        d = meta.parent
        if any(part.startswith(".") for part in d.relative_to(root).parts):
            continue
        out.append(d)
    return out
