"""A producer process: sends unique values and records each as invoke -> ok | fail | info.

One thread owns one confluent-kafka ``Producer``; delivery callbacks run inside that
thread's ``poll``/``flush`` calls, so the bookkeeping needs no lock. Every invoke gets exactly
one completion, also when the harness stops waiting (``info`` with ``_NOT_COMPLETED``).
"""

from __future__ import annotations

from harness.clientlog import with_logger

import threading
import time
from typing import Callable

from confluent_kafka import KafkaError, KafkaException, Producer

from .config import WorkloadConfig
from .outcomes import FAIL, INFO, classify_delivery_error, error_name, msg_leader_epoch, single_attempt

Emit = Callable[..., object]
MAX_RECREATE = 5  # new producer instances after fatal errors (e.g. idempotence fencing)
METADATA_WAIT_S = 30.0  # before the first send: bounded wait for leaders in the producer's metadata


class ProducerProcess:
    """Sends ``"<process>-<n>"`` round-robin over the partitions at ``rate`` per second."""

    def __init__(self, name: str, bootstrap: str, config: WorkloadConfig, emit: Emit,
                 stop: threading.Event):
        self.name = name
        self.bootstrap = bootstrap
        self.cfg = config
        self.emit = emit
        self.stop_event = stop
        self.settings = config.producer_settings(bootstrap, client_id=f"kafka-chaos-{name}")
        self.one_attempt = single_attempt(config.retries, config.enable_idempotence)
        self.pending: dict[int, str] = {}  # op_id -> value, awaiting a delivery report
        self.counts = {"invoke": 0, "ok": 0, "fail": 0, "info": 0}
        self.error: str | None = None  # an unexpected exception that ended the thread
        self._op = 0
        self._fatal = False
        self.thread = threading.Thread(target=self._main, name=f"producer-{name}", daemon=True)

    # -- recording -----------------------------------------------------------------------------
    def _record(self, phase: str, op_id: int, value: str, partition: int | None = None,
                offset: int | None = None, error: str | None = None, leader_epoch: int | None = None) -> None:
        self.counts[phase] += 1
        self.emit("client", process=self.name, f="send", phase=phase, op_id=op_id, topic=self.cfg.topic,
                  partition=partition, offset=offset, value=value, error=error, leader_epoch=leader_epoch)

    def _delivered(self, op_id: int, value: str, err: KafkaError | None, msg) -> None:
        if self.pending.pop(op_id, None) is None:
            return  # already completed (cannot happen with librdkafka; defensive)
        if err is None:
            off = msg.offset()
            self._record("ok", op_id, value, partition=msg.partition(),
                         offset=off if off is not None and off >= 0 else None,
                         leader_epoch=msg_leader_epoch(msg))
            return
        if err.fatal():
            self._fatal = True
        self._record(classify_delivery_error(err, self.one_attempt), op_id, value,
                     partition=msg.partition() if msg is not None else None, error=error_name(err))

    # -- the loop ----------------------------------------------------------------------------
    def _main(self) -> None:
        try:
            self._run()
        except Exception as e:  # recorded for Workload.stats(); completions are still closed below
            self.error = f"{type(e).__name__}: {e}"

    def _run(self) -> None:
        cfg = self.cfg
        self.emit("client.config", process=self.name, role="producer",
                  config={k: v for k, v in self.settings.items() if k != "bootstrap.servers"})
        producer = Producer(with_logger(self.settings))
        parts = cfg.partition_ids
        self._await_leaders(producer, parts, min(METADATA_WAIT_S, cfg.duration_s))
        start = time.monotonic()
        deadline = start + cfg.duration_s
        interval = 1.0 / cfg.rate if cfg.rate > 0 else 0.0
        n = 0
        recreated = 0
        try:
            while n < cfg.max_sends and not self.stop_event.is_set() and time.monotonic() < deadline:
                if self._fatal:
                    if recreated >= MAX_RECREATE:
                        self.error = "too many fatal producer errors"
                        break
                    self._close(producer, timeout=0)
                    producer, self._fatal, recreated = Producer(with_logger(self.settings)), False, recreated + 1
                    self._await_leaders(producer, parts, min(METADATA_WAIT_S, max(0.0, deadline - time.monotonic())))
                self._send_one(producer, parts[n % len(parts)], f"{self.name}-{n}", deadline)
                n += 1
                producer.poll(0)
                if interval:
                    next_t = start + n * interval
                    while not self.stop_event.is_set():
                        rest = next_t - time.monotonic()
                        if rest <= 0:
                            break
                        producer.poll(min(rest, 0.05))
        finally:
            self._close(producer, timeout=cfg.flush_timeout_s)

    def _await_leaders(self, producer: Producer, parts, timeout_s: float = METADATA_WAIT_S) -> bool:
        """Before the first send: wait (bounded by ``timeout_s``, at most the workload's duration) until this producer's metadata has a leader for every
        partition it writes. librdkafka holds messages produced before that in a queue of their own and
        may send them *after* later ones even with retries=0 (seen: the first three sends of a new topic
        acknowledged at offsets 14-16, the next five at 0-4), a reordering of the client, not the broker."""
        deadline = time.monotonic() + timeout_s
        while not self.stop_event.is_set() and time.monotonic() < deadline:
            try:
                left = max(0.1, min(2.0, deadline - time.monotonic()))
                t = producer.list_topics(self.cfg.topic, timeout=left).topics.get(self.cfg.topic)
                if t is not None and t.error is None and all(
                        p in t.partitions and t.partitions[p].leader >= 0 for p in parts):
                    return True
            except KafkaException:
                pass
            time.sleep(0.1)
        return False

    def _send_one(self, producer: Producer, partition: int, value: str, deadline: float) -> None:
        self._op += 1
        op_id = self._op
        self._record("invoke", op_id, value, partition=partition)
        self.pending[op_id] = value
        while True:
            try:
                producer.produce(self.cfg.topic, value=value.encode(), partition=partition,
                                 on_delivery=lambda err, msg, o=op_id, v=value: self._delivered(o, v, err, msg))
                return
            except BufferError:  # local queue full: not enqueued; wait for room, bounded by the deadline
                if self.stop_event.is_set() or time.monotonic() >= deadline:
                    self.pending.pop(op_id, None)
                    self._record(FAIL, op_id, value, partition=partition, error="_QUEUE_FULL")
                    return
                producer.poll(0.05)
            except KafkaException as e:  # rejected by produce() itself: never enqueued
                err = e.args[0] if e.args and isinstance(e.args[0], KafkaError) else None
                if err is not None and err.fatal():
                    self._fatal = True
                self.pending.pop(op_id, None)
                self._record(FAIL, op_id, value, partition=partition, error=error_name(err) or str(e))
                return

    def _close(self, producer: Producer, timeout: float) -> None:
        """Wait up to ``timeout`` for outstanding deliveries, purge the rest, close every op."""
        try:
            if timeout > 0:
                producer.flush(timeout)
            if self.pending:
                producer.purge(in_queue=True, in_flight=True, blocking=False)
                producer.poll(0)
                producer.flush(0)
        except Exception as e:  # the producer may be unusable after a fatal error
            self.error = self.error or f"{type(e).__name__} while closing: {e}"
        for op_id, value in sorted(self.pending.items()):
            self._record(INFO, op_id, value, error="_NOT_COMPLETED")
        self.pending.clear()

