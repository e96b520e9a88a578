"""Reading and validating a run record (docs/run-record.md): the one reader of its three files.

:func:`read_run` reads a record directory (``check``, ``certify``, the suites);
:func:`load_object` and :func:`validate` check one ``metadata.json`` / ``verdict.json`` given as bytes
(the report, which reads many records through Spark or a store). Both apply the same rules: the
schema version, the verdict's value, the JSON types of the fields readers use. Older records are
brought to the current shape in one place, :func:`upgrade`, when read.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import stat
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path
from typing import Any, Iterator

from harness.record import facts
from harness.record.events import CLIENT, FAULT_START, TXN
from harness.record.schema import event_error, json_type, metadata_errors
from harness.record.verdicts import VERDICTS

SCHEMA_VERSION = 1

# Bounds on what is read (a record is evidence handed over by others: read nothing unbounded).
MAX_EVENTS_BYTES = 4 << 30        # events.jsonl (the largest real record so far: 18 MB)
MAX_OBJECT_BYTES = 64 << 20       # metadata.json, verdict.json
MAX_LINE_BYTES = 16 << 20         # one event
MAX_DEPTH = 64                    # nesting of objects and lists in one JSON value
T_TOLERANCE_S = 0.001             # ``t`` (monotonic clock) may not go back more than this
WALL_TOLERANCE_S = 2.0            # ``wall`` (Unix time; the host clock may be stepped) likewise


class RecordError(ValueError):
    """A run record is missing, malformed, or of an unsupported schema version."""


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


# -- one file ---------------------------------------------------------------------------------------
def open_regular(path: str | os.PathLike, limit: int):
    """``path`` opened for binary reading if it is a regular file of at most ``limit`` bytes; RecordError
    naming it otherwise (missing, a directory, a FIFO or a device: never opened for a blocking read)."""
    path = Path(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise RecordError(f"{path}: missing") from None
    except OSError as e:
        raise RecordError(f"{path}: cannot be read ({e.strerror or e})") from None
    if not stat.S_ISREG(st.st_mode):
        raise RecordError(f"{path}: not a regular file")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise RecordError(f"{path}: cannot be read ({e.strerror or e})") from None
    st = os.fstat(fd)                     # what was opened (it may have been replaced since the stat)
    if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
        os.close(fd)
        raise RecordError(f"{path}: not a regular file" if not stat.S_ISREG(st.st_mode)
                          else f"{path}: {st.st_size} bytes, more than the {limit} a record file may have")
    return os.fdopen(fd, "rb")


def _reject_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)    # one decoder: json.loads(..., kw) makes one a call


# a JSON string (to its closing quote, or to the end of a text that never closes it) and one bracket
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', re.S)
_BRACKET = re.compile(r"[\[\]{}]")
_DEPTH_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def _too_deep(text: str) -> bool:
    """Whether a JSON text nests objects / lists deeper than :data:`MAX_DEPTH` (cheap for usual lines:
    only texts with more brackets than that are scanned: their strings dropped, the brackets left counted)."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return False
    # without a backslash no quote is escaped: the text between quotes alternates outside / inside strings
    outside = "".join(text.split('"')[::2]) if "\\" not in text else _STRING.sub("", text)
    return max(accumulate(map(_DEPTH_STEP.__getitem__, _BRACKET.findall(outside))), default=0) > MAX_DEPTH


def loads_bounded(raw: bytes, where: str) -> Any:
    """One JSON value from ``raw`` (of ``where``): UTF-8, at most :data:`MAX_DEPTH` deep, no NaN/Infinity;
    RecordError naming ``where`` otherwise."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RecordError(f"{where}: not valid JSON: not UTF-8 (byte {e.start})") from None
    if _too_deep(text):
        raise RecordError(f"{where}: nested deeper than {MAX_DEPTH} levels")
    try:
        return _DECODER.decode(text)
    except json.JSONDecodeError as e:
        raise RecordError(f"{where}: not valid JSON ({e})") from None
    except (ValueError, RecursionError) as e:     # NaN / Infinity; a nesting the depth scan missed
        raise RecordError(f"{where}: not valid JSON ({e.__class__.__name__}: {str(e)[:80]})") from None


def load_json_object(path: str | os.PathLike) -> dict:
    """One JSON object file of a run record; RecordError naming the file when missing or malformed."""
    with open_regular(path, MAX_OBJECT_BYTES) as fh:
        raw = fh.read(MAX_OBJECT_BYTES + 1)
    obj = loads_bounded(raw, str(path))
    if not isinstance(obj, dict):
        raise RecordError(f"{path}: expected a JSON object")
    return obj


def iter_events(path: Path) -> Iterator[dict]:
    with open_regular(path, MAX_EVENTS_BYTES) as fh:
        yield from parse_event_lines(fh, path)


def parse_event_lines(lines, path, strict: bool = True) -> Iterator[dict]:
    """The events of ``lines`` (bytes or str, of ``path``'s events.jsonl, named in errors), each checked
    against its type's schema (:mod:`harness.record.schema`) and against the one before it: ``seq``
    strictly increasing, ``t`` and ``wall`` not going back (beyond a small tolerance). Not ``strict``
    (the recorder reading back its own events mid-run): JSON objects with ``type`` and ``t`` only."""
    prev: dict | None = None
    for n, line in enumerate(lines, 1):
        if len(line) > MAX_LINE_BYTES:
            raise RecordError(f"{path}:{n}: a line of {len(line)} bytes, more than {MAX_LINE_BYTES}")
        if isinstance(line, str):
            line = line.encode("utf-8", "surrogatepass")
        if not line.strip():
            continue
        ev = loads_bounded(line, f"{path}:{n}")
        if not isinstance(ev, dict) or "type" not in ev or "t" not in ev:
            raise RecordError(f"{path}:{n}: event without 'type' and 't'")
        if not strict:
            yield ev
            continue
        _check_event(ev, prev, path, n)
        prev = ev
        yield ev


def _check_event(ev: dict, prev: dict | None, path, n: int) -> None:
    """RecordError unless ``ev`` (line ``n``) fits its type's schema and follows ``prev``."""
    err = event_error(ev)
    if err:
        raise RecordError(f"{path}:{n}: {err}")
    if prev is not None:
        if "seq" in ev and "seq" in prev and ev["seq"] <= prev["seq"]:
            raise RecordError(f"{path}:{n}: field 'seq' {ev['seq']} does not follow {prev['seq']} "
                              "(duplicated or reordered lines)")
        if ev["t"] < prev["t"] - T_TOLERANCE_S:
            raise RecordError(f"{path}:{n}: field 't' {ev['t']} goes back from {prev['t']}")
        if "wall" in ev and "wall" in prev and ev["wall"] < prev["wall"] - WALL_TOLERANCE_S:
            raise RecordError(f"{path}:{n}: field 'wall' {ev['wall']} goes back from {prev['wall']}")


def parse_event_bytes(raw: bytes, path) -> list[dict]:
    """:func:`parse_event_lines` (strict) of a whole events.jsonl given as bytes, with the same result and
    the same errors, faster: when every line is small, shallow UTF-8 JSON, the lines are decoded as one
    JSON array (one call into the C decoder instead of one per line, ~2x faster for the report's many
    records); anything else (an error to name) goes line by line."""
    lines = list(io.BytesIO(raw))         # split as a file is read: at b"\n" only, each line with its end
    numbered = [(n, ln) for n, ln in enumerate(lines, 1) if ln.strip()]
    try:
        text = [ln.decode("utf-8") for _, ln in numbered]
    except UnicodeDecodeError:
        text = None
    objs = None
    if text is not None and all(len(t) <= MAX_LINE_BYTES and not _too_deep(t) for t in text):
        try:
            objs = _DECODER.decode("[" + ",".join(text) + "]")
        except (ValueError, RecursionError):
            objs = None
    if objs is None or len(objs) != len(numbered):     # an error, or a line holding two values ("{..},{..}")
        return list(parse_event_lines(lines, path))
    prev = None
    for (n, _), ev in zip(numbered, objs):
        if not isinstance(ev, dict) or "type" not in ev or "t" not in ev:
            raise RecordError(f"{path}:{n}: event without 'type' and 't'")
        _check_event(ev, prev, path, n)
        prev = ev
    return objs


def schema_error(name: str, obj: dict) -> str | None:
    """``"<name>: schema_version ... not supported"`` unless ``obj`` has the current schema version."""
    v = obj.get("schema_version")
    if v != SCHEMA_VERSION:
        return f"{name}: schema_version {v!r} not supported (expected {SCHEMA_VERSION})"
    return None


def verdict_error(name: str, verdict: dict, listed: str = ", ".join(VERDICTS)) -> str | None:
    """``"<name>: verdict ... is not one of ..."`` unless verdict.json's ``verdict`` is a run verdict."""
    if verdict.get("verdict") not in VERDICTS:
        return f"{name}: verdict {verdict.get('verdict')!r} is not one of {listed}"
    return None


# -- the fields readers use, with their JSON types ------------------------------------------------------
# (None is always allowed.) A record whose field has another type is refused, naming the file and the field.
_SCALAR = (str, int, float, bool)
VERDICT_TYPES: dict[str, tuple[type, ...]] = {"reason": _SCALAR, "cause": (str,), "checks": (dict,),
                                              "coverage": (dict,)}
_TYPE_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "a boolean", list: "a list",
               dict: "an object"}


def field_errors(name: str, obj: dict, types: dict[str, tuple[type, ...]]) -> list[str]:
    """``"<file>: field '<key>' is <type>, expected <types>"`` for every read field of the wrong type."""
    out = []
    for key, ok in types.items():
        v = obj.get(key)
        if v is None:
            continue
        if isinstance(v, bool) and bool not in ok or not isinstance(v, ok):
            want = " or ".join(dict.fromkeys(_TYPE_NAMES[t] for t in ok))
            out.append(f"{name}: field '{key}' is {json_type(v)}, expected {want}")
    return out


def load_object(name: str, raw: bytes | None) -> tuple[dict | None, str | None]:
    """``(object, None)`` from the bytes of ``metadata.json`` / ``verdict.json`` (``name``), or
    ``(None, why)`` when missing, not JSON, not an object or of another schema version."""
    if raw is None:
        return None, f"{name}: missing"
    try:
        obj = loads_bounded(raw, name)
    except RecordError as e:
        return None, str(e)
    if not isinstance(obj, dict):
        return None, f"{name}: expected a JSON object, found {type(obj).__name__}"
    err = schema_error(name, obj)
    return (None, err) if err else (obj, None)


def validate(meta: dict | None, verdict: dict | None) -> list[str]:
    """What makes a loaded pair unusable for a reader of its fields (the report): the verdict's value,
    a scenario, and the JSON types of :data:`META_TYPES` / :data:`VERDICT_TYPES`."""
    errors = []
    if verdict is not None:
        err = verdict_error("verdict.json", verdict)
        if err:
            errors.append(err)
    if meta is not None and not meta.get("scenario"):
        errors.append("metadata.json: no scenario")
    if meta is not None:
        errors += metadata_errors("metadata.json", meta)
    if verdict is not None:
        errors += field_errors("verdict.json", verdict, VERDICT_TYPES)
    return errors


# -- older records -------------------------------------------------------------------------------------
def upgrade(metadata: dict, events: list[dict]) -> tuple[dict, list[dict]]:
    """An older record in the current shape, so that no reader needs a branch for it:

    * metadata ``controller_model`` (written since the runner records it; before, inferred by
      :func:`harness.record.facts.controller_model` from the distribution);
    * ``fault.start`` ``node_ids`` (every Kafka node a fault acts on; before, only ``broker_ids``).

    Applied by :func:`read_run` and by the conformance checker (:func:`reference.check_conformance`,
    which also judges events that never were on disk). The input is not changed; events that need
    nothing are shared."""
    if metadata.get("controller_model") not in facts.CONTROLLER_MODELS:
        metadata = {**metadata, "controller_model": facts.controller_model(metadata)}
    if any(e.get("type") == FAULT_START and e.get("node_ids") is None for e in events):
        events = [{**e, "node_ids": e.get("broker_ids") or []}
                  if e.get("type") == FAULT_START and e.get("node_ids") is None else e for e in events]
    return metadata, events


# -- a record directory ---------------------------------------------------------------------------------
_WORKLOAD_EVENTS = (CLIENT, "partition.", TXN, "group.")   # event types only a workload records


def read_run(path: str | os.PathLike, with_events: bool = True) -> RunRecord:
    """Read and validate one run record, :func:`upgrade`\ d; raises RecordError with a message naming the
    file (and the line and field of an event) when any part of it does not fit docs/run-record.md."""
    p = Path(path)
    if not p.is_dir():
        raise RecordError(f"{p}: not a run record directory")
    meta = load_json_object(p / "metadata.json")
    verdict = load_json_object(p / "verdict.json")
    _check_pair(p, meta, verdict)
    events = list(iter_events(p / "events.jsonl")) if with_events else []
    return _finish(p, meta, verdict, events, with_events)


def read_record(run_dir: str, files: dict[str, bytes | None],
                objects: tuple[dict, dict] | None = None) -> RunRecord:
    """:func:`read_run` of a record given as the bytes of its files (``files``: name -> bytes, a missing
    file absent or None), as the report gets them from a listing or from Spark's binary-file reader: the
    same rules, the same messages (naming ``run_dir``'s file, line and field). ``objects``: the metadata
    and verdict objects already decoded from these bytes by :func:`load_object` (the report's
    :func:`reports.parse.parse_run_objects`), not decoded again; they are checked as decoded ones are."""
    p = Path(run_dir)
    objs = []
    for i, name in enumerate(("metadata.json", "verdict.json")):
        raw = files.get(name)
        if raw is None:
            raise RecordError(f"{p / name}: missing")
        if len(raw) > MAX_OBJECT_BYTES:
            raise RecordError(f"{p / name}: {len(raw)} bytes, more than the {MAX_OBJECT_BYTES} a record file may have")
        obj = loads_bounded(raw, str(p / name)) if objects is None else objects[i]
        if not isinstance(obj, dict):
            raise RecordError(f"{p / name}: expected a JSON object")
        objs.append(obj)
    meta, verdict = objs
    _check_pair(p, meta, verdict)
    raw = files.get("events.jsonl")
    if raw is None:
        raise RecordError(f"{p / 'events.jsonl'}: missing")
    if len(raw) > MAX_EVENTS_BYTES:
        raise RecordError(f"{p / 'events.jsonl'}: {len(raw)} bytes, more than the {MAX_EVENTS_BYTES} "
                          "a record file may have")
    events = parse_event_bytes(raw, p / "events.jsonl")
    return _finish(p, meta, verdict, events, True)


def _check_pair(p: Path, meta: dict, verdict: dict) -> None:
    for name, obj in (("metadata.json", meta), ("verdict.json", verdict)):
        err = schema_error(str(p / name), obj)
        if err:
            raise RecordError(err)
    err = verdict_error(str(p / "verdict.json"), verdict, repr(VERDICTS))
    if err:
        raise RecordError(err)
    errors = metadata_errors(str(p / "metadata.json"), meta)
    if errors:
        raise RecordError(errors[0])


def _finish(p: Path, meta: dict, verdict: dict, events: list[dict], with_events: bool) -> RunRecord:
    if with_events and not isinstance(meta.get("workload"), dict):
        client = next((e for e in events if e["type"].startswith(_WORKLOAD_EVENTS)), None)
        if client is not None:
            raise RecordError(f"{p / 'metadata.json'}: field 'workload' is {json_type(meta.get('workload'))}, "
                              f"but events.jsonl holds the workload's events ({client['type']} seq {client['seq']})")
    meta, events = upgrade(meta, events)
    return RunRecord(p, meta, verdict, events)


# -- what a verdict judged: the evidence digests (verdict.json ``evidence``, harness/record/writer.py) ----------
EVIDENCE_FILES = {"metadata_sha256": "metadata.json", "events_sha256": "events.jsonl"}


def sha256(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def digests(files: dict[str, bytes | None]) -> dict[str, str | None]:
    """``{"metadata_sha256", "events_sha256"}`` of a record's files given as bytes (None: missing)."""
    return {k: (sha256(files[name]) if files.get(name) is not None else None) for k, name in EVIDENCE_FILES.items()}


def file_digests(run_dir: str | os.PathLike) -> dict[str, str | None]:
    """:func:`digests` of a record directory's files (read bounded, regular files only; None when unreadable)."""
    out = {}
    for k, name in EVIDENCE_FILES.items():
        try:
            with open_regular(Path(run_dir) / name, MAX_EVENTS_BYTES) as fh:
                h = hashlib.sha256()
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
            out[k] = h.hexdigest()
        except (RecordError, OSError):
            out[k] = None
    return out


def evidence_problems(verdict: dict, actual: dict[str, str | None], version: str) -> list[str]:
    """Why ``verdict`` (a verdict.json) cannot be taken as the judgement of the files whose digests are
    ``actual`` by this harness ``version``: ``[]`` when its ``evidence`` names exactly these digests and
    this version; else one phrase per problem (no evidence, a digest that differs, another version)."""
    ev = verdict.get("evidence")
    if not isinstance(ev, dict):
        return ["verdict.json has no evidence digests (judged before they were recorded)"]
    out = []
    for k, name in EVIDENCE_FILES.items():
        if ev.get(k) != actual.get(k):
            out.append(f"{name} sha256 {str(actual.get(k))[:12]} is not the judged {str(ev.get(k))[:12]}")
    if ev.get("harness_version") != version:
        out.append(f"judged by harness {ev.get('harness_version')}, this is {version}")
    return out


def list_runs(runs_dir: str | os.PathLike) -> list[Path]:
    """Run directories under ``runs_dir`` (recursively, through symlinked directories, each real directory
    once), skipping in-progress ``.tmp-*`` ones and other hidden directories."""
    root = Path(runs_dir)
    out = []
    seen: set[str] = set()
    for top, dirs, files in os.walk(root, followlinks=True):
        real = os.path.realpath(top)
        if real in seen:              # a symlink loop, or a directory reached twice
            dirs[:] = []
            continue
        seen.add(real)
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        if "metadata.json" in files:
            out.append(Path(top))
    return sorted(out)
