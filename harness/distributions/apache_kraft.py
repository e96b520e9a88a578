"""The ``apache-kraft`` distribution: Apache Kafka in KRaft mode from the kafka-chaos images (3.3+; 4.x has
only this mode), layout ``combined``. The first ``min(3, brokers)`` nodes (1 when fewer than 3) are
combined ``broker,controller`` nodes and form the static quorum (``controller.quorum.voters``); the
others are brokers only. The CONTROLLER listener (port 9094) exists on the Docker network only. The
entrypoint's ``kraft`` mode formats the storage with ``$KC_CLUSTER_ID`` (idempotent) and runs
``kafka.Kafka``. The dedicated-quorum layout is :mod:`harness.distributions.dedicated`.
"""

from __future__ import annotations

from reference import versions

from harness.distributions.base import (CONTROLLER_PORT, COMBINED, Distribution, NodeLike, NodePlan,
                                        controller_listeners, listeners, properties_text, version_key)
from harness.errors import HarnessError

# Settings that only mean something with ZooKeeper; left out of KRaft configs.
_ZK_ONLY_PREFIXES = ("zookeeper.",)
# KRaft timings: Kafka's own defaults (heartbeat every 2 s, a silent broker is fenced after 9 s;
# controller-spec §9.3). Shorter sessions made a loaded 2-core host fence live brokers ("controller
# event queue overloaded. Timed out heartbeat"). Override through ClusterSpec.broker_config.
KRAFT_DEFAULTS: dict[str, str] = {
    "broker.heartbeat.interval.ms": "2000",
    "broker.session.timeout.ms": "9000",
}


class ApacheKraft(Distribution):
    """Apache Kafka in KRaft mode: combined broker+controller nodes forming the quorum."""

    name = "apache-kraft"
    metadata_log = True
    layout = COMBINED
    min_version = (3, 3)

    def check_image(self, image) -> None:
        if image.distribution not in ("apache-zk", "apache-kraft") or not image.kafka_version:
            raise HarnessError(f"image {image.tag} is not a kafka-chaos Apache Kafka image; "
                               "run a foreign image with distribution 'generic'")
        if versions.older_than(image.kafka_version, self.min_version):
            raise HarnessError(f"Kafka {image.kafka_version} has no production KRaft mode; use 3.3 or newer, or --distribution apache-zk")

    def fits(self, kafka_version: str | None) -> None:
        key = version_key(kafka_version)
        if key is not None and key < self.min_version:
            raise HarnessError(f"Kafka {kafka_version.strip()} has no production KRaft mode; use 3.3 or newer, or --distribution apache-zk")

    @staticmethod
    def voter_ids(nodes: list[NodeLike]) -> list[int]:
        """The quorum: the first 3 nodes (by id), or only the first when there are fewer than 3."""
        ids = sorted(n.node_id for n in nodes)
        return ids[:3] if len(ids) >= 3 else ids[:1]

    def process_roles(self, node: NodeLike, voters: list[int]) -> str:
        """``process.roles`` of ``node``: combined on the voters, broker elsewhere."""
        return "broker,controller" if node.node_id in voters else "broker"

    def common_config(self, defaults, brokers, overrides):
        base = {k: v for k, v in defaults.items() if not k.startswith(_ZK_ONLY_PREFIXES)}
        base.update(KRAFT_DEFAULTS)
        return super().common_config(base, brokers, overrides)

    def node_config(self, common, node, nodes, zookeeper_connect=""):
        voters = self.voter_ids(nodes)
        by_id = {n.node_id: n for n in nodes}
        roles = self.process_roles(node, voters)
        cfg = dict(common)
        if roles == "controller":
            cfg.update(controller_listeners())
        else:
            cfg.update(listeners(node, controller="controller" in roles))
        cfg.update({
            "node.id": str(node.node_id),
            "process.roles": roles,
            "controller.quorum.voters": ",".join(f"{v}@{by_id[v].alias}:{CONTROLLER_PORT}" for v in voters),
            "controller.listener.names": "CONTROLLER",
        })
        return cfg

    def plan(self, common, node, nodes, zookeeper_connect="", cluster_id=None, extra_env=None):
        if not cluster_id:
            raise HarnessError("a KRaft node needs a cluster id")
        cfg = self.node_config(common, node, nodes)
        env = {"KC_CONFIG": properties_text(cfg), "KC_CLUSTER_ID": cluster_id, **(extra_env or {})}
        return NodePlan("kraft", env, cfg)

    def started_line(self, node_id: int) -> str:
        return f"[KafkaRaftServer nodeId={node_id}] Kafka Server started"
