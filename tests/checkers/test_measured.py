"""Measured facts (harness/checkers/measured.py) on fabricated histories with known timings."""

from __future__ import annotations

import re

from harness.checkers.coverage import check_coverage
from harness.checkers.measured import measure
from tests.checkers.synthetic import History


def _history(*, assign_at: float | None = 3.0, outage: tuple[float, float] = (12.0, 18.5)) -> History:
    """p0 writes partitions 0 and 1 every 0.1 s from 0.5 s to 30 s; partition 0 gets no acknowledgement
    during ``outage``; a kill fault runs 10-20 s. c0 subscribes at 1 s and is assigned at ``assign_at``."""
    h = History(partitions=2, workload={"acks": "all", "topic": "t", "partitions": 2})
    h.producer("p0", acks="all")
    h.consumer("c0", mode="subscribe")
    h.emit("client.life", process="p0", role="producer", state="started", error=None, instance=0)
    h.advance(0.5)
    fault, started, assigned, read = None, False, False, False
    while h.t < 30.0:
        if fault is None and h.t >= 10.0:
            fault = h.fault("kill", "leader(t,0)")
        if fault is not None and fault > 0 and h.t >= 20.0:
            h.heal(fault, "kill")
            fault = -1
        if not started and h.t >= 1.0:
            started = h.emit("client.life", process="c0", role="consumer", state="started", error=None,
                             mode="subscribe")["t"]
        if assign_at is not None and not assigned and h.t >= assign_at:
            assigned = h.emit("client.assign", process="c0", partitions=[["t", 0], ["t", 1]])["t"]
        if assigned and not read and h.t >= assign_at + 0.3:
            h.poll("c0", 0, 0)
            read = True
        for p in (0, 1):
            if p == 0 and outage[0] <= h.t < outage[1]:
                continue
            h.send("p0", p)
        h.advance(0.1)
    return h


def test_the_facts_are_the_known_timings():
    m = measure(_history().events)
    c0, p0 = m["clients"]["c0"], m["clients"]["p0"]
    assert abs(c0["group_join_s"] - 2.0) < 0.06, c0
    assert abs(c0["first_read_s"] - 2.3) < 0.06, c0
    assert c0["first_ack_s"] is None and p0["group_join_s"] is None
    assert abs(p0["first_ack_s"] - 0.5) < 0.06, p0          # the first send's acknowledgement
    [w] = m["windows"]
    assert (w["fault"], w["target"], w["partition"]) == ("kill", "leader(t,0)", 0)
    assert abs(w["unavailable_s"] - 6.6) < 0.06, w         # last ack ~11.9 s, next ~18.5 s
    assert m["unavailable_s"] == w["unavailable_s"] and m["group_join_s"] == c0["group_join_s"]
    assert m["notes"] == []


def test_a_gap_outside_every_fault_window_is_not_unavailability_under_fault():
    m = measure(_history(outage=(22.0, 26.0)).events)
    assert m["windows"][0]["unavailable_s"] < 0.5, m["windows"]


def test_a_partition_never_acknowledged_again_is_unavailable_to_the_end_of_the_run():
    h = _history(outage=(12.0, 99.0))
    end = h.events[-1]["t"]
    w = measure(h.events)["windows"][0]
    assert w["partition"] == 0 and abs(w["unavailable_s"] - (end - 11.9)) < 0.06, (w, end)


def test_a_consumer_never_assigned_is_named_and_the_coverage_reason_says_so():
    h = _history(assign_at=None)
    m = measure(h.events)
    assert m["clients"]["c0"]["group_join_s"] is None and m["group_join_s"] is None
    assert len(m["notes"]) == 1 and re.fullmatch(
        r"consumer c0 subscribed at 1\.\d s and got no partition assignment by the end of the run \(30\.\d s\): "
        r"its group join \(JoinGroup/SyncGroup\) never completed", m["notes"][0]), m["notes"]
    cov = check_coverage(h.events, h.metadata)
    assert cov["measured"] == m
    assert "; note: " + m["notes"][0] in cov["reason"], cov["reason"]


def test_an_assigning_consumer_has_no_note():
    cov = check_coverage(_history().events, _history().metadata)
    assert "note:" not in cov["reason"] and cov["measured"]["notes"] == []


def test_leader_change_time_from_each_observation_source():
    """The leader of t-0 was broker 1, killed at t=10: ZooKeeper's state names broker 2 at 16.5, so
    6.5 s; a Metadata sample saying the same at 17 changes nothing (the earliest counts). t-1, led by
    broker 3, is not the fault's. The KRaft metadata log's append time is placed in run time through
    the run's wall clock."""
    wall0 = 1_700_000_000.0
    def ev(t, typ, **f):
        return {"t": t, "wall": wall0 + t, "type": typ, **f}
    events = [
        ev(1.0, "zk.partition_state", topic="t", partition=0, leader=1, isr=[1, 2, 3]),
        ev(1.0, "zk.partition_state", topic="t", partition=1, leader=3, isr=[1, 2, 3]),
        ev(10.0, "fault.start", fault_id=1, fault="kill", target="leader(t,0)", broker_ids=[1]),
        ev(12.0, "zk.partition_state", topic="t", partition=0, leader=-1, isr=[1]),
        ev(16.5, "zk.partition_state", topic="t", partition=0, leader=2, isr=[2, 3]),
        ev(17.0, "admin.metadata", partitions=[{"topic": "t", "partition": 0, "leader": 2, "error": None}]),
        ev(20.0, "fault.end", fault_id=1, ok=True, error=None),
        ev(30.0, "fault.start", fault_id=2, fault="pause", target="broker 2", broker_ids=[2]),
        ev(35.0, "fault.end", fault_id=2, ok=True, error=None),
    ]
    m = measure(events)
    w1, w2 = m["windows"]
    assert (w1["leader_change_s"], w1["leaders_moved"], w1["leaders_kept"]) == (6.5, 1, 0)
    assert (w2["leader_change_s"], w2["leaders_moved"], w2["leaders_kept"]) == (None, 0, 1)   # kept its leader
    assert m["leader_change_s"] == 6.5
    # KRaft: no ZooKeeper, the metadata log says broker 3 took over 4.25 s after the fault
    kraft = [e for e in events if e["type"] in ("fault.start", "fault.end")] + [
        ev(2.0, "admin.metadata", partitions=[{"topic": "t", "partition": 0, "leader": 1, "error": None}]),
        ev(40.0, "meta.partition", topic="t", partition=0, leader=3, time_ms=int((wall0 + 14.25) * 1000))]
    kraft.sort(key=lambda e: e["t"])
    assert measure(kraft)["windows"][0]["leader_change_s"] == 4.25
