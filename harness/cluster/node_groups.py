"""The nodes a cluster runs besides its brokers, as its distribution declares them
(:meth:`harness.distributions.Distribution.node_groups`): a ZooKeeper ensemble (``apache-zk``), a
dedicated KRaft controller quorum (``apache-kraft-dedicated``), a distribution file's service containers
(harness/distributions/services.py: on their own image). One mechanism for every role: the
cluster makes the nodes of each group, starts their containers before the brokers', and finds them
again by their role label when it attaches to a running cluster.

Also here: the container of any node (a broker or a group member) from the distribution's
:class:`harness.distributions.NodePlan`.
"""

from __future__ import annotations

import os
import time

from harness import distributions
from harness.errors import ClusterError
from harness.cluster.node import Node
from harness.distributions.node_settings import JVM_OPTS_ENV, container_limits


def _line(group: distributions.NodeGroup, node_id: int, started_line) -> str:
    return group.ready_log_line if group.ready_log_line is not None else started_line(node_id)


def make_nodes(cluster_name: str, group: distributions.NodeGroup, ports: list[int], started_line) -> list[Node]:
    """The nodes of ``group`` on the host ports ``ports`` (one each, in id order); ``started_line(id)``:
    the distribution's end-of-startup log line (a service group's own ``ready_log_line`` wins)."""
    return [Node(cluster_name, group.role, nid, f"kc-{cluster_name}-{group.prefix}{nid}", f"{group.alias}{nid}",
                 port, _line(group, nid, started_line), client_port=group.container_port, service=group.service)
            for nid, port in zip(group.ids, ports)]


def attached_node(cluster_name: str, group: distributions.NodeGroup, node_id: int, container_name: str,
                  host_port: int, started_line) -> Node:
    """A group member found running (``Cluster.attach``)."""
    return Node(cluster_name, group.role, node_id, container_name, f"{group.alias}{node_id}", host_port,
                _line(group, node_id, started_line), client_port=group.container_port, service=group.service)


def container(cls, image_tag: str, net, node: Node, plan: distributions.NodePlan, labels: dict[str, str],
              generic: bool, more_ports: tuple[int, ...] = ()):
    """The (not yet started) container of ``node``: the plan's command and environment, the cluster's
    labels, the hardening limits of its role, its client port published on 127.0.0.1:<host port>
    (and ``more_ports``, each on the same host port: the other node ids of a one-process broker)."""
    c = cls(image_tag).with_name(node.name)
    if plan.command is not None:
        c = c.with_command(plan.command)
    c = (c.with_network(net)
         .with_network_aliases(node.alias)
         .with_kwargs(labels={**labels, **plan.labels}, hostname=node.alias, init=False, stop_signal="SIGTERM",
                      **container_limits(node.role, generic=generic)))
    # published on loopback only (docker-py accepts (host_ip, port); testcontainers' helper does not)
    c.ports[f"{node.client_port}/tcp"] = ("127.0.0.1", node.host_port)
    for p in more_ports:
        c.ports[f"{p}/tcp"] = ("127.0.0.1", p)
    for k, v in plan.env.items():
        c.with_env(k, v)
    if JVM_OPTS_ENV in os.environ and not generic:
        c.with_env("KC_JVM_OPTS", os.environ[JVM_OPTS_ENV])   # replaces the image's JIT default
    return c


def wait_services(cluster, groups: list[distributions.NodeGroup], deadline: float) -> None:
    """Until every node of each service group with a ``ready_log_line`` logged it since its container
    started (``deadline``: monotonic). A service that stopped running, or did not log it in time, is a
    ClusterError naming it with its last log lines: the brokers would only fail later, less clearly."""
    waiting = [n for g in groups if g.service and g.ready_log_line for n in cluster.aux_nodes[g.key]]
    while waiting:
        cluster._check_running(waiting)
        waiting = [n for n in waiting if not n.started()]
        if not waiting:
            return
        if time.monotonic() > deadline:
            n = waiting[0]
            raise ClusterError(f"service container {n.name} did not log {n.started_line!r} in time; "
                               f"last log lines:\n{n.logs(15)}")
        time.sleep(0.5)
