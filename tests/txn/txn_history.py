"""A builder of fabricated transactional histories in the run-record format of docs/transactions.md.

The builder keeps a model log per partition: a transaction's sends are appended when written
(explicitly with :meth:`Hist.write`, or all at once on completion), and its completion appends a
control marker to every partition it wrote, as Kafka does, so offsets have the usual gaps. Reads
follow the model: :meth:`Hist.read_visible` reads what a read_committed consumer would see; tests
inject anomalies by reading, writing or completing differently.
"""

from __future__ import annotations

TOPIC = "t"


class Txn:
    def __init__(self, proc, op_id, parts, reads, outcome, tid):
        self.proc, self.op_id, self.parts, self.reads, self.outcome, self.tid = proc, op_id, parts, reads, outcome, tid
        self.values = [f"{proc}-{op_id}-{j}" for j in range(len(parts))]
        self.offsets = [None] * len(parts)
        self.status = None  # "committed" | "aborted" | "unsure" once completed
        self.phase = None  # the completion's phase: ok | fail | info


class Hist:
    def __init__(self, partitions: int = 2, workload: dict | None = None, topic_config: dict | None = None,
                 broker_config: dict | None = None):
        self.events: list[dict] = []
        self.t = 0.0
        self.partitions = partitions
        self.logs: dict[int, list] = {p: [] for p in range(partitions)}  # p -> [(value | None, Txn | None)]
        self.txns: list[Txn] = []
        self.next_op = 0
        self.read_pos: dict = {}  # (proc, p) -> next offset to read
        self.tids: dict = {}
        self.metadata = {"schema_version": 1, "kafka_version": "3.9.2", "broker_config": dict(broker_config or {}),
                         "topics": [{"name": TOPIC, "partitions": partitions, "replication_factor": 3,
                                     "config": dict(topic_config or {})}],
                         "workload": dict(workload or {})}

    # -- events ------------------------------------------------------------------------------
    def ev(self, type_: str, **fields) -> dict:
        self.t += 0.001
        d = {"seq": len(self.events), "t": round(self.t, 6), "wall": 1.7e9 + self.t, "type": type_}
        d.update(fields)
        self.events.append(d)
        return d

    def advance(self, dt: float) -> None:
        self.t += dt

    def producer(self, proc: str, tid: str | None = None, init: bool = True, **cfg) -> None:
        tid = tid or f"tx-{proc}"
        self.tids[proc] = tid
        self.ev("client.config", process=proc, role="producer",
                config={"transactional.id": tid, "acks": "all", "enable.idempotence": True, **cfg})
        if init:
            self.ev("txn.init", process=proc, transactional_id=tid, producer_epoch=0)

    def consumer(self, proc: str, isolation: str = "read_committed") -> None:
        self.ev("client.config", process=proc, role="consumer",
                config={"isolation.level": isolation, "mode": "assign"})
        self.seek(proc)

    def seek(self, proc: str, offset: int = 0) -> None:
        """``proc`` positions itself at ``offset`` of every partition (0: the beginning)."""
        for p in range(self.partitions):
            self.read_pos[(proc, p)] = offset
            self.ev("txn.seek", process=proc, topic=TOPIC, partition=p, offset=offset)

    # -- transactions ------------------------------------------------------------------------
    def begin(self, proc: str, parts: list[int], reads: list | None = None, outcome: str = "commit") -> Txn:
        self.next_op += 1
        tx = Txn(proc, self.next_op, list(parts), list(reads or []), outcome, self.tids.get(proc))
        self.txns.append(tx)
        self.ev("txn", process=proc, op_id=tx.op_id, phase="invoke", f="txn", transactional_id=tx.tid,
                outcome=outcome, error=None,
                ops=[{"f": "send", "topic": TOPIC, "partition": p, "value": v, "offset": None}
                     for p, v in zip(tx.parts, tx.values)])
        return tx

    def write(self, tx: Txn, j: int | None = None) -> None:
        """Append send ``j`` (every unwritten send if None) of ``tx`` to its partition's log."""
        for k in range(len(tx.parts)) if j is None else [j]:
            if tx.offsets[k] is None:
                log = self.logs[tx.parts[k]]
                tx.offsets[k] = len(log)
                log.append((tx.values[k], tx))

    def complete(self, tx: Txn, phase: str = "ok", offsets: list | None = None, error: str | None = None) -> None:
        self.write(tx)
        tx.phase = phase
        if offsets is not None:
            tx.offsets = list(offsets)
        if phase == "ok":
            tx.status = "committed" if tx.outcome == "commit" else "aborted"
        else:
            tx.status = "aborted" if phase == "fail" else "unsure"
        if phase != "info":
            for p in sorted(set(tx.parts)):
                self.logs[p].append((None, None))  # the commit / abort marker
        ops = [{"f": "send", "topic": TOPIC, "partition": p, "value": v, "offset": o}
               for p, v, o in zip(tx.parts, tx.values, tx.offsets)]
        ops += [{"f": "read", "topic": TOPIC, "partition": p, "offset": o, "value": v} for p, o, v in tx.reads]
        self.ev("txn", process=tx.proc, op_id=tx.op_id, phase=phase, f="txn", transactional_id=tx.tid,
                outcome=tx.outcome, error=error, ops=ops)

    def txn(self, proc: str, parts: list[int], outcome: str = "commit", phase: str = "ok",
            reads: list | None = None) -> Txn:
        tx = self.begin(proc, parts, reads=reads, outcome=outcome)
        self.complete(tx, phase=phase)
        return tx

    # -- reads -------------------------------------------------------------------------------
    def poll(self, proc: str, p: int, off: int, value=None, **extra) -> None:
        if value is None:
            value = self.logs[p][off][0]
        self.ev("txn.poll", process=proc, topic=TOPIC, partition=p, offset=off, value=value, **extra)

    def visible(self, p: int) -> list[tuple[int, str]]:
        """(offset, value) of the records a read_committed consumer sees in partition p (up to the LSO)."""
        out = []
        for off, (value, tx) in enumerate(self.logs[p]):
            if value is None:
                continue
            if tx.status is None or tx.status == "unsure":
                break  # the last stable offset: an open transaction blocks what follows
            if tx.status == "committed":
                out.append((off, value))
        return out

    def lso(self, p: int) -> int:
        """The last stable offset: the first record of a transaction still open, else the log end."""
        for off, (value, tx) in enumerate(self.logs[p]):
            if value is not None and (tx.status is None or tx.status == "unsure"):
                return off
        return len(self.logs[p])

    def read_visible(self, proc: str, skip: set | None = None, **extra) -> None:
        """Read, in every partition, the visible records not read yet by ``proc``; values in
        ``skip`` are jumped over."""
        for p in range(self.partitions):
            start = self.read_pos.get((proc, p), 0)
            for off, value in self.visible(p):
                if off < start:
                    continue
                if not (skip and value in skip):
                    self.poll(proc, p, off, value, **extra)
                self.read_pos[(proc, p)] = off + 1

    def drain(self, skip: set | None = None) -> None:
        self.ev("phase", name="drain.start")
        self.seek("drain")
        self.read_visible("drain", skip=skip, drain=True)
        for p in range(self.partitions):
            self.ev("partition.end", topic=TOPIC, partition=p, end_offset=self.lso(p))
        self.ev("phase", name="drain.end")
