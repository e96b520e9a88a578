"""Facts of a run read from its metadata.json: the workload (kind, acks), the topic and broker
configuration, and the controller model. The one place that knows where each sits in metadata.json
and what an older record that lacks one means.
"""

from __future__ import annotations

from typing import Any

ACKS_ALL = "all"
ZK, KRAFT = "zk", "kraft"
CONTROLLER_MODELS = (ZK, KRAFT)
# Distributions without ZooKeeper, for records written before metadata.json had ``controller_model``.
KRAFT_DISTRIBUTIONS = frozenset({"apache-kraft"})


def _dict(v: Any) -> dict:
    return v if isinstance(v, dict) else {}


def workload(metadata: dict) -> dict:
    """The run's workload settings (metadata ``workload``); {} when it had none."""
    return metadata.get("workload") or {}


def workload_kind(metadata: dict) -> str | None:
    """``txn``, ``group``, ... (metadata ``workload.kind``); None for the plain produce/consume workload."""
    return workload(metadata).get("kind")


def normalize_acks(value: Any) -> str | None:
    """``all``/``-1`` -> ``"all"``, ``1`` -> ``"1"``, ``0`` -> ``"0"``; ``None`` stays ``None``; anything
    else is a ValueError (the checkers judge only what a producer can be configured with)."""
    if value is None:
        return None
    s = str(value).strip().lower()
    if s in ("all", "-1"):
        return ACKS_ALL
    if s in ("0", "1"):
        return s
    raise ValueError(f"acks must be 0, 1, all or -1, not {value!r}")


def as_text(v: Any) -> str | None:
    """A metadata value as the report shows it: booleans as ``true``/``false``, None stays None."""
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def acks_label(value: Any) -> str | None:
    """The workload's acks as a label (``all`` for ``all``/``-1``, else the value as written): never raises."""
    s = as_text(value)
    if s is None:
        return None
    return ACKS_ALL if s.strip().lower() in ("all", "-1") else s.strip()


def run_config(metadata: dict, key: str) -> Any:
    """Setting ``key`` for the run as a whole: the first topic that sets it, else the broker's."""
    for topic in metadata.get("topics") or []:
        if isinstance(topic, dict) and key in _dict(topic.get("config")):
            return topic["config"][key]
    return _dict(metadata.get("broker_config")).get(key)


def controller_model(metadata: dict | None) -> str:
    """``"zk"`` or ``"kraft"``: metadata ``controller_model`` (written by the runner); for older records
    without it, inferred from the distribution (``apache-kraft``) or ``cluster.zookeepers`` 0."""
    md = metadata or {}
    model = md.get("controller_model")
    if model in CONTROLLER_MODELS:
        return model
    if md.get("distribution") in KRAFT_DISTRIBUTIONS:
        return KRAFT
    cl = md.get("cluster")
    return KRAFT if isinstance(cl, dict) and cl.get("zookeepers") == 0 else ZK


def features(metadata: dict) -> dict[str, int] | None:
    """The run's finalized feature levels (metadata ``features``, read from its metadata log's
    FeatureLevelRecords when the run ended; a feature absent is level 0); None when the record has none:
    a ZooKeeper-mode run, a metadata log that could not be read, or a record from before they were kept."""
    v = metadata.get("features")
    return dict(v) if isinstance(v, dict) else None


def features_requested(metadata: dict) -> dict[str, int]:
    """The feature levels the run's storage was formatted with (metadata ``features_requested``); {}: the
    release's defaults (none asked, or a record from before)."""
    return dict(_dict(metadata.get("features_requested")))


def features_label(levels: dict[str, int] | None, requested: dict[str, int] | None = None) -> str | None:
    """``"group.version=0*, metadata.version=33, transaction.version=1*"``: the finalized levels by name,
    with each level that was asked for (and every asked feature, 0 when absent from the log) starred;
    None when the run has no finalized levels recorded."""
    if levels is None:
        return None
    asked = requested or {}
    shown = {**{k: 0 for k in asked}, **levels}
    return ", ".join(f"{k}={v}{'*' if k in asked else ''}" for k, v in sorted(shown.items())) or "none"

