"""The schema of scenario files (docs/scenario-files.md): validate the parsed TOML document, table by
table, into plain values :mod:`harness.scenario.file` turns into a :class:`harness.scenario.scenario.Scenario`.

Pure (no cluster, no Docker). Every error is a :class:`SchemaError` carrying the key path of the
offending value (``("steps", 2, "fault")``) and one line saying what is allowed; the loader adds the
file and line number. Fault names, targets and parameters are checked against the nemesis catalog
(:mod:`harness.nemesis.catalog`, :mod:`harness.nemesis.targets`); a random mix by
:func:`harness.scenario.schedule.parse_mix`; workload keys against the workload config dataclasses.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

from reference.feature_versions import NAMES as FEATURE_NAMES

from harness.errors import HarnessError, ScenarioError
from harness.record.verdicts import CHECK_NAMES
from harness.nemesis.catalog import CATALOG, FaultSpecError, validate_params
from harness.nemesis.targets import TargetError, parse_target
from harness.scenario.schedule import ScheduleError, parse_mix
from harness.workload.config import WorkloadConfig
from harness.workload.groups import GroupWorkloadConfig
from harness.workload.java_txn import JavaTxnWorkloadConfig
from harness.workload.share import ShareWorkloadConfig
from harness.workload.txn import TxnWorkloadConfig

Path_ = tuple  # a key path: table names, array indexes, keys


class SchemaError(ScenarioError):
    """A value of a scenario file does not fit the schema: ``path`` names it, the message says why."""

    def __init__(self, path: Path_, message: str):
        super().__init__(message)
        self.path, self.message = tuple(path), message


TOP_KEYS = ("name", "description", "tags", "max_duration_s", "cluster", "topics", "workload", "steps",
            "random", "expect", "checks", "coverage")
CLUSTER_KEYS = ("brokers", "zookeepers", "distribution", "kafka_version", "min_version", "modes", "config",
                "security", "features")
TOPIC_KEYS = ("name", "partitions", "replication_factor", "config", "assignment")
STEP_KEYS = ("id", "at", "after", "fault", "target", "duration", "params", "action", "topic", "partition",
             "replicas", "throttle", "mb", "brokers")
ACTIONS = ("reassign", "preload", "clear_throttle", "elect_preferred", "delete_topic", "wait")
EXPECT_KEYS = ("that", "after", "within", "topic", "partition", "broker", "brokers")
# what an expectation can say (docs/scenario-files.md "Expectations"); checker-backed ones add a check
EXPECTATIONS = ("leader_elected", "leader_is", "controller_elected", "isr_full", "isr_shrinks", "isr_is",
                "reassignment_completes", "topic_deleted", "no_acked_write_lost", "conformance", "transactions", "groups",
                "txn-epochs")
CHECKER_EXPECTATIONS = {"no_acked_write_lost": "durability", "conformance": "conformance",
                        "transactions": "transactions", "groups": "groups", "txn-epochs": "txn-epochs"}
CHECKS = CHECK_NAMES
MODES = ("zookeeper", "kraft")
SUITE_TAGS = ("smoke", "conformance", "chaos", "nightly")
WORKLOAD_KINDS = {"plain": WorkloadConfig, "txn": TxnWorkloadConfig, "group": GroupWorkloadConfig,
                  "share": ShareWorkloadConfig, "java-txn": JavaTxnWorkloadConfig}
WORKLOAD_ALIASES = {"count": "max_sends", "consumers": "assign_consumers", "group_consumers": "subscribe_consumers",
                    "idempotence": "enable_idempotence"}
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
_TOPIC = re.compile(r"^[A-Za-z0-9._-]+$")


# ------------------------------------------------------------------------------------- primitives
def _kind(v) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array",
            dict: "a table"}.get(type(v), type(v).__name__)


def keys(d, path: Path_, allowed: tuple[str, ...], what: str) -> dict:
    if not isinstance(d, dict):
        raise SchemaError(path, f"expected a table ({what}), got {_kind(d)}")
    for k in d:
        if k not in allowed:
            raise SchemaError((*path, k), f"unknown key in {what}; allowed: {', '.join(allowed)}")
    return d


def integer(v, path: Path_, lo: int | None = None, hi: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise SchemaError(path, f"expected an integer, got {_kind(v)} {v!r}")
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        rng = f">= {lo}" if hi is None else f"in {lo}..{hi}"
        raise SchemaError(path, f"expected an integer {rng}, got {v}")
    return v


def number(v, path: Path_, lo: float = 0.0) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < lo:
        raise SchemaError(path, f"expected a number of seconds >= {lo:g}, got {_kind(v)} {v!r}")
    return float(v)


def string(v, path: Path_, choices: tuple[str, ...] | None = None, pattern: re.Pattern | None = None) -> str:
    if not isinstance(v, str) or not v:
        raise SchemaError(path, f"expected a non-empty string, got {_kind(v)} {v!r}")
    if choices is not None and v not in choices:
        raise SchemaError(path, f"{v!r} is not allowed; allowed: {', '.join(choices)}")
    if pattern is not None and not pattern.match(v):
        raise SchemaError(path, f"{v!r}: only letters, digits, '.', '_' and '-' are allowed")
    return v


def strings(v, path: Path_, choices: tuple[str, ...] | None = None) -> list[str]:
    if isinstance(v, str):
        v = [v]
    if not isinstance(v, list) or not v:
        raise SchemaError(path, f"expected a non-empty array of strings, got {_kind(v)}")
    return [string(x, (*path, i), choices) for i, x in enumerate(v)]


def broker_list(v, path: Path_) -> list[int]:
    if not isinstance(v, list) or not v:
        raise SchemaError(path, f"expected a non-empty array of broker ids, got {_kind(v)}")
    out = [integer(x, (*path, i), 0) for i, x in enumerate(v)]
    if len(set(out)) != len(out):
        raise SchemaError(path, f"broker ids must be distinct, got {out}")
    return out


def config_value(v, path: Path_) -> str:
    """A broker or topic config value: TOML strings, integers, floats and booleans, as Kafka's strings."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float, str)):
        return str(v)
    raise SchemaError(path, f"expected a string, number or boolean, got {_kind(v)}")


def config_table(v, path: Path_) -> dict[str, str]:
    if not isinstance(v, dict):
        raise SchemaError(path, f"expected a table of config entries (\"min.insync.replicas\" = 2), got {_kind(v)}")
    out = {}
    for k, x in v.items():
        if isinstance(x, dict):   # a dotted key written bare: min.insync.replicas = 2 is a nested table
            raise SchemaError((*path, k), "config keys contain dots: quote them (\"min.insync.replicas\" = 2)")
        out[k] = config_value(x, (*path, k))
    return out


def features(v, path: Path_) -> dict[str, int]:
    """Feature levels (``{"transaction.version" = 1}``): names some Kafka release knows
    (reference/feature_versions.py), integer levels; whether the run's release knows the level is decided
    with the broker (Scenario.not_applicable)."""
    if not isinstance(v, dict):
        raise SchemaError(path, f"expected a table of feature levels ({{ \"transaction.version\" = 1 }}), "
                          f"got {_kind(v)}")
    out = {}
    for k, x in v.items():
        if isinstance(x, dict):   # a dotted key written bare is a nested table
            raise SchemaError((*path, k), "feature names contain dots: quote them (\"transaction.version\" = 1)")
        if k not in FEATURE_NAMES:
            raise SchemaError((*path, k), f"unknown feature; allowed: {', '.join(FEATURE_NAMES)}")
        out[k] = integer(x, (*path, k), 0, 32767)
    return out


# ------------------------------------------------------------------------------------- tables
def cluster(d: dict) -> dict:
    c = keys(d.get("cluster", {}), ("cluster",), CLUSTER_KEYS, "[cluster]")
    p = ("cluster",)
    out = {"brokers": integer(c.get("brokers", 3), (*p, "brokers"), 1, 9),
           "zookeepers": integer(c.get("zookeepers", 1), (*p, "zookeepers"), 1, 5),
           "config": config_table(c.get("config", {}), (*p, "config")),
           "modes": strings(c.get("modes", list(MODES)), (*p, "modes"), MODES)}
    if "security" in c:     # PROTOCOL[:MECHANISM] (docs/security.md)
        from harness.cluster.security import Security
        text = string(c["security"], (*p, "security"))
        try:
            out["security"] = Security.parse(text, "security").spec()
        except HarnessError as e:
            raise SchemaError((*p, "security"), str(e).removeprefix("security: ")) from None
    if "features" in c:
        out["features"] = features(c["features"], (*p, "features"))
    if "distribution" in c:
        from harness.distributions import NAMES     # lazy: only the names
        out["distribution"] = string(c["distribution"], (*p, "distribution"), tuple(NAMES))
    for k in ("kafka_version", "min_version"):
        if k in c:
            v = string(c[k], (*p, k))
            if not re.match(r"^\d+(\.\d+){1,2}$", v):
                raise SchemaError((*p, k), f"expected a Kafka version such as \"3.9.2\", got {v!r}")
            out[k] = v
    return out


def topics(d: dict, brokers: int) -> list[dict]:
    raw = d.get("topics", [{"name": "chaos", "partitions": 3, "replication_factor": 3}])
    if not isinstance(raw, list) or not raw:
        raise SchemaError(("topics",), "expected one or more [[topics]] tables")
    out, seen = [], set()
    for i, t in enumerate(raw):
        p = ("topics", i)
        keys(t, p, TOPIC_KEYS, "[[topics]]")
        if "name" not in t:
            raise SchemaError((*p, "name"), "missing: every [[topics]] table needs a name")
        name = string(t["name"], (*p, "name"), pattern=_TOPIC)
        if name in seen:
            raise SchemaError((*p, "name"), f"topic {name!r} is listed twice")
        seen.add(name)
        parts = integer(t.get("partitions", 1), (*p, "partitions"), 1, 1000)
        rf = integer(t.get("replication_factor", min(3, brokers)), (*p, "replication_factor"), 1, brokers)
        assignment = None
        if "assignment" in t:
            a = t["assignment"]
            if not isinstance(a, dict) or not a:
                raise SchemaError((*p, "assignment"), "expected a table partition -> brokers ({ \"0\" = [1, 2, 3] })")
            assignment = {}
            for k, reps in a.items():
                if not k.isdigit() or int(k) >= parts:
                    raise SchemaError((*p, "assignment", k), f"expected a partition number 0..{parts - 1}")
                assignment[int(k)] = broker_list(reps, (*p, "assignment", k))
                if any(b < 1 or b > brokers for b in assignment[int(k)]):
                    raise SchemaError((*p, "assignment", k), f"broker ids must be in 1..{brokers}")
        out.append({"name": name, "partitions": parts, "replication_factor": rf,
                    "config": config_table(t.get("config", {}), (*p, "config")), "assignment": assignment})
    return out


def _field_ok(value, ftype: str) -> bool:
    t = ftype.replace(" ", "")
    if isinstance(value, bool):
        return "bool" in t
    if isinstance(value, int):
        return any(x in t for x in ("int", "float"))
    if isinstance(value, float):
        return "float" in t
    if isinstance(value, str):
        return "str" in t
    if isinstance(value, list):
        return "list" in t
    if isinstance(value, dict):
        return "dict" in t
    return False


def workload(d: dict, topic_list: list[dict]) -> dict | None:
    if "workload" not in d:
        first = topic_list[0]
        return {"topic": first["name"], "partitions": first["partitions"]}
    w = d["workload"]
    if w is False:
        return None
    p = ("workload",)
    if not isinstance(w, dict):
        raise SchemaError(p, f"expected a [workload] table (or workload = false), got {_kind(w)}")
    kind = string(w.get("kind", "plain"), (*p, "kind"), tuple(WORKLOAD_KINDS))
    cls = WORKLOAD_KINDS[kind]
    fields = {f.name: str(f.type) for f in dataclasses.fields(cls) if f.name not in ("kind", "duration_s")}
    # an alias only where this kind has its target and not a field of the alias's own name (txn's
    # `consumers` is its own field, not plain's `assign_consumers`)
    aliases = {a: t for a, t in WORKLOAD_ALIASES.items() if t in fields and a not in fields}
    allowed = ("kind", *sorted(set(fields) | set(aliases)))
    out: dict[str, Any] = {} if kind == "plain" else {"kind": kind}
    for k, v in w.items():
        if k == "kind":
            continue
        name = aliases.get(k, k)
        if name not in fields:
            raise SchemaError((*p, k), f"unknown key in [workload] (kind {kind}); allowed: {', '.join(allowed)}")
        if not _field_ok(v, fields[name]):
            raise SchemaError((*p, k), f"expected {fields[name]}, got {_kind(v)} {v!r}")
        if name == "acks":
            if str(v) not in ("0", "1", "all", "-1"):
                raise SchemaError((*p, k), f"{v!r} is not allowed; allowed: 0, 1, \"all\" (-1)")
        out[name] = v
    names = [t["name"] for t in topic_list]
    out.setdefault("topic", names[0])
    if out["topic"] not in names:
        raise SchemaError((*p, "topic"), f"{out['topic']!r} is not a topic of this file; allowed: {', '.join(names)}")
    out.setdefault("partitions", next(t["partitions"] for t in topic_list if t["name"] == out["topic"]))
    return out


def _target(v, path: Path_, fault: str) -> str:
    s = string(v, path)
    if CATALOG[fault].kind == "client":
        return s
    try:
        parse_target(s)
    except TargetError as e:
        raise SchemaError(path, str(e)) from None
    return s


def steps(d: dict, topic_names: list[str]) -> list[dict]:
    raw = d.get("steps", [])
    if not isinstance(raw, list):
        raise SchemaError(("steps",), "expected [[steps]] tables")
    out: list[dict] = []
    ids: set[str] = set()
    for i, s in enumerate(raw):
        p = ("steps", i)
        keys(s, p, STEP_KEYS, "[[steps]]")
        if ("fault" in s) == ("action" in s):
            raise SchemaError(p, "each [[steps]] table has exactly one of fault = ... or action = ...")
        step: dict[str, Any] = {"index": i, "at": number(s.get("at", 0), (*p, "at"))}
        if "id" in s:
            step["id"] = string(s["id"], (*p, "id"), pattern=_NAME)
            if step["id"] in ids or step["id"] == "faults":
                raise SchemaError((*p, "id"), f"step id {step['id']!r} is used twice (or is the reserved 'faults')")
            ids.add(step["id"])
        if "after" in s:
            step["after"] = string(s["after"], (*p, "after"))
            if step["after"] not in ids:
                raise SchemaError((*p, "after"), f"no earlier step has id {step['after']!r}; known: "
                                  f"{', '.join(sorted(ids)) or '(none: give the anchor step an id)'}")
        if "fault" in s:
            allowed = ("id", "at", "after", "fault", "target", "duration", "params")
            for k in s:
                if k not in allowed:
                    raise SchemaError((*p, k), f"not a key of a fault step; allowed: {', '.join(allowed)}")
            fault = string(s["fault"], (*p, "fault"), tuple(sorted(CATALOG)))
            step["fault"] = fault
            step["target"] = _target(s.get("target", CATALOG[fault].default_target), (*p, "target"), fault)
            try:
                step["params"] = validate_params(fault, s.get("params", {}))
            except FaultSpecError as e:
                raise SchemaError((*p, "params"), str(e)) from None
            if CATALOG[fault].instant:
                if "duration" in s:
                    raise SchemaError((*p, "duration"), f"{fault} is an event (nothing to heal): no duration")
                step["duration"] = 0.0
            else:
                step["duration"] = number(s["duration"], (*p, "duration")) if "duration" in s else None
        else:
            step.update(_action(s, p, topic_names))
        out.append(step)
    return out


def _action(s: dict, p: Path_, topic_names: list[str]) -> dict:
    action = string(s["action"], (*p, "action"), ACTIONS)
    need = {"reassign": ("topic", "partition", "replicas"), "preload": ("topic",), "clear_throttle": (),
            "elect_preferred": ("topic",), "delete_topic": ("topic",), "wait": ()}[action]
    allowed = ("id", "at", "after", "action", *need, *{"reassign": ("throttle",), "preload": ("partition", "mb"),
               "clear_throttle": ("brokers",), "elect_preferred": ("partition",), "delete_topic": (),
               "wait": ()}[action])
    for k in s:
        if k not in allowed:
            raise SchemaError((*p, k), f"not a key of action {action!r}; allowed: {', '.join(allowed)}")
    for k in need:
        if k not in s:
            raise SchemaError((*p, k), f"missing: action {action!r} needs {', '.join(need)}")
    out: dict[str, Any] = {"action": action}
    if "topic" in s:
        out["topic"] = string(s["topic"], (*p, "topic"), tuple(topic_names))
    if "partition" in s:
        out["partition"] = integer(s["partition"], (*p, "partition"), 0)
    if "replicas" in s:
        out["replicas"] = broker_list(s["replicas"], (*p, "replicas"))
    if "throttle" in s:
        out["throttle"] = integer(s["throttle"], (*p, "throttle"), 1000)
    if "mb" in s:
        out["mb"] = integer(s["mb"], (*p, "mb"), 1, 64)
    if "brokers" in s:
        out["brokers"] = broker_list(s["brokers"], (*p, "brokers"))
    return out


def random_mix(d: dict) -> dict | None:
    if "random" not in d:
        return None
    mix = d["random"]
    if not isinstance(mix, dict):
        raise SchemaError(("random",), f"expected a [random] table, got {_kind(mix)}")
    try:
        parse_mix(mix)
    except ScheduleError as e:
        msg = str(e)
        m = re.match(r"fault mix(?:\.([A-Za-z_.]+))?(?:\[\d+\])?:? ?(.*)", msg)
        path = ("random", *(m.group(1).split(".") if m and m.group(1) else ()))
        raise SchemaError(path, m.group(2) if m else msg) from None
    return mix


def expectations(d: dict, step_list: list[dict], topic_list: list[dict]) -> list[dict]:
    raw = d.get("expect", [])
    if not isinstance(raw, list):
        raise SchemaError(("expect",), "expected [[expect]] tables")
    ids = [s["id"] for s in step_list if "id" in s]
    names = [t["name"] for t in topic_list]
    out = []
    for i, e in enumerate(raw):
        p = ("expect", i)
        keys(e, p, EXPECT_KEYS, "[[expect]]")
        if "that" not in e:
            raise SchemaError((*p, "that"), f"missing: what to expect; allowed: {', '.join(EXPECTATIONS)}")
        that = string(e["that"], (*p, "that"), EXPECTATIONS)
        x: dict[str, Any] = {"that": that, "index": i}
        if that in CHECKER_EXPECTATIONS:
            extra = [k for k in e if k != "that"]
            if extra:
                raise SchemaError((*p, extra[0]), f"{that!r} is judged on the whole record by a checker: it takes no "
                                  "other key")
            out.append(x)
            continue
        anchored = that in ("leader_elected", "controller_elected", "isr_shrinks")
        x["after"] = string(e.get("after", "faults" if not anchored else ""), (*p, "after"), ("faults", *ids)) \
            if "after" in e or not anchored else None
        if x["after"] is None or (anchored and x["after"] == "faults"):
            raise SchemaError((*p, "after"), f"{that!r} needs after = the id of the step it follows; known: "
                              f"{', '.join(ids) or '(none: give the step an id)'}")
        x["within"] = number(e.get("within", 30), (*p, "within"), 0.1)
        if that == "reassignment_completes" and not any(s.get("action") == "reassign" for s in step_list):
            raise SchemaError((*p, "that"), "'reassignment_completes' needs a step with action = \"reassign\"")
        if that == "topic_deleted":
            if "topic" not in e:
                raise SchemaError((*p, "topic"), "missing: 'topic_deleted' needs topic = NAME")
            x["topic"] = string(e["topic"], (*p, "topic"), tuple(names))
            if "partition" in e:
                raise SchemaError((*p, "partition"), "'topic_deleted' takes no partition")
        elif that in ("leader_elected", "leader_is", "isr_shrinks", "isr_is") or "topic" in e:
            x["topic"] = string(e.get("topic", names[0]), (*p, "topic"), tuple(names))
            x["partition"] = integer(e.get("partition", 0), (*p, "partition"), 0)
        elif "partition" in e:
            raise SchemaError((*p, "partition"), "partition needs topic")
        fault_ids = [s["id"] for s in step_list if "id" in s and "fault" in s]
        if that in ("leader_is", "isr_shrinks") or "broker" in e:
            if "broker" not in e and not (that == "isr_shrinks" and x["after"] in fault_ids):
                raise SchemaError((*p, "broker"), f"missing: {that!r} needs broker = N"
                                  + (" (or after = a fault step: its target)" if that == "isr_shrinks" else ""))
            if that not in ("leader_is", "isr_shrinks"):
                raise SchemaError((*p, "broker"), f"{that!r} takes no broker")
            if "broker" in e:
                x["broker"] = integer(e["broker"], (*p, "broker"), 0)
        if that == "isr_is" or "brokers" in e:
            if that != "isr_is":
                raise SchemaError((*p, "brokers"), f"{that!r} takes no brokers")
            if "brokers" not in e:
                raise SchemaError((*p, "brokers"), "missing: 'isr_is' needs brokers = [..]")
            x["brokers"] = sorted(broker_list(e["brokers"], (*p, "brokers")))
        out.append(x)
    return out


# the checks a file's workload kind gets when the file names none (the same as the catalog's scenarios of that kind)
KIND_CHECKS = {"txn": ("conformance", "transactions"), "java-txn": ("conformance", "txn-epochs"),
               "group": ("conformance", "durability", "groups"), "share": ("conformance", "durability", "share")}


def checks(d: dict, expect: list[dict], workload: dict | None = None) -> tuple[str, ...]:
    if "checks" in d:
        chosen = strings(d["checks"], ("checks",), CHECKS)
    else:
        named = [CHECKER_EXPECTATIONS[e["that"]] for e in expect if e["that"] in CHECKER_EXPECTATIONS]
        kind = (workload or {}).get("kind")
        chosen = named or list(KIND_CHECKS.get(kind, ("conformance", "durability")))
    for e in expect:
        need = CHECKER_EXPECTATIONS.get(e["that"])
        if need and need not in chosen:
            raise SchemaError(("checks",), f"expect {e['that']!r} needs the {need!r} check in checks")
    if "expectations" not in chosen:
        chosen = [*chosen, "expectations"]
    return tuple(dict.fromkeys(chosen))
