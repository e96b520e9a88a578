"""Scenario variants (``Scenario.variants``, ``kafka-chaos run --variant NAME``): one script, a named
change of workload / broker config / minimum version, recorded as metadata.json ``variant``."""

from __future__ import annotations

import pytest

from harness import distributions
from harness.errors import ScenarioError
from harness.scenario.scenario import Scenario
from suites.catalog import scenarios_for


def _noop(ctx):
    return None


def test_with_variant_merges_workload_and_broker_config():
    s = Scenario("fam.x", "d", _noop, workload={"kind": "group", "topic": "t", "members": 3},
                 broker_config={"a": "1"}, min_version="2.5",
                 variants={"v": {"workload": {"group_protocol": "consumer"}, "broker_config": {"b": "2"},
                                 "min_version": "4.0"}})
    v = s.with_variant("v")
    assert v.name == "fam.x" and v.variant == "v" and v.label == "fam.x[v]"
    assert v.workload == {"kind": "group", "topic": "t", "members": 3, "group_protocol": "consumer"}
    assert v.broker_config == {"a": "1", "b": "2"} and v.min_version == "4.0"
    assert s.workload.get("group_protocol") is None and s.label == "fam.x"     # the original is unchanged
    zk = distributions.resolve("apache-zk")       # a scenario not marked kraft: ZooKeeper mode
    assert v.not_applicable("3.9.2", zk) == "needs Kafka 4.0+ (this is 3.9.2)" and s.not_applicable("3.9.2", zk) is None
    assert s.with_variant(None) is s


def test_variant_keeps_the_newer_min_version():
    s = Scenario("fam.x", "d", _noop, min_version="4.1", variants={"v": {"min_version": "4.0"}})
    assert s.with_variant("v").min_version == "4.1"


def test_unknown_variant_and_unknown_change_are_errors():
    s = Scenario("fam.x", "d", _noop, variants={"v": {"workload": {}}})
    with pytest.raises(ScenarioError, match="no variant 'w'"):
        s.with_variant("w")
    with pytest.raises(ScenarioError, match="variant 'v' changes"):
        Scenario("fam.y", "d", _noop, variants={"v": {"script": None}})


def test_every_groups_scenario_has_the_kip848_variant():
    groups = scenarios_for("groups")
    assert len(groups) >= 5 and not [s for s in groups if "kip848" in s.name]   # no twins
    for s in groups:
        v = s.with_variant("kip848")
        assert v.workload["group_protocol"] == "consumer" and v.min_version == "4.0", s.name
        assert v.broker_config["group.consumer.session.timeout.ms"] == "10000"
        assert s.workload.get("group_protocol", "classic") == "classic"
