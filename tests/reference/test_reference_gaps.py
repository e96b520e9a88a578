"""Checks that stay on through observation gaps (issue 42, item 5), on fabricated ZooKeeper-mode records.

A gap (a ``zk.gap`` event, or a jump of the znode ``version``) means the observer missed states of one
partition / topic. The transition ACROSS it is not a real transition, so only the rules that hold between
any two states of a partition are applied to it (leader epoch never decreases H3, one leader per epoch H4,
partition epoch increases H9); the states on either side are each judged in full by the single-state rules
(H5-H8, H12), other partitions are not affected, and every rule resumes with the next observed transition.
Progress (P1) covers every partition the controller owns, internal topics included; H8 (ISR ⊆ replicas)
is judged on a quiescent cluster too, after the last fault and reassignment."""

import pytest

from reference import check_conformance
from reference_helpers import started_history

APACHE = "apache-zk-3.9"
MD = {"broker_config": {"zookeeper.session.timeout.ms": "6000", "replica.lag.time.max.ms": "5000"}}
STATE = "/brokers/topics/t/partitions/0/state"


def check(h):
    return check_conformance(h.events, MD, APACHE)


def rules(h) -> set:
    return check(h).rules()


def gapped(version_jump: bool):
    """Partition t-0 led by 1 (LE 0, version 0); then a gap; the caller adds the state after it."""
    h = started_history(controller=1)
    if not version_jump:
        h.gap(STATE)
    return h


@pytest.mark.parametrize("version_jump", [False, True])
def test_a_legit_state_after_a_gap_passes(version_jump):
    h = gapped(version_jump)
    h.state("t", 0, 2, 2, (2, 3), 3)                  # two elections missed: LE 0 -> 2, version 0 -> 3
    assert check(h).verdict == "PASS"


@pytest.mark.parametrize("version_jump", [False, True])
@pytest.mark.parametrize("state, rule", [
    (("t", 0, 3, 2, (1, 2), 3), "H5"),               # the leader outside the ISR: judged on the state itself
    (("t", 0, 4, 2, (4,), 3), "H6"),                 # the leader is not a replica
    (("t", 0, 1, 2, (1, 4), 3), "H8"),               # ISR not a subset of the replicas
    (("t", 0, 2, 2, (), 3), "H7"),                   # a leader with an empty ISR
])
def test_single_state_rules_judge_the_state_after_a_gap(version_jump, state, rule):
    h = gapped(version_jump)
    h.state(*state)
    assert rule in rules(h)


@pytest.mark.parametrize("version_jump", [False, True])
def test_leader_epoch_going_back_across_a_gap_is_H3(version_jump):
    h = started_history(controller=1)
    h.state("t", 0, 2, 3, (2, 3), 1)
    if not version_jump:
        h.gap(STATE)
    h.state("t", 0, 3, 2, (3,), 4)                   # LE 3 -> 2, whatever was missed in between
    assert "H3" in rules(h)


@pytest.mark.parametrize("version_jump", [False, True])
def test_two_leaders_in_one_epoch_across_a_gap_is_H4(version_jump):
    h = started_history(controller=1)
    h.state("t", 0, 2, 1, (2, 3), 1)
    if not version_jump:
        h.gap(STATE)
    h.state("t", 0, 3, 1, (3, 2), 3)                 # epoch 1 led by 2, then by 3
    assert "H4" in rules(h)


def test_partition_epoch_not_increasing_across_a_gap_is_H9():
    h = started_history(controller=1)
    h.state("t", 0, 2, 1, (2, 3), 2)
    h.gap(STATE)
    h.state("t", 0, 3, 2, (3, 2), 2)                 # the znode version did not move
    assert "H9" in rules(h)


def test_a_gap_on_one_partition_leaves_the_others_judged():
    h = started_history(controller=1)
    h.topic("u", {0: [1, 2, 3]}, topic_id="tid-u")
    h.state("u", 0, 1, 0, (1, 2, 3), 0)
    h.gap(STATE)                                     # t-0 only
    h.state("u", 0, 4, 1, (4,), 1)                   # u-0 elects a non-replica from outside the ISR
    assert {"H6", "H11"} <= rules(h)


def test_rules_resume_with_the_next_transition_after_a_gap():
    h = gapped(False)
    h.state("t", 0, 2, 2, (2, 3), 3)                 # across the gap: only the between-any-two rules
    h.state("t", 0, 1, 3, (1,), 4)                   # the next transition: 1 was not in ISR [2, 3]: H11
    assert "H11" in rules(h)


# -- progress covers internal topics ------------------------------------------------------------------------------
def test_P1_covers_the_partitions_of_internal_topics():
    h = started_history(controller=3)
    h.topic("__consumer_offsets", {0: [1, 2, 3]}, topic_id="tid-co")
    h.state("__consumer_offsets", 0, 1, 0, (1, 2, 3), 0)
    h.broker(1, up=False)                            # its leader is gone, 2 and 3 live in the ISR
    h.state("t", 0, 2, 1, (2, 3), 1, ce=1)           # t-0 is handed over ...
    h.wait(120).sample()                             # ... __consumer_offsets-0 never is
    r = check(h)
    assert "P1" in r.rules(), [str(d) for d in r.divergences + r.invariant_violations]
    assert any("__consumer_offsets" in str(d) for d in r.divergences + r.invariant_violations)


# -- the replica set / ISR relation at quiescence -----------------------------------------------------------------
def test_H8_is_judged_on_a_quiescent_cluster():
    h = started_history(controller=1)
    h.wait(60).sample()
    h.state("t", 0, 1, 0, (1, 2, 4), 1)             # no reassignment, no fault: 4 is no replica of t-0
    h.wait(60).sample()
    assert "H8" in rules(h)
