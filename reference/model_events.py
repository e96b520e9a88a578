"""The inputs of the ZK-mode controller model (spec §10.2): one frozen dataclass per event, each
naming what happened (a broker registered or failed, a controlled shutdown, the controller race, an
admin request, a leader's ISR change, ...). :meth:`reference.model.ControllerModel.step` takes one
of these; the model dispatches on the class name (``_on_<Event>``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class BrokerStartup:
    """``/brokers/ids/b`` created (new broker) or re-created with a new czxid while the controller
    still knew the old one (bounce, §5.4)."""
    broker: int


@dataclass(frozen=True)
class BrokerFailure:
    """One ``/brokers/ids`` change removing ``brokers`` (session expiry or clean close, §5.2)."""
    brokers: tuple[int, ...]


@dataclass(frozen=True)
class BrokerBounce:
    """Broker restarted fast: the controller sees the same id with a new czxid in one change (§5.4)."""
    broker: int


@dataclass(frozen=True)
class ControlledShutdown:
    """ControlledShutdown request from ``broker`` (§5.5)."""
    broker: int


@dataclass(frozen=True)
class ControllerLost:
    """``/controller`` deleted (resignation, manual deletion as in SEED 004) while its broker stays up (§2.3)."""


@dataclass(frozen=True)
class ControllerElected:
    """The controller race (§2.1); ``broker=None`` means "any registered broker may win" (choice point)."""
    broker: int | None = None


@dataclass(frozen=True)
class CreateTopic:
    """Admin creates ``/brokers/topics/<topic>`` (§6.1). ``assignment``: partition -> RS."""
    topic: str
    assignment: tuple[tuple[int, tuple[int, ...]], ...]
    topic_id: str | None = None
    unclean: bool | None = None


@dataclass(frozen=True)
class DeleteTopic:
    """Admin creates ``/admin/delete_topics/<topic>`` (§6.2)."""
    topic: str


@dataclass(frozen=True)
class CompleteTopicDeletion:
    """All StopReplica(delete=true) responses for the topic arrived (§6.2 step 6)."""
    topic: str


@dataclass(frozen=True)
class AlterPartition:
    """Leader-initiated ISR change (AlterPartition §5.9, or the legacy direct write §5.10)."""
    topic: str
    partition: int
    isr: tuple[int, ...]


@dataclass(frozen=True)
class Reassign:
    """Reassignment request (§7.2): ``target=None`` cancels; ``via`` is ``"api"`` or ``"zk"``."""
    topic: str
    partition: int
    target: tuple[int, ...] | None
    via: str = "api"


@dataclass(frozen=True)
class ElectPreferred:
    """Manual preferred-replica election (ElectLeaders PREFERRED / the znode, §4.3, §4.7)."""
    partitions: tuple[tuple[str, int], ...] | None = None


@dataclass(frozen=True)
class AutoRebalance:
    """One run of the auto leader rebalance task (§4.7, D13)."""


@dataclass(frozen=True)
class ElectUnclean:
    """ElectLeaders(UNCLEAN) from the Admin API (2.4+, §4.7)."""
    partitions: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class SetUnclean:
    """``unclean.leader.election.enable`` changed for ``topic`` (or the broker default when None) (D19)."""
    topic: str | None
    enabled: bool


Event = Any
