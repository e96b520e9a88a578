"""KRaft runs judged on the controller's metadata log (reference/kraft_log.py, kraft_log_cross.py).

For each rule L1-L10 a hand-built ``meta.*`` sequence that passes and one that violates it; real Apache
Kafka 4.1.2 records (tests/fixtures/runs/kraft) pass; one of them with a single injected bad record fails
naming the rule (negative control); records without ``meta.*`` events are judged exactly as before."""

import copy
import json
from pathlib import Path

import pytest

from reference import check_conformance
from reference.kraft_rules import KRAFT_RULES

KRAFT_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "kraft"
REAL = sorted(p for p in KRAFT_FIXTURES.iterdir() if p.is_dir())
META = {"distribution": "apache-kraft", "kafka_version": "3.9.2", "cluster": {"brokers": 3, "zookeepers": 0},
        "broker_config": {}, "topics": [{"name": "t", "partitions": 1, "replication_factor": 3, "config": {}}]}
W0 = 1.7e9


class MetaLog:
    """Hand-built run events: samples / faults / actions first (run clock), then the meta.* events of the
    metadata log as ProtocolSource.finish writes them after the run (full partition state per record)."""

    def __init__(self, mv=21, elr=False):
        self.run: list[dict] = []
        self.meta: list[dict] = []
        self.offset = 0
        self.time = W0
        self.parts: dict = {}
        self.brokers: dict = {}
        self.leader_change([1, 2, 3])
        self.feature("metadata.version", mv)
        if elr:     # in the bootstrap batch, as kafka-storage format writes it (same epoch and time)
            self._m("meta.feature", dt=0, name="eligible.leader.replicas.version", level=1)
        for b in (1, 2, 3):
            self.broker(b, fenced=True, record="RegisterBrokerRecord")
            self.broker(b, fenced=False)

    # -- the metadata log -------------------------------------------------------------------------
    def _m(self, type_, dt=0.1, **f):
        self.offset += 1
        self.time += dt
        self.meta.append({"type": type_, "offset": self.offset, "time_ms": int(self.time * 1000), "raft_epoch": 1,
                          "source": "metadata_log", **f})
        return self

    def leader_change(self, voters, leader=1, dt=0.1):
        return self._m("meta.leader_change", dt, leader_id=leader, voters=list(voters), granting_voters=list(voters))

    def feature(self, name, level):
        return self._m("meta.feature", name=name, level=level)

    def config(self, name, value, kind="broker", resource=""):
        """A ConfigRecord (``kind`` "broker" with ``resource`` "" is the cluster-wide default)."""
        return self._m("meta.config", resource_type=kind, resource_name=resource, name=name, value=value)

    def min_isr(self, value, topic=None):
        return self.config("min.insync.replicas", None if value is None else str(value),
                           *(("topic", topic) if topic else ()))

    def broker(self, b, dt=0.1, record="BrokerRegistrationChangeRecord", **change):
        st = self.brokers.setdefault(b, {"broker_epoch": self.offset, "fenced": True, "registered": True,
                                         "in_controlled_shutdown": False})
        if record == "RegisterBrokerRecord":
            st.update(broker_epoch=self.offset + 1, registered=True, in_controlled_shutdown=False)
        st.update(change)
        return self._m("meta.broker", dt, broker_id=b, **st, record=record)

    def create(self, leader=1, isr=(1, 2, 3), rs=(1, 2, 3), topic="t", p=0):
        st = {"leader": leader, "leader_epoch": 0, "partition_epoch": 0, "isr": list(isr), "replicas": list(rs),
              "adding": [], "removing": [], "elr": [], "last_known_elr": [], "leader_recovery_state": 0}
        self.parts[(topic, p)] = st
        return self._m("meta.partition", topic=topic, partition=p, topic_id="id-" + topic, **copy.deepcopy(st),
                       record="PartitionRecord", changed=["replicas", "isr", "leader"])

    def change(self, topic="t", p=0, dt=0.1, **f):
        """A PartitionChangeRecord setting the fields ``f`` (``leader`` set: LE + 1, even to the same one)."""
        st = self.parts[(topic, p)]
        for k, v in f.items():
            st[k] = list(v) if isinstance(v, (list, tuple)) else v
        if "leader" in f:
            st["leader_epoch"] += 1
        st["partition_epoch"] += 1
        return self._m("meta.partition", dt, topic=topic, partition=p, topic_id="id-" + topic, **copy.deepcopy(st),
                       record="PartitionChangeRecord", changed=list(f))

    # -- the run --------------------------------------------------------------------------------
    def fault(self, broker, start, end, fault="kill"):
        """A ``fault`` on ``broker`` from ``start`` to ``end`` (seconds after W0, wall clock)."""
        n = len(self.run)
        ids = {"fault_id": n, "fault": fault, "nodes": [f"b{broker}"]}
        self.run.append({"type": "fault.start", "t": start, "wall": W0 + start, **ids, "target": f"broker:{broker}",
                         "broker_ids": [broker], "params": {}})
        self.run.append({"type": "fault.heal", "t": end, "wall": W0 + end, **ids})
        self.run.append({"type": "fault.end", "t": end + 1, "wall": W0 + end + 1, **ids, "ok": True, "error": None})
        return self

    def sample(self, leader, le, isr, rs=(1, 2, 3), by=1, error=None, at=1.0):
        self.run.append({"type": "admin.metadata", "t": at, "wall": W0 + at, "controller_id": None,
                         "brokers": [1, 2, 3], "answered_by": by, "source": "protocol", "error": None,
                         "partitions": [{"topic": "t", "partition": 0, "leader": leader, "leader_epoch": le,
                                         "replicas": list(rs), "isr": list(isr), "offline_replicas": [],
                                         "error": error}]})
        return self

    def action(self, action, **params):
        self.run.append({"type": "action", "t": 0.5, "wall": W0 + 0.5, "action": action, "params": params,
                         "ok": True, "error": None})
        return self

    def events(self):
        end = max([e["wall"] for e in self.run] + [self.time]) + 1
        evs = sorted(self.run, key=lambda e: e["t"]) + [{"t": end - W0, "wall": end, **e} for e in self.meta]
        return [{"seq": i, **e} for i, e in enumerate(evs)]


def check(log, profile="kraft-3.9", metadata=None):
    return check_conformance(log.events(), metadata or META, profile)


def assert_pass(log, profile="kraft-3.9", metadata=None):
    r = check(log, profile, metadata)
    assert r.verdict == "PASS", [str(d) for d in r.divergences + r.invariant_violations]
    assert "metadata_log" in r.stats
    return r


def assert_rules(log, rules, profile="kraft-3.9", metadata=None):
    r = check(log, profile, metadata)
    assert r.verdict == "FAIL"
    assert r.rules() == set(rules), [str(d) for d in r.divergences + r.invariant_violations]
    for d in r.divergences + r.invariant_violations:
        assert d.rule_id.endswith("/" + d.rule) and d.rule_id.startswith("§")
    return r


def failover():
    """Broker 1 (leader) fenced: removed from the ISR, 2 elected (LE + 1), 1 re-registers, rejoins the ISR."""
    return (MetaLog().create()
            .change(leader=2, isr=[2, 3]).broker(1, fenced=True)
            .broker(1, fenced=True, record="RegisterBrokerRecord").broker(1, fenced=False)
            .change(isr=[2, 3, 1]))


@pytest.mark.parametrize("profile", ["kraft-3.9", "compatible"])
def test_failover_log_passes(profile):
    r = assert_pass(failover(), profile)
    assert r.stats["metadata_log"]["elections_judged"] == 1
    assert r.stats["metadata_log"]["partition_records"] == 3


def test_every_rule_has_a_section_and_a_source():
    for rule in ("L1", "L2", "L3", "L4", "L5", "L6", "L7", "L8", "L9", "L10"):
        sections, kind, title = KRAFT_RULES[rule]
        assert sections.startswith("§9") or sections.startswith("§8")
        assert kind in ("invariant", "divergence", "progress") and title


# -- L1-L4: the state after every record -----------------------------------------------------------------
def test_leader_outside_the_isr_is_l1():
    assert_rules(MetaLog().create().change(isr=[2, 3]), {"L1"})


def test_leaderless_with_the_last_member_kept_passes():
    assert_pass(MetaLog().create(isr=[1]).change(leader=-1).broker(1, fenced=True))


def test_isr_outside_the_replicas_is_l2():
    assert_rules(MetaLog().create().change(isr=[1, 2, 3, 4]), {"L2", "L7"})    # 4 is no registered broker either


def test_empty_isr_without_elr_is_l2_and_with_elr_passes():
    assert_rules(MetaLog().create(isr=[1]).change(leader=-1, isr=[]), {"L2"})
    assert_pass(MetaLog(elr=True).create(isr=[1]).change(leader=-1, isr=[], elr=[1]))


def test_bad_reassignment_shape_is_l3_and_a_good_one_passes():
    assert_rules(MetaLog().create().change(replicas=[1, 2, 3, 4], adding=[4], removing=[4]), {"L3"})
    assert_rules(MetaLog().create().change(adding=[4]), {"L3"})
    assert_pass(MetaLog().create().change(replicas=[4, 2, 3, 1], adding=[4], removing=[1]))


def test_elr_overlapping_the_isr_is_l4():
    assert_rules(MetaLog(elr=True).min_isr(3).create().change(isr=[1, 2], elr=[2, 3]), {"L4", "L11"})
    assert_pass(MetaLog(elr=True).min_isr(3).create().change(isr=[1], elr=[2, 3]))


# -- L5: clean elections ------------------------------------------------------------------------------------
def out_of_isr(log=None):
    """Leader 1 with ISR [1]; broker 1 fenced and 3 (not in the ISR) elected with ISR [3]."""
    log = log or MetaLog()
    return log.create().change(isr=[1]).change(leader=3, isr=[3]).broker(1, fenced=True)


def test_election_outside_the_previous_isr_is_l5():
    r = assert_rules(out_of_isr(), {"L5"})
    assert r.invariant_violations[0].before["isr"] == [1]


@pytest.mark.parametrize("how", ["topic_config", "broker_config", "set_config", "elect_unclean"])
def test_permitted_unclean_election_passes(how):
    md = copy.deepcopy(META)
    log = MetaLog()
    if how == "topic_config":
        md["topics"][0]["config"] = {"unclean.leader.election.enable": "true"}
    elif how == "broker_config":
        md["broker_config"] = {"unclean.leader.election.enable": "true"}
    elif how == "set_config":
        log.action("set_config", topic="t", config={"unclean.leader.election.enable": "true"})
    else:
        log.action("elect_unclean", partitions=[{"topic": "t", "partition": 0}])
    r = assert_pass(out_of_isr(log), metadata=md)
    assert r.stats["metadata_log"]["elections_unclean_permitted"] == 1


def test_elections_from_the_elr_and_the_last_known_leader_pass():
    log = MetaLog(elr=True).min_isr(3).create()
    log.change(isr=[1], elr=[2, 3]).change(leader=2, isr=[2], elr=[1, 3])         # ELR member (1 kept: fenced)
    assert_pass(log)
    # balanced recovery: 1 re-registers after an unclean shutdown (leaves the ELR), then is elected as the
    # last known leader
    log = MetaLog(elr=True).min_isr(3).create(isr=[1]).change(leader=-1, isr=[], elr=[1], last_known_elr=[1])
    log.broker(1, fenced=True, record="RegisterBrokerRecord").change(elr=[])
    assert_pass(log.change(leader=1, isr=[1], last_known_elr=[]))


def test_leader_from_a_completing_reassignment_passes():
    log = MetaLog().broker(4, fenced=True, record="RegisterBrokerRecord").broker(4, fenced=False)
    log.create(isr=[1, 2], rs=[1, 2]).change(replicas=[4, 1, 2], adding=[4], removing=[1, 2])
    r = assert_pass(log.change(leader=4, isr=[4], replicas=[4], adding=[], removing=[]))
    assert r.stats["metadata_log"]["elections_reassignment"] == 1


# -- L6, L7: brokers' states at that offset --------------------------------------------------------------------
def test_electing_a_fenced_broker_is_l6():
    assert_rules(MetaLog().create().broker(2, fenced=True).change(leader=2), {"L6"})


def test_electing_a_broker_in_controlled_shutdown_is_l6():
    assert_rules(MetaLog().create().broker(2, in_controlled_shutdown=True).change(leader=2), {"L6"})


def test_elections_at_unfencing_pass():
    """handleBrokerUnfenced: the unfencing record comes first, then the elections it enables."""
    log = MetaLog().create(isr=[1]).change(leader=-1).broker(1, fenced=True)
    assert_pass(log.broker(1, fenced=True, record="RegisterBrokerRecord").broker(1, fenced=False).change(leader=1))


def test_creating_a_partition_led_by_a_fenced_broker_is_l6_and_l7():
    assert_rules(MetaLog().broker(1, fenced=True).create(isr=[1, 2, 3]), {"L6", "L7"})


def test_adding_a_fenced_broker_to_the_isr_is_l7():
    log = MetaLog().create().change(isr=[1, 2]).broker(3, fenced=True)
    assert_rules(log.change(isr=[1, 2, 3]), {"L7"})
    log = MetaLog().create().change(isr=[1, 2]).broker(3, registered=False, fenced=None,
                                                        record="UnregisterBrokerRecord")
    assert_rules(log.change(isr=[1, 2, 3]), {"L7"})


def test_keeping_a_fenced_last_member_is_not_an_addition():
    assert_pass(MetaLog().create(isr=[1]).change(leader=-1).broker(1, fenced=True).change(leader_recovery_state=0))


# -- L10: leader-epoch bumps (kraft-* only) -----------------------------------------------------------------------
def test_leader_re_set_without_replica_removal_is_l10_under_kraft_only():
    log = MetaLog(mv=21).create().change(leader=1, isr=[1, 2])
    assert_rules(log, {"L10"})
    assert_pass(log, "compatible")


def test_replica_removal_bumps_the_leader_epoch():
    log = MetaLog().broker(4, fenced=True, record="RegisterBrokerRecord").broker(4, fenced=False)
    log.create().change(replicas=[1, 2, 4, 3], adding=[4], removing=[3]).change(isr=[1, 2, 3, 4])
    assert_pass(copy.deepcopy(log).change(leader=1, replicas=[1, 2, 4], isr=[1, 2, 4], adding=[], removing=[]))
    assert_rules(log.change(replicas=[1, 2, 4], isr=[1, 2, 4], adding=[], removing=[]), {"L10"})


def test_old_metadata_version_bumps_on_isr_shrink():
    assert_pass(MetaLog(mv=11).create().change(leader=1, isr=[1, 2]))
    assert_rules(MetaLog(mv=11).create().change(isr=[1, 2]), {"L10"})
    assert_pass(MetaLog(mv=12).create().change(isr=[1, 2]))


# -- L8: fencing within the session timeout (kraft-* only) -------------------------------------------------------------
def test_broker_down_and_never_fenced_is_l8_under_kraft_only():
    log = MetaLog().create().fault(2, start=1.0, end=80.0)
    log.time = W0 + 90
    log.change(isr=[1, 3])
    assert_rules(log, {"L8"})
    assert_pass(log, "compatible")


def test_broker_fenced_in_time_passes_and_records_its_latency():
    log = MetaLog().create().fault(2, start=1.0, end=80.0)
    log.time = W0 + 10.5
    r = assert_pass(log.change(isr=[1, 3]).broker(2, fenced=True))
    assert r.stats["metadata_log"]["fencing_latencies_s"] == [pytest.approx(9.6, abs=0.2)]
    assert r.stats["metadata_log"]["fencings_judged"] == 1


def test_broker_fenced_too_late_is_l8_and_a_controller_change_restarts_the_clock():
    log = MetaLog().create().fault(2, start=1.0, end=120.0)
    log.time = W0 + 60
    assert_rules(copy.deepcopy(log).change(isr=[1, 3]).broker(2, fenced=True), {"L8"})
    log.time = W0 + 30
    log.leader_change([1, 2, 3], leader=3)
    log.time = W0 + 60
    assert_pass(log.change(isr=[1, 3]).broker(2, fenced=True))


def test_short_fault_or_lost_quorum_is_not_judged():
    log = MetaLog().create().fault(2, start=1.0, end=8.0)
    assert assert_pass(log).stats["metadata_log"]["fencings_not_judged"] == 1
    log = MetaLog().create().fault(2, start=1.0, end=80.0).fault(3, start=1.0, end=80.0)
    assert assert_pass(log).stats["metadata_log"]["fencings_judged"] == 0


# -- L9: samples against the log --------------------------------------------------------------------------------------------
def test_lost_dedicated_quorum_is_known_from_node_ids():
    """Dedicated controllers 101..103: the kill of two of them names them in ``node_ids`` only (no
    broker among them), and the quorum is then known lost while broker 2 is down: not judged. A record
    without ``node_ids`` cannot tell, and judges it (quorum.majority_loss on the dedicated layout)."""
    def log_with(node_ids: bool):
        log = MetaLog()
        log.leader_change([101, 102, 103], leader=102)
        log.create().fault(2, start=20.0, end=80.0)
        quorum = {"fault_id": 99, "fault": "kill", "nodes": ["c101", "c103"]}
        log.run.append({"type": "fault.start", "t": 10.0, "wall": W0 + 10.0, **quorum, "target": "quorum-majority",
                        "broker_ids": [], "params": {}, **({"node_ids": [101, 103]} if node_ids else {})})
        log.run.append({"type": "fault.heal", "t": 70.0, "wall": W0 + 70.0, **quorum})
        log.time = W0 + 90
        return log.change(isr=[1, 3])
    r = assert_pass(log_with(node_ids=True))
    assert r.stats["metadata_log"]["fencings_judged"] == 0
    assert_rules(log_with(node_ids=False), {"L8"})


def test_sampled_states_in_the_log_pass():
    log = failover().sample(1, 0, [1, 2, 3], at=1.0).sample(2, 1, [2, 3], at=2.0).sample(2, 1, [2, 3, 1], at=3.0)
    assert assert_pass(log).stats["metadata_log"]["samples_cross_checked"] == 3
    log = failover().sample(-1, 1, [2, 3], error="LEADER_NOT_AVAILABLE", at=4.0)     # leader 2 not listed yet
    assert assert_pass(log, "compatible").stats["metadata_log"]["samples_cross_checked"] == 1


@pytest.mark.parametrize("sample", [(3, 1, [2, 3]), (2, 2, [2, 3]), (2, 1, [2]), (2, 1, [2, 3], (2, 3, 1))])
def test_sampled_state_never_committed_is_l9(sample):
    assert_rules(failover().sample(*sample, at=2.0), {"L9"}, profile="compatible")


def test_incomplete_history_is_not_cross_checked():
    md = {**META, "observer": {"source": "metadata_log", "complete": False}}
    r = assert_pass(failover().sample(3, 1, [2, 3], at=2.0), metadata=md)
    assert r.stats["metadata_log"]["samples_cross_checked"] == 0


# -- the existing judgement is unchanged without a log ------------------------------------------------------------------------
def test_record_without_meta_events_is_judged_as_before():
    log = MetaLog().sample(1, 0, [1, 2, 3], at=1.0).sample(3, 1, [3], at=2.0)
    log.meta = []
    r = check(log)
    assert "metadata_log" not in r.stats
    assert r.stats["observation"] == "protocol samples (spec §8.1: per-broker caches, skipped states)"


# -- real Apache Kafka 4.1.2 records ----------------------------------------------------------------------------------------------
def read(d: Path):
    return [json.loads(x) for x in (d / "events.jsonl").read_text().splitlines()], \
        json.loads((d / "metadata.json").read_text())


@pytest.mark.parametrize("d", REAL, ids=lambda p: p.name.split("-", 1)[1])
@pytest.mark.parametrize("profile", [None, "compatible"])
def test_real_kraft_records_pass(d, profile):
    evs, md = read(d)
    r = check_conformance(evs, md, profile)
    assert r.verdict == "PASS", [str(x) for x in r.divergences + r.invariant_violations]
    ml = r.stats["metadata_log"]
    assert ml["partition_records"] > 0 and ml["samples_cross_checked"] > 0


def test_real_kill_leader_record_is_judged_on_its_election_and_fencing():
    evs, md = read(next(d for d in REAL if "kill_leader" in d.name))
    ml = check_conformance(evs, md).stats["metadata_log"]
    assert ml["elections_judged"] == 2 and ml["fencing_latencies_s"] == [pytest.approx(9.634, abs=0.01)]


def test_negative_control_real_record_with_an_election_outside_the_isr():
    """kill_leader (4.1.2): after chaos-0's ISR shrank to [3, 1] (broker 2 killed), inject one record that
    elects the killed, not yet fenced, broker 2 -- outside the ISR. The run then FAILs naming L5 (and L1:
    the state after it has a leader outside its ISR), with the offset of the injected record."""
    evs, md = read(next(d for d in REAL if "kill_leader" in d.name))
    i, prev = next((i, e) for i, e in enumerate(evs) if e["type"] == "meta.partition" and e["topic"] == "chaos"
                   and e["partition"] == 0 and e["isr"] == [3, 1])
    bad = {**prev, "seq": prev["seq"], "offset": prev["offset"], "leader": 2, "leader_epoch": prev["leader_epoch"] + 1,
           "partition_epoch": prev["partition_epoch"] + 1, "changed": ["leader"]}
    assert check_conformance(evs, md).verdict == "PASS"
    r = check_conformance(evs[:i + 1] + [bad] + evs[i + 1:], md)
    assert r.verdict == "FAIL"
    assert {"L5", "L1"} <= r.rules()
    l5 = next(d for d in r.invariant_violations if d.rule == "L5")
    assert l5.subject == "chaos-0" and l5.after["offset"] == prev["offset"] and "not in the previous ISR [3, 1]" \
        in l5.explanation


def test_negative_control_real_record_with_a_fenced_broker_rejoining_the_isr():
    """kill_leader (4.1.2): broker 2 is fenced at offset 61 and re-registers at 73; inject, between them,
    a record putting it back into chaos-1's ISR: L7."""
    evs, md = read(next(d for d in REAL if "kill_leader" in d.name))
    i = next(i for i, e in enumerate(evs) if e["type"] == "meta.broker" and e["broker_id"] == 2 and e["fenced"]
             and e["record"] == "BrokerRegistrationChangeRecord")
    prev = [e for e in evs[:i] if e["type"] == "meta.partition" and e["topic"] == "chaos" and e["partition"] == 1][-1]
    assert 2 not in prev["isr"]
    bad = {**prev, "seq": evs[i]["seq"], "offset": evs[i]["offset"] + 1, "isr": prev["isr"] + [2],
           "partition_epoch": prev["partition_epoch"] + 1, "changed": ["isr"]}
    r = check_conformance(evs[:i + 1] + [bad] + evs[i + 1:], md)
    assert r.verdict == "FAIL" and "L7" in r.rules()


# -- L11: ELR maintenance (KIP-966, PartitionChangeBuilder.maybePopulateTargetElr) ------------------------------
def shrink(elr_after, min_isr=2, elr=True):
    """min ISR ``min_isr``: the ISR shrinks to [1] (follower 2 then 3 fenced), the ELR as given."""
    log = MetaLog(elr=elr).min_isr(min_isr).create()
    return log.change(isr=[1, 3], elr=[]).broker(2, fenced=True).change(isr=[1], elr=elr_after).broker(3, fenced=True)


def test_isr_shrunk_below_min_isr_without_elr_update_is_l11():
    r = assert_rules(shrink([]), {"L11"})                   # 3 left the ISR below min ISR 2, not put in the ELR
    assert "missing: [3]" in r.divergences[0].explanation
    assert_rules(shrink([2]), {"L11"})                      # 2 left at ISR size 2 = min ISR: not eligible
    r = assert_pass(shrink([3]))
    assert r.stats["metadata_log"]["elr_records_judged"] == 2


def test_elr_kept_at_min_isr_is_l11():
    log = shrink([3]).broker(3, fenced=False)
    assert_rules(copy.deepcopy(log).change(isr=[1, 3], elr=[3]), {"L11", "L4"})
    assert_rules(copy.deepcopy(log).change(isr=[1, 3], elr=[]).change(isr=[1, 3], elr=[2]), {"L11"})
    assert_pass(log.change(isr=[1, 3], elr=[]))            # back at min ISR: cleared


def leaderless_with_elr():
    """min ISR 3, ELR on: 3 leaves the ELR by an unclean-shutdown re-registration, then 1 and 2 are fenced:
    leader -1, ISR [], ELR [1, 2]; 3 unfenced (in neither)."""
    log = MetaLog(elr=True).min_isr(3).create().change(isr=[1], elr=[2, 3])
    log.broker(3, fenced=True, record="RegisterBrokerRecord").change(elr=[2])
    log.broker(2, fenced=True).broker(1, fenced=True).change(leader=-1, isr=[], elr=[1, 2])
    return log.broker(3, fenced=False)


def test_unclean_election_keeping_the_elr_is_l11():
    md = copy.deepcopy(META)
    md["topics"][0]["config"] = {"unclean.leader.election.enable": "true"}
    r = assert_pass(leaderless_with_elr().change(leader=3, isr=[3], elr=[]), metadata=md)
    assert r.stats["metadata_log"]["elections_unclean_permitted"] == 1
    assert_rules(leaderless_with_elr().change(leader=3, isr=[3], elr=[1, 2]), {"L11"}, metadata=md)
    assert_rules(leaderless_with_elr().change(leader=3, isr=[3], elr=[]), {"L5"})   # unclean not permitted


def test_elr_rule_uses_the_topic_min_isr_and_is_off_without_the_feature_or_for_compatible():
    assert_pass(shrink([], min_isr=1))                      # ISR [1] >= min ISR 1: no ELR
    log = MetaLog(elr=True).min_isr(1).min_isr(3, topic="t").create()
    assert_rules(log.change(isr=[1, 2], elr=[]), {"L11"})   # the topic's 3 applies, not the default 1
    assert_pass(MetaLog(elr=True).min_isr(5).create().change(isr=[1, 2], elr=[3]))   # capped by RF 3
    assert_pass(shrink([], elr=False), profile="kraft-3.9")  # ELR off: L11 not judged (L2 only on an empty ISR)
    assert_pass(shrink([]), profile="compatible")
    node = MetaLog(elr=True).min_isr(2).config("min.insync.replicas", "2", "broker", "1").create()
    assert_pass(node.change(isr=[1], elr=[]))               # per-node override: which node decides is unknown


def test_a_broker_re_registered_after_an_unclean_shutdown_may_leave_the_elr():
    log = shrink([3]).broker(3, fenced=True, record="RegisterBrokerRecord")
    assert_pass(copy.deepcopy(log).change(elr=[]))
    assert_rules(shrink([3]).change(elr=[]), {"L11"})      # no re-registration: 3 must stay


# -- L12: a superseded state served past the bound while no fault is active -------------------------------------
def moved():
    """Leader 1 at LE 0, then (at about W0 + 1 s) leader 2 at LE 1."""
    return MetaLog().create().change(leader=2, isr=[2, 3]).broker(1, fenced=True)


def test_superseded_state_served_long_after_with_no_fault_is_l12_under_kraft_only():
    r = assert_rules(moved().sample(1, 0, [1, 2, 3], by=3, at=60.0), {"L12"})
    assert "broker 3 served leader epoch 0" in r.divergences[0].explanation
    assert_pass(moved().sample(1, 0, [1, 2, 3], by=3, at=60.0), profile="compatible")


def test_fresh_or_faulted_staleness_is_not_l12():
    r = assert_pass(moved().sample(1, 0, [1, 2, 3], by=3, at=5.0))       # 4 s late: within the bound
    assert r.stats["metadata_log"]["staleness_judged"] == 1
    assert 3.5 < r.stats["metadata_log"]["max_served_staleness_s"] < 4.5
    assert_pass(moved().sample(2, 1, [2, 3], by=3, at=60.0))              # the current state
    assert_pass(moved().fault(3, 2.0, 50.0, fault="loss").sample(1, 0, [1, 2, 3], by=3, at=60.0))   # a fault between


def test_elr_cleanup_logged_before_the_registration_in_its_batch_passes():
    """As 4.1.2 logs it: the cleanup record, then the RegisterBrokerRecord, in one batch (one append time)."""
    log = shrink([3])
    log.change(elr=[], dt=0.0)
    log.broker(3, fenced=True, record="RegisterBrokerRecord", dt=0.0)
    assert_pass(log)
    late = shrink([3]).change(elr=[])
    assert_rules(late.broker(3, fenced=True, record="RegisterBrokerRecord", dt=0.5), {"L11"})   # a later batch


# -- an offset gap in the metadata log read (issue 42, item 5) -----------------------------------------------
def _gapped(missed):
    """t-0 led by 1 with ISR [1]; ``missed`` records happen but are missing from the log read (an offset gap
    in the observer's summary); returns the log and the metadata naming the gap."""
    log = MetaLog().create(isr=(1,)).change(isr=[1])
    before = log.offset
    for f in missed:
        log.parts[("t", 0)].update({k: list(v) if isinstance(v, tuple) else v for k, v in f.items()})
        log.offset += 1                                     # the record is not in log.meta
    md = {**META, "observer": {"complete": False, "offset_gaps": [[before, log.offset + 1]]}}
    return log, md


def test_a_missed_isr_expansion_does_not_make_the_next_election_l5():
    log, md = _gapped([{"isr": [1, 2]}])                   # 2 joined the ISR in a record the read lost
    log.change(leader=2, isr=[2])                          # the replay still holds ISR [1] for t-0
    assert check(log, metadata={**META, "observer": {"complete": False, "offset_gaps": []}}).rules() == {"L5"}
    r = assert_pass(log, metadata=md)                      # with the gap known: not judged, not reported
    assert r.stats["metadata_log"]["offset_gaps"] == 1
    assert r.stats["metadata_log"]["records_after_gap_transition_not_judged"] == 1


def test_single_state_rules_stay_on_after_an_offset_gap():
    log, md = _gapped([{"isr": [1, 2]}])
    log.change(leader=3, isr=[2])                          # leader and ISR both set here: 3 is not in [2]
    assert assert_rules(log, {"L1"}, metadata=md)


def test_stale_fields_are_not_judged_by_single_state_rules():
    log, md = _gapped([{"replicas": [1, 2, 4], "isr": [1, 4]}])   # a reassignment finished unseen
    log.parts[("t", 0)]["replicas"] = [1, 2, 3]                     # the replay's stale replicas
    log.change(isr=[1, 4])                                          # ISR set here; replicas still stale
    assert_pass(log, metadata=md)


def test_a_partition_created_after_the_gap_is_judged_in_full():
    log, md = _gapped([{"isr": [1, 2]}])
    log.create(topic="u", isr=(1, 2, 3)).change(topic="u", leader=2, isr=[2]).change(topic="u", leader=3, isr=[3])
    assert assert_rules(log, {"L5"}, metadata=md)          # 3 was not in u-0's ISR [2]


def test_a_broker_fenced_in_an_offset_gap_is_not_judged_until_it_registers_again():
    log, md = _gapped([{"isr": [1, 2]}])
    log.broker(2, fenced=True)                             # seen: 2 fenced after the gap
    log.broker(2, fenced=False, record="RegisterBrokerRecord")
    log.broker(2, fenced=False)
    log.create(topic="u", isr=(1, 2, 3))                   # 2 added to a new ISR while active: fine
    assert_pass(log, metadata=md)
