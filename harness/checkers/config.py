"""What the run's configuration promises, as the durability checker needs it.

The checker judges anomalies against the guarantees the configuration actually gives:
``acks=1``/``0`` or an unclean leader election may lose acknowledged writes (reported as
``ALLOWED``), non-idempotent producers may duplicate or reorder, and ``acks=all`` must be
refused while the ISR is below the effective ``min.insync.replicas`` (controller-spec §5.12,
H17). This module turns ``metadata.json`` plus ``client.config`` events into those facts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reference.versions import parse_or_none as parse_version  # noqa: F401  (re-exported)

from harness.record.facts import ACKS_ALL, normalize_acks


def parse_bool(value: Any) -> bool | None:
    """Kafka-style boolean (``true``/``false``, also Python bools and 0/1); ``None`` if absent."""
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    s = str(value).strip().lower()
    if s in ("true", "1", "yes", "on"):
        return True
    if s in ("false", "0", "no", "off"):
        return False
    raise ValueError(f"not a boolean setting: {value!r}")


def _first(cfg: dict, *keys: str) -> Any:
    for k in keys:
        if k in cfg and cfg[k] is not None:
            return cfg[k]
    return None


@dataclass
class ProducerFacts:
    """Guarantees of one producer process (from ``client.config``, else metadata ``workload``)."""

    acks: str  # "0" | "1" | "all"
    idempotent: bool
    ordered: bool  # produce order per partition is kept (idempotence, or max.in.flight 1, or no retries)

    @property
    def may_lose(self) -> bool:
        return self.acks != ACKS_ALL


def producer_facts(config: dict, defaults: dict) -> ProducerFacts:
    """Combine a producer's client config with the run's workload defaults.

    librdkafka defaults apply when neither says: ``acks=all``, idempotence off, retries on,
    5 requests in flight.
    """
    merged = dict(defaults)
    merged.update({k: v for k, v in config.items() if v is not None})
    acks = normalize_acks(_first(merged, "acks", "request.required.acks")) or ACKS_ALL
    idem = parse_bool(_first(merged, "enable.idempotence", "enable_idempotence", "idempotence")) or False
    inflight = _first(merged, "max.in.flight.requests.per.connection", "max.in.flight", "max_in_flight")
    retries = _first(merged, "retries", "message.send.max.retries")
    ordered = idem or (inflight is not None and int(inflight) == 1) or (retries is not None and int(retries) == 0)
    return ProducerFacts(acks=acks, idempotent=idem, ordered=ordered)


class RunFacts:
    """Per-topic configuration of a run: min ISR, unclean election, replication factor."""

    def __init__(self, metadata: dict):
        if not isinstance(metadata, dict):
            raise TypeError(f"metadata must be a dict (metadata.json), not {type(metadata).__name__}")
        self.metadata = metadata
        self.broker_config = dict(metadata.get("broker_config") or {})
        self.workload = dict(metadata.get("workload") or {})
        self.version = parse_version(metadata.get("kafka_version"))
        self.topics: dict[str, dict] = {}
        for t in metadata.get("topics") or []:
            if isinstance(t, dict) and t.get("name"):
                self.topics[t["name"]] = t
        self.replicas: dict[tuple[str, int], int] = {}  # learnt from zk.topic / admin.metadata

    def topic_config(self, topic: str, key: str) -> Any:
        cfg = (self.topics.get(topic) or {}).get("config") or {}
        if key in cfg and cfg[key] is not None:
            return cfg[key]
        return self.broker_config.get(key)

    def min_isr(self, topic: str) -> int:
        v = self.topic_config(topic, "min.insync.replicas")
        return int(v) if v is not None else 1

    def unclean_enabled(self, topic: str) -> bool:
        return bool(parse_bool(self.topic_config(topic, "unclean.leader.election.enable")))

    def replication_factor(self, topic: str, partition: int) -> int | None:
        n = self.replicas.get((topic, partition))
        if n is not None:
            return n
        rf = (self.topics.get(topic) or {}).get("replication_factor")
        return int(rf) if rf is not None else None

    def effective_min_isr(self, topic: str, partition: int) -> int:
        """``min(min.insync.replicas, #replicas)`` from Kafka 3.7 on (or when the version is
        unknown, the smaller and hence more lenient figure); the bare setting before 3.7."""
        m = self.min_isr(topic)
        if self.version is not None and self.version < (3, 7):
            return m
        rf = self.replication_factor(topic, partition)
        return min(m, rf) if rf else m
