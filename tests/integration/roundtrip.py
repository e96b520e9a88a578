"""A produce / consume round trip for integration tests: every acknowledged value is read back."""

from __future__ import annotations

import time
import uuid

from confluent_kafka import Consumer, Producer


def assert_round_trip(bootstrap: str, topic: str, n: int, timeout_s: float) -> None:
    """Produce ``n`` distinct values with acks=all (idempotent), require every one acknowledged, then
    consume the topic from the start until all of them are read back (bounded by ``timeout_s``)."""
    values = [f"v-{i}-{uuid.uuid4().hex[:6]}" for i in range(n)]
    acked, errors = [], []
    prod = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    for v in values:
        prod.produce(topic, v.encode(), on_delivery=lambda e, m: errors.append(e) if e else acked.append(m))
    assert prod.flush(timeout_s) == 0 and not errors, errors[:3]
    assert len(acked) == n
    cons = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:6]}",
                     "auto.offset.reset": "earliest", "enable.auto.commit": False})
    cons.subscribe([topic])
    seen: list[str] = []
    deadline = time.monotonic() + timeout_s
    while len(seen) < n and time.monotonic() < deadline:
        msg = cons.poll(1.0)
        if msg is not None and not msg.error():
            seen.append(msg.value().decode())
    cons.close()
    assert sorted(seen) == sorted(values)
