"""Read-write transactions, N producers and the client ``crash`` fault without a broker: what one
consume-transform-produce transaction records (docs/transactions.md) against a fake producer and
consumer, that the transaction checker finds its ``wr`` edges, the two deliberate misconfigurations,
the crash / replacement of a slot's client, and the scenario-file and fault-mix side of the knobs."""

from __future__ import annotations

import threading
import time

import pytest

from harness.checkers.txn import check_transactions
from harness.nemesis.catalog import CATALOG
from harness.nemesis.fault_base import FaultError
from harness.nemesis.faults import FAULT_CLASSES
from harness.scenario import schema
from harness.scenario.schedule import Schedule, for_roles, generate_schedule, parse_mix
from harness.workload import TxnWorkload, TxnWorkloadConfig
from harness.workload.txn_producer import CRASHED, _Crashed
from harness.workload.txn_rw import ReadWriteTxnProcess


class _Msg:
    def __init__(self, topic, partition, offset, value):
        self.t, self.p, self.o, self.v = topic, partition, offset, value

    def error(self):
        return None

    def topic(self):
        return self.t

    def partition(self):
        return self.p

    def offset(self):
        return self.o

    def value(self):
        return self.v.encode()


class Log:
    """The partitions' logs shared by the fakes: committed records a read_committed consumer sees."""

    def __init__(self):
        self.parts: dict[int, list] = {}

    def append(self, p, value):
        lst = self.parts.setdefault(p, [])
        lst.append(value)
        return len(lst) - 1


class FakeProducer:
    def __init__(self, log: Log):
        self.log, self.pending, self.calls, self.sent_offsets = log, [], [], []

    def begin_transaction(self):
        self.calls.append("begin")

    def produce(self, topic, value=None, key=None, partition=None, on_delivery=None):
        self.pending.append((partition, value.decode(), on_delivery))

    def send_offsets_to_transaction(self, offsets, meta, timeout=None):
        self.calls.append("send_offsets")
        self.sent_offsets.append(([(tp.partition, tp.offset) for tp in offsets], meta))

    def commit_transaction(self, timeout=None):
        self.calls.append("commit")
        for p, v, cb in self.pending:
            cb(None, _Msg("t", p, self.log.append(p, v), v))
        self.pending = []

    def flush(self, timeout=None):
        return 0

    def abort_transaction(self, timeout=None):
        self.calls.append("abort")
        self.pending = []

    def poll(self, timeout=None):
        return 0


class FakeConsumer:
    def __init__(self, log: Log, parts):
        self.log, self.pos, self.seeks, self.commits = log, {p: 0 for p in parts}, [], []

    def consume(self, num_messages=1, timeout=None):
        out = []
        for p in sorted(self.pos):
            lst = self.log.parts.get(p, [])
            while self.pos[p] < len(lst) and len(out) < num_messages:
                out.append(_Msg("t", p, self.pos[p], lst[self.pos[p]]))
                self.pos[p] += 1
        return out

    def consumer_group_metadata(self):
        return "META"

    def seek(self, tp):
        self.seeks.append((tp.partition, tp.offset))
        self.pos[tp.partition] = tp.offset

    def commit(self, offsets=None, asynchronous=True):
        self.commits.append([(tp.partition, tp.offset) for tp in offsets])


def _proc(events, name="p0", slot=0, **cfg):
    config = TxnWorkloadConfig(topic="t", partitions=4, producers=2, max_txn_length=4, **cfg)
    emit = lambda type_, **f: events.append({"type": type_, "t": time.monotonic(), **f})  # noqa: E731
    return ReadWriteTxnProcess(name, "localhost:9092", config, emit, threading.Event(), slot=slot)


def _history(outside=False):
    """p1 (slot 1) commits sends to partition 0; p0 (slot 0, owns partitions 0 and 2) reads them in a
    read-write transaction and sends derived records."""
    log, events = Log(), []
    p1 = _proc(events, "p1", 1, offsets_outside_txn=outside)
    prod1 = FakeProducer(log)
    p1._rw_transaction(prod1, FakeConsumer(log, p1.owned), 1,
                       [{"f": "send", "topic": "t", "partition": 0, "value": "p1-1-0", "offset": None},
                        {"f": "send", "topic": "t", "partition": 0, "value": "p1-1-1", "offset": None}], "commit")
    p0 = _proc(events, offsets_outside_txn=outside)
    prod0, cons0 = FakeProducer(log), FakeConsumer(log, p0.owned)
    plan = [{"f": "poll"}, {"f": "send", "topic": "t", "partition": 0, "value": "p0-1-0", "offset": None}]
    p0._rw_transaction(prod0, cons0, 1, plan, "commit")
    return events, p0, prod0, cons0


def test_a_read_write_transaction_records_its_reads_and_commits_their_offsets_in_it():
    events, p0, prod0, cons0 = _history()
    assert p0.owned == [0, 2]
    inv, done = [e for e in events if e["type"] == "txn" and e["process"] == "p0"]
    assert inv["ops"][0] == {"f": "poll"}                              # a placeholder in the invoke
    assert [o["f"] for o in done["ops"]] == ["read", "read", "send"]   # the poll replaced by what it read
    assert [(o["value"], o["offset"]) for o in done["ops"][:2]] == [("p1-1-0", 0), ("p1-1-1", 1)]
    assert done["ops"][2]["offset"] == 2 and done["phase"] == "ok"
    assert prod0.calls == ["begin", "send_offsets", "commit"]          # offsets inside the transaction
    assert prod0.sent_offsets == [([(0, 2)], "META")]                  # the position after the last read
    assert done["offsets"] == [["t", 0, 2]] and done["group"] == "kc-txg-t-0"


def test_the_checker_draws_wr_edges_from_the_recorded_reads():
    events, *_ = _history()
    r = check_transactions(events, {"workload": TxnWorkloadConfig(topic="t", partitions=4).to_metadata()})
    assert r["stats"]["edges"]["wr"] == 1 and r["stats"]["txn_reads"] == 2
    assert r["checks"]["G1a"]["verdict"] == "PASS" and r["checks"]["eos-duplicate"]["verdict"] == "PASS"


def test_an_aborted_read_write_transaction_rewinds_its_consumer_and_commits_no_offsets():
    log, events = Log(), []
    log.append(0, "x-0")
    log.append(0, "x-1")
    p0 = _proc(events)
    prod, cons = FakeProducer(log), FakeConsumer(log, p0.owned)
    p0._rw_transaction(prod, cons, 1, [{"f": "poll"}], "abort")
    assert "send_offsets" not in prod.calls and cons.seeks == [(0, 0)]
    done = [e for e in events if e["type"] == "txn"][-1]
    assert done["outcome"] == "abort" and done["offsets"] == [] and len(done["ops"]) == 2


def test_offsets_outside_the_transaction_are_committed_by_the_consumer_misconfiguration():
    events, p0, prod0, cons0 = _history(outside=True)
    assert "send_offsets" not in prod0.calls
    p0._commit_outside(cons0, force=True)
    assert cons0.commits == [[(0, 2)]]


def test_a_crash_mid_transaction_records_fail_and_never_commits():
    log, events = Log(), []
    p0 = _proc(events)
    prod, cons = FakeProducer(log), FakeConsumer(log, p0.owned)
    p0.crash()
    with pytest.raises(_Crashed):
        p0._rw_transaction(prod, cons, 1, [{"f": "send", "topic": "t", "partition": 1, "value": "p0-1-0",
                                            "offset": None}], "commit")
    assert "commit" not in prod.calls and "abort" not in prod.calls
    done = [e for e in events if e["type"] == "txn"][-1]
    assert done["phase"] == "fail" and done["error"] == CRASHED


def test_transform_isolation_reaches_the_consumer_settings():
    p = _proc([], transform_isolation="read_uncommitted")
    assert p.consumer_settings["isolation.level"] == "read_uncommitted"
    assert _proc([]).consumer_settings["isolation.level"] == "read_committed"


def test_config_knobs():
    c = TxnWorkloadConfig(topic="t", partitions=16, producers=3, key_count=8, max_txn_length=4)
    assert c.partition_ids == list(range(8)) and c.read_write
    assert c.to_metadata()["transactional_ids"] == ["kc-tx-t", "kc-tx-t-1", "kc-tx-t-2"]
    assert c.slot_group(2) == "kc-txg-t-2"
    assert TxnWorkloadConfig(topic="t", subscribe=True, max_txn_length=2).slot_group(2) == "kc-txg-t"
    for bad in ({"producers": 0}, {"max_txn_length": 0}, {"poll_ratio": 2}, {"key_count": 0},
                {"transform_isolation": "x"}, {"max_txn_length": 2, "zombie_at_s": 3.0}):
        with pytest.raises(ValueError):
            TxnWorkloadConfig(topic="t", **bad)


def _idle_run(self):          # a producer thread without Kafka: alive until stopped or crashed
    while not self._stopped():
        time.sleep(0.01)


def test_crash_client_replaces_a_slot_with_a_new_process_of_the_same_transactional_id(monkeypatch):
    from harness.workload.txn_producer import TxnProducerProcess
    monkeypatch.setattr(TxnProducerProcess, "_run", _idle_run)
    events: list = []
    wl = TxnWorkload("localhost:9092", TxnWorkloadConfig(topic="t", partitions=4, producers=3, consumers=0),
                     lambda type_, **f: events.append({"type": type_, **f}))
    assert [(p.name, p.tx_id) for p in wl.producers] == [("p0", "kc-tx-t"), ("p1", "kc-tx-t-1"),
                                                         ("p2", "kc-tx-t-2")]
    wl.start()
    try:
        out = wl.crash_client("p1")
        assert out == {"process": "p1", "replacement": "p4", "transactional_id": "kc-tx-t-1"}
        assert wl.crash_client("p4")["replacement"] == "p7"         # slot 1, generation 2: 1 + 3 * 2
        new = wl.producers[-1]
        assert new.tx_id == "kc-tx-t-1" and new.thread.is_alive()
        with pytest.raises(LookupError, match="no live"):
            wl.crash_client("p1")                                    # already crashed
        crash = [e for e in events if e["type"] == "txn.crash"]
        assert [(e["process"], e["replacement"], e["ended"]) for e in crash] == [("p1", "p4", True),
                                                                                  ("p4", "p7", True)]
    finally:
        assert wl.stop(timeout=5)


class _Ctx:
    rng = None


def test_crash_fault_asks_the_workload_and_refuses_workloads_without_transactional_clients():
    info = CATALOG["crash"]
    assert info.kind == "client" and info.instant
    fault = FAULT_CLASSES["crash"](_Ctx(), 1, "random-producer", [], {})
    fault.workload = object()
    with pytest.raises(FaultError, match="kind txn"):
        fault.apply()

    class WL:
        def crash_client(self, target, rng=None):
            return {"process": "p0", "replacement": "p5", "transactional_id": "x"}
    fault.workload = WL()
    fault.apply()
    assert fault.detail["replacement"] == "p5"


def test_a_random_mix_draws_client_crashes_with_broker_faults():
    mix = {"length": 120, "interval": [4, 8], "duration": [4, 8],
           "faults": {"kill": 1, "pause": 1, "partition": 1, "crash": 1}}
    assert parse_mix(mix).faults["crash"].targets == ("random-producer",)
    assert "crash" in for_roles(mix, ("broker", "controller")).faults
    s = generate_schedule(42, mix, roles=("broker", "zookeeper"))
    faults = {i.fault for i in s.items}
    assert {"crash", "kill", "pause", "partition"} <= faults
    assert Schedule.from_json(s.to_json(), 42).to_json() == s.to_json()      # replayable


def test_scenario_file_workload_takes_the_jepsen_knobs():
    w = schema.workload({"workload": {"kind": "txn", "producers": 5, "max_txn_length": 4, "key_count": 8,
                                      "subscribe": True, "final_reads": False, "consumers": 2, "rate": 5.0}},
                        [{"name": "q", "partitions": 8}])
    assert w["producers"] == 5 and w["max_txn_length"] == 4 and w["subscribe"] is True
    with pytest.raises(schema.SchemaError) as e:
        schema.workload({"workload": {"kind": "txn", "members": 3}}, [{"name": "q", "partitions": 8}])
    listed = str(e.value).split("allowed: ")[1].split(", ")
    for k in listed:                   # every key the message offers is one the kind accepts
        if k == "kind":
            continue
        v = {"int": 1, "float": 1.0, "bool": True, "str": "x", "dict": {}, "list": [0]}
        ftype = {f.name: str(f.type) for f in __import__("dataclasses").fields(TxnWorkloadConfig)}[k]
        val = next(v[t] for t in ("bool", "int", "float", "str", "dict", "list") if t in ftype)
        val = {"topic": "q", "transform_isolation": "read_committed", "partitions": 4}.get(k, val)
        schema.workload({"workload": {"kind": "txn", k: val}}, [{"name": "q", "partitions": 8}])


def test_the_example_scenario_file_loads():
    from pathlib import Path
    from harness.scenario.file import load
    path = Path(__file__).resolve().parents[2] / "docs/examples/scenarios/jepsen_kafka_txn_queue.toml"
    sc = load(path)
    assert sc.workload["producers"] == 5 and sc.workload["max_txn_length"] == 4
    assert sc.workload["key_count"] == 8


def test_a_read_write_client_fenced_by_the_coordinator_starts_afresh():
    """No other live process of its transactional.id exists: it re-initialises instead of ending."""
    from harness.workload.txn_producer import _Fatal
    events: list = []
    p = _proc(events, rate=0, max_txns=3)
    log = Log()
    inits = []
    p._new_producer = lambda first: inits.append(first) or FakeProducer(log)
    p._new_consumer = lambda: FakeConsumer(log, p.owned)
    calls = []

    def txn(producer, consumer, op_id, plan, outcome):
        calls.append(op_id)
        if op_id == 1:
            p.fenced.set()
            raise _Fatal("_FENCED")
    p._rw_transaction = txn
    p._run()
    assert inits == [True, False] and calls == [1, 2, 3]
    assert [e["state"] for e in events if e["type"] == "client.life"] == ["fatal"]


def _coverage_events(with_crash_record: bool) -> list[dict]:
    evs = [{"type": "client.config", "t": 0.5, "process": "p0", "role": "producer", "config": {}},
           {"type": "client.life", "t": 1.0, "process": "p0", "role": "producer", "state": "started"},
           {"type": "fault.start", "t": 5.0, "fault_id": 1, "fault": "kill", "target": "random-broker",
            "nodes": ["b1"], "broker_ids": [1], "params": {}},
           {"type": "fault.start", "t": 6.0, "fault_id": 2, "fault": "crash", "target": "random-producer",
            "nodes": [], "broker_ids": [], "params": {}},
           {"type": "client.life", "t": 6.1, "process": "p0", "role": "producer", "state": "died",
            "error": CRASHED}]
    if with_crash_record:
        evs.append({"type": "txn.crash", "t": 6.2, "process": "p0", "replacement": "p5",
                    "transactional_id": "kc-tx-t", "ended": True})
    evs += [{"type": "fault.end", "t": 6.2, "fault_id": 2, "fault": "crash", "nodes": [], "ok": True},
            {"type": "client.config", "t": 6.3, "process": "p5", "role": "producer", "config": {}},
            {"type": "client.life", "t": 10.0, "process": "p5", "role": "producer", "state": "started"},
            {"type": "txn", "t": 11.0, "process": "p5", "op_id": 1, "phase": "ok", "f": "txn", "outcome": "commit",
             "ops": []},
            {"type": "fault.end", "t": 12.0, "fault_id": 1, "fault": "kill", "nodes": ["b1"], "ok": True},
            {"type": "phase", "t": 20.0, "name": "workload.stopping"}]
    return evs


def test_coverage_judges_a_crashed_client_and_its_replacement_as_one_slot():
    from harness.checkers.coverage import check_coverage
    meta = {"workload": TxnWorkloadConfig(topic="t", partitions=2).to_metadata()}
    needs = {"acked_after_heal": 0}
    assert check_coverage(_coverage_events(True), meta, needs)["verdict"] == "PASS"   # p5 initialising from 6.2 s
    short = check_coverage(_coverage_events(False), meta, needs)
    assert short["verdict"] == "UNKNOWN" and "p0" in short["reason"] and "p5" in short["reason"], short["reason"]
