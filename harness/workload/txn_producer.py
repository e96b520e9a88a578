"""One transactional producer of the ``txn`` workload (process ``<prefix>p<i>``): its transactions, their
retries and outcomes, fencing, and the nemesis's client crash (``_Crashed``, :func:`abandon`).

Split from harness/workload/txn.py along the client / workload seam (Jepsen's client vs generator): this
module is the client, ``txn.py`` the configuration, the consumers and the workload that runs them;
``txn_rw.py`` the read-write variant of this client.
"""

from __future__ import annotations

import random
import threading
import time
from typing import TYPE_CHECKING, Callable

from confluent_kafka import KafkaError, KafkaException, Producer

from harness.clientlog import with_logger
from harness.workload.client_threads import create_niced, nice_increment
from harness.workload.config import connection, partition_ids, recorded_settings
from harness.workload.outcomes import error_name

if TYPE_CHECKING:
    from harness.workload.txn import TxnWorkloadConfig

Emit = Callable[..., object]

FENCED = ("_FENCED", "PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH")

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

    @staticmethod
    def _pace(next_t: float, interval: float) -> float:
        """Wait for the next transaction's slot at ``rate`` (``interval`` 0: back to back); returns the
        slot after it (never more than 1 s of missed slots made up)."""
        if not interval:
            return next_t
        wait = next_t - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        return max(next_t + interval, time.monotonic() - 1.0)

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
            next_t = self._pace(next_t, interval)
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
