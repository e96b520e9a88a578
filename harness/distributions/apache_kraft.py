"""The ``apache-kraft`` distribution: Apache Kafka in KRaft mode from the kafka-chaos images (3.3+; 4.x has
only this mode), layout ``combined``. The first ``min(3, brokers)`` nodes (1 when fewer than 3) are
combined ``broker,controller`` nodes and form the static quorum (``controller.quorum.voters``); the
others are brokers only. The CONTROLLER listener (port 9094) exists on the Docker network only. The
entrypoint's ``kraft`` mode formats the storage with ``$KC_CLUSTER_ID`` (idempotent) and runs
``kafka.Kafka``. The dedicated-quorum layout is :mod:`harness.distributions.dedicated`.

Feature levels (``ClusterSpec.features``, a scenario's ``[cluster] features``, ``run --feature``): a node
then starts with :data:`FORMAT_THEN_START`, which formats its empty log dir with Kafka's storage tool
and ``--feature NAME=LEVEL`` for each (the image's storage template has the release's default levels),
then hands over to the image's ``kraft`` mode, which finds the storage formatted (docs/kraft.md
"Feature levels"). A static quorum is ``kraft.version`` 0: the tool refuses 1 with
``controller.quorum.voters`` set, so it is refused here first.
"""

from __future__ import annotations

import shlex

from reference import feature_versions, versions

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
ENTRYPOINT = "/opt/kafka-chaos/entrypoint.sh"
# A node whose storage is formatted with feature levels: the storage tool on an empty log dir (the first
# of log.dirs, as the entrypoint checks), with $KC_FORMAT_ARGS; a restarted container is formatted already
FORMAT_THEN_START = (
    "set -e\n"
    "mkdir -p /etc/kafka-chaos\n"
    "printf '%s\\n' \"$KC_CONFIG\" > /etc/kafka-chaos/server.properties\n"
    "dirs=$(printf '%s\\n' \"$KC_CONFIG\" | sed -n 's/^log\\.dirs=//p' | tail -1)\n"
    "logdir=$(printf '%s' \"$dirs\" | cut -d, -f1)\n"
    "if [ ! -f \"${logdir:-/var/lib/kafka/data}/meta.properties\" ]; then\n"
    "  java -Xmx256m -XX:TieredStopAtLevel=1 -Dlog4j.configuration=file:/opt/kafka/config/tools-log4j.properties "
    "-cp '/opt/kafka/libs/*' kafka.tools.StorageTool format -t \"$KC_CLUSTER_ID\" "
    "-c /etc/kafka-chaos/server.properties $KC_FORMAT_ARGS\n"
    "fi\n"
    f"exec {ENTRYPOINT} kraft\n")


def feature_args(features: dict[str, int] | None) -> list[str]:
    """``kafka-storage format`` arguments setting ``features``: ``--feature NAME=LEVEL`` each, in order."""
    return [a for name, level in (features or {}).items() for a in ("--feature", f"{name}={int(level)}")]


class ApacheKraft(Distribution):
    """Apache Kafka in KRaft mode: combined broker+controller nodes forming the quorum."""

    name = "apache-kraft"
    metadata_log = True
    layout = COMBINED
    min_version = (3, 3)
    sets_features = True
    kraft_version = 0            # a static quorum (controller.quorum.voters): kraft.version 0

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

    def features_problem(self, features, kafka_version, config=None):
        if not features or not self.sets_features:      # a subclass that starts a foreign image (generic)
            return super().features_problem(features, kafka_version, config)
        kv = features.get(feature_versions.KRAFT_VERSION)
        if kv is not None and kv != self.kraft_version:
            quorum = "a dynamic quorum (apache-kraft-dynamic)" if self.kraft_version else "a static quorum"
            return (f"features.{feature_versions.KRAFT_VERSION}={kv}: distribution {self.name} runs {quorum}, "
                    f"kraft.version {self.kraft_version}" + ("" if self.kraft_version else
                                                            "; a dynamic quorum is --distribution apache-kraft-dynamic"))
        unstable = str((config or {}).get("unstable.feature.versions.enable", "")).lower() == "true"
        return feature_versions.problem(kafka_version, features, unstable)

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

    def plan(self, common, node, nodes, zookeeper_connect="", cluster_id=None, extra_env=None, features=None):
        """``features``: feature levels to format the storage with (None or empty: the image's template,
        the release's default levels)."""
        if not cluster_id:
            raise HarnessError("a KRaft node needs a cluster id")
        cfg = self.node_config(common, node, nodes)
        env = {"KC_CONFIG": properties_text(cfg), "KC_CLUSTER_ID": cluster_id, **(extra_env or {})}
        if not features:
            return NodePlan("kraft", env, cfg)
        env["KC_FORMAT_ARGS"] = " ".join(shlex.quote(a) for a in feature_args(features))
        return NodePlan(["sh", "-c", FORMAT_THEN_START], env, cfg)

    def started_line(self, node_id: int) -> str:
        return f"[KafkaRaftServer nodeId={node_id}] Kafka Server started"
