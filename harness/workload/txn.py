"""The transactional workload: producers with a ``transactional.id`` and read_committed consumers.

Each transaction sends ``sends_per_txn`` records to ``txn_partitions`` (>= 2) partitions of one topic
and then commits, or aborts on purpose at ``abort_ratio``. Everything is recorded in the history
format of docs/transactions.md (``txn.init``, ``txn`` invoke / ok / fail / info, ``txn.fenced``,
``txn.seek``, ``txn.poll``, ``partition.end``) that :func:`harness.checkers.txn.check_transactions`
judges. ``zombie_at_s``: a second producer with the same ``transactional.id`` starts that long after
the first, fencing it (the first records ``txn.fenced`` and ends).

Same life cycle as :class:`harness.workload.Workload`: ``start()`` -> faults -> ``stop()`` -> heal ->
``drain()``; every loop is bounded by time and count.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition

from harness.clientlog import with_logger

from harness.workload.config import partition_ids, recorded_settings
from harness.workload.consumer import ClientThread, consumer_settings
from harness.workload.outcomes import count_error, error_name
from harness.workload.workload import ClientGroup

from harness.workload.txn_producer import Emit, TxnProducerProcess


@dataclass
class TxnWorkloadConfig:
    """Settings of one :class:`TxnWorkload` (a scenario's ``workload`` dict with ``kind: "txn"``)."""

    topic: str
    partitions: int | list[int] = 3
    kind: str = "txn"
    transactional_id: str | None = None  # default "kc-tx-<prefix><topic>"
    rate: float = 20.0  # transactions per second per producer; 0 = back to back
    duration_s: float = 60.0
    max_txns: int = 100_000  # per producer
    sends_per_txn: int = 4
    txn_partitions: int = 2  # distinct partitions per transaction (>= 2 when the topic has them)
    abort_ratio: float = 0.2
    consumers: int = 1  # read_committed consumers reading every partition by assignment
    zombie_at_s: float | None = None  # start a second producer with the same transactional.id then
    transaction_timeout_ms: int = 20_000
    op_timeout_s: float = 30.0  # each init / commit / abort call, retried while retriable up to 2x this
    max_recreate: int = 5  # a producer re-created after a fatal error (not fencing) at most this often
    consumer_max_s: float = 900.0
    poll_timeout_s: float = 0.2
    seed: int = 0
    process_prefix: str = ""
    producer_config: dict = field(default_factory=dict)
    consumer_config: dict = field(default_factory=dict)
    # Jepsen's queue workload knobs (docs/transactions.md "Jepsen's options"); harness/workload/txn_rw.py
    producers: int = 1  # concurrent transactional producers, each its own transactional.id and process
    max_txn_length: int | None = None  # read-write transactions of 1..k micro-ops (None: send-only, sends_per_txn)
    poll_ratio: float = 0.5  # share of a read-write transaction's micro-ops that poll
    key_count: int | None = None  # partitions 0..key_count-1 are the keys (None: every partition of `partitions`)
    subscribe: bool = False  # read-write transactions read by subscription in one group (else by assignment)
    group_id: str | None = None  # default "kc-txg-<prefix><topic>" (assign mode: one group per producer slot)
    poll_max_records: int = 8  # records one poll micro-op takes at most
    txn_poll_timeout_s: float = 0.05  # how long one poll micro-op waits for records
    final_reads: bool = True  # read every partition to its end after the heal (the drain)
    # DELIBERATE MISCONFIGURATION, for the negative controls only (docs/transactions.md):
    transform_isolation: str = "read_committed"  # "read_uncommitted": the transform stage reads aborted records
    offsets_outside_txn: bool = False  # commit consumed offsets with the consumer, every 2 s, not in the transaction

    def __post_init__(self) -> None:
        if not self.topic:
            raise ValueError("TxnWorkloadConfig.topic is required")
        if self.kind != "txn":
            raise ValueError(f"TxnWorkloadConfig.kind must be 'txn', not {self.kind!r}")
        if not 0.0 <= self.abort_ratio <= 1.0:
            raise ValueError("abort_ratio must be in [0, 1]")
        if self.sends_per_txn < 1 or self.txn_partitions < 1 or self.max_txns < 1 or self.consumers < 0:
            raise ValueError("sends_per_txn, txn_partitions, max_txns must be >= 1, consumers >= 0")
        if self.rate < 0 or self.duration_s <= 0:
            raise ValueError("rate must be >= 0 and duration_s > 0")
        if not self.partition_ids:
            raise ValueError("partitions must name at least one partition")
        if self.producers < 1 or self.producers > 100:
            raise ValueError("producers must be in 1..100")
        if self.max_txn_length is not None and not 1 <= self.max_txn_length <= 100:
            raise ValueError("max_txn_length must be in 1..100")
        if not 0.0 <= self.poll_ratio <= 1.0:
            raise ValueError("poll_ratio must be in [0, 1]")
        if self.key_count is not None and not 1 <= self.key_count <= 10_000:
            raise ValueError("key_count must be in 1..10000")
        if self.transform_isolation not in ("read_committed", "read_uncommitted"):
            raise ValueError("transform_isolation must be 'read_committed' or 'read_uncommitted'")
        if self.poll_max_records < 1:
            raise ValueError("poll_max_records must be >= 1")
        if self.read_write and self.zombie_at_s is not None:
            raise ValueError("zombie_at_s applies to send-only transactions (max_txn_length unset)")

    @property
    def read_write(self) -> bool:
        """Read-write (consume-transform-produce) transactions: ``max_txn_length`` is set."""
        return self.max_txn_length is not None

    @property
    def partition_ids(self) -> list[int]:
        if self.key_count is not None:
            return list(range(self.key_count))
        return partition_ids(self.partitions)

    @property
    def tx_id(self) -> str:
        return self.transactional_id or f"kc-tx-{self.process_prefix}{self.topic}"

    def slot_tx_id(self, slot: int) -> str:
        """Producer slot ``slot``'s ``transactional.id``: ``tx_id`` for slot 0, ``<tx_id>-<slot>`` after."""
        return self.tx_id if slot == 0 else f"{self.tx_id}-{slot}"

    def slot_group(self, slot: int) -> str:
        """The consumer group a read-write slot commits its input offsets to (one shared group when subscribing)."""
        base = self.group_id or f"kc-txg-{self.process_prefix}{self.topic}"
        return base if self.subscribe else f"{base}-{slot}"

    def to_metadata(self) -> dict:
        """For metadata.json ``workload``: ``isolation.level`` tells the checker read_committed is expected."""
        d = asdict(self)
        d["partitions"] = self.partition_ids
        d["transactional_id"] = self.tx_id
        d["transactional_ids"] = [self.slot_tx_id(i) for i in range(self.producers)]
        d["acks"] = "all"
        d["isolation.level"] = "read_committed"
        return d


class TxnConsumerProcess(ClientThread):
    """A read_committed consumer reading every partition by assignment (process ``<prefix>c<i>``)."""

    def __init__(self, name: str, bootstrap: str, cfg: TxnWorkloadConfig, emit: Emit, stop: threading.Event):
        self.name, self.cfg, self.emit, self.stop_event = name, cfg, emit, stop
        self.settings = consumer_settings(bootstrap, f"kafka-chaos-assign-{uuid.uuid4().hex[:12]}",
                                          f"kafka-chaos-{name}",
                                          {"isolation.level": "read_committed", **cfg.consumer_config})
        self.records = 0
        self.errors: dict[str, int] = {}
        self.error: str | None = None
        self._halt = threading.Event()
        self.thread = threading.Thread(target=self._main, name=f"txn-consumer-{name}", daemon=True)

    def life(self, state: str, error: str | None = None, **extra) -> None:
        self.emit("client.life", process=self.name, role="consumer", state=state, error=error, mode="assign",
                  **extra)

    def _run(self) -> None:
        cfg, emit, name, topic = self.cfg, self.emit, self.name, self.cfg.topic
        emit("client.config", process=name, role="consumer",
             config={"mode": "assign", **recorded_settings(self.settings)})
        consumer = Consumer(with_logger(self.settings))
        self.life("started", None)
        try:
            consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in cfg.partition_ids])
            for p in cfg.partition_ids:
                emit("txn.seek", process=name, topic=topic, partition=p, offset=0)
            deadline = time.monotonic() + cfg.consumer_max_s
            while not self.stop_event.is_set() and not self._halt.is_set() and time.monotonic() < deadline:
                for msg in consumer.consume(num_messages=500, timeout=cfg.poll_timeout_s):
                    err = msg.error()
                    if err is not None:
                        count_error(self.errors, err)
                        continue
                    self.records += 1
                    raw = msg.value()
                    emit("txn.poll", process=name, topic=topic, partition=msg.partition(), offset=msg.offset(),
                         value=raw.decode("utf-8", "replace") if raw is not None else None)
        finally:
            consumer.close()


def txn_drain(bootstrap: str, cfg: TxnWorkloadConfig, emit: Emit, timeout_s: float = 60.0,
              process: str = "drain") -> dict:
    """Read every partition read_committed from the beginning to its end: ``txn.poll`` with ``drain: true``
    per record, ``partition.end`` with the last stable offset reached (the position at end of partition,
    once it reached the high watermark or, at the timeout, the last one seen)."""
    topic, parts = cfg.topic, sorted(set(cfg.partition_ids))
    emit("phase", name="drain.start", topic=topic, partitions=parts)
    settings = consumer_settings(bootstrap, f"kafka-chaos-drain-{uuid.uuid4().hex[:12]}", f"kafka-chaos-{process}",
                                 {"isolation.level": "read_committed", "enable.partition.eof": True,
                                  **cfg.consumer_config})
    consumer = Consumer(with_logger(settings))
    deadline = time.monotonic() + timeout_s
    ends: dict[int, int] = {}
    at_eof: dict[int, int] = {}
    records = 0
    errors: dict[str, int] = {}
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in parts])
        for p in parts:
            emit("txn.seek", process=process, topic=topic, partition=p, offset=0)
        while len(ends) < len(parts) and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=1000, timeout=0.5):
                err = msg.error()
                p = msg.partition()
                if err is not None:
                    if err.code() != KafkaError._PARTITION_EOF:
                        n = error_name(err)
                        errors[n] = errors.get(n, 0) + 1
                        continue
                    if p in ends:
                        continue
                    pos = msg.offset()
                    at_eof[p] = pos
                    try:
                        high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=5.0, cached=False)[1]
                    except KafkaException:
                        continue
                    if pos >= high:
                        ends[p] = pos
                        emit("partition.end", topic=topic, partition=p, end_offset=pos)
                    continue
                records += 1
                raw = msg.value()
                emit("txn.poll", process=process, topic=topic, partition=p, offset=msg.offset(),
                     value=raw.decode("utf-8", "replace") if raw is not None else None, drain=True)
                at_eof.pop(p, None)
        for p in parts:  # timed out: an open transaction held the last stable offset back
            if p not in ends and p in at_eof:
                ends[p] = at_eof[p]
                emit("partition.end", topic=topic, partition=p, end_offset=at_eof[p], lso_below_high=True)
    finally:
        consumer.close()
        incomplete = [p for p in parts if p not in ends]
        emit("phase", name="drain.end", topic=topic, records=records, incomplete=incomplete)
    return {"ends": ends, "records": records, "incomplete": incomplete, "errors": errors}


class TxnWorkload(ClientGroup):
    """Transactional producers and read_committed consumers; the life cycle of
    :class:`harness.workload.workload.ClientGroup` the runner and the nemesis use.

    ``producers`` slots, each a Jepsen process with its own ``transactional.id``
    (:meth:`TxnWorkloadConfig.slot_tx_id`): send-only transactions (:class:`TxnProducerProcess`) or, with
    ``max_txn_length``, read-write ones (:class:`harness.workload.txn_rw.ReadWriteTxnProcess`).
    :meth:`crash_client` is the nemesis's ``crash`` fault: a slot's client ends abruptly and a new
    process with the same ``transactional.id`` takes its place (its ``init_transactions()`` fences the old).
    """

    def __init__(self, bootstrap: str, config: TxnWorkloadConfig, emit: Emit):
        super().__init__(bootstrap, config, emit)
        pre = config.process_prefix
        zombie = threading.Event() if config.zombie_at_s is not None else None
        self._crash_lock = threading.Lock()
        self._generation: dict[int, int] = {}   # slot -> how often its client was replaced
        self.producers = [self._process(slot, f"{pre}p{slot}", zombie=zombie if slot == 0 else None)
                          for slot in range(config.producers)]
        if zombie is not None:
            self.producers.append(TxnProducerProcess(f"{pre}p{config.producers}", bootstrap, config, emit,
                                                     self._stop_producers, start_delay_s=config.zombie_at_s,
                                                     seed=config.seed + config.producers, zombie=zombie, is_zombie=True))
        self.consumers = [TxnConsumerProcess(f"{pre}c{i}", bootstrap, config, emit, self._stop_consumers)
                          for i in range(config.consumers)]

    def _process(self, slot: int, name: str, zombie=None):
        cfg = self.config
        seed = cfg.seed + slot + 7919 * self._generation.get(slot, 0)
        if cfg.read_write:
            from harness.workload.txn_rw import ReadWriteTxnProcess
            return ReadWriteTxnProcess(name, self.bootstrap, cfg, self.emit, self._stop_producers, seed=seed,
                                       slot=slot)
        return TxnProducerProcess(name, self.bootstrap, cfg, self.emit, self._stop_producers, seed=seed,
                                  zombie=zombie, slot=slot)

    def crash_client(self, target: str, rng=None, timeout_s: float = 5.0) -> dict:
        """The nemesis's ``crash``: end one transactional client abruptly (no commit, abort or flush) and
        start a new process for its slot with the same ``transactional.id`` (Jepsen's crashed client is
        replaced by a fresh one with a new process id: ``p<slot + producers * n>``). ``target``: a process
        name or ``random-producer``. Waits up to ``timeout_s`` for the old thread (a call blocked in a
        fault may end later: the new process's init fences it), longer while it is inside
        ``init_transactions()``. Returns ``{"process", "replacement",
        "transactional_id"}``."""
        with self._crash_lock:
            if self._stop_producers.is_set():
                raise LookupError("crash: the workload is stopping")
            live = [p for p in self.producers if p.thread.is_alive() and not getattr(p, "is_zombie", False)
                    and not p._halt.is_set()]
            if target == "random-producer":
                if not live:
                    raise LookupError("crash: no live transactional producer to crash")
                old = rng.choice(live) if rng is not None else live[0]
            else:
                pre = self.config.process_prefix
                old = next((p for p in live if p.name in (target, pre + str(target))), None)
                if old is None:
                    raise LookupError(f"crash: no live transactional producer {target!r}; live: "
                                      f"{', '.join(p.name for p in live) or 'none'}")
            old.crash()
            old.thread.join(timeout_s)
            # an init_transactions() of the old one still running would race the new one's: the two fence
            # each other in the coordinator's order, which the order of their txn.init events need not
            # match (the checker's zombie judgement follows the record). Wait for it (bounded).
            init_end = time.monotonic() + 2 * self.config.op_timeout_s + 5.0
            while old.initialising.is_set() and time.monotonic() < init_end:
                time.sleep(0.05)
            slot = old.slot
            n = self._generation[slot] = self._generation.get(slot, 0) + 1
            new = self._process(slot, f"{self.config.process_prefix}p{slot + self.config.producers * n}")
            self.emit("txn.crash", process=old.name, replacement=new.name, transactional_id=old.tx_id,
                      ended=not old.thread.is_alive())
            self.producers.append(new)
            new.thread.start()
            return {"process": old.name, "replacement": new.name, "transactional_id": old.tx_id}

    def _stop_timeout(self) -> float:
        return 4 * self.config.op_timeout_s + 10.0     # a commit / abort in flight is retried up to 2x op_timeout_s

    def stop(self, timeout: float | None = None) -> bool:
        ok = super().stop(timeout)
        for p in self.producers:     # crashed read-write members kept (no LeaveGroup) until now
            close = getattr(p, "close_graveyard", None)
            if close is not None:
                close()
        return ok

    def drain(self, timeout_s: float = 60.0) -> dict:
        """The final reads (``final_reads``): every partition read_committed to its end after the heal."""
        if not self.config.final_reads:
            self.emit("phase", name="drain.skipped", topic=self.config.topic, reason="final_reads = false")
            return {"ends": {}, "records": 0, "incomplete": list(self.config.partition_ids), "errors": {}}
        return txn_drain(self.bootstrap, self.config, self.emit, timeout_s=timeout_s,
                         process=f"{self.config.process_prefix}drain")

    def acknowledged(self) -> int:
        """Transactions committed so far."""
        return sum(p.counts["committed"] for p in self.producers)

    def stats(self) -> dict:
        return {"producers": {p.name: {**p.counts, "error": p.error} for p in self.producers},
                "consumers": {c.name: {"mode": "assign", "records": c.records, "errors": dict(c.errors),
                                       "error": c.error} for c in self.consumers}}
