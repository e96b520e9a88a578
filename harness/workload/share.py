"""The share-group workload (KIP-932, queues for Kafka): the idempotent producers of
:class:`harness.workload.Workload` and ``members`` consumers of one share group
(``confluent_kafka.ShareConsumer``, explicit acknowledgement), recorded in the history that
:func:`harness.checkers.share.check_share` judges (docs/share-groups.md "History").

Each member (process ``<prefix>m<i>``) loops: ``share.fetch`` (a poll begins) -> ``poll`` -> for each
record ``share.poll`` (delivered and processed: the record's ``delivery_count``) -> ``acknowledge``
(``share.ack``: accept, or release / reject with the ``release_rate`` / ``reject_rate`` of a seeded
random draw) -> ``commit_sync``; the broker's answer comes back through the acknowledgement-commit
callback as ``share.ack_result`` (offsets of one partition, error or null).

Faults on members: :meth:`ShareWorkload.pause_member` holds the member's next batch un-acknowledged
for ``seconds`` (past ``share.record.lock.duration.ms`` the locks expire and the records go to other
members; its late acknowledgements come back refused); ``client_crash`` ends a member without
acknowledging what it holds (``close()`` leaves the group: the broker releases its acquisitions).
``slow_members`` members sleep ``slow_ms`` per record. ``ack_before_process`` (a negative control, a
misbehaving application): that member accepts and commits each batch before processing it, and a
crash lands between the two, so the batch it accepted is never processed.

The group's own settings (``share.auto.offset.reset``, ``share.record.lock.duration.ms``,
``share.delivery.count.limit``) are set as group configs (IncrementalAlterConfigs, resource GROUP)
before the members start: ``auto_offset_reset`` "earliest" by default (Kafka's default, "latest",
skips what was written before the group's first member came). At the end :meth:`drain` lets the members
go on until every acknowledged write reached a final state (accepted, rejected, archived at the limit)
or none got anything for longer than a lock (``share.drain`` ``idle``), then stops them and reads every
partition to its end as every workload does.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import asdict, dataclass
from typing import Callable

from harness.clientlog import with_logger
from harness.errors import HarnessError
from harness.workload.config import WorkloadConfig, connection, recorded_settings
from harness.workload.consumer import ClientThread
from harness.workload.outcomes import count_error, error_name
from harness.workload.workload import Workload

Emit = Callable[..., object]
ACKS = ("accept", "release", "reject")


@dataclass
class ShareWorkloadConfig(WorkloadConfig):
    """:class:`WorkloadConfig` plus the share group (a scenario's ``workload`` with ``kind: "share"``)."""

    kind: str = "share"
    members: int = 3
    release_rate: float = 0.05          # a record released for redelivery
    reject_rate: float = 0.01           # a record rejected (archived, not delivered again)
    record_lock_duration_ms: int = 15_000   # group config share.record.lock.duration.ms (broker min 15 s)
    delivery_count_limit: int = 5       # group config share.delivery.count.limit (2..10)
    auto_offset_reset: str = "earliest"  # group config share.auto.offset.reset
    slow_members: int = 0
    slow_ms: int = 0
    ack_before_process: list | None = None   # members (m0, ...) that accept before processing
    share_drain_s: float = 90.0         # bound of the members' final consumption
    dlq_topic: str | None = None        # group config errors.deadletterqueue.topic.name (share.version 2, 4.4+)
    # the DLQ topic's own switch errors.deadletterqueue.group.enable (False: a negative control; the broker then
    # logs "DLQ is not enabled on configured DLQ topic" and archives without writing)
    dlq_topic_enable: bool = True
    seed: int = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.members < 1:
            raise ValueError("members must be >= 1")
        if not (0 <= self.release_rate <= 1 and 0 <= self.reject_rate <= 1 and self.release_rate + self.reject_rate <= 1):
            raise ValueError("release_rate and reject_rate must be in [0, 1] with a sum <= 1")
        if self.auto_offset_reset not in ("earliest", "latest"):
            raise ValueError(f"auto_offset_reset must be earliest or latest, not {self.auto_offset_reset!r}")

    @property
    def group(self) -> str:
        return self.group_id or f"kc-s-{self.process_prefix}{self.topic}"

    @property
    def drain_idle_s(self) -> float:
        """Quiet time after which the group has nothing more to give: a lock's duration (a timed-out
        record comes back after it) plus 5 s."""
        return self.record_lock_duration_ms / 1000 + 5.0

    def group_configs(self) -> dict:
        out = {"share.auto.offset.reset": self.auto_offset_reset,
               "share.record.lock.duration.ms": str(self.record_lock_duration_ms),
               "share.delivery.count.limit": str(self.delivery_count_limit)}
        if self.dlq_topic:
            out["errors.deadletterqueue.topic.name"] = self.dlq_topic
        return out

    def to_metadata(self) -> dict:
        d = super().to_metadata()
        d["group_id"] = self.group
        return d


def set_group_configs(bootstrap, group: str, configs: dict, timeout_s: float = 30.0) -> None:
    """Set the share group's configs (IncrementalAlterConfigs on the GROUP resource); HarnessError when
    the cluster refuses (a broker without share groups, a value out of the broker's range)."""
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
    admin = AdminClient(with_logger(connection(bootstrap)))
    res = ConfigResource("GROUP", group, incremental_configs=[
        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in configs.items()])
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            for f in admin.incremental_alter_configs([res]).values():
                f.result(timeout=10)
            return
        except Exception as e:  # noqa: BLE001 - retried while the cluster comes up, then named
            if time.monotonic() >= deadline:
                raise HarnessError(f"share group {group}: setting {configs} failed: {e}") from e
            time.sleep(1.0)


DLQ_HEADERS = {"__dlq.errors.topic": "topic", "__dlq.errors.partition": "partition",
               "__dlq.errors.offset": "offset", "__dlq.errors.delivery.count": "delivery_count",
               "__dlq.errors.group": "group", "__dlq.errors.message": "message"}   # ShareGroupDLQStateManager 4.4.0


def _header_value(raw):
    """A DLQ header's value: an integer when it is one (a decimal string, or 4 / 8 big-endian bytes)."""
    if raw is None:
        return None
    text = raw.decode("utf-8", "replace") if isinstance(raw, (bytes, bytearray)) else str(raw)
    if text.strip().lstrip("-").isdigit():
        return int(text)
    if isinstance(raw, (bytes, bytearray)) and len(raw) in (4, 8):
        return int.from_bytes(raw, "big", signed=True)
    return text


def create_dlq_topic(bootstrap, topic: str, enable: bool = True) -> None:
    """The dead-letter topic (1 partition, replication 3; the broker does not create it:
    errors.deadletterqueue.auto.create.topics.enable is false by default) with its topic config
    ``errors.deadletterqueue.group.enable`` (without it a 4.4.0 broker refuses to write there:
    ShareGroupDLQStateManager.validateDlqTopic); existing is fine."""
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient(with_logger(connection(bootstrap)))
    conf = {"errors.deadletterqueue.group.enable": "true"} if enable else {}
    for f in admin.create_topics([NewTopic(topic, 1, 3, config=conf)]).values():
        try:
            f.result(timeout=30)
        except Exception as e:  # noqa: BLE001
            if "TOPIC_ALREADY_EXISTS" not in str(e):
                raise HarnessError(f"creating the dead-letter topic {topic} failed: {e}") from e


def read_dlq(bootstrap, topic: str, emit: Emit, group: str, want: int, timeout_s: float = 30.0) -> int:
    """Read the dead-letter topic from its start until ``want`` records or ``timeout_s`` (the broker writes
    it asynchronously); one ``share.dlq`` event per record with the original position from its headers."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
    c = Consumer(with_logger({**connection(bootstrap), "group.id": f"kafka-chaos-dlq-{topic}",
                              "enable.auto.commit": False, "enable.partition.eof": False}))
    c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    n, end = 0, time.monotonic() + timeout_s
    try:
        while time.monotonic() < end and n < want:
            for m in c.consume(num_messages=500, timeout=0.5):
                if m.error() is not None:
                    continue
                h = {DLQ_HEADERS[k]: _header_value(v) for k, v in (m.headers() or []) if k in DLQ_HEADERS}
                ints = {k: h.get(k) if type(h.get(k)) is int else None for k in ("partition", "offset", "delivery_count")}
                emit("share.dlq", process="dlq", group=group, dlq_topic=topic, dlq_offset=m.offset(),
                     topic=str(h["topic"]) if h.get("topic") is not None else None,
                     message=str(h["message"]) if h.get("message") is not None else None, **ints)
                n += 1
    finally:
        c.close()
    return n


class ShareMemberProcess(ClientThread):
    """One member of the share group (process ``<prefix>m<i>``)."""

    mode = "share"

    def __init__(self, name: str, bootstrap, cfg: ShareWorkloadConfig, emit: Emit, stop: threading.Event,
                 index: int, tracker: "_Tracker"):
        super().__init__(name, cfg, emit, stop, f"share-member-{name}")
        self.tracker = tracker
        self.settings = {**connection(bootstrap), "group.id": cfg.group, "client.id": f"kafka-chaos-{name}",
                         "share.acknowledgement.mode": "explicit", **cfg.consumer_config}
        self.slow_s = cfg.slow_ms / 1000 if index < cfg.slow_members else 0.0
        short = name[len(cfg.process_prefix):]
        self.ack_first = short in (cfg.ack_before_process or ())
        self.rng = random.Random(f"{cfg.seed}-{name}")
        self.acks = 0
        self._pause_s = 0.0
        self._crash_at: float | None = None
        self.last_delivery = 0.0

    def pause(self, seconds: float) -> None:
        self._pause_s = seconds

    def crash(self) -> None:
        """End this member at its next non-empty poll (bounded: 5 s of empty polls end it anyway), holding
        that batch: never acknowledged (or, with ``ack_before_process``, accepted but never processed)."""
        self._crash_at = time.monotonic()

    def life(self, state: str, error: str | None = None) -> None:
        self.emit("client.life", process=self.name, role="share-consumer", state=state, error=error,
                  mode="share", group=self.cfg.group)

    def _on_commit(self, offsets, exc) -> None:
        err = None
        if exc is not None:
            ke = exc.args[0] if getattr(exc, "args", None) else None
            err = error_name(ke) if hasattr(ke, "code") else str(exc)
        for tp, offs in offsets.items():
            perr = err
            if perr is None and getattr(tp, "error", None) is not None:
                perr = error_name(tp.error)
            if perr is not None:
                self.errors[perr] = self.errors.get(perr, 0) + 1
            self.emit("share.ack_result", process=self.name, group=self.cfg.group, topic=tp.topic,
                      partition=tp.partition, offsets=sorted(offs), error=perr)
            self.tracker.result(self.name, tp.topic, tp.partition, offs, perr)

    def _choose(self) -> str:
        x = self.rng.random()
        return "release" if x < self.cfg.release_rate else (
            "reject" if x < self.cfg.release_rate + self.cfg.reject_rate else "accept")

    def _run(self) -> None:
        from confluent_kafka import AcknowledgeType, ShareConsumer
        ack_types = {"accept": AcknowledgeType.ACCEPT, "release": AcknowledgeType.RELEASE,
                     "reject": AcknowledgeType.REJECT}
        cfg, emit, name, group = self.cfg, self.emit, self.name, self.cfg.group
        emit("client.config", process=name, role="share-consumer", config=recorded_settings(self.settings))
        consumer = ShareConsumer(with_logger(self.settings))
        consumer.set_acknowledgement_commit_callback(self._on_commit)
        consumer.subscribe([cfg.topic])
        self.life("started", None)
        deadline = time.monotonic() + cfg.consumer_max_s
        try:
            while not self.stop_event.is_set() and not self._halt.is_set() and time.monotonic() < deadline:
                fetch = emit("share.fetch", process=name, group=group) or {}
                msgs = [m for m in consumer.poll(1.0) if self._good(m)]
                if self._crash_at is not None and (msgs or time.monotonic() - self._crash_at > 5.0):
                    emit("share.member_crashed", process=name, group=group, holding=len(msgs),
                         reason="ack_before_process" if self.ack_first else "client_crash")
                    self._halt.set()
                if not msgs:
                    continue
                self.last_delivery = time.monotonic()
                if self.ack_first:      # the negative control: accept and commit, then process
                    for m in msgs:
                        consumer.acknowledge(m, ack_types["accept"])
                        self._ack_event(m, "accept")
                    consumer.commit_sync(30)
                    if self._halt.is_set():
                        return          # crashed before processing what it accepted
                for m in msgs:
                    raw = m.value()
                    emit("share.poll", process=name, group=group, topic=m.topic(), partition=m.partition(),
                         offset=m.offset(), delivery_count=m.delivery_count(), fetch_t=fetch.get("t"),
                         value=raw.decode("utf-8", "replace") if raw is not None else None)
                    self.records += 1
                    self.tracker.delivered(m.topic(), m.partition(), m.offset(), m.delivery_count())
                    if self.slow_s:
                        time.sleep(self.slow_s)
                if self.ack_first:
                    continue
                if self._pause_s:       # hold the batch un-acknowledged: past the lock it goes elsewhere
                    seconds, self._pause_s = self._pause_s, 0.0
                    end = time.monotonic() + seconds
                    while time.monotonic() < end and not self._halt.is_set():
                        time.sleep(0.1)
                if self._halt.is_set():
                    return              # crashed holding the batch: close() leaves, the broker releases
                for m in msgs:
                    how = self._choose()
                    consumer.acknowledge(m, ack_types[how])
                    self._ack_event(m, how)
                try:
                    consumer.commit_sync(30)
                except Exception as e:  # noqa: BLE001 - the callback has the per-partition answer
                    self.errors[f"commit: {type(e).__name__}"] = self.errors.get(f"commit: {type(e).__name__}", 0) + 1
        finally:
            try:
                consumer.close()
            except Exception as e:  # noqa: BLE001 - recorded, the member ends either way
                self.errors[f"close: {type(e).__name__}"] = self.errors.get(f"close: {type(e).__name__}", 0) + 1

    def _good(self, m) -> bool:
        if m.error() is not None:
            count_error(self.errors, m.error())
            return False
        return True

    def _ack_event(self, m, how: str) -> None:
        self.acks += 1
        self.emit("share.ack", process=self.name, group=self.cfg.group, topic=m.topic(), partition=m.partition(),
                  offset=m.offset(), ack=how)
        self.tracker.acked(self.name, m.topic(), m.partition(), m.offset(), how)


class _Tracker:
    """What the workload itself knows of each record's state, to end its drain once every acknowledged
    write is final (the checker decides from the record; this only saves waiting)."""

    def __init__(self, limit: int):
        self.limit = limit
        self.lock = threading.Lock()
        self.acked_writes: set = set()
        self.final: set = set()
        self.dead_set: set = set()      # rejected or archived: what a dead-letter topic should get
        self.pending: dict = {}         # (process, topic, partition, offset) -> ack type
        self.count: dict = {}           # (topic, partition, offset) -> last delivery count

    def write(self, ev: dict) -> None:
        if ev.get("type") == "client" and ev.get("f") == "send" and ev.get("phase") == "ok":
            with self.lock:
                self.acked_writes.add((ev.get("topic"), ev.get("partition"), ev.get("offset")))

    def delivered(self, topic, partition, offset, count) -> None:
        with self.lock:
            self.count[(topic, partition, offset)] = count

    def acked(self, proc, topic, partition, offset, how) -> None:
        with self.lock:
            self.pending[(proc, topic, partition, offset)] = how

    def result(self, proc, topic, partition, offsets, error) -> None:
        with self.lock:
            for off in offsets:
                how = self.pending.pop((proc, topic, partition, off), None)
                pos = (topic, partition, off)
                if error is None and (how in ("accept", "reject") or
                                      (how == "release" and (self.count.get(pos) or 0) >= self.limit)):
                    self.final.add(pos)
                    if how != "accept":
                        self.dead_set.add(pos)

    def dead(self) -> int:
        with self.lock:
            return len(self.dead_set)

    def open(self) -> int:
        with self.lock:
            return len(self.acked_writes - self.final)


class ShareWorkload(Workload):
    """Producers as in :class:`Workload` (the same drain) and the share group's members."""

    def __init__(self, bootstrap, config: ShareWorkloadConfig, emit: Emit):
        cfg = ShareWorkloadConfig(**{**asdict(config), "assign_consumers": 0, "subscribe_consumers": 0}) \
            if (config.assign_consumers or config.subscribe_consumers) else config
        self.tracker = _Tracker(cfg.delivery_count_limit)
        tracker, outer = self.tracker, emit

        def tracked(type_, **fields):
            ev = outer(type_, **fields)
            if type_ == "client":
                tracker.write({"type": type_, **fields})
            return ev

        super().__init__(bootstrap, cfg, tracked)
        pre = cfg.process_prefix
        self.consumers = [ShareMemberProcess(f"{pre}m{i}", bootstrap, cfg, tracked, self._stop_consumers, i,
                                             self.tracker) for i in range(cfg.members)]
        self.attached: list = []        # observers of the group stopped after the drain (attach)

    def attach(self, observer) -> None:
        """Keep ``observer`` (anything with ``stop()``, e.g. the SPSO sampler of
        harness/observer/share_sampler.py, started by the scenario) running until the members have
        stopped at the end of :meth:`drain`: what it samples covers the whole consumption."""
        self.attached.append(observer)

    def start(self):
        if self.config.dlq_topic:
            create_dlq_topic(self.bootstrap, self.config.dlq_topic, self.config.dlq_topic_enable)
        set_group_configs(self.bootstrap, self.config.group, self.config.group_configs())
        return super().start()

    def stop(self, timeout: float | None = None) -> bool:
        """Stop the producers only: the members go on consuming until :meth:`drain`."""
        self._stop_producing(timeout)
        alive = [p.thread.name for p in self.producers if p.thread.is_alive()]
        self.emit("phase", name="workload.stop", topic=self.config.topic, still_running=alive)
        return not alive

    def drain(self, timeout_s: float = 60.0) -> dict:
        """The members consume until every acknowledged write is final or none got a record for
        :attr:`ShareWorkloadConfig.drain_idle_s` (``share.drain`` ``idle`` True), bounded by ``share_drain_s``
        (then ``idle`` False: the checker's end checks are undecided); then they stop and every partition
        is read to its end (:func:`harness.workload.drain`)."""
        cfg = self.config
        t0 = time.monotonic()
        end = t0 + cfg.share_drain_s
        idle = False
        while time.monotonic() < end:
            live = [c for c in self.consumers if c.thread.is_alive()]
            if not live:
                break
            if self.tracker.open() == 0:
                idle = True
                break
            last = max([c.last_delivery for c in live] + [t0])
            if time.monotonic() - last >= cfg.drain_idle_s:
                idle = True
                break
            time.sleep(0.2)
        self.emit("share.drain", group=cfg.group, idle=idle, seconds=round(time.monotonic() - t0, 3),
                  open=self.tracker.open())
        self._stop_consumers.set()
        for c in self.consumers:
            c.thread.join(30)
        for ob in self.attached:
            try:
                ob.stop()
            except Exception as e:  # noqa: BLE001 - an observer's end never stops the drain; recorded
                self.emit("phase", name="observer.error", error=f"{type(e).__name__}: {e}")
        if cfg.dlq_topic:
            got = read_dlq(self.bootstrap, cfg.dlq_topic, self.emit, cfg.group, self.tracker.dead())
            self.emit("share.dlq_read", group=cfg.group, dlq_topic=cfg.dlq_topic, records=got,
                      expected=self.tracker.dead())
        return super().drain(timeout_s=timeout_s)

    def formed(self) -> bool:
        """Every member processed a record: the group formed and works. A member that ended first raises
        HarnessError (the run is UNKNOWN, not FAIL)."""
        for c in self.consumers:
            if c.error is not None:
                raise HarnessError(f"share member {c.name} ended before the group formed: {c.error}")
        return all(c.records > 0 for c in self.consumers)

    def member(self, name: str) -> ShareMemberProcess:
        procs = {c.name: c for c in self.consumers}
        proc = procs.get(name) or procs.get(self.config.process_prefix + name)
        if proc is None:
            raise LookupError(f"no member {name!r}; the share group has {', '.join(sorted(procs))}")
        return proc

    def pause_member(self, target: str, seconds: float) -> str:
        """Member ``target`` holds its next batch un-acknowledged for ``seconds``."""
        proc = self.member(target)
        proc.pause(seconds)
        self.emit("share.member_paused", process=proc.name, group=self.config.group, seconds=seconds)
        return proc.name

    def consuming_since(self, t: float) -> bool:
        """Some member still running got a record after monotonic time ``t``."""
        return any(c.last_delivery > t for c in self.consumers if c.thread.is_alive())

    def stats(self) -> dict:
        out = super().stats()
        out["consumers"] = {c.name: {"mode": "share", "records": c.records, "acks": c.acks,
                                     "errors": dict(c.errors), "error": c.error} for c in self.consumers}
        return out
