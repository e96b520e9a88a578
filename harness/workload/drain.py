"""The final drain: after the faults heal, read every partition from the beginning to its
high watermark, recording each record (``client`` ``drain`` ``ok``) and each partition's end
(``partition.end``). A partition that cannot be read to its end within the timeout gets no
``partition.end``, which the checker reports as undecided (``unseen``), never as loss.

A partition the brokers say does not exist (Metadata: the topic is unknown, or has no such
partition) on every answer for at least ``ABSENT_CONFIRM_S`` and ``ABSENT_CONFIRM_N`` answers, each
from a broker that knows the cluster (it names a controller and brokers), is
recorded as ``partition.absent``: the broker acknowledged writes there and now has no partition to
hold them, which the checker judges as loss (unless the scenario deleted the topic itself).
One answer is not enough: a broker just restarted may not have the cluster's metadata yet.
"""

from __future__ import annotations

from harness.clientlog import with_logger

import time
import uuid
from typing import Callable, Iterable

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from harness.workload.consumer import consumer_settings
from harness.workload.outcomes import error_name, msg_leader_epoch

Emit = Callable[..., object]


ABSENT_CONFIRM_S = 10.0  # absence must hold this long ...
ABSENT_CONFIRM_N = 5     # ... over at least this many Metadata answers, with none saying otherwise


def _absence(consumer: Consumer, topic: str, partition: int, timeout: float) -> str | None:
    """Why Metadata says ``topic``/``partition`` does not exist, or None (it exists, or no answer)."""
    try:
        md = consumer.list_topics(topic, timeout=timeout)
    except KafkaException:
        return None
    if md.controller_id < 0 or not md.brokers:
        return None    # the answering broker does not know the cluster yet (e.g. just restarted): no evidence
    t = md.topics.get(topic)
    if t is None:
        return "Metadata lists no such topic"
    if t.error is not None:
        return "Metadata: UNKNOWN_TOPIC_OR_PARTITION" if t.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART else None
    if partition not in t.partitions:
        return f"Metadata lists partitions {sorted(t.partitions)} of the topic"
    return None


def _watermarks(consumer: Consumer, topic: str, partition: int, deadline: float
                ) -> tuple[tuple[int, int] | None, dict | None]:
    """``((low, high), None)`` from the partition leader, retried until ``deadline``; ``(None, absence)``
    when Metadata said the partition does not exist on every answer for ABSENT_CONFIRM_S (and
    ABSENT_CONFIRM_N answers); ``(None, None)`` when neither was established by ``deadline``."""
    first_absent: float | None = None
    answers = 0
    while time.monotonic() < deadline:
        try:
            return consumer.get_watermark_offsets(TopicPartition(topic, partition),
                                                  timeout=min(5.0, max(0.5, deadline - time.monotonic())),
                                                  cached=False), None
        except KafkaException:
            why = _absence(consumer, topic, partition, min(5.0, max(0.5, deadline - time.monotonic())))
            now = time.monotonic()
            if why is None:
                first_absent, answers = None, 0
            else:
                first_absent = now if first_absent is None else first_absent
                answers += 1
                if answers >= ABSENT_CONFIRM_N and now - first_absent >= ABSENT_CONFIRM_S:
                    return None, {"reason": why, "answers": answers, "over_s": round(now - first_absent, 1)}
            time.sleep(0.5)
    return None, None


def drain(bootstrap: str, topic: str, partitions: Iterable[int], emit: Emit, *, timeout_s: float = 60.0,
          process: str = "drain", consumer_config: dict | None = None) -> dict:
    """Read ``partitions`` of ``topic`` to their high watermarks; returns
    ``{"ends": {partition: end_offset}, "records": n, "incomplete": [partition, ...], "absent": [partition, ...],
    "errors": {...}}`` (an absent partition is decided, not incomplete).

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
    absent: list[int] = []
    remaining: dict[int, int] = {}  # partition -> high watermark still to reach
    errors: dict[str, int] = {}
    records = 0
    topic_gone: dict | None = None  # a confirmed absence of the whole topic holds for its other partitions
    try:
        for p in parts:
            if topic_gone is not None and _absence(consumer, topic, p, 5.0) == topic_gone["reason"]:
                wm, gone = None, topic_gone
            else:
                wm, gone = _watermarks(consumer, topic, p, deadline)
            if gone is not None:
                if "partitions" not in gone["reason"]:
                    topic_gone = gone
                absent.append(p)
                emit("partition.absent", topic=topic, partition=p, **gone)
                continue
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
        incomplete = [p for p in parts if p not in ends and p not in absent]
        emit("phase", name="drain.end", topic=topic, records=records, incomplete=incomplete,
             **({"absent": absent} if absent else {}))
    return {"ends": ends, "records": records, "incomplete": incomplete, "absent": absent, "errors": errors}
