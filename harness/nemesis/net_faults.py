"""Network faults: iptables rules installed inside the target containers (``isolate``, ``link_cut``,
``partition``, ``one_way``, ``bridge``, ``loss``) and tc qdiscs on their eth0 (``netem``,
``bandwidth``). Each heal removes exactly what its apply installed. The rules themselves are pure
data in harness/nemesis/netrules.py.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from harness.nemesis import netrules
from harness.nemesis.catalog import PEER_LINKS, FaultSpecError, normalize_links
from harness.nemesis.fault_base import Fault, FaultError, FaultUnsupported, run_script
from harness.nemesis.targets import resolve

if TYPE_CHECKING:  # pragma: no cover
    from harness.cluster.node import Node


# -- network faults (iptables) ----------------------------------------------------------------------
class _IptablesFault(Fault):
    """Installs per-container rules computed by :meth:`rules`, removes exactly those on heal."""

    default_links: tuple[str, ...] = PEER_LINKS
    # symmetric faults (rules on both sides of every cut pair) may skip nodes that are not running:
    # a paused or stopped node cannot take rules, and its peers' rules already cut the pair
    skip_unavailable = False

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.installed: dict[str, list[netrules.Rule]] = {}

    @property
    def tag(self) -> str:
        return f"kafka-chaos:{self.fault_id}:{self.name}"

    def links(self) -> tuple[str, ...]:
        links = normalize_links(self.params.get("links"), self.default_links)
        if self.params.get("clients") and "client" not in links:
            links = links + ("client",)
        return links

    def rules(self) -> dict[str, list[netrules.Rule]]:
        raise NotImplementedError

    def _net(self, nodes) -> list[netrules.NetNode]:
        return [self.ctx.net_node(n) for n in nodes]

    def apply(self) -> None:
        by_name = {n.name: n for n in self.ctx.everyone()}
        plan = self.rules()
        if self.skip_unavailable:
            down = [name for name in plan if by_name[name].status() != "running"]
            for name in down:
                plan.pop(name)
            if down:
                self.detail["skipped"] = down
        if not any(plan.values()):
            raise FaultSpecError(f"{self.name} on {self.target}: the selected links {list(self.links())} "
                                 "cut nothing between these nodes")
        for name, rules in plan.items():
            self.installed[name] = rules          # recorded first: a partial install is still undone
            run_script(by_name[name], netrules.apply_script(rules), f"{self.name}: iptables")
        self.detail["rules"] = sum(len(r) for r in plan.values())

    def heal(self) -> None:
        by_name = {n.name: n for n in self.ctx.everyone()}
        errors = []
        for name, rules in list(self.installed.items()):
            node = by_name.get(name)
            if node is None or node.status() in ("exited", "created", "dead", "missing"):
                self.installed.pop(name)         # not running: its network namespace is gone
                continue
            try:
                run_script(node, netrules.remove_script(rules), f"{self.name}: heal")
                self.installed.pop(name)
            except FaultError as e:
                errors.append(str(e))
        if errors:
            raise FaultError("; ".join(errors))


class Isolate(_IptablesFault):
    """Each target node cut from every other node (``clients: true`` also from host clients);
    ``peers`` (a target string) cuts it from those nodes only, e.g. ``link_cut quorum-leader`` with
    ``links: controller, peers: quorum-observers``: the active controller unreachable for the brokers
    that are not voters, its quorum links intact."""
    name = "isolate"

    def rules(self):
        peers = self.ctx.everyone()
        if self.params.get("peers"):
            peers = resolve(self.params["peers"], self.ctx.cluster, self.ctx.view, self.ctx.rng)
            self.detail["peers"] = [n.alias for n in peers]
        return netrules.isolate_rules(self._net(self.nodes), self._net(peers), self.links(), self.tag)


class LinkCut(Isolate):
    """Only the selected link classes of the targets (default: ``client``, host clients only)."""
    name = "link_cut"
    default_links = ("client",)


class Partition(_IptablesFault):
    """Groups that cannot reach each other: by default the targets vs. everyone else.

    ``groups``: a list of target strings, one per group; nodes in none of them form one more group.
    """
    name = "partition"
    skip_unavailable = True

    def groups(self) -> list[list["Node"]]:
        everyone = self.ctx.everyone()
        if self.params.get("groups"):
            groups: list[list] = []
            for spec in self.params["groups"]:
                if not isinstance(spec, str):
                    raise FaultSpecError(f"partition: each group must be a target string, got {spec!r}")
                groups.append(resolve(spec, self.ctx.cluster, self.ctx.view, self.ctx.rng))
        else:
            groups = [list(self.nodes)]
        seen = {n.name for g in groups for n in g}
        if sum(len(g) for g in groups) != len(seen):
            raise FaultSpecError(f"partition: groups overlap: {[[n.alias for n in g] for g in groups]}")
        rest = [n for n in everyone if n.name not in seen]
        if rest:
            groups.append(rest)
        if len([g for g in groups if g]) < 2:
            raise FaultSpecError("partition: needs at least two non-empty groups")
        self.detail["groups"] = [[n.alias for n in g] for g in groups]
        return groups

    def rules(self):
        return netrules.partition_rules([self._net(g) for g in self.groups()], self.links(), self.tag)


class OneWay(_IptablesFault):
    """Asymmetric: ``direction: out`` the targets' packets to the peers are dropped (they cannot
    speak), ``in`` the peers' packets to them are dropped (they cannot hear). ``peers``: a target
    string (default: every other node)."""
    name = "one_way"

    def rules(self):
        if self.params.get("peers"):
            peers = resolve(self.params["peers"], self.ctx.cluster, self.ctx.view, self.ctx.rng)
        else:
            peers = [n for n in self.ctx.everyone() if n not in self.nodes]
        direction = self.params.get("direction", "out")
        if direction not in ("in", "out"):
            raise FaultSpecError(f"one_way: direction must be 'in' or 'out', got {direction!r}")
        self.detail["peers"] = [n.alias for n in peers]
        return netrules.one_way_rules(self._net(self.nodes), self._net(peers), direction, self.links(), self.tag)


class Bridge(_IptablesFault):
    """Two halves that cannot talk to each other, both still connected to the target node(s).

    Default halves: the other nodes (brokers by id, then ZooKeeper) split in two, the first half
    one larger; ``halves: [targetA, targetB]`` chooses them.
    """
    name = "bridge"
    skip_unavailable = True

    def rules(self):
        if self.params.get("halves"):
            h = self.params["halves"]
            if len(h) != 2 or not all(isinstance(x, str) for x in h):
                raise FaultSpecError(f"bridge: halves must be two target strings, got {h!r}")
            a, b = (resolve(x, self.ctx.cluster, self.ctx.view, self.ctx.rng) for x in h)
        else:
            others = [n for n in self.ctx.everyone() if n not in self.nodes]
            others.sort(key=lambda n: (n.role != "broker", n.node_id))
            k = math.ceil(len(others) / 2)
            a, b = others[:k], others[k:]
        if not a or not b or {n.name for n in a} & {n.name for n in b}:
            raise FaultSpecError(f"bridge: needs two disjoint non-empty halves besides the bridge node, "
                                 f"got {[n.alias for n in a]} / {[n.alias for n in b]}")
        self.detail["halves"] = [[n.alias for n in a], [n.alias for n in b]]
        return netrules.bridge_rules(self._net(a), self._net(b), self.links(), self.tag)


class Loss(_IptablesFault):
    """Random packet loss on eth0 with iptables ``statistic`` (``loss_pct``, ``direction``)."""
    name = "loss"

    def rules(self):
        out: dict = {}
        for n in self.nodes:
            out.update(netrules.loss_rules(self.ctx.net_node(n), self.params.get("loss_pct", 10.0),
                                           self.params.get("direction", "both"), self.tag))
        return out


# -- degradation (tc) ---------------------------------------------------------------------------------
class _QdiscFault(Fault):
    """Replaces eth0's root qdisc; refuses to stack on another fault's qdisc; heal deletes it."""
    kind = "?"

    def command(self) -> str:
        raise NotImplementedError

    def apply(self) -> None:
        for n in self.nodes:
            current = run_script(n, "tc qdisc show dev eth0", "tc")
            if "netem" in current or "tbf" in current:
                raise FaultError(f"{n.name}: eth0 already has a fault qdisc ({current.strip()}); heal it first")
        self.applied: list = []
        for n in self.nodes:
            code, out = n.exec(["sh", "-c", self.command()])
            if code != 0:
                if "qdisc kind is unknown" in out:
                    raise FaultUnsupported(
                        f"{self.name}: this kernel has no '{self.kind}' qdisc (tc: {out.strip()}); "
                        + ("use the `loss` fault (iptables statistic) for packet loss" if self.kind == "netem"
                           else ""))
                raise FaultError(f"{self.name} on {n.name}: `{self.command()}` failed: {out.strip()[:300]}")
            self.applied.append(n)

    def heal(self) -> None:
        errors = []
        for n in list(getattr(self, "applied", [])):
            if n.status() != "running":
                if n.status() != "paused":
                    self.applied.remove(n)
                    continue
            try:
                run_script(n, f"if tc qdisc show dev eth0 | grep -q ' {self.kind} '; then tc qdisc del dev eth0 root; fi",
                           f"{self.name}: heal")
                self.applied.remove(n)
            except FaultError as e:
                errors.append(str(e))
        if errors:
            raise FaultError("; ".join(errors))


class Netem(_QdiscFault):
    """``tc qdisc replace dev eth0 root netem delay D jitter J loss L%`` (egress of the targets)."""
    name = "netem"
    kind = "netem"

    def command(self) -> str:
        p = self.params
        cmd = "tc qdisc replace dev eth0 root netem"
        if p.get("delay_ms") or p.get("jitter_ms"):
            cmd += f" delay {float(p.get('delay_ms', 0)):g}ms"
            if p.get("jitter_ms"):
                cmd += f" {float(p['jitter_ms']):g}ms distribution normal"
        if p.get("loss_pct"):
            cmd += f" loss {float(p['loss_pct']):g}%"
        if cmd.endswith("netem"):
            cmd += " delay 100ms"
        return cmd


class Bandwidth(_QdiscFault):
    """``tc qdisc replace dev eth0 root tbf rate R kbit`` (egress of the targets)."""
    name = "bandwidth"
    kind = "tbf"

    def command(self) -> str:
        rate = float(self.params.get("rate_kbit", 1000))
        lat = float(self.params.get("latency_ms", 500))
        return f"tc qdisc replace dev eth0 root tbf rate {rate:g}kbit burst 16kbit latency {lat:g}ms"
