"""Checker completeness (issue 14, item 6): each rule that used to miss a broker fault, on fabricated
records -- the faulty history is reported, a legitimate history of the same shape is not.

* gaps limit rules to the interval they cover (``checker.py`` ``_on_gap``/``_on_state``/``_on_topic``);
* P1 / P3 progress rules with time bounds (``reference/liveness.py``, spec §8.4);
* H8 ISR ⊆ replicas in ZooKeeper mode (spec §8.2, §7.10);
* H1 every /controller creation bumps the controller epoch, same broker included (§2.1, §2.2);
* ``zk.gap`` without ``zxid`` (older records, reconciliation markers) is accepted.
(K3 under ``compatible``: tests/reference/test_reference_kraft.py.)
"""

import itertools

import pytest

from reference import check_conformance
from reference.invariants import state_violations, transition_violations
from reference.profiles import apache, progress_bounds
from reference.writes import Obs
from reference_helpers import History, started_history

APACHE = "apache-zk-3.9"
COMPAT = "compatible"
MD = {"broker_config": {"zookeeper.session.timeout.ms": "6000", "replica.lag.time.max.ms": "5000"}}
ELECTION_S = progress_bounds(apache("3.9"), MD["broker_config"]).election_s       # 6 + 30 = 36 s
REASSIGN_S = progress_bounds(apache("3.9"), MD["broker_config"]).reassign_s       # 6 + 5 + 60 = 71 s


def check(h, profile=APACHE, metadata=MD):
    return check_conformance(h.events, metadata, profile)


def assert_pass(h, profile=APACHE, metadata=MD):
    r = check(h, profile, metadata)
    assert r.verdict == "PASS", [str(d) for d in r.divergences + r.invariant_violations]
    return r


def assert_rule(h, rule, profile=APACHE, metadata=MD):
    r = check(h, profile, metadata)
    assert rule in r.rules(), [str(d) for d in r.divergences + r.invariant_violations]
    return r


def test_bounds_follow_the_runs_timeouts():
    assert (ELECTION_S, REASSIGN_S) == (36.0, 71.0)
    b = progress_bounds(apache("3.9"), {})                       # Kafka defaults: 18 s session, 30 s lag
    assert (b.election_s, b.reassign_s) == (48.0, 108.0)
    old = progress_bounds(apache("2.4"), {})                     # 6 s / 10 s before 2.5, legacy ISR path < 2.7
    assert (old.election_s, old.isr_notify_s) == (36.0, 60.0)


# -- P1: a leader is elected (or a dead leader unset) within the bound ------------------------------------
def leader_dies(controller=3):
    """t-0 led by 1 with ISR [1,2,3]; broker 1 is killed and its znode goes; the controller is 3."""
    h = started_history(controller=controller)
    h.fault("kill", [1])
    h.wait(6).broker(1, up=False)
    return h


@pytest.mark.parametrize("profile", [APACHE, COMPAT])
def test_no_election_after_leader_death_p1(profile):
    h = leader_dies()
    h.wait(ELECTION_S + 4).sample()
    r = assert_rule(h, "P1", profile)
    d = [d for d in r.divergences if d.rule == "P1"][0]
    assert d.kind == "progress" and d.subject == "t-0" and d.rule_id == "§8.4/§5.2/§4.6/P1"
    assert "[2, 3]" in d.explanation


@pytest.mark.parametrize("profile", [APACHE, COMPAT])
def test_prompt_election_passes(profile):
    h = leader_dies()
    h.wait(0.2).state("t", 0, 2, 1, (2, 3), 1)
    h.wait(ELECTION_S + 4).sample()
    r = assert_pass(h, profile)
    assert r.stats["progress_obligations"] == 1 and r.stats["progress_met"] == 1
    assert r.stats["progress_undecided"] == []


def test_election_just_before_the_bound_passes():
    h = leader_dies()
    h.wait(ELECTION_S - 1).state("t", 0, 2, 1, (2, 3), 1)
    h.wait(60).sample()
    assert_pass(h)


def test_record_ending_before_the_bound_is_undecided_not_fail():
    h = leader_dies()
    h.wait(ELECTION_S - 10).sample()
    r = assert_pass(h)
    (u,) = r.stats["progress_undecided"]
    assert u["rule"] == "P1" and u["subject"] == "t-0" and u["record_ends"] - u["clock_since"] == ELECTION_S - 10


def test_clock_is_the_latest_time_seen_and_never_goes_back():
    """``now`` is the latest time of every event applied so far (here an admin sample 5 s later than
    the deregistration recorded after it), not only of the events the progress rules react to."""
    h = started_history()
    h.fault("kill", [1])
    h.wait(5).sample()
    h.wait(-5).broker(1, up=False)                   # recorded after the sample, timed before it
    h.wait(ELECTION_S - 3).sample()
    r = assert_pass(h)
    (u,) = r.stats["progress_undecided"]
    assert u["record_ends"] - u["clock_since"] == ELECTION_S - 8


def test_transition_rules_are_silent_when_both_epochs_go_up():
    """The checker skips transition_violations for a write that bumps the leader epoch and the
    version (every controller write): exhaustively over small states, that skips no finding."""
    isrs = [(), (1,), (2,), (1, 2), (2, 3), (1, 2, 3)]
    for (pl, nl), (pi, ni), (pr, nr), rs in itertools.product(
            itertools.product((-1, 1, 2, 4), repeat=2), itertools.product(isrs, repeat=2),
            itertools.product((0, 1), repeat=2), (None, frozenset({1, 2}), frozenset({1, 2, 3}))):
        prev = Obs(pl, 4, pi, frozenset(pi), 1, pr, 7)
        new = Obs(nl, 5, ni, frozenset(ni), 1, nr, 8)
        assert transition_violations(prev, new, rs) == [], (prev, new, rs)


def test_transition_rules_are_silent_on_a_plain_same_epoch_isr_change():
    """The checker skips transition_violations for a same-epoch write (version up) that keeps its leader,
    in both ISRs unless -1, does not turn RECOVERING and adds only replicas: exhaustively over small
    states, that skips no finding (the condition is the one in Checker._on_state)."""
    isrs = [(), (1,), (2,), (1, 2), (2, 3), (1, 2, 3), (3, 4)]
    for (pl, nl), (pi, ni), (pr, nr), rs in itertools.product(
            itertools.product((-1, 1, 2, 4), repeat=2), itertools.product(isrs, repeat=2),
            itertools.product((0, 1), repeat=2), (None, frozenset({1, 2}), frozenset({1, 2, 3}))):
        prev = Obs(pl, 4, pi, frozenset(pi), 1, pr, 7)
        new = Obs(nl, 4, ni, frozenset(ni), 1, nr, 8)
        ps, ns = prev.isr_set, new.isr_set
        if (nl == pl and (nl == -1 or (nl in ps and nl in ns)) and (nr != 1 or pr == 1)
                and (rs is None or ns <= ps or rs.issuperset(ns - ps))):
            assert transition_violations(prev, new, rs) == [], (prev, new, rs)


def test_state_rules_are_silent_on_a_consistent_state():
    """The checker skips state_violations for a state whose leader (if any) is in its ISR, whose ISR
    lies within the replicas and which is not RECOVERING unless it is one member led by that member or
    -1 (an unclean election's state): exhaustively over small states, that skips no finding, and every
    other state has one (the condition is the one in Checker._on_state)."""
    isrs = [(), (1,), (2,), (1, 2), (2, 3), (1, 2, 3)]
    for leader, isr, rec, rs in itertools.product((-1, 1, 2, 4), isrs, (0, 1),
                                                  (None, frozenset({1, 2}), frozenset({1, 2, 3}))):
        skipped = ((leader == -1 or leader in frozenset(isr)) and (rs is None or rs.issuperset(isr))
                   and (rec != 1 or (len(isr) == 1 and (leader == -1 or leader == isr[0]))))
        assert (state_violations(leader, isr, rec, rs) == []) == skipped, (leader, isr, rec, rs)


def test_only_live_isr_member_faulted_is_not_p1():
    """2 and 3 are paused (their znodes stay until the session expires): nobody can lead yet."""
    h = started_history(brokers=(1, 2, 3, 4), controller=4, rs=(1, 2, 3))
    h.fault("pause", [2])
    f2 = h.last_fault_id()
    h.fault("pause", [3])
    h.fault("kill", [1])
    h.wait(6).broker(1, up=False)
    h.wait(ELECTION_S + 20).sample()
    assert_pass(h)
    h.heal(f2)                                                # 2 can lead from here: the clock starts
    h.wait(ELECTION_S - 5).sample()
    assert_pass(h)
    h.wait(10).sample()
    assert_rule(h, "P1")


def test_zookeeper_outage_restarts_the_clock():
    h = started_history(controller=3)
    h.zk_fault()
    zk = h.last_fault_id()
    h.fault("kill", [1])
    h.wait(6).broker(1, up=False)
    h.wait(100).sample()
    assert_pass(h)
    h.heal(zk)
    h.wait(ELECTION_S - 5).sample()
    assert_pass(h)
    h.wait(10).sample()
    assert_rule(h, "P1")


def test_bound_counts_from_the_new_controller():
    """Leader 1 was the controller too: nobody can elect until /controller is recreated."""
    h = leader_dies(controller=1)
    h.controller_gone()
    h.wait(100).sample()
    assert_pass(h)
    h.controller(2, 2)
    h.wait(ELECTION_S - 5).sample()
    assert_pass(h)
    h.wait(10).sample()
    assert_rule(h, "P1")
    ok = leader_dies(controller=1)                           # D12: -1 first, then the election
    ok.controller_gone().wait(20).controller(2, 2)
    ok.wait(1).state("t", 0, -1, 1, (2, 3), 1, ce=2).state("t", 0, 2, 2, (2, 3), 2, ce=2)
    ok.wait(100).sample()
    assert_pass(ok)


def test_paused_controller_and_whole_cluster_pause_are_not_p1():
    h = started_history(controller=3)
    h.fault("pause", [1, 2, 3])                               # the whole cluster
    h.wait(6).broker(1, up=False)
    h.wait(100).sample()
    assert_pass(h)


@pytest.mark.parametrize("profile", [APACHE, COMPAT])
def test_dead_leader_kept_without_live_isr_member_p1(profile):
    """RF 1: the leader's znode is gone and nothing else can lead: §4.6 must write leader -1."""
    h = started_history(controller=3, rs=(1,))
    h.fault("kill", [1])
    h.wait(6).broker(1, up=False)
    h.wait(ELECTION_S + 4).sample()
    r = assert_rule(h, "P1", profile)
    assert "dead broker 1 kept as leader" in [d for d in r.divergences if d.rule == "P1"][0].explanation
    ok = started_history(controller=3, rs=(1,))
    ok.fault("kill", [1])
    ok.wait(6).broker(1, up=False).wait(0.3).state("t", 0, -1, 1, (1,), 1)
    ok.wait(100).sample()
    assert_pass(ok, profile)


def test_leaderless_partition_elects_when_its_isr_member_returns_p1():
    h = started_history(controller=3, rs=(1,))
    h.fault("kill", [1])
    h.wait(6).broker(1, up=False).state("t", 0, -1, 1, (1,), 1)
    h.wait(100).sample()
    assert_pass(h)                                            # nobody can lead: no obligation
    h.heal(h.last_fault_id()).broker(1)
    h.wait(ELECTION_S + 4).sample()
    assert_rule(h, "P1")
    ok = started_history(controller=3, rs=(1,))
    ok.wait(6).broker(1, up=False).state("t", 0, -1, 1, (1,), 1)
    ok.wait(100).broker(1).wait(0.5).state("t", 0, 1, 2, (1,), 2)
    ok.wait(100).sample()
    assert_pass(ok)


def test_topic_being_deleted_is_exempt_from_p1():
    h = started_history(controller=3)
    h.delete_marker(["t"])
    h.fault("kill", [1])
    h.wait(6).broker(1, up=False)
    h.wait(100).sample()
    assert "P1" not in check(h).rules()


# -- P3: reassignments complete ---------------------------------------------------------------------------
def reassign_started(throttle=None):
    """t-0 [1,2,3] -> [2,3,4] (U1 + A1); controller 1... 5 brokers, controller 5."""
    h = started_history(brokers=(1, 2, 3, 4, 5), controller=5)
    params = {"partitions": [{"topic": "t", "partition": 0, "replicas": [2, 3, 4]}]}
    if throttle:
        params["throttle"] = throttle
    h.action("reassign", **params)
    h.topic("t", {0: [2, 3, 4, 1]}, adding={0: [4]}, removing={0: [1]}, version=1)
    h.state("t", 0, 1, 1, (1, 2, 3), 1)                       # A1
    return h


def complete(h):
    h.state("t", 0, 2, 2, (1, 2, 3, 4), 3)                    # B3
    h.state("t", 0, 2, 3, (2, 3, 4), 4)                       # B4
    h.topic("t", {0: [2, 3, 4]}, version=2)                   # B6
    return h


@pytest.mark.parametrize("profile", [APACHE, COMPAT])
def test_target_in_isr_but_never_completed_p3(profile):
    h = reassign_started()
    h.wait(2).state("t", 0, 1, 1, (1, 2, 3, 4), 2)            # 4 caught up: TRS ⊆ ISR (§7.6)
    h.wait(ELECTION_S + 4).sample()
    r = assert_rule(h, "P3", profile)
    d = [d for d in r.divergences if d.rule == "P3"][0]
    assert d.kind == "progress" and "every target replica [2, 3, 4]" in d.explanation


@pytest.mark.parametrize("profile", [APACHE, COMPAT])
def test_reassignment_completing_passes(profile):
    h = reassign_started()
    h.wait(2).state("t", 0, 1, 1, (1, 2, 3, 4), 2)
    h.wait(0.1)
    complete(h)
    h.wait(200).sample()
    r = assert_pass(h, profile)
    assert r.stats["progress_met"] >= 1 and r.stats["progress_undecided"] == []


def test_reassignment_stalled_after_healing_p3():
    """No fault, every target broker registered, the adding replica never joins the ISR."""
    h = reassign_started()
    h.wait(REASSIGN_S - 5).sample()
    assert_pass(h)
    h.wait(10).sample()
    assert_rule(h, "P3")


def test_throttled_or_target_down_reassignment_is_not_p3():
    h = reassign_started(throttle=1000)                       # a throttle makes catching up slow at will
    h.wait(REASSIGN_S * 3).sample()
    r = assert_pass(h)
    assert [u["rule"] for u in r.stats["progress_undecided"]] == ["P3"]
    h = reassign_started()
    h.fault("kill", [4])
    h.wait(6).broker(4, up=False)
    h.wait(REASSIGN_S * 3).sample()                           # the target is down: legitimately stuck
    assert_pass(h)


def test_p3_clock_starts_when_faults_heal():
    h = reassign_started()
    h.fault("pause", [2])
    f = h.last_fault_id()
    h.wait(REASSIGN_S * 2).sample()
    assert_pass(h)
    h.heal(f)
    h.wait(REASSIGN_S - 5).sample()
    assert_pass(h)
    h.wait(10).sample()
    assert_rule(h, "P3")


# -- H8: ISR ⊆ replicas ---------------------------------------------------------------------------------
def test_created_isr_outside_replicas_h8():
    h = History()
    for b in (1, 2, 3, 4):
        h.broker(b)
    h.epoch(0, 0).controller(1, 1)
    h.topic("t", {0: [1, 2, 3]})
    h.state("t", 0, 1, 0, (1, 2, 4), 0)                       # 4 is no replica
    assert_rule(h, "H8", COMPAT)
    assert_rule(h, "H8", APACHE)


def test_completed_reassignment_keeping_a_removed_replica_in_the_isr_h8():
    h = reassign_started()
    h.state("t", 0, 1, 1, (1, 2, 3, 4), 2)
    h.state("t", 0, 2, 2, (1, 2, 3, 4), 3)                    # B3, but B4 never removes 1
    h.topic("t", {0: [2, 3, 4]}, version=2)                   # B6
    h.state("t", 0, 2, 2, (1, 2, 3, 4), 4)                    # 1 is no replica any more
    r = assert_rule(h, "H8", COMPAT)
    assert r.invariant_violations[0].rule_id == "§8.2/§7.10/H8"


def test_cancel_transient_isr_outside_replicas_passes():
    """§7.10: between U1 and U3 of a cancel the dropped adding replica is briefly in the ISR."""
    h = started_history(brokers=(1, 2, 3, 4, 5), controller=5)
    h.topic("t", {0: [4, 2, 3, 1]}, adding={0: [4]}, removing={0: [1]}, version=1)
    h.state("t", 0, 1, 1, (1, 2, 3), 1)
    h.state("t", 0, 1, 1, (1, 2, 3, 4), 2)
    h.topic("t", {0: [2, 3, 1]}, version=2)                   # cancel: U1 back to ORS
    h.state("t", 0, 1, 2, (1, 2, 3), 3)                       # U3 drops 4
    assert_pass(h, COMPAT)


# -- H1: every election bumps the controller epoch ---------------------------------------------------------
@pytest.mark.parametrize("profile", [APACHE, COMPAT])
def test_same_broker_reelected_without_epoch_bump_h1(profile):
    h = started_history(controller=1)
    h.controller_gone()
    h._add("zk.controller", broker_id=1)                      # /controller recreated, epoch still 1
    h.sample()
    r = assert_rule(h, "H1", profile)
    assert "elected again" in r.invariant_violations[0].explanation


def test_same_broker_reelected_with_epoch_bump_passes():
    h = started_history(controller=1)
    h.controller_gone().controller(1, 2)
    assert_pass(h)
    assert_pass(h, COMPAT)


def test_watched_reelection_judged_at_the_next_creation_h1():
    """The watcher reads /controller and /controller_epoch separately: an election without a bump
    shows when the next creation arrives first; at the end of the record it is not judged."""
    h = started_history(controller=1)
    h.controller_gone()
    h._add("zk.controller", broker_id=1)
    for e in h.events[-2:]:
        e["source"] = "watch"
    assert_pass(h)                                            # the record may end between the reads
    h.controller_gone()._add("zk.controller", broker_id=2)
    h.events[-1]["source"] = h.events[-2]["source"] = "watch"
    assert_rule(h, "H1")
    ok = started_history(controller=1)
    ok.controller_gone()._add("zk.controller", broker_id=1)
    ok._add("zk.controller_epoch", epoch=2, version=2)        # read a little later (next zxid)
    for e in ok.events[-3:]:
        e["source"] = "watch"
    assert_pass(ok)


# -- gaps ----------------------------------------------------------------------------------------------------
def test_broker_gap_suppresses_only_until_the_controller_view_passes_it():
    """A missed /brokers/ids change may explain an election (not judged), but once a controller
    elected after the gap acts, H19 and the D-rules apply again."""
    h = started_history(controller=2)
    h.broker(3, up=False)
    h.gap("/brokers/ids")                                     # 3 may have come back and gone again
    h.state("t", 0, 3, 1, (1, 3), 1)                          # looks like electing a dead broker
    assert "H19" not in check(h).rules()
    h.broker(2, up=False)                                     # observed again after the gap
    h.controller_gone().controller(1, 2)                      # a controller elected after it: complete view
    h.state("t", 0, 2, 2, (2, 3), 2, ce=2)                    # elects 2, whose znode it saw gone: H19
    assert_rule(h, "H19")


def test_topic_gap_skips_only_the_transition_it_covers():
    h = reassign_started()
    h.gap("/brokers/topics/t")                                # missed: 4 caught up, B3/B4 ...
    h.topic("t", {0: [2, 3, 4]}, version=3)                   # completion seen without TRS ⊆ ISR
    assert_pass(h, COMPAT)
    # the next reassignment is judged again
    h.action("reassign", partitions=[{"topic": "t", "partition": 0, "replicas": [2, 3, 5]}])
    h.topic("t", {0: [2, 3, 5, 4]}, adding={0: [5]}, removing={0: [4]}, version=4)
    h.topic("t", {0: [2, 3, 5]}, version=5)                   # completed although 5 never joined: H16
    assert_rule(h, "H16", COMPAT)


def test_topic_version_jump_is_a_gap():
    h = reassign_started()
    h.topic("t", {0: [2, 3, 4]}, version=3)                   # version 2 missed
    assert_pass(h, COMPAT)


def test_partition_gap_covers_one_transition_then_rules_resume():
    h = started_history(controller=3)
    h.broker(1, up=False)
    h.gap("/brokers/topics/t/partitions/0/state")
    h.state("t", 0, 3, 2, (3,), 2)                            # across the gap: not judged
    assert_pass(h)
    h.state("t", 0, 2, 3, (2,), 3)                            # the next transition is: unclean, H11
    assert_rule(h, "H11")


# -- zk.gap without zxid ---------------------------------------------------------------------------------------
def test_gap_without_zxid_is_accepted_and_placed():
    h = started_history(controller=3)
    h.broker(1, up=False)
    h._add("zk.gap", path="/brokers/topics/t/partitions/0/state", missing_versions=[1], source="watch")
    del h.events[-1]["zxid"]                                  # an old watcher's gap
    h._add("zk.gap", path="/brokers/topics/t/partitions/0/state", missing_versions=[1], source="txnlog",
           filled=True)
    del h.events[-1]["zxid"]                                  # the reconciliation's marker
    h.state("t", 0, 3, 2, (3,), 2)
    r = assert_pass(h)
    assert r.stats["gaps"] == 1                               # the filled one marks nothing
    h._add("zk.gap", path="/brokers/topics/gone/partitions/0/state", missing_versions=[4])
    del h.events[-1]["zxid"]                                  # no later write of its path: dropped
    assert_pass(h)
