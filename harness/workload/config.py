"""Workload settings: what the clients do, how fast, for how long."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

# librdkafka settings a run record never keeps (the connection's secrets; docs/security.md)
SECRET_SETTINGS = ("sasl.password", "ssl.key.password", "ssl.keystore.password", "ssl.key.pem",
                   "ssl.keystore.location")


def connection(bootstrap: str | dict) -> dict:
    """How every client of a workload connects: ``bootstrap`` is the bootstrap servers, or the cluster's
    whole client configuration (``Cluster.client_config()``: bootstrap servers and listener security)."""
    if isinstance(bootstrap, dict):
        if not bootstrap.get("bootstrap.servers"):
            raise ValueError("the client configuration has no bootstrap.servers")
        return dict(bootstrap)
    return {"bootstrap.servers": bootstrap}


def recorded_settings(settings: dict) -> dict:
    """A client's settings as the run record keeps them: without the bootstrap servers and secrets."""
    return {k: v for k, v in settings.items() if k != "bootstrap.servers" and k not in SECRET_SETTINGS}


def partition_ids(partitions: int | list) -> list[int]:
    """A workload's ``partitions`` setting (a count, or the partition ids) as the list of ids."""
    if isinstance(partitions, int):
        return list(range(partitions))
    return [int(p) for p in partitions]


@dataclass
class WorkloadConfig:
    """Settings of one :class:`~harness.workload.Workload`.

    Every loop is bounded twice: by time (``duration_s``) and by count (``max_sends`` per
    producer, ``max_records`` per consumer).
    """

    topic: str
    partitions: int | list[int] = 1  # a count (0..n-1) or explicit partition ids
    producers: int = 1
    acks: str | int = "all"  # 0, 1, all (-1)
    enable_idempotence: bool = True
    retries: int | None = None  # None: librdkafka default (retry until delivery.timeout.ms)
    max_in_flight: int | None = None
    linger_ms: int = 5
    batch_size: int | None = None  # bytes
    delivery_timeout_ms: int = 30_000
    request_timeout_ms: int = 10_000
    rate: float = 200.0  # sends per second per producer; 0 = as fast as the queue allows
    duration_s: float = 10.0
    max_sends: int = 1_000_000  # per producer
    assign_consumers: int = 1  # consumers reading every partition by assignment (no group)
    subscribe_consumers: int = 0  # consumers in one consumer group
    group_id: str | None = None  # default: "<prefix>group-<topic>"
    max_records: int = 10_000_000  # per consumer
    consumer_max_s: float = 600.0  # consumers stop by themselves after this long
    poll_timeout_s: float = 0.2
    flush_timeout_s: float = 35.0  # at stop, how long to wait for outstanding deliveries
    process_prefix: str = ""  # makes process names (and so values) unique across workloads
    # librdkafka statistics every this many ms: the producer records its id and epoch from them
    # (client.producer_id events); 0 turns them off
    statistics_interval_ms: int = 1000
    # a client with sends outstanding and no completion for this long, while the cluster answers a
    # metadata request, is recorded as stalled (client.life); None: delivery timeout + 15 s
    stall_s: float | None = None
    producer_config: dict = field(default_factory=dict)  # extra librdkafka settings
    consumer_config: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.topic:
            raise ValueError("WorkloadConfig.topic is required")
        if str(self.acks).lower() not in ("0", "1", "all", "-1"):
            raise ValueError(f"acks must be 0, 1, all or -1, not {self.acks!r}")
        if self.enable_idempotence and str(self.acks).lower() not in ("all", "-1"):
            raise ValueError("enable_idempotence requires acks=all (librdkafka refuses otherwise)")
        if self.enable_idempotence and self.retries == 0:
            raise ValueError("enable_idempotence requires retries > 0")
        for name in ("producers", "assign_consumers", "subscribe_consumers"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0")
        if self.rate < 0 or self.duration_s <= 0 or self.max_sends <= 0:
            raise ValueError("rate must be >= 0, duration_s and max_sends > 0")
        if not self.partition_ids:
            raise ValueError("partitions must name at least one partition")
        if self.statistics_interval_ms < 0 or (self.stall_s is not None and self.stall_s <= 0):
            raise ValueError("statistics_interval_ms must be >= 0 and stall_s > 0")

    @property
    def stall_bound_s(self) -> float:
        return float(self.stall_s) if self.stall_s is not None else self.delivery_timeout_ms / 1000.0 + 15.0

    @property
    def partition_ids(self) -> list[int]:
        return partition_ids(self.partitions)

    @property
    def acks_setting(self) -> str:
        return "all" if str(self.acks).lower() in ("all", "-1") else str(self.acks)

    def producer_settings(self, bootstrap: str | dict, client_id: str) -> dict:
        """The librdkafka configuration of one producer (``bootstrap``: see :func:`connection`)."""
        conf = {
            **connection(bootstrap),
            "client.id": client_id,
            "acks": self.acks_setting,
            "enable.idempotence": self.enable_idempotence,
            "linger.ms": self.linger_ms,
            "delivery.timeout.ms": self.delivery_timeout_ms,
            "request.timeout.ms": self.request_timeout_ms,
            "partitioner": "consistent_random",
        }
        if self.retries is not None:
            conf["retries"] = self.retries
        if self.max_in_flight is not None:
            conf["max.in.flight.requests.per.connection"] = self.max_in_flight
        if self.batch_size is not None:
            conf["batch.size"] = self.batch_size
        if self.statistics_interval_ms:
            conf["statistics.interval.ms"] = self.statistics_interval_ms
        conf.update(self.producer_config)
        return conf

    def to_metadata(self) -> dict:
        """For metadata.json ``workload``."""
        d = asdict(self)
        d["acks"] = self.acks_setting
        d["partitions"] = self.partition_ids
        return d
