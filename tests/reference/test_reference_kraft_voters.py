"""The dynamic quorum (KIP-853) on the metadata log: rules Q1-Q7 (reference/kraft_voters.py).

Hand-built ``meta.*`` logs (the shape harness/observer/kraft_events.py replays from a real 4.4.0 log: a
LeaderChangeMessage, the KRaftVersionRecord and the bootstrap VotersRecord in epoch 1, then the
FeatureLevelRecords): for each rule one log that passes and one that violates it, and a grow-then-shrink
log with a leader handover that passes whole."""

from harness.observer.kraft_events import KraftEventBuilder
from harness.observer.kraft_metadata import MetaRecord
from reference.kraft_rules import KRAFT_RULES
from reference.kraft_voters import implicit_kraft_version_0, judge_voters, unasked_feature_changes
from tests.reference.test_reference_kraft_log import W0, MetaLog, assert_pass, assert_rules, check


def _voter(i: int, d: str | None = None) -> dict:
    return {"id": i, "directory_id": d or f"dir-{i}", "endpoints": [f"CONTROLLER://controller{i}:9094"]}


class QuorumLog(MetaLog):
    """A MetaLog whose quorum is dynamic: voters 1-3 in a bootstrap VotersRecord, kraft.version 1."""

    def __init__(self, voters=(1, 2, 3), kraft_version=1, **kw):
        self.epoch = 1
        super().__init__(**kw)
        self.kraft(kraft_version)
        if voters is not None:
            self.voters(*voters)

    def _m(self, type_, dt=0.1, **f):
        super()._m(type_, dt, **f)
        self.meta[-1]["raft_epoch"] = self.epoch
        return self

    def kraft(self, level):
        return self._m("meta.kraft_version", level=level)

    def voters(self, *ids, dirs=None, dt=0.1):
        return self._m("meta.voters", dt, voters=[_voter(i, (dirs or {}).get(i)) for i in ids])

    def elect(self, leader, voters, dt=0.5):
        """A new epoch whose LeaderChangeMessage names ``leader``."""
        self.epoch += 1
        return self.leader_change(voters, leader=leader, dt=dt)

    def quorum_answer(self, at_wall, hw, epoch=None):
        """A DescribeQuorum answer (``kraft.quorum``) arriving at wall time ``at_wall``."""
        self.run.append({"type": "kraft.quorum", "t": at_wall - W0, "wall": at_wall, "leader_id": 1,
                         "leader_epoch": epoch or self.epoch, "high_watermark": hw, "voters": [], "observers": [],
                         "error": None, "answered_by": 1})
        return self


def grow_and_shrink():
    """3 -> 5 voters one at a time, then the leader (1) removes itself and 2 takes over in epoch 2."""
    log = QuorumLog().create().voters(1, 2, 3, 4).voters(1, 2, 3, 4, 5)
    log.voters(2, 3, 4, 5)                  # removes leader 1 of epoch 1
    return log.elect(2, [2, 3, 4, 5]).change(leader=2, isr=[2, 3])


def test_every_quorum_rule_has_a_section_and_a_source():
    for rule in ("Q1", "Q2", "Q3", "Q4", "Q5", "Q6", "Q7"):
        sections, kind, title = KRAFT_RULES[rule]
        assert sections.startswith("§9") and kind in ("invariant", "progress") and title


def test_grow_and_shrink_with_a_handover_passes():
    r = assert_pass(grow_and_shrink())
    q = r.stats["metadata_log"]["quorum"]
    assert q["voter_records"] == 4 and q["voter_changes"] == 3
    assert q["voter_set"] == [2, 3, 4, 5] and q["kraft_version"] == 1


def test_an_endpoint_update_is_no_voter_change():
    log = QuorumLog().voters(1, 2, 3, 4)
    log._m("meta.voters", voters=[_voter(1), _voter(2), _voter(3),
                                  {**_voter(4), "endpoints": ["CONTROLLER://10.0.0.4:9094"]}])
    r = assert_pass(log)
    assert r.stats["metadata_log"]["quorum"]["voter_changes"] == 1


def test_two_voters_added_in_one_record_is_q1():
    assert_rules(QuorumLog().voters(1, 2, 3, 4, 5), {"Q1"})


def test_a_replaced_disk_in_one_record_is_q1_and_in_two_passes():
    # voter 3 with a new directory id: remove (3, old) then add (3, new), never both at once
    assert_rules(QuorumLog().voters(1, 2, 3, dirs={3: "new"}), {"Q1"})
    assert_pass(QuorumLog().voters(1, 2).voters(1, 2, 3, dirs={3: "new"}))


def test_a_voter_change_before_the_previous_committed_is_q2():
    # two voter changes in flight: the leader of epoch 1 still answers a high watermark at the first
    # change's offset 5 s after the second change was appended
    log = QuorumLog().voters(1, 2, 3, 4)
    first = log.meta[-1]["offset"]
    log.voters(1, 2, 3, 4, 5, dt=0.05)
    appended = log.meta[-1]["time_ms"] / 1000.0
    assert_rules(log.quorum_answer(appended + 5, hw=first), {"Q2"})


def test_q2_needs_an_answer_that_proves_it():
    log = QuorumLog().voters(1, 2, 3, 4)
    first = log.meta[-1]["offset"]
    log.voters(1, 2, 3, 4, 5)
    appended = log.meta[-1]["time_ms"] / 1000.0
    assert_pass(log.quorum_answer(appended + 5, hw=first + 1))            # committed: fine
    log2 = QuorumLog().voters(1, 2, 3, 4)
    log2.voters(1, 2, 3, 4, 5)
    assert_pass(log2.quorum_answer(appended + 1, hw=first))               # too close to the append: no proof
    log3 = QuorumLog().voters(1, 2, 3, 4)
    log3.voters(1, 2, 3, 4, 5)
    assert_pass(log3.quorum_answer(appended + 5, hw=first, epoch=7))      # another epoch's leader: no proof


def test_a_removed_voter_elected_is_q3():
    log = QuorumLog().voters(1, 2).voters(1, 2, 4)       # 3 removed, 4 added
    assert_rules(log.elect(3, [1, 2, 3]), {"Q3"})
    assert_pass(QuorumLog().voters(1, 2).voters(1, 2, 4).elect(4, [1, 2, 4]))


def test_a_removed_leader_that_keeps_leading_is_q4():
    log = QuorumLog().voters(2, 3)                  # leader 1 of epoch 1 removed
    log.create(leader=2, isr=(2, 3), rs=(2, 3)).change(isr=[2], dt=HANDOVER_PLUS)
    assert_rules(log, {"Q4"})


def test_a_removed_leader_at_the_end_of_the_log_is_not_judged():
    assert_pass(QuorumLog().voters(2, 3))


def test_a_removed_leader_handing_over_late_is_q4():
    assert_rules(QuorumLog().voters(2, 3).elect(2, [2, 3], dt=HANDOVER_PLUS), {"Q4"})


def test_an_empty_voter_set_is_q5():
    assert_rules(QuorumLog(voters=(1,)).elect(1, [1]).voters(), {"Q5"})


def test_kraft_version_going_down_is_q6_and_q7():
    assert_rules(QuorumLog().kraft(0), {"Q6", "Q7"})


def test_a_voter_change_on_a_static_quorum_is_q6():
    # kraft.version 0 with a VotersRecord change (a static quorum has none)
    assert_rules(QuorumLog(kraft_version=0).voters(1, 2, 3, 4), {"Q6"})


def test_kraft_version_raised_without_being_asked_is_q7():
    # KAFKA-21426: a release-version upgrade (metadata.version asked) also turned the static quorum dynamic
    log = QuorumLog(voters=None, kraft_version=0)
    log.action("feature_upgrade", features={"metadata.version": 27}, release_version="4.4")
    log.feature("metadata.version", 27).kraft(1).voters(1, 2, 3)
    r = assert_rules(log, {"Q7"})
    (d,) = r.invariant_violations
    assert "kraft.version changed from 0 to 1" in d.explanation


def test_features_asked_for_pass():
    log = QuorumLog(voters=None, kraft_version=0)
    log.action("feature_upgrade", features={"kraft.version": 1, "metadata.version": 27})
    assert_pass(log.feature("metadata.version", 27).kraft(1).voters(1, 2, 3))


def test_unasked_feature_changes_pure():
    meta = [{"type": "meta.feature", "offset": 1, "name": "transaction.version", "level": 1},
            {"type": "meta.feature", "offset": 2, "name": "transaction.version", "level": 2},
            {"type": "meta.kraft_version", "offset": 3, "level": 0},
            {"type": "meta.feature", "offset": 4, "name": "group.version", "level": 1}]
    assert unasked_feature_changes(meta, []) == [{"offset": 2, "feature": "transaction.version", "from": 1, "to": 2}]
    asked = [{"type": "action", "params": {"features": {"transaction.version": 2}}}]
    assert unasked_feature_changes(meta, asked) == []


def test_a_static_quorum_log_passes():
    # kraft.version 0, no VotersRecord: the rules have nothing to say
    r = assert_pass(QuorumLog(voters=None, kraft_version=0).create().change(leader=2, isr=[2, 3]))
    assert r.stats["metadata_log"]["quorum"]["voter_set"] is None


def test_the_replay_emits_voters_and_kraft_version():
    b = KraftEventBuilder()
    b.feed(MetaRecord(1, 1000, 1, True, "KRaftVersionRecord", None, None, {"version": 0, "kraft_version": 1}))
    b.feed(MetaRecord(2, 1000, 1, True, "VotersRecord", None, None, {"version": 0, "voters": [
        {"voter_id": 101, "voter_directory_id": "yj4X9GtjPg-TxR84hfUR4Q",
         "endpoints": [{"name": "CONTROLLER", "host": "controller101", "port": 9094}],
         "kraft_version_feature": {"min_supported_version": 0, "max_supported_version": 1}}]}))
    kv, vs = b.events
    assert kv["type"] == "meta.kraft_version" and kv["level"] == 1 and kv["offset"] == 1
    assert vs["type"] == "meta.voters" and vs["voters"] == [
        {"id": 101, "directory_id": "yj4X9GtjPg-TxR84hfUR4Q", "endpoints": ["CONTROLLER://controller101:9094"]}]


HANDOVER_PLUS = 31.0


def _static_log(*extra):
    """A static quorum's log from offset 0 (no KRaftVersionRecord in the bootstrap: kraft.version 0)."""
    base = [{"type": "meta.leader_change", "offset": 0, "time_ms": 1, "raft_epoch": 1, "leader_id": 1,
             "voters": [1, 2, 3], "granting_voters": [1, 2]},
            {"type": "meta.feature", "offset": 2, "time_ms": 2, "raft_epoch": 1, "name": "metadata.version",
             "level": 33}]
    return base + [{"time_ms": 10 + i, "raft_epoch": 1, "offset": 10 + i, **e} for i, e in enumerate(extra)]


def _judge(meta, actions=()):
    found = []
    judge_voters(list(actions), meta, lambda rule, ev, msg, key=None: found.append((rule, msg)))
    return found


def test_a_static_quorum_made_dynamic_by_a_release_upgrade_is_q7():
    # as seen on 4.4.0 (KAFKA-21426): `kafka-features upgrade --release-version 4.4-IV2` on a static quorum
    upgrade = {"type": "action", "action": "feature_upgrade",
               "params": {"release_version": "4.4-IV2", "features": {"metadata.version": 33}}}
    meta = _static_log({"type": "meta.kraft_version", "level": 1},
                       {"type": "meta.voters", "voters": [_voter(1), _voter(2), _voter(3)]},
                       {"type": "meta.feature", "name": "metadata.version", "level": 33})
    assert [r for r, _ in _judge(meta, [upgrade])] == ["Q7"]
    asked = dict(upgrade, params={"features": {"kraft.version": 1}})
    assert _judge(meta, [asked]) == []


def test_a_dynamic_bootstrap_is_not_implicit_kraft_version_0():
    meta = _static_log()
    meta.insert(1, {"type": "meta.kraft_version", "offset": 1, "time_ms": 1, "raft_epoch": 1, "level": 1})
    assert not implicit_kraft_version_0(sorted(meta, key=lambda e: e["offset"]))
    assert implicit_kraft_version_0(_static_log())
    assert not implicit_kraft_version_0(_static_log()[1:])          # not read from offset 0: unknown
