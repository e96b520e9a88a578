"""Periodic samples of a share group's share-partition start offsets (SPSO, KIP-932) over the Kafka
protocol: DescribeShareGroupOffsets (API key 90, :mod:`harness.protocol.share_messages`) sent to the
group's coordinator (FindCoordinator, key type 0 with the group id, re-found after any error), for
the partitions of one topic. The answer is the SPSO persisted in ``__share_group_state`` (read through
the share coordinator) with the leader epoch of the share-partition's last state write.

Events (docs/share-groups.md "History"):

* ``share.spso_sampler`` — once, at the start: ``group``, ``topic``, ``partitions``, ``interval``; the
  checker's SPSO checks apply to a record that has it.
* ``share.spso`` — per partition per answered round: ``group``, ``topic``, ``partition``,
  ``start_offset`` (-1: no state yet), ``leader_epoch``, ``lag`` (v1+), ``error``, ``coordinator``
  (the broker that answered). A round that got no answer (the coordinator killed on purpose, a group
  error) is one event with ``partition`` null and ``error`` set.

Used by the share scenarios (suites/scenarios/share.py, :func:`for_cluster`); the share workload stops
it after its drain (:meth:`harness.workload.share.ShareWorkload.attach`). Bounded like every sampler
(``duration``), each request by ``request_timeout``.
"""

from __future__ import annotations

from typing import Callable

from harness.observer.sampling import PeriodicSampler
from harness.protocol import Endpoint, ProtocolClient, ProtocolError, UnsupportedApi
from harness.record.events import SHARE_SPSO as SPSO_EVENT
from harness.record.events import SHARE_SPSO_SAMPLER as SAMPLER_EVENT


class SpsoSampler(PeriodicSampler):
    """Samples the SPSO of ``group``'s share-partitions of ``topic`` (``partitions``) every ``interval`` s.
    ``brokers``: broker id -> :class:`Endpoint`."""

    thread_name = "share-spso-sampler"

    def __init__(self, brokers: dict[int, Endpoint], group: str, topic: str, partitions: list[int],
                 emit: Callable[..., dict] | None = None, interval: float = 1.0, duration: float | None = 600.0,
                 request_timeout: float = 3.0, security=None):
        if not brokers:
            raise ValueError("no broker endpoints to sample")
        super().__init__(emit, interval, None, duration)
        self.brokers = dict(sorted(brokers.items()))
        self.group, self.topic, self.partitions = group, topic, sorted(partitions)
        self.request_timeout, self.security = request_timeout, security
        self.coordinator: int | None = None

    @classmethod
    def for_cluster(cls, cluster, group: str, topic: str, partitions: list[int], emit=None, **kw) -> "SpsoSampler":
        kw.setdefault("security", getattr(cluster, "security", None))
        return cls({b: cluster.brokers[b].endpoint for b in cluster.broker_ids}, group, topic, partitions, emit, **kw)

    def start(self):
        self._emit(SAMPLER_EVENT, {"group": self.group, "topic": self.topic, "partitions": self.partitions,
                                   "interval": self.interval})
        return super().start()

    def answered(self) -> bool:
        """Some round gave a start offset (a partition's answer without error)."""
        return any(e.get("partition") is not None and e.get("error") is None for e in list(self.samples))

    def _client(self, b: int) -> ProtocolClient:
        return ProtocolClient.at(self.brokers[b], timeout=self.request_timeout,
                                 client_id="kafka-chaos-share-sampler", security=self.security)

    def _find(self) -> int:
        """The group coordinator's id, asking the brokers in turn (the last coordinator last)."""
        last: Exception | None = None
        order = [b for b in self.brokers if b != self.coordinator] + \
            ([self.coordinator] if self.coordinator in self.brokers else [])
        for b in order:
            try:
                with self._client(b) as c:
                    info = c.find_coordinator(self.group, "group")
            except ProtocolError as e:
                last = e
                continue
            if info.error is None and info.node_id in self.brokers:
                return info.node_id
            last = ProtocolError(f"broker {b}: FindCoordinator {self.group}: {info.error or info.node_id}")
        raise last or ProtocolError("no broker to ask")

    def _fail(self, error: str, coordinator: int | None) -> list[dict]:
        self.coordinator = None
        return [self._emit(SPSO_EVENT, {"group": self.group, "topic": self.topic, "partition": None,
                                        "start_offset": None, "leader_epoch": None, "lag": None,
                                        "error": error, "coordinator": coordinator})]

    def sample(self) -> list[dict]:
        """One round: the coordinator (cached), then DescribeShareGroupOffsets for the topic's partitions."""
        b = self.coordinator
        try:
            if b is None:
                b = self._find()
            with self._client(b) as c:
                res = c.describe_share_group_offsets(self.group, {self.topic: self.partitions})
        except (ProtocolError, UnsupportedApi) as e:
            return self._fail(str(e), b)
        if res.error is not None:
            return self._fail(f"{res.error}: {res.error_message or ''}".rstrip(": "), b)
        self.coordinator = b
        out = []
        for p in sorted(res.partitions, key=lambda p: (p.topic, p.partition)):
            err = p.error if p.error is None else f"{p.error}: {p.error_message or ''}".rstrip(": ")
            out.append(self._emit(SPSO_EVENT, {"group": self.group, "topic": p.topic, "partition": p.partition,
                                               "start_offset": p.start_offset, "leader_epoch": p.leader_epoch,
                                               "lag": p.lag, "error": err, "coordinator": b}))
        if any(p.error in ("NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS")
               for p in res.partitions):
            self.coordinator = None
        return out
