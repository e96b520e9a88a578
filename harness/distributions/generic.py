"""The ``generic`` distribution: a user-supplied image, configured by environment variables the way the
official ``apache/kafka`` image is: every property ``a.b_c-d`` becomes ``KAFKA_A_B__C___D`` (prefix
configurable), plus ``CLUSTER_ID``. The image's own entrypoint and command run. It gets the same KRaft
configuration as ``apache-kraft`` (layout ``combined``); readiness is judged by the protocol only (no log
line). Properties are checked to read back unchanged through the official image's decoding
(``kafka.docker.KafkaDockerWrapper``); docs/examples/official-style-image is such an image.
"""

from __future__ import annotations

import re

from harness.distributions.control_plane import new_cluster_id
from harness.distributions.apache_kraft import ApacheKraft
from harness.distributions.base import NodePlan, env_property_name, property_env_name
from harness.errors import HarnessError


class Generic(ApacheKraft):
    """Any image configured by environment variables; KRaft layout, readiness by protocol only."""

    name = "generic"
    foreign = True
    # an image built on Apache Kafka keeps the metadata log where the harness puts log.dirs; a vendor's
    # broker may keep none, and scenarios that read the controller's writes then say so (NotSupported)
    metadata_log = True
    metadata_log_required = False
    sets_features = False          # the image's own entrypoint formats the storage

    def __init__(self, env_prefix: str = "KAFKA_", cluster_id_env: str = "CLUSTER_ID"):
        if not re.fullmatch(r"[A-Z][A-Z0-9_]*", env_prefix):
            raise HarnessError(f"environment prefix {env_prefix!r}: use upper-case letters, digits and '_'")
        self.env_prefix, self.cluster_id_env = env_prefix, cluster_id_env

    def check_image(self, image) -> None:
        return None         # anything local; whether it answers is judged by readiness

    def fits(self, kafka_version: str | None) -> None:
        return None

    def plan(self, common, node, nodes, zookeeper_connect="", cluster_id=None, extra_env=None):
        cfg = self.node_config(common, node, nodes)
        env = {}
        for k, v in cfg.items():
            name = property_env_name(k, self.env_prefix)
            back = env_property_name(name, self.env_prefix)
            if back != k:
                raise HarnessError(f"property {k!r} cannot be passed to an image configured like apache/kafka: "
                                   f"{name} reads back as {back!r}")
            if "\n" in v or "\r" in v:
                raise HarnessError(f"property {k!r}: a value passed as an environment variable cannot span lines")
            env[name] = v
        env[self.cluster_id_env] = cluster_id or new_cluster_id()
        env.update(extra_env or {})
        return NodePlan(None, env, cfg)

    def started_line(self, node_id: int) -> str:
        return ""
