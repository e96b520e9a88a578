"""Unit tests of the controller model per spec rule (elections, failover, reassignment, deletion)."""

import pytest

from reference.model_events import (AlterPartition, AutoRebalance, BrokerBounce, BrokerFailure, BrokerStartup,
                                    CompleteTopicDeletion, ControlledShutdown, ControllerElected, ControllerLost,
                                    CreateTopic, DeleteTopic, ElectPreferred, ElectUnclean, Reassign, SetUnclean)
from reference.state import RECOVERING
from reference_helpers import boot, only, set_partition, state_writes

T0 = ("t", 0)


def li(st):
    return (st.leader, tuple(st.isr), st.leader_epoch)


# -- §5.2 broker failure, worked example --------------------------------------------------------------
def test_spec_5_2_worked_example_sequence():
    m, s = boot(brokers=(1, 2, 3, 4), controller=4, topics={"t": {0: [1, 2, 3]}})
    set_partition(s, T0, 1, (1, 2, 3), le=5)
    s = only(m.step(s, BrokerFailure((2,)))).state
    assert li(s.partitions[T0]) == (1, (1, 3), 6)                 # §4.6 removal of follower 2
    o = only(m.step(s, BrokerFailure((1,))))
    assert [li(w) for w in state_writes(o)] == [(3, (3,), 7)]     # one write: election (D10), no removal
    o = only(m.step(o.state, BrokerFailure((3,))))
    assert [li(w) for w in state_writes(o)] == [(-1, (3,), 8)]    # election fails, last ISR member kept
    o = only(m.step(o.state, BrokerStartup(1)))
    assert state_writes(o) == []                                  # ISR [3] still offline
    o = only(m.step(o.state, BrokerStartup(3)))
    assert [li(w) for w in state_writes(o)] == [(3, (3,), 9)]


def test_spec_5_2_unclean_variant_recovering():
    m, s = boot(brokers=(1, 2, 3, 4), controller=4, topics={"t": {0: [1, 2, 3]}}, unclean=True)
    set_partition(s, T0, -1, (3,), le=8)
    s.registered.pop(1), s.registered.pop(2), s.registered.pop(3)
    o = only(m.step(s, BrokerStartup(1)))
    (w,) = state_writes(o)
    assert (w.leader, w.isr, w.leader_epoch, w.recovery) == (1, (1,), 9, RECOVERING)


def test_unclean_before_3_2_has_no_recovery_state():
    m, s = boot(version=(3, 1), brokers=(1, 2, 3), controller=3, topics={"t": {0: [1, 2]}}, unclean=True)
    s = m.step(s, BrokerFailure((1, 2)))[0].state
    s = only(m.step(s, BrokerStartup(2))).state
    st = s.partitions[T0]
    assert st.leader == 2 and st.recovery == 0


def test_clean_election_d1_next_isr_member_in_rs_order():
    m, s = boot(brokers=(1, 2, 3, 4), controller=4, topics={"t": {0: [1, 3, 2]}})
    o = only(m.step(s, BrokerFailure((1,))))
    (w,) = state_writes(o)
    assert (w.leader, set(w.isr), w.leader_epoch, w.controller_epoch) == (3, {2, 3}, 1, 1)


def test_dead_follower_removed_with_le_bump_d7():
    m, s = boot(topics={"t": {0: [1, 2, 3]}})
    o = only(m.step(s, BrokerFailure((3,))))
    assert [li(w) for w in state_writes(o)] == [(1, (1, 2), 1)]


# -- §4.9 / D8: simultaneous failures, last ISR member ----------------------------------------------------
def test_d8_simultaneous_failure_each_isr_member_may_survive():
    m, s = boot(brokers=(1, 2, 3, 4), controller=4, topics={"t": {0: [1, 2, 3]}})
    outs = m.step(s, BrokerFailure((1, 2, 3)))
    finals = {o.state.partitions[T0].isr for o in outs}
    assert finals == {(1,), (2,), (3,)}
    for o in outs:
        st = o.state.partitions[T0]
        assert st.leader == -1 and st.leader_epoch == 3           # three §4.6 writes, one per replica
        assert [w.leader_epoch for w in state_writes(o)] == [1, 2, 3]


# -- §2 controller election / failover ----------------------------------------------------------------
def test_controller_race_winner_is_a_choice_and_epoch_plus_one_d11():
    m, s = boot(controller=None)
    outs = m.step(s, ControllerElected(None))
    assert sorted(o.state.controller for o in outs) == [1, 2, 3]
    assert {o.state.controller_epoch for o in outs} == {1}          # first controller has epoch 1
    s2 = outs[0].state
    s3 = only(m.step(only(m.step(s2, ControllerLost())).state, ControllerElected(2))).state
    assert s3.controller_epoch == 2
    ws = [w for w in only(m.step(s2, ControllerLost())).writes]
    assert [(w.kind, w.value) for w in ws] == [("controller", None)]


def test_epoch_multi_op_since_2_2_and_separate_before():
    for version, same in [((3, 9), True), ((2, 1), False)]:
        m, s = boot(version=version, controller=None)
        o = only(m.step(s, ControllerElected(1)))
        ctrl = [w for w in o.writes if w.kind == "controller"][0]
        ep = [w for w in o.writes if w.kind == "controller_epoch"][-1]
        assert ep.value[0] == 1
        assert (ctrl.zxid == ep.zxid) is same


def test_d12_controller_and_leader_die_together_two_bumps():
    m, s = boot(brokers=(1, 2, 3), controller=1, topics={"t": {0: [1, 2, 3], 1: [2, 3, 1]}})
    o = only(m.step(s, BrokerFailure((1,))))                     # the controller itself: nobody processes it
    assert state_writes(o) == [] and o.state.controller is None
    o = only(m.step(o.state, ControllerElected(2)))
    assert [li(w) for w in state_writes(o, T0)] == [(-1, (2, 3), 1), (2, (2, 3), 2)]
    assert [li(w) for w in state_writes(o, ("t", 1))] == [(2, (2, 3), 1)]   # follower 1 removed, one bump


def test_d12_with_another_dying_leader_in_the_same_event():
    m, s = boot(brokers=(1, 2, 3, 4), controller=4, topics={"t": {0: [1, 2, 3]}})
    o = only(m.step(s, BrokerFailure((4, 1))))                   # controller 4 and leader 1 together
    assert state_writes(o) == []
    o = only(m.step(o.state, ControllerElected(3)))
    assert [li(w) for w in state_writes(o)] == [(-1, (2, 3), 1), (2, (2, 3), 2)]


def test_controller_znode_deletion_repairs_offline_partition_seed_004():
    m, s = boot(brokers=(1, 2, 3), controller=1, topics={"t": {0: [2, 3]}})
    s = only(m.step(s, ControllerLost())).state
    s = only(m.step(s, BrokerFailure((2, 3)))).state            # nobody processes this
    s = only(m.step(s, BrokerStartup(3))).state
    assert s.partitions[T0].leader == 2                          # stale: no controller
    o = only(m.step(s, ControllerElected(1)))
    assert [li(w) for w in state_writes(o)] == [(-1, (3,), 1), (3, (3,), 2)]


# -- §5.4, §5.5 ---------------------------------------------------------------------------------
def test_bounce_is_failure_then_startup():
    m, s = boot(topics={"t": {0: [2, 1, 3]}})
    o = only(m.step(s, BrokerBounce(2)))
    kinds = [(w.kind, w.value if w.kind == "broker" else None) for w in o.writes if w.kind == "broker"]
    assert [k[1][0] for k in kinds] == [False, True]
    assert [li(w) for w in state_writes(o)] == [(1, (1, 3), 1)]   # 2 led: election; it rejoins later via the leader


def test_controlled_shutdown_d5_and_follower_removal_rf1_untouched():
    m, s = boot(brokers=(1, 2, 3), controller=3, topics={"t": {0: [1, 2, 3], 1: [2, 1, 3], 2: [1]}})
    o = only(m.step(s, ControlledShutdown(1)))
    assert [li(w) for w in state_writes(o, T0)] == [(2, (2, 3), 1)]
    assert [li(w) for w in state_writes(o, ("t", 1))] == [(2, (2, 3), 1)]
    assert state_writes(o, ("t", 2)) == []                        # RF=1 stays led by 1 (D18)
    o2 = only(m.step(o.state, BrokerFailure((1,))))
    assert [li(w) for w in state_writes(o2, ("t", 2))] == [(-1, (1,), 1)]


# -- §4.3, §4.7 preferred and auto rebalance, D19 unclean enable -----------------------------------------
def test_preferred_election_manual_and_auto_rebalance_threshold():
    m, s = boot(brokers=(1, 2, 3), controller=3, topics={"t": {0: [1, 2], 1: [1, 2]}})
    s = only(m.step(s, BrokerBounce(1))).state
    s = only(m.step(s, AlterPartition("t", 0, (2, 1)))).state
    assert s.partitions[T0].leader == 2
    o = only(m.step(s, ElectPreferred(((("t", 0)),))))
    assert [li(w) for w in state_writes(o)] == [(1, (2, 1), 2)]
    o = only(m.step(s, AutoRebalance()))     # broker 1: 2 of 2 imbalanced, but t-1 has 1 outside the ISR
    assert [w.leader for w in state_writes(o)] == [1]
    assert only(m.step(o.state, AutoRebalance())).writes == []


def test_auto_rebalance_ratio_must_exceed_percentage():
    parts = {p: [1, 2] for p in range(10)}
    m, s = boot(brokers=(1, 2, 3), controller=3, topics={"t": parts})
    set_partition(s, T0, 2, (1, 2), le=1)                     # 1/10 = 10 %: not > 10 %
    assert only(m.step(s, AutoRebalance())).writes == []
    set_partition(s, ("t", 1), 2, (1, 2), le=1)               # 2/10 = 20 %
    assert len(state_writes(only(m.step(s, AutoRebalance())))) == 2


def test_unclean_enable_elects_immediately_d19_and_elect_unclean_api():
    m, s = boot(brokers=(1, 2, 3), controller=3, topics={"t": {0: [1, 2]}})
    s = [o for o in m.step(s, BrokerFailure((1, 2))) if o.state.partitions[T0].isr == (1,)][0].state
    s = only(m.step(s, BrokerStartup(2))).state
    assert s.partitions[T0].leader == -1
    o = only(m.step(s, ElectUnclean((T0,))))
    assert li(state_writes(o)[0])[:2] == (2, (2,))
    o = only(m.step(s, SetUnclean("t", True)))
    assert li(state_writes(o)[0])[:2] == (2, (2,))


# -- §6 topics -----------------------------------------------------------------------------------
def test_new_partition_without_online_replica_gets_state_on_startup_d3():
    m, s = boot(brokers=(1, 2), controller=1)
    o = only(m.step(s, CreateTopic("t", ((0, (3, 2)), (1, (3,))))))
    assert [(w.key, li(w.value)) for w in o.writes if w.kind == "partition_state"] == [(T0, (2, (2,), 0))]
    o = only(m.step(o.state, BrokerStartup(3)))
    assert [(w.key, li(w.value)) for w in o.writes if w.kind == "partition_state"] == [(("t", 1), (3, (3,), 0))]


def test_topic_deletion_states_and_completion():
    m, s = boot(topics={"t": {0: [1, 2, 3]}})
    outs = m.step(s, DeleteTopic("t"))
    assert {o.state.partitions[T0].isr for o in outs} == {(1,), (2,), (3,)}
    for o in outs:
        ws = state_writes(o)
        assert [w.leader_epoch for w in ws] == [1, 2, 3]
        assert ws[-1].leader == -1 and all(w.leader in (1, -1) for w in ws)   # never another leader (H14)
    o = only(m.step(outs[0].state, CompleteTopicDeletion("t")))
    assert [w.kind for w in o.writes] == ["partition_state", "topic", "delete_topics"]
    assert "t" not in o.state.topics and o.state.deleting == set()


def test_deletion_waits_for_dead_replica_and_no_election_meanwhile():
    m, s = boot(brokers=(1, 2, 3, 4), controller=4, topics={"t": {0: [1, 2, 3]}})
    s = only(m.step(s, BrokerFailure((3,)))).state
    o = only(m.step(s, DeleteTopic("t")))
    assert state_writes(o) == []                                   # ineligible: replica 3 offline
    o = only(m.step(o.state, BrokerFailure((1,))))
    assert state_writes(o) == []                                   # no election for a deleting topic
    assert m.step(o.state, CompleteTopicDeletion("t"))[0].error == "DELETION_NOT_STARTED"


# -- §7 reassignment ---------------------------------------------------------------------------------
def test_reassignment_worked_example_7_5():
    e = 7
    m, s = boot(brokers=(1, 2, 3, 4, 5, 6), controller=6, topics={"t": {0: [1, 2, 3]}})
    set_partition(s, T0, 1, (1, 2, 3), le=e)
    o = only(m.step(s, Reassign("t", 0, (4, 5, 6))))
    topic_w = [w for w in o.writes if w.kind == "topic"][0]
    a = dict(topic_w.value[1])[0]
    assert (a.rs, a.ar, a.rr) == ((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3))          # U1
    assert [li(w) for w in state_writes(o)] == [(1, (1, 2, 3), e + 1)]              # A1
    s = o.state
    for isr in [(1, 2, 3, 4), (1, 2, 3, 4, 5)]:
        o = only(m.step(s, AlterPartition("t", 0, isr)))
        assert [li(w) for w in state_writes(o)] == [(1, isr, e + 1)]               # LE unchanged
        s = o.state
    outs = m.step(s, AlterPartition("t", 0, (1, 2, 3, 4, 5, 6)))
    assert len(outs) == 6                                                         # B4 order unspecified
    for o in outs:
        ws = state_writes(o)
        assert li(ws[0]) == (1, (1, 2, 3, 4, 5, 6), e + 1)                          # the expansion
        assert li(ws[1]) == (4, (1, 2, 3, 4, 5, 6), e + 2)                          # B3
        assert [w.leader_epoch for w in ws[2:]] == [e + 3, e + 4, e + 5]            # B4 x3
        assert (ws[-1].leader, set(ws[-1].isr)) == (4, {4, 5, 6})
        last = o.writes[-1]
        assert last.kind == "topic" and dict(last.value[1])[0].rs == (4, 5, 6)      # B6
        assert o.state.partitions[T0].leader_epoch - e == 5                         # ΔLE = 1 + 1 + 3
    assert {tuple(state_writes(o)[2].isr) for o in outs} == {(2, 3, 4, 5, 6), (1, 3, 4, 5, 6), (1, 2, 4, 5, 6)}


def test_noop_and_reorder_reassignment_cost_one_bump_d16():
    m, s = boot(topics={"t": {0: [1, 2, 3]}})
    o = only(m.step(s, Reassign("t", 0, (1, 2, 3))))
    assert [li(w) for w in state_writes(o)] == [(1, (1, 2, 3), 1)]
    o = only(m.step(s, Reassign("t", 0, (2, 3, 1))))
    assert [li(w) for w in state_writes(o)] == [(1, (1, 2, 3), 1)]
    assert [dict(w.value[1])[0].rs for w in o.writes if w.kind == "topic"] == [(2, 3, 1), (2, 3, 1)]


def test_cancel_restores_ors_in_target_first_order_7_8():
    m, s = boot(brokers=(1, 2, 3, 4), controller=4, topics={"t": {0: [1, 2, 3]}})
    s = only(m.step(s, Reassign("t", 0, (3, 4, 2)))).state
    assert s.assignment(T0).rs == (3, 4, 2, 1)
    o = only(m.step(s, Reassign("t", 0, None)))
    assert o.state.assignment(T0).rs == (3, 2, 1) and not o.state.assignment(T0).reassigning


def test_cancel_drops_adding_leader_then_elects_in_ors():
    m, s = boot(brokers=(1, 2, 3, 4), controller=3, topics={"t": {0: [1, 2]}})
    s = only(m.step(s, Reassign("t", 0, (4, 1)))).state          # RS [4,1,2], AR [4], RR [2]
    set_partition(s, T0, 4, (4, 1, 2), le=5)                     # 4 joined and became leader (e.g. via failure)
    o = only(m.step(s, Reassign("t", 0, None)))
    assert [li(w) for w in state_writes(o)] == [(-1, (1, 2), 6), (1, (1, 2), 7)]  # U3 then B3


def test_reassignment_resumed_on_failover_bumps_a1():
    m, s = boot(brokers=(1, 2, 3, 4), controller=4, topics={"t": {0: [1, 2]}})
    s = only(m.step(s, Reassign("t", 0, (3, 1)))).state
    le = s.partitions[T0].leader_epoch
    s = only(m.step(s, ControllerLost())).state
    o = only(m.step(s, ControllerElected(4)))
    assert [li(w) for w in state_writes(o)] == [(1, (1, 2), le + 1)]


def test_reassignment_validation_adding_replica_must_be_live():
    m, s = boot(brokers=(1, 2, 3), controller=3, topics={"t": {0: [1, 2]}})
    s = only(m.step(s, BrokerFailure((1,)))).state
    assert m.step(s, Reassign("t", 0, (1, 2)))[0].error is None        # not adding: fine
    assert m.step(s, Reassign("t", 0, (5, 2)))[0].error == "INVALID_REPLICA_ASSIGNMENT"
    assert m.step(s, Reassign("t", 0, None))[0].error == "NO_REASSIGNMENT_IN_PROGRESS"


def test_legacy_reassignment_before_2_4_rs_order_is_a_choice():
    m, s = boot(version=(2, 3), brokers=(1, 2, 3, 4), controller=4, topics={"t": {0: [1, 2]}})
    outs = m.step(s, Reassign("t", 0, (3, 2), via="zk"))
    assert len({o.state.assignment(T0).rs for o in outs}) == 6       # permutations of {1,2,3}
    assert all(o.state.assignment(T0).ar == () for o in outs)
    o = outs[0]
    o2 = only(m.step(o.state, AlterPartition("t", 0, (1, 2, 3))))
    st = o2.state.partitions[T0]
    assert o2.state.assignment(T0).rs == (3, 2) and st.leader == 3 and set(st.isr) == {2, 3}
    assert o2.writes[-1].kind == "reassign_partitions" and o2.writes[-1].value is None   # node deleted


def test_alter_partition_kip841_gate():
    for version, expected in [((3, 3), "INELIGIBLE_REPLICA"), ((3, 2), None)]:
        m, s = boot(version=version, brokers=(1, 2, 3), controller=3, topics={"t": {0: [1, 2]}})
        s = only(m.step(s, BrokerFailure((2,)))).state
        s.partitions[T0] = s.partitions[T0]
        assert m.step(s, AlterPartition("t", 0, (1, 2)))[0].error == expected


def test_legacy_isr_write_before_2_7_keeps_learned_controller_epoch():
    m, s = boot(version=(2, 6), brokers=(1, 2, 3), controller=3, topics={"t": {0: [1, 2]}})
    s = only(m.step(s, ControllerLost())).state
    s = only(m.step(s, ControllerElected(3))).state
    o = only(m.step(s, AlterPartition("t", 0, (1,))))
    (w,) = state_writes(o)
    assert w.controller_epoch == 1 and s.controller_epoch == 2 and w.leader_epoch == 0


@pytest.mark.parametrize("bad", [AlterPartition("t", 0, (2,)), AlterPartition("t", 0, (1, 9))])
def test_invalid_alter_partition_is_rejected(bad):
    m, s = boot(topics={"t": {0: [1, 2]}})
    assert m.step(s, bad)[0].error == "INVALID_REQUEST"
