"""The ``apache-zk`` distribution (``--distribution apache-zk``; the default is KRaft): Apache Kafka in
ZooKeeper mode from an image built by :mod:`harness.images` (2.x-3.9; default the newest 3.9.x). The
image's entrypoint runs ``broker`` with the properties in ``$KC_CONFIG``; the cluster runs a ZooKeeper
ensemble (:meth:`ApacheZk.node_groups`) and is observed through ZooKeeper (its watch and transaction log).
"""

from __future__ import annotations

from reference import versions

from harness.distributions.control_plane import ControlPlane, ZkControlPlane
from harness.distributions.node_settings import DEFAULT_ZK_CONFIG, ZK_CLIENT_PORT
from harness.distributions.base import (INTERNAL_PORT, REPLICATED, Distribution, NodeGroup, NodePlan,
                                        properties_text, version_key)
from harness.errors import HarnessError


class ApacheZk(Distribution):
    """Apache Kafka brokers registered in ZooKeeper (what ``harness/cluster/cluster.py`` always did)."""

    name = "apache-zk"
    roles = ("broker", "zookeeper")
    controller_model = "zk"
    observation = "zookeeper"
    layout = REPLICATED

    def control_plane(self, cluster) -> ControlPlane:
        return ZkControlPlane(cluster)

    def node_groups(self, spec) -> list[NodeGroup]:
        """The ZooKeeper ensemble: ``spec.zookeepers`` servers ``kc-<name>-zk<N>`` (alias ``zk<N>``)."""
        return [NodeGroup("zookeeper", tuple(range(1, spec.zookeepers + 1)), "zk", "zk", ZK_CLIENT_PORT, 100)]

    def aux_plan(self, group, node, members, common, kafka_nodes, cluster_id=None, extra_env=None):
        cfg = dict(DEFAULT_ZK_CONFIG)
        if len(members) > 1:
            for other in members:
                cfg[f"server.{other.node_id}"] = f"{other.alias}:2888:3888"
        return NodePlan("zookeeper", {"KC_CONFIG": properties_text(cfg), "KC_ZK_MYID": str(node.node_id)}, cfg)

    def fits(self, kafka_version: str | None) -> None:
        key = version_key(kafka_version)
        if key is not None and key >= (4, 0):
            raise HarnessError(f"Kafka {kafka_version.strip()} has no ZooKeeper mode; use --distribution apache-kraft")

    def check_image(self, image) -> None:
        # 4.x images are labelled apache-kraft: say why they cannot run here before the generic refusal
        if image.kafka_version and versions.at_least(image.kafka_version, (4,)):
            raise HarnessError(f"Kafka {image.kafka_version} has no ZooKeeper mode; use --distribution apache-kraft")
        if image.distribution != "apache-zk":
            raise HarnessError(f"image {image.tag} is not a kafka-chaos Apache Kafka image; "
                               "run a foreign image with distribution 'generic'")

    def node_config(self, common, node, nodes, zookeeper_connect=""):
        cfg = dict(common)
        cfg.update({
            "broker.id": str(node.node_id),
            "listeners": f"INTERNAL://0.0.0.0:{INTERNAL_PORT},EXTERNAL://0.0.0.0:{node.host_port}",
            "advertised.listeners": f"INTERNAL://{node.alias}:{INTERNAL_PORT},EXTERNAL://127.0.0.1:{node.host_port}",
            "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
            "inter.broker.listener.name": "INTERNAL",
            "zookeeper.connect": zookeeper_connect,
        })
        return cfg

    def plan(self, common, node, nodes, zookeeper_connect="", cluster_id=None, extra_env=None):
        cfg = self.node_config(common, node, nodes, zookeeper_connect)
        return NodePlan("broker", {"KC_CONFIG": properties_text(cfg), **(extra_env or {})}, cfg)

    def started_line(self, node_id: int) -> str:
        return f"[KafkaServer id={node_id}] started"
