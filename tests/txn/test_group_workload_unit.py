"""The consumer-group workload without a broker: librdkafka's serialized group metadata (where the
generation comes from), the configuration and the workload kind the runner picks, the verdict's use
of the groups checker, and the coverage need ``committed_txns``."""

from __future__ import annotations

import struct
import threading
import time

import pytest

from harness.checkers.coverage import check_coverage
from harness.checkers.verdict import decide
from harness.errors import HarnessError
from harness.workload import GroupWorkload, GroupWorkloadConfig, make_workload
from harness.workload.groups import parse_group_metadata


def test_group_metadata_blob():
    blob = b"CGMDv2:" + struct.pack("=i", 7) + b"kc-g-grp\x00rdkafka-1234\x00\x01"
    assert parse_group_metadata(blob) == {"generation": 7, "group": "kc-g-grp", "member_id": "rdkafka-1234"}
    # not joined yet: generation -1, no member id (what confluent-kafka 2.16 returns before the first join)
    assert parse_group_metadata(b"CGMDv2:\xff\xff\xff\xffgX\x00\x00\x01") == {
        "generation": None, "group": "gX", "member_id": None}
    assert parse_group_metadata(b"something else")["generation"] is None
    assert parse_group_metadata(None)["generation"] is None


def test_config_and_kind():
    w = make_workload("127.0.0.1:1", {"kind": "group", "topic": "grp", "partitions": 6, "members": 3,
                                       "static": True}, lambda *a, **k: None)
    assert isinstance(w, GroupWorkload)
    assert [c.name for c in w.consumers] == ["m0", "m1", "m2"] and [p.name for p in w.producers] == ["p0"]
    assert w.consumers[1].settings["group.instance.id"] == "m1"
    assert w.consumers[0].settings["group.id"] == "kc-g-grp" and not w.consumers[0].settings["enable.auto.commit"]
    md = w.config.to_metadata()
    assert md["kind"] == "group" and md["group_id"] == "kc-g-grp" and md["partitions"] == list(range(6))
    k = make_workload("127.0.0.1:1", {"kind": "group", "topic": "grp", "group_protocol": "consumer"},
                      lambda *a, **k: None)
    s = k.consumers[0].settings
    assert s["group.protocol"] == "consumer" and "session.timeout.ms" not in s   # the broker owns it (KIP-848)
    with pytest.raises(ValueError, match="group_protocol"):
        GroupWorkloadConfig(topic="grp", group_protocol="eager")


def _group_record(regress: bool):
    ev, t = [], [0.0]

    def e(type_, **f):
        t[0] += 0.01
        ev.append({"seq": len(ev), "t": round(t[0], 6), "type": type_, **f})

    for off in range(6):
        e("client", process="p0", f="send", phase="ok", op_id=off, topic="grp", partition=0, offset=off,
          value=f"p0-{off}")
    e("group.assign", process="m0", group="g", generation=1, member_id="a", protocol="classic",
      partitions=[["grp", 0]])
    for off in range(4):
        e("group.poll", process="m0", group="g", generation=1, topic="grp", partition=0, offset=off, value=f"p0-{off}")
    e("group.commit", process="m0", group="g", generation=1, op_id=1, phase="invoke", topic="grp", partition=0,
      offset=4, error=None)
    e("group.commit", process="m0", group="g", generation=1, op_id=1, phase="ok", topic="grp", partition=0,
      offset=4, error=None)
    e("group.revoke", process="m0", group="g", generation=1, partitions=[["grp", 0]], lost=False)
    e("group.assign", process="m1", group="g", generation=2, member_id="b", protocol="classic",
      partitions=[["grp", 0]])
    for off in (range(1, 6) if regress else range(4, 6)):
        e("group.poll", process="m1", group="g", generation=2, topic="grp", partition=0, offset=off, value=f"p0-{off}")
    e("phase", name="run.end")
    meta = {"checks": ["groups"], "record": {"end_marker": True}, "broker_config": {},
            "topics": [{"name": "grp", "partitions": 1, "replication_factor": 3, "config": {}}],
            "workload": {"kind": "group", "topic": "grp", "partitions": [0]}}
    return ev, meta


def test_decide_runs_the_groups_checker_for_a_group_workload():
    v = decide(*_group_record(False))
    assert v.checks["groups"]["applicable"] and v.checks["groups"]["verdict"] == "PASS"
    v = decide(*_group_record(True))
    assert v.verdict == "FAIL" and "offset-regression" in v.reason


def test_coverage_counts_transactions_against_the_need():
    def txn(op, phase, outcome, parts):
        return {"type": "txn", "t": float(op), "process": "p0", "op_id": op, "phase": phase, "outcome": outcome,
                "ops": [{"f": "send", "topic": "t", "partition": p, "value": f"v{op}-{p}", "offset": op}
                        for p in parts]}
    evs = [txn(1, "ok", "commit", [0, 1]), txn(2, "ok", "commit", [0, 1, 2]), txn(3, "ok", "abort", [0, 1]),
           txn(4, "info", "commit", [1, 2])]
    meta = {"workload": {"kind": "txn", "topic": "t", "partitions": [0, 1, 2]}}
    r = check_coverage(evs, meta, {"committed_txns": 2, "acked_after_heal": 0})
    assert r["verdict"] == "PASS"
    assert r["transactions"] == {"committed": 2, "aborted": 1, "unsure": 1, "min_partitions": 2}
    r = check_coverage(evs, meta, {"committed_txns": 3, "acked_after_heal": 0})
    assert r["verdict"] == "UNKNOWN" and "2 transactions committed; the run needs at least 3" in r["reason"]


def test_the_group_is_formed_once_every_member_was_assigned_and_committed():
    w = make_workload("127.0.0.1:1", {"kind": "group", "topic": "grp", "partitions": 6, "members": 3},
                      lambda *a, **k: None)
    assert not w.formed()
    for c in w.consumers:
        c.assigned = True
    assert not w.formed()                     # assigned, nothing committed yet
    for c in w.consumers[:2]:
        c.commits = 1
    assert not w.formed()
    w.consumers[2].commits = 1
    assert w.formed()
    w.consumers[1].error = "client_crash: ended abruptly by the nemesis"
    with pytest.raises(HarnessError, match="group member m1 ended before the group formed: client_crash"):
        w.formed()                            # a wait that cannot succeed is the harness's, never a FAIL


def test_the_formation_bound_comes_from_the_brokers_group_settings():
    classic = make_workload("127.0.0.1:1", {"kind": "group", "topic": "grp", "session_timeout_ms": 10_000},
                            lambda *a, **k: None)
    assert classic.formation_bound_s({"group.initial.rebalance.delay.ms": "0"}) == 40.0
    assert classic.formation_bound_s({}) == 43.0                     # Kafka's default delay: 3 s
    kip848 = make_workload("127.0.0.1:1", {"kind": "group", "topic": "grp", "group_protocol": "consumer"},
                           lambda *a, **k: None)
    assert kip848.formation_bound_s({"group.initial.rebalance.delay.ms": "0",
                                     "group.consumer.session.timeout.ms": "10000"}) == 40.0
    assert kip848.formation_bound_s({}) == 78.0                      # defaults: 3 s + 45 s


def test_taken_over_needs_the_member_ended_every_partition_owned_and_fresh_commits():
    """What groups.member_kill waits for instead of a fixed 30 s (threads never started here: the
    fields their callbacks set are set by hand)."""
    w = make_workload("127.0.0.1:1", {"kind": "group", "topic": "grp", "partitions": 6, "members": 3},
                      lambda *a, **k: None)
    m0, m1, m2 = w.consumers
    assert not w.taken_over("m1")                  # nobody owns anything (m1's thread never ran)
    m0.owned_now, m2.owned_now = frozenset({0, 1, 2}), frozenset({3, 4})
    m0.commits_at_assign = m2.commits_at_assign = 4
    m0.commits, m2.commits = 5, 5
    assert not w.taken_over("m1")                  # partition 5 has no owner yet
    m2.owned_now = frozenset({3, 4, 5})
    assert w.taken_over("m1")
    m2.commits = 4
    assert not w.taken_over("m1")                  # m2 has not committed since its new assignment
    m2.commits = 6
    m1.thread = threading.Thread(target=lambda: time.sleep(0.3))
    m1.thread.start()
    assert not w.taken_over("m1")                  # m1 still running
    m1.thread.join()
    assert w.taken_over("m1")
    m0.error = "KafkaException: boom"
    with pytest.raises(HarnessError, match="m0 ended while the group took over from m1"):
        w.taken_over("m1")
    with pytest.raises(LookupError):
        w.taken_over("m7")
