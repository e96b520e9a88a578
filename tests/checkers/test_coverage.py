"""Coverage on fabricated histories: a run is only PASS when its clients lived through the faults.

Built with :class:`tests.checkers.synthetic.History` plus hand-written ``client.life`` events (the
format the workload records, docs/run-record.md "Additions (client health and coverage)").
"""

from __future__ import annotations

import pytest

from harness.checkers.coverage import DEFAULT_NEEDS, FATAL_ERRORS, check_coverage, fatal_points_at
from tests.checkers.synthetic import History

PARTS = 2


def _run(*, die_at: float | None = None, life: bool = True, stop_sends_at: float | None = None,
         fatal: str | None = None, recreate_after: float | None = None, write_after_heal: bool = True,
         settle: float = 6.0) -> History:
    """p0 writes 10 sends/s round-robin over 2 partitions; faults #1 (10-20 s) and #2 (25-30 s);
    the harness asks the clients to stop at 30 s + ``settle``."""
    h = History(partitions=PARTS, workload={"acks": "all", "enable_idempotence": True, "topic": "t",
                                            "partitions": PARTS})
    h.producer("p0", acks="all", **{"enable.idempotence": True})
    if life:
        h.emit("client.life", process="p0", role="producer", state="started", error=None, instance=0)
    alive, n = True, 0
    faults = {10.0: ("start", 1, "kill", "broker:1"), 20.0: ("end", 1, "kill", ""),
              25.0: ("start", 2, "pause", "controller"), 30.0: ("end", 2, "pause", "")}
    end = 30.0 + settle
    while h.t < end:
        for at, (what, fid, name, target) in list(faults.items()):
            if h.t >= at:
                del faults[at]
                if what == "start":
                    h.emit("fault.start", fault_id=fid, fault=name, target=target, nodes=["kc-x-b1"],
                           broker_ids=[1], params={})
                else:
                    h.emit("fault.end", fault_id=fid, fault=name, nodes=["kc-x-b1"], ok=True, error=None)
        if alive and die_at is not None and h.t >= die_at:
            alive = False
            if life:
                h.emit("client.life", process="p0", role="producer", state="fatal" if fatal else "died",
                       error=fatal or "client_crash: ended abruptly by the nemesis", instance=0)
            if recreate_after is not None:
                h.advance(recreate_after)
                alive = True
                if life:
                    h.emit("client.life", process="p0", role="producer", state="recreated", error=None, instance=1)
                die_at = None
        if stop_sends_at is not None and h.t >= stop_sends_at:
            alive = False
        after_heal = h.t > 30.0
        if alive and (write_after_heal or not after_heal):
            h.send("p0", n % PARTS)
            n += 1
        h.advance(0.1)
    h.emit("phase", name="faults.healed", residue=[], errors=[])
    h.emit("phase", name="workload.stopping", topic="t")
    if life and alive:
        h.emit("client.life", process="p0", role="producer", state="stopped", error=None, reason="asked")
    h.drain()
    return h


def test_healthy_producer_passes_with_windows_and_alive_interval():
    h = _run()
    c = check_coverage(h.events, h.metadata)
    assert c["verdict"] == "PASS", c["reason"]
    assert c["shortfalls"] == []
    w1, w2 = c["windows"]
    assert (w1["fault_id"], w1["fault"], w1["start"], w1["end"]) == (1, "kill", pytest.approx(10.0, abs=0.11),
                                                                   pytest.approx(20.0, abs=0.11))
    # one send per 0.105 s (5 ms latency + 100 ms): about 95 in the 10 s window, 48 in the 5 s one
    assert w1["writes"]["invoke"] == pytest.approx(95, abs=2) and w1["writes"]["ok"] == pytest.approx(95, abs=2)
    assert w2["writes"]["ok"] == pytest.approx(48, abs=2)
    p0 = c["clients"]["p0"]
    assert p0["role"] == "producer" and len(p0["alive"]) == 1 and p0["errors"] == []
    assert c["acked_after_heal"] == {"0": pytest.approx(28, abs=2), "1": pytest.approx(28, abs=2)}
    assert c["longest_ack_gap_s"] < 0.2


def test_producer_died_at_the_first_fault_is_unknown_naming_it_and_the_window():
    h = _run(die_at=10.0)
    c = check_coverage(h.events, h.metadata)
    assert c["verdict"] == "UNKNOWN"
    text = c["shortfalls"][0]
    assert "producer p0" in text and "died" in text and "client_crash" in text
    assert "#1 kill broker:1" in text and "#2 pause controller" in text
    # no write after the heal either, and the longest ack gap reaches the end of the needed window
    assert any("after the last heal" in s for s in c["shortfalls"])
    assert c["longest_ack_gap_s"] >= 25.0
    assert c["clients"]["p0"]["alive"][0][1] == pytest.approx(10.0, abs=0.11)


def test_fatal_error_names_the_error():
    h = _run(die_at=22.0, fatal="_INCONSISTENT")
    c = check_coverage(h.events, h.metadata)
    assert c["verdict"] == "UNKNOWN"
    assert "fatal at 22.1 s: _INCONSISTENT" in c["shortfalls"][0]
    assert "#2 pause controller" in c["shortfalls"][0] and "#1 kill" not in c["shortfalls"][0]


def test_fatal_error_with_quick_recreation_is_not_a_shortfall_but_is_listed():
    h = _run(die_at=12.0, fatal="OUT_OF_ORDER_SEQUENCE_NUMBER", recreate_after=0.5)
    c = check_coverage(h.events, h.metadata)
    assert c["verdict"] == "PASS", c["reason"]
    p0 = c["clients"]["p0"]
    assert len(p0["alive"]) == 2 and p0["errors"][0]["error"] == "OUT_OF_ORDER_SEQUENCE_NUMBER"


def test_slow_recreation_is_a_shortfall():
    h = _run(die_at=12.0, fatal="OUT_OF_ORDER_SEQUENCE_NUMBER", recreate_after=4.0)
    c = check_coverage(h.events, h.metadata)
    assert c["verdict"] == "UNKNOWN" and "#1 kill" in c["shortfalls"][0]


def test_old_record_without_life_events_judged_from_its_sends():
    healthy = _run(life=False)
    assert check_coverage(healthy.events, healthy.metadata)["verdict"] == "PASS"
    stopped = _run(life=False, stop_sends_at=12.0)
    c = check_coverage(stopped.events, stopped.metadata)
    assert c["verdict"] == "UNKNOWN"
    assert "producer p0" in c["shortfalls"][0] and "no send invoked" in c["shortfalls"][0]
    assert "#1 kill" in c["shortfalls"][0]


def test_no_write_after_the_last_heal_is_a_shortfall_unless_the_scenario_needs_none():
    h = _run(write_after_heal=False)
    c = check_coverage(h.events, h.metadata)
    assert c["verdict"] == "UNKNOWN" and "after the last heal" in c["reason"]
    assert check_coverage(h.events, h.metadata, {"acked_after_heal": 0})["verdict"] == "PASS"
    h.metadata["coverage_needs"] = {"acked_after_heal": 0}       # as the runner stores a scenario's needs
    assert check_coverage(h.events, h.metadata)["verdict"] == "PASS"


def test_settle_time_is_capped_when_the_harness_stops_the_clients():
    h = _run(settle=1.0)            # the harness stops the workload 1 s after the heal: not a shortfall
    assert check_coverage(h.events, h.metadata)["verdict"] == "PASS"


def test_skipped_fault_opens_no_window_and_no_faults_needs_nothing():
    h = History(partitions=1, workload={"topic": "t", "partitions": 1})
    h.producer("p0")
    h.send("p0", 0)
    h.emit("fault.start", fault_id=1, fault="kill", target="controller", nodes=[], broker_ids=[], params={})
    h.emit("fault.end", fault_id=1, fault="kill", nodes=[], ok=False, error="skipped: no controller")
    c = check_coverage(h.events, h.metadata)
    assert c["verdict"] == "PASS" and c["windows"] == [] and "no fault" in c["reason"]


def test_unknown_need_is_an_error():
    with pytest.raises(ValueError, match="unknown coverage need"):
        check_coverage([], {}, {"producer_alive": True})
    assert set(DEFAULT_NEEDS) >= {"settle_s", "acked_after_heal", "producers_alive"}


def test_fatal_error_table():
    assert fatal_points_at("OUT_OF_ORDER_SEQUENCE_NUMBER", acked_before=10) == "broker"
    assert fatal_points_at("OUT_OF_ORDER_SEQUENCE_NUMBER", acked_before=0) == "client"
    assert fatal_points_at("UNKNOWN_PRODUCER_ID", acked_before=3) == "broker"
    assert fatal_points_at("_INCONSISTENT", acked_before=100) == "client"
    assert fatal_points_at("SOMETHING_NEW", acked_before=100) == "client"
    assert all(side in ("broker", "client") and why for side, why in FATAL_ERRORS.values())


def _txn_run(*, stall: tuple[float, float] | None = None) -> History:
    """p0 and p1 run one transaction each per second (a send on partition 0, a poll of partition 1 in
    the same transaction); c0 reads read_committed; fault #1 (10-20 s). ``stall``: no transaction of
    any producer begins or ends in that interval."""
    h = History(partitions=PARTS, workload={"kind": "txn", "topic": "t", "partitions": PARTS})
    for p in ("p0", "p1"):
        h.emit("client.life", process=p, role="producer", state="started", error=None, instance=0)
    op = 0
    while h.t < 30.0:
        if abs(h.t - 10.0) < 1e-6:
            h.emit("fault.start", fault_id=1, fault="kill", target="broker:1", nodes=["kc-x-b1"],
                   broker_ids=[1], params={})
        if abs(h.t - 20.0) < 1e-6:
            h.emit("fault.end", fault_id=1, fault="kill", nodes=["kc-x-b1"], ok=True, error=None)
        if stall is None or not (stall[0] <= h.t < stall[1]):
            for p in ("p0", "p1"):
                op += 1
                ops = [{"f": "send", "topic": "t", "partition": 0, "value": f"{p}-{op}"},
                       {"f": "poll", "topic": "t", "partition": 1, "offset": op}]
                base = {"process": p, "op_id": op, "f": "txn", "transactional_id": f"tx-{p}", "outcome": "commit"}
                h.emit("txn", phase="invoke", ops=ops, error=None, **base)
                h.emit("txn", phase="ok" if op % 5 else "info", ops=ops, error=None, **base)
            h.emit("txn.poll", process="c0", topic="t", partition=0, offset=op, value=f"p0-{op}")
        h.advance(1.0)
    h.emit("phase", name="faults.healed", residue=[], errors=[])
    h.emit("phase", name="workload.stopping", topic="t")
    return h


def test_txn_run_counts_transactions_and_transactional_reads_per_window():
    h = _txn_run()
    cov = check_coverage(h.events, h.metadata, {"acked_after_heal": 0})
    assert cov["verdict"] == "PASS", cov["reason"]
    (w,) = cov["windows"]
    # 10 s of window (10.0..19.0 inclusive of the start instant): 2 producers x 10 transactions
    assert w["txns"]["begun"] == 20
    assert w["txns"]["committed"] + w["txns"]["unsure"] == 20 and w["txns"]["unsure"] > 0
    assert w["txns"]["aborted"] == 0
    assert w["txn_reads"] == 20 + 10          # one poll per transaction + one consumer read per second
    assert w["writes"]["invoke"] == 0         # no plain sends in a transactional run


def test_txn_run_whose_producers_all_stalled_through_a_window_is_unknown():
    h = _txn_run(stall=(9.5, 20.5))
    cov = check_coverage(h.events, h.metadata, {"acked_after_heal": 0})
    assert cov["verdict"] == "UNKNOWN"
    assert any("no transaction begun or ended during #1 kill broker:1" in s for s in cov["shortfalls"])
    (w,) = cov["windows"]
    assert w["txns"] == {"begun": 0, "committed": 0, "aborted": 0, "unsure": 0}


def test_txn_run_stalled_outside_the_window_is_not_a_shortfall():
    h = _txn_run(stall=(22.0, 25.0))
    cov = check_coverage(h.events, h.metadata, {"acked_after_heal": 0})
    assert cov["verdict"] == "PASS", cov["reason"]
