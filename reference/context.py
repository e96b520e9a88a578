"""The working context of one model step: mutable state copy, the ZooKeeper writes it makes, and
explicit choice points (spec §10.2 "nondeterminism the model must expose as choice points").

A handler never guesses: wherever Kafka leaves the outcome open (controller race winner, order in
which several brokers are processed, ...) it calls :meth:`Ctx.choose` with *all* allowed options.
:meth:`reference.model.ControllerModel.step` then explores every option (depth-first), so the
model returns the full set of allowed next states.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from reference.elections import remove_from_isr
from reference.state import NO_LEADER, Assignment, ClusterState, LeaderAndIsr

MAX_ORDER_OPTIONS = 120   # 5! -- beyond that the order choice falls back to a sorted order (documented)


@dataclass(frozen=True)
class Write:
    """One ZooKeeper write made by the step. ``kind`` matches the run-record ``zk.<kind>`` event type.

    ``zxid`` is the transaction id; a multi-op (e.g. ``/controller`` + ``/controller_epoch``)
    shares one zxid. ``rule`` says which spec rule caused the write.
    """

    kind: str
    key: Any
    value: Any
    rule: str
    zxid: int

    def sig(self) -> tuple:
        return (self.kind, self.key, repr(self.value), self.zxid)


@dataclass
class Ctx:
    s: ClusterState
    prefix: tuple[int, ...] = ()
    picker: Callable[[Sequence[Any], str], int] | None = None
    writes: list[Write] = field(default_factory=list)
    taken: list[int] = field(default_factory=list)
    widths: list[int] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)

    # -- choice points ---------------------------------------------------------------------
    def choose(self, options: Sequence[Any], label: str) -> Any:
        """Return one of ``options``; the model explores every one of them across branches."""
        if not options:
            raise ValueError(f"choice point {label!r} has no options")
        i = len(self.taken)
        if len(options) == 1:
            return options[0]
        if i < len(self.prefix):
            k = self.prefix[i]
        elif self.picker is not None:
            k = self.picker(options, label)
        else:
            k = 0
        self.taken.append(k)
        self.widths.append(len(options))
        self.labels.append(label)
        return options[k]

    def order(self, brokers, label: str) -> tuple[int, ...]:
        """Processing order of a broker batch: unspecified in Kafka (hash-map order, RSM:107-123, D8)."""
        bs = sorted(set(brokers))
        if len(bs) <= 1:
            return tuple(bs)
        perms = list(itertools.permutations(bs))
        if len(perms) > MAX_ORDER_OPTIONS:
            return tuple(bs)
        return self.choose(perms, label)

    # -- writes ----------------------------------------------------------------------------
    def zxid(self) -> int:
        z = self.s.next_zxid
        self.s.next_zxid += 1
        return z

    def emit(self, kind: str, key, value, rule: str, zxid: int | None = None) -> Write:
        w = Write(kind, key, value, rule, self.zxid() if zxid is None else zxid)
        self.writes.append(w)
        return w

    def write_state(self, tp, leader: int, isr, recovery: int, rule: str, bump: bool = True,
                    controller_epoch: int | None = None) -> LeaderAndIsr:
        """One CAS write of a partition state znode (§0.3): LE+1 when ``bump`` (D7), PE+1 always."""
        old = self.s.partitions[tp]
        new = LeaderAndIsr(leader=leader, leader_epoch=old.leader_epoch + (1 if bump else 0), isr=tuple(isr),
                           controller_epoch=self.s.controller_epoch if controller_epoch is None else controller_epoch,
                           recovery=recovery, version=old.version + 1)
        self.s.partitions[tp] = new
        self.emit("partition_state", tp, new, rule)
        return new

    def create_state(self, tp, leader: int, isr, rule: str) -> LeaderAndIsr:
        """§4.1.1: the state znode is created with LE 0, PE 0."""
        new = LeaderAndIsr(leader=leader, leader_epoch=0, isr=tuple(isr),
                           controller_epoch=self.s.controller_epoch, version=0)
        self.s.partitions[tp] = new
        self.emit("partition_state", tp, new, rule)
        return new

    def write_topic(self, topic: str, rule: str, deleted: bool = False) -> None:
        t = self.s.topics[topic]
        if not deleted:
            t.version += 1
        self.emit("topic", topic, (t.topic_id, tuple(sorted(t.assignments.items())), t.version, deleted), rule)

    def set_assignment(self, tp, a: Assignment) -> None:
        self.s.topics[tp[0]].assignments[tp[1]] = a

    def remove_replica_from_isr(self, tp, replica: int, rule: str) -> LeaderAndIsr | None:
        """§4.6 controller-side ISR removal (delegates the arithmetic to ``elections.remove_from_isr``)."""
        st = self.s.partitions.get(tp)
        if st is None:
            return None
        r = remove_from_isr(st.leader, st.isr, replica)
        if r is None:
            return None
        leader, isr = r
        return self.write_state(tp, leader, isr, st.recovery, rule)

    def offline_replicas(self, replicas: dict[int, list], rule: str, label: str) -> None:
        """OfflineReplica for a batch ``{broker: [tp, ...]}``, processed broker by broker (RSM:107-123)
        in an unspecified order (choice point, D8); one §4.6 write per partition whose ISR has the broker."""
        for b in self.order(replicas.keys(), label):
            for tp in sorted(replicas[b]):
                self.remove_replica_from_isr(tp, b, rule)

    def leader_online(self, tp) -> bool:
        st = self.s.partitions.get(tp)
        return st is not None and st.leader != NO_LEADER and self.s.is_live(st.leader)
