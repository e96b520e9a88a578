"""acks semantics against the observed ISR (controller-spec §5.12, H17; seed 001) and the
availability report (windows without acks, recovery after faults, latency)."""

from __future__ import annotations

import pytest

from harness.checkers import FAIL, PASS, check_durability
from harness.checkers.config import RunFacts, parse_bool, parse_version, producer_facts
from harness.record.facts import normalize_acks
from tests.checkers.synthetic import History


def history(min_isr: str = "2", rf: int = 3, version: str | None = "3.9.0", acks: str = "all") -> History:
    h = History(partitions=1, replication_factor=rf, broker_config={"min.insync.replicas": min_isr},
                kafka_version=version, workload={"acks": acks, "enable_idempotence": acks == "all"})
    h.producer("p0", acks=acks, **{"enable.idempotence": acks == "all"})
    h.isr(0, [1, 2, 3])
    return h


def acks_check(h: History, **opts) -> dict:
    h.drain()
    return check_durability(h.events, h.metadata, opts or None)["checks"]["acks_semantics"]


# -- acks semantics --------------------------------------------------------------------------------
def test_ack_wholly_inside_an_isr_below_min_window_fails():
    h = history()
    h.send("p0")
    h.advance(1)
    h.isr(0, [1])  # ISR 1 < min ISR 2 from t=1.005
    h.advance(3)
    bad = h.send("p0", latency=0.01)  # invoked 3 s into the window, acked 0.01 s later
    h.send("p0", phase="fail", error="NOT_ENOUGH_REPLICAS")  # what should have happened
    h.advance(3)  # the ISR grows back at t=7.02
    h.isr(0, [1, 2])
    h.send("p0")
    c = acks_check(h)
    assert c["verdict"] == FAIL and c["count"] == 1
    ex = c["examples"][0]
    assert (ex["value"], ex["offset"], ex["isr_size"], ex["min_isr"], ex["source"]) == \
        (bad["value"], bad["offset"], 1, 2, "zk.partition_state")
    assert ex["window"][0] == pytest.approx(1.005) and ex["window"][1] == pytest.approx(7.02)
    assert c["isr_below_min_windows"] == 1 and c["not_enough_replicas_fails"] == 1


def test_acks_near_the_window_edges_are_not_flagged():
    """Observation lag: the ISR may have shrunk later, or grown earlier, than observed."""
    h = history()
    h.isr(0, [1])
    h.advance(0.5)
    h.send("p0")  # invoked within isr_lag_s of the window start
    h.advance(5)
    h.send("p0", latency=0.01)  # flagged: well inside
    h.advance(4.6)
    h.send("p0", latency=0.1)  # acked within isr_lag_s of the window end
    h.advance(0.2)
    h.isr(0, [1, 2, 3])
    c = acks_check(h)
    assert c["count"] == 1
    assert c["examples"][0]["offset"] == 1
    # a send invoked before the window began is never flagged, however late its ack
    h2 = history()
    op = h2.invoke("p0")
    h2.advance(0.1)
    h2.isr(0, [1])
    h2.advance(5)
    h2.complete(op)
    assert acks_check(h2)["count"] == 0


def test_window_still_open_at_the_end_counts():
    h = history()
    h.isr(0, [2])
    h.advance(2)
    h.send("p0")
    c = acks_check(h)
    assert c["verdict"] == FAIL and c["examples"][0]["window"][1] is None


def test_acks_1_is_not_bound_by_min_isr():
    h = history(acks="1")
    h.isr(0, [1])
    h.advance(2)
    h.send("p0")
    c = acks_check(h)
    assert c["verdict"] == PASS and c["isr_below_min_windows"] == 1


def test_effective_min_isr_is_capped_by_replicas_from_3_7_on():
    """min.insync.replicas=3 with RF 2: since 3.7 the effective minimum is 2 (§5.12)."""
    for version, expect in (("3.9.0", 0), ("3.6.2", 1)):
        h = history(min_isr="3", rf=2, version=version)
        h.isr(0, [1, 2])
        h.advance(2)
        h.send("p0")
        assert acks_check(h)["count"] == expect, version


def test_min_isr_1_makes_the_check_vacuous():
    h = history(min_isr="1")
    h.isr(0, [1])
    h.advance(2)
    h.send("p0")
    c = acks_check(h)
    assert c["verdict"] == PASS and c["isr_below_min_windows"] == 0


def test_topic_config_overrides_broker_min_isr():
    h = History(partitions=1, broker_config={"min.insync.replicas": "1"}, topic_config={"min.insync.replicas": "2"})
    h.producer("p0", acks="all")
    h.isr(0, [1])
    h.advance(2)
    h.send("p0")
    assert acks_check(h)["count"] == 1


def test_admin_metadata_is_used_when_zookeeper_is_not_observed():
    h = History(partitions=2, broker_config={"min.insync.replicas": "2"})
    h.producer("p0", acks="all")

    def sample(isr0, isr1):
        h.emit("admin.metadata", controller_id=1, brokers=[1, 2, 3], partitions=[
            {"topic": "t", "partition": 0, "leader": 1, "leader_epoch": 0, "replicas": [1, 2, 3], "isr": isr0,
             "error": None},
            {"topic": "t", "partition": 1, "leader": 1, "leader_epoch": 0, "replicas": [1, 2, 3], "isr": isr1,
             "error": None}])
    sample([1, 2, 3], [1, 2, 3])
    h.advance(1)
    sample([1], [1])
    h.advance(2)
    h.send("p0", 0)
    h.send("p0", 1)
    h.advance(2)
    sample([1, 2], [1, 2])
    h.isr(1, [1, 2, 3])  # partition 1 is also watched in ZooKeeper, which takes precedence
    c = acks_check(h)
    assert c["count"] == 1
    assert (c["examples"][0]["partition"], c["examples"][0]["source"]) == (0, "admin.metadata")


def test_no_isr_observations_is_noted():
    h = History(partitions=1)
    h.producer("p0", acks="all")
    h.send("p0")
    c = acks_check(h)
    assert c["verdict"] == PASS and "no ISR observations" in c["note"]


# -- availability ----------------------------------------------------------------------------------
def test_unavailability_windows_and_fault_recovery():
    h = History(partitions=2)
    h.producer("p0", acks="all")
    for _ in range(5):
        h.send("p0", 0)
        h.send("p0", 1)
        h.advance(0.1)
    f = h.fault("kill", "leader(t,0)")
    h.advance(0.5)
    h.send("p0", 1)  # partition 1 unaffected: first ack 0.505 s after the fault
    for _ in range(8):
        h.send("p0", 0, phase="info", error="_MSG_TIMED_OUT")
        h.advance(1)
    h.send("p0", 0)  # partition 0 back ~8.6 s after its previous ack
    h.heal(f)
    h.send("p0", 1)
    h.drain()
    r = check_durability(h.events, h.metadata, {"unavailable_window_s": 5.0})
    a = r["checks"]["availability"]
    assert a["verdict"] == PASS  # informational by default
    assert a["count"] == 2  # p0's gap, and p1's own gap (it got no ack while the loop ran)
    win = {e["partition"]: e["duration_s"] for e in a["examples"]}
    assert win[0] == pytest.approx(9.1 - 0.445)  # last ack before the fault .. first after
    assert a["longest_by_partition"]["t/0"] == pytest.approx(win[0])
    fault = a["faults"][0]
    assert fault["fault"] == "kill" and fault["first_ok_s"] == pytest.approx(0.505)
    assert fault["all_partitions_ok_s"] == pytest.approx(9.1 - 0.55)
    lat = a["latency_s"]
    assert lat["n"] == 13 and lat["p50"] == pytest.approx(0.005) and lat["max"] == pytest.approx(0.005)
    # with a limit the same history fails availability
    r2 = check_durability(h.events, h.metadata, {"unavailable_window_s": 5.0, "availability_limit_s": 6.0})
    assert r2["checks"]["availability"]["verdict"] == FAIL and r2["verdict"] == FAIL


def test_partition_that_never_acks_is_one_long_window():
    h = History(partitions=2)
    h.producer("p0", acks="all")
    for _ in range(10):
        h.send("p0", 0)
        h.send("p0", 1, phase="fail", error="NOT_ENOUGH_REPLICAS")
        h.advance(1)
    h.drain()
    a = check_durability(h.events, h.metadata)["checks"]["availability"]
    assert a["count"] == 1 and a["examples"][0]["partition"] == 1
    assert a["examples"][0]["duration_s"] == pytest.approx(9.095)  # first invoke .. last invoke


def test_latency_percentiles_are_nearest_rank():
    h = History(partitions=1)
    h.producer("p0", acks="all")
    for i in range(1, 101):
        h.send("p0", latency=i / 1000)
    h.drain()
    lat = check_durability(h.events, h.metadata)["checks"]["availability"]["latency_s"]
    assert (lat["p50"], lat["p99"], lat["max"]) == (0.05, 0.099, 0.1)


# -- configuration parsing -----------------------------------------------------------------------
def test_config_parsing():
    assert [normalize_acks(x) for x in ("all", -1, "-1", 1, "0", None)] == ["all", "all", "all", "1", "0", None]
    with pytest.raises(ValueError, match="acks must be"):
        normalize_acks("2")
    assert parse_bool("TRUE") is True and parse_bool(False) is False and parse_bool(None) is None
    with pytest.raises(ValueError):
        parse_bool("maybe")
    assert parse_version("3.9.0") == (3, 9, 0) and parse_version("3.7.1-SNAPSHOT") == (3, 7, 1)
    assert parse_version(None) is None
    pf = producer_facts({}, {})  # librdkafka defaults
    assert (pf.acks, pf.idempotent, pf.ordered, pf.may_lose) == ("all", False, False, False)
    pf = producer_facts({"acks": 1}, {"enable_idempotence": True})
    assert (pf.acks, pf.idempotent, pf.ordered, pf.may_lose) == ("1", True, True, True)
    assert producer_facts({"max.in.flight.requests.per.connection": 1}, {}).ordered
    facts = RunFacts({"broker_config": {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"},
                      "topics": [{"name": "t", "replication_factor": 3,
                                  "config": {"unclean.leader.election.enable": "true"}}]})
    assert facts.min_isr("t") == 2 and facts.unclean_enabled("t") and not facts.unclean_enabled("other")


def test_window_closes_at_zookeepers_commit_not_when_the_watch_saw_it():
    """kafkatest.reassign_partitions on 3.9.2: the watch saw the ISR grow back 1.95 s after ZooKeeper
    committed it; an ack between the commit and the observation is not inside the window."""
    h = history()
    h.advance(1)
    h.isr(0, [1])                                   # below min ISR 2 from t=1
    h.advance(5)
    h.send("p0", latency=0.01)                      # t=6: inside -> flagged
    h.advance(2)
    h.send("p0", latency=0.01)                      # t=8: within isr_lag_s of the commit: not flagged
    h.advance(2)
    h.isr(0, [1, 2], watch_lag_s=1.5)               # committed at t=8.52, seen at t=10.02
    c = acks_check(h)
    assert c["count"] == 1 and c["examples"][0]["ok_t"] == pytest.approx(6.01, abs=0.02), c["examples"]
    assert c["examples"][0]["window"][1] == pytest.approx(8.52, abs=0.02)


def test_txn_log_copies_after_the_run_do_not_open_windows():
    h = history()
    h.send("p0")
    h.advance(1)
    h.isr(0, [1], source="txnlog")                 # a copy appended after the run: not an observation
    h.advance(3)
    h.send("p0", latency=0.01)
    c = acks_check(h)
    assert c["count"] == 0 and c["isr_below_min_windows"] == 0


def _txnlog_copy(h, isr: list[int], committed_t: float) -> None:
    """ZooKeeper's txn-log copy of a partition state, appended at the end of the run (now), committed at
    ``committed_t`` on the record's clock."""
    h.emit("zk.partition_state", zxid=len(h.events), source="txnlog", topic=h.topic, partition=0,
           leader=isr[0], leader_epoch=1, isr=list(isr), controller_epoch=1, leader_recovery_state=0,
           version=len(h.events), deleted=False, zk_time=1.7e9 + committed_t)


def test_an_expansion_the_watch_missed_but_the_txn_log_shows_excuses_the_acks_around_it():
    """kafkatest.reassign_partitions on 3.9.2 (record 55f951): the watch saw [2,3] and then [2,1], both
    below min ISR 3; ZooKeeper's log shows [2,3,1] committed in between. Acks whose life spans that
    state may have been acknowledged under the full ISR: not a FAIL. An ack wholly before it still is."""
    h = history()
    h.advance(1)
    h.isr(0, [1])                                   # below min ISR 2 from t=1
    h.advance(3)
    h.send("p0", latency=0.01)                      # t=4: wholly below: a violation
    h.advance(2)
    h.send("p0", latency=1.0)                       # t=6..7: spans the missed expansion at 6.5
    h.advance(1)
    h.send("p0", latency=0.01)                      # t=8: after the missed shrink at 7.5: a violation
    h.advance(3)
    h.isr(0, [1, 2])                                # t=11: the watch sees the expansion
    h.advance(5)
    _txnlog_copy(h, [1], 1.0)
    _txnlog_copy(h, [1, 2], 6.5)                    # missed by the watch
    _txnlog_copy(h, [1], 7.5)
    _txnlog_copy(h, [1, 2], 11.0)
    c = acks_check(h)
    assert c["count"] == 2 and c["excused_by_txnlog"] == 1, c
    assert [e["ok_t"] for e in c["examples"]] == [pytest.approx(4.01, abs=0.02), pytest.approx(8.02, abs=0.02)]
    assert c["verdict"] == "FAIL"


def test_a_txn_log_that_confirms_the_window_excuses_nothing():
    h = history()
    h.advance(1)
    h.isr(0, [1])
    h.advance(3)
    h.send("p0", latency=0.01)
    h.advance(3)
    h.isr(0, [1, 2])
    h.advance(5)
    _txnlog_copy(h, [1, 2], 0.5)
    _txnlog_copy(h, [1], 1.0)
    _txnlog_copy(h, [1, 2], 7.0)
    c = acks_check(h)
    assert c["count"] == 1 and "excused_by_txnlog" not in c and c["verdict"] == "FAIL"
