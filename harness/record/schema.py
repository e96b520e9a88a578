"""The shape of a run record's events and metadata (docs/run-record.md), as :mod:`harness.record.read`
checks it: every event's type known, and the fields the checkers read of the JSON type they read.

Versioned with :data:`harness.record.read.SCHEMA_VERSION` (this table is that version's). A field
may be absent or null unless it is one of :data:`REQUIRED`; fields not named here are not checked
(their readers tolerate anything). A number must be finite.
"""

from __future__ import annotations

import math
from typing import Any

from harness.record.events import (ACTION, ADMIN_METADATA, CLIENT, CLIENT_ASSIGN, CLIENT_CONFIG, CLIENT_LIFE,
                                   DOCKER_EVENT, EXPECT, FAULT_END, FAULT_HEAL, FAULT_START, GROUP_ASSIGN, PHASE,
                                   SHARE_SPSO, SHARE_SPSO_SAMPLER, TXN, ZK_GAP, ZK_PARTITION_STATE)
from harness.record.facts import CONTROLLER_MODELS
from harness.record.verdicts import CHECK_NAMES

# -- field kinds ----------------------------------------------------------------------------------------
INT, NUM, STR, BOOL, LIST, DICT, INTS, STRS, SCALAR, INT_STR = "int", "num", "str", "bool", "list", "dict", \
    "[int]", "[str]", "scalar", "int|str"
_NAMES = {INT: "an integer", NUM: "a finite number", STR: "a string", BOOL: "a boolean", LIST: "a list",
          DICT: "an object", INTS: "a list of integers", STRS: "a list of strings",
          SCALAR: "a string, number or boolean", INT_STR: "an integer or a string"}


def _is_int(v: Any) -> bool:
    return type(v) is int


def _is_num(v: Any) -> bool:
    return type(v) is int or (type(v) is float and math.isfinite(v))


_OK = {
    INT: _is_int,
    NUM: _is_num,
    STR: lambda v: type(v) is str,
    BOOL: lambda v: type(v) is bool,
    LIST: lambda v: type(v) is list,
    DICT: lambda v: type(v) is dict,
    INTS: lambda v: type(v) is list and all(type(x) is int for x in v),
    STRS: lambda v: type(v) is list and all(type(x) is str for x in v),
    SCALAR: lambda v: type(v) in (str, bool, int) or _is_num(v),
    INT_STR: lambda v: type(v) in (int, str),
}


def json_type(v: Any) -> str:
    if type(v) is float and not math.isfinite(v):
        return repr(v)
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "an integer",
            float: "a number"}.get(type(v), type(v).__name__)


# -- events -------------------------------------------------------------------------------------------------
REQUIRED = {"seq": INT, "t": NUM, "wall": NUM, "type": STR}     # every event
_ZK = {"zxid": INT, "zk_time": NUM, "source": STR}
_META = {"offset": INT, "time_ms": INT, "raft_epoch": INT, "source": STR}
_PROC = {"process": STR}

EVENT_FIELDS: dict[str, dict[str, str]] = {
    PHASE: {"name": STR, "error": STR, "cause": STR, "kind": STR, "seconds": NUM, "waited_s": NUM, "records": INT,
            "faults": INTS, "residue": LIST, "errors": LIST, "incomplete": LIST, "partitions": LIST,
            "still_running": LIST, "topic": STR, "coordinator": BOOL, "full_isr": BOOL},
    ACTION: {"action": STR, "params": DICT, "ok": BOOL, "error": STR},
    EXPECT: {"what": STR, "ok": BOOL, "waited_s": NUM, "rule": STR},
    DOCKER_EVENT: {"container": STR, "role": STR, "node_id": INT, "action": STR, "wall_docker": NUM,
                   "exit_code": INT, "signal": INT, "by_harness": BOOL},
    FAULT_START: {"fault_id": INT, "fault": STR, "target": STR, "nodes": STRS, "broker_ids": INTS,
                  "node_ids": INTS, "params": DICT, "resolved": LIST},
    FAULT_HEAL: {"fault_id": INT, "fault": STR, "nodes": STRS},
    FAULT_END: {"fault_id": INT, "fault": STR, "nodes": STRS, "ok": BOOL, "error": STR},
    "schedule.item": {"index": INT, "fault": STR, "target": STR, "fault_id": INT, "ok": BOOL, "error": STR,
                      "applied_at": NUM, "healed_at": NUM},
    CLIENT: {**_PROC, "f": STR, "phase": STR, "op_id": INT, "topic": STR, "partition": INT, "offset": INT,
             "value": STR, "error": STR, "leader_epoch": INT, "ack": STR},
    CLIENT_CONFIG: {**_PROC, "role": STR, "config": DICT, "threads_nice": INT},
    CLIENT_LIFE: {**_PROC, "role": STR, "state": STR, "error": STR, "mode": STR, "instance": INT, "reason": STR,
                  "group": STR},
    CLIENT_ASSIGN: dict(_PROC),
    "client.producer_id": {**_PROC, "producer_id": INT, "producer_epoch": INT, "epoch_cnt": INT,
                           "idemp_state": STR, "instance": INT},
    "client.implicit_ack": {**_PROC, "topic": STR, "instance": INT, "partition": INT, "count": INT,
                            "msgids": LIST, "vouched": BOOL},
    "partition.end": {"topic": STR, "partition": INT, "end_offset": INT},
    "partition.absent": {"topic": STR, "partition": INT, "reason": STR, "answers": INT, "over_s": NUM},
    TXN: {**_PROC, "phase": STR, "ops": LIST, "error": STR, "op_id": INT, "f": STR, "transactional_id": STR,
          "outcome": STR},
    "txn.init": {**_PROC, "transactional_id": STR, "producer_epoch": INT},
    "txn.poll": {**_PROC, "topic": STR, "partition": INT, "offset": INT, "value": STR, "drain": BOOL},
    "txn.seek": {**_PROC, "topic": STR, "partition": INT, "offset": INT},
    "txn.fenced": dict(_PROC),
    "txn.crash": {**_PROC, "replacement": STR, "transactional_id": STR, "ended": BOOL},
    GROUP_ASSIGN: {**_PROC, "group": STR, "generation": INT, "member_id": STR, "protocol": STR,
                   "partitions": LIST},
    "group.commit": {**_PROC, "group": STR, "generation": INT, "op_id": INT, "phase": STR, "topic": STR,
                     "partition": INT, "offset": INT, "error": STR, "why": STR},
    "group.committed": {**_PROC, "group": STR},
    "group.poll": {**_PROC, "group": STR, "generation": INT, "topic": STR, "partition": INT, "offset": INT,
                   "value": STR},
    "group.revoke": {**_PROC, "group": STR, "generation": INT, "partitions": LIST, "lost": BOOL},
    "group.member_added": dict(_PROC),
    "group.member_paused": dict(_PROC),
    # the Java transactional workload and the log read back (harness/workload/java_txn.py, batch_log.py,
    # harness/checkers/txn_epochs.py, docs/transactions.md "Transactions v2")
    "jtxn.input": {**_PROC, "topic": STR, "partition": INT, "generation": INT, "values": STRS, "unsure": STRS},
    "jtxn.client": {**_PROC, "transactional_id": STR, "partition": INT, "instance": INT, "container": STR,
                    "state": STR, "exit_code": INT, "final": BOOL, "committed_records": INT, "error": STR},
    "txn.batch": {"topic": STR, "partition": INT, "base_offset": INT, "last_offset": INT, "producer_id": INT,
                  "producer_epoch": INT, "transactional": BOOL, "control": BOOL, "marker": STR,
                  "coordinator_epoch": INT, "leader_epoch": INT, "values": LIST},
    "txn.read": {"topic": STR, "partition": INT, "high_watermark": INT, "last_stable_offset": INT,
                 "log_start_offset": INT, "batches": INT, "waited_s": NUM, "lso_below_high": BOOL, "error": STR},
    # share groups (KIP-932; harness/workload/share.py, harness/checkers/share.py, docs/share-groups.md)
    "share.fetch": {**_PROC, "group": STR},
    "share.poll": {**_PROC, "group": STR, "topic": STR, "partition": INT, "offset": INT, "delivery_count": INT,
                   "fetch_t": NUM, "value": STR},
    "share.ack": {**_PROC, "group": STR, "topic": STR, "partition": INT, "offset": INT, "ack": STR},
    "share.ack_result": {**_PROC, "group": STR, "topic": STR, "partition": INT, "offsets": INTS, "error": STR},
    "share.member_paused": {**_PROC, "group": STR, "seconds": NUM},
    "share.member_crashed": {**_PROC, "group": STR, "reason": STR, "holding": INT},
    "share.member_added": {**_PROC, "group": STR},
    "share.drain": {"group": STR, "idle": BOOL, "seconds": NUM, "open": INT},
    "share.dlq": {**_PROC, "group": STR, "dlq_topic": STR, "dlq_offset": INT, "topic": STR, "partition": INT,
                  "offset": INT, "delivery_count": INT, "message": STR},
    "share.dlq_read": {"group": STR, "dlq_topic": STR, "records": INT, "expected": INT},
    SHARE_SPSO: {"group": STR, "topic": STR, "partition": INT, "start_offset": INT, "leader_epoch": INT, "lag": INT,
                 "error": STR, "coordinator": INT},
    SHARE_SPSO_SAMPLER: {"group": STR, "topic": STR, "partitions": INTS, "interval": NUM},
    ADMIN_METADATA: {"controller_id": INT, "brokers": INTS, "partitions": LIST, "answered_by": INT, "error": STR,
                     "source": STR},
    "admin.reassignments": {"partitions": LIST, "error": STR, "answered_by": INT, "source": STR},
    "kraft.quorum": {"leader_id": INT, "leader_epoch": INT, "high_watermark": INT, "voters": LIST,
                     "observers": LIST, "error": STR, "answered_by": INT},
    "zk.controller": {**_ZK, "broker_id": INT},
    "zk.controller_epoch": {**_ZK, "epoch": INT, "version": INT},
    "zk.broker": {**_ZK, "broker_id": INT, "registered": BOOL, "broker_epoch": INT},
    "zk.topic": {**_ZK, "topic": STR, "topic_id": STR, "partitions": DICT, "adding_replicas": DICT,
                 "removing_replicas": DICT, "version": INT, "deleted": BOOL},
    ZK_PARTITION_STATE: {**_ZK, "topic": STR, "partition": INT, "leader": INT, "leader_epoch": INT, "isr": INTS,
                         "controller_epoch": INT, "leader_recovery_state": INT, "version": INT, "deleted": BOOL},
    "zk.reassign_partitions": {**_ZK, "partitions": LIST},
    "zk.delete_topics": {**_ZK, "topics": STRS},
    ZK_GAP: {**_ZK, "path": STR, "missing_versions": INTS, "filled": BOOL},
    "meta.topic": {**_META, "topic": STR, "topic_id": STR},
    "meta.topic_removed": {**_META, "topic": STR, "topic_id": STR},
    "meta.partition": {**_META, "topic": STR, "partition": INT, "topic_id": STR, "leader": INT, "leader_epoch": INT,
                       "partition_epoch": INT, "isr": INTS, "replicas": INTS, "adding": INTS, "removing": INTS,
                       "elr": INTS, "last_known_elr": INTS, "leader_recovery_state": INT, "record": STR,
                       "changed": STRS},
    "meta.broker": {**_META, "broker_id": INT, "broker_epoch": INT, "fenced": BOOL, "registered": BOOL,
                    "in_controlled_shutdown": BOOL, "record": STR},
    "meta.feature": {**_META, "name": STR, "level": INT},
    "meta.config": {**_META, "resource_type": SCALAR, "resource_name": STR, "name": STR, "value": STR},
    "meta.leader_change": {**_META, "leader_id": INT, "voters": INTS, "granting_voters": INTS},
    "meta.voters": {**_META, "voters": LIST},
    "meta.kraft_version": {**_META, "level": INT},
    "meta.clear_elr": {**_META, "topic": STR},
}
EVENT_TYPES = frozenset(EVENT_FIELDS)


_EXACT = {INT: int, STR: str, BOOL: bool, LIST: list, DICT: dict}    # kinds that are one exact JSON type
_EVENT_KINDS = {ty: {k: (_EXACT.get(kind), _OK[kind]) for k, kind in fields.items()}
                for ty, fields in EVENT_FIELDS.items()}


def event_error(ev: dict) -> str | None:
    """Why ``ev`` does not fit the schema (``"field 'offset' is a string, expected an integer"``), or None.

    A fitting event (nearly all) is checked once over its own fields; only one that does not is checked
    again field by field in the schema's order (:func:`_event_error`), which names the first misfit."""
    ty, t, w = ev.get("type"), ev.get("t"), ev.get("wall")
    kinds = _EVENT_KINDS.get(ty) if type(ty) is str else None
    if (kinds is None or type(ev.get("seq")) is not int
            or not (type(t) is float and math.isfinite(t) or type(t) is int)
            or not (type(w) is float and math.isfinite(w) or type(w) is int)):
        return _event_error(ev)
    for key, v in ev.items():
        kind = kinds.get(key)
        if kind is not None and v is not None and type(v) is not kind[0] and not kind[1](v):
            return _event_error(ev)
    return None


def _event_error(ev: dict) -> str | None:
    for key, kind in REQUIRED.items():
        v = ev.get(key)
        if not _OK[kind](v):
            return f"field {key!r} is {'missing' if key not in ev else json_type(v)}, expected {_NAMES[kind]}"
    fields = EVENT_FIELDS.get(ev["type"])
    if fields is None:
        return f"field 'type' {ev['type'][:60]!r} is not an event type of schema version 1"
    for key, kind in fields.items():
        v = ev.get(key)
        if v is not None and not _OK[kind](v):
            return f"{ev['type']} field {key!r} is {json_type(v)}, expected {_NAMES[kind]}"
    return None


# -- metadata.json ----------------------------------------------------------------------------------------------
METADATA_FIELDS: dict[str, str] = {
    "run_id": STR, "suite": STR, "scenario": STR, "harness_version": SCALAR, "git_sha": SCALAR,
    "kafka_version": SCALAR, "broker_image": SCALAR, "distribution": STR, "profile": STR, "started_at": SCALAR,
    "ended_at": SCALAR, "replay_of": SCALAR, "controller_model": STR, "checks": STRS, "seed": INT_STR,
    "topics": LIST, "schedule": LIST, "workload": DICT, "broker_config": DICT, "cluster": DICT, "record": DICT,
    "observer": DICT, "coverage_needs": DICT, "host": DICT, "tags": LIST, "fault_mix": DICT,
    "features": DICT, "features_requested": DICT,
}


def metadata_errors(name: str, meta: dict) -> list[str]:
    """``"<name>: field 'checks' is a string, expected a list of strings"`` for each field of metadata.json
    (``name``) that does not fit: JSON types, ``checks`` only known check names, a known controller model."""
    out = []
    for key, kind in METADATA_FIELDS.items():
        v = meta.get(key)
        if v is not None and not _OK[kind](v):
            out.append(f"{name}: field {key!r} is {json_type(v)}, expected {_NAMES[kind]}")
    checks = meta.get("checks")
    if isinstance(checks, list):
        unknown = [c for c in checks if isinstance(c, str) and c not in CHECK_NAMES]
        if unknown:
            out.append(f"{name}: field 'checks' names {', '.join(map(repr, unknown))}, not one of "
                       f"{', '.join(CHECK_NAMES)}")
    for key in ("features", "features_requested"):      # feature name -> level (docs/run-record.md)
        levels = meta.get(key)
        bad = [k for k, v in levels.items() if type(v) is not int] if isinstance(levels, dict) else []
        if bad:
            out.append(f"{name}: field {key!r} level of {bad[0]!r} is {json_type(levels[bad[0]])}, expected an integer")
    model = meta.get("controller_model")
    if isinstance(model, str) and model not in CONTROLLER_MODELS:
        out.append(f"{name}: field 'controller_model' {model!r} is not one of {', '.join(CONTROLLER_MODELS)}")
    return out
