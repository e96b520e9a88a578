"""The dynamic-quorum KRaft adapter (harness/distributions/dynamic_quorum.py) without Docker: the node
groups (initial voters + spare controllers), the configuration (no controller.quorum.voters, bootstrap
servers, advertised CONTROLLER endpoints), the storage-format arguments and directory ids, the version
floor, and the scenarios / capability that need it (the cluster itself: `kafka-chaos run dynamic_quorum
--distribution apache-kraft-dynamic --kafka-version 4.4.0`, docs/kraft.md "The dynamic quorum")."""

from __future__ import annotations

import base64

import pytest

from tests.protocol.fake_nodes import BROKERS, controllers
from harness import distributions as d
from harness.cluster.cluster import ClusterSpec
from harness.distributions.capability_table import capability
from harness.distributions.dynamic_quorum import SPARE_CONTROLLERS, ApacheKraftDynamic, directory_id
from harness.errors import HarnessError
from suites.catalog import scenarios_for


CONTROLLERS = controllers(5)
NODES = BROKERS + CONTROLLERS


def test_registered_with_the_dynamic_quorum_role():
    dq = d.resolve("apache-kraft-dynamic")
    assert isinstance(dq, ApacheKraftDynamic) and "apache-kraft-dynamic" in d.NAMES
    assert dq.roles == ("broker", "controller", "dynamic-quorum") and dq.controller_model == "kraft"
    assert "dynamic-quorum" not in d.resolve("apache-kraft").roles
    assert "dynamic-quorum" not in d.resolve("apache-kraft-dedicated").roles


def test_initial_voters_plus_two_spare_controllers():
    dq = ApacheKraftDynamic()
    (g,) = dq.node_groups(ClusterSpec(distribution="apache-kraft-dynamic"))
    assert g.ids == (101, 102, 103, 104, 105) and SPARE_CONTROLLERS == 2
    assert dq.node_groups(ClusterSpec(distribution="apache-kraft-dynamic", controllers=1))[0].ids == (101, 102, 103)
    assert dq.initial_voter_ids(NODES) == [101, 102, 103] and dq.voter_ids(NODES) == [101, 102, 103]


def test_config_has_bootstrap_servers_not_static_voters():
    dq = ApacheKraftDynamic()
    boot = "controller101:9094,controller102:9094,controller103:9094"
    spare = dq.node_config({}, CONTROLLERS[3], NODES)
    assert "controller.quorum.voters" not in spare and spare["controller.quorum.bootstrap.servers"] == boot
    assert spare["process.roles"] == "controller"
    assert spare["advertised.listeners"] == "CONTROLLER://controller104:9094"
    broker = dq.node_config({}, BROKERS[0], NODES)
    assert broker["process.roles"] == "broker" and broker["controller.quorum.bootstrap.servers"] == boot
    assert "controller.quorum.voters" not in broker and "CONTROLLER" not in broker.get("advertised.listeners", "")


def test_format_arguments_initial_voters_and_observers():
    dq = ApacheKraftDynamic()
    cid = "tNkxy7mwTuS2vEc0FRs8fQ"
    (flag, voters) = dq.format_args(CONTROLLERS[0], NODES, cid)
    assert flag == "--initial-controllers"
    assert voters == ",".join(f"{i}@controller{i}:9094:{directory_id(cid, i)}" for i in (101, 102, 103))
    assert dq.format_args(CONTROLLERS[1], NODES, cid) == ["--initial-controllers", voters]   # the same list
    assert dq.format_args(CONTROLLERS[4], NODES, cid) == ["--no-initial-controllers"]
    assert dq.format_args(BROKERS[2], NODES, cid) == ["--no-initial-controllers"]
    plan = dq.plan({}, CONTROLLERS[0], NODES, cluster_id=cid)
    assert plan.command[:2] == ["sh", "-c"] and "StorageTool format" in plan.command[2]
    assert plan.env["KC_FORMAT_ARGS"] == f"--initial-controllers {voters}"
    with pytest.raises(HarnessError, match="cluster id"):
        dq.plan({}, CONTROLLERS[0], NODES)


def test_directory_ids_are_kafka_uuids():
    ids = {directory_id("c", i) for i in range(100, 400)}
    assert len(ids) == 300                                      # distinct per node
    for x in ids:
        assert len(x) == 22 and not x.startswith(("-", "A"))
        assert len(base64.urlsafe_b64decode(x + "==")) == 16
    assert directory_id("c", 101) == directory_id("c", 101) != directory_id("d", 101)


def test_needs_kafka_4():
    with pytest.raises(HarnessError, match="needs Kafka 4.0 or newer"):
        ApacheKraftDynamic().fits("3.9.2")
    ApacheKraftDynamic().fits("4.4.0")


def test_scenarios_and_capability_need_the_dynamic_quorum():
    names = {s.name: s for s in scenarios_for("conformance")}
    for n in ("dynamic_quorum.grow_under_leader_kill", "dynamic_quorum.shrink_under_partition",
              "dynamic_quorum.replace_wiped_voter"):
        assert "dynamic-quorum" in names[n].needs_roles and names[n].reads_controller_log
    cap = capability("dynamic-quorum")
    assert cap.families == ("dynamic_quorum",) and cap.needs_role == "dynamic-quorum"
    assert ("AddRaftVoter", 80) in cap.needs_apis and ("RemoveRaftVoter", 81) in cap.needs_apis
