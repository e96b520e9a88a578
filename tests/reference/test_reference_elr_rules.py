"""ELR (KIP-966) on the KRaft metadata log: rule L13 (an ELR member is elected only when the target ISR is
empty) and the replay of ClearElrRecord (a min.insync.replicas change clears every ELR of the topic).
Facts from the 4.4.0 jars (docs/kraft.md "ELR rules")."""

from harness.observer.kraft_events import KraftEventBuilder
from harness.observer.kraft_wire import MetaRecord, decode_metadata_value
from tests.reference.test_reference_kraft_log import MetaLog, assert_pass, assert_rules


def test_elr_election_with_the_isr_emptied_passes():
    log = MetaLog(elr=True).min_isr(3).create()
    log.change(isr=[1], elr=[2, 3]).change(leader=2, isr=[2], elr=[1, 3])
    r = assert_pass(log)
    assert r.stats["metadata_log"]["elections_elr"] == 1


def test_elr_election_while_an_isr_member_stays_is_l13():
    log = MetaLog(elr=True).min_isr(3).create()
    log.change(isr=[1], elr=[2, 3]).change(leader=2, isr=[1, 2], elr=[3])
    r = assert_rules(log, {"L13"})
    assert r.invariant_violations[0].allowed == ["isr=[2]"]


def test_elr_election_keeping_the_leader_in_the_elr_is_l13():
    log = MetaLog(elr=True).min_isr(3).create()
    log.change(isr=[1], elr=[2, 3]).change(leader=2, isr=[2], elr=[1, 2, 3])
    assert "L13" in assert_rules(log, {"L13", "L4", "L11"}).rules()


def _rec(offset, name, api_key, fields):
    return MetaRecord(offset, 1000 + offset, 1, False, name, api_key, 0, fields, None)


def test_clear_elr_record_decodes():
    # frame version 1, api key 28, version 0, compact string "t" (length + 1), no tagged fields
    name, key, version, fields, problem = decode_metadata_value(bytes([1, 28, 0, 2]) + b"t" + bytes([0]))
    assert (name, key, problem, fields["topic_name"]) == ("ClearElrRecord", 28, None, "t")


def test_clear_elr_replay_empties_the_elr_of_that_topic_only():
    b = KraftEventBuilder()
    b.feed(_rec(0, "TopicRecord", 2, {"name": "t", "topic_id": "A"}))
    b.feed(_rec(1, "TopicRecord", 2, {"name": "u", "topic_id": "B"}))
    for off, tid in ((2, "A"), (3, "B")):
        b.feed(_rec(off, "PartitionRecord", 3, {
            "topic_id": tid, "partition_id": 0, "leader": 1, "leader_epoch": 0, "partition_epoch": 0,
            "isr": [1], "replicas": [1, 2, 3], "adding_replicas": [], "removing_replicas": [],
            "eligible_leader_replicas": [2, 3], "last_known_elr": []}))
    b.feed(_rec(4, "ClearElrRecord", 28, {"topic_name": "t"}))
    cleared = [e for e in b.events if e.get("record") == "ClearElrRecord"]
    assert [(e["topic"], e["elr"], e["partition_epoch"]) for e in cleared] == [("t", [], 1)]
    assert b.partitions[("B", 0)]["elr"] == [2, 3]
    assert any(e["type"] == "meta.clear_elr" and e["topic"] == "t" for e in b.events)
    b.feed(_rec(5, "ClearElrRecord", 28, {"topic_name": ""}))          # "" = every topic
    assert b.partitions[("B", 0)]["elr"] == [] and b.partitions[("B", 0)]["partition_epoch"] == 1


def test_cleared_elr_is_the_state_later_records_are_judged_against():
    # without the replay of ClearElrRecord the checker kept ELR [2, 3] and flagged the next record (L11)
    log = MetaLog(elr=True).min_isr(3).create().change(isr=[1], elr=[2, 3])
    log.min_isr(1, topic="t")
    log._m("meta.clear_elr", topic="t")
    st = log.parts[("t", 0)]
    st.update(elr=[], partition_epoch=st["partition_epoch"] + 1)
    log._m("meta.partition", topic="t", partition=0, topic_id="id-t", **dict(st), record="ClearElrRecord",
           changed=["elr", "last_known_elr"])
    r = assert_pass(log.change(isr=[1, 2]))
    assert r.stats["metadata_log"]["elr_cleared"] == 1
