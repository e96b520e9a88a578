"""Model state (spec §10.1): cluster membership, controller, topics, partition state znodes.

Values that the model copies when it branches (``LeaderAndIsr``, ``Assignment``) are immutable;
``ClusterState.clone()`` therefore only copies the containers.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from reference.profiles import LATEST_ZK, Version

NO_LEADER = -1          # §0.3 LAI:26 NoLeader
RECOVERED = 0           # §1.5 leader_recovery_state
RECOVERING = 1


@dataclass(frozen=True)
class LeaderAndIsr:
    """Content of ``/brokers/topics/T/partitions/P/state`` plus its data version (= partition epoch, §1.5)."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    recovery: int = RECOVERED
    version: int = 0

    def to_dict(self) -> dict:
        return {"leader": self.leader, "leader_epoch": self.leader_epoch, "isr": list(self.isr),
                "controller_epoch": self.controller_epoch, "leader_recovery_state": self.recovery,
                "version": self.version}


def list_minus(a, b) -> tuple[int, ...]:
    """Ordered list difference, order of ``a`` preserved (§0.3)."""
    bs = set(b)
    return tuple([x for x in a if x not in bs])


def distinct(seq) -> tuple[int, ...]:
    seen: set[int] = set()
    out = []
    for x in seq:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return tuple(out)


@dataclass(frozen=True)
class Assignment:
    """``ReplicaAssignment(RS, AR, RR)`` of one partition (§7.1, CC:27-72)."""

    rs: tuple[int, ...]
    ar: tuple[int, ...] = ()
    rr: tuple[int, ...] = ()

    @property
    def ors(self) -> tuple[int, ...]:
        """Original replicas ``RS - AR`` (CC:46)."""
        return list_minus(self.rs, self.ar)

    @property
    def trs(self) -> tuple[int, ...]:
        """Target replicas ``RS - RR`` (CC:47)."""
        return list_minus(self.rs, self.rr)

    @property
    def reassigning(self) -> bool:
        return bool(self.ar or self.rr)

    def reassign_to(self, target) -> "Assignment":
        """§7.1 / D15: ``RS' = distinct(T ++ ORS)``, ``AR' = RS' - ORS``, ``RR' = RS' - T`` (CC:53-60)."""
        ors = self.ors
        rs = distinct(tuple(target) + ors)
        return Assignment(rs=rs, ar=list_minus(rs, ors), rr=list_minus(rs, target))


@dataclass
class TopicInfo:
    name: str
    topic_id: str | None
    assignments: dict[int, Assignment]
    unclean: bool | None = None       # topic override of unclean.leader.election.enable; None = broker default
    version: int = 0                  # data version of /brokers/topics/<t>


@dataclass(frozen=True)
class ModelConfig:
    """Broker/cluster configuration and the Apache version whose behaviour is modelled (§10.1)."""

    version: Version = LATEST_ZK
    unclean_default: bool = False          # unclean.leader.election.enable (default false since 0.11)
    delete_topic_enable: bool = True       # default true since 1.0 (§11.3)
    auto_leader_rebalance: bool = True
    imbalance_percentage: int = 10         # leader.imbalance.per.broker.percentage (§4.7)


@dataclass
class ClusterState:
    """Everything the ZK-mode controller model tracks (§10.1)."""

    config: ModelConfig = field(default_factory=ModelConfig)
    registered: dict[int, int] = field(default_factory=dict)   # broker -> broker epoch (czxid of /brokers/ids/b)
    shutting_down: set[int] = field(default_factory=set)
    controller: int | None = None
    controller_epoch: int = 0
    controller_epoch_version: int = -1       # data version of /controller_epoch (-1 = node absent)
    topics: dict[str, TopicInfo] = field(default_factory=dict)
    partitions: dict[tuple[str, int], LeaderAndIsr] = field(default_factory=dict)
    deleting: set[str] = field(default_factory=set)          # topics queued for deletion (/admin/delete_topics)
    deletion_started: set[str] = field(default_factory=set)  # replicas were offlined (§6.2 step 4)
    reassign_znode: dict[tuple[str, int], tuple[int, ...]] | None = None   # /admin/reassign_partitions
    legacy_reassign: dict[tuple[str, int], tuple[int, ...]] = field(default_factory=dict)  # pre-2.4 in flight
    unclean_default: bool | None = None      # dynamic broker-default override (None: config.unclean_default)
    next_zxid: int = 1

    def clone(self) -> "ClusterState":
        return ClusterState(
            config=self.config, registered=dict(self.registered), shutting_down=set(self.shutting_down),
            controller=self.controller, controller_epoch=self.controller_epoch,
            controller_epoch_version=self.controller_epoch_version,
            topics={n: replace(t, assignments=dict(t.assignments)) for n, t in self.topics.items()},
            partitions=dict(self.partitions), deleting=set(self.deleting),
            deletion_started=set(self.deletion_started),
            reassign_znode=None if self.reassign_znode is None else dict(self.reassign_znode),
            legacy_reassign=dict(self.legacy_reassign), unclean_default=self.unclean_default,
            next_zxid=self.next_zxid)

    # -- liveness (§0.3) -------------------------------------------------------------------
    def is_live(self, b: int) -> bool:
        """live(b): registered and not shutting down (CC:218-222)."""
        return b in self.registered and b not in self.shutting_down

    def live_set(self) -> frozenset[int]:
        return frozenset(b for b in self.registered if b not in self.shutting_down)

    def at_least(self, gate: Version) -> bool:
        return self.config.version >= gate

    def assignment(self, tp: tuple[str, int]) -> Assignment:
        return self.topics[tp[0]].assignments[tp[1]]

    def unclean_allowed(self, topic: str) -> bool:
        """Effective ``unclean.leader.election.enable`` for a topic (§4.1.3)."""
        t = self.topics.get(topic)
        if t is not None and t.unclean is not None:
            return t.unclean
        return self.config.unclean_default if self.unclean_default is None else self.unclean_default

    def summary(self) -> dict:
        """A JSON-friendly snapshot, used in test failure messages and docs."""
        return {
            "registered": dict(sorted(self.registered.items())), "shutting_down": sorted(self.shutting_down),
            "controller": self.controller, "controller_epoch": self.controller_epoch,
            "partitions": {f"{t}-{p}": s.to_dict() for (t, p), s in sorted(self.partitions.items())},
            "assignments": {f"{t}-{p}": [list(a.rs), list(a.ar), list(a.rr)]
                            for t, ti in sorted(self.topics.items()) for p, a in sorted(ti.assignments.items())},
            "deleting": sorted(self.deleting),
        }
