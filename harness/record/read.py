"""Reading and validating a run record (docs/run-record.md): the one reader of its three files.

:func:`read_run` reads a record directory (``check``, ``certify``, the suites);
:func:`load_object` and :func:`validate` check one ``metadata.json`` / ``verdict.json`` given as bytes
(the report, which reads many records through Spark or a store). Both apply the same rules: the
schema version, the verdict's value, the JSON types of the fields readers use. Older records are
brought to the current shape in one place, :func:`upgrade`, when read.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from harness.record import facts
from harness.record.events import FAULT_START
from harness.record.verdicts import VERDICTS

SCHEMA_VERSION = 1


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
        yield from parse_event_lines(fh, path)


def parse_event_lines(lines, path) -> Iterator[dict]:
    """The events of ``lines`` (of ``path``'s events.jsonl, named in errors)."""
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            ev = json.loads(line)
        except json.JSONDecodeError as e:
            raise RecordError(f"{path}:{n}: not valid JSON ({e})") from None
        if not isinstance(ev, dict) or "type" not in ev or "t" not in ev:
            raise RecordError(f"{path}:{n}: event without 'type' and 't'")
        yield ev


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
META_TYPES: dict[str, tuple[type, ...]] = {
    **dict.fromkeys(("run_id", "suite", "scenario", "harness_version", "git_sha", "kafka_version", "broker_image",
                     "distribution", "profile", "started_at", "replay_of"), _SCALAR),
    "seed": (int, str), "topics": (list,), "schedule": (list,), "workload": (dict,), "broker_config": (dict,),
}
VERDICT_TYPES: dict[str, tuple[type, ...]] = {"reason": _SCALAR, "cause": (str,), "checks": (dict,),
                                              "coverage": (dict,)}
_TYPE_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "a boolean", list: "a list",
               dict: "an object"}


def _json_type(v: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "an integer",
            float: "a number"}.get(type(v), type(v).__name__)


def field_errors(name: str, obj: dict, types: dict[str, tuple[type, ...]]) -> list[str]:
    """``"<file>: field '<key>' is <type>, expected <types>"`` for every read field of the wrong type."""
    out = []
    for key, ok in types.items():
        v = obj.get(key)
        if v is None:
            continue
        if isinstance(v, bool) and bool not in ok or not isinstance(v, ok):
            want = " or ".join(dict.fromkeys(_TYPE_NAMES[t] for t in ok))
            out.append(f"{name}: field '{key}' is {_json_type(v)}, expected {want}")
    return out


def load_object(name: str, raw: bytes | None) -> tuple[dict | None, str | None]:
    """``(object, None)`` from the bytes of ``metadata.json`` / ``verdict.json`` (``name``), or
    ``(None, why)`` when missing, not JSON, not an object or of another schema version."""
    if raw is None:
        return None, f"{name}: missing"
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        return None, f"{name}: not valid JSON ({e.__class__.__name__}: {str(e)[:80]})"
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
        errors += field_errors("metadata.json", meta, META_TYPES)
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
def read_run(path: str | os.PathLike, with_events: bool = True) -> RunRecord:
    """Read and validate one run record, :func:`upgrade`\ d; raises RecordError with a message naming the file."""
    p = Path(path)
    if not p.is_dir():
        raise RecordError(f"{p}: not a run record directory")
    meta = load_json_object(p / "metadata.json")
    verdict = load_json_object(p / "verdict.json")
    for name, obj in (("metadata.json", meta), ("verdict.json", verdict)):
        err = schema_error(str(p / name), obj)
        if err:
            raise RecordError(err)
    err = verdict_error(str(p / "verdict.json"), verdict, repr(VERDICTS))
    if err:
        raise RecordError(err)
    if with_events and not (p / "events.jsonl").exists():
        raise RecordError(f"{p / 'events.jsonl'}: missing")
    events = list(iter_events(p / "events.jsonl")) if with_events else []
    meta, events = upgrade(meta, events)
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
