"""ELR (KIP-966) on the KRaft metadata log: rule L13 (an ELR member is elected only when the target ISR is
empty) and the replay of ClearElrRecord (a min.insync.replicas change clears every ELR of the topic).
Facts from the 4.4.0 jars (docs/kraft.md "ELR rules")."""

import pytest

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


# -- L14: a min.insync.replicas ConfigRecord is followed in its batch by a ClearElrRecord (4.1+, ELR on) --

META_44 = {"distribution": "apache-kraft", "kafka_version": "4.4.0", "cluster": {"brokers": 3, "zookeepers": 0},
           "broker_config": {}, "topics": [{"name": "t", "partitions": 1, "replication_factor": 3, "config": {}}]}


def _min_isr_batch(log, value, topic=None, clear=True, clear_topic=None):
    """A ConfigRecord of min.insync.replicas and (``clear``) its ClearElrRecord in the same batch: the same
    raft epoch and append time (dt=0), as ConfigurationControlManager writes them."""
    log.min_isr(value, topic=topic)
    if clear:
        log._m("meta.clear_elr", dt=0, topic=(topic or "") if clear_topic is None else clear_topic)
    return log


@pytest.mark.parametrize("topic", ["t", None])
def test_min_isr_change_followed_by_its_clear_elr_passes(topic):
    log = MetaLog(elr=True).create()
    r = assert_pass(_min_isr_batch(log, 2, topic=topic), "kraft-4.4", META_44)
    assert r.stats["metadata_log"]["min_isr_configs_judged"] == 1


@pytest.mark.parametrize("topic", ["t", None])
def test_min_isr_change_without_clear_elr_is_l14(topic):
    log = _min_isr_batch(MetaLog(elr=True).create(), 2, topic=topic, clear=False)
    r = assert_rules(log, {"L14"}, "kraft-4.4", META_44)
    v = r.invariant_violations[0]
    assert "min.insync.replicas" in v.explanation and ("topic t" if topic else "every topic") in v.explanation


def test_clear_elr_in_a_later_batch_or_for_another_topic_is_l14():
    log = MetaLog(elr=True).create()
    log.min_isr(2, topic="t")
    log._m("meta.clear_elr", dt=0.5, topic="t")                        # a later batch
    assert_rules(log, {"L14"}, "kraft-4.4", META_44)
    log = _min_isr_batch(MetaLog(elr=True).create(), 2, topic="t", clear_topic="u")
    assert_rules(log, {"L14"}, "kraft-4.4", META_44)
    log = _min_isr_batch(MetaLog(elr=True).create(), 2, topic=None, clear_topic="t")   # cluster value: "" needed
    assert_rules(log, {"L14"}, "kraft-4.4", META_44)


def test_min_isr_change_is_not_judged_without_elr_or_before_4_1():
    log = _min_isr_batch(MetaLog(elr=False).create(), 2, topic="t", clear=False)
    r = assert_pass(log, "kraft-4.4", META_44)
    assert "min_isr_configs_judged" not in r.stats["metadata_log"]
    log = _min_isr_batch(MetaLog(elr=True).create(), 2, topic="t", clear=False)
    assert_pass(log, "kraft-4.0", {**META_44, "kafka_version": "4.0.0"})    # no ClearElrRecord before 4.1


def test_the_bootstrap_batchs_min_isr_needs_no_clear_elr():
    # a real 4.4.0 log: metadata.version, eligible.leader.replicas.version and the cluster min ISR are bootstrap
    # records of one batch (same epoch and time), without a ClearElrRecord
    log = MetaLog(elr=True)
    log._m("meta.feature", dt=0, name="metadata.version", level=21)
    log.min_isr(1)
    log.time -= 0.1
    log.meta[-1]["time_ms"] = log.meta[-2]["time_ms"]
    r = assert_pass(log.create(), "kraft-4.4", META_44)
    assert "min_isr_configs_judged" not in r.stats["metadata_log"]


# -- L15: no min.insync.replicas ConfigRecord the controller refuses while ELR is enabled (4.1+) --

@pytest.mark.parametrize("value", [2, None])
def test_a_broker_level_min_isr_with_elr_on_is_l15(value):
    log = MetaLog(elr=True).create()
    log.config("min.insync.replicas", None if value is None else str(value), "broker", "2")
    log._m("meta.clear_elr", dt=0, topic="")           # what CCM would have written with it: L14 holds
    r = assert_rules(log, {"L15"}, "kraft-4.4", META_44)
    v = r.invariant_violations[0]
    assert "broker 2" in v.explanation and "isDisallowedBrokerMinIsrTransition" in v.explanation
    assert ("deleted" if value is None else "'2'") in v.explanation


def test_the_cluster_wide_min_isr_deleted_with_elr_on_is_l15():
    log = _min_isr_batch(MetaLog(elr=True).create(), None)
    r = assert_rules(log, {"L15"}, "kraft-4.4", META_44)
    assert "isDisallowedClusterMinIsrTransition" in r.invariant_violations[0].explanation


def test_what_the_controller_allows_with_elr_on_is_no_l15():
    log = MetaLog(elr=True).create()
    _min_isr_batch(log, 2)                               # the cluster-wide value set
    _min_isr_batch(log, 2, topic="t")                    # a topic's value set
    _min_isr_batch(log, None, topic="t")                 # and deleted
    r = assert_pass(log, "kraft-4.4", META_44)
    assert r.stats["metadata_log"]["min_isr_configs_judged"] == 3


def test_l15_is_not_judged_with_elr_off_before_4_1_or_in_the_bootstrap_batch():
    def broker_level(elr):
        log = MetaLog(elr=elr).create()
        log.config("min.insync.replicas", "2", "broker", "1")
        return log
    assert_pass(broker_level(False), "kraft-4.4", META_44)                                   # ELR off: allowed
    assert_pass(broker_level(True), "kraft-4.0", {**META_44, "kafka_version": "4.0.0"})     # not read for 4.0
    log = MetaLog(elr=True)
    log._m("meta.feature", dt=0, name="metadata.version", level=21)
    log.config("min.insync.replicas", "2", "broker", "1")
    log.meta[-1]["time_ms"] = log.meta[-2]["time_ms"]
    assert_pass(log.create(), "kraft-4.4", META_44)                                          # kafka-storage format's


# -- L16: the batch enabling ELR leaves no broker-level min.insync.replicas and a cluster-wide one (4.1+) --

def _enable_elr(log, deletions=(), cluster=None):
    """A feature upgrade to ELR as CCM.updateFeatures writes it: the safety records (``cluster`` value set,
    ``deletions`` of broker-level values), then the FeatureLevelRecord, in one batch (same epoch and time)."""
    first = True
    for b in deletions:
        log._m("meta.config", dt=0.1 if first else 0, resource_type="broker", resource_name=str(b),
               name="min.insync.replicas", value=None)
        first = False
    if cluster is not None:
        log._m("meta.config", dt=0.1 if first else 0, resource_type="broker", resource_name="",
               name="min.insync.replicas", value=str(cluster))
        first = False
    log._m("meta.feature", dt=0.1 if first else 0, name="eligible.leader.replicas.version", level=1)
    return log


def _elr_off_with_overrides(cluster=True):
    log = MetaLog(elr=False)
    if cluster:
        log.min_isr(2)
    log.config("min.insync.replicas", "3", "broker", "1")
    log.config("min.insync.replicas", "1", "broker", "2")
    return log.create()


def test_enabling_elr_with_its_safety_records_passes():
    r = assert_pass(_enable_elr(_elr_off_with_overrides(), deletions=(1, 2)), "kraft-4.4", META_44)
    assert r.stats["metadata_log"]["elr_enablings_judged"] == 1
    r = assert_pass(_enable_elr(_elr_off_with_overrides(cluster=False), deletions=(1, 2), cluster=1),
                    "kraft-4.4", META_44)


def test_enabling_elr_leaving_a_broker_level_min_isr_is_l16():
    r = assert_rules(_enable_elr(_elr_off_with_overrides(), deletions=(1,)), {"L16"}, "kraft-4.4", META_44)
    assert "broker 2: 1" in r.invariant_violations[0].explanation


def test_enabling_elr_without_a_cluster_wide_min_isr_is_l16():
    r = assert_rules(_enable_elr(_elr_off_with_overrides(cluster=False), deletions=(1, 2)), {"L16"}, "kraft-4.4",
                     META_44)
    assert "no cluster-wide" in r.invariant_violations[0].explanation


def test_l16_is_not_judged_before_4_1_or_after_a_gap_in_the_log_read():
    log = _enable_elr(_elr_off_with_overrides(cluster=False))
    assert_pass(log, "kraft-4.0", {**META_44, "kafka_version": "4.0.0"})
    gap = {**META_44, "observer": {"offset_gaps": [[2, 4]]}}
    r = assert_pass(_enable_elr(_elr_off_with_overrides(cluster=False)), "kraft-4.4", gap)
    assert "elr_enablings_judged" not in r.stats["metadata_log"]
