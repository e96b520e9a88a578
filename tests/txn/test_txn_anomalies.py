"""Every transactional anomaly kind: a fabricated history WITH it fails the named check and shows
the operations; the same history without it passes."""

from __future__ import annotations

import pytest
from txn_history import TOPIC, Hist

from harness.checkers.txn import ALLOWED, FAIL, PASS, UNKNOWN, check_transactions


def base(partitions: int = 2, **kw) -> Hist:
    h = Hist(partitions=partitions, **kw)
    h.producer("p0")
    h.producer("p1")
    h.consumer("c0")
    return h


def judge(h: Hist, **options) -> dict:
    return check_transactions(h.events, h.metadata, options or None)


def failed(r: dict) -> set:
    return {n for n, c in r["checks"].items() if c["verdict"] == FAIL}


def assert_pass(r: dict) -> None:
    assert r["verdict"] == PASS, (r["reason"], {n: c for n, c in r["checks"].items() if c["verdict"] != PASS})


def clean(h: Hist) -> list:
    """A few committed and aborted transactions over both partitions, read and drained."""
    txs = [h.txn("p0", [0, 1]), h.txn("p1", [1, 0, 1]), h.txn("p0", [0, 1], outcome="abort"),
           h.txn("p1", [0], phase="fail"), h.txn("p0", [1, 1, 0])]
    return txs


def test_clean_history_passes_with_stats():
    h = base()
    clean(h)
    h.read_visible("c0")
    h.drain()
    r = judge(h)
    assert_pass(r)
    assert r["applicable"] is True
    assert r["stats"]["transactions"] == 5 and r["stats"]["committed"] == 3 and r["stats"]["aborted"] == 2
    assert r["stats"]["edges"]["ww"] > 0 and r["stats"]["edges"]["process"] == 1


def test_no_transaction_events_is_not_applicable():
    r = check_transactions([{"seq": 0, "t": 0.0, "type": "phase", "name": "workload.start"}], {})
    assert r["applicable"] is False and r["verdict"] == PASS and r["checks"] == {}


def test_aborted_read_G1a():
    h = base()
    clean(h)
    aborted = h.txns[2]
    h.read_visible("c0")
    h.drain()
    assert_pass(judge(h))
    h.poll("c9", aborted.parts[0], aborted.offsets[0])  # the broker served an aborted record
    r = judge(h)
    assert failed(r) == {"G1a"}
    ex = r["checks"]["G1a"]["examples"][0]
    assert ex["value"] == aborted.values[0] and ex["reader"] == "c9"
    assert ex["writer"] == {"process": "p0", "op_id": aborted.op_id, "status": "aborted", "transactional_id": "tx-p0"}


def test_aborted_read_by_read_uncommitted_reader_is_allowed_unless_read_committed_was_expected():
    def build(workload):
        h = Hist(workload=workload)
        h.producer("p0")
        h.consumer("c0", isolation="read_uncommitted")
        tx = h.txn("p0", [0, 1], outcome="abort")
        h.txn("p0", [0])
        for p in range(2):
            for off, (value, _) in enumerate(h.logs[p]):
                if value is not None:
                    h.poll("c0", p, off)
        h.drain()
        return h, tx

    h, tx = build({})
    r = judge(h)
    assert r["verdict"] == PASS and r["checks"]["G1a"]["verdict"] == ALLOWED
    assert r["checks"]["G1a"]["examples"][0]["allowed_by"] == "isolation.level=read_uncommitted"
    h, tx = build({"isolation.level": "read_committed"})  # the negative control: told read_committed
    r = judge(h)
    assert failed(r) == {"G1a"} and r["checks"]["G1a"]["count"] == 2


def test_aborted_read_inside_a_transaction():
    h = base()
    ab = h.txn("p0", [0], outcome="abort")
    h.txn("p1", [1], reads=[(0, ab.offsets[0], ab.values[0])])
    h.read_visible("c0")
    h.drain()
    r = judge(h)
    assert "G1a" in failed(r)
    assert r["checks"]["G1a"]["examples"][0]["reader_txn"]["process"] == "p1"


def test_lost_write():
    h = base()
    txs = clean(h)
    lost = txs[1]
    h.read_visible("c0", skip=set(lost.values))
    h.drain(skip=set(lost.values))
    r = judge(h)
    assert "lost-write" in failed(r)
    ex = r["checks"]["lost-write"]["examples"][0]
    assert ex["writer"]["op_id"] == lost.op_id and ex["missing_count"] == 3 and ex["seen"] == 0
    assert {m["value"] for m in ex["missing"]} == set(lost.values)
    assert "torn-transaction" not in failed(r)


def test_lost_write_is_allowed_with_unclean_leader_election():
    h = base(topic_config={"unclean.leader.election.enable": "true"})
    txs = clean(h)
    h.read_visible("c0", skip=set(txs[0].values))
    h.drain(skip=set(txs[0].values))
    r = judge(h)
    assert r["checks"]["lost-write"]["verdict"] == ALLOWED
    assert r["verdict"] == PASS


def test_torn_transaction():
    h = base()
    txs = clean(h)
    gone = txs[0].values[1]  # one write of a committed transaction vanishes for everybody
    h.read_visible("c0", skip={gone})
    h.drain(skip={gone})
    r = judge(h)
    assert "torn-transaction" in failed(r) and "lost-write" not in failed(r)
    ex = r["checks"]["torn-transaction"]["examples"][0]
    assert ex["seen"] == 1 and ex["missing"][0]["value"] == gone


def test_torn_transaction_of_unsure_outcome():
    h = base()
    tx = h.begin("p0", [0, 1])
    h.complete(tx, phase="info", error="commit timed out")
    tx.status = "committed"  # it did commit after all: both writes became visible ...
    h.read_visible("c0", skip={tx.values[1]})  # ... but one of them was never served
    h.txn("p1", [0, 1])
    h.read_visible("c0")
    h.drain(skip={tx.values[1]})
    r = judge(h)
    assert "torn-transaction" in failed(r)
    assert r["checks"]["torn-transaction"]["examples"][0]["writer"]["status"] == "unsure"


def test_intermediate_read_and_poll_skip():
    h = base()
    txs = clean(h)
    t0 = txs[0]
    h.read_visible("c0", skip={t0.values[1]})  # c0 sees t0's write in partition 0, not the one in 1
    h.drain()
    r = judge(h)
    assert failed(r) == {"intermediate-read"}
    ex = r["checks"]["intermediate-read"]["examples"][0]
    assert ex["reader"] == "c0" and ex["value"] == t0.values[1] and ex["writer"]["op_id"] == t0.op_id
    h = base()
    txs = clean(h)
    t1 = txs[1]
    h.read_visible("c0", skip=set(t1.values))  # c0 skips every write of t1: a skip, not a torn view
    h.drain()
    r = judge(h)
    assert failed(r) == {"poll-skip"}
    assert r["checks"]["poll-skip"]["count"] == 3


def test_skip_over_aborted_records_and_markers_is_not_a_skip():
    h = base()
    h.txn("p0", [0, 0], outcome="abort")
    h.txn("p1", [0], phase="fail")
    h.txn("p0", [0, 1])
    h.read_visible("c0")
    h.drain()
    r = judge(h)
    assert_pass(r)
    assert r["checks"]["poll-skip"]["count"] == 0


def test_new_assignment_restarts_a_readers_chain():
    h = base()
    txs = clean(h)
    h.read_visible("c0", skip=set(txs[0].values) | set(txs[1].values))
    h.drain()
    assert "poll-skip" in failed(judge(h)) or "intermediate-read" in failed(judge(h))
    h = base()
    txs = clean(h)
    # c0 reads the first records, is reassigned, and resumes further on: not a skip of its own
    p0 = h.visible(0)
    h.poll("c0", 0, p0[0][0])
    h.ev("group.assign", process="c0", group="g", generation=2, member_id="m", partitions=[[TOPIC, 0]])
    h.poll("c0", 0, p0[-1][0])
    h.drain()
    assert_pass(judge(h))


def test_nonmonotonic_poll():
    h = base()
    clean(h)
    h.read_visible("c0")
    vis = h.visible(1)
    h.poll("c0", 1, vis[0][0])  # c0 goes back to the start of partition 1
    h.drain()
    r = judge(h)
    assert failed(r) == {"nonmonotonic-poll"}
    ex = r["checks"]["nonmonotonic-poll"]["examples"][0]
    assert ex["offset"] == vis[0][0] and ex["previous_offset"] == vis[-1][0]


def test_duplicate_and_inconsistent_offsets():
    h = base()
    clean(h)
    h.read_visible("c0")
    h.drain()
    value = h.visible(0)[0][1]
    h.poll("c9", 0, len(h.logs[0]) + 5, value)  # the same value again further on
    r = judge(h)
    assert failed(r) == {"duplicate"}
    assert len(r["checks"]["duplicate"]["examples"][0]["positions"]) == 2
    h = base()
    clean(h)
    h.read_visible("c0")
    h.drain()
    off, _ = h.visible(1)[0]
    h.poll("c9", 1, off, "p1-999-0")  # another value at a known offset (also one nobody wrote)
    r = judge(h)
    assert failed(r) == {"inconsistent-offsets", "unexpected-value"}
    assert r["checks"]["inconsistent-offsets"]["examples"][0]["values"][1] == "p1-999-0"


def test_internal_nonmonotonic_send():
    h = base()
    tx = h.begin("p0", [0, 0])
    h.complete(tx)
    h.read_visible("c0")
    h.drain()
    assert_pass(judge(h))
    h = base()
    tx = h.begin("p0", [0, 0])
    h.complete(tx, offsets=[1, 0])  # the second send got the lower offset
    tx.values.reverse()  # the log holds them the other way round
    h.logs[0][0], h.logs[0][1] = (tx.values[0], tx), (tx.values[1], tx)
    r = judge(h)
    assert "int-nonmonotonic-send" in failed(r)


def test_eos_duplicate():
    h = base()
    src = h.txn("p0", [0])
    inp = [(0, src.offsets[0], src.values[0])]
    h.txn("p1", [1], reads=inp)
    h.read_visible("c0")
    h.drain()
    assert_pass(judge(h))
    h.txn("p1", [1], reads=inp)  # the same input record processed and committed again
    h.read_visible("c0")
    h.drain()
    r = judge(h)
    assert failed(r) == {"eos-duplicate"}
    ex = r["checks"]["eos-duplicate"]["examples"][0]
    assert ex["input"]["value"] == src.values[0] and ex["first"]["op_id"] != ex["again"]["op_id"]


def zombie_history(zombie_commits: bool) -> tuple[Hist, object]:
    h = Hist()
    h.producer("p0", tid="X")
    h.consumer("c0")
    h.txn("p0", [0, 1])
    h.producer("p0b", tid="X")  # a new instance initialises the same transactional.id: p0 is fenced
    h.ev("txn.fenced", process="p0", transactional_id="X", error="PRODUCER_FENCED")
    z = h.begin("p0", [0, 1])
    if zombie_commits:
        h.complete(z)
    else:
        h.complete(z, phase="fail", error="PRODUCER_FENCED")
    h.txn("p0b", [0, 1])
    h.read_visible("c0")
    h.drain()
    return h, z


def test_zombie_writes_must_not_become_visible():
    h, z = zombie_history(zombie_commits=False)
    r = judge(h)
    assert_pass(r)
    assert r["checks"]["zombie"]["fenced_events"] == 1
    h, z = zombie_history(zombie_commits=True)
    r = judge(h)
    assert failed(r) == {"zombie"}
    ex = r["checks"]["zombie"]["examples"][0]
    assert ex["zombie"]["process"] == "p0" and ex["fenced_by"] == "p0b" and ex["committed"]
    assert sorted(ex["visible_values"]) == sorted(z.values)


def test_G1c_write_read_cycle():
    h = base()
    a = h.begin("p0", [0])
    b = h.begin("p1", [1])
    h.write(a)
    h.write(b)
    a.reads = [(1, b.offsets[0], b.values[0])]  # a read b's write, and b read a's: impossible
    b.reads = [(0, a.offsets[0], a.values[0])]
    h.complete(a)
    h.complete(b)
    h.read_visible("c0")
    h.drain()
    r = judge(h)
    assert failed(r) == {"G1c"}
    ex = r["checks"]["G1c"]["examples"][0]
    assert ex["anomaly"] == "G1c" and ex["length"] == 2
    assert {s["txn"]["op_id"] for s in ex["steps"]} == {a.op_id, b.op_id}
    assert {s["then"]["kind"] for s in ex["steps"]} == {"wr"}


def test_G1c_with_process_order():
    h = base()
    t1 = h.begin("p0", [0])
    h.complete(t1)
    t2 = h.begin("p0", [1])
    h.complete(t2)
    # t1 committed before t2 began, yet t1 claims to have read t2's write
    h.events[[e["type"] == "txn" and e.get("op_id") == t1.op_id and e["phase"] == "ok"
              for e in h.events].index(True)]["ops"].append(
        {"f": "read", "topic": TOPIC, "partition": 1, "offset": t2.offsets[0], "value": t2.values[0]})
    h.read_visible("c0")
    h.drain()
    r = judge(h)
    assert failed(r) == {"G1c"}
    ex = r["checks"]["G1c"]["examples"][0]
    assert ex["anomaly"] == "G1c-process"
    assert sorted(s["then"]["kind"] for s in ex["steps"]) == ["process", "wr"]


def test_precommitted_read():
    h = base()
    tx = h.begin("p0", [0])
    h.write(tx)
    tx.reads = [(0, tx.offsets[0], tx.values[0])]
    h.complete(tx)
    h.read_visible("c0")
    h.drain()
    r = judge(h)
    assert failed(r) == {"G1c"}
    assert r["checks"]["G1c"]["examples"][0]["anomaly"] == "precommitted-read"


def test_G0_is_allowed_in_kafka_and_fails_when_writes_must_be_isolated():
    h = base()
    a = h.begin("p0", [0, 1])
    b = h.begin("p1", [0, 1])
    h.write(a, 0)
    h.write(b, 0)
    h.write(b, 1)
    h.write(a, 1)  # a before b in partition 0, b before a in partition 1
    h.complete(a)
    h.complete(b)
    h.read_visible("c0")
    h.drain()
    r = judge(h)
    assert r["verdict"] == PASS
    ww = r["checks"]["ww-cycles"]
    assert ww["verdict"] == ALLOWED and ww["count"] == 1 and ww["by_anomaly"] == {"G0": 1}
    ex = ww["examples"][0]
    assert ex["anomaly"] == "G0" and ex["length"] == 2
    assert {s["then"]["partition"] for s in ex["steps"]} == {0, 1}
    r = judge(h, isolated_writes=True)
    assert failed(r) == {"ww-cycles"}


def test_serial_transactions_have_no_cycle():
    h = base()
    for i in range(10):
        h.txn(f"p{i % 2}", [0, 1, i % 2])
    h.read_visible("c0")
    h.drain()
    r = judge(h)
    assert_pass(r)
    assert r["checks"]["ww-cycles"]["verdict"] == PASS and r["checks"]["G1c"]["count"] == 0


def test_G0_realtime():
    h = base()
    early = h.begin("p0", [0])
    late_slot = len(h.logs[0])
    h.logs[0].append(("placeholder", None))
    h.write(early)
    h.complete(early)
    h.advance(1.0)
    late = h.begin("p1", [0])  # begins after early committed, yet sits before it in the log
    late.offsets[0] = late_slot
    h.logs[0][late_slot] = (late.values[0], late)
    h.complete(late)
    h.read_visible("c0")
    h.drain()
    r = judge(h)
    assert failed(r) == {"G0-realtime"}
    ex = r["checks"]["G0-realtime"]["examples"][0]
    assert ex["writer"]["op_id"] == early.op_id and ex["earlier_writer"]["op_id"] == late.op_id


def test_unseen_without_drain_is_unknown():
    h = base()
    clean(h)
    r = judge(h)
    assert r["verdict"] == UNKNOWN
    assert r["checks"]["unseen"]["verdict"] == UNKNOWN and "no final drain" in r["checks"]["unseen"]["reason"]


def test_malformed_event_is_one_clear_error():
    h = base()
    h.events.append({"seq": 99, "t": 1.0, "type": "txn.poll", "process": "c0"})
    with pytest.raises(ValueError, match="malformed event"):
        judge(h)
    with pytest.raises(ValueError, match="unknown transaction-check option"):
        check_transactions([], {}, {"nope": 1})


def test_a_reader_that_started_later_does_not_make_earlier_writes_lost():
    h = base()
    txs = clean(h)
    h.seek("c9", offset=3)  # c9 starts at offset 3 of every partition and reads on
    h.read_visible("c9")
    r = judge(h)
    assert r["checks"]["lost-write"]["verdict"] == PASS and r["checks"]["poll-skip"]["verdict"] == PASS
    assert r["verdict"] == UNKNOWN  # the earlier writes were read by nobody, and there was no drain
    assert {e["value"] for e in r["checks"]["unseen"]["examples"]} >= {txs[0].values[0]}


def test_an_unsure_transaction_seen_only_by_a_read_uncommitted_reader_is_not_taken_as_committed():
    h = base()
    h.consumer("ru", isolation="read_uncommitted")
    tx = h.begin("p0", [0, 1])
    h.complete(tx, phase="info", error="commit timed out")
    tx.status = "aborted"  # the coordinator aborted it: read_uncommitted readers saw it anyway
    h.logs[0].append((None, None))
    h.logs[1].append((None, None))
    for p in (0, 1):
        h.poll("ru", p, tx.offsets[p])
    h.txn("p1", [0, 1])
    h.read_visible("c0")
    h.drain()
    r = judge(h)
    assert r["verdict"] == PASS, r["reason"]
    assert r["checks"]["poll-skip"]["count"] == 0 and r["checks"]["torn-transaction"]["count"] == 0


def test_group_members_reads_count_as_reads():
    h = base()
    ab = h.txn("p0", [0], outcome="abort")
    h.txn("p1", [0, 1])
    h.read_visible("c0")
    h.drain()
    assert_pass(judge(h))
    h.ev("group.assign", process="m1", group="g", generation=1, member_id="m", partitions=[[TOPIC, 0]])
    h.ev("group.poll", process="m1", group="g", generation=1, topic=TOPIC, partition=0, offset=ab.offsets[0],
         value=ab.values[0])
    r = judge(h)
    assert failed(r) == {"G1a"} and r["checks"]["G1a"]["examples"][0]["reader"] == "m1"
    only_groups = [e for e in h.events if e["type"].startswith("group.")]
    assert check_transactions(only_groups, h.metadata)["applicable"] is False


def test_zombie_write_made_visible_without_a_commit():
    h, z = zombie_history(zombie_commits=False)
    h.write(z)  # its records are in the log ...
    h.poll("c9", 0, z.offsets[0])  # ... and one was served to a read_committed reader
    r = judge(h)
    assert {"zombie", "G1a"} <= failed(r)
    ex = r["checks"]["zombie"]["examples"][0]
    assert ex["committed"] is False and ex["visible_values"] == [z.values[0]]


def test_judging_a_json_round_trip_gives_the_same_result():
    import json
    h = base()
    clean(h)
    a = h.begin("p0", [0, 1])
    b = h.begin("p1", [0, 1])
    h.write(a, 0)
    h.write(b, 0)
    h.write(b, 1)
    h.write(a, 1)
    h.complete(a)
    h.complete(b)
    h.read_visible("c0")
    h.drain()
    events = [json.loads(json.dumps(e)) for e in h.events]
    assert json.loads(json.dumps(judge(h))) == json.loads(json.dumps(check_transactions(events, h.metadata)))
