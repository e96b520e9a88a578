"""Each anomaly injected into an otherwise clean synthetic history is detected and named, with
its offsets; clean histories produce no findings."""

from __future__ import annotations

import pytest

from harness.checkers import ALLOWED, FAIL, PASS, UNKNOWN, check_durability
from tests.checkers.synthetic import History

SAFETY_CHECKS = ("lost", "unseen", "duplicates", "inconsistent_offsets", "nonmonotonic_send",
                 "nonmonotonic_poll", "poll_skip", "acks_semantics", "failed_visible", "unexpected_values")


def strict_history(partitions: int = 2, **kw) -> History:
    """acks=all, idempotent producer, min ISR 2 of 3, one assign-mode consumer."""
    h = History(partitions=partitions, broker_config={"min.insync.replicas": "2"}, **kw)
    h.producer("p0", acks="all", **{"enable.idempotence": True})
    h.consumer("c0", mode="assign")
    for p in range(partitions):
        h.isr(p, [1, 2, 3])
    return h


def fill(h: History, n: int, process: str = "p0", partitions: int = 2, **kw) -> list[dict]:
    return [h.send(process, i % partitions, **kw) for i in range(n)]


def run(h: History, **opts) -> dict:
    return check_durability(h.events, h.metadata, opts or None)


def verdicts(result: dict) -> dict:
    return {k: v["verdict"] for k, v in result["checks"].items()}


def only_failures(result: dict) -> set:
    return {k for k, v in result["checks"].items() if v["verdict"] == FAIL}


# -- clean histories -------------------------------------------------------------------------------
@pytest.mark.parametrize("partitions", [1, 3])
def test_clean_history_passes_every_check(partitions):
    h = strict_history(partitions)
    fill(h, 60, partitions=partitions)
    for p in range(partitions):
        h.poll_all("c0", p)
    h.drain()
    r = run(h)
    assert r["verdict"] == PASS, r["reason"]
    assert all(v == PASS for v in verdicts(r).values()), verdicts(r)
    assert all(r["checks"][c]["count"] == 0 for c in SAFETY_CHECKS)
    assert r["stats"]["sends"] == r["stats"]["acked"] == 60
    assert r["stats"]["drained"] == 60


def test_clean_history_with_interleaved_in_flight_sends_and_several_producers():
    h = strict_history(2)
    h.producer("p1", acks="all", **{"enable.idempotence": True})
    ops = []
    for i in range(40):  # 40 sends in flight at once, completed in order per producer
        ops.append(h.invoke("p0" if i % 2 else "p1", i % 2))
        h.advance(0.001)
    for op in ops:
        op["offset"] = h.complete(op)
    h.consumer("c1", mode="subscribe")
    h.poll_all("c1", 1)  # a group consumer may read any subset
    h.poll_all("c0", 0)
    h.drain()
    r = run(h)
    assert r["verdict"] == PASS, r["reason"]


def test_failed_and_unknown_sends_are_not_losses():
    h = strict_history(1)
    fill(h, 5, partitions=1)
    h.send("p0", 0, phase="fail", error="NOT_ENOUGH_REPLICAS")
    h.send("p0", 0, phase="info", error="_MSG_TIMED_OUT")  # not written
    h.send("p0", 0, phase="info", error="_MSG_TIMED_OUT", append=True)  # written after all: fine
    fill(h, 5, partitions=1)
    h.drain()
    r = run(h)
    assert r["verdict"] == PASS, r["reason"]
    assert r["stats"]["failed"] == 1 and r["stats"]["unknown"] == 2
    assert r["stats"]["errors"] == {"NOT_ENOUGH_REPLICAS": 1, "_MSG_TIMED_OUT": 2}
    assert r["checks"]["acks_semantics"]["not_enough_replicas_fails"] == 1


# -- lost and unseen -------------------------------------------------------------------------------
def test_lost_acknowledged_write_is_reported_with_partition_and_offset():
    h = strict_history(2)
    ops = fill(h, 20)
    victim = ops[7]  # partition 1
    h.lose(victim["partition"], victim["offset"])
    h.drain()
    r = run(h)
    assert r["verdict"] == FAIL
    lost = r["checks"]["lost"]
    assert lost["verdict"] == FAIL and lost["count"] == 1 and lost["violations"] == 1
    ex = lost["examples"][0]
    assert (ex["value"], ex["topic"], ex["partition"], ex["offset"], ex["process"]) == \
        (victim["value"], "t", 1, victim["offset"], "p0")
    # the record after it moved down into its slot: also an inconsistent offset
    assert r["checks"]["inconsistent_offsets"]["verdict"] == FAIL
    assert "lost (1)" in r["reason"]


def test_truncated_tail_is_unseen_not_lost():
    h = strict_history(1)
    ops = fill(h, 10, partitions=1)
    h.truncate(0, 8)  # the last two acked records are beyond the drained end offset
    h.drain()
    r = run(h)
    assert r["checks"]["lost"]["verdict"] == PASS
    unseen = r["checks"]["unseen"]
    assert unseen["verdict"] == UNKNOWN and unseen["count"] == 2
    assert [e["offset"] for e in unseen["examples"]] == [ops[8]["offset"], ops[9]["offset"]] == [8, 9]
    assert r["verdict"] == UNKNOWN
    # once more writes land after the hole, the drain covers those offsets: they are lost
    h2 = strict_history(1)
    ops = fill(h2, 10, partitions=1)
    h2.truncate(0, 8)
    fill(h2, 3, partitions=1)  # offsets 8, 9, 10 now hold new values
    h2.drain()
    r2 = run(h2)
    assert r2["checks"]["lost"]["verdict"] == FAIL
    assert sorted(e["offset"] for e in r2["checks"]["lost"]["examples"]) == [8, 9]
    assert r2["checks"]["unseen"]["count"] == 0
    # and the reused offsets were acknowledged twice with different values
    inc = r2["checks"]["inconsistent_offsets"]
    assert {e["offset"] for e in inc["examples"]} == {8, 9}
    assert r2["checks"]["nonmonotonic_send"]["verdict"] == FAIL


def test_partition_without_partition_end_leaves_its_values_unseen():
    h = strict_history(2)
    fill(h, 10)
    h.drain(partitions=[0])  # partition 1 never drained
    r = run(h)
    unseen = r["checks"]["unseen"]
    assert unseen["verdict"] == UNKNOWN and unseen["count"] == 5
    assert unseen["undrained_partitions"] == [["t", 1]]
    assert r["checks"]["lost"]["verdict"] == PASS


def test_acked_writes_on_a_partition_that_no_longer_exists_are_lost_not_unseen():
    """The drain found partition 1 gone (partition.absent, harness/workload/drain.py): the broker
    acknowledged five writes there and has no partition to hold them, a broker-observable loss."""
    h = strict_history(2)
    fill(h, 10)
    h.drain(partitions=[0])
    h.emit("partition.absent", topic="t", partition=1, reason="Metadata: UNKNOWN_TOPIC_OR_PARTITION",
           answers=3, over_s=5.2)
    r = run(h)
    lost = r["checks"]["lost"]
    assert r["verdict"] == FAIL and lost["verdict"] == FAIL and lost["violations"] == 5
    assert "5 on partitions the brokers say no longer exist" in lost["reason"]
    assert {(e["partition"], e["partition_absent"]) for e in lost["examples"]} == \
        {(1, "Metadata: UNKNOWN_TOPIC_OR_PARTITION")}
    assert r["checks"]["unseen"]["verdict"] == PASS and r["checks"]["unseen"]["count"] == 0


def test_acked_writes_on_a_topic_the_scenario_deleted_are_allowed():
    h = strict_history(2)
    fill(h, 10)
    h.emit("action", action="delete_topic", params={"topic": "t"}, ok=True, error=None)
    for p in (0, 1):
        h.emit("partition.absent", topic="t", partition=p, reason="Metadata lists no such topic",
               answers=3, over_s=5.0)
    r = run(h)
    lost = r["checks"]["lost"]
    assert lost["verdict"] == ALLOWED and lost["allowed"] == 10 and lost["violations"] == 0
    assert r["checks"]["unseen"]["count"] == 0
    assert all(e["allowed_by"] == "the scenario deleted topic t" for e in lost["examples"])


def test_no_final_drain_is_unknown():
    h = strict_history(1)
    fill(h, 5, partitions=1)
    h.poll_all("c0", 0)
    r = run(h)
    assert r["verdict"] == UNKNOWN
    assert r["checks"]["lost"]["verdict"] == UNKNOWN
    assert "no final drain" in r["checks"]["lost"]["reason"]


def test_loss_with_acks_1_is_allowed_not_failed():
    h = History(partitions=1, workload={"acks": "1", "enable_idempotence": False})
    h.producer("p0", acks="1")
    ops = fill(h, 10, partitions=1)
    h.lose(0, 3)
    h.drain()
    r = run(h)
    lost = r["checks"]["lost"]
    assert lost["verdict"] == ALLOWED and lost["allowed"] == 1 and lost["violations"] == 0
    assert lost["examples"][0]["allowed_by"] == "acks=1"
    assert lost["examples"][0]["offset"] == ops[3]["offset"]
    assert r["checks"]["inconsistent_offsets"]["verdict"] == ALLOWED
    assert r["verdict"] == PASS and "allowed by configuration" in r["reason"]


def test_loss_after_observed_unclean_election_is_allowed():
    h = strict_history(1)
    fill(h, 10, partitions=1)
    h.isr(0, [2], recovery=1)  # unclean election: leader_recovery_state 1
    h.truncate(0, 6)
    fill(h, 5, partitions=1)
    h.drain()
    r = run(h)
    assert r["checks"]["lost"]["verdict"] == ALLOWED
    assert r["checks"]["lost"]["examples"][0]["allowed_by"].startswith("unclean leader election observed")
    assert r["checks"]["nonmonotonic_send"]["verdict"] == ALLOWED
    assert r["verdict"] == PASS


def test_loss_with_unclean_enabled_in_topic_config_is_allowed():
    h = History(partitions=1, topic_config={"unclean.leader.election.enable": "true"})
    h.producer("p0", acks="all")
    fill(h, 6, partitions=1)
    h.lose(0, 0)
    h.drain()
    lost = run(h)["checks"]["lost"]
    assert lost["verdict"] == ALLOWED
    assert lost["examples"][0]["allowed_by"] == "unclean.leader.election.enable=true"


def test_mixed_producers_only_the_acks_all_loss_fails():
    h = strict_history(1)
    h.producer("q0", acks="1")
    a = h.send("p0", 0)
    b = h.send("q0", 0)
    fill(h, 3, partitions=1)
    h.log(0)[a["offset"]] = "never-sent"  # overwritten by a value nobody sent
    h.log(0).remove(b["value"])
    h.drain()
    r = run(h)
    lost = r["checks"]["lost"]
    assert lost["violations"] == 1 and lost["allowed"] == 1
    assert lost["examples"][0]["value"] == a["value"]  # violations are listed first
    assert r["checks"]["unexpected_values"]["verdict"] == FAIL
    assert r["checks"]["unexpected_values"]["examples"][0]["value"] == "never-sent"


# -- duplicates and offsets ------------------------------------------------------------------------
def test_duplicate_with_idempotence_fails_and_names_both_offsets():
    h = strict_history(1)
    ops = fill(h, 5, partitions=1)
    h.log(0).append(ops[2]["value"])  # the same value written again at offset 5
    h.drain()
    d = run(h)["checks"]["duplicates"]
    assert d["verdict"] == FAIL and d["count"] == 1
    assert d["examples"][0]["value"] == ops[2]["value"]
    assert [p["offset"] for p in d["examples"][0]["positions"]] == [2, 5]


def test_duplicate_without_idempotence_is_a_counted_statistic():
    h = History(partitions=1, workload={"acks": "all", "enable_idempotence": False})
    h.producer("p0", acks="all", **{"enable.idempotence": False})
    ops = fill(h, 5, partitions=1)
    h.log(0).append(ops[0]["value"])
    h.log(0).append(ops[1]["value"])
    h.drain()
    r = run(h)
    d = r["checks"]["duplicates"]
    assert d["verdict"] == ALLOWED and d["count"] == 2 and d["violations"] == 0
    assert r["verdict"] == PASS


def test_inconsistent_offset_between_ack_and_poll():
    h = strict_history(1)
    fill(h, 5, partitions=1)
    h.poll("c0", 0, 0)
    h.poll("c0", 0, 1, value="p0-3")  # the consumer sees p0-3 at offset 1 where p0-1 was acknowledged
    h.drain()
    r = run(h)
    inc = r["checks"]["inconsistent_offsets"]
    assert inc["verdict"] == FAIL and inc["count"] == 1
    assert inc["examples"][0] == {"topic": "t", "partition": 0, "offset": 1, "values": ["p0-1", "p0-3"]}
    assert r["checks"]["duplicates"]["verdict"] == FAIL  # p0-3 also read at offsets 1 and 3


def test_inconsistent_offset_between_two_acks():
    h = strict_history(1)
    fill(h, 3, partitions=1)
    op = h.invoke("p0", 0)
    h.complete(op, offset=1)  # the broker acknowledges a second value at offset 1
    h.drain()
    r = run(h)
    inc = r["checks"]["inconsistent_offsets"]
    assert inc["verdict"] == FAIL
    assert inc["examples"][0]["offset"] == 1 and set(inc["examples"][0]["values"]) == {"p0-1", op["value"]}
    ns = r["checks"]["nonmonotonic_send"]
    assert ns["verdict"] == FAIL
    assert ns["examples"][0]["offset"] == 1 and ns["examples"][0]["previous_offset"] == 2


# -- ordering --------------------------------------------------------------------------------------
def test_nonmonotonic_send_is_judged_in_invoke_order():
    h = strict_history(1)
    a = h.invoke("p0", 0)
    b = h.invoke("p0", 0)
    h.complete(b)  # completes first and gets offset 0: reordered
    h.complete(a)
    h.drain()
    r = run(h)
    ns = r["checks"]["nonmonotonic_send"]
    assert ns["verdict"] == FAIL and ns["count"] == 1
    assert ns["examples"][0]["op_id"] == b["op_id"] and ns["examples"][0]["offset"] == 0
    assert ns["examples"][0]["previous_offset"] == 1
    # without idempotence, with retries and several requests in flight, reordering is allowed
    h2 = History(partitions=1, workload={"acks": "all"})
    h2.producer("p0", acks="all", **{"enable.idempotence": False, "max.in.flight.requests.per.connection": 5})
    a, b = h2.invoke("p0", 0), h2.invoke("p0", 0)
    h2.complete(b)
    h2.complete(a)
    h2.drain()
    assert run(h2)["checks"]["nonmonotonic_send"]["verdict"] == ALLOWED


def test_out_of_order_completion_with_increasing_offsets_is_fine():
    h = strict_history(1)
    a, b = h.invoke("p0", 0), h.invoke("p0", 0)
    h.log(0).extend([a["value"], b["value"]])
    h.complete(b, offset=1, append=False)
    h.complete(a, offset=0, append=False)
    h.drain()
    assert run(h)["checks"]["nonmonotonic_send"]["verdict"] == PASS


def test_nonmonotonic_poll_in_assign_mode():
    h = strict_history(1)
    fill(h, 6, partitions=1)
    for off in (0, 1, 2, 3, 1, 2, 3, 4, 5):  # jumps back to offset 1
        h.poll("c0", 0, off)
    h.consumer("g0", mode="subscribe")
    for off in (0, 1, 2, 0, 1):  # a group consumer may re-read after a rebalance
        h.poll("g0", 0, off)
    h.drain()
    r = run(h)
    npoll = r["checks"]["nonmonotonic_poll"]
    assert npoll["verdict"] == FAIL and npoll["count"] == 1
    assert npoll["examples"][0] == {"process": "c0", "topic": "t", "partition": 0, "offset": 1,
                                    "previous_offset": 3}


def test_poll_skip_in_assign_mode_names_skipped_offsets():
    h = strict_history(1)
    fill(h, 10, partitions=1)
    for off in (0, 1, 2, 6, 7, 8, 9):  # 3, 4, 5 skipped
        h.poll("c0", 0, off)
    h.drain()
    r = run(h)
    skip = r["checks"]["poll_skip"]
    assert skip["verdict"] == FAIL and skip["count"] == 1
    ex = skip["examples"][0]
    assert (ex["offset"], ex["previous_offset"], ex["skipped"], ex["skipped_offsets"]) == (6, 2, 3, [3, 4, 5])


def test_gap_holding_no_known_value_is_not_a_skip():
    """Offsets nobody ever acknowledged or read (e.g. transaction markers) may be skipped."""
    h = strict_history(1)
    fill(h, 3, partitions=1)
    op = h.invoke("p0", 0)
    h.complete(op, offset=10)  # acknowledged at 10, 3..9 hold nothing we know of
    h.poll("c0", 0, 0)
    h.poll("c0", 0, 1)
    h.poll("c0", 0, 2)
    h.poll("c0", 0, 10, value=op["value"])
    h.emit("client", process="drain", f="drain", phase="ok", op_id=None, topic="t", partition=0, offset=10,
           value=op["value"], error=None, leader_epoch=0)
    for off in range(3):
        h.emit("client", process="drain", f="drain", phase="ok", op_id=None, topic="t", partition=0,
               offset=off, value=h.log(0)[off], error=None, leader_epoch=0)
    h.emit("partition.end", topic="t", partition=0, end_offset=11)
    r = run(h)
    assert r["checks"]["poll_skip"]["verdict"] == PASS
    assert r["verdict"] == PASS, r["reason"]


def test_poll_skip_over_a_wide_gap_uses_the_index():
    h = strict_history(1)
    fill(h, 3, partitions=1)
    op = h.invoke("p0", 0)
    h.complete(op, offset=50_000)
    h.poll("c0", 0, 0)
    h.poll("c0", 0, 50_000, value=op["value"])  # skips offsets 1 and 2, known to hold values
    r = run(h, max_skip_scan=100)
    ex = r["checks"]["poll_skip"]["examples"][0]
    assert ex["skipped_offsets"] == [1, 2]


# -- failed writes and phantoms -----------------------------------------------------------------
def test_definitely_failed_write_that_is_read_is_reported():
    h = strict_history(1)
    fill(h, 2, partitions=1)
    bad = h.send("p0", 0, phase="fail", error="NOT_ENOUGH_REPLICAS", append=True)
    h.drain()
    r = run(h)
    fv = r["checks"]["failed_visible"]
    assert fv["verdict"] == FAIL and fv["count"] == 1
    assert fv["examples"][0] == {"value": bad["value"], "process": "p0", "error": "NOT_ENOUGH_REPLICAS",
                                 "topic": "t", "partition": 0, "offset": 2}


def test_history_without_sends_is_unknown():
    r = check_durability([], {})
    assert r["verdict"] == UNKNOWN and r["reason"] == "no client sends in the history"


def test_examples_are_capped_but_counts_are_not():
    h = strict_history(1)
    fill(h, 50, partitions=1)
    h.truncate(0, 0)
    fill(h, 50, partitions=1)
    h.drain()
    r = run(h, max_examples=5)
    assert r["checks"]["lost"]["count"] == 50
    assert len(r["checks"]["lost"]["examples"]) == 5


def test_bad_input_is_rejected_with_a_clear_message():
    with pytest.raises(ValueError, match="unknown durability option 'nope'"):
        check_durability([], {}, {"nope": 1})
    with pytest.raises(TypeError, match="metadata must be a dict"):
        check_durability([], None)
    with pytest.raises(ValueError, match=r"malformed event \(seq 7\)"):
        check_durability([{"seq": 7, "t": 0.0, "type": "client", "f": "send"}], {})
    with pytest.raises(ValueError, match="send phase 'done'"):
        check_durability([{"seq": 1, "t": 0.0, "type": "client", "f": "send", "phase": "done", "process": "p",
                           "op_id": 1, "value": "v"}], {})
