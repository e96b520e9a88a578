"""Kafka's ZooKeeper data model (controller-spec §1): which paths matter and how to decode them.

Shared by the live watcher and the transaction-log reader so both produce identical ``zk.*`` event
fields from the same znode bytes. All decoders raise :class:`ZnodeFormatError` naming the path.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
BROKER_IDS = "/brokers/ids"
TOPICS = "/brokers/topics"
REASSIGN = "/admin/reassign_partitions"
DELETE_TOPICS = "/admin/delete_topics"

_BROKER = re.compile(r"^/brokers/ids/(\d+)$")
_TOPIC = re.compile(r"^/brokers/topics/([^/]+)$")
_STATE = re.compile(r"^/brokers/topics/([^/]+)/partitions/(\d+)/state$")
_DELETE_CHILD = re.compile(r"^/admin/delete_topics/([^/]+)$")


class ZnodeFormatError(ValueError):
    """A Kafka znode whose content does not match the documented format."""


@dataclass(frozen=True)
class ZPath:
    """A classified Kafka znode path. ``kind`` is one of ``controller``, ``controller_epoch``,
    ``broker``, ``topic``, ``partition_state``, ``reassign``, ``delete_topics``,
    ``delete_topics_child``."""
    kind: str
    topic: str | None = None
    partition: int | None = None
    broker_id: int | None = None


def strip_chroot(path: str, chroot: str) -> str | None:
    """Path relative to the chroot, or None if it lies outside it."""
    chroot = chroot.rstrip("/")
    if not chroot:
        return path
    if path == chroot:
        return "/"
    if path.startswith(chroot + "/"):
        return path[len(chroot):]
    return None


def classify(path: str) -> ZPath | None:
    """Classify a (chroot-relative) path; None for znodes the observer does not record."""
    if path == CONTROLLER:
        return ZPath("controller")
    if path == CONTROLLER_EPOCH:
        return ZPath("controller_epoch")
    if path == REASSIGN:
        return ZPath("reassign")
    if path == DELETE_TOPICS:
        return ZPath("delete_topics")
    m = _BROKER.match(path)
    if m:
        return ZPath("broker", broker_id=int(m.group(1)))
    m = _TOPIC.match(path)
    if m:
        return ZPath("topic", topic=m.group(1))
    m = _STATE.match(path)
    if m:
        return ZPath("partition_state", topic=m.group(1), partition=int(m.group(2)))
    m = _DELETE_CHILD.match(path)
    if m:
        return ZPath("delete_topics_child", topic=m.group(1))
    return None


def state_path(topic: str, partition: int) -> str:
    return f"/brokers/topics/{topic}/partitions/{partition}/state"


def _json(path: str, data: bytes | None) -> dict:
    if data is None:
        raise ZnodeFormatError(f"{path}: no data")
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ZnodeFormatError(f"{path}: not JSON ({e}): {data[:200]!r}") from None
    if not isinstance(obj, dict):
        raise ZnodeFormatError(f"{path}: expected a JSON object, got {type(obj).__name__}")
    return obj


def _int(path: str, obj: dict, key: str) -> int:
    v = obj.get(key)
    if isinstance(v, bool) or not isinstance(v, int):
        raise ZnodeFormatError(f"{path}: field {key!r} must be an integer, got {v!r}")
    return v


def _int_list(path: str, v, what: str) -> list[int]:
    if not isinstance(v, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in v):
        raise ZnodeFormatError(f"{path}: {what} must be a list of integers, got {v!r}")
    return list(v)


def controller_fields(path: str, data: bytes | None) -> dict:
    """``/controller`` (v1/v2 JSON) -> ``{"broker_id"}``."""
    return {"broker_id": _int(path, _json(path, data), "brokerid")}


def controller_epoch_fields(path: str, data: bytes | None, version: int) -> dict:
    """``/controller_epoch`` (decimal text) -> ``{"epoch", "version"}``."""
    try:
        epoch = int((data or b"").decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        raise ZnodeFormatError(f"{path}: expected a decimal integer, got {data!r}") from None
    return {"epoch": epoch, "version": version}


def broker_fields(broker_id: int, registered: bool, broker_epoch: int | None) -> dict:
    return {"broker_id": broker_id, "registered": registered, "broker_epoch": broker_epoch}


def _partition_map(path: str, obj: dict, key: str, required: bool) -> dict[str, list[int]]:
    v = obj.get(key)
    if v is None:
        if required:
            raise ZnodeFormatError(f"{path}: missing {key!r}")
        return {}
    if not isinstance(v, dict):
        raise ZnodeFormatError(f"{path}: {key!r} must be an object, got {v!r}")
    out = {}
    for p, reps in v.items():
        if not str(p).isdigit():
            raise ZnodeFormatError(f"{path}: {key!r} has non-numeric partition {p!r}")
        out[str(p)] = _int_list(path, reps, f"{key}[{p}]")
    return dict(sorted(out.items(), key=lambda kv: int(kv[0])))


def topic_fields(path: str, topic: str, data: bytes | None, version: int) -> dict:
    """``/brokers/topics/<t>`` (JSON v1..v3) -> ``zk.topic`` fields."""
    obj = _json(path, data)
    tid = obj.get("topic_id")
    if tid is not None and not isinstance(tid, str):
        raise ZnodeFormatError(f"{path}: topic_id must be a string, got {tid!r}")
    return {
        "topic": topic,
        "topic_id": tid,
        "partitions": _partition_map(path, obj, "partitions", True),
        "adding_replicas": _partition_map(path, obj, "adding_replicas", False),
        "removing_replicas": _partition_map(path, obj, "removing_replicas", False),
        "version": version,
        "deleted": False,
    }


def topic_deleted_fields(topic: str, last: dict | None, version: int | None) -> dict:
    base = dict(last) if last else {"topic": topic, "topic_id": None, "partitions": {},
                                   "adding_replicas": {}, "removing_replicas": {}}
    base.update(version=version if version is not None else base.get("version"), deleted=True)
    return base


def partition_state_fields(path: str, topic: str, partition: int, data: bytes | None,
                           version: int) -> dict:
    """``.../partitions/<p>/state`` JSON + Stat.version -> ``zk.partition_state`` fields."""
    obj = _json(path, data)
    lrs = obj.get("leader_recovery_state", 0)
    if lrs not in (0, 1):
        raise ZnodeFormatError(f"{path}: leader_recovery_state must be 0 or 1, got {lrs!r}")
    return {
        "topic": topic,
        "partition": partition,
        "leader": _int(path, obj, "leader"),
        "leader_epoch": _int(path, obj, "leader_epoch"),
        "isr": _int_list(path, obj.get("isr"), "isr"),
        "controller_epoch": _int(path, obj, "controller_epoch"),
        "leader_recovery_state": lrs,
        "version": version,
        "deleted": False,
    }


def partition_state_deleted_fields(topic: str, partition: int, last: dict | None,
                                   version: int | None) -> dict:
    base = dict(last) if last else {"topic": topic, "partition": partition, "leader": None,
                                   "leader_epoch": None, "isr": None, "controller_epoch": None,
                                   "leader_recovery_state": None}
    base.update(version=version if version is not None else base.get("version"), deleted=True)
    return base


def reassign_fields(path: str, data: bytes | None) -> dict:
    """``/admin/reassign_partitions`` JSON -> ``{"partitions": [...]}``."""
    obj = _json(path, data)
    parts = obj.get("partitions")
    if not isinstance(parts, list):
        raise ZnodeFormatError(f"{path}: 'partitions' must be a list, got {parts!r}")
    out = []
    for e in parts:
        if not isinstance(e, dict) or not isinstance(e.get("topic"), str):
            raise ZnodeFormatError(f"{path}: bad reassignment entry {e!r}")
        out.append({"topic": e["topic"], "partition": _int(path, e, "partition"),
                    "replicas": _int_list(path, e.get("replicas"), "replicas")})
    return {"partitions": out}
