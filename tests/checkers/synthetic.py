"""Synthetic run histories for testing and benchmarking the checkers without a cluster.

:class:`History` writes events in the run-record format (docs/run-record.md) while keeping
a simulated log per partition, so a clean history is easy to produce and an anomaly is
injected by editing that log (``lose``, ``overwrite``, ``duplicate``) or by writing the
odd event by hand.
"""

from __future__ import annotations

from typing import Any


class History:
    """Builds ``events`` (list of dicts) and ``metadata`` for :func:`check_durability`."""

    def __init__(self, topic: str = "t", partitions: int = 1, replication_factor: int = 3,
                 broker_config: dict | None = None, topic_config: dict | None = None,
                 workload: dict | None = None, kafka_version: str | None = "3.9.0"):
        self.topic = topic
        self.t = 0.0
        self.events: list[dict] = []
        self.logs: dict[tuple[str, int], list] = {(topic, p): [] for p in range(partitions)}
        self._op = 0
        self._n: dict[str, int] = {}
        self._fault = 0
        self.metadata: dict[str, Any] = {
            "schema_version": 1, "kafka_version": kafka_version,
            "broker_config": dict(broker_config or {}),
            "topics": [{"name": topic, "partitions": partitions, "replication_factor": replication_factor,
                        "config": dict(topic_config or {})}],
            "workload": dict(workload or {"acks": "all", "enable_idempotence": True}),
        }

    # -- plumbing ----------------------------------------------------------------------------
    def emit(self, type_: str, **fields) -> dict:
        ev = {"seq": len(self.events), "t": round(self.t, 6), "wall": 1.7e9 + self.t, "type": type_}
        ev.update(fields)
        self.events.append(ev)
        return ev

    def advance(self, dt: float) -> "History":
        self.t += dt
        return self

    def next_value(self, process: str) -> str:
        n = self._n.get(process, 0)
        self._n[process] = n + 1
        return f"{process}-{n}"

    # -- configuration -----------------------------------------------------------------------
    def producer(self, process: str, **config) -> None:
        """``client.config`` for a producer, e.g. ``producer("p0", acks="1", **{"enable.idempotence": False})``."""
        self.emit("client.config", process=process, role="producer", config=dict(config))

    def consumer(self, process: str, mode: str = "assign", **config) -> None:
        self.emit("client.config", process=process, role="consumer", config={"mode": mode, **config})

    # -- sends -------------------------------------------------------------------------------
    def invoke(self, process: str, partition: int = 0, value: str | None = None) -> dict:
        """A send invocation; returns a handle for :meth:`complete`."""
        self._op += 1
        value = value if value is not None else self.next_value(process)
        self.emit("client", process=process, f="send", phase="invoke", op_id=self._op, topic=self.topic,
                  partition=partition, offset=None, value=value, error=None, leader_epoch=None)
        return {"process": process, "op_id": self._op, "partition": partition, "value": value}

    def complete(self, op: dict, phase: str = "ok", error: str | None = None, offset: int | None = None,
                 append: bool | None = None) -> int | None:
        """Complete ``op``. ``ok`` appends the value to the simulated log (unless ``append=False``)
        and reports its offset (or ``offset`` if given, to lie); ``fail``/``info`` append only if
        ``append=True``."""
        log = self.logs[(self.topic, op["partition"])]
        if append if append is not None else phase == "ok":
            log.append(op["value"])
        if phase == "ok" and offset is None:
            offset = len(log) - 1
        self.emit("client", process=op["process"], f="send", phase=phase, op_id=op["op_id"], topic=self.topic,
                  partition=op["partition"], offset=offset if phase == "ok" else None, value=op["value"],
                  error=error, leader_epoch=None)
        return offset

    def send(self, process: str, partition: int = 0, latency: float = 0.005, **kw) -> dict:
        """Invoke, wait ``latency`` seconds, complete; returns the op (with ``offset`` set)."""
        op = self.invoke(process, partition)
        self.advance(latency)
        op["offset"] = self.complete(op, **kw)
        return op

    # -- log surgery (anomaly injection) --------------------------------------------------------
    def log(self, partition: int = 0) -> list:
        return self.logs[(self.topic, partition)]

    def lose(self, partition: int, offset: int) -> str:
        """Remove the record at ``offset`` (later records move down one offset)."""
        return self.log(partition).pop(offset)

    def truncate(self, partition: int, length: int) -> list:
        """Cut the log to ``length`` records, as a truncating leader change would."""
        log = self.log(partition)
        gone = log[length:]
        del log[length:]
        return gone

    # -- reads -------------------------------------------------------------------------------
    def poll(self, process: str, partition: int, offset: int, value: str | None = None) -> None:
        if value is None:
            value = self.log(partition)[offset]
        self.emit("client", process=process, f="poll", phase="ok", op_id=None, topic=self.topic,
                  partition=partition, offset=offset, value=value, error=None, leader_epoch=0)

    def poll_all(self, process: str, partition: int = 0, start: int = 0) -> None:
        for off in range(start, len(self.log(partition))):
            self.poll(process, partition, off)

    def drain(self, partitions: list[int] | None = None, end_events: bool = True) -> None:
        self.emit("phase", name="drain.start")
        for p in partitions if partitions is not None else sorted(p for _, p in self.logs):
            log = self.log(p)
            for off, value in enumerate(log):
                self.emit("client", process="drain", f="drain", phase="ok", op_id=None, topic=self.topic,
                          partition=p, offset=off, value=value, error=None, leader_epoch=0)
            if end_events:
                self.emit("partition.end", topic=self.topic, partition=p, end_offset=len(log))
        self.emit("phase", name="drain.end")

    # -- cluster observations and faults ---------------------------------------------------------
    def isr(self, partition: int, isr: list[int], leader: int | None = None, leader_epoch: int = 0,
            recovery: int = 0, watch_lag_s: float | None = None, source: str = "watch") -> None:
        """A partition state seen by the watch now; ``watch_lag_s``: ZooKeeper committed it that long
        before (the event carries ``zk_time``)."""
        extra = {} if watch_lag_s is None else {"zk_time": 1.7e9 + self.t - watch_lag_s}
        self.emit("zk.partition_state", zxid=len(self.events), source=source, topic=self.topic,
                  partition=partition, leader=leader if leader is not None else (isr[0] if isr else -1),
                  leader_epoch=leader_epoch, isr=list(isr), controller_epoch=1, leader_recovery_state=recovery,
                  version=len(self.events), deleted=False, **extra)

    def fault(self, fault: str = "kill", target: str = "leader(t,0)") -> int:
        self._fault += 1
        self.emit("fault.start", fault_id=self._fault, fault=fault, target=target, nodes=[], broker_ids=[],
                  params={})
        return self._fault

    def heal(self, fault_id: int, fault: str = "kill") -> None:
        self.emit("fault.end", fault_id=fault_id, fault=fault, nodes=[], ok=True, error=None)
