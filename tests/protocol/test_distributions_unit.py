"""Distribution adapters (harness/distributions/__init__.py): node configs, container commands and
environments, image checks — without Docker (the KRaft cluster itself is in
tests/integration/test_kraft.py, ZooKeeper mode in tests/integration/test_cluster.py)."""

from __future__ import annotations

import base64
from dataclasses import dataclass

import pytest

from harness import distributions as d
from harness.distributions import base
from harness.cluster.cluster import Cluster, ClusterSpec
from harness.distributions.node_settings import DEFAULT_BROKER_CONFIG
from harness.distributions.control_plane import ProtocolControlPlane, ZkControlPlane, new_cluster_id
from harness.errors import HarnessError, NotSupported


@dataclass
class N:
    node_id: int
    alias: str
    host_port: int


@dataclass
class Img:
    tag: str
    distribution: str
    kafka_version: str | None
    image_id: str = "sha256:x"


NODES = [N(i, f"broker{i}", 40000 + i) for i in (1, 2, 3, 4)]


def test_default_is_kraft_and_zookeeper_mode_keeps_todays_config():
    assert d.resolve(None).name == d.DEFAULT == "apache-kraft"      # issue 40: KRaft is the default
    zk = d.resolve("apache-zk")
    assert zk.name == "apache-zk" and zk.roles == ("broker", "zookeeper") and zk.controller_model == "zk"
    common = zk.common_config(DEFAULT_BROKER_CONFIG, 3, {"min.insync.replicas": 2})
    assert common["min.insync.replicas"] == "2" and common["default.replication.factor"] == "3"
    plan = zk.plan(common, NODES[0], NODES[:3], "zk1:2181")
    assert plan.command == "broker"
    assert plan.config["broker.id"] == "1" and plan.config["zookeeper.connect"] == "zk1:2181"
    assert plan.config["advertised.listeners"] == "INTERNAL://broker1:9093,EXTERNAL://127.0.0.1:40001"
    assert plan.config["listener.security.protocol.map"] == "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT"
    assert plan.env == {"KC_CONFIG": d.properties_text(plan.config)}
    assert zk.started_line(2) == "[KafkaServer id=2] started"


def test_kraft_combined_nodes_form_the_quorum():
    kr = d.resolve("apache-kraft")
    assert kr.roles == ("broker", "controller") and kr.controller_model == "kraft"
    common = kr.common_config(DEFAULT_BROKER_CONFIG, 3, {})
    assert not [k for k in common if k.startswith("zookeeper.")]
    assert common["broker.session.timeout.ms"] == "9000"
    plan = kr.plan(common, NODES[1], NODES[:3], cluster_id="abc")
    cfg = plan.config
    assert plan.command == "kraft" and plan.env["KC_CLUSTER_ID"] == "abc"
    assert cfg["process.roles"] == "broker,controller" and cfg["node.id"] == "2" and "broker.id" not in cfg
    assert cfg["controller.quorum.voters"] == "1@broker1:9094,2@broker2:9094,3@broker3:9094"
    assert cfg["listeners"] == "INTERNAL://0.0.0.0:9093,EXTERNAL://0.0.0.0:40002,CONTROLLER://0.0.0.0:9094"
    assert "CONTROLLER" not in cfg["advertised.listeners"]       # the controller port is never published
    assert cfg["controller.listener.names"] == "CONTROLLER"
    assert kr.started_line(2) == "[KafkaRaftServer nodeId=2] Kafka Server started"
    with pytest.raises(HarnessError, match="cluster id"):
        kr.plan(common, NODES[0], NODES[:3])


def test_kraft_quorum_size():
    assert d.ApacheKraft.voter_ids(NODES) == [1, 2, 3]
    assert d.ApacheKraft.voter_ids(NODES[:2]) == [1]
    kr = d.ApacheKraft()
    broker_only = kr.node_config({}, NODES[3], NODES)
    assert broker_only["process.roles"] == "broker" and "CONTROLLER://" not in broker_only["listeners"]
    assert "CONTROLLER:PLAINTEXT" in broker_only["listener.security.protocol.map"]   # to reach the controllers


def test_user_overrides_win():
    cfg = d.ApacheKraft().common_config(DEFAULT_BROKER_CONFIG, 3, {"broker.session.timeout.ms": 12000})
    assert cfg["broker.session.timeout.ms"] == "12000"


def test_cluster_ids_are_valid_kafka_uuids():
    for _ in range(200):
        cid = new_cluster_id()
        assert len(cid) == 22 and not cid.startswith("-")
        assert len(base64.urlsafe_b64decode(cid + "==")) == 16


def test_image_checks():
    d.ApacheZk().check_image(Img("kafka-chaos/kafka:3.9.2", "apache-zk", "3.9.2"))
    with pytest.raises(HarnessError, match="no ZooKeeper mode"):
        d.ApacheZk().check_image(Img("kafka-chaos/kafka:4.0.0", "apache-zk", "4.0.0"))
    with pytest.raises(HarnessError, match="generic"):
        d.ApacheZk().check_image(Img("foreign:1", "generic", None))
    d.ApacheKraft().check_image(Img("kafka-chaos/kafka:3.9.2", "apache-zk", "3.9.2"))
    with pytest.raises(HarnessError, match="3.3 or newer"):
        d.ApacheKraft().check_image(Img("kafka-chaos/kafka:2.8.2", "apache-zk", "2.8.2"))
    with pytest.raises(HarnessError, match="generic"):
        d.ApacheKraft().check_image(Img("foreign:1", "generic", None))
    d.Generic().check_image(Img("foreign:1", "generic", None))


def test_generic_passes_properties_as_environment():
    assert base.property_env_name("log.dirs") == "KAFKA_LOG_DIRS"
    assert base.property_env_name("a.b_c-d") == "KAFKA_A_B__C___D"
    with pytest.raises(HarnessError):
        base.property_env_name("bad name")
    g = d.Generic()
    plan = g.plan({"num.partitions": "1"}, NODES[0], NODES[:3], cluster_id="cid", extra_env={"X": "y"})
    assert plan.command is None
    assert plan.env["KAFKA_NODE_ID"] == "1" and plan.env["KAFKA_PROCESS_ROLES"] == "broker,controller"
    assert plan.env["KAFKA_NUM_PARTITIONS"] == "1" and plan.env["CLUSTER_ID"] == "cid" and plan.env["X"] == "y"
    assert g.started_line(1) == ""
    with pytest.raises(HarnessError, match="prefix"):
        d.Generic(env_prefix="kafka_")


def test_generic_environment_reads_back_through_the_official_decoding():
    """``env_property_name`` is KafkaDockerWrapper's decoding (Kafka 3.7-3.9): every property the
    harness gives a node survives the round trip, and what would not is refused before any start."""
    assert base.env_property_name("KAFKA_A_B__C___D") == "a.b_c-d"
    assert base.env_property_name("KAFKA_LOG_DIRS") == "log.dirs"
    assert base.env_property_name("KAFKA_HEAP_OPTS") is None and base.env_property_name("CLUSTER_ID") is None
    # the wrapper removes every "KAFKA_", not only the prefix
    assert base.env_property_name("KAFKA_KAFKA_METRICS_REPORTERS") == "metrics.reporters"
    g = d.Generic()
    common = g.common_config(DEFAULT_BROKER_CONFIG, 3, {"log.retention.check.interval.ms": "1000"})
    plan = g.plan(common, NODES[3], NODES, cluster_id="cid")
    decoded = {base.env_property_name(k): v for k, v in plan.env.items() if base.env_property_name(k)}
    assert decoded == plan.config and "zookeeper.connect" not in decoded
    for bad, why in [({"kafka.metrics.reporters": "x"}, "reads back as 'metrics.reporters'"),
                     ({"heap.opts": "x"}, "reads back as None"),
                     ({"Num.Partitions": "1"}, "reads back as 'num.partitions'"),
                     ({"num.partitions": "1\nlog.dirs=/x"}, "cannot span lines")]:
        with pytest.raises(HarnessError, match=why):
            g.plan(g.common_config({}, 3, bad), NODES[0], NODES[:3], cluster_id="cid")


def test_unknown_distribution_is_a_clear_error():
    with pytest.raises(HarnessError, match="unknown distribution 'kraft'.*apache-kraft"):
        ClusterSpec(distribution="kraft").validate()


def test_each_distribution_names_its_control_plane():
    """harness/distributions/control_plane.py: ZooKeeper mode observes ZooKeeper, KRaft and generic the protocol."""
    assert isinstance(Cluster(ClusterSpec(distribution="apache-zk")).control, ZkControlPlane)
    for name in ("apache-kraft", "generic"):
        cl = Cluster(ClusterSpec(distribution=name))
        assert isinstance(cl.control, ProtocolControlPlane)
        with pytest.raises(HarnessError, match="it has no ZooKeeper"):
            cl.zk()
        assert cl.control.zookeeper_count(3) == 0 and len(cl.control.new_cluster_id()) == 22
    # broker epochs and the controller's writes: the KRaft metadata log (none readable before the
    # cluster started); a vendor's broker keeps no log the harness can read
    kraft = Cluster(ClusterSpec(distribution="apache-kraft"))
    with pytest.raises(HarnessError, match="no node's metadata log could be read"):
        kraft.broker_epoch(1)
    # a foreign image: its log is read when it keeps Apache's; a broker without one is told so precisely
    generic = Cluster(ClusterSpec(distribution="generic"))
    with pytest.raises(NotSupported, match="no node of this generic cluster keeps a KRaft metadata log"):
        generic.broker_epoch(1)
    with pytest.raises(NotSupported, match="the scenario checks the controller's writes, which this broker does not"):
        generic.control.writes_since(0)
    zk = Cluster(ClusterSpec(distribution="apache-zk", zookeepers=3)).control
    assert zk.zookeeper_count(3) == 3 and zk.new_cluster_id() is None
