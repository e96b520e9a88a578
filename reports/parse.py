"""Validate and flatten one run's metadata.json + verdict.json into a row of the ``runs`` table.

Pure Python (no Spark): the Spark job calls :func:`parse_run` on executors, one call per run
directory. A record that cannot be used yields a row whose ``skip_reason`` names the file and
the problem; it never raises. The verdict checkers are written by other parts of the harness,
so check lookups are defensive: a missing check gives ``None``, never an error.
"""

from __future__ import annotations

import re
from typing import Any

from pyspark.sql import types as T

from harness.record.facts import acks_label, as_text, features, features_label, features_requested, run_config
from harness.record.read import load_object, validate
from harness.record.verdicts import UNKNOWN, as_int, check_count, failed_checks, find_check

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
    # the run's finalized feature levels, those asked for starred (harness.record.facts.features_label);
    # null: none recorded (ZooKeeper mode, an older record)
    T.StructField("features", T.StringType()),
])
FIELDS = [f.name for f in PARSED_SCHEMA.fields]
LONG_MIN, LONG_MAX = -(2 ** 63), 2 ** 63 - 1   # Spark's LongType

def _long(name: str, key: str, v: int | None) -> int | None:
    """``v`` if it fits Spark's 64-bit LongType; else ValueError naming the file and the field."""
    if v is not None and not LONG_MIN <= v <= LONG_MAX:
        raise FieldError(f"{name}: field '{key}' = {v} does not fit a 64-bit integer")
    return v


class FieldError(ValueError):
    """A field of a record the report cannot use (the message names the file and the field)."""


_str = as_text


def _dict(v: Any) -> dict:
    return v if isinstance(v, dict) else {}


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
    return parse_run_objects(run_dir, files)[0]


def parse_run_objects(run_dir: str, files: dict[str, bytes]) -> tuple[tuple, dict | None, dict | None]:
    """:func:`parse_run`, and the two JSON objects it read (None when the record is skipped), so that a
    caller reading the record further (:func:`harness.record.read.read_record`) decodes them once."""
    row: dict[str, Any] = dict.fromkeys(FIELDS)
    row["run_dir"] = run_dir
    meta, err_m = load_object("metadata.json", files.get("metadata.json"))
    verdict, err_v = load_object("verdict.json", files.get("verdict.json"))
    errors = [e for e in (err_m, err_v) if e] + validate(meta, verdict)
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
        meta = verdict = None
    return tuple(row[f] for f in FIELDS), meta, verdict


def _fill(row: dict, run_dir: str, meta: dict, verdict: dict) -> None:

    name = run_dir.rstrip("/").rsplit("/", 1)[-1]
    row["run_id"] = _str(meta.get("run_id")) or name
    for k in ("suite", "scenario", "harness_version", "git_sha", "kafka_version", "broker_image", "distribution",
              "profile", "started_at", "replay_of"):
        row[k] = _str(meta.get(k))
    row["suite"] = row["suite"] or "adhoc"
    row["broker"] = row["kafka_version"] or row["broker_image"] or "unknown"
    row["seed"] = _long("metadata.json", "seed", as_int(meta.get("seed")))
    wl = _dict(meta.get("workload"))
    row["acks"] = acks_label(wl.get("acks"))
    # Kafka's defaults when the run did not override them.
    row["min_isr"] = _str(run_config(meta, "min.insync.replicas")) or "1"
    row["unclean"] = (_str(run_config(meta, "unclean.leader.election.enable")) or "false").lower()
    row["idempotence"] = _str(wl.get("enable_idempotence"))
    row["date"] = _date(row["started_at"], row["run_id"])
    kinds = sorted({str(s["fault"]) for s in meta.get("schedule") or [] if isinstance(s, dict) and s.get("fault")})
    row["schedule_fault_kinds"] = kinds
    row["features"] = features_label(features(meta), features_requested(meta))

    fill_verdict(row, verdict)


def fill_verdict(row: dict, verdict: dict) -> None:
    """The verdict columns of ``row`` (verdict, reason, cause, failed checks, durability counts,
    conformance) from a verdict.json object, the stored one or one the checkers just re-derived
    (:mod:`reports.outcome`); FieldError when a count does not fit 64 bits."""
    checks = _dict(verdict.get("checks"))
    row["verdict"] = verdict["verdict"]
    row["reason"] = _str(verdict.get("reason"))
    # Why an UNKNOWN run was undecided (harness/record/verdicts.py CAUSES); older records have none.
    row["cause"] = _str(verdict.get("cause")) if row["verdict"] == UNKNOWN else None
    # The run's coverage fell short (UNKNOWN, cause workload): it exercised less than it claims.
    row["coverage_short"] = row["verdict"] == UNKNOWN and row["cause"] == "workload"
    row["failed_checks"] = failed_checks(checks)
    for k in ("lost", "duplicates", "inconsistent_offsets"):
        row[k] = _long("verdict.json", f"checks.{k}.count", check_count(checks, k))
    # The durability checker counts losses its configuration permits (e.g. acks=1) as ``allowed``.
    lost_check = find_check(checks, "lost")
    if row["lost"] is not None:
        row["lost_allowed"] = min(as_int(lost_check.get("allowed")) or 0, row["lost"])
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
