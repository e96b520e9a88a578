"""Consumer processes that record every record they read as a ``client`` ``poll`` ``ok`` event.

``assign`` mode reads every partition from the beginning by manual assignment (no group, no
rebalances), so the checker can demand monotonic, gap-free offsets per partition.
``subscribe`` mode joins a consumer group and reads what the group hands it.
Each consumer records its life as ``client.life`` events (started, stopped, died).
"""

from __future__ import annotations

from harness.clientlog import with_logger

import threading
import time
import uuid
from typing import Callable

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from harness.workload.config import WorkloadConfig, connection, recorded_settings
from harness.workload.outcomes import count_error, msg_leader_epoch
from harness.workload.producer import CRASH_ERROR

Emit = Callable[..., object]


def consumer_settings(bootstrap: str | dict, group_id: str, client_id: str, extra: dict | None = None,
                      auto_commit: bool = False) -> dict:
    conf = {
        **connection(bootstrap),
        "group.id": group_id,
        "client.id": client_id,
        "enable.auto.commit": auto_commit,
        "auto.offset.reset": "earliest",
        "enable.partition.eof": False,
        "isolation.level": "read_uncommitted",
        # a broker answers a fetch once 4 KB are there or after 100 ms (librdkafka: 1 byte, 500 ms). With
        # 1 byte every write woke every consumer's fetch: at the workload's 200 sends/s that was ~60
        # fetches/s per broker, and a scenario cost ~20 % more CPU (broker_failover.kill_leader, 3 runs
        # each: 18.4 -> 14.6 CPU-s). Every record is still read, at most 100 ms later; at the log end
        # a fetch now waits 100 ms instead of 500 ms (the drain). Overridable per workload (consumer_config).
        "fetch.wait.max.ms": 100,
        "fetch.min.bytes": 4096,
    }
    conf.update(extra or {})
    return conf


class ClientThread:
    """The fields, thread body and crash switch that the group member (groups.py), the share-group
    member (share.py) and the transactional consumer (txn.py) share: ``_run`` raising records ``died``
    with the error; a ``crash`` (the nemesis's ``client_crash``) ends it as ``died`` / ``client_crash``;
    else ``stopped``. A subclass calls :meth:`__init__` (or sets the same fields itself) and has
    ``life`` and ``_run``."""

    def __init__(self, name: str, cfg, emit: Emit, stop: threading.Event, thread_name: str):
        self.name, self.cfg, self.emit, self.stop_event = name, cfg, emit, stop
        self.records = 0
        self.errors: dict[str, int] = {}
        self.error: str | None = None
        self._halt = threading.Event()
        self.thread = threading.Thread(target=self._main, name=thread_name, daemon=True)

    def crash(self) -> None:
        self._halt.set()

    def _main(self) -> None:
        try:
            self._run()
        except Exception as e:  # noqa: BLE001
            self.error = f"{type(e).__name__}: {e}"
            self.life("died", self.error)
            return
        self.life("died" if self._halt.is_set() else "stopped", "client_crash" if self._halt.is_set() else None)


class ConsumerProcess:
    """One consumer thread in ``assign`` or ``subscribe`` mode."""

    def __init__(self, name: str, mode: str, bootstrap: str, config: WorkloadConfig, emit: Emit,
                 stop: threading.Event):
        if mode not in ("assign", "subscribe"):
            raise ValueError(f"consumer mode must be 'assign' or 'subscribe', not {mode!r}")
        self.name = name
        self.mode = mode
        self.cfg = config
        self.emit = emit
        self.stop_event = stop
        group = (config.group_id or f"{config.process_prefix}group-{config.topic}") if mode == "subscribe" \
            else f"kafka-chaos-assign-{uuid.uuid4().hex[:12]}"  # required by librdkafka, never used
        self.settings = consumer_settings(bootstrap, group, f"kafka-chaos-{name}", config.consumer_config,
                                          auto_commit=(mode == "subscribe"))
        self.records = 0
        self.errors: dict[str, int] = {}
        self.error: str | None = None
        self._halt = threading.Event()
        self.thread = threading.Thread(target=self._main, name=f"consumer-{name}", daemon=True)

    def life(self, state: str, error: str | None = None, **extra) -> None:
        self.emit("client.life", process=self.name, role="consumer", state=state, error=error, mode=self.mode,
                  **extra)

    def crash(self) -> None:
        """End this consumer abruptly (the nemesis's ``client_crash``): it stops reading at once and
        records ``died``."""
        self._halt.set()

    def _main(self) -> None:
        try:
            self._run()
        except Exception as e:
            self.error = f"{type(e).__name__}: {e}"
            self.life("died", self.error)
            return
        if self._halt.is_set():
            self.error = CRASH_ERROR
            self.life("died", CRASH_ERROR)
        else:
            self.life("stopped", None, reason="asked" if self.stop_event.is_set() else "limit")

    def _run(self) -> None:
        cfg = self.cfg
        self.emit("client.config", process=self.name, role="consumer",
                  config={"mode": self.mode, **recorded_settings(self.settings)})
        consumer = Consumer(with_logger(self.settings))
        self.life("started", None)
        try:
            if self.mode == "assign":
                consumer.assign([TopicPartition(cfg.topic, p, OFFSET_BEGINNING) for p in cfg.partition_ids])
            else:
                # the assignment time is a measured fact (harness/checkers/measured.py: group_join_s)
                consumer.subscribe([cfg.topic], on_assign=lambda c, ps: self.emit(
                    "client.assign", process=self.name, partitions=[[tp.topic, tp.partition] for tp in ps]))
            deadline = time.monotonic() + cfg.consumer_max_s
            emit, name, topic = self.emit, self.name, cfg.topic
            halt = self._halt
            while not self.stop_event.is_set() and not halt.is_set() and self.records < cfg.max_records and time.monotonic() < deadline:
                for msg in consumer.consume(num_messages=500, timeout=cfg.poll_timeout_s):
                    err = msg.error()
                    if err is not None:
                        count_error(self.errors, err)
                        continue
                    self.records += 1
                    raw = msg.value()
                    emit("client", process=name, f="poll", phase="ok", op_id=None, topic=topic,
                         partition=msg.partition(), offset=msg.offset(),
                         value=raw.decode("utf-8", "replace") if raw is not None else None,
                         error=None, leader_epoch=msg_leader_epoch(msg))
        finally:
            consumer.close()

