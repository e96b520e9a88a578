"""The transactional workload without a broker: its configuration, the workload kind the runner picks,
the events one transaction records (docs/transactions.md) against a fake producer, the coordinator
partition of a transactional id, and the verdict's use of the transaction checker."""

from __future__ import annotations

import threading

import pytest
from confluent_kafka import KafkaError, KafkaException
from txn_history import Hist

from harness.checkers.txn import check_transactions
from harness.checkers.verdict import decide
from harness.workload import TxnWorkload, TxnWorkloadConfig, Workload, make_workload
from harness.workload.txn_producer import TxnProducerProcess
from suites.scenarios.transactions import java_string_hash, txn_state_partition


class _Msg:
    def __init__(self, offset):
        self._offset = offset

    def offset(self):
        return self._offset


class FakeProducer:
    """Enough of confluent_kafka.Producer's transactional API: delivery reports at commit / abort."""

    def __init__(self, fail_commit: KafkaError | None = None):
        self.ends: dict[int, int] = {}
        self.pending: list = []
        self.fail_commit = fail_commit
        self.calls: list[str] = []

    def begin_transaction(self):
        self.calls.append("begin")

    def produce(self, topic, value=None, key=None, partition=None, on_delivery=None):
        self.pending.append((partition, on_delivery))

    def _flush(self):
        for p, cb in self.pending:
            off = self.ends.get(p, 0)
            self.ends[p] = off + 1
            cb(None, _Msg(off))
        self.pending = []

    def commit_transaction(self, timeout=None):
        self.calls.append("commit")
        if self.fail_commit is not None:
            raise KafkaException(self.fail_commit)
        self._flush()

    def flush(self, timeout=None):
        self.calls.append("flush")
        self._flush()
        return 0

    def abort_transaction(self, timeout=None):
        self.calls.append("abort")
        self.pending = []

    def poll(self, timeout=None):
        return 0


def _producer(events: list, **cfg) -> TxnProducerProcess:
    config = TxnWorkloadConfig(topic="txn", partitions=4, **cfg)
    emit = lambda type_, **f: events.append({"type": type_, **f})  # noqa: E731
    return TxnProducerProcess("p0", "localhost:9092", config, emit, threading.Event())


def test_config_metadata_says_read_committed_and_kind():
    c = TxnWorkloadConfig(topic="txn", partitions=3)
    m = c.to_metadata()
    assert m["kind"] == "txn" and m["isolation.level"] == "read_committed" and m["partitions"] == [0, 1, 2]
    assert m["transactional_id"] == "kc-tx-txn"
    for bad in ({"abort_ratio": 1.5}, {"sends_per_txn": 0}, {"kind": "plain"}, {"partitions": []}):
        with pytest.raises(ValueError):
            TxnWorkloadConfig(topic="txn", **bad)


def test_make_workload_picks_the_kind():
    emit = lambda *a, **k: None  # noqa: E731
    w = make_workload("localhost:9092", {"kind": "txn", "topic": "txn", "partitions": 2, "zombie_at_s": 5}, emit)
    assert isinstance(w, TxnWorkload) and [p.name for p in w.producers] == ["p0", "p1"]
    assert [c.name for c in w.consumers] == ["c0"]
    assert w.consumers[0].settings["isolation.level"] == "read_committed"
    assert isinstance(make_workload("localhost:9092", {"topic": "t", "partitions": 2}, emit), Workload)


def test_committed_transaction_records_invoke_and_ok_with_offsets():
    events: list = []
    p = _producer(events)
    ops = [{"f": "send", "topic": "txn", "partition": q, "value": f"p0-1-{j}", "offset": None}
           for j, q in enumerate([0, 2, 0, 2])]
    p._transaction(FakeProducer(), 1, ops, "commit")
    inv, ok = [e for e in events if e["type"] == "txn"]
    assert inv["phase"] == "invoke" and all(o["offset"] is None for o in inv["ops"])
    assert ok["phase"] == "ok" and ok["outcome"] == "commit" and ok["error"] is None
    assert [(o["partition"], o["offset"]) for o in ok["ops"]] == [(0, 0), (2, 0), (0, 1), (2, 1)]
    assert p.counts["committed"] == 1


def test_aborted_transaction_is_ok_with_outcome_abort():
    events: list = []
    p = _producer(events)
    ops = [{"f": "send", "topic": "txn", "partition": 1, "value": "p0-1-0", "offset": None}]
    p._transaction(FakeProducer(), 1, ops, "abort")
    done = [e for e in events if e["type"] == "txn"][-1]
    assert done["phase"] == "ok" and done["outcome"] == "abort" and p.counts["aborted"] == 1
    assert done["ops"][0]["offset"] == 0          # flushed before the abort: the aborted record is in the log


def test_fenced_commit_records_txn_fenced_and_an_unsure_completion():
    events: list = []
    p = _producer(events)
    ops = [{"f": "send", "topic": "txn", "partition": 1, "value": "p0-1-0", "offset": None}]
    with pytest.raises(Exception):
        p._transaction(FakeProducer(fail_commit=KafkaError(KafkaError._FENCED, "fenced", fatal=True)), 1, ops,
                       "commit")
    fenced = [e for e in events if e["type"] == "txn.fenced"]
    assert fenced and fenced[0]["error"] == "_FENCED" and p.fenced.is_set()
    done = [e for e in events if e["type"] == "txn"][-1]
    assert done["phase"] == "info" and done["error"] == "_FENCED"


def test_abortable_commit_error_aborts_and_records_fail():
    events: list = []
    p = _producer(events)
    ops = [{"f": "send", "topic": "txn", "partition": 1, "value": "p0-1-0", "offset": None}]
    fake = FakeProducer(fail_commit=KafkaError(KafkaError.NOT_ENOUGH_REPLICAS, "x", txn_requires_abort=True))
    p._transaction(fake, 1, ops, "commit")
    done = [e for e in events if e["type"] == "txn"][-1]
    assert done["phase"] == "fail" and fake.calls[-1] == "abort" and p.counts["failed"] == 1


def test_recorded_shape_is_what_the_checker_reads():
    events: list = []
    p = _producer(events)
    fake = FakeProducer()
    for i, outcome in enumerate(["commit", "abort", "commit"], 1):
        ops = [{"f": "send", "topic": "txn", "partition": q, "value": f"p0-{i}-{j}", "offset": None}
               for j, q in enumerate([0, 1])]
        p._transaction(fake, i, ops, outcome)
    evs = [{"seq": n, "t": n * 0.01, **e} for n, e in enumerate(events)]
    r = check_transactions(evs, {"workload": TxnWorkloadConfig(topic="txn", partitions=4).to_metadata()})
    assert r["applicable"] and r["stats"]["committed"] == 2 and r["stats"]["aborted"] == 1


def test_coordinator_partition_follows_java_hash():
    assert java_string_hash("abc") == 96354 and java_string_hash("") == 0
    assert java_string_hash("polygenelubricants") == -2147483648
    assert txn_state_partition("polygenelubricants", 3) == 0
    assert 0 <= txn_state_partition("kc-tx-txn", 50) < 50


def _txn_record(aborted_read: bool) -> tuple[list, dict]:
    h = Hist(partitions=2, workload={"kind": "txn", "topic": "t", "partitions": [0, 1],
                                     "isolation.level": "read_committed"})
    h.producer("p0")
    h.consumer("c0")
    h.txn("p0", [0, 1])
    bad = h.txn("p0", [0, 1], outcome="abort")
    h.txn("p0", [1, 0])
    h.read_visible("c0")
    if aborted_read:
        h.poll("c0", 0, bad.offsets[0], bad.values[0])
    h.drain()
    h.ev("phase", name="run.end")
    return h.events, {**h.metadata, "checks": ["transactions"], "record": {"end_marker": True}}


def test_decide_runs_the_transaction_checker_for_a_txn_workload():
    events, meta = _txn_record(False)
    v = decide(events, meta)
    assert "transactions" in v.checks and v.checks["transactions"]["applicable"]
    assert v.checks["transactions"]["verdict"] == "PASS"
    events, meta = _txn_record(True)
    v = decide(events, meta)
    assert v.verdict == "FAIL" and "transactions" in v.reason and "G1a" in v.reason


def test_error_before_the_commit_is_a_failure_and_reinitialises():
    events: list = []
    p = _producer(events)
    fake = FakeProducer()

    def begin():
        raise KafkaException(KafkaError(KafkaError._STATE, "not in a state to begin"))
    fake.begin_transaction = begin
    ops = [{"f": "send", "topic": "txn", "partition": 1, "value": "p0-1-0", "offset": None}]
    with pytest.raises(Exception, match="re-initialising"):
        p._transaction(fake, 1, ops, "commit")
    done = [e for e in events if e["type"] == "txn"][-1]
    assert done["phase"] == "fail" and done["stage"] == "begin" and done["error"] == "_STATE"


def test_first_producer_does_not_reinitialise_once_the_zombie_started():
    from harness.workload.txn_producer import _Fatal
    events: list = []
    zombie = threading.Event()
    config = TxnWorkloadConfig(topic="txn", partitions=4, rate=0)
    emit = lambda type_, **f: events.append({"type": type_, **f})  # noqa: E731
    p = TxnProducerProcess("p0", "localhost:9092", config, emit, threading.Event(), zombie=zombie)
    inits = []
    p._new_producer = lambda first: inits.append(first) or FakeProducer()

    def fail(*a):
        zombie.set()                      # the second producer began initialising meanwhile
        raise _Fatal("UNKNOWN; abort: INVALID_TXN_STATE")
    p._transaction = fail
    p._run()
    assert inits == [True]                # no re-initialisation racing the zombie's
    assert [e["state"] for e in events if e["type"] == "client.life"] == ["fatal"]
