"""Fault targets: a small grammar of roles, parsed without a cluster and resolved at fault time.

Grammar (docs/faults.md "Targets")::

    target   := item ("," item)*          commas inside parentheses belong to the item
    item     := controller | random-broker | random-zk | random-minority | zookeeper-leader
              | all-brokers | all-zk | broker:<id> | zk:<myid>
              | service:<name> | service:<name>:<id>
              | quorum-leader | quorum-follower | quorum-followers | quorum-majority | quorum-voters
              | quorum-observers
              | leader(<topic>,<partition>) | follower(<topic>,<partition>)
              | txn-coordinator(<transactional.id>) | group-coordinator(<group.id>)

Parsing (:func:`parse_target`) is pure and used to validate schedules; resolution
(:func:`resolve`) asks the view (current controller, partition state) and, for ``random-*`` and
``follower``, draws from the nemesis's seeded RNG so a replay with the same seed picks the same nodes
when the cluster is in the same state.

The ``quorum-*`` items name the KRaft metadata quorum as DescribeQuorum reports it now
(``cluster.quorum()``: its leader and voters), whatever the layout (combined broker+controller nodes
or dedicated controllers). On a cluster whose distribution runs no controller role (ZooKeeper mode)
they are a :class:`TargetError`: they can never name anything there.

``service:<name>`` names every node of a distribution file's ``[[service]]`` of that name (its object
store, its database, its ZooKeeper), ``service:<name>:<id>`` one of them (harness/distributions/services.py).

``txn-coordinator(<id>)`` and ``group-coordinator(<group>)`` name the broker that coordinates that
transactional id / consumer group now, as FindCoordinator answers (``cluster.coordinator``: the leader
of the id's ``__transaction_state`` / ``__consumer_offsets`` partition). :func:`resolve` appends what
each such item resolved to (the node id, the broker that answered, the request version) to its
``notes`` list; the nemesis records it in the fault's ``fault.start`` (``resolved``).
"""

from __future__ import annotations

import inspect
import random
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness.nemesis.catalog import FaultSpecError

if TYPE_CHECKING:  # pragma: no cover
    from harness.cluster.cluster import Cluster
    from harness.nemesis.view import View
    from harness.cluster.node import Node

SIMPLE = ("controller", "random-broker", "random-zk", "random-minority", "zookeeper-leader",
          "all-brokers", "all-zk", "quorum-leader", "quorum-follower", "quorum-followers", "quorum-majority",
          "quorum-voters", "quorum-observers")
QUORUM = tuple(k for k in SIMPLE if k.startswith("quorum-"))
_ID = re.compile(r"^(broker|zk):(\d+)$")
_PART = re.compile(r"^(leader|follower)\(\s*([A-Za-z0-9._-]+)\s*,\s*(\d+)\s*\)$")
_SERVICE = re.compile(r"^service:([a-z]([a-z-]*[a-z])?)(?::(\d+))?$")
_COORD = re.compile(r"^(txn-coordinator|group-coordinator)\(\s*([A-Za-z0-9._:-]+)\s*\)$")
COORDINATORS = {"txn-coordinator": "transaction", "group-coordinator": "group"}  # kind -> FindCoordinator key type


class TargetError(FaultSpecError):
    """A target string is malformed."""


class TargetUnresolved(Exception):
    """A well-formed target names nothing right now (no controller, no follower, node missing)."""


@dataclass(frozen=True)
class Target:
    """One parsed target item; ``str(t)`` gives its canonical spelling."""
    kind: str                  # one of SIMPLE, "broker", "zk", "service", "leader", "follower", or a COORDINATORS kind
    node_id: int | None = None
    topic: str | None = None
    partition: int | None = None
    key: str | None = None     # the transactional id / group id of a coordinator target; a service's name

    def __str__(self) -> str:
        if self.kind in ("broker", "zk"):
            return f"{self.kind}:{self.node_id}"
        if self.kind == "service":
            return f"service:{self.key}" + (f":{self.node_id}" if self.node_id is not None else "")
        if self.kind in ("leader", "follower"):
            return f"{self.kind}({self.topic},{self.partition})"
        if self.kind in COORDINATORS:
            return f"{self.kind}({self.key})"
        return self.kind


def _split_top(s: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise TargetError(f"target {s!r}: unbalanced ')'")
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth != 0:
        raise TargetError(f"target {s!r}: unbalanced '('")
    parts.append("".join(cur))
    return [p.strip() for p in parts]


def parse_target(spec: str) -> list[Target]:
    """Parse a target string into its items; raises TargetError with the offending item."""
    if not isinstance(spec, str) or not spec.strip():
        raise TargetError(f"target must be a non-empty string, got {spec!r}")
    out: list[Target] = []
    for item in _split_top(spec.strip()):
        low = item.lower()
        if not item:
            raise TargetError(f"target {spec!r}: empty item")
        if low in SIMPLE:
            t = Target(low)
        elif m := _ID.match(low):
            t = Target(m.group(1), node_id=int(m.group(2)))
        elif m := _SERVICE.match(low):
            t = Target("service", key=m.group(1), node_id=int(m.group(3)) if m.group(3) else None)
        elif m := _PART.match(item):
            t = Target(m.group(1), topic=m.group(2), partition=int(m.group(3)))
        elif m := _COORD.match(item):
            t = Target(m.group(1).lower(), key=m.group(2))
        else:
            raise TargetError(
                f"target {spec!r}: cannot parse {item!r}; expected one of {', '.join(SIMPLE)}, "
                "broker:<id>, zk:<id>, service:<name>[:<id>], leader(<topic>,<partition>), follower(<topic>,<partition>), "
                "txn-coordinator(<transactional.id>), group-coordinator(<group.id>)")
        if t not in out:
            out.append(t)
    return out


def needs_role(target: str) -> str | None:
    """The node role a target can only name on clusters that run it ("zookeeper" for ``random-zk``,
    ``zookeeper-leader``, ``all-zk``, ``zk:<id>``; "controller" for the ``quorum-*`` items; None when any
    Kafka cluster has what it names). Every item of a comma list is asked; a malformed target raises."""
    for t in parse_target(target):
        if t.kind in ("random-zk", "zookeeper-leader", "all-zk", "zk"):
            return "zookeeper"
        if t.kind in QUORUM:
            return "controller"
    return None


def format_target(items: list[Target]) -> str:
    return ",".join(str(t) for t in items)


# -- resolution -----------------------------------------------------------------------------------
ZK_MODE_WAIT_S = 10.0   # how long zookeeper-leader asks the servers' `srvr` for a leader


def zookeeper_mode(node: "Node") -> str | None:
    """``leader`` / ``follower`` / ``standalone`` from the ``srvr`` four-letter word (None if silent)."""
    try:
        code, out = node.exec(["sh", "-c", f"echo srvr | nc -w 2 127.0.0.1 {getattr(node, 'client_port', 2181)}"])
    except Exception:  # noqa: BLE001 - paused or stopped container
        return None
    m = re.search(r"^Mode:\s*(\w+)", out, re.M)
    return m.group(1) if code == 0 and m else None


def _call(fn, *args):
    """Call a view method asking for a fresh read when it supports it (ZkWatcher does)."""
    try:
        takes_fresh = "fresh" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        takes_fresh = False
    return fn(*args, fresh=True) if takes_fresh else fn(*args)


def _broker(cluster: "Cluster", bid, what: str) -> "Node":
    if bid is None or bid not in cluster.brokers:
        raise TargetUnresolved(f"{what}: broker {bid!r} is not part of cluster {cluster.name}")
    return cluster.brokers[bid]


def _node(cluster: "Cluster", node_id: int, what: str) -> "Node":
    """The Kafka node (broker or controller) with ``node_id``."""
    for n in cluster.nodes():
        if n.node_id == node_id and n.role != "zookeeper":
            return n
    raise TargetUnresolved(f"{what}: node {node_id} is not part of cluster {cluster.name}")


def quorum_state(cluster: "Cluster", what: str) -> tuple[int | None, list[int]]:
    """(leader id or None, voter ids) of the KRaft metadata quorum now (DescribeQuorum).

    TargetError on a cluster without a controller quorum; TargetUnresolved when no broker answers."""
    dist = cluster.distribution
    if "controller" not in dist.roles:
        raise TargetError(f"{what}: cluster {cluster.name} runs {dist.name} (roles: "
                          f"{', '.join(dist.roles) or '?'}): it has no KRaft controller quorum")
    try:
        q = cluster.quorum()
    except Exception as e:  # noqa: BLE001 - ProtocolError: no broker answered (nodes down mid-fault)
        raise TargetUnresolved(f"{what}: DescribeQuorum not answered ({e})") from None
    if q.error is not None:
        raise TargetUnresolved(f"{what}: DescribeQuorum answered {q.error}")
    voters = sorted(v.replica_id for v in q.voters)
    return (q.leader_id if q.leader_id >= 0 else None), voters


def _resolve_quorum(t: Target, cluster: "Cluster", rng: "random.Random") -> list["Node"]:
    leader, voters = quorum_state(cluster, str(t))
    if t.kind == "quorum-voters":
        return [_node(cluster, v, str(t)) for v in voters]
    if t.kind == "quorum-observers":
        ids = [b for b in cluster.broker_ids if b not in voters]
        if not ids:
            raise TargetUnresolved(f"{t}: every broker of cluster {cluster.name} is a voter {voters}")
        return [cluster.brokers[b] for b in ids]
    if leader is None:
        raise TargetUnresolved(f"{t}: the quorum has no leader (voters {voters})")
    if t.kind == "quorum-leader":
        return [_node(cluster, leader, str(t))]
    followers = [v for v in voters if v != leader]
    if t.kind == "quorum-majority":
        # the smallest majority, followers first: for 3 voters both followers, so the leader is left
        # without a quorum (it can append, but commit nothing), and starting them again restores it
        k = len(voters) // 2 + 1
        chosen = sorted(rng.sample(followers, min(k, len(followers))))
        if len(chosen) < k:
            chosen.append(leader)
        return [_node(cluster, v, str(t)) for v in chosen]
    if not followers:
        raise TargetUnresolved(f"{t}: the quorum has no follower (voters {voters}, leader {leader})")
    if t.kind == "quorum-followers":
        return [_node(cluster, v, str(t)) for v in followers]
    return [_node(cluster, rng.choice(followers), str(t))]


def coordinator_of(cluster: "Cluster", kind: str, key: str, what: str) -> dict:
    """Where the coordinator of ``key`` is now (FindCoordinator, ``kind`` a COORDINATORS kind):
    ``{"target", "key_type", "key", "node_id", "answered_by", "version"}``; TargetUnresolved when no
    broker answers or the answer is an error (the state partition has no leader now)."""
    key_type = COORDINATORS[kind]
    try:
        ep, info = cluster.coordinator(key, key_type)
    except Exception as e:  # noqa: BLE001 - ProtocolError: no broker answered (nodes down mid-fault)
        raise TargetUnresolved(f"{what}: FindCoordinator not answered ({e})") from None
    by = next((b for b in cluster.broker_ids if getattr(cluster.brokers[b], "endpoint", None) == ep), None)
    if info.error is not None or info.node_id < 0:
        raise TargetUnresolved(f"{what}: FindCoordinator answered {info.error or 'no node'} (asked broker {by})")
    return {"target": what, "key_type": key_type, "key": key, "node_id": info.node_id, "answered_by": by,
            "version": info.version}


def resolve_one(t: Target, cluster: "Cluster", view: "View", rng: "random.Random",
                notes: list | None = None) -> list["Node"]:
    """Nodes one target item names right now (what a coordinator item resolved to is appended to
    ``notes``)."""
    if t.kind in COORDINATORS:
        found = coordinator_of(cluster, t.kind, t.key or "", str(t))
        if notes is not None:
            notes.append(found)
        return [_broker(cluster, found["node_id"], str(t))]
    if t.kind == "broker":
        return [_broker(cluster, t.node_id, str(t))]
    if t.kind == "zk":
        for z in cluster.zookeepers:
            if z.node_id == t.node_id:
                return [z]
        raise TargetUnresolved(f"{t}: no ZooKeeper node {t.node_id} in cluster {cluster.name}")
    if t.kind == "service":
        nodes = [n for n in cluster.nodes() if getattr(n, "service", None) == t.key
                 and (t.node_id is None or n.node_id == t.node_id)]
        if not nodes:
            raise TargetUnresolved(f"{t}: cluster {cluster.name} runs no such service node")
        return nodes
    if t.kind in QUORUM:
        return _resolve_quorum(t, cluster, rng)
    if t.kind == "all-brokers":
        return [cluster.brokers[b] for b in cluster.broker_ids]
    if t.kind == "all-zk":
        return list(cluster.zookeepers)
    if t.kind == "controller":
        cid = _call(view.controller_id)
        if cid is None:
            raise TargetUnresolved("controller: /controller is empty (no controller elected)")
        # a dedicated quorum (apache-kraft-dedicated): the active controller is a controller-only node
        dedicated = next((n for n in getattr(cluster, "controllers", []) if n.node_id == cid), None)
        return [dedicated or _broker(cluster, cid, "controller")]
    if t.kind == "random-broker":
        return [cluster.brokers[rng.choice(cluster.broker_ids)]]
    if t.kind == "random-zk":
        return [rng.choice(list(cluster.zookeepers))]
    if t.kind == "random-minority":
        ids = list(cluster.broker_ids)
        k = max(1, (len(ids) - 1) // 2)
        return [cluster.brokers[b] for b in sorted(rng.sample(ids, k))]
    if t.kind == "zookeeper-leader":
        # asked again, bounded: an ensemble mid-election has no leader for a moment, and a `srvr`
        # answer can miss its 2 s on a loaded host (seen once in a fresh-clone suite: {1: None})
        deadline = time.monotonic() + ZK_MODE_WAIT_S
        while True:
            modes = {z.node_id: zookeeper_mode(z) for z in cluster.zookeepers}
            for z in cluster.zookeepers:
                if modes[z.node_id] in ("leader", "standalone"):
                    return [z]
            if time.monotonic() >= deadline:
                raise TargetUnresolved(f"zookeeper-leader: no ZooKeeper node reports leader/standalone "
                                       f"within {ZK_MODE_WAIT_S:.0f} s ({modes})")
            time.sleep(0.5)
    if t.kind in ("leader", "follower"):
        st = _call(view.partition_state, t.topic, t.partition)
        if st is None:
            raise TargetUnresolved(f"{t}: partition has no state znode")
        leader = st.get("leader", -1)
        if t.kind == "leader":
            if leader is None or leader < 0:
                raise TargetUnresolved(f"{t}: partition has no leader (leader={leader})")
            return [_broker(cluster, leader, str(t))]
        followers = sorted(r for r in view.replicas(t.topic, t.partition) if r != leader)
        in_isr = [r for r in followers if r in st.get("isr", [])]
        pool = in_isr or followers
        if not pool:
            raise TargetUnresolved(f"{t}: partition has no follower (replicas without leader {leader})")
        return [_broker(cluster, rng.choice(pool), str(t))]
    raise TargetError(f"unsupported target kind {t.kind!r}")  # pragma: no cover - parse_target guards


def resolve(spec: str, cluster: "Cluster", view: "View", rng: "random.Random",
            notes: list | None = None) -> list["Node"]:
    """All nodes a target string names right now (in item order, without duplicates); ``notes``: see
    :func:`resolve_one`."""
    nodes: list = []
    for t in parse_target(spec):
        for n in resolve_one(t, cluster, view, rng, notes):
            if n not in nodes:
                nodes.append(n)
    return nodes
