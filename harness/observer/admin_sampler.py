"""Periodic Admin-API sampler: what the brokers *say* (Metadata), for any Kafka-compatible cluster,
including brokers without ZooKeeper.

Every ``interval`` seconds one Metadata request (``AdminClient.list_topics``) gives, from one
answering broker's metadata cache (controller-spec §8.1 MD(b)): the controller id, the live brokers
and, per partition, leader / replicas / ISR / error. It is emitted as ``admin.metadata``.

What confluent-kafka 2.16 does and does not expose (checked against the installed client):

* ``PartitionMetadata`` (list_topics) and ``TopicPartitionInfo`` (describe_topics) carry no leader
  epoch, so ``leader_epoch`` is always null.
* ``ClusterMetadata.controller_id`` is filled by the Metadata response, so no extra
  ``describe_cluster`` call is needed (it is used only when the Metadata answer has no controller).
* ``AdminClient`` has no ``list_partition_reassignments``; ``admin.reassignments`` is emitted only
  if a future client provides it (:attr:`AdminSampler.supports_reassignments`). In ZooKeeper mode
  reassignments are observed from ``/admin/reassign_partitions`` and the topic znodes instead.

The thread is bounded: it stops after ``max_samples`` samples, after ``duration`` seconds, or on
:meth:`stop`, whichever is first, and never blocks a caller for more than ``request_timeout``.
"""

from __future__ import annotations

import logging
from typing import Callable

from harness.clientlog import with_logger
from harness.observer.sampling import PeriodicSampler

from confluent_kafka.admin import AdminClient, ClusterMetadata

log = logging.getLogger(__name__)


def _err(e) -> str | None:
    if e is None:
        return None
    name = getattr(e, "name", None)
    return name() if callable(name) else str(e)


def metadata_fields(md: ClusterMetadata, topics: list[str] | None = None,
                    include_internal: bool = False) -> dict:
    """``admin.metadata`` fields from a :class:`ClusterMetadata` (one Metadata response)."""
    parts = []
    for name in sorted(md.topics):
        if topics is not None and name not in topics:
            continue
        if topics is None and not include_internal and name.startswith("__"):
            continue
        tm = md.topics[name]
        if tm.error is not None and not tm.partitions:
            parts.append({"topic": name, "partition": None, "leader": None, "leader_epoch": None,
                          "replicas": [], "isr": [], "error": _err(tm.error)})
            continue
        for pid in sorted(tm.partitions):
            pm = tm.partitions[pid]
            parts.append({"topic": name, "partition": pm.id, "leader": pm.leader, "leader_epoch": None,
                          "replicas": list(pm.replicas), "isr": list(pm.isrs), "error": _err(pm.error)})
    ctl = md.controller_id if md.controller_id is not None and md.controller_id >= 0 else None
    return {"controller_id": ctl, "brokers": sorted(md.brokers), "partitions": parts,
            "answered_by": md.orig_broker_id if md.orig_broker_id is not None and md.orig_broker_id >= 0
            else None}


class AdminSampler(PeriodicSampler):
    """Samples cluster metadata in a background thread and emits ``admin.metadata`` events.

    ``emit`` has the signature of :meth:`harness.record.RunRecorder.emit`; samples are also kept in
    :attr:`samples`. Only ``bootstrap_servers`` on 127.0.0.1 are expected (the harness's cluster).
    """

    def __init__(self, bootstrap_servers: str, emit: Callable[..., dict] | None = None,
                 interval: float = 1.0, max_samples: int | None = None, duration: float | None = None,
                 topics: list[str] | None = None, request_timeout: float = 5.0,
                 client_config: dict | None = None):
        if max_samples is None and duration is None:
            max_samples = 100_000           # bounded even if the caller forgets stop()
        super().__init__(emit, interval, max_samples, duration)
        conf = {"bootstrap.servers": bootstrap_servers, "socket.timeout.ms": int(request_timeout * 1000),
                "client.id": "kafka-chaos-admin-sampler"}
        conf.update(client_config or {})
        self.admin = AdminClient(with_logger(conf))
        self.topics, self.request_timeout = topics, request_timeout

    thread_name = "admin-sampler"

    def _join_timeout(self) -> float:
        return self.request_timeout * 2 + 2

    @property
    def supports_reassignments(self) -> bool:
        return hasattr(self.admin, "list_partition_reassignments")

    # -- one sample ----------------------------------------------------------------------------
    def sample(self) -> dict:
        """Take one sample now and emit it; a failed request yields ``error`` and empty lists."""
        try:
            md = self.admin.list_topics(timeout=self.request_timeout)
            fields = metadata_fields(md, self.topics)
            if fields["controller_id"] is None:
                fields["controller_id"] = self._controller_from_describe_cluster()
            fields["error"] = None
        except Exception as e:      # noqa: BLE001 - the cluster may be partitioned/killed on purpose
            fields = {"controller_id": None, "brokers": [], "partitions": [], "answered_by": None,
                      "error": f"{type(e).__name__}: {e}"}
        ev = self._emit("admin.metadata", fields)
        if self.supports_reassignments:
            self._sample_reassignments()
        return ev

    def _controller_from_describe_cluster(self) -> int | None:
        try:
            res = self.admin.describe_cluster(request_timeout=self.request_timeout).result(
                timeout=self.request_timeout + 1)
            return res.controller.id if res.controller is not None else None
        except Exception:           # noqa: BLE001
            return None

    def _sample_reassignments(self) -> None:    # pragma: no cover - not in confluent-kafka 2.16
        try:
            res = self.admin.list_partition_reassignments(request_timeout=self.request_timeout)
            res = res.result(timeout=self.request_timeout + 1) if hasattr(res, "result") else res
            parts = [{"topic": tp.topic, "partition": tp.partition, "replicas": list(r.replicas),
                      "adding_replicas": list(r.adding_replicas),
                      "removing_replicas": list(r.removing_replicas)} for tp, r in dict(res).items()]
            self._emit("admin.reassignments", {"partitions": parts})
        except Exception as e:      # noqa: BLE001
            log.debug("list_partition_reassignments failed: %r", e)
