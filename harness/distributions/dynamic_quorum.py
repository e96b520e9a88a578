"""The ``apache-kraft-dynamic`` distribution: Apache Kafka in KRaft mode with a dynamic controller quorum
(KIP-853, ``kraft.version`` 1; docs/kraft.md, "The dynamic quorum").

The layout is the dedicated one (:mod:`harness.distributions.dedicated`: broker-only nodes 1..N,
controller-only nodes 101, 102, ...) with two differences:

* no node has ``controller.quorum.voters``; every node has ``controller.quorum.bootstrap.servers`` (the
  initial voters' CONTROLLER endpoints) and the voter set lives in the metadata log (VotersRecord);
* the storage is formatted for a dynamic quorum: the ``ClusterSpec.controllers`` initial voters with
  ``kafka-storage format --initial-controllers ID@HOST:PORT:DIRECTORY,...`` (each voter's directory id
  fixed by the harness, the same list on every voter, as the tool asks), every other node with
  ``--no-initial-controllers``. With the list the tool finalizes ``kraft.version=1``.

Besides the initial voters the cluster runs :data:`SPARE_CONTROLLERS` controller-only nodes that start as
observers (they replicate the metadata log but do not vote): ``add-controller`` makes one a voter
(:mod:`harness.cluster.quorum_ops`), so a 3-voter cluster grows to 5 without starting a container mid-run.

A node whose data directory was wiped (``meta.properties`` gone) is formatted again on its restart with
``--no-initial-controllers`` and a new directory id: it comes back as an observer, a new replica the
leader must add again (KIP-853's replaced disk), never as the voter it was.
"""

from __future__ import annotations

import base64
import hashlib
import shlex

from harness.distributions.apache_kraft import feature_args
from harness.distributions.base import CONTROLLER_PORT, NodeGroup, NodePlan, properties_text, role_of
from harness.distributions.dedicated import CONTROLLER_HEAP, ApacheKraftDedicated
from harness.errors import HarnessError

SPARE_CONTROLLERS = 2
DATA_DIR = "/var/lib/kafka/data"
# harness/cluster/quorum_ops.wipe_on_restart writes a new token into WIPE_MARKER (as root without
# DAC_OVERRIDE it can write only to /tmp, where the kafka user cannot delete its file): the start script
# wipes the data directory once per token, remembering the last one it acted on in WIPE_DONE
WIPE_MARKER = "/tmp/kc-wipe-data-on-start"
WIPE_DONE = "/etc/kafka-chaos/wiped-token"
ENTRYPOINT = "/opt/kafka-chaos/entrypoint.sh"
# Formats the storage once (a container restart keeps it; a wiped data directory is formatted again as an
# observer), then hands over to the image's ``kraft`` mode, which finds meta.properties and starts Kafka.
_START = (
    "set -e\n"
    f"mkdir -p {DATA_DIR} /etc/kafka-chaos\n"
    "printf '%s\\n' \"$KC_CONFIG\" > /etc/kafka-chaos/server.properties\n"
    f"if [ -s {WIPE_MARKER} ] && [ \"$(cat {WIPE_MARKER})\" != \"$(cat {WIPE_DONE} 2>/dev/null)\" ]; then "
    f"rm -rf {DATA_DIR}/* {DATA_DIR}/.lock; cat {WIPE_MARKER} > {WIPE_DONE}; "
    "echo 'the data directory was wiped (harness/cluster/quorum_ops.wipe_on_restart)'; fi\n"
    f"if [ ! -f {DATA_DIR}/meta.properties ]; then\n"
    "  args=\"$KC_FORMAT_ARGS\"\n"
    "  if [ -f /etc/kafka-chaos/formatted-once ]; then args=--no-initial-controllers; "
    "echo 'the data directory was wiped: formatting again as an observer (new directory id)'; fi\n"
    "  java -Xmx256m -XX:TieredStopAtLevel=1 -cp '/opt/kafka/libs/*' kafka.tools.StorageTool format "
    "-t \"$KC_CLUSTER_ID\" -c /etc/kafka-chaos/server.properties $args\n"
    "  touch /etc/kafka-chaos/formatted-once\n"
    "fi\n"
    f"exec {ENTRYPOINT} kraft\n")


def directory_id(cluster_id: str, node_id: int) -> str:
    """The metadata directory id the harness gives initial voter ``node_id`` (a Kafka ``Uuid``: 16 bytes,
    base64url without padding, 22 characters, not starting with '-': MetaPropertiesEnsemble
    .generateValidDirectoryId refuses those), the same for every node that formats the cluster."""
    raw = bytearray(hashlib.sha256(f"{cluster_id}/{node_id}".encode()).digest()[:16])
    text = base64.urlsafe_b64encode(bytes(raw)).decode().rstrip("=")
    while text.startswith(("-", "A")):            # "A..." could be a reserved id (all zero bits first)
        raw[0] = (raw[0] + 37) % 256
        text = base64.urlsafe_b64encode(bytes(raw)).decode().rstrip("=")
    return text


class ApacheKraftDynamic(ApacheKraftDedicated):
    """KRaft with a dynamic quorum: initial voters formatted with --initial-controllers, spare controllers
    as observers, voter changes through AddRaftVoter / RemoveRaftVoter."""

    name = "apache-kraft-dynamic"
    min_version = (4, 0)         # KIP-853 voter changes are usable from 3.9; the harness runs them on 4.x
    roles = ("broker", "controller", "dynamic-quorum")
    kraft_version = 1            # --initial-controllers finalizes kraft.version 1

    def fits(self, kafka_version):
        from harness.distributions.base import version_key
        key = version_key(kafka_version)
        if key is not None and key < self.min_version:
            raise HarnessError(f"a dynamic KRaft quorum (kraft.version 1) needs Kafka 4.0 or newer, not "
                               f"{kafka_version.strip()}")

    def check_image(self, image) -> None:
        super().check_image(image)
        self.fits(image.kafka_version)

    def node_groups(self, spec) -> list[NodeGroup]:
        ids = self.controller_ids(spec.controllers + SPARE_CONTROLLERS)
        return [NodeGroup("controller", ids, "c", "controller", CONTROLLER_PORT, 200)]

    @staticmethod
    def initial_voter_ids(nodes) -> list[int]:
        """The controllers formatted as the initial voters: all but the last SPARE_CONTROLLERS."""
        ids = sorted(n.node_id for n in nodes if role_of(n) == "controller")
        return ids[:max(1, len(ids) - SPARE_CONTROLLERS)]

    voter_ids = initial_voter_ids

    def node_config(self, common, node, nodes, zookeeper_connect=""):
        cfg = super().node_config(common, node, nodes)
        voters = self.initial_voter_ids(nodes)
        by_id = {n.node_id: n for n in nodes}
        del cfg["controller.quorum.voters"]
        if role_of(node) == "controller":
            # the endpoint the voter set records for this controller (add-controller sends it; without it
            # the tool sends the listener's 0.0.0.0 and the node corrects it by UpdateRaftVoter later)
            cfg["advertised.listeners"] = f"CONTROLLER://{node.alias}:{CONTROLLER_PORT}"
        cfg["controller.quorum.bootstrap.servers"] = ",".join(f"{by_id[v].alias}:{CONTROLLER_PORT}" for v in voters)
        return cfg

    def format_args(self, node, nodes, cluster_id: str) -> list[str]:
        """``kafka-storage format`` arguments of ``node``: the initial voters with their directory ids on an
        initial voter, ``--no-initial-controllers`` on every other node."""
        voters = self.initial_voter_ids(nodes)
        if node.node_id not in voters:
            return ["--no-initial-controllers"]
        by_id = {n.node_id: n for n in nodes}
        return ["--initial-controllers", ",".join(f"{v}@{by_id[v].alias}:{CONTROLLER_PORT}:"
                                                  f"{directory_id(cluster_id, v)}" for v in voters)]

    def plan(self, common, node, nodes, zookeeper_connect="", cluster_id=None, extra_env=None, features=None):
        """``features``: feature levels the first format sets (``--feature NAME=LEVEL``; kraft.version is
        left out: ``--initial-controllers`` sets it, and :meth:`features_problem` allows only 1)."""
        if not cluster_id:
            raise HarnessError("a KRaft node needs a cluster id")
        cfg = self.node_config(common, node, nodes)
        rest = {k: v for k, v in (features or {}).items() if k != "kraft.version"}
        args = self.format_args(node, nodes, cluster_id) + feature_args(rest)
        env = {"KC_CONFIG": properties_text(cfg), "KC_CLUSTER_ID": cluster_id,
               "KC_FORMAT_ARGS": " ".join(shlex.quote(a) for a in args), **(extra_env or {})}
        return NodePlan(["sh", "-c", _START], env, cfg)

    def aux_plan(self, group, node, members, common, kafka_nodes, cluster_id=None, extra_env=None, features=None):
        return self.plan(common, node, kafka_nodes, cluster_id=cluster_id,
                         extra_env={"KC_HEAP_OPTS": CONTROLLER_HEAP, **(extra_env or {})}, features=features)


ADAPTER = ApacheKraftDynamic
