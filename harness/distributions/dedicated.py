"""The ``apache-kraft-dedicated`` distribution: Apache Kafka in KRaft mode with a dedicated controller
quorum (docs/kraft.md, "Layouts").

A cluster of ``brokers=N`` runs N broker-only nodes (``process.roles=broker``, ids 1..N, containers
``kc-<name>-b<ID>`` exactly as in the other layouts) plus ``ClusterSpec.controllers`` (3 by default; 1,
3 or 5) controller-only nodes (``process.roles=controller``) with ids 101, 102, ... (containers
``kc-<name>-c<ID>``, alias ``controller<ID>``, role label ``controller``). The controllers form the static
quorum (``controller.quorum.voters=101@controller101:9094,...``) and listen on the CONTROLLER listener
only (Kafka refuses any other listener, and any advertised one, on a controller-only node); that port is
published on 127.0.0.1 so the harness can ask a controller directly. Brokers forward DescribeQuorum to
the active controller, so the quorum is observed through the brokers as in the combined layout.

Controller ids start at 101 so that broker ids stay 1..N whatever N is (scenarios, checkers and samplers
name brokers by those ids) and never collide with a controller's. Everything else (images, timings, the
reference profile, the metadata log: every controller keeps ``__cluster_metadata-0`` in the first of
``log.dirs`` as the brokers do) is the combined layout's, :class:`harness.distributions.apache_kraft.ApacheKraft`.
"""

from __future__ import annotations

from harness.distributions.apache_kraft import ApacheKraft
from harness.distributions.base import CONTROLLER_PORT, DEDICATED_CONTROLLERS, NodeGroup, role_of

CONTROLLER_ID_BASE = 100           # controller n (1-based) has node id 100 + n
CONTROLLER_HEAP = "-Xms64m -Xmx256m"   # a controller holds only the metadata image: a smaller heap than a broker's


class ApacheKraftDedicated(ApacheKraft):
    """KRaft with controller-only nodes forming the quorum and broker-only nodes."""

    name = "apache-kraft-dedicated"
    layout = DEDICATED_CONTROLLERS

    @staticmethod
    def controller_ids(count: int) -> tuple[int, ...]:
        return tuple(CONTROLLER_ID_BASE + i for i in range(1, count + 1))

    def node_groups(self, spec) -> list[NodeGroup]:
        return [NodeGroup("controller", self.controller_ids(spec.controllers), "c", "controller",
                          CONTROLLER_PORT, 200)]

    @staticmethod
    def voter_ids(nodes) -> list[int]:
        """The quorum: every controller node."""
        return sorted(n.node_id for n in nodes if role_of(n) == "controller")

    def process_roles(self, node, voters: list[int]) -> str:
        return "controller" if role_of(node) == "controller" else "broker"

    def aux_plan(self, group, node, members, common, kafka_nodes, cluster_id=None, extra_env=None, features=None):
        """A controller node: the same ``kraft`` start as a broker (format, then run), its own config."""
        return self.plan(common, node, kafka_nodes, cluster_id=cluster_id,
                         extra_env={"KC_HEAP_OPTS": CONTROLLER_HEAP, **(extra_env or {})}, features=features)


ADAPTER = ApacheKraftDedicated
