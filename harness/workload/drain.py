"""The final drain: after the faults heal, read every partition from the beginning to its
high watermark, recording each record (``client`` ``drain`` ``ok``) and each partition's end
(``partition.end``). A partition that cannot be read to its end within the timeout gets no
``partition.end``, which the checker reports as undecided (``unseen``), never as loss.
"""

from __future__ import annotations

from harness.clientlog import with_logger

import time
import uuid
from typing import Callable, Iterable

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

from .consumer import consumer_settings
from .outcomes import error_name, msg_leader_epoch

Emit = Callable[..., object]


def _watermarks(consumer: Consumer, topic: str, partition: int, deadline: float) -> tuple[int, int] | None:
    """``(low, high)`` from the partition leader, retried until ``deadline``."""
    while time.monotonic() < deadline:
        try:
            return consumer.get_watermark_offsets(TopicPartition(topic, partition),
                                                  timeout=min(5.0, max(0.5, deadline - time.monotonic())),
                                                  cached=False)
        except KafkaException:
            time.sleep(0.5)
    return None


def drain(bootstrap: str, topic: str, partitions: Iterable[int], emit: Emit, *, timeout_s: float = 60.0,
          process: str = "drain", consumer_config: dict | None = None) -> dict:
    """Read ``partitions`` of ``topic`` to their high watermarks; returns
    ``{"ends": {partition: end_offset}, "records": n, "incomplete": [partition, ...], "errors": {...}}``.

    Emits ``phase`` ``drain.start`` / ``drain.end`` around the reads. Bounded by ``timeout_s``.
    """
    parts = sorted(set(int(p) for p in partitions))
    if not parts:
        raise ValueError("drain needs at least one partition")
    deadline = time.monotonic() + timeout_s
    emit("phase", name="drain.start", topic=topic, partitions=parts)
    settings = consumer_settings(bootstrap, f"kafka-chaos-drain-{uuid.uuid4().hex[:12]}", f"kafka-chaos-{process}",
                                 consumer_config)
    consumer = Consumer(with_logger(settings))
    ends: dict[int, int] = {}
    remaining: dict[int, int] = {}  # partition -> high watermark still to reach
    errors: dict[str, int] = {}
    records = 0
    try:
        for p in parts:
            wm = _watermarks(consumer, topic, p, deadline)
            if wm is None:
                errors["watermarks_unavailable"] = errors.get("watermarks_unavailable", 0) + 1
                continue
            low, high = wm
            if high <= low:
                ends[p] = high
                emit("partition.end", topic=topic, partition=p, end_offset=high)
            else:
                remaining[p] = high
        if remaining:
            consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in sorted(remaining)])
        while remaining and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=1000, timeout=0.5):
                err = msg.error()
                if err is not None:
                    n = error_name(err)
                    errors[n] = errors.get(n, 0) + 1
                    continue
                p, off = msg.partition(), msg.offset()
                raw = msg.value()
                records += 1
                emit("client", process=process, f="drain", phase="ok", op_id=None, topic=topic, partition=p,
                     offset=off, value=raw.decode("utf-8", "replace") if raw is not None else None, error=None,
                     leader_epoch=msg_leader_epoch(msg))
                high = remaining.get(p)
                if high is not None and off >= high - 1:
                    del remaining[p]
                    ends[p] = high
                    emit("partition.end", topic=topic, partition=p, end_offset=high)
    finally:
        consumer.close()
        incomplete = [p for p in parts if p not in ends]
        emit("phase", name="drain.end", topic=topic, records=records, incomplete=incomplete)
    return {"ends": ends, "records": records, "incomplete": incomplete, "errors": errors}
