"""The dedicated-quorum KRaft layout (harness/distributions/dedicated.py) and the node groups every
distribution declares (harness/cluster/node_groups.py): node configs, ids, the cluster's nodes, the controller
target, link classes and metadata-log order — without Docker (the cluster itself:
tests/integration/test_kraft_dedicated.py)."""

from __future__ import annotations

import random

import pytest

from tests.protocol.fake_nodes import BROKERS, controllers
from harness import distributions as d
from harness.cluster.cluster import Cluster, ClusterSpec
from harness.distributions.control_plane import ProtocolControlPlane
from harness.distributions.dedicated import ApacheKraftDedicated
from harness.errors import HarnessError
from harness.nemesis import netrules
from harness.nemesis.catalog import fault_info
from harness.nemesis.targets import resolve
from harness.cluster.node import Node
from harness.cluster.node_groups import make_nodes
from harness.distributions.node_settings import DEFAULT_BROKER_CONFIG
from harness.observer import kraft_history


CONTROLLERS = controllers(3)
VOTERS = "101@controller101:9094,102@controller102:9094,103@controller103:9094"


def _spec(**kw) -> ClusterSpec:
    return ClusterSpec(distribution="apache-kraft-dedicated", **kw)


def test_registered_with_the_kraft_model_and_profile():
    dd = d.resolve("apache-kraft-dedicated")
    assert isinstance(dd, ApacheKraftDedicated) and "apache-kraft-dedicated" in d.NAMES
    assert dd.controller_model == "kraft" and dd.observation == "protocol" and dd.metadata_log
    assert dd.roles == ("broker", "controller")
    assert dd.default_profile("4.1.2") == "kraft-4.1" and dd.profile(None, "3.9.2").name == "kraft-3.9"
    assert dd.started_line(101) == "[KafkaRaftServer nodeId=101] Kafka Server started"


def test_controllers_are_a_node_group_with_ids_after_any_broker():
    dd = ApacheKraftDedicated()
    (g,) = dd.node_groups(_spec(brokers=9))
    assert (g.role, g.ids, g.prefix, g.alias, g.container_port) == ("controller", (101, 102, 103), "c",
                                                                      "controller", 9094)
    assert dd.node_groups(_spec(controllers=5))[0].ids == (101, 102, 103, 104, 105)
    assert d.resolve("apache-kraft").node_groups(_spec()) == [] and d.resolve("generic").node_groups(_spec()) == []
    (zk,) = d.resolve("apache-zk").node_groups(ClusterSpec(zookeepers=3))
    assert (zk.role, zk.ids, zk.prefix, zk.alias, zk.container_port) == ("zookeeper", (1, 2, 3), "zk", "zk", 2181)
    with pytest.raises(HarnessError, match="--controllers must be 1, 3 or 5"):
        _spec(controllers=2).validate()


def test_controller_node_config_has_only_the_controller_listener():
    dd = ApacheKraftDedicated()
    common = dd.common_config(DEFAULT_BROKER_CONFIG, 3, {})
    (g,) = dd.node_groups(_spec())
    plan = dd.aux_plan(g, CONTROLLERS[1], CONTROLLERS, common, BROKERS + CONTROLLERS, "cid", {"X": "y"})
    cfg = plan.config
    assert plan.command == "kraft" and plan.env["KC_CLUSTER_ID"] == "cid" and plan.env["X"] == "y"
    assert plan.env["KC_HEAP_OPTS"] == "-Xms64m -Xmx256m"
    assert cfg["process.roles"] == "controller" and cfg["node.id"] == "102"
    assert cfg["controller.quorum.voters"] == VOTERS and cfg["controller.listener.names"] == "CONTROLLER"
    assert cfg["listeners"] == "CONTROLLER://0.0.0.0:9094"
    assert cfg["listener.security.protocol.map"] == "CONTROLLER:PLAINTEXT"
    # Kafka refuses advertised listeners and an inter-broker listener on a controller-only node
    assert "advertised.listeners" not in cfg and "inter.broker.listener.name" not in cfg
    assert cfg["log.dirs"] == "/var/lib/kafka/data"       # its metadata log: where the reader looks
    assert not [k for k in cfg if k.startswith("zookeeper.")]


def test_broker_node_config_is_broker_only_and_points_at_the_controllers():
    dd = ApacheKraftDedicated()
    common = dd.common_config(DEFAULT_BROKER_CONFIG, 3, {})
    assert common["default.replication.factor"] == "3"      # fitted to the brokers, not the controllers
    cfg = dd.plan(common, BROKERS[0], BROKERS + CONTROLLERS, cluster_id="cid").config
    assert cfg["process.roles"] == "broker" and cfg["node.id"] == "1"
    assert cfg["controller.quorum.voters"] == VOTERS
    assert "CONTROLLER://" not in cfg["listeners"] and "CONTROLLER" not in cfg["advertised.listeners"]
    assert "CONTROLLER:PLAINTEXT" in cfg["listener.security.protocol.map"]     # to reach the controllers
    assert cfg["advertised.listeners"] == "INTERNAL://broker1:9093,EXTERNAL://127.0.0.1:40001"
    assert dd.voter_ids(BROKERS + CONTROLLERS) == [101, 102, 103]
    # the combined layout is unchanged: the first three brokers are the voters
    comb = d.ApacheKraft().plan(common, BROKERS[0], BROKERS, cluster_id="cid").config
    assert comb["process.roles"] == "broker,controller" and comb["controller.quorum.voters"].startswith("1@broker1")


def _cluster(n_brokers=3) -> Cluster:
    """A dedicated-layout Cluster with its nodes made as _start_once makes them (no container)."""
    cl = Cluster(_spec(brokers=n_brokers, name="dd"))
    dd = cl.distribution
    cl.aux_nodes = {g.role: make_nodes(cl.name, g, [31000 + i for i in g.ids], dd.started_line)
                    for g in dd.node_groups(cl.spec)}
    cl.brokers = {i: Node(cl.name, "broker", i, f"kc-dd-b{i}", f"broker{i}", 30000 + i, dd.started_line(i))
                  for i in range(1, n_brokers + 1)}
    return cl


def test_the_cluster_keeps_brokers_and_controllers_apart():
    cl = _cluster()
    assert isinstance(cl.control, ProtocolControlPlane) and cl.control.zookeeper_count(3) == 0
    assert cl.broker_ids == [1, 2, 3] and cl.zookeepers == []
    assert [c.name for c in cl.controllers] == ["kc-dd-c101", "kc-dd-c102", "kc-dd-c103"]
    assert [c.alias for c in cl.controllers] == ["controller101", "controller102", "controller103"]
    assert {c.role for c in cl.controllers} == {"controller"} and {c.client_port for c in cl.controllers} == {9094}
    assert [n.node_id for n in cl.nodes()] == [1, 2, 3, 101, 102, 103]
    assert cl.node("controller102").name == "kc-dd-c102"
    assert cl.bootstrap_servers == "127.0.0.1:30001,127.0.0.1:30002,127.0.0.1:30003"   # brokers only
    assert cl._layout() == "0 ZooKeeper + 3 brokers + 3 controllers"
    cl.cluster_id = "cid"
    plan = cl._node_plan(cl.brokers[2])
    assert plan.config["controller.quorum.voters"] == VOTERS
    # ZooKeeper mode through the same mechanism: the ensemble is a node group too
    zk = Cluster(ClusterSpec(zookeepers=3, distribution="apache-zk"))
    assert zk.control.zookeeper_count(3) == 3 and zk.controllers == []


class _View:
    def __init__(self, controller):
        self.c = controller

    def controller_id(self):
        return self.c


def test_controller_target_is_the_active_controller_node():
    cl = _cluster()
    assert [n.name for n in resolve("controller", cl, _View(102), random.Random(0))] == ["kc-dd-c102"]
    assert [n.name for n in resolve("broker:2", cl, _View(102), random.Random(0))] == ["kc-dd-b2"]
    # process and network faults act on controller nodes; ZooKeeper faults do not
    assert "controller" in fault_info("kill").roles and "controller" in fault_info("pause").roles
    assert fault_info("zk_kill").roles == ("zookeeper",)


def test_links_between_kafka_nodes_are_broker_links():
    b = netrules.NetNode("b1", "broker1", "broker", "10.0.0.2", 30001, "10.0.0.1")
    c = netrules.NetNode("c101", "controller101", "controller", "10.0.0.5", 9094, "10.0.0.1")
    z = netrules.NetNode("zk1", "zk1", "zookeeper", "10.0.0.9", 2181, "10.0.0.1")
    assert netrules.link_kind(b, c) == "broker-broker" and netrules.link_kind(c, c) == "broker-broker"
    assert netrules.link_kind(c, z) == "broker-zk"
    # a client cut on a controller matches the gateway only: brokers keep reaching port 9094
    rules = netrules.client_rules(c, "both", "t")
    assert all("10.0.0.1/32" in r[1] for r in rules) and any("9094" in r[1] for r in rules)


def test_metadata_log_is_read_from_the_controllers_first():
    cl = _cluster()
    assert [n.name for n in kraft_history._nodes_voters_first(cl)] == [
        "kc-dd-c101", "kc-dd-c102", "kc-dd-c103", "kc-dd-b1", "kc-dd-b2", "kc-dd-b3"]
