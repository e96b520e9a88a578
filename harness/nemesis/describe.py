"""The commands a fault would issue on each node, computed without a cluster (``run --plan``).

Nothing here connects to anything: the nodes are the plan's (:class:`PlanNode`: the containers a run
would create, or the hosts of a nodes file), each with an ``access`` whose ``describe(op, **kw)``
renders the commands an operation issues on that kind of node (``docker kill --signal SIGKILL
kc-r<run>-b1`` for a container; an SSH adapter renders its own). The network faults' iptables rules
are the real fault classes' (harness/nemesis/net_faults.py, rules from harness/nemesis/netrules.py),
computed for the plan's nodes with symbolic addresses (``BROKER1_IP``, ``GATEWAY_IP``: the cluster
network's addresses are known once it exists).

A target that names a role (``leader(chaos,0)``, ``controller``, ``random-broker``) is resolved when
the fault is applied; the plan resolves it with the real resolver (:func:`harness.nemesis.targets.resolve`)
against an *example* state of the cluster (:class:`ExampleCluster`: broker 1 is the controller and the
quorum leader, partition P of a topic is led by the (P mod N)+1-th broker, every replica in the ISR) and
marks those commands ``example``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from types import SimpleNamespace

from harness.cluster.access import ContainerAccess
from harness.distributions import CONTROLLER_PORT, INTERNAL_PORT
from harness.nemesis import netrules
from harness.nemesis.catalog import fault_info
from harness.nemesis.faults import FAULT_CLASSES
from harness.nemesis.net_faults import _IptablesFault, _QdiscFault
from harness.nemesis.targets import TargetError, TargetUnresolved, parse_target, resolve_one

# a target whose items are all of these kinds names the same nodes whatever the cluster's state
FIXED_KINDS = ("broker", "zk", "service", "all-brokers", "all-zk")


# the container access's own describe(): the commands a fault issues on a container that does not exist yet
ACCESS = ContainerAccess


@dataclass
class PlanNode:
    """A node of the plan: what a run would create (a container) or reach (a host of a nodes file)."""
    role: str                   # broker | zookeeper | controller | service
    node_id: int
    name: str                   # container name (or the host's name in a nodes file)
    alias: str                  # broker1, zk1, controller101, ...
    port: str                   # where clients reach it: "127.0.0.1:<free port>" or the nodes file's endpoint
    client_port: int            # the port inside the node that port leads to
    access: object              # .where(), .describe(op, **kw)
    ip: str = ""                # the address other nodes reach it at (symbolic for containers)
    runs_controller: bool = False
    service: str | None = None

    def __post_init__(self):
        self.ip = self.ip or f"{self.alias.upper()}_IP"     # symbolic: the address is known at start

    def to_dict(self) -> dict:
        return {"role": self.role, "id": self.node_id, "name": self.name, "alias": self.alias,
                "where": self.access.where(), "port": self.port,
                **({"service": self.service} if self.service else {}),
                **({"runs_controller": True} if self.runs_controller and self.role != "controller" else {})}


# -- the example state a role target is resolved against ---------------------------------------------
@dataclass
class ExampleCluster:
    """Just enough of a cluster and its view for :func:`harness.nemesis.targets.resolve_one` (and the
    faults' ``peers``/``groups``/``halves``): an example state, never a real one."""
    nodes_: list[PlanNode]
    voters: list[int]
    replication: dict[str, int] = field(default_factory=dict)   # topic -> replication factor
    name: str = "<plan>"

    # the cluster
    @property
    def brokers(self) -> dict[int, PlanNode]:
        return {n.node_id: n for n in self.nodes_ if n.role == "broker"}

    @property
    def broker_ids(self) -> list[int]:
        return sorted(self.brokers)

    @property
    def zookeepers(self) -> list[PlanNode]:
        return [n for n in self.nodes_ if n.role == "zookeeper"]

    @property
    def controllers(self) -> list[PlanNode]:
        return [n for n in self.nodes_ if n.role == "controller"]

    def nodes(self) -> list[PlanNode]:
        return list(self.nodes_)

    @property
    def distribution(self):
        roles = ("broker",) + tuple(r for r in ("zookeeper", "controller") if self._has(r))
        return SimpleNamespace(name="plan", roles=roles)

    def _has(self, role: str) -> bool:
        return (role == "zookeeper" and bool(self.zookeepers)) or (role == "controller" and bool(self.voters))

    def quorum(self):
        return SimpleNamespace(error=None, leader_id=self.voters[0] if self.voters else -1,
                               voters=[SimpleNamespace(replica_id=v) for v in self.voters])

    def coordinator(self, key, key_type, last=()):
        b = self.broker_ids[0]
        return None, SimpleNamespace(error=None, node_id=b, version=None)

    # the view
    def controller_id(self) -> int | None:
        return self.voters[0] if self.voters else (self.broker_ids[0] if self.broker_ids else None)

    def replicas(self, topic: str, partition: int) -> list[int]:
        ids = self.broker_ids
        if not ids:
            return []
        k = partition % len(ids)
        return (ids[k:] + ids[:k])[:max(1, min(len(ids), self.replication.get(topic, 3)))]

    def partition_state(self, topic: str, partition: int) -> dict:
        reps = self.replicas(topic, partition)
        return {"leader": reps[0] if reps else -1, "isr": reps}


def example_nodes(target: str, example: ExampleCluster, rng: random.Random) -> tuple[list[PlanNode], bool]:
    """(the nodes ``target`` names in the example state, whether that holds in any state); TargetError
    for a malformed target, TargetUnresolved when it names nothing in this cluster."""
    items = parse_target(target)
    nodes: list[PlanNode] = []
    for t in items:
        if t.kind == "zookeeper-leader":     # the real resolver asks the servers (`srvr`): the first one here
            found = example.zookeepers[:1]
            if not found:
                raise TargetUnresolved("zookeeper-leader: the cluster runs no ZooKeeper")
        else:
            found = resolve_one(t, example, example, rng)
        nodes += [n for n in found if n not in nodes]
    return nodes, all(t.kind in FIXED_KINDS for t in items)


# -- per fault: the commands on each node --------------------------------------------------------------
class _PlanContext:
    """What a fault class needs to compute its rules (harness/nemesis/fault_base.Context), for plan nodes."""

    def __init__(self, example: ExampleCluster, rng: random.Random):
        self.cluster = self.view = example
        self.rng = rng

    def everyone(self) -> list[PlanNode]:
        return self.cluster.nodes()

    def net_node(self, n: PlanNode) -> netrules.NetNode:
        return netrules.NetNode(n.name, n.alias, n.role, n.ip, n.client_port, "GATEWAY_IP",
                                CONTROLLER_PORT if n.runs_controller else None,
                                INTERNAL_PORT if n.role == "broker" else None)


def _on(node: PlanNode, op: str, **kw) -> dict:
    return {"node": node.alias, "where": node.access.where(), "commands": node.access.describe(op, **kw)}


def fault_commands(kind: str, target: str, params: dict, example: ExampleCluster, seed: int = 0) -> dict:
    """What fault ``kind`` on ``target`` would do: ``{"nodes", "example", "apply": [{"node", "where",
    "commands"}], "heal": [...], "note"}``; ``note`` alone when it issues no node command (a ZooKeeper
    write, a client crash) or its target names nothing here."""
    rng = random.Random(seed)
    info = fault_info(kind)
    if info.kind == "client":
        return {"nodes": [], "example": False, "apply": [], "heal": [],
                "note": f"ends the workload client {target} in the harness process (no node command)"}
    try:
        nodes, fixed = example_nodes(target, example, rng)
    except (TargetError, TargetUnresolved) as e:
        return {"nodes": [], "example": False, "apply": [], "heal": [], "note": f"no node command shown: {e}"}
    out = {"nodes": [n.alias for n in nodes], "example": not fixed, "apply": [], "heal": [], "note": ""}
    if kind == "delete_controller_znode":
        out["note"] = "a ZooKeeper client of the harness deletes /controller (no node command)"
        return out
    fault = FAULT_CLASSES[kind](_PlanContext(example, rng), 1, target, nodes, dict(params))
    heal_on = params.get("heal", "start") != "none"
    if kind in ("kill", "zk_kill"):
        out["apply"] = [_on(n, "kill", signal="SIGKILL") for n in nodes]
        out["heal"] = [_on(n, "start") for n in nodes] if heal_on else []
    elif kind == "stop":
        out["apply"] = [_on(n, "stop", timeout=int(params.get("stop_timeout_s", 30))) for n in nodes]
        out["heal"] = [_on(n, "start") for n in nodes] if heal_on else []
    elif kind == "restart":
        stop_s = int(params.get("stop_timeout_s", 30))
        out["apply"] = [{**_on(n, "start"), "commands": n.access.describe("stop", timeout=stop_s)
                         + n.access.describe("start")} for n in nodes]
    elif kind == "start":
        out["apply"] = [_on(n, "start") for n in nodes]
    elif kind in ("pause", "zk_pause"):
        out["apply"] = [_on(n, "pause") for n in nodes]
        out["heal"] = [_on(n, "unpause") for n in nodes]
    elif kind == "zk_expire_session":
        rules = fault.cut.rules()
        by = {n.name: n for n in example.nodes()}
        out["apply"] = [_on(by[name], "iptables", script=netrules.apply_script(r)) for name, r in rules.items()]
        out["heal"] = [_on(by[name], "iptables", script=netrules.remove_script(r)) for name, r in rules.items()]
        out["note"] = ("the broker-ZooKeeper link is cut until the broker's registration is gone (session "
                       "timeout + grace), then restored within the same step")
    elif isinstance(fault, _IptablesFault):
        rules = fault.rules()
        by = {n.name: n for n in example.nodes()}
        out["apply"] = [_on(by[name], "iptables", script=netrules.apply_script(r)) for name, r in rules.items()]
        out["heal"] = [_on(by[name], "iptables", script=netrules.remove_script(r)) for name, r in rules.items()]
    elif isinstance(fault, _QdiscFault):
        out["apply"] = [_on(n, "netem", script=fault.command()) for n in nodes]
        out["heal"] = [_on(n, "netem", script=f"if tc qdisc show dev eth0 | grep -q ' {fault.kind} '; "
                                               "then tc qdisc del dev eth0 root; fi") for n in nodes]
    if kind in ("kill", "stop", "restart", "start") and any(n.role == "broker" for n in nodes) and heal_on:
        out["note"] = out["note"] or "a broker's start is waited for until it registered again (bounded)"
    return out
