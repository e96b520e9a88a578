"""The controller's writes in one form for both logs (harness/distributions/control_history.py), and what a
scenario may expect of each controller model (reference/semantics.py)."""

from __future__ import annotations

import pytest

from harness.distributions.control_history import feature_levels, from_metadata_events, from_zk_events, of_partition
from reference import semantics


def test_zk_txn_events_become_writes_in_zxid_order_after_the_marker():
    events = [
        {"type": "zk.partition_state", "zxid": 12, "topic": "t", "partition": 0, "leader": 2, "leader_epoch": 4,
         "isr": [2, 3], "version": 7},
        {"type": "zk.topic", "zxid": 11, "topic": "t", "partitions": {"0": [4, 2, 3, 1], "1": [2, 3, 1]},
         "adding_replicas": {"0": [4]}, "removing_replicas": {"0": [1]}},
        {"type": "zk.partition_state", "zxid": 9, "topic": "t", "partition": 0, "leader": 1, "leader_epoch": 3,
         "isr": [1, 2, 3], "version": 6},                                        # before the marker
        {"type": "zk.partition_state", "zxid": 13, "topic": "t", "partition": 0, "deleted": True},
        {"type": "zk.topic", "zxid": 14, "topic": "t", "deleted": True},
        {"type": "zk.broker", "zxid": 15, "broker_id": 2, "registered": False, "broker_epoch": 5},
        {"type": "zk.controller_epoch", "zxid": 16, "epoch": 3, "version": 2},
        {"type": "zk.controller", "zxid": 16, "broker_id": 1},                    # not a write kind
    ]
    w = from_zk_events(events, since=10)
    assert [(x["kind"], x["seq"]) for x in w] == [("assignment", 11), ("assignment", 11), ("state", 12),
                                                   ("topic_removed", 14), ("broker", 15), ("controller_epoch", 16)]
    assert w[0] == {"kind": "assignment", "topic": "t", "partition": 0, "seq": 11, "replicas": [4, 2, 3, 1],
                    "adding": [4], "removing": [1]}
    assert w[1]["partition"] == 1 and w[1]["adding"] == [] and w[1]["removing"] == []
    assert w[2] == {"kind": "state", "topic": "t", "partition": 0, "seq": 12, "leader": 2, "leader_epoch": 4,
                    "isr": [2, 3], "partition_epoch": 7, "leader_recovery_state": 0, "elr": [], "last_known_elr": []}
    assert w[4] == {"kind": "broker", "broker_id": 2, "broker_epoch": 5, "registered": False, "seq": 15}
    assert w[5] == {"kind": "controller_epoch", "epoch": 3, "leader_id": None, "seq": 16}
    assert [x["seq"] for x in of_partition(w, "state", "t", 0)] == [12]


def _part(offset, record, changed, **state):
    base = {"type": "meta.partition", "offset": offset, "topic": "t", "partition": 0, "topic_id": "ab",
            "leader": 1, "leader_epoch": 0, "partition_epoch": 0, "isr": [1, 2, 3], "replicas": [1, 2, 3],
            "adding": [], "removing": [], "elr": [], "last_known_elr": [], "leader_recovery_state": 0,
            "record": record, "changed": changed}
    base.update(state)
    return base


def test_metadata_records_become_the_same_writes():
    events = [
        {"type": "meta.topic", "offset": 3, "topic": "t", "topic_id": "ab"},
        _part(4, "PartitionRecord", []),
        # a reassignment start: replicas only -> an assignment write, no state write
        _part(7, "PartitionChangeRecord", ["replicas", "addingReplicas", "removingReplicas"],
              replicas=[4, 2, 3, 1], adding=[4], removing=[1], partition_epoch=1),
        # the completion: replicas, ISR and leader in one record -> both, same seq
        _part(9, "PartitionChangeRecord", ["leader", "isr", "replicas"], replicas=[4, 2, 3], isr=[2, 3, 4],
              leader=2, leader_epoch=1, partition_epoch=2),
        {"type": "meta.broker", "offset": 10, "broker_id": 4, "broker_epoch": 10, "fenced": True,
         "registered": True, "record": "RegisterBrokerRecord"},
        {"type": "meta.broker", "offset": 11, "broker_id": 4, "broker_epoch": 10, "fenced": False,
         "registered": True, "record": "UnfenceBrokerRecord"},                   # not a registration
        {"type": "meta.leader_change", "offset": 12, "raft_epoch": 5, "leader_id": 2, "voters": [1, 2, 3]},
        {"type": "meta.topic_removed", "offset": 13, "topic": "t", "topic_id": "ab"},
    ]
    w = from_metadata_events(events, since=3)
    assert [(x["kind"], x["seq"]) for x in w] == [
        ("state", 4), ("assignment", 4), ("assignment", 7), ("state", 9), ("assignment", 9), ("broker", 10),
        ("fence", 11), ("controller_epoch", 12), ("topic_removed", 13)]
    assert w[2] == {"kind": "assignment", "topic": "t", "partition": 0, "seq": 7, "replicas": [4, 2, 3, 1],
                    "adding": [4], "removing": [1]}
    assert w[3]["leader"] == 2 and w[3]["leader_epoch"] == 1 and w[3]["partition_epoch"] == 2
    assert w[5] == {"kind": "broker", "broker_id": 4, "broker_epoch": 10, "registered": True, "seq": 10}
    assert w[6] == {"kind": "fence", "broker_id": 4, "broker_epoch": 10, "fenced": False, "seq": 11}
    assert w[7] == {"kind": "controller_epoch", "epoch": 5, "leader_id": 2, "seq": 12}
    assert from_metadata_events(events, since=12) == [{"kind": "topic_removed", "topic": "t", "seq": 13}]
    assert feature_levels(w) == {} and feature_levels(from_zk_events([], 0)) == {}


def test_elr_recovery_state_and_feature_writes():
    """KRaft §9.5: a record that only moves the last ISR member out of the ELR, or only marks the leader
    RECOVERED, is a state write too (it carries the ELR and the leader recovery state); feature levels
    are writes the scenarios fold with feature_levels (the last level of each feature wins)."""
    events = [
        {"type": "meta.feature", "offset": 1, "name": "metadata.version", "level": 21},
        {"type": "meta.feature", "offset": 2, "name": "eligible.leader.replicas.version", "level": 1},
        _part(4, "PartitionRecord", [], replicas=[3, 4, 5], isr=[3, 4, 5], leader=3),
        _part(8, "PartitionChangeRecord", ["leader", "isr", "elr", "last_known_elr"], replicas=[3, 4, 5], isr=[],
              leader=-1, leader_epoch=1, elr=[3], last_known_elr=[3]),
        _part(9, "PartitionChangeRecord", ["elr"], replicas=[3, 4, 5], isr=[], leader=-1, leader_epoch=1,
              last_known_elr=[3]),                                          # unclean restart: out of the ELR
        _part(10, "PartitionChangeRecord", ["leader", "isr", "leader_recovery_state", "last_known_elr"],
              replicas=[3, 4, 5], isr=[3], leader=3, leader_epoch=2, leader_recovery_state=1),
        _part(12, "PartitionChangeRecord", ["leader_recovery_state"], replicas=[3, 4, 5], isr=[3], leader=3,
              leader_epoch=2),                                               # RECOVERED by the leader
        {"type": "meta.feature", "offset": 13, "name": "metadata.version", "level": 22},
    ]
    w = from_metadata_events(events, since=-1)
    st = of_partition(w, "state", "t", 0)
    assert [(x["seq"], x["leader"], x["isr"], x["elr"], x["last_known_elr"], x["leader_recovery_state"]) for x in st] == [
        (4, 3, [3, 4, 5], [], [], 0), (8, -1, [], [3], [3], 0), (9, -1, [], [], [3], 0), (10, 3, [3], [], [], 1),
        (12, 3, [3], [], [], 0)]
    assert feature_levels(w) == {"metadata.version": 22, "eligible.leader.replicas.version": 1}
    zk = from_zk_events([{"type": "zk.partition_state", "zxid": 5, "topic": "t", "partition": 0, "leader": 4,
                          "leader_epoch": 3, "isr": [4], "version": 2, "leader_recovery_state": 1}])
    assert zk[0]["leader_recovery_state"] == 1 and zk[0]["elr"] == [] and feature_levels(zk) == {}


def _broker(offset, record, fenced, **kw):
    return {"type": "meta.broker", "offset": offset, "broker_id": 4, "broker_epoch": 10, "fenced": fenced,
            "registered": True, "in_controlled_shutdown": False, "record": record, **kw}


def test_fencing_writes_follow_the_fenced_flag_across_the_marker():
    events = [
        _broker(10, "RegisterBrokerRecord", True),                  # registers fenced: a broker write
        _broker(11, "BrokerRegistrationChangeRecord", False),       # unfenced (before the marker)
        _broker(20, "BrokerRegistrationChangeRecord", False),       # no change of the flag: not a fencing
        _broker(21, "FenceBrokerRecord", True),                     # session expired (§9.3)
        _broker(25, "BrokerRegistrationChangeRecord", False),       # caught up again
        _broker(30, "UnregisterBrokerRecord", None, registered=False),
    ]
    w = [x for x in from_metadata_events(events, since=15) if x["kind"] == "fence"]
    assert [(x["seq"], x["fenced"]) for x in w] == [(21, True), (25, False)]
    assert [(x["seq"], x["fenced"]) for x in from_metadata_events(events, since=-1) if x["kind"] == "fence"] == [
        (11, False), (21, True), (25, False)]


def test_semantics_per_controller_model():
    zk, kr = semantics.for_model("zk"), semantics.for_model("kraft")
    # §7.1 U1 keeps ORS order; §9.6 sorts the replicas being removed
    assert zk.reassignment_start([3, 1, 2], [4, 1]) == ([4, 1, 3, 2], [4], [3, 2])
    assert kr.reassignment_start([3, 1, 2], [4, 1]) == ([4, 1, 2, 3], [4], [2, 3])
    # §7.5: A1 + B3 + one per removed ISR member; §9.2: one when a replica is removed, else none
    assert zk.reassignment_bumps([1, 2, 3], [4, 2, 3])[0] == 3
    assert zk.reassignment_bumps([2, 3, 1], [1, 2, 3])[0] == 1          # pure reorder: B3 only
    assert kr.reassignment_bumps([1, 2, 3], [4, 2, 3])[0] == 1
    assert kr.reassignment_bumps([2, 3, 1], [1, 2, 3])[0] == 0
    assert zk.reassignment_start_bumps([1, 2, 3], [4, 2, 3])[0] == 1 and kr.reassignment_start_bumps([1, 2, 3], [4, 2, 3])[0] == 0
    assert zk.reassignment_leader(5, [1, 2]) == 1 and kr.reassignment_leader(5, [1, 2]) is None
    assert zk.reassignment_leader(2, [1, 2]) == kr.reassignment_leader(2, [1, 2]) == 2
    # §7.7: ZK resumes an in-flight reassignment with A1 at each target broker's startup; KRaft writes nothing then
    assert zk.reassignment_resume_bumps(1)[0] == 1 and zk.reassignment_resume_bumps(2)[0] == 2
    assert kr.reassignment_resume_bumps(1)[0] == 0
    # kill_broker_mid [1,2,3] → [1,3,4]: ZK A1 + B3 + B4(2) + election + resume = 5; KRaft completion + election = 2
    assert zk.reassignment_bumps([1, 2, 3], [1, 3, 4])[0] + 1 + zk.reassignment_resume_bumps(1)[0] == 5
    assert kr.reassignment_bumps([1, 2, 3], [1, 3, 4])[0] + 1 + kr.reassignment_resume_bumps(1)[0] == 2
    # §7.3 (KafkaController.validateReplicas): adding replicas live; §9.6 (validateManualPartitionAssignment):
    # registered, fenced or not. A killed broker: ZK loses its ephemeral registration, KRaft keeps it (fenced)
    assert not zk.killed_broker_registered and kr.killed_broker_registered
    assert not zk.reassignment_accepts_target(registered=zk.killed_broker_registered, alive=False)
    assert kr.reassignment_accepts_target(registered=kr.killed_broker_registered, alive=False)
    assert not zk.reassignment_accepts_target(registered=False, alive=False)
    assert not kr.reassignment_accepts_target(registered=False, alive=False)
    assert zk.reassignment_accepts_target(True, True) and kr.reassignment_accepts_target(True, True)
    # §2.5 (ZK): a new controller rewrites partitions; §9.9 (KRaft): it replays the log and rewrites none
    assert zk.failover_rewrites_partitions and not kr.failover_rewrites_partitions
    assert zk.controller_epoch_ok(4, 5) and not zk.controller_epoch_ok(4, 6) and not zk.controller_epoch_ok(4, None)
    assert kr.controller_epoch_ok(4, 6) and not kr.controller_epoch_ok(4, 4)
    assert zk.deletion_waits_for_replicas and zk.deletion_writes_leaderless
    assert not kr.deletion_waits_for_replicas and not kr.deletion_writes_leaderless
    # leaderless partitions, returning replicas, ISR shrinks (§4.9, §9.2, §9.5), from the feature levels
    elr = {"metadata.version": 22, "eligible.leader.replicas.version": 1}
    no_elr = {"metadata.version": 21}                                   # 3.9-IV0: no such feature
    assert zk.leaderless_state(5, elr) == kr.leaderless_state(5, no_elr) == {"leader": -1, "isr": [5], "elr": []}
    assert kr.leaderless_state(5, elr) == {"leader": -1, "isr": [], "elr": [5]}
    assert not zk.elr_enabled(elr) and kr.elr_enabled(elr) and not kr.elr_enabled({})
    assert kr.last_isr_member_return(elr)[0] and not kr.last_isr_member_return(no_elr)[0]
    assert not zk.last_isr_member_return(elr)[0]
    assert zk.controller_isr_shrink_bumps({}) and zk.controller_isr_shrink_bumps(elr)
    assert not kr.controller_isr_shrink_bumps(no_elr) and kr.controller_isr_shrink_bumps({"metadata.version": 11})
    assert zk.unclean_marks_recovering("3.9.2") and not zk.unclean_marks_recovering("2.8.2")
    assert kr.unclean_marks_recovering(None)
    with pytest.raises(ValueError, match="unknown controller model 'raft'"):
        semantics.for_model("raft")


def test_reassignment_completion_rule_per_model_and_version():
    """§7.4/§7.6 and KRaft until 4.2: the whole target in the ISR; KRaft from 4.3 (KAFKA-19975): the
    adding replicas, unless fewer are added than removed. kill_broker_mid: RS [1,3,4,2], AR [4], RR [2],
    broker 1 (target, not adding) dead: ISR [3,4,2]."""
    zk, kr = semantics.for_model("zk"), semantics.for_model("kraft")
    rs, ar, rr, isr = [1, 3, 4, 2], [4], [2], [3, 4, 2]
    assert zk.reassignment_completes(rs, ar, rr, isr, "3.9.2")[:2] == (False, [3, 4])
    assert kr.reassignment_completes(rs, ar, rr, isr, "4.2.0")[:2] == (False, [3, 4])
    assert kr.reassignment_completes(rs, ar, rr, isr, "4.3.0")[:2] == (True, [3, 4])
    assert kr.reassignment_completes(rs, ar, rr, isr, "4.4.0")[:2] == (True, [3, 4])
    assert kr.reassignment_completes(rs, ar, rr, isr, None)[0] is None          # a foreign image: either
    # the whole target in the ISR completes in every model and version; an adding replica out of it never
    for v in ("3.9.2", "4.1.2", "4.4.0", None):
        assert kr.reassignment_completes(rs, ar, rr, [1, 3, 4, 2], v)[:2] == (True, [1, 3, 4])
        assert kr.reassignment_completes(rs, ar, rr, [1, 3, 2], v)[0] is False
    assert zk.reassignment_completes(rs, ar, rr, [1, 3, 4, 2], "3.9.2")[0] is True
    # a smaller target (RF 3 -> 2: nothing added, 2 removed): from 4.3 too the whole target must be in it
    assert kr.reassignment_completes([1, 3, 2], [], [2], [3, 2], "4.4.0")[0] is False
    assert kr.reassignment_completes([1, 3, 2], [], [2], [1, 3, 2], "4.4.0")[:2] == (True, [1, 3])
    # a target that keeps its size with a dead old member: 4.3+ completes, 4.2 waits
    assert kr.reassignment_completes([1, 2, 3, 4], [4], [], [2, 3, 4], "4.4.0")[0] is True
    assert kr.reassignment_completes([1, 2, 3, 4], [4], [], [2, 3, 4], "4.2.0")[0] is False


def test_controller_only_failover_may_move_only_partitions_of_a_fenced_leader():
    """network.isolate_controller on a dedicated quorum (§9.9): leaders and epochs unchanged, except
    where the new active controller fenced the leader (§9.3; seen on 4.4.0 under load: broker 3 fenced
    9.0 s after the new controller's activation, its leaderships moved)."""
    from suites.scenarios.network import unmoved_unless_fenced

    def st(leader, le):
        return {"leader": leader, "leader_epoch": le}
    before = {0: st(3, 0), 1: st(1, 0), 2: st(2, 0)}
    moved_off_3 = {0: st(1, 1), 1: st(1, 0), 2: st(2, 0)}
    fence_3 = [{"kind": "fence", "broker_id": 3, "broker_epoch": 22, "fenced": True, "seq": 74},
               {"kind": "fence", "broker_id": 3, "broker_epoch": 22, "fenced": False, "seq": 76}]
    assert unmoved_unless_fenced(before, before, [])[0]
    assert not unmoved_unless_fenced(before, moved_off_3, [])[0]                 # nobody fenced: a FAIL
    ok, detail = unmoved_unless_fenced(before, moved_off_3, fence_3)
    assert ok and detail["fenced"] == [3] and detail["judged"] == [1, 2]
    # a fenced broker excuses only its own leaderships, and an unfence alone excuses nothing
    assert not unmoved_unless_fenced(before, {**moved_off_3, 1: st(2, 1)}, fence_3)[0]
    assert not unmoved_unless_fenced(before, moved_off_3, fence_3[1:])[0]
