"""The transaction-epoch checker (harness/checkers/txn_epochs.py) on fabricated logs: TV2 bumps the producer
epoch at every transaction's end, TV1 keeps it; an epoch repeated across two transactions under TV2, a
write accepted after its producer's marker, a lower epoch, the exactly-once copy. Pure: no broker."""

from __future__ import annotations

import struct

import pytest

from harness.checkers.txn_epochs import check_txn_epochs, transactions_of
from harness.checkers.verdict import decide
from harness.protocol.fetch import parse_batches

TOPIC = "jtx"
PID = 1000


class Log:
    """A fabricated output log of one partition: data batches and markers of producer ids, in offset order."""

    def __init__(self, partition: int = 0):
        self.partition, self.offset, self.events = partition, 0, []

    def data(self, epoch: int, values: list[str], pid: int = PID) -> "Log":
        self.events.append({"type": "txn.batch", "topic": TOPIC, "partition": self.partition,
                            "base_offset": self.offset, "last_offset": self.offset + len(values) - 1,
                            "producer_id": pid, "producer_epoch": epoch, "transactional": True, "control": False,
                            "marker": None, "values": list(values)})
        self.offset += len(values)
        return self

    def marker(self, kind: str, epoch: int, pid: int = PID) -> "Log":
        self.events.append({"type": "txn.batch", "topic": TOPIC, "partition": self.partition,
                            "base_offset": self.offset, "last_offset": self.offset, "producer_id": pid,
                            "producer_epoch": epoch, "transactional": True, "control": True, "marker": kind,
                            "coordinator_epoch": 0, "values": None})
        self.offset += 1
        return self


def meta(tv: int | None, **wl) -> dict:
    m = {"workload": {"kind": "java-txn", "topic": TOPIC, "partitions": [0], **wl}}
    if tv is not None:
        m["features"] = {"metadata.version": 27, **({"transaction.version": tv} if tv else {})}
    return m


def history(log: Log, inputs: list[str], final_ok: bool = True) -> list[dict]:
    evs = [{"type": "jtxn.input", "process": "jin", "topic": f"{TOPIC}-in", "partition": log.partition,
            "values": inputs, "unsure": []}]
    evs += log.events
    evs.append({"type": "jtxn.client", "process": "j0", "partition": log.partition, "state": "exited",
                "exit_code": 0 if final_ok else 1, "final": True})
    evs.append({"type": "txn.read", "topic": TOPIC, "partition": log.partition, "high_watermark": log.offset,
                "last_stable_offset": log.offset, "lso_below_high": False, "error": None})
    return [{**e, "seq": i, "t": float(i), "wall": 1e9 + i} for i, e in enumerate(evs)]


def tv2_log() -> Log:
    # each transaction's data at the epoch the previous marker ended with; each marker one above its data
    return (Log().data(0, ["a", "b"]).marker("commit", 1)
            .data(1, ["c"]).data(1, ["d"]).marker("abort", 2)
            .data(2, ["c", "d"]).marker("commit", 3))


def tv1_log() -> Log:
    return (Log().data(0, ["a", "b"]).marker("commit", 0)
            .data(0, ["c"]).marker("abort", 0)
            .data(0, ["c", "d"]).marker("commit", 0))


def verdicts(res: dict) -> dict:
    return {k: v["verdict"] for k, v in res["checks"].items()}


def test_tv2_history_bumping_at_every_end_passes():
    res = check_txn_epochs(history(tv2_log(), ["a", "b", "c", "d"]), meta(2))
    assert res["verdict"] == "PASS", res["reason"]
    assert res["stats"]["committed_txns"] == 2 and res["stats"]["aborted_txns"] == 1
    assert res["stats"]["epoch_sequences"][f"{TOPIC}-0/{PID}"] == [[[0], "commit", 1], [[1], "abort", 2],
                                                                   [[2], "commit", 3]]


def test_tv1_history_with_a_constant_epoch_passes_under_tv1():
    res = check_txn_epochs(history(tv1_log(), ["a", "b", "c", "d"]), meta(1))
    assert res["verdict"] == "PASS", res["reason"]
    assert res["stats"]["distinct_data_epochs"] == 1
    assert res["stats"]["per_producer"][f"{TOPIC}-0/{PID}"] == {"transactions": 3, "data_epochs": 1, "first_epoch": 0,
                                                                "last_epoch": 0}


def test_epoch_repeated_across_two_transactions_under_tv2_is_caught():
    """The Must show: the same log, but the run's feature levels say transaction.version 2."""
    res = check_txn_epochs(history(tv1_log(), ["a", "b", "c", "d"]), meta(2))
    assert res["verdict"] == "FAIL"
    v = verdicts(res)
    assert v["epoch-reuse"] == "FAIL" and v["marker-epoch"] == "FAIL"
    ex = res["checks"]["epoch-reuse"]["examples"][0]
    assert ex["epoch"] == 0 and ex["transaction"] == 1 and ex["earlier_transaction"] == 0
    assert v["zombie-write"] == "PASS"      # equal epochs after a marker are no zombie: the bump is missing


def test_epoch_reuse_with_bumped_markers_is_caught_too():
    """Markers above their data, but the next transaction kept the old epoch (the client ignored the bump):
    the second transaction's data is below the first one's marker, and shares its epoch."""
    log = Log().data(4, ["a"]).marker("commit", 5).data(4, ["b"]).marker("commit", 5)
    res = check_txn_epochs(history(log, ["a", "b"]), meta(2))
    v = verdicts(res)
    assert v["epoch-reuse"] == "FAIL" and v["zombie-write"] == "FAIL"


def test_zombie_write_after_the_marker_is_caught_tv1():
    """A fenced producer (epoch 0) whose write lands after the coordinator's abort marker at epoch 1."""
    log = (Log().data(0, ["a"]).marker("commit", 0).data(0, ["b"]).marker("abort", 1)
           .data(0, ["zombie"]).data(2, ["b"]).marker("commit", 2))
    res = check_txn_epochs(history(log, ["a", "b"]), meta(1))
    assert res["verdict"] == "FAIL"
    ex = res["checks"]["zombie-write"]["examples"][0]
    assert ex["producer_epoch"] == 0 and ex["after_marker"]["producer_epoch"] == 1
    assert ex["after_marker"]["marker"] == "abort"


def test_late_write_of_an_ended_transaction_is_caught_tv2():
    """TV2's point: a produce of the transaction that ended (epoch 5) arriving after its marker (epoch 6)."""
    log = Log().data(5, ["a"]).marker("commit", 6).data(5, ["late"]).data(6, ["b"]).marker("commit", 7)
    res = check_txn_epochs(history(log, ["a", "b", "late"]), meta(2))
    assert verdicts(res)["zombie-write"] == "FAIL"


def test_lower_epoch_without_a_marker_between_is_epoch_regress():
    log = Log().data(3, ["a"]).data(2, ["b"]).marker("commit", 4)
    res = check_txn_epochs(history(log, ["a", "b"]), meta(2))
    v = verdicts(res)
    assert v["epoch-regress"] == "FAIL" and v["zombie-write"] == "PASS"


def test_commit_marker_with_a_bumped_epoch_under_tv1_is_caught():
    log = Log().data(0, ["a"]).marker("commit", 1).data(1, ["b"]).marker("commit", 2)
    res = check_txn_epochs(history(log, ["a", "b"]), meta(1))
    assert verdicts(res)["marker-epoch"] == "FAIL"


def test_coordinator_abort_may_bump_twice_under_tv2():
    """An abort the coordinator ends after fencing (InitProducerId of a new instance) is above its data by
    more than one: allowed for an ABORT, not for a COMMIT."""
    log = Log().data(3, ["a"]).marker("abort", 5).data(6, ["a"]).marker("commit", 7)
    assert check_txn_epochs(history(log, ["a"]), meta(2))["verdict"] == "PASS"
    log = Log().data(3, ["a"]).marker("commit", 5)
    assert verdicts(check_txn_epochs(history(log, ["a"]), meta(2)))["marker-epoch"] == "FAIL"


def test_without_feature_levels_the_version_checks_are_unknown():
    res = check_txn_epochs(history(tv2_log(), ["a", "b", "c", "d"]), meta(None))
    assert res["verdict"] == "UNKNOWN"
    v = verdicts(res)
    assert v["epoch-reuse"] == v["marker-epoch"] == "UNKNOWN" and v["zombie-write"] == "PASS"


def test_absent_transaction_version_is_level_0():
    res = check_txn_epochs(history(tv1_log(), ["a", "b", "c", "d"]), meta(0))
    assert res["verdict"] == "PASS" and res["stats"]["transaction_version"] == 0


def test_exactly_once_duplicate_lost_and_unexpected():
    log = Log().data(0, ["a", "b"]).marker("commit", 1).data(1, ["b", "x"]).marker("commit", 2)
    res = check_txn_epochs(history(log, ["a", "b", "c"]), meta(2))
    v = verdicts(res)
    assert v["eos-duplicate"] == "FAIL" and res["checks"]["eos-duplicate"]["examples"][0]["value"] == "b"
    assert v["unexpected-value"] == "FAIL" and res["checks"]["unexpected-value"]["examples"][0]["value"] == "x"
    assert v["eos-lost"] == "FAIL" and res["checks"]["eos-lost"]["examples"][0]["value"] == "c"


def test_aborted_data_is_not_output():
    log = Log().data(0, ["a"]).marker("abort", 1)
    res = check_txn_epochs(history(log, ["a"]), meta(2))
    assert verdicts(res)["eos-lost"] == "FAIL"
    assert verdicts(res)["eos-duplicate"] == "PASS"


def test_missing_input_without_a_completed_final_copier_is_unknown():
    log = Log().data(0, ["a"]).marker("commit", 1)
    res = check_txn_epochs(history(log, ["a", "b"], final_ok=False), meta(2))
    assert res["verdict"] == "UNKNOWN" and verdicts(res)["eos-lost"] == "UNKNOWN"


def test_open_transaction_is_unknown():
    log = Log().data(0, ["a"]).marker("commit", 1).data(1, ["b"])
    res = check_txn_epochs(history(log, ["a"]), meta(2))
    assert res["verdict"] == "UNKNOWN" and verdicts(res)["open-transaction"] == "UNKNOWN"


def test_coverage_needs_committed_transactions():
    res = check_txn_epochs(history(tv2_log(), ["a", "b", "c", "d"]), meta(2, min_committed_txns=5))
    assert res["verdict"] == "UNKNOWN" and verdicts(res)["coverage"] == "UNKNOWN"


def test_two_producer_ids_are_judged_apart():
    log = Log().data(0, ["a"], pid=1).data(7, ["b"], pid=2).marker("commit", 1, pid=1).marker("commit", 8, pid=2)
    txns = transactions_of(log.events)
    assert len(txns) == 2
    assert check_txn_epochs(history(log, ["a", "b"]), meta(2))["verdict"] == "PASS"


def test_not_applicable_without_batches_of_another_kind():
    res = check_txn_epochs([], {"workload": {"kind": "txn"}})
    assert res["applicable"] is False


def test_malformed_batch_raises():
    with pytest.raises(ValueError, match="seq 3"):
        check_txn_epochs([{"type": "txn.batch", "seq": 3, "topic": TOPIC}], meta(2))


def test_the_verdict_runs_it_and_fails_the_run():
    evs = history(tv1_log(), ["a", "b", "c", "d"])
    evs.append({"type": "phase", "name": "run.end", "seq": len(evs), "t": 99.0, "wall": 1e9 + 99})
    m = {**meta(2), "checks": ["txn-epochs"], "record": {"end_marker": True}}
    v = decide(evs, m)
    assert v.verdict == "FAIL" and "txn-epochs" in v.reason and "epoch-reuse" in v.reason
    assert decide(evs, {**m, "features": {"transaction.version": 1}}).verdict == "PASS"


# -- the batch decoder (harness/protocol/fetch.py) on bytes built here ------------------------------------
def _varint(n: int) -> bytes:
    z, out = (n << 1) ^ (n >> 63), b""
    while True:
        b = z & 0x7F
        z >>= 7
        if z:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def _record(key: bytes | None, value: bytes | None, delta: int) -> bytes:
    def field(b):
        return _varint(-1) if b is None else _varint(len(b)) + b
    body = b"\x00" + _varint(0) + _varint(delta) + field(key) + field(value) + _varint(0)
    return _varint(len(body)) + body


def _batch(base: int, pid: int, epoch: int, records: list[bytes], control: bool) -> bytes:
    attrs = 0x10 | (0x20 if control else 0)
    recs = b"".join(records)
    after_len = struct.pack(">ibIhiqqqhii", 0, 2, 0, attrs, len(records) - 1, 0, 0, pid, epoch, 0, len(records)) + recs
    return struct.pack(">qi", base, len(after_len)) + after_len


def test_parse_batches_reads_headers_markers_and_values():
    data = _batch(0, 42, 3, [_record(b"k0", b"v0", 0), _record(None, b"v1", 1)], False)
    marker = _batch(2, 42, 4, [_record(struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 7), 0)], True)
    batches, torn = parse_batches(data + marker + marker[:30])
    assert torn is True and len(batches) == 2
    d, m = batches
    assert (d.base_offset, d.last_offset, d.producer_id, d.producer_epoch) == (0, 1, 42, 3)
    assert d.transactional and not d.control and d.values == ["v0", "v1"] and d.keys == ["k0", None]
    assert m.control and m.marker == "commit" and m.coordinator_epoch == 7 and m.producer_epoch == 4


def test_a_client_containers_exit_is_no_environment_failure():
    """The copier containers (role client) start and end as the workload decides; a broker's stop outside
    every fault window still is an environment failure."""
    evs = history(tv2_log(), ["a", "b", "c", "d"])
    ev = {"type": "docker.event", "container": "kc-x-jtx0-1", "role": "client", "node_id": 0, "action": "die",
          "wall_docker": 1e9 + 5, "exit_code": 0}
    evs += [{**ev, "seq": len(evs), "t": 5.0, "wall": 1e9 + 5},
            {"type": "phase", "name": "run.end", "seq": len(evs) + 1, "t": 99.0, "wall": 1e9 + 99}]
    m = {**meta(2), "checks": ["txn-epochs"], "record": {"end_marker": True}}
    assert decide(evs, m).verdict == "PASS"
    evs[-2] = {**evs[-2], "role": "broker", "container": "kc-x-b1", "node_id": 1}
    v = decide(evs, m)
    assert v.verdict == "UNKNOWN" and v.cause == "container-stopped"


def test_missing_input_when_the_read_back_failed_is_unknown_not_fail():
    # the harness's Fetch of the output failed: what it did not read is not the broker's loss
    log = Log().data(0, ["a"]).marker("commit", 1)
    evs = history(log, ["a", "b"])
    next(e for e in evs if e["type"] == "txn.read").update(error="timed out after 60 s")
    res = check_txn_epochs(evs, meta(2))
    assert res["verdict"] == "UNKNOWN" and verdicts(res)["eos-lost"] == "UNKNOWN"
    assert "timed out" in res["checks"]["eos-lost"]["reason"]
    assert verdicts(check_txn_epochs(history(log, ["a", "b"]), meta(2)))["eos-lost"] == "FAIL"   # read whole
