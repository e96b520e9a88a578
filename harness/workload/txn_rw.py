"""Read-write (consume-transform-produce) transactions: the ``txn`` ops of Jepsen's Kafka queue workload.

One :class:`ReadWriteTxnProcess` per producer slot of :class:`harness.workload.txn.TxnWorkload` (when the
scenario sets ``max_txn_length``) is one Jepsen process: a transactional producer and a consumer of the
same topic, used together. Each transaction is 1..``max_txn_length`` micro-ops, each a poll (share
``poll_ratio``: one ``consume()`` of up to ``poll_max_records`` records, read ``transform_isolation``,
read_committed unless deliberately misconfigured) or a send to one key (a partition: half of the sends go
to the partitions this process reads, so transactions mix polls and sends on the same partitions). Before
committing, the positions after what it read are committed in the transaction
(``send_offsets_to_transaction`` with ``consumer_group_metadata()`` taken at the transaction's begin), so
each input record is consumed by exactly one committed transaction; after an abort the consumer seeks back
to the first record the transaction read. The consumer reads by assignment (slot ``i`` of ``n`` owns the
partitions ``p % n == i``, committed offsets in its own group) or, with ``subscribe``, in one group.

History (docs/transactions.md): the ``txn`` invoke carries the planned ops (sends with ``offset: null``,
``{"f": "poll"}`` placeholders); the completion has each poll replaced by the ``read`` ops it returned, in
order, and ``offsets`` (the positions committed with the transaction) and ``group``.

The misconfigurations the negative controls use, never a default: ``transform_isolation =
"read_uncommitted"`` and ``offsets_outside_txn`` (the consumer commits its position itself, every 2 s after
a commit: at-least-once, so a crash re-delivers what committed transactions had consumed).
"""

from __future__ import annotations

import threading
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from harness.clientlog import with_logger
from harness.workload.config import recorded_settings
from harness.workload.consumer import consumer_settings
from harness.workload.outcomes import count_error, error_name
from harness.workload.txn import TxnWorkloadConfig
from harness.workload.txn_producer import CRASHED, Emit, TxnProducerProcess, _Crashed, _Fatal, abandon

OUTSIDE_COMMIT_EVERY_S = 2.0  # offsets_outside_txn: how often the consumer commits its position itself


class ReadWriteTxnProcess(TxnProducerProcess):
    """A transactional producer and its consumer (process ``<prefix>p<i>``); see the module docstring."""

    def __init__(self, name: str, bootstrap: str, cfg: TxnWorkloadConfig, emit: Emit, stop: threading.Event,
                 seed: int = 0, slot: int = 0):
        super().__init__(name, bootstrap, cfg, emit, stop, seed=seed, slot=slot)
        parts = cfg.partition_ids
        self.owned = [p for k, p in enumerate(parts) if k % cfg.producers == slot]
        self.group = cfg.slot_group(slot)
        # a poll micro-op waits txn_poll_timeout_s at most: the broker answers a fetch at once
        extra = {"isolation.level": cfg.transform_isolation, "enable.auto.offset.store": False,
                 "fetch.min.bytes": 1, "fetch.wait.max.ms": 50}
        if cfg.subscribe:   # a crashed member is noticed within 10 s (it stops polling, it sends no LeaveGroup)
            extra.update({"session.timeout.ms": 10000, "max.poll.interval.ms": 10000,
                          "partition.assignment.strategy": "range"})
        self.consumer_settings = consumer_settings(bootstrap, self.group, f"kafka-chaos-{name}-in",
                                                   {**extra, **cfg.consumer_config})
        self.counts.update({"reads": 0, "offset_commits": 0})
        self._revoked = False
        self._outside: dict[int, int] = {}     # offsets_outside_txn: positions not yet committed
        self._outside_at = time.monotonic()

    # -- the consumer --------------------------------------------------------------------------------
    def _new_consumer(self) -> Consumer:
        cfg = self.cfg
        self.emit("client.config", process=self.name, role="consumer",
                  config={"mode": "subscribe" if cfg.subscribe else "assign", "group": self.group,
                          **recorded_settings(self.consumer_settings)})
        c = Consumer(with_logger(dict(self.consumer_settings)))
        if cfg.subscribe:
            def revoked(consumer, partitions):
                self._revoked = True
            c.subscribe([cfg.topic], on_revoke=revoked, on_lost=revoked)
        elif self.owned:
            # no offset: the group's committed position (KIP-447: stable, after pending transactions), else
            # the beginning
            c.assign([TopicPartition(cfg.topic, p) for p in self.owned])
        return c

    def _close_consumer(self, c: Consumer | None, crashed: bool) -> None:
        if c is None:
            return
        if crashed and self.cfg.subscribe:
            self.graveyard.append(c)   # a crashed member sends no LeaveGroup: closed when the workload stops
        else:
            abandon(c)

    # -- the loop ------------------------------------------------------------------------------------
    def _run(self) -> None:
        cfg = self.cfg
        self.graveyard: list = []
        producer: Producer = self._new_producer(True)
        consumer: Consumer | None = self._new_consumer()
        deadline = time.monotonic() + cfg.duration_s
        interval = 1.0 / cfg.rate if cfg.rate > 0 else 0.0
        next_t = time.monotonic()
        op_id = recreated = 0
        try:
            while not self._stopped() and op_id < cfg.max_txns and time.monotonic() < deadline:
                next_t = self._pace(next_t, interval)
                op_id += 1
                plan = self._plan(op_id)
                outcome = "abort" if self.rng.random() < cfg.abort_ratio else "commit"
                try:
                    self._rw_transaction(producer, consumer, op_id, plan, outcome)
                except _Crashed:
                    abandon(producer)
                    self._close_consumer(consumer, crashed=True)
                    consumer = None
                    return
                except _Fatal as e:
                    self._close_consumer(consumer, crashed=False)
                    consumer = None
                    # fenced too: no other live process of this transactional.id exists in this workload (a
                    # crash replaces a client only once it stopped), so a fencing here came from the
                    # coordinator (e.g. a transaction it aborted at its timeout, with an epoch bump); like
                    # Jepsen's crashed client, the process starts afresh
                    if self._stopped() or recreated >= cfg.max_recreate:
                        self.life("fatal", str(e))
                        return
                    recreated += 1
                    self.counts["recreated"] += 1
                    self.fenced.clear()
                    self.life("fatal", str(e))
                    abandon(producer)
                    producer = self._new_producer(False)
                    consumer = self._new_consumer()   # after init_transactions: reads the stable offsets
                self._commit_outside(consumer, force=False)
            if not self._halt.is_set():
                self._commit_outside(consumer, force=True)
        finally:
            self._close_consumer(consumer, crashed=self._halt.is_set())

    def _plan(self, op_id: int) -> list[dict]:
        cfg, rng = self.cfg, self.rng
        parts = cfg.partition_ids
        ops, j = [], 0
        for _ in range(rng.randint(1, cfg.max_txn_length)):
            if rng.random() < cfg.poll_ratio:
                ops.append({"f": "poll"})
                continue
            own = self.owned if not cfg.subscribe else parts
            p = rng.choice(own) if own and rng.random() < 0.5 else rng.choice(parts)
            ops.append({"f": "send", "topic": cfg.topic, "partition": p, "value": f"{self.name}-{op_id}-{j}",
                        "offset": None})
            j += 1
        return ops

    def _rw_transaction(self, producer: Producer, consumer: Consumer, op_id: int, plan: list[dict],
                        outcome: str) -> None:
        cfg, name = self.cfg, self.name
        base = {"process": name, "op_id": op_id, "f": "txn", "transactional_id": self.tx_id, "outcome": outcome}
        self.emit("txn", phase="invoke", ops=[dict(o) for o in plan], error=None, **base)
        reports: dict[int, tuple] = {}
        got: dict[int, list[dict]] = {}        # plan index of a poll -> the read ops it returned
        first: dict[int, int] = {}             # partition -> first offset read in this transaction
        last: dict[int, int] = {}
        offsets: list = []
        stage = "begin"

        def done(phase: str, error: str | None) -> None:
            out = []
            for k, o in enumerate(plan):
                if o["f"] == "poll":
                    out.extend(got.get(k, ()))
                else:
                    r = reports.get(k)
                    out.append({**o, "offset": r[0] if r and r[1] is None else None})
            extra = {} if error is None else {"stage": stage}
            self.emit("txn", phase=phase, ops=out, error=error, group=self.group,
                      offsets=[[cfg.topic, tp.partition, tp.offset] for tp in offsets], **base, **extra)

        self._revoked = False
        try:
            producer.begin_transaction()
            meta = consumer.consumer_group_metadata()
            stage = "send"
            for k, o in enumerate(plan):
                self._check_crash()
                if o["f"] == "poll":
                    got[k] = self._poll(consumer, first, last)
                    continue

                def cb(err, msg, k=k):
                    reports[k] = (msg.offset() if err is None else None, error_name(err))
                full_until = time.monotonic() + cfg.op_timeout_s
                while True:
                    try:
                        producer.produce(o["topic"], value=o["value"].encode(), key=o["value"].encode(),
                                         partition=o["partition"], on_delivery=cb)
                        break
                    except BufferError:
                        if time.monotonic() >= full_until:
                            raise
                        producer.poll(0.1)
            self._check_crash()
            stage = "end"
            offsets = [TopicPartition(cfg.topic, p, off + 1) for p, off in sorted(last.items())]
            if outcome == "commit" and self._revoked:
                outcome = "abort"   # partitions read in it were revoked: their new owner reads them again
                base["outcome"] = "abort"
            if outcome == "commit":
                if offsets and not cfg.offsets_outside_txn:
                    producer.send_offsets_to_transaction(offsets, meta, cfg.op_timeout_s)
                self._retrying(producer.commit_transaction)
                self.counts["committed"] += 1
                if cfg.offsets_outside_txn:
                    self._outside.update({tp.partition: tp.offset for tp in offsets})
            else:
                offsets = []
                producer.flush(cfg.op_timeout_s)
                self._retrying(producer.abort_transaction)
                self.counts["aborted"] += 1
                self._rewind(consumer, first)
            producer.poll(0)
            done("ok", None)
        except _Crashed:
            self.counts["failed"] += 1
            offsets = []
            done("fail", CRASHED)
            raise
        except KafkaException as e:
            offsets = []
            self._failed(producer, e, stage, outcome, done)   # raises _Fatal unless it aborted
            self._rewind(consumer, first)    # aborted: read again what it had read
        except Exception as e:  # noqa: BLE001 - outcome unknown
            self.counts["unsure"] += 1
            done("info", f"{type(e).__name__}: {e}")
            raise _Fatal(f"{type(e).__name__}: {e}") from None

    def _poll(self, consumer: Consumer, first: dict, last: dict) -> list[dict]:
        cfg = self.cfg
        out = []
        for msg in consumer.consume(num_messages=cfg.poll_max_records, timeout=cfg.txn_poll_timeout_s):
            err = msg.error()
            if err is not None:
                count_error(self.counts.setdefault("poll_errors", {}), err)
                continue
            p, off = msg.partition(), msg.offset()
            raw = msg.value()
            out.append({"f": "read", "topic": msg.topic(), "partition": p, "offset": off,
                        "value": raw.decode("utf-8", "replace") if raw is not None else None})
            first.setdefault(p, off)
            last[p] = off
        self.counts["reads"] += len(out)
        return out

    def _rewind(self, consumer: Consumer, first: dict) -> None:
        """After an abort: the consumer back at the first record the transaction read in each partition."""
        for p, off in first.items():
            try:
                consumer.seek(TopicPartition(self.cfg.topic, p, off))
            except KafkaException:
                pass        # no longer assigned (subscribe): its new owner starts at the committed offset

    def _commit_outside(self, consumer: Consumer | None, force: bool) -> None:
        """``offsets_outside_txn`` (deliberate misconfiguration): commit the consumed positions with the
        consumer, not the transaction, every OUTSIDE_COMMIT_EVERY_S."""
        if consumer is None or not self._outside:
            return
        if not force and time.monotonic() - self._outside_at < OUTSIDE_COMMIT_EVERY_S:
            return
        self._outside_at = time.monotonic()
        tps = [TopicPartition(self.cfg.topic, p, off) for p, off in sorted(self._outside.items())]
        try:
            consumer.commit(offsets=tps, asynchronous=False)
            self.counts["offset_commits"] += 1
            self._outside.clear()
        except KafkaException:
            pass

    def close_graveyard(self) -> None:
        for c in getattr(self, "graveyard", ()):
            abandon(c)
