"""librdkafka's implicit acks are told apart from the broker's (harness/workload/implicit_ack.py).

The lines are librdkafka's own formats (rdkafka_broker.c IMPLICITACK, rdkafka_partition.c NEWPID);
the NEWPID one was captured from a real producer (confluent-kafka 2.16, debug=eos)."""

from __future__ import annotations

import threading

from harness.workload.config import WorkloadConfig
from harness.workload.implicit_ack import IMPLICIT_UNCONFIRMED, EosLog, ImplicitAcks
from harness.workload.producer import ProducerProcess

NEWPID = "[thrd:127.0.0.1:39871/1]: chaos [1] changed PID{Invalid} -> PID{Id:0,Epoch:0} with base MsgId 1"


def implicit(part: int, n: int, first: int = 1) -> str:
    return (f"[thrd:127.0.0.1:32801/3]: chaos [{part}] {n} message(s) implicitly acked by subsequent batch "
            f"success (msgids {first}..{first + n - 1}, last acked {first - 1})")


class Msg:
    def __init__(self, partition, offset):
        self._p, self._o = partition, offset

    def partition(self):
        return self._p

    def offset(self):
        return self._o

    def leader_epoch(self):
        return None


def test_a_first_batch_acked_only_by_inference_is_unconfirmed():
    seen = []
    acks = ImplicitAcks("chaos", lambda **kw: seen.append(kw))
    acks.feed("NEWPID", NEWPID)
    acks.feed("IMPLICITACK", implicit(1, 1))
    assert seen == [{"partition": 1, "count": 1, "msgids": [1, 1], "vouched": False}]
    assert acks.classify(1, None) == "unconfirmed"
    assert acks.classify(1, 0) == "broker"      # the next batch, acked by the broker at offset 0


def test_an_implicit_ack_after_a_broker_ack_is_vouched_until_the_producer_id_changes():
    seen = []
    acks = ImplicitAcks("chaos", lambda **kw: seen.append(kw))
    acks.feed("NEWPID", NEWPID)
    assert acks.classify(1, 7) == "broker"
    acks.feed("IMPLICITACK", implicit(1, 2, first=9))
    assert [acks.classify(1, None), acks.classify(1, None)] == ["implicit", "implicit"]
    assert acks.classify(2, None) == "broker"   # offsetless on another partition: not an implicit ack
    acks.feed("NEWPID", NEWPID.replace("PID{Invalid}", "PID{Id:0,Epoch:0}").replace("Epoch:0} with", "Epoch:1} with"))
    acks.feed("IMPLICITACK", implicit(1, 1, first=20))
    assert acks.classify(1, None) == "unconfirmed"
    assert [s["vouched"] for s in seen] == [True, False]


def test_lines_of_another_topic_and_other_facilities_are_ignored():
    acks = ImplicitAcks("other", lambda **kw: None)
    acks.feed("IMPLICITACK", implicit(1, 1))
    acks.feed("DRAIN", "anything")
    assert acks.pending == {}


def test_the_logger_passes_every_line_on():
    got = []

    class Base:
        def log(self, level, fmt, *args):
            got.append(args[0])

    acks = ImplicitAcks("chaos", lambda **kw: None)
    log = EosLog(Base(), acks)
    log.log(7, "%s [%s] %s", "IMPLICITACK", "rdkafka#producer-1", implicit(0, 3))
    log.log(7, "%s [%s] %s", "GETPID", "rdkafka#producer-1", "x")
    assert got == ["IMPLICITACK", "GETPID"]
    assert acks.pending == {0: [False, False, False]}


def test_the_producer_records_an_unconfirmed_implicit_ack_as_info():
    events = []
    cfg = WorkloadConfig(topic="chaos")
    p = ProducerProcess("p0", "127.0.0.1:1", cfg, lambda kind, **kw: events.append((kind, kw)),
                        threading.Event())
    p._acks = ImplicitAcks("chaos", lambda **kw: events.append(("client.implicit_ack", kw)))
    p._acks.feed("NEWPID", NEWPID)
    p.pending = {2: "p0-1", 5: "p0-4", 8: "p0-7"}
    p._acks.feed("IMPLICITACK", implicit(1, 1))
    p._delivered(2, "p0-1", None, Msg(1, -1001))   # librdkafka: delivered, offset invalid
    p._delivered(5, "p0-4", None, Msg(1, 0))
    p._acks.feed("IMPLICITACK", implicit(1, 1, first=3))
    p._delivered(8, "p0-7", None, Msg(1, -1001))
    sends = [kw for kind, kw in events if kind == "client"]
    assert [(s["value"], s["phase"], s["offset"], s["error"]) for s in sends] == [
        ("p0-1", "info", None, IMPLICIT_UNCONFIRMED), ("p0-4", "ok", 0, None), ("p0-7", "ok", None, None)]
    assert sends[0]["client_said"] == "delivered" and sends[2]["ack"] == "implicit"
    assert [kw["vouched"] for kind, kw in events if kind == "client.implicit_ack"] == [False, True]
