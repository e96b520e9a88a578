"""iptables rules for network faults, computed as pure data and run inside the containers.

Every rule lives in two dedicated chains of the *container's* network namespace (never the host's):
``KAFKA_CHAOS_IN`` (jumped to from ``INPUT``) and ``KAFKA_CHAOS_OUT`` (from ``OUTPUT``). A fault
removes exactly the rules it added (``iptables -D`` with the same spec, so two faults that add the
same rule do not heal each other); :func:`flush_script` empties both chains for ``heal_all``.

Link classes (see :mod:`harness.nemesis.catalog`):

- ``broker-broker``, ``broker-zk``, ``zk-zk``: all IP traffic between the two nodes' addresses on
  the cluster network (inter-broker replication uses the INTERNAL listener, port 9093; brokers reach
  ZooKeeper on 2181; ZooKeeper servers talk on 2888/3888). A dedicated KRaft controller counts as a
  broker here: every link between Kafka nodes (brokers and controllers, CONTROLLER listener 9094) is
  ``broker-broker``, as it is between combined nodes;
- ``controller``: only the TCP connections to a KRaft CONTROLLER listener (port 9094) between two
  nodes, either way (Raft fetches and votes, broker heartbeats and registrations, forwarded admin
  requests); replication (9093) and host clients stay up. It cuts something only where one of the
  two nodes runs a controller (``NetNode.controller_port``). Ephemeral ports never reach 9094.
- ``replication``: only the TCP connections to an inter-broker (INTERNAL) listener (port 9093) between
  two Kafka nodes, either way: replication fetches, and in ZooKeeper mode every broker-to-broker
  request (the controller's LeaderAndIsr / UpdateMetadata, AlterPartition to the controller broker),
  so there it cuts what ``broker-broker`` cuts. A KRaft node keeps its CONTROLLER connections (9094:
  Raft, heartbeats, AlterPartition, metadata fetches): "cut from the brokers, control plane intact"
  in both modes. It cuts something only between two nodes that run a broker (``NetNode.internal_port``).
- ``service``: any link with a distribution file's store service (role ``service``) at one end. Such
  a node takes no rules itself (its image may have no iptables): the nodes on the other end drop the
  traffic (:func:`_cut`; a partition is symmetric anyway), so two store services are never cut apart.
- ``client``: host clients. They reach a container through docker-proxy, i.e. from the network
  gateway, on the node's client port (a broker's EXTERNAL listener port, which only host clients
  use; ZooKeeper's 2181 or a dedicated controller's 9094, where the rule also matches the gateway
  address so brokers keep their sessions and their quorum). Inter-broker replication is untouched
  by a ``client`` cut.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

CHAIN_IN = "KAFKA_CHAOS_IN"
CHAIN_OUT = "KAFKA_CHAOS_OUT"
CHAINS = ((CHAIN_IN, "INPUT"), (CHAIN_OUT, "OUTPUT"))

Rule = tuple[str, tuple[str, ...]]   # (chain, iptables match + target arguments)


@dataclass(frozen=True)
class NetNode:
    """A container as seen by the rule generator."""
    name: str               # container name (unique)
    alias: str              # broker<id> / zk<n>
    role: str               # broker | zookeeper | controller (a dedicated KRaft controller)
    ip: str                 # address on the cluster network
    client_port: int        # port host clients connect to inside the container
    gateway: str | None = None   # the network gateway: source of host-client traffic
    controller_port: int | None = None   # the KRaft CONTROLLER listener's port when the node runs one
    internal_port: int | None = None     # the inter-broker (INTERNAL) listener's port when the node runs a broker


def link_kind(a: NetNode, b: NetNode) -> str:
    roles = {a.role, b.role}
    if "service" in roles:                  # a distribution file's store service at one end
        return "service"
    if roles <= {"broker", "controller"}:   # between Kafka nodes, dedicated KRaft controllers included
        return "broker-broker"
    if roles == {"zookeeper"}:
        return "zk-zk"
    return "broker-zk"


def _drop(chain: str, match: list[str], tag: str) -> Rule:
    return chain, tuple(match + ["-m", "comment", "--comment", tag, "-j", "DROP"])


def peer_rules(local: NetNode, peers: list[NetNode], links, direction: str, tag: str) -> list[Rule]:
    """Rules in ``local`` dropping traffic with each peer whose link class is selected.

    ``direction``: ``in`` drops what the peers send to ``local``, ``out`` what ``local`` sends to
    them, ``both`` everything.
    """
    rules: list[Rule] = []
    for p in peers:
        if p.name == local.name:
            continue
        if link_kind(local, p) not in links:
            if "controller" in links:
                rules.extend(controller_rules(local, p, direction, tag))
            if "replication" in links:
                rules.extend(replication_rules(local, p, direction, tag))
            continue
        if direction in ("in", "both"):
            rules.append(_drop(CHAIN_IN, ["-s", f"{p.ip}/32"], tag))
        if direction in ("out", "both"):
            rules.append(_drop(CHAIN_OUT, ["-d", f"{p.ip}/32"], tag))
    return rules


def controller_rules(local: NetNode, peer: NetNode, direction: str, tag: str) -> list[Rule]:
    """Rules in ``local`` dropping the TCP segments it exchanges with ``peer`` on a CONTROLLER
    listener: ``local``'s own (peer connected to it) and the peer's (local connected to it)."""
    return _listener_rules(local, peer, local.controller_port, peer.controller_port, direction, tag)


def replication_rules(local: NetNode, peer: NetNode, direction: str, tag: str) -> list[Rule]:
    """Rules in ``local`` dropping the TCP segments it exchanges with ``peer`` on an inter-broker
    (INTERNAL) listener, both nodes running a broker: replication either way."""
    if not (local.internal_port and peer.internal_port):
        return []
    return _listener_rules(local, peer, local.internal_port, peer.internal_port, direction, tag)


def _listener_rules(local: NetNode, peer: NetNode, local_port: int | None, peer_port: int | None,
                    direction: str, tag: str) -> list[Rule]:
    rules: list[Rule] = []
    for port, mine in ((local_port, True), (peer_port, False)):
        if not port:
            continue
        if direction in ("in", "both"):     # what the peer sends: to my listener, or from its listener
            rules.append(_drop(CHAIN_IN, ["-s", f"{peer.ip}/32", "-p", "tcp",
                                          "--dport" if mine else "--sport", str(port)], tag))
        if direction in ("out", "both"):    # what I send: from my listener, or to its listener
            rules.append(_drop(CHAIN_OUT, ["-d", f"{peer.ip}/32", "-p", "tcp",
                                           "--sport" if mine else "--dport", str(port)], tag))
    return rules


def client_rules(local: NetNode, direction: str, tag: str) -> list[Rule]:
    """Rules in ``local`` dropping host-client traffic on its client port."""
    # ZooKeeper's and a controller's client port serve the brokers too: match the gateway only
    src = ["-s", f"{local.gateway}/32"] if local.role != "broker" and local.gateway else []
    dst = ["-d", f"{local.gateway}/32"] if local.role != "broker" and local.gateway else []
    rules: list[Rule] = []
    if direction in ("in", "both"):
        rules.append(_drop(CHAIN_IN, src + ["-p", "tcp", "--dport", str(local.client_port)], tag))
    if direction in ("out", "both"):
        rules.append(_drop(CHAIN_OUT, dst + ["-p", "tcp", "--sport", str(local.client_port)], tag))
    return rules


def _add(out: dict[str, list[Rule]], node: NetNode, rules: list[Rule]) -> None:
    if rules:
        out.setdefault(node.name, []).extend(rules)


_REVERSED = {"in": "out", "out": "in", "both": "both"}


def _cut(out: dict[str, list[Rule]], local: NetNode, peers: list[NetNode], links, direction: str, tag: str) -> None:
    """``local``'s links to ``peers`` cut in ``direction``. A store service (role ``service``: an image
    the harness knows nothing of, maybe without iptables) takes no rules: each peer drops the traffic
    instead, the direction mirrored (two services cannot be cut from each other)."""
    if local.role != "service":
        _add(out, local, peer_rules(local, peers, links, direction, tag))
        return
    for p in peers:
        if p.name != local.name and p.role != "service":
            _add(out, p, peer_rules(p, [local], links, _REVERSED[direction], tag))


def isolate_rules(targets: list[NetNode], everyone: list[NetNode], links, tag: str) -> dict[str, list[Rule]]:
    """Each target cut (both directions, selected links) from every other node; rules only in targets.

    With ``client`` among the links the targets are also cut from host clients.
    """
    out: dict[str, list[Rule]] = {}
    for t in targets:
        _cut(out, t, everyone, links, "both", tag)
        if "client" in links and t.role != "service":
            _add(out, t, client_rules(t, "both", tag))
    return out


def partition_rules(groups: list[list[NetNode]], links, tag: str) -> dict[str, list[Rule]]:
    """Every node drops traffic with every node of the other groups (symmetric, rules on both sides)."""
    names = [n.name for g in groups for n in g]
    if len(names) != len(set(names)):
        raise ValueError("partition groups overlap")
    out: dict[str, list[Rule]] = {}
    for i, g in enumerate(groups):
        others = [n for j, h in enumerate(groups) if j != i for n in h]
        for n in g:
            if n.role != "service":   # symmetric: the other side's rules cut a store service's links
                _add(out, n, peer_rules(n, others, links, "both", tag))
    return out


def one_way_rules(targets: list[NetNode], peers: list[NetNode], direction: str, links,
                  tag: str) -> dict[str, list[Rule]]:
    """Asymmetric loss in the targets: ``out`` they cannot send to the peers, ``in`` they cannot receive."""
    out: dict[str, list[Rule]] = {}
    for t in targets:
        _cut(out, t, peers, links, direction, tag)
        if "client" in links and t.role != "service":
            _add(out, t, client_rules(t, direction, tag))
    return out


def bridge_rules(half_a: list[NetNode], half_b: list[NetNode], links, tag: str) -> dict[str, list[Rule]]:
    """The two halves cannot talk to each other; the bridge node(s), in neither half, reach both."""
    return partition_rules([half_a, half_b], links, tag)


def loss_rules(local: NetNode, pct: float, direction: str, tag: str) -> dict[str, list[Rule]]:
    """Random loss of ``pct`` % of eth0 packets (iptables ``statistic``), loopback untouched."""
    p = f"{max(0.0, min(100.0, float(pct))) / 100.0:.6f}"
    stat = ["-m", "statistic", "--mode", "random", "--probability", p]
    rules: list[Rule] = []
    if direction in ("in", "both"):
        rules.append(_drop(CHAIN_IN, ["-i", "eth0"] + stat, tag))
    if direction in ("out", "both"):
        rules.append(_drop(CHAIN_OUT, ["-o", "eth0"] + stat, tag))
    return {local.name: rules}


# -- shell scripts run with `docker exec <container> sh -c <script>` ----------------------------------
def _ensure_chains() -> list[str]:
    lines = []
    for chain, hook in CHAINS:
        lines.append(f"iptables -w 5 -N {chain} 2>/dev/null || true")
        lines.append(f"iptables -w 5 -C {hook} -j {chain} 2>/dev/null || iptables -w 5 -I {hook} 1 -j {chain}")
    return lines


def apply_script(rules: list[Rule]) -> str:
    """Create the chains and hooks if needed, then append the rules; fails on the first bad rule."""
    lines = ["set -e"] + _ensure_chains()
    lines += [f"iptables -w 5 -A {chain} " + " ".join(shlex.quote(a) for a in args) for chain, args in rules]
    return "\n".join(lines)


def remove_script(rules: list[Rule]) -> str:
    """Delete exactly these rules (one instance each); a rule already gone is not an error."""
    lines = [f"iptables -w 5 -D {chain} " + " ".join(shlex.quote(a) for a in args) + " 2>/dev/null || true"
             for chain, args in rules]
    return "\n".join(lines + ["true"])


def flush_script() -> str:
    """Empty both chains (the hooks stay; an empty chain is a no-op)."""
    return "\n".join(f"iptables -w 5 -F {chain} 2>/dev/null || true" for chain, _ in CHAINS) + "\ntrue"


def list_script() -> str:
    """Print the rules of both chains (``-A ...`` lines), nothing if the chains do not exist."""
    return "\n".join(f"iptables -w 5 -S {chain} 2>/dev/null || true" for chain, _ in CHAINS)


def parse_listing(out: str) -> list[str]:
    """The rule lines (``-A KAFKA_CHAOS_* ...``) of a :func:`list_script` output."""
    return [ln.strip() for ln in out.splitlines() if ln.strip().startswith("-A ")]
