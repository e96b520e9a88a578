"""Duplicates of an idempotent producer, classified by the producer id / epoch the client recorded.

``client.producer_id`` events (from librdkafka's statistics: ``eos.producer_id``, ``producer_epoch``,
``epoch_cnt``) tell whether a duplicated value was outstanding while the producer's epoch changed:
*across a producer-epoch bump* (the client re-sent it under a new epoch: ALLOWED, named, counted) or
*within one producer epoch* (the broker failed to de-duplicate: FAIL). Without samples around the send
the old rule applies (ALLOWED after message timeouts). Fatal producer errors that point at the broker
are a ``producer_fatal`` FAIL with their evidence; the client's own are listed only.
"""

from __future__ import annotations

from harness.checkers import ALLOWED, FAIL, PASS, check_durability
from tests.checkers.synthetic import History


def _pid(h: History, epoch: int, cnt: int, pid: int = 4001, process: str = "p0") -> None:
    h.emit("client.producer_id", process=process, producer_id=pid, producer_epoch=epoch, epoch_cnt=cnt,
           idemp_state="Assigned", instance=0)


def _history(*, bump: bool, samples: bool = True, timeout: bool = False) -> tuple[History, str]:
    """p0 sends 5 values; value #2 is outstanding from 1.0 s to 2.2 s and is written twice."""
    h = History(partitions=1)
    h.producer("p0", acks="all", **{"enable.idempotence": True})
    h.consumer("c0", mode="assign")
    if samples:
        _pid(h, 0, 1)
    h.advance(0.5)
    ops = [h.send("p0", 0) for _ in range(2)]
    h.advance(0.5)
    dup = h.invoke("p0", 0)                               # t = 1.01
    if timeout:
        other = h.invoke("p0", 0)
        h.advance(0.4)
        h.complete(other, phase="info", error="_MSG_TIMED_OUT")
    h.advance(0.5)
    if samples:                                           # t ~ 1.5 and 2.0: the stats samples
        _pid(h, 0, 1)
    h.advance(0.5)
    if samples:
        _pid(h, 1 if bump else 0, 2 if bump else 1)
    h.advance(0.2)
    h.complete(dup)                                       # acknowledged at its second copy's offset
    h.log(0).insert(len(h.log(0)) - 1, dup["value"])      # the first copy, written before the bump
    ops += [h.send("p0", 0) for _ in range(2)]
    h.advance(1.0)
    if samples:
        _pid(h, 1 if bump else 0, 2 if bump else 1)
    h.drain()
    return h, dup["value"]


def test_duplicate_across_an_epoch_bump_is_allowed_and_named():
    h, value = _history(bump=True, timeout=True)
    r = check_durability(h.events, h.metadata)
    d = r["checks"]["duplicates"]
    assert d["verdict"] == ALLOWED and d["count"] == 1 and d["violations"] == 0, d
    ex = d["examples"][0]
    assert ex["value"] == value and ex["class"] == "across-epoch-bump"
    assert ex["producer_id"] == 4001 and ex["epochs"] == [0, 1]
    assert [p["offset"] for p in ex["positions"]] == [2, 3]
    assert any("_MSG_TIMED_OUT" in e for e in ex["ambiguous_errors"])
    assert "across a producer-epoch bump of p0" in ex["allowed_by"] and "KIP-360" in ex["allowed_by"]
    assert d["classes"] == {"across-epoch-bump": 1, "within-epoch": 0, "no-evidence": 0}
    assert r["verdict"] == PASS


def test_duplicate_within_one_epoch_is_a_broker_fail_even_after_timeouts():
    h, value = _history(bump=False, timeout=True)
    d = check_durability(h.events, h.metadata)["checks"]["duplicates"]
    assert d["verdict"] == FAIL and d["violations"] == 1, d
    ex = d["examples"][0]
    assert ex["class"] == "within-epoch" and ex["producer_id"] == 4001 and ex["epochs"] == [0]
    assert "allowed_by" not in ex and [p["offset"] for p in ex["positions"]] == [2, 3]


def test_without_producer_id_samples_the_timeout_rule_still_applies():
    h, _ = _history(bump=True, samples=False, timeout=True)
    d = check_durability(h.events, h.metadata)["checks"]["duplicates"]
    assert d["verdict"] == ALLOWED and d["examples"][0]["class"] == "no-evidence"
    h, _ = _history(bump=True, samples=False, timeout=False)
    d = check_durability(h.events, h.metadata)["checks"]["duplicates"]
    assert d["verdict"] == FAIL and d["examples"][0]["class"] == "no-evidence"


def test_bump_outside_the_sends_life_does_not_excuse_it():
    h = History(partitions=1)
    h.producer("p0", acks="all", **{"enable.idempotence": True})
    _pid(h, 0, 1)
    h.advance(1.0)
    _pid(h, 1, 2)                          # bumped at 0-1 s, before the send below
    h.advance(1.0)
    op = h.send("p0", 0)
    h.log(0).append(op["value"])
    h.advance(1.0)
    _pid(h, 1, 2)
    h.drain()
    d = check_durability(h.events, h.metadata)["checks"]["duplicates"]
    assert d["verdict"] == FAIL and d["examples"][0]["class"] == "within-epoch" and d["examples"][0]["epochs"] == [1]


def _fatal(error: str, acked: int) -> dict:
    h = History(partitions=1)
    h.producer("p0", acks="all", **{"enable.idempotence": True})
    _pid(h, 0, 1)
    for _ in range(acked):
        h.send("p0", 0)
    h.advance(0.5)
    h.emit("client.life", process="p0", role="producer", state="fatal", error=error,
           detail=f"Fatal error: {error}: ...", instance=0)
    h.drain()
    return check_durability(h.events, h.metadata)["checks"]["producer_fatal"]


def test_fatal_errors_pointing_at_the_broker_are_findings_with_evidence():
    c = _fatal("OUT_OF_ORDER_SEQUENCE_NUMBER", acked=3)
    assert c["verdict"] == FAIL and c["violations"] == 1
    ex = c["examples"][0]
    assert ex["points_at"] == "broker" and ex["acked_before"] == 3 and ex["producer_id"] == 4001
    assert _fatal("UNKNOWN_PRODUCER_ID", acked=1)["verdict"] == FAIL


def test_client_side_fatal_errors_are_listed_not_judged():
    for err, acked in (("_INCONSISTENT", 5), ("OUT_OF_ORDER_SEQUENCE_NUMBER", 0), ("_FATAL", 2)):
        c = _fatal(err, acked)
        assert c["verdict"] == PASS, (err, c)
        assert c["client_errors"][0]["error"] == err and c["client_errors"][0]["points_at"] == "client"
