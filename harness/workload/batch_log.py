"""Read a topic's log back as written, batch by batch, and record each batch's header as a ``txn.batch`` event.

The transaction-epoch checker (harness/checkers/txn_epochs.py, docs/transactions.md "Transactions v2")
judges what the broker **accepted into the log**: per producer id, the producer epoch of every data batch
and of every transaction marker (control batch), in offset order. No client library reports those, so
the partitions' leaders are asked directly with Fetch, read_uncommitted (:mod:`harness.protocol.fetch`),
from offset 0 to the high watermark.

The read waits (bounded) until each partition's last stable offset reached its high watermark: then
every transaction in it has its marker (the markers of a commit that returned to the client are written
after the EndTxn answer, by the coordinator's marker channel). A partition that never gets there is
recorded with its offsets (``txn.read`` ``lso_below_high: true``): an open transaction, which the checker
reports.

Events: ``txn.batch`` ``{"topic", "partition", "base_offset", "last_offset", "producer_id",
"producer_epoch", "transactional", "control", "marker", "coordinator_epoch", "leader_epoch", "values"}``
(``values``: a data batch's record values; ``marker``: ``commit`` / ``abort`` for a control batch) and one
``txn.read`` per partition ``{"topic", "partition", "high_watermark", "last_stable_offset",
"log_start_offset", "batches", "waited_s", "lso_below_high", "error"}``.
"""

from __future__ import annotations

import time

from harness.protocol import ProtocolClient, ProtocolError
from harness.protocol.endpoint import parse as parse_endpoint
from harness.protocol.fetch import READ_UNCOMMITTED, RecordBatch, fetch

TXN_BATCH, TXN_READ = "txn.batch", "txn.read"


def _leaders(endpoints, topic: str, timeout: float) -> dict[int, tuple[str, int]]:
    last: Exception | None = None
    for ep in endpoints:
        try:
            with ProtocolClient.at(ep, timeout=timeout) as c:
                md = c.metadata([topic])
        except ProtocolError as e:
            last = e
            continue
        hosts = {b.node_id: (b.host, b.port) for b in md.brokers}
        out = {}
        for t in md.topics:
            if t.name == topic:
                for p in t.partitions:
                    if p.leader in hosts:
                        out[p.partition] = hosts[p.leader]
        return out
    raise ProtocolError(f"no broker answered Metadata for {topic}: {last}")


def read_partition(host: str, port: int, topic: str, partition: int, timeout: float = 10.0):
    """Every batch of ``topic-partition`` from offset 0 to the high watermark:
    ``(batches, high watermark, last stable offset, log start offset)``."""
    batches: list[RecordBatch] = []
    offset, hw, lso, lss = 0, -1, -1, -1
    with ProtocolClient(host, port, timeout=timeout) as c:
        while True:
            fp = fetch(c, topic, {partition: offset}, isolation=READ_UNCOMMITTED)[partition]
            if fp.error:
                raise ProtocolError(f"Fetch {topic}-{partition} at {offset}: {fp.error}")
            hw, lso, lss = fp.high_watermark, fp.last_stable_offset, fp.log_start_offset
            if offset == 0 and lss > 0:
                offset = lss
                continue
            new = [b for b in fp.batches if b.last_offset >= offset]
            batches += new
            if not new or batches[-1].last_offset + 1 >= hw:
                return batches, hw, lso, lss
            offset = batches[-1].last_offset + 1


def read_log(bootstrap: str, topic: str, partitions: list[int], emit, *, settle_s: float = 30.0,
             timeout: float = 10.0) -> dict[int, dict]:
    """Read every partition (waiting up to ``settle_s`` for its last stable offset to reach the high
    watermark), record the batches and one ``txn.read`` each; returns {partition: the txn.read fields}."""
    endpoints = [parse_endpoint(x) for x in bootstrap.split(",") if x.strip()]
    out: dict[int, dict] = {}
    for p in partitions:
        t0 = time.monotonic()
        deadline = t0 + settle_s
        res = {"topic": topic, "partition": p, "high_watermark": None, "last_stable_offset": None,
               "log_start_offset": None, "batches": 0, "waited_s": 0.0, "lso_below_high": False, "error": None}
        batches: list[RecordBatch] = []
        while True:
            try:
                host, port = _leaders(endpoints, topic, timeout)[p]
                batches, hw, lso, lss = read_partition(host, port, topic, p, timeout)
                res.update(high_watermark=hw, last_stable_offset=lso, log_start_offset=lss, error=None)
                if lso >= hw:
                    break
            except (ProtocolError, KeyError, OSError) as e:
                res["error"] = f"{type(e).__name__}: {e}"
            if time.monotonic() >= deadline:
                break
            time.sleep(0.5)
        res["waited_s"] = round(time.monotonic() - t0, 3)
        res["lso_below_high"] = res["error"] is None and res["last_stable_offset"] < res["high_watermark"]
        res["batches"] = len(batches)
        if res["error"] is None:
            for b in batches:
                emit(TXN_BATCH, topic=topic, partition=p, base_offset=b.base_offset, last_offset=b.last_offset,
                     producer_id=b.producer_id, producer_epoch=b.producer_epoch, transactional=b.transactional,
                     control=b.control, marker=b.marker, coordinator_epoch=b.coordinator_epoch,
                     leader_epoch=b.leader_epoch, values=b.values)
        emit(TXN_READ, **res)
        out[p] = res
    return out
