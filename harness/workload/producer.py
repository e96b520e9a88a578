"""A producer process: sends unique values and records each as invoke -> ok | fail | info.

One thread owns one confluent-kafka ``Producer``; delivery, error and statistics callbacks run
inside that thread's ``poll``/``flush`` calls, so the bookkeeping needs no lock. Every invoke gets
exactly one completion, also when the harness stops waiting (``info`` with ``_NOT_COMPLETED``).

The producer's life is recorded as ``client.life`` events (started, fatal, recreated, stalled,
stopped, died) and its idempotent producer id and epoch, read from librdkafka's statistics, as
``client.producer_id`` events whenever they change (docs/run-record.md).
"""

from __future__ import annotations

from harness.clientlog import client_logger, with_logger

import json
import sys
import threading
import time
from typing import Callable

from confluent_kafka import KafkaError, KafkaException, Producer

from harness.workload.client_threads import create_niced, nice_increment
from harness.workload.config import WorkloadConfig, recorded_settings
from harness.workload.implicit_ack import IMPLICIT_UNCONFIRMED, EosLog, ImplicitAcks
from harness.workload.outcomes import FAIL, INFO, classify_delivery_error, error_name, msg_leader_epoch, single_attempt

Emit = Callable[..., object]
MAX_RECREATE = 5  # new producer instances after fatal errors (e.g. idempotence fencing)
METADATA_WAIT_S = 30.0  # before the first send: bounded wait for leaders in the producer's metadata
# confluent-kafka's poll(timeout) waits int(timeout * 1000) ms: a rest under 1 ms would return at once,
# and the pacing loop spun through the last millisecond of every 5 ms interval (0.66 CPU-s per 5 s at
# 200 sends/s; sleeping instead: 0.08 s). The pacing sleeps the rest below this.
POLL_RESOLUTION_S = 0.002
CRASH_ERROR = "client_crash: ended abruptly by the nemesis (no flush, outstanding sends purged)"


def _error_names() -> dict[str, str]:
    """librdkafka's error description (``rd_kafka_err2str``) -> its name, to name the error inside a
    fatal error's text ("Fatal error: Local: Inconsistent state: ...")."""
    out = {}
    for attr in dir(KafkaError):
        code = getattr(KafkaError, attr)
        if isinstance(code, int) and not isinstance(code, bool):
            try:
                e = KafkaError(code)
                out.setdefault(e.str(), e.name())
            except Exception:  # noqa: BLE001 - not an error code
                continue
    return out


_NAMES: dict[str, str] | None = None


def fatal_error_name(text: str) -> str:
    """The error name inside librdkafka's fatal error text, e.g. ``_INCONSISTENT`` for
    "Fatal error: Local: Inconsistent state: Unable to reconstruct MessageSet ..." (``_FATAL`` when
    the text names no known error)."""
    global _NAMES
    if _NAMES is None:
        _NAMES = _error_names()
    rest = text.split("Fatal error: ", 1)[-1]
    best = None
    for desc, name in _NAMES.items():
        if desc and rest.startswith(desc) and (best is None or len(desc) > len(best[0])):
            best = (desc, name)
    return best[1] if best else "_FATAL"


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
        self._fatal_recorded = False   # a client.life fatal event for the current instance
        self._instance = 0             # 0: the first Producer, n: its n-th re-creation
        self._pid: tuple | None = None  # (producer_id, producer_epoch, epoch_cnt) last recorded
        self._acks: ImplicitAcks | None = None  # the current instance's implicit acks (idempotent only)
        self._halt = threading.Event()  # set by crash(): end abruptly
        self._last_completion = time.monotonic()
        self._busy_since = time.monotonic()
        self._stalled = False
        self._next_stall_check = 0.0
        self.thread = threading.Thread(target=self._main, name=f"producer-{name}", daemon=True)

    # -- recording -----------------------------------------------------------------------------
    def _record(self, phase: str, op_id: int, value: str, partition: int | None = None,
                offset: int | None = None, error: str | None = None, leader_epoch: int | None = None,
                **extra) -> None:
        self.counts[phase] += 1
        self.emit("client", process=self.name, f="send", phase=phase, op_id=op_id, topic=self.cfg.topic,
                  partition=partition, offset=offset, value=value, error=error, leader_epoch=leader_epoch,
                  **extra)

    def life(self, state: str, error: str | None = None, **extra) -> None:
        """Record a ``client.life`` event of this producer."""
        self.emit("client.life", process=self.name, role="producer", state=state, error=error, **extra)

    def crash(self) -> None:
        """End this producer abruptly (the nemesis's ``client_crash``): no flush; its thread records
        every outstanding send as ``info`` and the ``died`` event."""
        self._halt.set()

    def _on_error(self, err: KafkaError) -> None:
        """librdkafka's error callback: a fatal error ends this producer instance."""
        if err.fatal() or err.code() == KafkaError._FATAL:
            self._fatal = True
            if not self._fatal_recorded:
                self._fatal_recorded = True
                text = err.str()
                self.life("fatal", fatal_error_name(text), detail=text, instance=self._instance,
                          acked_before=self.counts["ok"])

    def _on_stats(self, stats_json: str) -> None:
        """librdkafka's statistics: record the idempotent producer id / epoch when they change."""
        try:
            eos = (json.loads(stats_json) or {}).get("eos") or {}
        except ValueError:
            return
        pid = eos.get("producer_id")
        if pid is None or pid < 0:
            return
        key = (pid, eos.get("producer_epoch"), eos.get("epoch_cnt"))
        if key != self._pid:
            self._pid = key
            self.emit("client.producer_id", process=self.name, producer_id=pid, producer_epoch=key[1],
                      epoch_cnt=key[2], idemp_state=eos.get("idemp_state"), instance=self._instance)

    def _new_producer(self) -> Producer:
        conf = {**self.settings, "error_cb": self._on_error}
        if conf.get("statistics.interval.ms"):
            conf["stats_cb"] = self._on_stats
        self._fatal_recorded = False
        self._pid = None
        self._acks = None
        if conf.get("enable.idempotence") in (True, "true") and "logger" not in conf:
            # librdkafka's eos debug lines tell its implicit acks from the broker's (implicit_ack.py)
            instance = self._instance
            self._acks = ImplicitAcks(self.cfg.topic, lambda **kw: self.emit(
                "client.implicit_ack", process=self.name, topic=self.cfg.topic, instance=instance, **kw))
            conf["logger"] = EosLog(client_logger(), self._acks)
            conf.setdefault("debug", "eos")
        # librdkafka's threads at a lower priority: they busy-loop while a leader is down (client_threads.py)
        return create_niced(lambda: Producer(with_logger(conf)))

    def _check_stall(self, producer: Producer) -> None:
        """At most once a second: sends outstanding and no completion for ``stall_bound_s`` while the
        cluster answers a metadata request -> ``client.life`` stalled (once per stall)."""
        now = time.monotonic()
        if now < self._next_stall_check or self._stalled or not self.pending:
            return
        self._next_stall_check = now + 1.0
        quiet = now - max(self._last_completion, self._busy_since)
        if quiet <= self.cfg.stall_bound_s:
            return
        try:
            producer.list_topics(self.cfg.topic, timeout=2.0)
        except KafkaException:
            return  # the cluster does not answer either: not the client's stall
        self._stalled = True
        self.life("stalled", f"no delivery report for {quiet:.0f} s with {len(self.pending)} sends outstanding "
                             "while the cluster answers metadata requests", instance=self._instance)

    def _delivered(self, op_id: int, value: str, err: KafkaError | None, msg) -> None:
        if self.pending.pop(op_id, None) is None:
            return  # already completed (cannot happen with librdkafka; defensive)
        self._last_completion = time.monotonic()
        if self._stalled:
            self._stalled = False
            self.life("started", None, after="stalled", instance=self._instance)
        if err is None:
            off = msg.offset()
            off = off if off is not None and off >= 0 else None
            how = self._acks.classify(msg.partition(), off) if self._acks is not None else "broker"
            if how == "unconfirmed":  # librdkafka's inference, no broker acknowledged it
                self._record(INFO, op_id, value, partition=msg.partition(), error=IMPLICIT_UNCONFIRMED,
                             client_said="delivered")
            elif how == "implicit":
                self._record("ok", op_id, value, partition=msg.partition(), offset=None,
                             leader_epoch=msg_leader_epoch(msg), ack="implicit")
            else:
                self._record("ok", op_id, value, partition=msg.partition(), offset=off,
                             leader_epoch=msg_leader_epoch(msg))
            return
        if err.fatal():
            self._fatal = True
            if not self._fatal_recorded:
                self._fatal_recorded = True
                self.life("fatal", error_name(err), detail=err.str(), instance=self._instance,
                          acked_before=self.counts["ok"])
        self._record(classify_delivery_error(err, self.one_attempt), op_id, value,
                     partition=msg.partition() if msg is not None else None, error=error_name(err))

    # -- the loop ----------------------------------------------------------------------------
    def _main(self) -> None:
        try:
            self._run()
        except Exception as e:  # recorded for Workload.stats(); completions are still closed below
            self.error = f"{type(e).__name__}: {e}"
            self.life("died", self.error, instance=self._instance)

    def _run(self) -> None:
        cfg = self.cfg
        self.emit("client.config", process=self.name, role="producer",
                  config=recorded_settings(self.settings),
                  threads_nice=nice_increment())
        producer = self._new_producer()
        self.life("started", None, instance=0)
        parts = cfg.partition_ids
        self._await_leaders(producer, parts, min(METADATA_WAIT_S, cfg.duration_s))
        start = time.monotonic()
        deadline = start + cfg.duration_s
        interval = 1.0 / cfg.rate if cfg.rate > 0 else 0.0
        n = 0
        recreated = 0
        halt, stop = self._halt, self.stop_event
        try:
            while n < cfg.max_sends and not stop.is_set() and not halt.is_set() and time.monotonic() < deadline:
                if self._fatal:
                    if recreated >= MAX_RECREATE:
                        self.error = f"too many fatal producer errors ({recreated + 1} instances)"
                        break
                    self._close(producer, timeout=0)
                    recreated += 1
                    self._instance = recreated
                    producer, self._fatal = self._new_producer(), False
                    self.life("recreated", None, instance=recreated)
                    self._await_leaders(producer, parts, min(METADATA_WAIT_S, max(0.0, deadline - time.monotonic())))
                self._send_one(producer, parts[n % len(parts)], f"{self.name}-{n}", deadline)
                n += 1
                producer.poll(0)
                self._check_stall(producer)
                if interval:
                    next_t = start + n * interval
                    while not stop.is_set() and not halt.is_set():
                        rest = next_t - time.monotonic()
                        if rest <= 0:
                            break
                        if rest < POLL_RESOLUTION_S:
                            time.sleep(rest)       # poll() waits whole milliseconds: below one it spins
                            continue
                        producer.poll(min(rest, 0.05))
        finally:
            crashed = halt.is_set()
            self._close(producer, timeout=0 if crashed else cfg.flush_timeout_s)
            if crashed:
                self.error = self.error or CRASH_ERROR
                self.life("died", CRASH_ERROR, instance=self._instance)
            elif self.error:
                self.life("died", self.error, instance=self._instance)
            elif sys.exc_info()[0] is None:
                why = "asked" if stop.is_set() else ("max_sends" if n >= cfg.max_sends else "duration")
                self.life("stopped", None, reason=why, instance=self._instance)

    def _await_leaders(self, producer: Producer, parts, timeout_s: float = METADATA_WAIT_S) -> bool:
        """Before the first send: wait (bounded by ``timeout_s``, at most the workload's duration) until this producer's metadata has a leader for every
        partition it writes. librdkafka holds messages produced before that in a queue of their own and
        may send them *after* later ones even with retries=0 (seen: the first three sends of a new topic
        acknowledged at offsets 14-16, the next five at 0-4), a reordering of the client, not the broker."""
        deadline = time.monotonic() + timeout_s
        while not self.stop_event.is_set() and not self._halt.is_set() and time.monotonic() < deadline:
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
                if self.stop_event.is_set() or self._halt.is_set() or time.monotonic() >= deadline:
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

