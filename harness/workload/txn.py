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
from typing import Callable

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition

from harness.clientlog import with_logger

from harness.workload.client_threads import create_niced, nice_increment
from harness.workload.config import connection, partition_ids, recorded_settings
from harness.workload.consumer import ClientThread, consumer_settings
from harness.workload.outcomes import count_error, error_name
from harness.workload.workload import ClientGroup

Emit = Callable[..., object]

FENCED = ("_FENCED", "PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH")


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


def _err(e: BaseException) -> KafkaError | None:
    return e.args[0] if isinstance(e, KafkaException) and e.args and isinstance(e.args[0], KafkaError) else None


def _name(e: BaseException) -> str:
    ke = _err(e)
    return error_name(ke) if ke is not None else f"{type(e).__name__}: {e}"


class _Fatal(Exception):
    """The producer instance is unusable (fatal error or fencing)."""


class _Crashed(Exception):
    """The nemesis crashed the client: it stops where it is (no commit, abort or flush)."""


CRASHED = "client_crash: ended abruptly by the nemesis (no commit, abort or flush)"


def abandon(*clients) -> None:
    """Drop crashed clients the way a dying process does: nothing flushed, committed or aborted. Their
    librdkafka handles are destroyed in a background thread (a destroy can wait on the network)."""
    def destroy() -> None:
        for c in clients:
            try:
                if isinstance(c, Producer):
                    c.purge(in_queue=True, in_flight=False, blocking=False)
                elif c is not None:
                    c.close()
            except Exception:  # noqa: BLE001 - already broken: nothing to do
                pass
    threading.Thread(target=destroy, name="txn-abandon", daemon=True).start()


class TxnProducerProcess:
    """One transactional producer thread (process ``<prefix>p<i>``)."""

    def __init__(self, name: str, bootstrap: str, cfg: TxnWorkloadConfig, emit: Emit, stop: threading.Event,
                 start_delay_s: float = 0.0, seed: int = 0, zombie: threading.Event | None = None,
                 is_zombie: bool = False, slot: int = 0):
        self.name, self.cfg, self.emit, self.stop_event = name, cfg, emit, stop
        self.bootstrap, self.slot, self.tx_id = bootstrap, slot, cfg.slot_tx_id(slot)
        self.start_delay_s = start_delay_s
        # set by the second producer as it initialises: from then on the first one does not re-initialise
        # (its init would race the second's and fence it back, and the order of the two txn.init events
        # in the record could then differ from the coordinator's)
        self.zombie, self.is_zombie = zombie, is_zombie
        self.rng = random.Random(seed)
        self.settings = {
            **connection(bootstrap), "client.id": f"kafka-chaos-{name}",
            "transactional.id": self.tx_id, "transaction.timeout.ms": cfg.transaction_timeout_ms,
            "enable.idempotence": True, "acks": "all", "linger.ms": 5,
            "partitioner": "consistent_random", **cfg.producer_config}
        self.counts = {"committed": 0, "aborted": 0, "failed": 0, "unsure": 0, "fenced": 0, "recreated": 0}
        self.error: str | None = None
        self.fenced = threading.Event()
        self._halt = threading.Event()
        self.initialising = threading.Event()   # inside init_transactions()
        self.thread = threading.Thread(target=self._main, name=f"txn-producer-{name}", daemon=True)

    def life(self, state: str, error: str | None = None, **extra) -> None:
        self.emit("client.life", process=self.name, role="producer", state=state, error=error, **extra)

    def crash(self) -> None:
        self._halt.set()

    def _check_crash(self) -> None:
        """A crash (the nemesis's ``crash`` / ``client_crash``) ends the client between two of its calls."""
        if self._halt.is_set():
            raise _Crashed(CRASHED)

    def _stopped(self) -> bool:
        return self.stop_event.is_set() or self._halt.is_set()

    def _main(self) -> None:
        try:
            end = time.monotonic() + self.start_delay_s
            while time.monotonic() < end and not self._stopped():
                time.sleep(0.05)
            if not self._stopped():
                if self.is_zombie and self.zombie is not None:
                    self.zombie.set()
                self._run()
        except Exception as e:  # noqa: BLE001 - recorded, the thread ends
            self.error = f"{type(e).__name__}: {e}"
            self.life("died", self.error)
            return
        if self._halt.is_set():
            self.life("died", "client_crash")
        elif self.fenced.is_set():
            self.life("stopped", "fenced", reason="fenced")
        else:
            self.life("stopped", None, reason="asked" if self.stop_event.is_set() else "limit")

    def _new_producer(self, first: bool) -> Producer:
        self.emit("client.config", process=self.name, role="producer",
                  config=recorded_settings(self.settings),
                  threads_nice=nice_increment())
        p = create_niced(lambda: Producer(with_logger(dict(self.settings))))   # client_threads.py
        deadline = time.monotonic() + 2 * self.cfg.op_timeout_s
        self.initialising.set()     # a crash waits for this to end (TxnWorkload.crash_client)
        try:
            while True:
                try:
                    p.init_transactions(self.cfg.op_timeout_s)
                    break
                except KafkaException as e:
                    ke = _err(e)
                    if ke is not None and ke.retriable() and time.monotonic() < deadline and not self._stopped():
                        time.sleep(0.5)
                        continue
                    raise
            self.emit("txn.init", process=self.name, transactional_id=self.tx_id, producer_epoch=None)
        finally:
            self.initialising.clear()
        self.life("started" if first else "recreated", None)
        return p

    def _run(self) -> None:
        cfg = self.cfg
        parts = cfg.partition_ids
        k = min(len(parts), max(2, cfg.txn_partitions))
        producer = self._new_producer(True)
        deadline = time.monotonic() + cfg.duration_s
        interval = 1.0 / cfg.rate if cfg.rate > 0 else 0.0
        next_t = time.monotonic()
        op_id = 0
        recreated = 0
        while not self._stopped() and op_id < cfg.max_txns and time.monotonic() < deadline:
            if interval:
                wait = next_t - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                next_t = max(next_t + interval, time.monotonic() - 1.0)
            op_id += 1
            chosen = self.rng.sample(parts, k)
            ops = [{"f": "send", "topic": cfg.topic, "partition": chosen[j % k],
                    "value": f"{self.name}-{op_id}-{j}", "offset": None} for j in range(cfg.sends_per_txn)]
            outcome = "abort" if self.rng.random() < cfg.abort_ratio else "commit"
            try:
                self._transaction(producer, op_id, ops, outcome)
            except _Crashed:
                abandon(producer)
                return
            except _Fatal as e:
                zombie_up = self.zombie is not None and self.zombie.is_set() and not self.is_zombie
                if self.fenced.is_set() or self._stopped() or recreated >= cfg.max_recreate or zombie_up:
                    self.life("fatal", str(e))
                    return
                recreated += 1
                self.counts["recreated"] += 1
                self.life("fatal", str(e))
                producer = self._new_producer(False)

    def _transaction(self, producer: Producer, op_id: int, ops: list[dict], outcome: str) -> None:
        cfg, name = self.cfg, self.name
        base = {"process": name, "op_id": op_id, "f": "txn", "transactional_id": self.tx_id, "outcome": outcome}
        self.emit("txn", phase="invoke", ops=[dict(o) for o in ops], error=None, **base)
        reports: dict[int, tuple] = {}

        def done(phase: str, error: str | None) -> None:
            out = []
            for j, o in enumerate(ops):
                r = reports.get(j)
                out.append({**o, "offset": r[0] if r and r[1] is None else None})
            extra = {} if error is None else {"stage": stage}  # begin | send | end: where the error came
            self.emit("txn", phase=phase, ops=out, error=error, **base, **extra)

        stage = "begin"
        try:
            producer.begin_transaction()
            stage = "send"
            for j, o in enumerate(ops):
                self._check_crash()
                def cb(err, msg, j=j):
                    reports[j] = (msg.offset() if err is None else None, error_name(err))
                full_until = time.monotonic() + self.cfg.op_timeout_s
                while True:
                    try:
                        producer.produce(o["topic"], value=o["value"].encode(), key=o["value"].encode(),
                                         partition=o["partition"], on_delivery=cb)
                        break
                    except BufferError:      # the local queue is full: wait for deliveries, bounded
                        if time.monotonic() >= full_until:
                            raise
                        producer.poll(0.1)
            self._check_crash()
            stage = "end"
            if outcome == "commit":
                self._retrying(producer.commit_transaction)
                self.counts["committed"] += 1
            else:
                # the sends reach the log first (so an aborted transaction leaves records a read_committed
                # reader must skip), and no produce request races the EndTxn (KIP-890 verification answers
                # such a late produce with INVALID_TXN_STATE, which abort_transaction() then returns)
                producer.flush(self.cfg.op_timeout_s)
                self._retrying(producer.abort_transaction)
                self.counts["aborted"] += 1
            producer.poll(0)
            done("ok", None)
        except _Crashed:
            # the nemesis crashed this client before it asked for the commit: the transaction can never
            # commit (the next init_transactions() of its transactional.id, or its timeout, aborts it)
            self.counts["failed"] += 1
            done("fail", CRASHED)
            raise
        except KafkaException as e:
            self._failed(producer, e, stage, outcome, done)
        except Exception as e:  # noqa: BLE001 - outcome unknown
            self.counts["unsure"] += 1
            done("info", f"{type(e).__name__}: {e}")
            raise _Fatal(f"{type(e).__name__}: {e}") from None

    def _failed(self, producer: Producer, e: KafkaException, stage: str, outcome: str, done) -> None:
        """A transaction's call raised ``e`` at ``stage``: abort it if the error allows (returns: the
        transaction definitely failed and the producer is usable), else record its completion and raise
        :class:`_Fatal` (the producer is re-created or, fenced, ends)."""
        name = self.name
        ke, err = _err(e), _name(e)
        fenced = err in FENCED or (ke is not None and ke.code() == KafkaError._FENCED)
        if fenced:
            self.fenced.set()
            self.counts["fenced"] += 1
            self.emit("txn.fenced", process=name, transactional_id=self.tx_id, error=err)
        if ke is not None and ke.txn_requires_abort() and not fenced:
            try:
                self._retrying(producer.abort_transaction)
                self.counts["failed"] += 1
                done("fail", err)
                return
            except KafkaException as e2:
                err = f"{err}; abort: {_name(e2)}"
                if _name(e2) in FENCED:  # the fencing showed only when aborting
                    fenced = True
                    self.fenced.set()
                    self.counts["fenced"] += 1
                    self.emit("txn.fenced", process=name, transactional_id=self.tx_id, error=_name(e2))
        # a commit that ended in an error may have committed (unless the coordinator fenced it before)
        definite = stage != "end" or (outcome == "abort" and fenced)
        self.counts["failed" if definite else "unsure"] += 1
        done("fail" if definite else "info", err)
        if fenced or (ke is not None and ke.fatal()):
            raise _Fatal(err) from None
        # not aborted: the transaction may still be open in this instance; a new one's
        # init_transactions() ends it (aborts it, or completes a commit already written)
        raise _Fatal(f"{err} (transaction state unknown: re-initialising)") from None

    def _retrying(self, call) -> None:
        """``commit_transaction`` / ``abort_transaction``, retried while the error is retriable (bounded)."""
        deadline = time.monotonic() + 2 * self.cfg.op_timeout_s
        while True:
            try:
                call(self.cfg.op_timeout_s)
                return
            except KafkaException as e:
                ke = _err(e)
                if ke is None or not ke.retriable() or time.monotonic() >= deadline:
                    raise
                time.sleep(0.2)


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
