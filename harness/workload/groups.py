"""The consumer-group workload: the plain idempotent producers of :class:`harness.workload.Workload`
and ``members`` consumers in one consumer group (subscribe mode, manual commits), recorded in the
history format of docs/transactions.md ("Consumer groups": ``group.assign``, ``group.revoke``,
``group.poll``, ``group.commit``) that :func:`harness.checkers.groups.check_groups` judges.

Each member (process ``<prefix>m<i>``) commits, synchronously, the position after the records it
processed once per consumed batch and on every revocation (so a new owner starts where it stopped).
The generation each event carries is the one librdkafka holds at that moment, read from the
consumer's group metadata (``consumer_group_metadata()``: librdkafka's serialized
``rd_kafka_consumer_group_metadata_t``, ``CGMDv2:`` + generation id + group id + member id). With
``group.protocol=consumer`` that number is the member's own epoch, not a group generation: it is
recorded as ``member_epoch`` on ``group.assign`` and ``generation`` is null.

Variants: ``group_protocol`` ``classic`` (JoinGroup/SyncGroup, eager ``range,roundrobin``
assignment) or ``consumer`` (KIP-848, Kafka 4.x brokers; the broker assigns); ``static`` gives every
member a ``group.instance.id`` (its process name). :meth:`GroupWorkload.pause_member` stops one member
from polling (a stalled application: past ``max.poll.interval.ms`` it is removed from the group);
``client_crash`` ends one without committing what it processed since its last commit (librdkafka's
close still sends LeaveGroup for a dynamic member; a static member sends none, KIP-345, so its
partitions wait for the session timeout).
"""

from __future__ import annotations

import struct
import threading
import time
from dataclasses import asdict, dataclass
from typing import Callable

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from harness.clientlog import with_logger
from harness.errors import HarnessError

from harness.workload.config import WorkloadConfig, recorded_settings
from harness.workload.consumer import ClientThread, consumer_settings
from harness.workload.outcomes import count_error, error_name
from harness.workload.workload import Workload

Emit = Callable[..., object]
_MAGIC = b"CGMDv2:"


def parse_group_metadata(blob) -> dict:
    """``{"generation", "group", "member_id"}`` from librdkafka's serialized consumer group metadata
    (``CGMDv2:`` + int32 generation id in host byte order + NUL-terminated group id and member id);
    generation None when the blob has another form."""
    if not isinstance(blob, (bytes, bytearray)) or not blob.startswith(_MAGIC) or len(blob) < len(_MAGIC) + 4:
        return {"generation": None, "group": None, "member_id": None}
    gen = struct.unpack("=i", blob[len(_MAGIC):len(_MAGIC) + 4])[0]
    rest = bytes(blob[len(_MAGIC) + 4:]).split(b"\x00")
    group = rest[0].decode("utf-8", "replace") if rest else None
    member = rest[1].decode("utf-8", "replace") if len(rest) > 1 else None
    return {"generation": gen if gen >= 0 else None, "group": group, "member_id": member or None}


@dataclass
class GroupWorkloadConfig(WorkloadConfig):
    """:class:`WorkloadConfig` plus the group's members (a scenario's ``workload`` with ``kind: "group"``)."""

    kind: str = "group"
    members: int = 3
    group_protocol: str = "classic"      # classic | consumer (KIP-848)
    static: bool = False                 # group.instance.id per member
    session_timeout_ms: int = 10_000     # classic only (KIP-848: the broker's group.consumer.session.timeout.ms)
    max_poll_interval_ms: int = 10_000

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.group_protocol not in ("classic", "consumer"):
            raise ValueError(f"group_protocol must be classic or consumer, not {self.group_protocol!r}")
        if self.members < 1:
            raise ValueError("members must be >= 1")

    @property
    def group(self) -> str:
        return self.group_id or f"kc-g-{self.process_prefix}{self.topic}"

    def to_metadata(self) -> dict:
        d = super().to_metadata()
        d["group_id"] = self.group
        return d


class GroupMemberProcess(ClientThread):
    """One member of the group (process ``<prefix>m<i>``)."""

    def __init__(self, name: str, bootstrap: str, cfg: GroupWorkloadConfig, emit: Emit, stop: threading.Event):
        super().__init__(name, cfg, emit, stop, f"group-member-{name}")
        extra = {"max.poll.interval.ms": cfg.max_poll_interval_ms, **cfg.consumer_config}
        if cfg.group_protocol == "consumer":
            extra["group.protocol"] = "consumer"
        else:
            extra.update({"session.timeout.ms": cfg.session_timeout_ms,
                          "heartbeat.interval.ms": max(500, cfg.session_timeout_ms // 5)})
        if cfg.static:
            extra["group.instance.id"] = name
        self.settings = consumer_settings(bootstrap, cfg.group, f"kafka-chaos-{name}", extra)
        self.commits = 0
        self._pause_until = 0.0
        self._op = 0
        self.generation: int | None = None
        self.assigned = False           # it got partitions of the topic at least once
        self.owned_now: frozenset = frozenset()   # the topic's partitions it owns now (set by its thread)
        self.commits_at_assign = 0      # its commits when it got its current partitions

    # -- control
    def pause(self, seconds: float) -> None:
        self._pause_until = time.monotonic() + seconds

    @property
    def mode(self) -> str:
        return "subscribe"

    def life(self, state: str, error: str | None = None) -> None:
        self.emit("client.life", process=self.name, role="consumer", state=state, error=error, mode="subscribe",
                  group=self.cfg.group)

    # -- the loop
    def _meta(self, consumer: Consumer) -> dict:
        try:
            return parse_group_metadata(consumer.consumer_group_metadata())
        except (KafkaException, RuntimeError):
            return {"generation": None, "group": None, "member_id": None}

    def _commit(self, consumer: Consumer, positions: dict, why: str) -> None:
        """Commit ``{partition: next offset}`` synchronously, one ``group.commit`` invoke + completion
        per partition."""
        if not positions:
            return
        topic, group, gen = self.cfg.topic, self.cfg.group, self.generation
        ops = {}
        for p, off in sorted(positions.items()):
            self._op += 1
            ops[p] = self._op
            self.emit("group.commit", process=self.name, group=group, generation=gen, op_id=self._op,
                      phase="invoke", topic=topic, partition=p, offset=off, error=None, why=why)
        err = None
        try:
            consumer.commit(offsets=[TopicPartition(topic, p, off) for p, off in positions.items()],
                            asynchronous=False)
        except KafkaException as e:
            ke = e.args[0] if e.args and isinstance(e.args[0], KafkaError) else None
            err = error_name(ke) if ke is not None else str(e)
            self.errors[err] = self.errors.get(err, 0) + 1
        for p, off in sorted(positions.items()):
            # a failed commit may still have been written (a timeout): "info", outcome unknown
            self.emit("group.commit", process=self.name, group=group, generation=gen, op_id=ops[p],
                      phase="ok" if err is None else "info", topic=topic, partition=p, offset=off, error=err)
        if err is None:
            self.commits += 1

    def _run(self) -> None:
        cfg, emit, name, topic, group = self.cfg, self.emit, self.name, self.cfg.topic, self.cfg.group
        emit("client.config", process=name, role="consumer",
             config={"mode": "subscribe", **recorded_settings(self.settings)})
        consumer = Consumer(with_logger(self.settings))
        owned: set[int] = set()
        done: dict[int, int] = {}      # partition -> next offset after what was processed, not committed yet

        def parts(ps) -> list:
            return [[tp.topic, tp.partition] for tp in ps]

        def on_assign(c, ps):
            meta = self._meta(c)
            # classic: the group's generation. KIP-848: librdkafka's number is this member's own epoch, which
            # two members may share without being in one round, so it is recorded as member_epoch only
            # (the checker's double-consume then has no generation to compare)
            self.generation = meta["generation"] if cfg.group_protocol == "classic" else None
            epoch = {} if cfg.group_protocol == "classic" else {"member_epoch": meta["generation"]}
            owned.update(tp.partition for tp in ps if tp.topic == topic)
            self.owned_now, self.commits_at_assign = frozenset(owned), self.commits
            self.assigned = self.assigned or any(tp.topic == topic for tp in ps)
            emit("group.assign", process=name, group=group, generation=self.generation,
                 member_id=meta["member_id"], protocol=cfg.group_protocol, partitions=parts(ps), **epoch)

        def revoke(c, ps, lost: bool):
            gone = {tp.partition for tp in ps if tp.topic == topic}
            if not lost and not self._halt.is_set():  # hand over: commit what was processed of the revoked partitions
                self._commit(c, {p: done[p] for p in gone if p in done}, "revoke")
            for p in gone:
                done.pop(p, None)
            owned.difference_update(gone)
            self.owned_now = frozenset(owned)
            emit("group.revoke", process=name, group=group, generation=self.generation, partitions=parts(ps),
                 lost=lost)

        consumer.subscribe([topic], on_assign=on_assign, on_revoke=lambda c, ps: revoke(c, ps, False),
                           on_lost=lambda c, ps: revoke(c, ps, True))
        self.life("started", None)
        deadline = time.monotonic() + cfg.consumer_max_s
        try:
            while not self.stop_event.is_set() and not self._halt.is_set() and time.monotonic() < deadline:
                if time.monotonic() < self._pause_until:
                    time.sleep(0.1)      # a stalled application: no poll (librdkafka keeps heartbeating)
                    continue
                msgs = consumer.consume(num_messages=500, timeout=cfg.poll_timeout_s)
                for msg in msgs:
                    err = msg.error()
                    if err is not None:
                        count_error(self.errors, err)
                        continue
                    if self._halt.is_set():
                        break
                    self.records += 1
                    raw = msg.value()
                    emit("group.poll", process=name, group=group, generation=self.generation, topic=msg.topic(),
                         partition=msg.partition(), offset=msg.offset(),
                         value=raw.decode("utf-8", "replace") if raw is not None else None)
                    if msg.partition() in owned:
                        done[msg.partition()] = msg.offset() + 1
                if self._halt.is_set():
                    break
                if done:
                    self._commit(consumer, dict(done), "batch")
                    done.clear()
        finally:
            # crashed: nothing more is committed; librdkafka's close still sends LeaveGroup for a dynamic
            # member (a Python thread cannot be killed), a static member sends none (KIP-345)
            consumer.close()


class GroupWorkload(Workload):
    """Producers as in :class:`Workload` (``client`` sends, the same drain) and the group's members."""

    def __init__(self, bootstrap: str, config: GroupWorkloadConfig, emit: Emit):
        cfg = GroupWorkloadConfig(**{**asdict(config), "assign_consumers": 0, "subscribe_consumers": 0}) \
            if (config.assign_consumers or config.subscribe_consumers) else config
        super().__init__(bootstrap, cfg, emit)
        pre = cfg.process_prefix
        self.consumers = [GroupMemberProcess(f"{pre}m{i}", bootstrap, cfg, emit, self._stop_consumers)
                          for i in range(cfg.members)]

    def formed(self) -> bool:
        """Every member got partitions and committed offsets at least once: the group formed and works.
        A member whose client ended first raises HarnessError: the wait cannot succeed, and a client's end
        is no expectation on the broker (the run is UNKNOWN, not FAIL)."""
        for c in self.consumers:
            if c.error is not None:
                raise HarnessError(f"group member {c.name} ended before the group formed: {c.error}")
        return all(c.assigned and c.commits > 0 for c in self.consumers)

    def _member(self, name: str) -> GroupMemberProcess:
        """Member ``name`` (``m1`` or with the prefix); LookupError naming the members when there is none."""
        procs = {c.name: c for c in self.consumers}
        proc = procs.get(name) or procs.get(self.config.process_prefix + name)
        if proc is None:
            raise LookupError(f"no member {name!r}; the group has {', '.join(sorted(procs))}")
        return proc

    def taken_over(self, gone: str) -> bool:
        """Member ``gone`` (``m1`` or with the prefix) has ended, and the members still running own every
        partition of the topic between them, each having committed since it got its current ones: the
        group rebalanced without it and consumes again. A member ending meanwhile raises HarnessError
        (as in :meth:`formed`)."""
        g = self._member(gone)
        others = [c for c in self.consumers if c is not g]
        for c in others:
            if c.error is not None:
                raise HarnessError(f"group member {c.name} ended while the group took over from {g.name}: {c.error}")
        if g.thread.is_alive():
            return False
        owned: set[int] = set()
        for c in others:
            if c.owned_now and c.commits <= c.commits_at_assign:
                return False
            owned |= c.owned_now
        return owned >= set(self.config.partition_ids)

    def formation_bound_s(self, broker_config: dict) -> float:
        """How long forming the group may take, from the broker's own settings: its initial rebalance delay
        (``group.initial.rebalance.delay.ms``, default 3 s) plus one session timeout (the member's
        ``session.timeout.ms``; KIP-848: the broker's ``group.consumer.session.timeout.ms``, default 45 s),
        a join waiting at most that long for the others, plus 30 s for a loaded machine. Defaults from
        Kafka's GroupCoordinatorConfig.java."""
        delay = int(broker_config.get("group.initial.rebalance.delay.ms", 3000)) / 1000
        if self.config.group_protocol == "consumer":
            session = int(broker_config.get("group.consumer.session.timeout.ms", 45000)) / 1000
        else:
            session = self.config.session_timeout_ms / 1000
        return delay + session + 30.0

    def pause_member(self, target: str, seconds: float) -> str:
        """Stop member ``target`` (``m1`` or with the prefix) from polling for ``seconds``."""
        proc = self._member(target)
        proc.pause(seconds)
        self.emit("group.member_paused", process=proc.name, group=self.config.group, seconds=seconds)
        return proc.name

    def add_member(self, name: str, consumer_config: dict | None = None) -> str:
        """Start one more member mid-run (process ``<prefix><name>``, ``consumer_config`` on top of the
        workload's: e.g. another member's ``group.instance.id``, a misconfigured group for a negative control);
        recorded as ``group.member_added``."""
        full = self.config.process_prefix + name
        if full in {c.name for c in self.consumers}:
            raise ValueError(f"the group already has a member {full!r}")
        extra = dict(consumer_config or {})
        cfg = GroupWorkloadConfig(**{**asdict(self.config), "consumer_config": {**self.config.consumer_config, **extra},
                                     "static": self.config.static and "group.instance.id" not in extra})
        proc = GroupMemberProcess(full, self.bootstrap, cfg, self.emit, self._stop_consumers)
        self.consumers.append(proc)
        self.emit("group.member_added", process=full, group=cfg.group, consumer_config=extra)
        proc.thread.start()
        return full

    def stats(self) -> dict:
        out = super().stats()
        out["consumers"] = {c.name: {"mode": "subscribe", "records": c.records, "commits": c.commits,
                                     "errors": dict(c.errors), "error": c.error} for c in self.consumers}
        return out

