"""What every fault is: the :class:`Fault` base class (``apply()`` and an idempotent ``heal()``), the
:class:`Context` it acts in (cluster, view, seeded RNG, addresses for network rules), the errors a
fault raises and :func:`run_script` (a shell script run as root inside a node's container).

The faults themselves: harness/nemesis/faults.py (process, ZooKeeper and controller, client) and
harness/nemesis/net_faults.py (iptables and tc).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from harness import docker_util
from harness.distributions import CONTROLLER_PORT, INTERNAL_PORT
from harness.errors import HarnessError
from harness.nemesis import netrules

if TYPE_CHECKING:  # pragma: no cover
    from harness.cluster.cluster import Cluster
    from harness.nemesis.view import View
    from harness.cluster.node import Node

ZK_CLIENT_PORT = 2181


class FaultError(HarnessError):
    """Applying or healing a fault failed (the environment did not do what was asked)."""


class FaultUnsupported(FaultError):
    """The environment cannot inject this fault (e.g. the kernel has no netem qdisc)."""


@dataclass
class Context:
    """What faults need: the cluster, the current view and the seeded RNG."""
    cluster: "Cluster"
    view: "View"
    rng: random.Random
    _gateway: str | None = field(default=None, repr=False)

    def gateway(self) -> str | None:
        """Gateway of the cluster network (the source address of host clients via docker-proxy); None
        for a nodes file's hosts (``--nodes``: no network the harness made)."""
        if getattr(self.cluster, "is_remote", False):
            return None
        if self._gateway is None:
            net = docker_util.client().networks.get(self.cluster.network_name)
            cfg = (net.attrs.get("IPAM") or {}).get("Config") or [{}]
            self._gateway = cfg[0].get("Gateway")
        return self._gateway

    def net_node(self, node: "Node") -> netrules.NetNode:
        ip = node.ip()
        if not ip:
            raise FaultError(f"{node.name} has no address on {self.cluster.network_name} (is it running?)")
        # the port host clients reach inside the node: a container's broker listens on its published port
        # itself (client_port == host_port); a nodes file's broker may listen elsewhere ([ports] client)
        port = getattr(node, "client_port", node.host_port if node.role == "broker" else ZK_CLIENT_PORT)
        runs_controller = getattr(self.cluster, "runs_controller", None)
        # a nodes file's node carries its own listener ports (harness/cluster/remote_cluster.py)
        ctl_port, int_port = getattr(node, "controller_port", CONTROLLER_PORT), getattr(node, "internal_port", INTERNAL_PORT)
        cport = ctl_port if runs_controller is not None and runs_controller(node) else None
        iport = int_port if node.role == "broker" else None
        return netrules.NetNode(node.name, node.alias, node.role, ip, port, self.gateway(), cport, iport)

    def everyone(self) -> list["Node"]:
        return self.cluster.nodes()

    def session_timeout_s(self) -> float:
        return self.cluster.zk_session_timeout_s()


def run_script(node: "Node", script: str, what: str) -> str:
    """Run a shell script as root on the node (its container, or its host over SSH); FaultError (with
    its output) when it fails."""
    try:
        code, out = node.exec(["sh", "-c", script])
    except Exception as e:  # noqa: BLE001 - docker API / SSH: paused, gone, unreachable, ...
        raise FaultError(f"{what} on {node.name}: {getattr(node.access, 'kind', 'docker')} exec failed: {e}") from None
    if code != 0:
        raise FaultError(f"{what} on {node.name} failed (exit {code}): {out.strip()[:400]}")
    return out


class Fault:
    """Base class. ``nodes`` are the resolved targets; ``healed`` turns True once heal ran."""

    name = "?"
    # True: the fault calls :meth:`restoring` itself at the moment its effect is undone (a container
    # started or unpaused), which may be long after its heal began (a killed broker's start waits for
    # its old ZooKeeper session to expire); False: the nemesis records ``fault.heal`` when heal begins
    # (a network fault's rules are removed right after)
    marks_restore = False

    def __init__(self, ctx: Context, fault_id: int, target: str, nodes: list["Node"], params: dict):
        self.ctx, self.fault_id, self.target, self.nodes, self.params = ctx, fault_id, target, nodes, params
        self.healed = False
        self.detail: dict = {}       # what apply found/did (e.g. the controller id deleted), for logs
        self.on_restore = None       # set by the nemesis: records ``fault.heal`` (once)

    def restoring(self) -> None:
        """The fault's effect is undone now (called as soon as the Docker start / unpause returned)."""
        if self.on_restore is not None:
            self.on_restore(self)

    @property
    def broker_ids(self) -> list[int]:
        """Node ids of the brokers it acts on (every node id a one-process broker's container serves)."""
        return self._ids(("broker",))

    @property
    def kafka_node_ids(self) -> list[int]:
        """Node ids of the Kafka nodes it acts on: brokers and dedicated KRaft controllers (not
        ZooKeeper servers, whose ids are another numbering)."""
        return self._ids(("broker", "controller"))

    def _ids(self, roles: tuple[str, ...]) -> list[int]:
        sharing = getattr(getattr(self.ctx, "cluster", None), "sharing", None)
        out: list[int] = []
        for n in self.nodes:
            if n.role in roles:
                for b in ((sharing(n) if sharing and n.role == "broker" else None) or [n.node_id]):
                    if b not in out:
                        out.append(b)
        return out

    def apply(self) -> None:
        raise NotImplementedError

    def heal(self) -> None:
        """Undo the fault; safe to call any number of times."""

    def __repr__(self) -> str:
        return f"<{self.name}#{self.fault_id} {self.target} -> {[n.alias for n in self.nodes]}>"
