"""Validate and flatten one run's metadata.json + verdict.json into a row of the ``runs`` table.

Pure Python (no Spark): the Spark job calls :func:`parse_run` on executors, one call per run
directory. A record that cannot be used yields a row whose ``skip_reason`` names the file and
the problem; it never raises. The verdict checkers are written by other parts of the harness,
so check lookups are defensive: a missing check gives ``None``, never an error.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pyspark.sql import types as T

SCHEMA_VERSION = 1
VERDICTS = ("PASS", "FAIL", "UNKNOWN")

# Names the durability checker may use for each count we aggregate (first match wins).
CHECK_ALIASES = {
    "lost": ("lost", "lost_acknowledged_writes", "lost_writes"),
    "duplicates": ("duplicates", "duplicated"),
    "inconsistent_offsets": ("inconsistent_offsets",),
}
# Where the checks may sit inside verdict.json ``checks``.
CHECK_PARENTS = ("durability", "client", "workload")

PARSED_SCHEMA = T.StructType([
    T.StructField("run_dir", T.StringType(), False),
    T.StructField("skip_reason", T.StringType()),
    T.StructField("run_id", T.StringType()),
    T.StructField("suite", T.StringType()),
    T.StructField("scenario", T.StringType()),
    T.StructField("harness_version", T.StringType()),
    T.StructField("git_sha", T.StringType()),
    T.StructField("kafka_version", T.StringType()),
    T.StructField("broker_image", T.StringType()),
    T.StructField("broker", T.StringType()),
    T.StructField("distribution", T.StringType()),
    T.StructField("profile", T.StringType()),
    T.StructField("seed", T.LongType()),
    T.StructField("acks", T.StringType()),
    T.StructField("min_isr", T.StringType()),
    T.StructField("unclean", T.StringType()),
    T.StructField("idempotence", T.StringType()),
    T.StructField("started_at", T.StringType()),
    T.StructField("date", T.StringType()),
    T.StructField("replay_of", T.StringType()),
    T.StructField("schedule_fault_kinds", T.ArrayType(T.StringType())),
    T.StructField("verdict", T.StringType()),
    T.StructField("reason", T.StringType()),
    T.StructField("cause", T.StringType()),
    T.StructField("coverage_short", T.BooleanType()),
    T.StructField("failed_checks", T.ArrayType(T.StringType())),
    T.StructField("lost", T.LongType()),
    T.StructField("lost_allowed", T.LongType()),
    T.StructField("duplicates", T.LongType()),
    T.StructField("inconsistent_offsets", T.LongType()),
    T.StructField("conformance_checked", T.BooleanType()),
    T.StructField("divergence_rules", T.ArrayType(T.StringType())),
])
FIELDS = [f.name for f in PARSED_SCHEMA.fields]
LONG_MIN, LONG_MAX = -(2 ** 63), 2 ** 63 - 1   # Spark's LongType

# Fields of metadata.json / verdict.json the report reads, and the JSON types each may have (None is
# always allowed). A record whose field has another type is skipped, naming the file and the field.
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


def _long(name: str, key: str, v: int | None) -> int | None:
    """``v`` if it fits Spark's 64-bit LongType; else ValueError naming the file and the field."""
    if v is not None and not LONG_MIN <= v <= LONG_MAX:
        raise FieldError(f"{name}: field '{key}' = {v} does not fit a 64-bit integer")
    return v


class FieldError(ValueError):
    """A field of a record the report cannot use (the message names the file and the field)."""


def _load(name: str, raw: bytes | None) -> tuple[dict | None, str | None]:
    if raw is None:
        return None, f"{name}: missing"
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        return None, f"{name}: not valid JSON ({e.__class__.__name__}: {str(e)[:80]})"
    if not isinstance(obj, dict):
        return None, f"{name}: expected a JSON object, found {type(obj).__name__}"
    if obj.get("schema_version") != SCHEMA_VERSION:
        return None, f"{name}: schema_version {obj.get('schema_version')!r} not supported (expected {SCHEMA_VERSION})"
    return obj, None


def _str(v: Any) -> str | None:
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _int(v: Any) -> int | None:
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and re.fullmatch(r"-?\d+", v.strip()):
        return int(v)
    return None


def _dict(v: Any) -> dict:
    return v if isinstance(v, dict) else {}


def find_check(checks: dict, name: str) -> dict | None:
    """The check ``name`` (or an alias) at the top level of ``checks`` or under a parent check."""
    for alias in CHECK_ALIASES.get(name, (name,)):
        if isinstance(checks.get(alias), dict):
            return checks[alias]
        for parent in CHECK_PARENTS:
            p = _dict(checks.get(parent))
            if isinstance(p.get(alias), dict):
                return p[alias]
            sub = _dict(p.get("checks"))
            if isinstance(sub.get(alias), dict):
                return sub[alias]
    return None


def check_count(checks: dict, name: str) -> int | None:
    """``count`` of a check; falls back to the length of a list it carries; None if absent."""
    c = find_check(checks, name)
    if c is None:
        return None
    n = _int(c.get("count"))
    if n is not None:
        return n
    for key in ("values", "items", "examples", "offsets"):
        if isinstance(c.get(key), list):
            return len(c[key])
    return None


def failed_checks(checks: dict) -> list[str]:
    """Names of checks (top level and one level down) whose verdict is FAIL."""
    out = []
    for name, c in sorted(checks.items()):
        if not isinstance(c, dict):
            continue
        if c.get("verdict") == "FAIL":
            out.append(name)
        for sub, sc in sorted(c.items()):
            if isinstance(sc, dict) and sc.get("verdict") == "FAIL":
                out.append(f"{name}.{sub}")
    return out


def normalise_acks(v: Any) -> str | None:
    s = _str(v)
    if s is None:
        return None
    return "all" if s.strip().lower() in ("all", "-1") else s.strip()


def _topic_or_broker(meta: dict, key: str) -> str | None:
    for topic in meta.get("topics") or []:
        if isinstance(topic, dict) and key in _dict(topic.get("config")):
            return _str(topic["config"][key])
    return _str(_dict(meta.get("broker_config")).get(key))


def _date(started_at: str | None, run_id: str) -> str | None:
    for s in (started_at or "", run_id):
        m = re.match(r"(\d{4})-?(\d{2})-?(\d{2})", s)
        if m:
            return "-".join(m.groups())
    return None


def parse_run(run_dir: str, files: dict[str, bytes]) -> tuple:
    """Parse one run directory's ``metadata.json`` and ``verdict.json`` contents.

    Returns a tuple in :data:`PARSED_SCHEMA` order; ``skip_reason`` is set when unusable (a missing
    file, invalid JSON, a field of the wrong type or out of range, ...). Never raises.
    """
    row: dict[str, Any] = dict.fromkeys(FIELDS)
    row["run_dir"] = run_dir
    meta, err_m = _load("metadata.json", files.get("metadata.json"))
    verdict, err_v = _load("verdict.json", files.get("verdict.json"))
    errors = [e for e in (err_m, err_v) if e]
    if verdict is not None and verdict.get("verdict") not in VERDICTS:
        errors.append(f"verdict.json: verdict {verdict.get('verdict')!r} is not one of {', '.join(VERDICTS)}")
    if meta is not None and not meta.get("scenario"):
        errors.append("metadata.json: no scenario")
    if meta is not None:
        errors += field_errors("metadata.json", meta, META_TYPES)
    if verdict is not None:
        errors += field_errors("verdict.json", verdict, VERDICT_TYPES)
    if not errors:
        try:
            _fill(row, run_dir, meta, verdict)
        except FieldError as e:
            errors.append(str(e))
        except Exception as e:  # noqa: BLE001 - a shape no check above foresaw: skip the record, name it
            errors.append(f"metadata.json/verdict.json: cannot be read ({e.__class__.__name__}: {str(e)[:80]})")
    if errors:
        row = dict.fromkeys(FIELDS, None)
        row["run_dir"] = run_dir
        row["skip_reason"] = "; ".join(errors)
    return tuple(row[f] for f in FIELDS)


def _fill(row: dict, run_dir: str, meta: dict, verdict: dict) -> None:

    name = run_dir.rstrip("/").rsplit("/", 1)[-1]
    row["run_id"] = _str(meta.get("run_id")) or name
    for k in ("suite", "scenario", "harness_version", "git_sha", "kafka_version", "broker_image", "distribution",
              "profile", "started_at", "replay_of"):
        row[k] = _str(meta.get(k))
    row["suite"] = row["suite"] or "adhoc"
    row["broker"] = row["kafka_version"] or row["broker_image"] or "unknown"
    row["seed"] = _long("metadata.json", "seed", _int(meta.get("seed")))
    wl = _dict(meta.get("workload"))
    row["acks"] = normalise_acks(wl.get("acks"))
    # Kafka's defaults when the run did not override them.
    row["min_isr"] = _topic_or_broker(meta, "min.insync.replicas") or "1"
    row["unclean"] = (_topic_or_broker(meta, "unclean.leader.election.enable") or "false").lower()
    row["idempotence"] = _str(wl.get("enable_idempotence"))
    row["date"] = _date(row["started_at"], row["run_id"])
    kinds = sorted({str(s["fault"]) for s in meta.get("schedule") or [] if isinstance(s, dict) and s.get("fault")})
    row["schedule_fault_kinds"] = kinds

    checks = _dict(verdict.get("checks"))
    row["verdict"] = verdict["verdict"]
    row["reason"] = _str(verdict.get("reason"))
    # Why an UNKNOWN run was undecided (harness/checkers/verdict.py CAUSES); older records have none.
    row["cause"] = _str(verdict.get("cause")) if row["verdict"] == "UNKNOWN" else None
    # The run's coverage fell short (UNKNOWN, cause workload): it exercised less than it claims.
    row["coverage_short"] = row["verdict"] == "UNKNOWN" and row["cause"] == "workload"
    row["failed_checks"] = failed_checks(checks)
    for k in ("lost", "duplicates", "inconsistent_offsets"):
        row[k] = _long("verdict.json", f"checks.{k}.count", check_count(checks, k))
    # The durability checker counts losses its configuration permits (e.g. acks=1) as ``allowed``.
    lost_check = find_check(checks, "lost")
    if row["lost"] is not None:
        row["lost_allowed"] = min(_int(lost_check.get("allowed")) or 0, row["lost"])
    conf = checks.get("conformance")
    if isinstance(conf, dict) and isinstance(conf.get("divergences"), list):
        # reference/checker.py: determinism divergences and hard-invariant violations, each with a rule id
        row["conformance_checked"] = True
        items = conf["divergences"] + (conf.get("invariant_violations") or [])
        row["divergence_rules"] = [(_str(d.get("rule")) if isinstance(d, dict) else None) or "unknown"
                                   for d in items]
        row["profile"] = row["profile"] or _str(conf.get("profile"))
    else:
        row["conformance_checked"] = False
        row["divergence_rules"] = []
