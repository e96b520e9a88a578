"""KRaft profile (reference/kraft.py): protocol-sample histories (admin.metadata with leader epochs,
kraft.quorum, faults, actions) judged against spec §8.2 / §9. A correct history passes; each injected
violation is reported with its rule id; sampling artefacts (lagging caches, skipped states) do not."""

import json

import pytest

from reference import check_conformance, check_protocol_conformance, profile_for
from reference.kraft import KRAFT_RULES

KRAFT = "kraft-3.9"
META = {"distribution": "apache-kraft", "kafka_version": "3.9.2", "cluster": {"brokers": 3, "zookeepers": 0},
        "broker_config": {}, "topics": [{"name": "t", "partitions": 1, "replication_factor": 3, "config": {}}]}


def entry(leader, le, isr, rs=(1, 2, 3), topic="t", p=0, error=None, elr=None, lke=None):
    e = {"topic": topic, "partition": p, "leader": leader, "leader_epoch": le, "replicas": list(rs),
         "isr": list(isr), "offline_replicas": [], "error": error}
    if elr is not None:
        e["eligible_leader_replicas"] = list(elr)
        e["last_known_elr"] = list(lke or ())
    return e


def leaderless(le, isr, **kw):
    """What a KRaft broker answers for a partition with leader -1 (KMC: LEADER_NOT_AVAILABLE, real LE)."""
    return entry(-1, le, isr, error="LEADER_NOT_AVAILABLE", **kw)


class KHistory:
    """Hand-written KRaft run-record events: each helper appends one event, ``t`` advances by ``dt``."""

    def __init__(self):
        self.events: list[dict] = []
        self.t = 0.0

    def _add(self, type_, dt=0.5, **f):
        self.t += dt
        self.events.append({"seq": len(self.events), "t": round(self.t, 3), "wall": 1.7e9 + self.t,
                            "type": type_, **f})
        return self

    def md(self, *entries, by=1, dt=0.5, brokers=(1, 2, 3)):
        return self._add("admin.metadata", dt, controller_id=None, brokers=list(brokers), partitions=list(entries),
                         answered_by=by, source="protocol", error=None)

    def quorum(self, leader, epoch, by=1, voters=(1, 2, 3), dt=0.0):
        return self._add("kraft.quorum", dt, leader_id=leader, leader_epoch=epoch, high_watermark=100,
                         voters=[{"id": v, "log_end_offset": 100} for v in voters], observers=[],
                         answered_by=by, error=None)

    def fault(self, fault, brokers, **params):
        fid = len(self.events)
        self._add("fault.start", 0.0, fault_id=fid, fault=fault, target=f"broker:{brokers[0]}",
                  nodes=[f"b{b}" for b in brokers], broker_ids=list(brokers), params=params)
        return fid

    def heal(self, fid, fault="kill"):
        return self._add("fault.end", 0.0, fault_id=fid, fault=fault, nodes=[], ok=True, error=None)

    def action(self, action, **params):
        return self._add("action", 0.0, action=action, params=params, ok=True, error=None)

    def wait(self, s):
        self.t += s
        return self


def check(h, profile=KRAFT, metadata=None):
    return check_conformance(h.events, metadata or META, profile)


def assert_pass(h, profile=KRAFT, metadata=None):
    r = check(h, profile, metadata)
    assert r.verdict == "PASS", [str(d) for d in r.divergences + r.invariant_violations]
    return r


def assert_rule(h, rule, profile=KRAFT, metadata=None):
    r = check(h, profile, metadata)
    assert r.verdict == "FAIL"
    assert rule in r.rules(), [str(d) for d in r.divergences + r.invariant_violations]
    return r


def failover_history():
    """Kill the leader (and quorum leader) 1: fenced after the session timeout, partition leader 2 at
    LE+1 with ISR [2, 3], new Raft leader 2 at a higher epoch; heal: 1 rejoins the ISR (same LE), then a
    preferred election moves leadership back to 1 (LE+1). Samples from broker 1, then broker 2."""
    h = KHistory()
    for _ in range(3):
        h.md(entry(1, 0, [1, 2, 3]), by=1).quorum(1, 5, by=1)
    f = h.fault("kill", [1])
    for _ in range(6):                                  # not fenced yet: caches still name 1
        h.md(entry(1, 0, [1, 2, 3]), by=2, dt=1.0).quorum(2, 6, by=2)
    h.md(entry(2, 1, [2, 3]), by=2, dt=4.0).quorum(2, 6, by=2)
    h.md(entry(2, 1, [2, 3]), by=2)
    h.heal(f)
    h.md(entry(2, 1, [2, 3, 1]), by=2, dt=3.0)
    h.md(entry(1, 2, [2, 3, 1]), by=2).quorum(2, 6, by=2)
    h.md(entry(1, 2, [2, 3, 1]), by=1).quorum(2, 6, by=1)
    return h


# -- correct histories ------------------------------------------------------------------------------
@pytest.mark.parametrize("profile", [KRAFT, "apache-kraft-3.9", "compatible", "kraft-4.1", None])
def test_failover_history_passes(profile):
    r = assert_pass(failover_history(), profile)
    assert r.stats["leader_changes"] == 2 and r.stats["elections_judged"] == 2
    assert r.stats["quorum_leader_changes"] == 1 and r.stats["samples"] == 14


def test_default_profile_of_a_kraft_run_is_kraft_version():
    r = check(failover_history(), None)
    assert r.profile == "kraft-3.9"
    assert check(failover_history(), "compatible").profile == "compatible"


def test_last_isr_member_killed_keeps_isr_and_goes_leaderless():
    """§9.3: fencing the only ISR member leaves ISR = [it], leader -1 (LE+1); unfencing re-elects it."""
    h = KHistory()
    h.md(entry(1, 3, [1]), by=2)
    f = h.fault("kill", [1])
    h.md(entry(1, 3, [1]), by=2, dt=5.0)
    h.md(leaderless(4, [1]), by=2, dt=5.0)
    h.heal(f)
    h.md(leaderless(4, [1]), by=2)
    h.md(entry(1, 5, [1]), by=2, dt=3.0)
    r = assert_pass(h)
    assert r.stats["leader_changes"] == 1 and r.stats["elections_judged"] == 1


def test_lagging_broker_cache_is_not_a_regression():
    """§8.1 caveat 1: broker 3 answers an older epoch than broker 2 did; per broker nothing goes back."""
    h = KHistory()
    h.md(entry(1, 0, [1, 2, 3]), by=2).md(entry(2, 1, [2, 3]), by=2)
    h.md(entry(1, 0, [1, 2, 3]), by=3).md(entry(2, 1, [2, 3]), by=3)
    assert_pass(h)


def test_isr_shrink_and_expansion_keep_the_leader_epoch():
    """§9.2 (MV ≥ 3.6): ISR changes bump only the partition epoch."""
    h = KHistory()
    h.md(entry(1, 0, [1, 2, 3])).md(entry(1, 0, [1, 2])).md(entry(1, 0, [1, 2, 3]))
    assert_pass(h)


def test_reassignment_completion_bumps_once_with_replica_removal():
    """§9.6: start grows RS (no LE bump), completion drops replica 3 with LE+1 and the same leader."""
    h = KHistory()
    h.md(entry(1, 0, [1, 2, 3]))
    h.md(entry(1, 0, [1, 2, 3], rs=(1, 2, 4, 3)))
    h.md(entry(1, 0, [1, 2, 3, 4], rs=(1, 2, 4, 3)))
    h.md(entry(1, 1, [1, 2, 4], rs=(1, 2, 4)))
    assert_pass(h)


def test_recreated_topic_restarts_its_epochs():
    """§8.1 caveat 7: a deleted and re-created topic starts again at LE 0 with a new leader."""
    h = KHistory()
    h.md(entry(1, 4, [1, 2, 3]))
    h.action("delete_topic", topic="t").action("create_topic", topic="t")
    h.md(entry(2, 0, [2, 3, 1], rs=(2, 3, 1)))
    assert_pass(h)


def test_failed_samples_and_entries_without_epoch_are_skipped():
    h = KHistory()
    h._add("admin.metadata", controller_id=None, brokers=[], partitions=[], answered_by=None, source="protocol",
           error="ProtocolError: timed out")
    h.md(entry(1, None, [1, 2, 3])).md(entry(2, None, [2, 3]))
    r = assert_pass(h)
    assert r.stats["samples_failed"] == 1 and r.stats["entries_without_epoch"] == 2


# -- single-answer invariants -----------------------------------------------------------------------
@pytest.mark.parametrize("bad, rule", [
    (entry(1, 0, [2, 3]), "H5"),                        # leader not in ISR
    (entry(4, 0, [4, 2], rs=(1, 2, 3)), "H6"),          # leader not a replica
    (entry(1, 0, [1, 2, 4]), "H8"),                     # ISR ⊄ replicas
    (leaderless(2, []), "H7"),                          # empty ISR without ELR (§9.3 keeps the last member)
    (entry(1, 0, [1, 2], elr=[2], lke=[]), "K2"),       # ELR ∩ ISR ≠ ∅
    (entry(1, 0, [1], elr=[4], lke=[]), "K2"),          # ELR ⊄ replicas
])
def test_single_answer_invariants(bad, rule):
    h = KHistory()
    h.md(entry(1, 0, [1, 2, 3])).md(bad)
    r = assert_rule(h, rule)
    d = next(d for d in r.invariant_violations if d.rule == rule)
    assert d.kind == "invariant" and d.rule_id == f"{KRAFT_RULES[rule][0]}/{rule}"


def test_leaderless_with_several_isr_members_is_d8():
    """§9.3: fencing keeps only the last ISR member; a leaderless partition (no ELR) has exactly one."""
    h = KHistory()
    h.md(entry(1, 0, [1, 2, 3])).md(leaderless(1, [1, 2]))
    r = assert_rule(h, "D8")
    assert r.divergences[0].rule_id == "§9.3/§8.3/D8"
    assert_pass(h, "compatible")
    assert_pass(h, "kraft-4.1")                 # ELR: members may move to the ELR instead


def reassignments(*parts, error=None):
    return {"type": "admin.reassignments", "partitions": [
        {"topic": "t", "partition": 0, "replicas": list(rs), "adding_replicas": list(ar),
         "removing_replicas": list(rr)} for rs, ar, rr in parts], "answered_by": 1, "source": "protocol",
        "error": error}


@pytest.mark.parametrize("rs, ar, rr, rule", [
    ((1, 2, 4, 3), (4,), (3,), None),           # reassign [1,2,3] -> [1,2,4]: T ++ sorted(current − T)
    ((4, 5, 1, 2), (4, 5), (1, 2), None),
    ((1, 2, 4, 3), (4,), (4,), "H15"),          # AR ∩ RR
    ((1, 2, 3), (4,), (), "H15"),               # AR ⊄ RS
    ((1, 2), (), (1, 2), "H15"),                # TRS empty
    ((1, 2, 3), (), (), "H15"),                 # listed without a reassignment
    ((1, 3, 2, 4), (4,), (3,), "D15"),          # RR not at the end
    ((5, 4, 1, 2), (5, 4), (1, 2), "D15"),      # AR not sorted
])
def test_reassignment_listing_shape(rs, ar, rr, rule):
    h = KHistory()
    h.md(entry(1, 0, [r for r in (1, 2, 3) if r in rs], rs=rs))
    h.events.append(dict(reassignments((rs, ar, rr)), seq=len(h.events), t=h.t + 0.1))
    if rule is None:
        assert_pass(h)
    else:
        assert_rule(h, rule)
        if rule == "D15":
            assert_pass(h, "compatible")
    failed = KHistory()
    failed.events.append(dict(reassignments((rs, ar, rr), error="NOT_CONTROLLER"), seq=0, t=0.1))
    assert_pass(failed)


def test_empty_isr_with_leader_is_h7_even_with_elr():
    h = KHistory()
    h.md(entry(1, 0, []))
    assert_rule(h, "H7", "kraft-4.1")


def test_empty_isr_allowed_leaderless_with_elr():
    """§9.5: with ELR (4.1 default) the ISR may be empty, then the leader is -1."""
    h = KHistory()
    h.md(entry(1, 0, [1, 2, 3])).md(leaderless(1, [], elr=[2], lke=[1]))
    assert_pass(h, "kraft-4.1")
    assert_pass(h, "kraft-3.9")                 # 3.9: only behind an unstable MV, but the answers show an ELR
    assert_pass(h, "compatible")                # other brokers may implement ELR
    h = KHistory()
    h.md(entry(1, 0, [1, 2, 3])).md(leaderless(1, []))
    assert_rule(h, "H7", "kraft-3.9")           # no ELR in sight on 3.9
    assert_pass(h, "kraft-4.0")                 # 4.0: ELR is a feature upgrade the run record does not show


def test_bad_state_repeated_by_every_sample_is_reported_once():
    h = KHistory()
    for _ in range(20):
        h.md(entry(1, 0, [2, 3]))
    r = assert_rule(h, "H5")
    assert len(r.invariant_violations) == 1


# -- epochs: H3, H4 ---------------------------------------------------------------------------------
def test_leader_epoch_backwards_in_one_brokers_answers_is_h3():
    h = KHistory()
    h.md(entry(1, 3, [1, 2, 3]), by=2).md(entry(1, 2, [1, 2, 3]), by=2)
    r = assert_rule(h, "H3")
    d = r.invariant_violations[0]
    assert d.before["leader_epoch"] == 3 and d.after["leader_epoch"] == 2 and d.seq == 1


def test_leaderless_answer_counts_for_h3():
    """A LEADER_NOT_AVAILABLE entry still carries the broker's real cached epoch (§8.1 caveat 2)."""
    h = KHistory()
    h.md(leaderless(4, [1]), by=2).md(entry(1, 3, [1]), by=2)
    assert_rule(h, "H3")


def test_two_leaders_in_one_epoch_across_brokers_is_h4():
    h = KHistory()
    h.md(entry(1, 3, [1, 2, 3]), by=1).md(entry(2, 3, [1, 2, 3]), by=2)
    assert_rule(h, "H4")


def test_synthesized_leader_minus_one_is_not_an_epoch_leader():
    """Only error-free entries pair (LE, leader): -1 with LEADER_NOT_AVAILABLE at LE 3 then leader 1 at
    LE 3 from another broker is no H4."""
    h = KHistory()
    h.md(leaderless(3, [1, 2, 3]), by=2).md(entry(1, 3, [1, 2, 3]), by=1)
    assert_pass(h, "compatible")
    assert "H4" not in check(h).rules()


def test_recreated_topic_without_action_is_seen_through_unknown_topic():
    h = KHistory()
    h.md(entry(1, 4, [1, 2, 3]), by=1)
    h.md({"topic": "t", "partition": None, "leader": None, "leader_epoch": None, "replicas": [], "isr": [],
          "offline_replicas": [], "error": "UNKNOWN_TOPIC_OR_PARTITION"}, by=1)
    h.md(entry(2, 0, [2, 3, 1], rs=(2, 3, 1)), by=1)
    assert_pass(h)
    h2 = KHistory()
    h2.md(entry(1, 4, [1, 2, 3]), by=1).md(entry(2, 0, [2, 3, 1], rs=(2, 3, 1)), by=1)
    assert_rule(h2, "H3")


# -- H11 clean election ----------------------------------------------------------------------------
def out_of_sync_elected(first=entry(1, 0, [1, 2]), then=entry(3, 1, [3]), kill=(1, 2)):
    """3 fell out of the ISR; leader 1 and follower 2 die; 3 becomes leader at LE+1."""
    h = KHistory()
    h.md(entry(1, 0, [1, 2, 3]), by=3).md(first, by=3)
    for b in kill:
        h.fault("kill", [b])
    h.md(then, by=3, dt=12.0, brokers=[b for b in (1, 2, 3) if b not in kill])
    return h


def test_new_leader_outside_previous_isr_is_h11():
    r = assert_rule(out_of_sync_elected(), "H11")
    d = r.invariant_violations[0]
    assert d.rule_id == "§8.2/§9.4/§9.5/H11" and d.before["isr"] == [1, 2] and d.after["leader"] == 3
    assert "not in the ISR" in d.explanation


def test_election_outside_sampled_isr_while_old_leader_healthy_is_not_judged():
    """Old leader 1 untouched by faults and unfenced: 3 may have joined the ISR after the sample and won a
    preferred election (a hidden ISR expansion), which samples cannot tell from an unclean election."""
    r = assert_pass(out_of_sync_elected(kill=()))
    assert r.stats["elections_hidden_isr_expansion"] == 1
    h = out_of_sync_elected(kill=())
    h.events[-1]["brokers"] = [2, 3]                      # ... unless the same answer shows 1 fenced
    assert_rule(h, "H11")


def test_unclean_election_from_leaderless_partition_is_h11():
    h = KHistory()
    h.md(entry(1, 3, [1]), by=2).md(leaderless(4, [1]), by=2).md(entry(2, 5, [2]), by=2)
    assert_rule(h, "H11")


@pytest.mark.parametrize("how", ["topic", "broker", "set_config", "elect_unclean"])
def test_permitted_unclean_election_passes(how):
    meta = json.loads(json.dumps(META))
    h = KHistory()
    if how == "topic":
        meta["topics"][0]["config"]["unclean.leader.election.enable"] = "true"
    elif how == "broker":
        meta["broker_config"]["unclean.leader.election.enable"] = "true"
    elif how == "set_config":
        h.action("set_config", topic="t", config={"unclean.leader.election.enable": "true"})
    else:
        h.action("elect_unclean", partitions=[{"topic": "t", "partition": 0}])
    h.events += [dict(e, seq=e["seq"] + len(h.events)) for e in out_of_sync_elected().events]
    r = assert_pass(h, metadata=meta)
    assert r.stats["elections_unclean_permitted"] == 1


def test_epoch_jump_is_not_judged():
    """Two hidden elections (LE+2): the intermediate ISR is unknown, H11 is not judged."""
    r = assert_pass(out_of_sync_elected(then=entry(3, 2, [3])))
    assert r.stats["epoch_jumps"] == 1 and r.stats["elections_judged"] == 0


def test_hidden_isr_expansion_before_preferred_election_passes():
    """1 rejoined the ISR between samples and a preferred election made it leader: the new ISR keeps
    the old members, which an unclean election (ISR := [leader]) would not."""
    h = KHistory()
    h.md(entry(2, 5, [2, 3]), by=2).md(entry(1, 6, [2, 3, 1]), by=2)
    r = assert_pass(h)
    assert r.stats["elections_hidden_isr_expansion"] == 1


def test_elr_member_elected_passes_and_other_fails():
    """§9.5 (ELR, 4.1): ISR empty, ELR [2] -> 2 elected with ISR [2]; the last known leader too."""
    h = KHistory()
    h.md(entry(1, 0, [1, 2, 3])).md(leaderless(1, [], elr=[2], lke=[1])).md(entry(2, 2, [2]))
    assert_pass(h, "kraft-4.1")
    h = KHistory()
    h.md(entry(1, 0, [1, 2, 3])).md(leaderless(1, [], elr=[], lke=[1])).md(entry(1, 2, [1]))
    assert_pass(h, "kraft-4.1")
    h = KHistory()
    h.md(entry(1, 0, [1, 2, 3])).md(leaderless(1, [], elr=[2], lke=[1])).md(entry(3, 2, [3]))
    assert_rule(h, "H11", "kraft-4.1")


# -- H19 and K3: fault-based liveness ---------------------------------------------------------------
def test_broker_dead_far_beyond_session_timeout_elected_is_h19():
    h = KHistory()
    h.md(entry(1, 0, [1, 2, 3]), by=2).quorum(1, 5, by=2)
    h.fault("kill", [3])
    h.md(entry(1, 0, [1, 2, 3]), by=2, dt=60.0)
    h.md(entry(3, 1, [2, 3]), by=2)
    r = assert_rule(h, "H19")
    assert "must have been fenced" in next(d for d in r.invariant_violations if d.rule == "H19").explanation


def test_broker_dead_added_to_isr_is_h19():
    h = KHistory()
    h.md(entry(1, 0, [1, 2, 3]), by=2).quorum(1, 5, by=2)
    h.fault("pause", [3])
    h.md(entry(1, 0, [1, 2]), by=2, dt=60.0).md(entry(1, 0, [1, 2, 3]), by=2)
    assert_rule(h, "H19")


def restarted_before_heal_recorded():
    """Kill 3; broker 2's answers drop it (fenced); the heal restarts it, but ``fault.end`` is recorded
    only after the restarted broker's startup, and before that 3 is unfenced and rejoins the ISR."""
    h = KHistory()
    h.md(entry(1, 0, [1, 2, 3]), by=2).quorum(1, 5, by=2)
    f = h.fault("kill", [3])
    h.md(entry(1, 0, [1, 2]), by=2, dt=12.0, brokers=(1, 2))
    h.md(entry(1, 0, [1, 2]), by=2, dt=40.0, brokers=(1, 2))                  # down 52 s > 9 s + 30 s
    h.md(entry(1, 0, [1, 2, 3]), by=2, dt=1.0)                                # registered again, caught up
    return h, f


def test_restarted_broker_rejoining_before_the_heal_is_recorded_is_not_h19():
    """§9.3: a restarting broker registers fenced and is unfenced once caught up, so a broker an
    answering broker omitted and lists again has been restarted: no longer certainly down."""
    h, f = restarted_before_heal_recorded()
    assert_pass(h.heal(f))


def test_broker_listed_throughout_is_not_revived():
    """Never omitted (never seen fenced): listing it proves no restart; the late ISR addition is H19."""
    h = KHistory()
    h.md(entry(1, 0, [1, 2, 3]), by=2).quorum(1, 5, by=2)
    h.fault("kill", [3])
    h.md(entry(1, 0, [1, 2]), by=2, dt=52.0).md(entry(1, 0, [1, 2, 3]), by=2)
    assert_rule(h, "H19")


def test_a_later_fault_makes_a_revived_broker_down_again():
    h, f = restarted_before_heal_recorded()
    h.fault("kill", [3])                                                     # killed again, heal not recorded
    h.md(entry(1, 0, [1, 2]), by=2, dt=50.0).md(entry(3, 1, [2, 3]), by=2)
    assert_rule(h, "H19")


def test_h19_needs_a_known_quorum():
    """Without DescribeQuorum answers a quorum loss (and a new controller's fresh sessions) is invisible."""
    h = KHistory()
    h.md(entry(1, 0, [1, 2, 3]), by=2)
    h.fault("kill", [3])
    h.md(entry(1, 0, [1, 2, 3]), by=2, dt=60.0).md(entry(3, 1, [2, 3]), by=2)
    assert_pass(h)


def test_election_after_quorum_recovery_counts_from_recovery():
    """After a quorum loss the new controller restarts every unfenced broker's session (§9.3)."""
    h = KHistory()
    h.md(entry(1, 0, [1, 2, 3]), by=3).quorum(1, 5, by=3)
    f1 = h.fault("kill", [1])
    h.fault("kill", [2])
    h.wait(60.0).heal(f1)                                  # quorum back at t≈61; 2 is still down
    h.md(entry(1, 0, [1, 2, 3]), by=3, dt=5.0).md(entry(2, 1, [2, 3]), by=3)
    assert_pass(h)
    h.md(entry(2, 1, [2, 3]), by=3, dt=40.0).md(entry(2, 1, [2, 3, 1]), by=3)
    assert "H19" not in check(h).rules()                   # 1 is back: may rejoin
    h.md(entry(1, 2, [2, 3, 1]), by=3).md(entry(2, 3, [2, 3, 1]), by=3)
    assert_rule(h, "H19")                                  # 2 elected 45 s after the quorum came back


def test_leader_missing_from_the_unfenced_brokers_of_the_answer_is_h19():
    """KRaft Metadata lists only unfenced brokers; fencing moves leadership first (RCM handleBrokerFenced)."""
    h = KHistory()
    h.md(entry(1, 0, [1, 2, 3]), by=2).md(entry(1, 0, [1, 2, 3]), by=2, brokers=(2, 3))
    r = assert_rule(h, "H19")
    assert "fenced" in r.invariant_violations[0].explanation
    assert_pass(h, "compatible")                           # another broker's list may mean something else
    h = KHistory()                                         # leaderless after fencing: fine
    h.md(entry(1, 0, [1])).md(leaderless(1, [1]), brokers=(2, 3))
    assert_pass(h)


def test_election_before_fencing_deadline_is_allowed():
    """H19 uses detection, not the crash: a just-killed broker may still be elected (§8.2 H19)."""
    h = KHistory()
    h.md(entry(1, 0, [1, 2, 3]), by=2)
    h.fault("kill", [3])
    h.md(entry(1, 0, [1, 2, 3]), by=2, dt=2.0).md(entry(3, 1, [2, 3]), by=2)
    assert_pass(h)


def test_answers_of_a_faulted_broker_are_not_evidence():
    """An isolated broker's cache is stale: its answers do not prove an election happened late."""
    h = KHistory()
    h.md(entry(1, 0, [1, 2, 3]), by=2).quorum(1, 5, by=1)
    h.fault("kill", [3])
    h.fault("isolate", [2])
    h.md(entry(1, 0, [1, 2, 3]), by=2, dt=60.0).md(entry(3, 1, [2, 3]), by=2)
    assert "H19" not in check(h).rules()


def test_dead_leader_not_replaced_is_k3():
    h = KHistory()
    h.md(entry(1, 0, [1, 2, 3]), by=2).quorum(2, 5, by=2)
    h.fault("kill", [1])
    h.md(entry(1, 0, [1, 2, 3]), by=2, dt=20.0)
    h.md(entry(1, 0, [1, 2, 3]), by=2, dt=25.0)            # 45 s > 9 s + 30 s
    r = assert_rule(h, "K3")
    d = r.divergences[0]
    assert d.kind == "progress" and d.rule_id == "§9.3/§8.4/K3" and d.after["leader"] == 1


def test_k3_dead_leader_kept_fails_under_compatible_too():
    """A dead broker kept as leader is a broker fault in every profile (it used to be a mere note)."""
    h = KHistory()
    h.md(entry(1, 0, [1, 2, 3]), by=2).quorum(2, 5, by=2)
    h.fault("kill", [1])
    h.md(entry(1, 0, [1, 2, 3]), by=2, dt=45.0)
    r = assert_rule(h, "K3", "compatible")
    assert r.stats["notes"] == []


def test_k3_replaced_leader_passes_under_compatible():
    h = KHistory()
    h.md(entry(1, 0, [1, 2, 3]), by=2).quorum(2, 5, by=2)
    h.fault("kill", [1])
    h.md(entry(1, 0, [1, 2, 3]), by=2, dt=5.0)              # within session timeout + grace: still allowed
    h.md(entry(2, 1, [2, 3]), by=2, dt=10.0)
    h.md(entry(2, 1, [2, 3]), by=2, dt=60.0)
    assert_pass(h, "compatible")


def test_k3_not_judged_without_quorum_majority_or_voters():
    h = KHistory()
    h.md(entry(1, 0, [1, 2, 3]), by=3).quorum(1, 5, by=3)
    h.fault("kill", [1])
    h.fault("kill", [2])                                   # 2 of 3 voters down: no controller
    h.md(entry(1, 0, [1, 2, 3]), by=3, dt=60.0)
    assert_pass(h)
    h = KHistory()                                          # voters never sampled
    h.md(entry(1, 0, [1, 2, 3]), by=2)
    h.fault("kill", [1])
    h.md(entry(1, 0, [1, 2, 3]), by=2, dt=60.0)
    assert_pass(h)


def test_k3_deadline_counts_from_quorum_recovery():
    h = KHistory()
    h.md(entry(1, 0, [1, 2, 3]), by=3).quorum(3, 5, by=3)
    h.fault("kill", [1])
    f2 = h.fault("kill", [2])
    h.wait(60.0).heal(f2)                                  # the quorum is back at t≈60.5
    h.md(entry(1, 0, [1, 2, 3]), by=3, dt=20.0)             # 20 s after recovery: within the bound
    assert "K3" not in check(h).rules()
    h.md(entry(1, 0, [1, 2, 3]), by=3, dt=25.0)             # 45 s after recovery
    assert_rule(h, "K3")


def test_k3_knows_a_dedicated_quorum_lost_its_majority():
    """Dedicated controllers (voters 101..103, no broker among them): the fault on the quorum names
    them in ``node_ids`` (``broker_ids`` is empty), so the quorum is known lost and K3 counts from its
    recovery, as on combined nodes (quorum.majority_loss on --layout dedicated-controllers)."""
    def run(with_node_ids: bool):
        h = KHistory()
        h.md(entry(5, 0, [5, 4]), by=4).quorum(102, 5, by=4, voters=(101, 102, 103))
        fid = len(h.events)
        h._add("fault.start", 0.0, fault_id=fid, fault="kill", target="quorum-majority",
               nodes=["c101", "c103"], broker_ids=[], params={},
               **({"node_ids": [101, 103]} if with_node_ids else {}))
        h.fault("kill", [5])                                  # no quorum: nobody can fence broker 5
        h.wait(40.0).heal(fid)                                # the quorum is back at t≈40.5
        h.md(entry(5, 0, [5, 4]), by=4, dt=1.0)                # 41 s after 5 died, 1 s after recovery
        return check(h).rules()
    assert "K3" not in run(with_node_ids=True)
    assert "K3" in run(with_node_ids=False)                   # a record without node_ids: as before


def test_killed_with_heal_none_stays_down_until_started():
    h = KHistory()
    h.md(entry(1, 0, [1, 2, 3]), by=2).quorum(2, 5, by=2)
    f = h.fault("kill", [1], heal="none")
    h.heal(f)
    h.md(entry(1, 0, [1, 2, 3]), by=2, dt=45.0)
    assert_rule(h, "K3")
    h = KHistory()
    h.md(entry(1, 0, [1, 2, 3]), by=2).quorum(2, 5, by=2)
    f = h.fault("kill", [1], heal="none")
    h.heal(f)
    h.fault("start", [1])
    h.md(entry(1, 0, [1, 2, 3]), by=2, dt=45.0)
    assert_pass(h)


# -- D7: KRaft leader-epoch accounting ---------------------------------------------------------------
def test_epoch_bump_without_leader_change_or_removal_is_d7():
    h = KHistory()
    h.md(entry(1, 0, [1, 2, 3]), by=2).md(entry(1, 1, [1, 2]), by=2)
    r = assert_rule(h, "D7")
    assert r.divergences[0].rule_id == "§9.2/§8.3/D7"
    assert_pass(h, "compatible")                           # determinism only under kraft-*
    h.action("reassign", partitions=[{"topic": "t", "partition": 0, "replicas": [1, 2, 3]}])
    h.md(entry(1, 2, [1, 2]), by=2)
    assert "D7" in check(h).rules()                        # the first bump happened before the action
    h2 = KHistory()
    h2.action("reassign", partitions=[{"topic": "t", "partition": 0, "replicas": [1, 2, 3]}])
    h2.md(entry(1, 0, [1, 2, 3]), by=2).md(entry(1, 1, [1, 2]), by=2)
    assert_pass(h2)


def test_old_metadata_version_bumps_epoch_on_isr_shrink():
    """MV < 3.6 (KAFKA-15021): an ISR shrink bumps LE; a shrink at the same LE is the divergence."""
    h = KHistory()
    h.md(entry(1, 0, [1, 2, 3]), by=2).md(entry(1, 0, [1, 2]), by=2)
    assert_rule(h, "D7", "kraft-3.5")
    assert_pass(h, KRAFT)
    h = KHistory()
    h.md(entry(1, 0, [1, 2, 3]), by=2).md(entry(1, 1, [1, 2]), by=2)
    assert_pass(h, "kraft-3.5")


# -- quorum: H1, K1 ---------------------------------------------------------------------------------
def test_raft_epoch_backwards_in_one_brokers_answers_is_h1():
    h = KHistory()
    h.md(entry(1, 0, [1, 2, 3])).quorum(1, 6, by=2).quorum(1, 5, by=2)
    r = assert_rule(h, "H1")
    assert r.invariant_violations[0].rule_id == "§8.2/§9.1/H1"


def test_stale_quorum_answer_from_another_broker_passes():
    """An isolated old quorum leader still answering at its old epoch via broker 1 is not a regression."""
    h = KHistory()
    h.md(entry(1, 0, [1, 2, 3])).quorum(1, 5, by=1).quorum(2, 6, by=2).quorum(1, 5, by=1)
    assert_pass(h)


def test_two_quorum_leaders_in_one_epoch_is_h1():
    """A quorum-leader change without a higher Raft epoch."""
    h = KHistory()
    h.md(entry(1, 0, [1, 2, 3])).quorum(1, 5, by=1).quorum(2, 5, by=2)
    r = assert_rule(h, "H1")
    assert "two quorum leaders" in r.invariant_violations[0].explanation


def test_quorum_leader_not_a_voter_is_k1():
    h = KHistory()
    h.md(entry(1, 0, [1, 2, 3])).quorum(4, 5, voters=(1, 2, 3))
    assert_rule(h, "K1")


def test_failed_quorum_answers_are_ignored():
    h = KHistory()
    h._add("kraft.quorum", leader_id=None, leader_epoch=None, high_watermark=None, voters=[], observers=[],
           answered_by=None, error="NOT_LEADER_OR_FOLLOWER")
    h.quorum(1, 5)
    assert assert_pass(h).stats["quorum_samples"] == 1


# -- dispatch and result shape ----------------------------------------------------------------------
def test_zk_profile_on_a_kraft_run_is_an_error():
    with pytest.raises(ValueError, match="no ZooKeeper"):
        check(failover_history(), "apache-zk-3.9")
    with pytest.raises(ValueError, match="no ZooKeeper"):
        check(failover_history(), profile_for("3.9", "apache-zk-3.9"))


def test_run_without_zookeeper_goes_to_the_protocol_checker():
    meta = {"cluster": {"brokers": 3, "zookeepers": 0}, "distribution": "generic"}
    r = check_conformance(failover_history().events, meta, "compatible")
    assert r.profile == "compatible" and r.stats["samples"] == 14
    zk = check_conformance(failover_history().events, {"distribution": "apache-zk"}, "compatible")
    assert "samples" not in zk.stats                       # ZooKeeper runs keep the ZK checker


def test_kraft_profile_names():
    assert profile_for(None, "kraft-3.9").mode == "kraft"
    assert profile_for("3.9.2", "apache-kraft").name == "kraft-3.9"
    assert profile_for("4.1.0", None, kraft_run=True).name == "kraft-4.1"
    assert profile_for("3.9.2", None).name == "apache-zk-3.9"          # unchanged for ZooKeeper runs
    with pytest.raises(ValueError, match="3.3"):
        profile_for(None, "kraft-3.2")


def test_result_shape_matches_the_zk_checker():
    r = check(out_of_sync_elected())
    d = r.to_dict()
    json.dumps(d)
    v = d["invariant_violations"][0]
    assert set(v) >= {"rule", "rule_id", "kind", "subject", "seq", "zxid", "before", "after", "allowed",
                      "explanation"}
    assert v["subject"] == "t-0" and v["kind"] == "invariant" and d["verdict"] == "FAIL"
    assert d["profile"] == KRAFT


def test_direct_call():
    r = check_protocol_conformance(failover_history().events, META, profile_for(None, KRAFT))
    assert r.verdict == "PASS"


# -- property: histories of a simulated KRaft cluster, sampled with lag and gaps, pass ---------------
class KraftSim:
    """A small KRaft cluster that follows spec §9.3/§9.4 (combined nodes 1-3 = voters, RF-3 partitions),
    recording what the nemesis and the protocol sampler would: kills/heals, and every 0.5 s one broker's
    Metadata answer from its cache (which lags 0-0.4 s) plus DescribeQuorum. Deterministic per seed."""

    SESSION, STEP = 9.0, 0.1

    def __init__(self, rng, rs_list, unclean=False, sample_every=5, churn=0.004):
        import copy
        self.copy = copy.deepcopy
        self.rng, self.unclean = rng, unclean
        self.sample_every, self.churn = sample_every, churn   # steps between samples; ISR/preferred churn
        self.t = 0.0
        self.brokers = (1, 2, 3)
        self.alive = set(self.brokers)
        self.fenced: set = set()
        self.last_hb = {b: 0.0 for b in self.brokers}
        self.up_at: dict = {}
        self.parts = [{"rs": list(rs), "leader": rs[0], "le": 0, "isr": list(rs)} for rs in rs_list]
        self.raft = {"leader": 1, "epoch": 1, "lost_at": None}
        self.log = [(0.0, self.copy(self.parts), frozenset())]
        self.joins: list = []                 # (time, partition, broker): catch-up done
        self.faults: dict = {}                # broker -> fault id
        self.h = KHistory()
        self.preferred = None
        self.unclean_elections = 0

    # the metadata log -------------------------------------------------------------------------
    def commit(self):
        self.log.append((self.t, self.copy(self.parts), frozenset(self.fenced)))

    def view(self, at):
        snap = self.log[0]
        for s in self.log:
            if s[0] <= at:
                snap = s
        return snap

    def majority(self):
        return len(self.alive & set(self.brokers)) >= 2

    def active(self, b):
        return b not in self.fenced

    def elect(self, p, exclude=()):
        """§9.4 ONLINE/UNCLEAN: keep a valid leader, else first RS replica in the ISR and active, else
        (unclean) first active replica with ISR := [it], else -1."""
        ok = [r for r in p["rs"] if r in p["isr"] and self.active(r) and r not in exclude]
        if p["leader"] in ok:
            return p["leader"], p["isr"]
        if ok:
            return ok[0], p["isr"]
        if self.unclean:
            any_ok = [r for r in p["rs"] if self.active(r) and r not in exclude]
            if any_ok:
                self.unclean_elections += 1
                return any_ok[0], [any_ok[0]]
        return -1, p["isr"]

    def set_leader(self, p, leader, isr):
        if leader != p["leader"]:
            p["le"] += 1
        p["leader"], p["isr"] = leader, list(isr)

    # the controller ----------------------------------------------------------------------------
    def controller_step(self):
        if not self.majority():
            if self.raft["lost_at"] is None:
                self.raft["lost_at"] = self.t
            return
        if self.raft["lost_at"] is not None or self.raft["leader"] not in self.alive:
            # a new Raft leader (about a second later); it starts every session afresh (§9.3)
            if self.raft["lost_at"] is None:
                self.raft["lost_at"] = self.t
            if self.t - self.raft["lost_at"] < 1.0:
                return
            self.raft = {"leader": self.rng.choice(sorted(self.alive)), "epoch": self.raft["epoch"] + 1,
                         "lost_at": None}
            for b in self.brokers:
                self.last_hb[b] = self.t
        for b in self.alive:
            self.last_hb[b] = self.t
        for b in self.brokers:                      # fencing: leadership first, then the fence record
            if b not in self.fenced and b not in self.alive and self.t - self.last_hb[b] >= self.SESSION:
                for p in self.parts:
                    if b in p["isr"]:
                        isr = [r for r in p["isr"] if r != b] or p["isr"]
                        p["isr"] = isr
                        leader, isr = self.elect(p, exclude=(b,))
                        self.set_leader(p, leader, isr)
                self.commit()
                self.fenced.add(b)
                self.commit()
        for b in sorted(self.fenced):               # unfencing, then elections of leaderless partitions
            if b in self.alive and self.t - self.up_at.get(b, self.t) >= 1.0:
                self.fenced.discard(b)
                self.commit()
                for p in self.parts:
                    if p["leader"] == -1:
                        self.set_leader(p, *self.elect(p))
                        self.commit()
                    if b not in p["isr"]:
                        self.joins.append((self.t + self.rng.uniform(0.5, 3.0), p, b))
        for j in [j for j in self.joins if j[0] <= self.t]:   # ISR expansion by the leader (same LE)
            self.joins.remove(j)
            _, p, b = j
            if b in self.alive and not b in self.fenced and p["leader"] in self.alive and b not in p["isr"] \
                    and p["leader"] != -1:
                p["isr"].append(b)
                self.commit()
        for p in self.parts:
            r = self.rng.random()
            if r < self.churn and p["leader"] in self.alive and len(p["isr"]) > 1:     # a follower lags: shrink
                f = self.rng.choice([x for x in p["isr"] if x != p["leader"]])
                p["isr"].remove(f)
                self.commit()
                self.joins.append((self.t + self.rng.uniform(1.0, 10.0), p, f))
            elif r < 2 * self.churn and p["leader"] != p["rs"][0] and p["rs"][0] in p["isr"] \
                    and self.active(p["rs"][0]) and p["rs"][0] in self.alive:      # (auto) preferred election
                self.set_leader(p, p["rs"][0], p["isr"])
                self.commit()

    # nemesis and sampler -----------------------------------------------------------------------
    def nemesis_step(self):
        if self.rng.random() < 0.01:
            down = [b for b in self.brokers if b not in self.alive]
            if down and self.rng.random() < 0.6:
                b = self.rng.choice(down)
                self.h.heal(self.faults.pop(b))
                self.alive.add(b)
                self.up_at[b] = self.t + self.rng.uniform(3.0, 8.0)   # start-up, then registration
            elif len(down) < 2:
                b = self.rng.choice(sorted(self.alive))
                self.faults[b] = self.h.fault("kill", [b])
                self.alive.discard(b)

    def sample(self):
        alive = sorted(self.alive)
        by = self.preferred if self.preferred in self.alive else alive[0]
        self.preferred = by
        _, parts, fenced = self.view(self.t - self.rng.uniform(0.0, 0.4))
        entries = [entry(p["leader"], p["le"], p["isr"], rs=p["rs"], p=i) if p["leader"] != -1
                   else leaderless(p["le"], p["isr"], rs=p["rs"], p=i) for i, p in enumerate(parts)]
        self.h.md(*entries, by=by, dt=0.0, brokers=[b for b in self.brokers if b not in fenced])
        if self.majority() and self.raft["lost_at"] is None:
            self.h.quorum(self.raft["leader"], self.raft["epoch"], by=by)

    def run(self, seconds):
        n = 0
        while self.t < seconds:
            self.t = round(self.t + self.STEP, 3)
            self.h.t = self.t
            self.nemesis_step()
            self.controller_step()
            n += 1
            if n % self.sample_every == 0:
                self.sample()
        return self.h


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("unclean", [False, True])
def test_simulated_kraft_histories_pass(seed, unclean):
    import random
    sim = KraftSim(random.Random(seed), [(1, 2, 3), (2, 3, 1), (3, 1, 2)], unclean=unclean)
    h = sim.run(240.0)
    meta = json.loads(json.dumps(META))
    meta["broker_config"]["unclean.leader.election.enable"] = str(unclean).lower()
    r = check_conformance(h.events, meta, KRAFT)
    assert r.verdict == "PASS", [str(d) for d in r.divergences + r.invariant_violations][:5]
    assert r.stats["samples"] > 400 and r.stats["leader_epochs"] >= 3


@pytest.mark.parametrize("seed", range(8))
def test_sparsely_sampled_churny_histories_pass(seed):
    """Samples every 3 s over a cluster with frequent ISR shrinks/expansions and preferred elections:
    skipped states (epoch jumps, hidden ISR expansions before an election) must not be reported."""
    import random
    sim = KraftSim(random.Random(100 + seed), [(1, 2, 3), (2, 3, 1), (3, 1, 2)], sample_every=30, churn=0.03)
    r = check_conformance(sim.run(300.0).events, META, KRAFT)
    assert r.verdict == "PASS", [str(d) for d in r.divergences + r.invariant_violations][:5]


def test_simulated_history_with_an_injected_unclean_election_fails():
    """The simulator with unclean election on, judged as if it were off (the broker forced it on): a
    history fails with H11 exactly when the cluster made an unclean election."""
    import random
    with_unclean = 0
    for seed in range(12):
        sim = KraftSim(random.Random(seed), [(1, 2, 3), (2, 3, 1), (3, 1, 2)], unclean=True)
        h = sim.run(240.0)
        r = check_conformance(h.events, META, KRAFT)
        assert r.rules() <= {"H11"}, [str(d) for d in r.divergences + r.invariant_violations][:5]
        assert (r.verdict == "FAIL") == (sim.unclean_elections > 0), (seed, sim.unclean_elections)
        with_unclean += sim.unclean_elections > 0
    assert with_unclean >= 3


def test_recreation_with_the_runners_create_topic_params():
    """The runner's create_topic params are TopicSpec.to_dict(): ``partitions`` is a count, the topic is
    ``name``; the checker must read them (a real KRaft run crashed on this shape once)."""
    h = KHistory()
    h.md(entry(1, 4, [1, 2, 3]))
    h.action("delete_topic", name="t")
    h.action("create_topic", name="t", partitions=1, replication_factor=3, config={}, assignment=None)
    h.md(entry(2, 0, [2, 3, 1], rs=(2, 3, 1)))
    assert_pass(h)


def test_a_broker_whose_heal_began_may_rejoin_before_the_heal_ends():
    """``fault.heal`` (the heal begins: the broker is being restarted) ends "certainly down"; its
    rejoining the ISR before ``fault.end`` (recorded after the startup) is no H19."""
    h = KHistory()
    h.md(entry(1, 0, [1, 2, 3]), by=2).quorum(1, 5, by=2)
    f = h.fault("kill", [3])
    h.md(entry(1, 0, [1, 2]), by=2, dt=52.0)
    h._add("fault.heal", 0.0, fault_id=f, fault="kill", nodes=["b3"])
    h.md(entry(1, 0, [1, 2, 3]), by=2, dt=20.0)
    assert_pass(h.heal(f))


def test_with_heal_events_recorded_a_listed_again_broker_before_its_heal_is_h19():
    """A record with ``fault.heal`` events says when restarts began: a dead broker that an answer
    lists again (unfenced) and that joins an ISR before its heal began is H19 — the inference from
    answers is only for older records."""
    h = KHistory()
    h.md(entry(1, 0, [1, 2, 3]), by=2).quorum(1, 5, by=2)
    f = h.fault("kill", [3])
    h.md(entry(1, 0, [1, 2]), by=2, dt=12.0, brokers=(1, 2))
    h.md(entry(1, 0, [1, 2]), by=2, dt=40.0, brokers=(1, 2))
    h.md(entry(1, 0, [1, 2, 3]), by=2, dt=1.0)                  # unfenced and in the ISR while still dead
    h._add("fault.heal", 0.0, fault_id=f, fault="kill", nodes=["b3"])
    assert_rule(h.heal(f), "H19")


def test_heal_none_kill_stays_down_after_its_heal_event():
    """A kill with ``heal: none`` is not restarted by its heal: still certainly down afterwards."""
    h = KHistory()
    h.md(entry(1, 0, [1, 2, 3]), by=2).quorum(1, 5, by=2)
    f = h.fault("kill", [3], heal="none")
    h._add("fault.heal", 1.0, fault_id=f, fault="kill", nodes=["b3"])
    h.heal(f)
    h.md(entry(1, 0, [1, 2]), by=2, dt=52.0).md(entry(1, 0, [1, 2, 3]), by=2)
    assert_rule(h, "H19")
