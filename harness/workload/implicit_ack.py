"""librdkafka's implicit acks, told apart from the broker's acks.

An idempotent librdkafka producer that sees a batch succeed while an earlier batch of the same
partition is still unacknowledged (it failed with a timeout or a transport error) assumes the earlier
one was stored and reports its messages delivered, with no offset ("implicitly acked by subsequent
batch success", ``rd_kafka_dr_implicit_ack`` in librdkafka's ``rdkafka_broker.c``, called from
``rd_kafka_handle_idempotent_Produce_success`` in ``rdkafka_request.c``).

The inference holds when the broker already keeps state for the producer on that partition: it
then appends a batch only in sequence, so the later success proves the earlier batch is in the
log. It does not hold when the broker has no state for the producer there yet: Apache Kafka accepts
any first sequence from a producer it has no entry for (``ProducerAppendInfo.checkSequence``:
"If there is no current producer epoch ... accept writes with any sequence number"), so the later
batch can be appended as the first one while the earlier batch never was. That is how a new
producer loses its first batch on a new partition whose first request failed
(confluentinc/confluent-kafka-go#921; seen here on KRaft 4.1.2, ``broker_failover.kill_leader``).
No broker ever acknowledged such a write.

So the producer records an implicitly acked write as:

- ``ok`` (no offset, ``ack: "implicit"``) when this producer already had a write on that partition
  acknowledged by the broker, with an offset, under the partition's current producer id: the
  broker's sequence check vouches for it;
- ``info`` with error ``IMPLICIT_ACK_UNCONFIRMED`` otherwise: its outcome is unknown, as for a
  timed-out send; a durability checker must not count it as acknowledged.

Each implicit ack is also recorded as a ``client.implicit_ack`` event. The facts come from
librdkafka's ``eos`` debug context, which the producer enables (a few lines per producer id change
and per implicit ack): ``IMPLICITACK`` and ``NEWPID`` (the partition's producer id changed; the
broker holds no state for the new one until a write of it is acknowledged).
"""

from __future__ import annotations

import re
from typing import Callable

IMPLICIT_UNCONFIRMED = "IMPLICIT_ACK_UNCONFIRMED"

_IMPLICIT = re.compile(r"(\S+) \[(\d+)\] (\d+) message\(s\) implicitly acked by subsequent batch success "
                       r"\(msgids (\d+)\.\.(\d+)")
_NEWPID = re.compile(r"(\S+) \[(\d+)\] changed (PID\{[^}]*\}) -> (PID\{[^}]*\})")


class ImplicitAcks:
    """Per producer instance: which partitions had a broker ack under their current producer id, and
    how many of the next offsetless delivery reports of each partition are implicit acks.

    ``feed(facility, message)`` takes librdkafka's log lines (in the order the client serves them,
    which is also the order of its delivery reports); ``classify(partition, offset)`` is asked for
    every successful delivery report."""

    def __init__(self, topic: str, on_implicit: Callable[..., object]):
        self.topic = topic
        self.on_implicit = on_implicit
        self.vouched: set[int] = set()          # partitions with a broker ack under the current pid
        self.pending: dict[int, list[bool]] = {}  # partition -> vouched flag per implicit ack to come

    def feed(self, facility: str, message: str) -> None:
        if facility == "IMPLICITACK":
            m = _IMPLICIT.search(message)
            if m and m.group(1) == self.topic:
                part, n = int(m.group(2)), int(m.group(3))
                vouched = part in self.vouched
                self.pending.setdefault(part, []).extend([vouched] * n)
                self.on_implicit(partition=part, count=n, msgids=[int(m.group(4)), int(m.group(5))],
                                 vouched=vouched)
        elif facility == "NEWPID":
            m = _NEWPID.search(message)
            if m and m.group(1) == self.topic:
                self.vouched.discard(int(m.group(2)))

    def classify(self, partition: int, offset: int | None) -> str:
        """``"broker"`` (an offset from the broker), ``"implicit"`` (vouched implicit ack) or
        ``"unconfirmed"`` (an implicit ack no broker stands behind)."""
        if offset is not None and offset >= 0:
            self.vouched.add(partition)
            return "broker"
        queue = self.pending.get(partition)
        if queue:
            return "implicit" if queue.pop(0) else "unconfirmed"
        # offsetless without an IMPLICITACK line: DUPLICATE_SEQUENCE_NUMBER taken as success (the
        # broker said it holds the batch) or a broker answer without an offset: the broker's word
        return "implicit" if partition in self.vouched else "broker"


class EosLog:
    """A ``logger`` for confluent-kafka: passes every line on to ``base`` and feeds librdkafka's
    idempotence lines to an :class:`ImplicitAcks` (confluent-kafka calls
    ``log(level, "%s [%s] %s", facility, client name, message)`` from ``poll``)."""

    FACILITIES = frozenset({"IMPLICITACK", "NEWPID"})

    def __init__(self, base, acks: ImplicitAcks):
        self.base = base
        self.acks = acks

    def log(self, level, fmt, *args) -> None:
        if len(args) == 3 and args[0] in self.FACILITIES:
            self.acks.feed(args[0], str(args[2]))
        self.base.log(level, fmt, *args)
