"""Checker tests on hand-written run-record histories: correct sequences pass, each injected
violation is reported with the right rule id, under the right profile."""

import json

import pytest

from reference import check_conformance, profile_for
from reference_helpers import History, started_history

APACHE = "apache-zk-3.9"
COMPAT = "compatible"


def check(h, profile=APACHE, metadata=None):
    return check_conformance(h.events, metadata or {}, profile)


def assert_pass(h, profile=APACHE, metadata=None):
    r = check(h, profile, metadata)
    assert r.verdict == "PASS", [str(d) for d in r.divergences + r.invariant_violations]
    return r


def assert_rule(h, rule, profile=APACHE, metadata=None):
    r = check(h, profile, metadata)
    assert r.verdict == "FAIL"
    assert rule in r.rules(), [str(d) for d in r.divergences + r.invariant_violations]
    return r


def kill_leader(h, leader=1, new_leader=2, isr=(2, 3), le=1, version=1):
    h.fault("kill", [leader])
    h.broker(leader, up=False)
    h.state("t", 0, new_leader, le, isr, version)
    return h


# -- correct histories ------------------------------------------------------------------------------
@pytest.mark.parametrize("profile", [APACHE, COMPAT, "apache-zk-2.8"])
def test_clean_leader_kill_passes(profile):
    h = kill_leader(started_history())
    r = assert_pass(h, profile)
    assert r.stats["controller_writes"] == 1 and r.stats["elections"] == 1


def test_killed_broker_is_live_until_its_znode_goes_h19_tolerance():
    h = started_history()
    h.fault("kill", [2])                                   # 2 killed, but the session has not expired yet
    h.fault("kill", [1])
    h.broker(1, up=False)
    h.state("t", 0, 2, 1, (2, 3), 1)                       # electing 2 is legal: still registered
    h.broker(2, up=False)
    h.state("t", 0, 3, 2, (3,), 2)
    assert_pass(h)


def test_controller_view_may_lag_behind_broker_changes():
    h = started_history(brokers=(1, 2, 3, 4), controller=4)
    h.broker(1, up=False)
    h.broker(2, up=False)                                  # controller still processing the first change
    h.state("t", 0, 2, 1, (2, 3), 1)                       # election in the view where only 1 is gone
    h.state("t", 0, 3, 2, (3,), 2)                         # then the second change
    assert_pass(h)


def test_follower_removal_then_leader_isr_change_passes():
    h = started_history()
    h.broker(3, up=False).state("t", 0, 1, 1, (1, 2), 1)
    h.broker(3).state("t", 0, 1, 1, (1, 2, 3), 2)         # leader re-adds 3 (AlterPartition, same LE)
    h.state("t", 0, 1, 1, (1, 3), 3)                       # leader shrinks 2 away (timing nondeterministic)
    assert_pass(h)


def test_d12_failover_minus_one_then_election_passes():
    h = started_history(controller=1)
    h.broker(1, up=False).controller_gone()
    h.controller(2, 2)
    h.state("t", 0, -1, 1, (2, 3), 1, ce=2)
    h.state("t", 0, 2, 2, (2, 3), 2, ce=2)
    assert_pass(h)


def test_unclean_election_when_enabled_passes():
    h = started_history(brokers=(1, 2, 3, 4), controller=4)
    h.broker(1, up=False).state("t", 0, 2, 1, (2, 3), 1)
    h.broker(2, up=False).state("t", 0, 3, 2, (3,), 2)
    h.broker(3, up=False).state("t", 0, -1, 3, (3,), 3)
    h.broker(1)
    h.action("set_config", topic="t", config={"unclean.leader.election.enable": "true"})
    h.state("t", 0, 1, 4, (1,), 4, rec=1)
    assert_pass(h)


def test_controlled_shutdown_passes_with_graceful_stop():
    h = started_history()
    h.fault("stop", [1])
    h.state("t", 0, 2, 1, (2, 3), 1)                       # 1 shutting down: leadership moved, ISR -= 1
    h.broker(1, up=False)
    assert_pass(h)


def test_reassignment_worked_example_passes():
    h = started_history(brokers=(1, 2, 3, 4, 5, 6), controller=6)
    h.action("reassign", partitions=[{"topic": "t", "partition": 0, "replicas": [4, 5, 6]}])
    h.topic("t", {0: [4, 5, 6, 1, 2, 3]}, adding={0: [4, 5, 6]}, removing={0: [1, 2, 3]}, version=1)
    h.state("t", 0, 1, 1, (1, 2, 3), 1)                               # A1
    h.state("t", 0, 1, 1, (1, 2, 3, 4), 2)
    h.state("t", 0, 1, 1, (1, 2, 3, 4, 5), 3)
    h.state("t", 0, 1, 1, (1, 2, 3, 4, 5, 6), 4)
    h.state("t", 0, 4, 2, (1, 2, 3, 4, 5, 6), 5)                      # B3
    h.state("t", 0, 4, 3, (2, 3, 4, 5, 6), 6)                         # B4 x3
    h.state("t", 0, 4, 4, (2, 4, 5, 6), 7)
    h.state("t", 0, 4, 5, (4, 5, 6), 8)
    h.topic("t", {0: [4, 5, 6]}, version=2)                           # B6
    assert_pass(h)
    assert_pass(h, COMPAT)


def test_topic_deletion_passes_and_old_versions_without_new_fields():
    h = History()
    for b in (1, 2, 3):
        h.broker(b)
    h._add("zk.controller", broker_id=1)
    h._add("zk.controller_epoch", same_txn=True, epoch=1, version=1)
    h._add("zk.topic", topic="t", partitions={"0": [1, 2, 3]}, version=0, deleted=False)   # 2.3: v1 znode
    h._add("zk.partition_state", topic="t", partition=0, leader=1, leader_epoch=0, isr=[1, 2, 3],
           controller_epoch=1, version=0, deleted=False)                                    # no recovery field
    h.delete_marker(["t"])
    for le, (leader, isr) in enumerate([(1, [1, 3]), (-1, [3]), (-1, [3])], start=1):
        h._add("zk.partition_state", topic="t", partition=0, leader=leader, leader_epoch=le, isr=isr,
               controller_epoch=1, version=le, deleted=False)
    h._add("zk.partition_state", topic="t", partition=0, leader=-1, leader_epoch=-1, isr=[],
           controller_epoch=-1, version=-1, deleted=True)
    h._add("zk.topic", topic="t", partitions={}, version=0, deleted=True)
    h.delete_marker([])
    for profile in ("apache-zk-2.3", "apache-zk-2.1", COMPAT):
        assert_pass(h, profile)


def test_watch_and_txnlog_duplicates_are_merged():
    h = kill_leader(started_history())
    dup = dict(h.events[-1], seq=len(h.events), source="watch")
    h.events.append(dup)
    assert_pass(h)


# -- injected hard-invariant violations -------------------------------------------------------------------
@pytest.mark.parametrize("profile", [APACHE, COMPAT])
def test_leader_not_in_isr_h5(profile):
    h = started_history()
    h.broker(1, up=False).state("t", 0, 2, 1, (3,), 1)
    assert_rule(h, "H5", profile)


@pytest.mark.parametrize("profile", [APACHE, COMPAT])
def test_leader_epoch_going_backwards_h3(profile):
    h = kill_leader(started_history())
    h.state("t", 0, 2, 0, (2, 3), 2)
    assert_rule(h, "H3", profile)


@pytest.mark.parametrize("profile", [APACHE, COMPAT])
def test_two_leaders_in_one_epoch_h4(profile):
    h = kill_leader(started_history())
    h.state("t", 0, 3, 1, (2, 3), 2)
    assert_rule(h, "H4", profile)


@pytest.mark.parametrize("profile", [APACHE, COMPAT])
def test_election_of_broker_whose_znode_was_gone_h19(profile):
    h = started_history(brokers=(1, 2, 3), controller=3, rs=(1, 2, 3))
    h.topic("u", {0: [2, 3]}).state("u", 0, 2, 0, (2, 3), 0)
    h.broker(2, up=False)
    h.state("u", 0, 3, 1, (3,), 1)                 # the controller processed 2's death here ...
    h.broker(1, up=False)
    h.state("t", 0, 2, 1, (2, 3), 1)               # ... so electing 2 afterwards is fencing violation
    r = assert_rule(h, "H19", profile)
    d = [d for d in r.invariant_violations if d.rule == "H19"][0]
    assert d.subject == "t-0" and d.after["leader"] == 2 and d.seq == len(h.events) - 1


@pytest.mark.parametrize("profile", [APACHE, COMPAT])
def test_controller_epoch_regression_h1(profile):
    h = kill_leader(started_history())
    h.controller_gone()
    h._add("zk.controller", broker_id=2)
    h._add("zk.controller_epoch", same_txn=True, epoch=0, version=2)
    assert_rule(h, "H1", profile)


def test_new_controller_without_new_epoch_h1():
    h = started_history()
    h.controller_gone()
    h._add("zk.controller", broker_id=2)           # no /controller_epoch increment in the same txn
    h.state("t", 0, 1, 1, (1, 2), 1)
    assert_rule(h, "H1", COMPAT)


@pytest.mark.parametrize("profile", [APACHE, COMPAT])
def test_unclean_election_with_unclean_disabled_h11(profile):
    h = started_history(brokers=(1, 2, 3, 4), controller=4)
    h.broker(2, up=False).state("t", 0, 1, 1, (1, 3), 1)
    h.broker(3, up=False).state("t", 0, 1, 2, (1,), 2)
    h.broker(1, up=False).state("t", 0, -1, 3, (1,), 3)
    h.broker(2)
    h.state("t", 0, 2, 4, (2,), 4, rec=1)
    assert_rule(h, "H11", profile)


def test_unclean_election_without_recovering_h12():
    h = started_history(brokers=(1, 2, 3, 4), controller=4)
    h.action("set_config", config={"unclean.leader.election.enable": "true"})
    h.broker(1, up=False).broker(2, up=False).broker(3, up=False)
    h.state("t", 0, -1, 1, (1,), 1)
    h.broker(2).state("t", 0, 2, 2, (2,), 2, rec=0)
    assert_rule(h, "H12", COMPAT)


def test_zombie_controller_write_h2():
    h = started_history(controller=1)
    h.controller_gone().controller(2, 2)
    h.state("t", 0, 1, 1, (1, 2), 1, ce=1)         # written by the deposed controller of epoch 1
    assert_rule(h, "H2", COMPAT)


def test_state_from_a_future_controller_epoch_h2():
    h = started_history()
    h.broker(3, up=False).state("t", 0, 1, 1, (1, 2), 1, ce=5)
    assert_rule(h, "H2", COMPAT)


def test_controller_write_adding_isr_members_h13():
    h = started_history()
    h.broker(3, up=False).state("t", 0, 1, 1, (1, 2), 1)
    h.broker(3).state("t", 0, 1, 2, (1, 2, 3), 2)
    assert_rule(h, "H13", COMPAT)


def test_isr_expansion_with_dead_broker_h19_since_3_3():
    h = started_history()
    h.broker(3, up=False).state("t", 0, 1, 1, (1, 2), 1)
    h.state("t", 0, 1, 1, (1, 2, 3), 2)            # AlterPartition adds dead 3
    assert_rule(h, "H19", COMPAT)
    assert_pass(h, "apache-zk-3.2")                 # before KIP-841 Apache accepted it


def test_election_during_topic_deletion_h14():
    h = started_history()
    h.delete_marker(["t"])
    h.state("t", 0, 1, 1, (1, 2), 1)               # deletion: replica 3 offlined
    h.broker(1, up=False)
    h.state("t", 0, 2, 2, (2,), 2)                 # election although the topic is being deleted
    assert_rule(h, "H14", COMPAT)


def test_reassignment_completed_without_target_in_isr_h16():
    h = started_history(brokers=(1, 2, 3, 4), controller=4)
    h.topic("t", {0: [4, 1, 2, 3]}, adding={0: [4]}, removing={0: [1]}, version=1)
    h.state("t", 0, 1, 1, (1, 2, 3), 1)
    h.topic("t", {0: [4, 2, 3]}, version=2)        # 4 never joined the ISR
    assert_rule(h, "H16", COMPAT)


def test_bad_reassignment_shape_h15():
    h = started_history(brokers=(1, 2, 3, 4), controller=4)
    h.topic("t", {0: [4, 1, 2, 3]}, adding={0: [4, 1]}, removing={0: [1]}, version=1)
    assert_rule(h, "H15", COMPAT)


def test_partition_epoch_regression_h9():
    h = kill_leader(started_history())
    h.state("t", 0, 2, 2, (2, 3), 1)
    assert_rule(h, "H9", COMPAT)


def test_same_epoch_isr_change_dropping_leader_h10():
    h = started_history()
    h.state("t", 0, 1, 0, (2, 3), 1)
    r = check(h, COMPAT)
    assert {"H5", "H10"} <= r.rules()


# -- injected Apache divergences: D-rules fail under apache-zk, pass under compatible -------------------------
def test_wrong_isr_member_elected_d1():
    h = started_history()
    h.broker(1, up=False).state("t", 0, 3, 1, (2, 3), 1)    # RS order says 2
    r = assert_rule(h, "D1")
    d = r.divergences[0]
    assert d.rule_id == "§4.1.2/D1" and any("leader=2" in a for a in d.allowed)
    assert d.before["leader"] == 1 and d.after["leader"] == 3
    assert_pass(h, COMPAT)


def test_isr_not_intersected_with_online_d1():
    h = started_history()
    h.broker(1, up=False).state("t", 0, 2, 1, (1, 2, 3), 1)
    assert_rule(h, "D1")


def test_failover_direct_election_d12():
    h = started_history(controller=1)
    h.broker(1, up=False).controller_gone()
    h.controller(2, 2)
    h.state("t", 0, 2, 1, (2, 3), 1, ce=2)                   # Apache writes leader=-1 first
    assert_rule(h, "D12")
    assert_pass(h, COMPAT)


def test_unnecessary_leaderless_write_d1():
    h = started_history(brokers=(1, 2, 3, 4), controller=4)
    h.broker(1, up=False).state("t", 0, -1, 1, (2, 3), 1)     # a live ISR member existed
    assert_rule(h, "D1")
    assert_pass(h, COMPAT)


def test_leader_epoch_jump_d7_and_no_cause_bump_d7():
    h = started_history()
    h.broker(1, up=False).state("t", 0, 2, 3, (2, 3), 1)
    assert_rule(h, "D7")
    h2 = started_history()
    h2.state("t", 0, 1, 1, (1, 2, 3), 1)                      # bump with no reassignment/failover/dead replica
    assert_rule(h2, "D7")
    assert_pass(h2, COMPAT)


def test_double_expansion_d9():
    h = started_history()
    h.broker(2, up=False).broker(3, up=False).state("t", 0, 1, 1, (1,), 1)
    h.state("t", 0, 1, 1, (1,), 1)
    h.broker(2).broker(3).state("t", 0, 1, 1, (1, 2, 3), 2)
    assert_rule(h, "D9")
    assert_pass(h, COMPAT)


def test_live_follower_removed_by_controller_d10():
    h = started_history()
    h.state("t", 0, 1, 1, (1, 3), 1)                          # 2 is registered and not shutting down
    assert_rule(h, "D10")
    assert_pass(h, COMPAT)


def test_preferred_only_to_rs0_d4():
    h = started_history()
    h.state("t", 0, 2, 1, (1, 2, 3), 1)                       # leader 1 alive, moved to 2 (not RS[0])
    assert_rule(h, "D4")
    assert_pass(h, COMPAT)


def test_controlled_shutdown_wrong_candidate_d5():
    h = started_history()
    h.fault("stop", [1])
    h.state("t", 0, 3, 1, (2, 3), 1)
    assert_rule(h, "D5")


def test_creation_d3():
    h = started_history()
    h.topic("u", {0: [3, 1]}).state("u", 0, 1, 0, (1, 3), 0)   # first online replica is 3
    assert_rule(h, "D3")
    assert_pass(h, COMPAT)


def test_reassignment_encoding_d15():
    h = started_history(brokers=(1, 2, 3, 4), controller=4)
    h.topic("t", {0: [1, 2, 3, 4]}, adding={0: [4]}, removing={0: [1]}, version=1)   # target first expected
    assert_rule(h, "D15")


def test_controller_epoch_jump_d11():
    h = started_history()
    h.controller_gone()
    h._add("zk.controller", broker_id=2)
    h._add("zk.controller_epoch", same_txn=True, epoch=3, version=2)
    assert_rule(h, "D11")
    assert_pass(h, COMPAT)


# -- gaps, output, profiles --------------------------------------------------------------------------
def test_gap_skips_determinism_but_keeps_hard_checks():
    h = started_history()
    h.broker(1, up=False).state("t", 0, 3, 3, (2, 3), 3)      # versions 1, 2 missing: skipped states
    assert_pass(h)
    h.gap("/brokers/topics/t/partitions/0/state").state("t", 0, 3, 2, (3,), 5)
    assert_rule(h, "H3")


def test_result_is_json_serializable():
    h = started_history()
    h.broker(1, up=False).state("t", 0, 3, 1, (2, 3), 1)
    d = check(h).to_dict()
    s = json.loads(json.dumps(d))
    assert s["verdict"] == "FAIL" and s["divergences"][0]["rule_id"] == "§4.1.2/D1"
    assert s["divergences"][0]["explanation"] and s["divergences"][0]["allowed"]


def test_profile_for():
    assert profile_for("3.9.0", None).name == "apache-zk-3.9"
    assert profile_for(None, None).name == "compatible"
    assert profile_for("2.8.1", "apache-zk").version == (2, 8)
    assert profile_for(None, "apache-zk-2.4").determinism
    assert not profile_for("3.9", "compatible").determinism
    for bad in [("4.0", "apache-zk"), (None, "apache-zk"), (None, "kraft"), ("x", None)]:
        with pytest.raises(ValueError):
            profile_for(*bad)


def test_bad_events_are_reported_clearly():
    with pytest.raises(ValueError, match="seq=0.*zxid"):
        check_conformance([{"seq": 0, "type": "zk.broker", "broker_id": 1, "registered": True}], {}, COMPAT)
    with pytest.raises(ValueError, match="missing field"):
        check_conformance([{"seq": 0, "type": "zk.partition_state", "zxid": 1}], {}, COMPAT)


def test_noop_partition_of_a_reassignment_bumps_after_other_partitions_topic_writes():
    """kafkatest's jumbled reassignment on 3.9.2: partition 1's target equals its assignment. The
    controller handles partition 0 first (its U1 rewrites the topic znode), then partition 1's B3
    bumps its leader epoch with nothing else changed (KC:1051-1071). That bump is the reassignment,
    not a D7; a second bump without a cause still is."""
    h = started_history(brokers=(1, 2, 3, 4), controller=4)
    h.topic("t", {0: (1, 2, 3), 1: (2, 3, 1)}, version=1)
    h.state("t", 1, 2, 0, (2, 3, 1), 0)
    h.action("reassign", partitions=[{"topic": "t", "partition": 0, "replicas": [4, 2, 3]},
                                     {"topic": "t", "partition": 1, "replicas": [2, 3, 1]}])
    h.topic("t", {0: (4, 2, 3, 1), 1: (2, 3, 1)}, adding={0: [4]}, removing={0: [1]}, version=2)   # U1 of p0
    h.state("t", 0, 1, 1, (1, 2, 3), 1)                                                            # A1 of p0
    h.state("t", 1, 2, 1, (2, 3, 1), 1)                                                            # B3 of p1 (no-op)
    h.topic("t", {0: (4, 2, 3, 1), 1: (2, 3, 1)}, adding={0: [4]}, removing={0: [1]}, version=3)   # B6 of p1
    assert_pass(h)
    h.state("t", 1, 2, 2, (2, 3, 1), 2)                  # another bump of p1: no cause left
    assert_rule(h, "D7")


def test_d12_when_the_dead_leader_registers_again_right_after_the_new_controller_was_elected():
    """restart.kill_all on 3.9.2: every broker killed, sessions expired; broker 2 came back and became
    controller, the old leader 1 registered one zxid later, and the controller still found it dead
    (it reads /brokers/ids after its election): leader=-1 for each dead replica, then the election."""
    h = started_history(controller=1)
    h.broker(1, up=False).broker(2, up=False).broker(3, up=False).controller_gone()
    h.broker(2)
    h.controller(2, 2)
    h.broker(1)                                              # after the election, before the writes
    h.state("t", 0, -1, 1, (2, 3), 1, ce=2)                  # §2.4 step 7: OfflineReplica(1), the leader
    h.state("t", 0, -1, 2, (2,), 2, ce=2)                    # OfflineReplica(3)
    h.state("t", 0, 2, 3, (2,), 3, ce=2)                     # step 8: the offline election
    assert_pass(h)


def test_a_leader_back_before_the_new_controller_was_elected_is_live_to_it_d1():
    h = started_history(controller=1)
    h.broker(1, up=False).broker(2, up=False).broker(3, up=False).controller_gone()
    h.broker(2)
    h.broker(1)                                              # registered before the election
    h.controller(2, 2)
    h.state("t", 0, -1, 1, (2, 3), 1, ce=2)                  # yet treated as dead: not Apache
    assert_rule(h, "D1")
