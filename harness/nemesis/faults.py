"""The faults: one small class each, with ``apply()`` and an idempotent ``heal()``.

A fault gets its target nodes already resolved (by :class:`harness.nemesis.Nemesis`, which also
records ``fault.start``/``fault.end``). Everything acts on containers of the harness's own cluster
only: process faults through the Docker API, network faults with iptables/tc run by ``docker exec``
*inside* the target containers (their own network namespaces; the host's tables are never touched).
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kazoo.exceptions import NoNodeError

from harness import docker_util
from harness.errors import HarnessError
from harness.nemesis import netrules
from harness.nemesis.catalog import PEER_LINKS, FaultSpecError, normalize_links
from harness.nemesis.targets import TargetUnresolved, resolve, zookeeper_mode

if TYPE_CHECKING:  # pragma: no cover
    from harness.cluster import Cluster, Node
    from harness.nemesis.view import View

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
        """Gateway of the cluster network (the source address of host clients via docker-proxy)."""
        if self._gateway is None:
            net = docker_util.client().networks.get(self.cluster.network_name)
            cfg = (net.attrs.get("IPAM") or {}).get("Config") or [{}]
            self._gateway = cfg[0].get("Gateway")
        return self._gateway

    def net_node(self, node: "Node") -> netrules.NetNode:
        ip = node.ip()
        if not ip:
            raise FaultError(f"{node.name} has no address on {self.cluster.network_name} (is it running?)")
        port = node.host_port if node.role == "broker" else ZK_CLIENT_PORT
        return netrules.NetNode(node.name, node.alias, node.role, ip, port, self.gateway())

    def everyone(self) -> list["Node"]:
        return self.cluster.nodes()

    def session_timeout_s(self) -> float:
        return self.cluster.zk_session_timeout_s()


def run_script(node: "Node", script: str, what: str) -> str:
    """Run a shell script in the container; FaultError (with its output) when it fails."""
    try:
        code, out = node.exec(["sh", "-c", script])
    except Exception as e:  # noqa: BLE001 - docker API: paused, gone, ...
        raise FaultError(f"{what} on {node.name}: docker exec failed: {e}") from None
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
        return [n.node_id for n in self.nodes if n.role == "broker"]

    def apply(self) -> None:
        raise NotImplementedError

    def heal(self) -> None:
        """Undo the fault; safe to call any number of times."""

    def __repr__(self) -> str:
        return f"<{self.name}#{self.fault_id} {self.target} -> {[n.alias for n in self.nodes]}>"


# -- process faults -------------------------------------------------------------------------------
def wait_started(cluster: "Cluster", brokers=None, timeout_s: float = 60.0) -> None:
    """Wait (bounded) until the given brokers (default: all) finished their startup (Cluster.wait_ready)."""
    try:
        cluster.wait_ready(timeout_s, brokers=brokers)
    except HarnessError as e:
        raise FaultError(str(e)) from None


def start_node(ctx: Context, node: "Node", wait: bool = True, timeout_s: float = 60.0,
               started=None) -> None:
    """Bring a node back: unpause, or start it; with ``wait`` until it serves again (bounded).

    ``started()`` is called as soon as the unpause / start call returned, before the wait (not for a
    node already running): the moment Docker reports the container running again."""
    started = started or (lambda: None)
    st = node.status()
    if st == "paused":
        node.unpause()
        started()
        return
    if st == "running":
        return
    if st == "missing":
        raise FaultError(f"{node.name} no longer exists")
    if node.role == "broker":
        try:   # waits for a killed broker's old registration to expire first (Cluster.start_broker)
            ctx.cluster.start_broker(node.node_id, wait, timeout_s, started=started)
        except HarnessError as e:
            raise FaultError(str(e)) from None
        return
    node.start()
    started()
    if wait:
        deadline = time.monotonic() + timeout_s
        while zookeeper_mode(node) is None:
            if time.monotonic() > deadline:
                raise FaultError(f"{node.name}: ZooKeeper not serving {timeout_s:.0f} s after start")
            time.sleep(0.3)


class _Restartable(Fault):
    marks_restore = True

    def _bring_back(self) -> None:
        if self.params.get("heal", "start") == "none":
            return
        errors = []
        # ZooKeeper first: brokers need it to register
        for n in sorted(self.nodes, key=lambda n: n.role != "zookeeper"):
            try:
                start_node(self.ctx, n, self.params.get("wait", True), self.params.get("timeout_s", 60.0),
                           started=self.restoring)
            except FaultError as e:
                errors.append(str(e))
        if errors:
            raise FaultError("; ".join(errors))


class Kill(_Restartable):
    """SIGKILL; heal starts the node again (and waits until a broker registered anew)."""
    name = "kill"

    def apply(self) -> None:
        for n in self.nodes:
            n.kill()

    def heal(self) -> None:
        self._bring_back()


class Stop(_Restartable):
    """Clean stop: SIGTERM (controlled shutdown for a broker), SIGKILL after ``stop_timeout_s``."""
    name = "stop"

    def apply(self) -> None:
        for n in self.nodes:
            n.stop(timeout=int(self.params.get("stop_timeout_s", 30)))

    def heal(self) -> None:
        self._bring_back()


class Start(_Restartable):
    """Start stopped/killed nodes (a no-op for running ones); nothing to heal."""
    name = "start"

    def apply(self) -> None:
        self._bring_back()


class Restart(_Restartable):
    """Clean stop then start; nothing to heal."""
    name = "restart"

    def apply(self) -> None:
        for n in self.nodes:
            n.stop(timeout=int(self.params.get("stop_timeout_s", 30)))
        self._bring_back()


class Pause(Fault):
    """Freeze the container's cgroup (docker pause); heal unpauses."""
    name = "pause"
    marks_restore = True

    def apply(self) -> None:
        for n in self.nodes:
            for attempt in range(4):       # the cgroup freezer can fail transiently under load
                try:
                    n.pause()
                    break
                except Exception as e:  # noqa: BLE001 - docker APIError "unable to freeze"
                    if attempt == 3 or n.status() == "paused":
                        if n.status() == "paused":
                            break
                        raise FaultError(f"pause {n.name}: {e}") from None
                    time.sleep(0.5)

    def heal(self) -> None:
        for n in self.nodes:
            if n.status() == "paused":
                n.unpause()
                self.restoring()


class ZkKill(Kill):
    name = "zk_kill"


class ZkPause(Pause):
    name = "zk_pause"


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
    """Each target node cut from every other node (``clients: true`` also from host clients)."""
    name = "isolate"

    def rules(self):
        return netrules.isolate_rules(self._net(self.nodes), self._net(self.ctx.everyone()), self.links(), self.tag)


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


# -- ZooKeeper and controller ---------------------------------------------------------------------------
class ZkExpireSession(Fault):
    """Expire brokers' ZooKeeper sessions.

    We cannot open a session with a broker's session id and password, so the link broker<->ZooKeeper
    is cut (inside the broker) for longer than ``zookeeper.session.timeout.ms``: ZooKeeper expires the
    session and deletes ``/brokers/ids/<id>``. Apply waits (at most session timeout + ``grace_s``)
    until the registration is gone, then restores the link, and with ``wait`` (default) until the
    broker registered again with a new broker epoch (at most ``timeout_s``).
    """
    name = "zk_expire_session"
    marks_restore = True

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.cut = _CutLinks(self.ctx, self.fault_id, self.target, self.nodes, {"links": ["broker-zk"]})

    def apply(self) -> None:
        cl = self.ctx.cluster
        before = {b: cl.broker_epoch(b) for b in self.broker_ids}
        self.cut.apply()
        deadline = time.monotonic() + self.ctx.session_timeout_s() + float(self.params.get("grace_s", 10.0))
        gone: set[int] = set()
        try:
            while time.monotonic() < deadline and len(gone) < len(before):
                for b, ep in before.items():
                    now = cl.broker_epoch(b)
                    if now is None or now != ep:
                        gone.add(b)
                time.sleep(0.2)
        finally:
            self.cut.heal()
            self.restoring()
        self.detail["expired"] = sorted(gone)
        if len(gone) < len(before):
            raise FaultError(f"zk_expire_session: registration of broker(s) {sorted(set(before) - gone)} still "
                             f"present after cutting ZooKeeper for {self.ctx.session_timeout_s():g} s + grace")
        if self.params.get("wait", True):
            deadline = time.monotonic() + float(self.params.get("timeout_s", 30.0))
            while True:
                now = {b: cl.broker_epoch(b) for b in before}
                if all(now[b] is not None and now[b] != before[b] for b in before):
                    break
                if time.monotonic() > deadline:
                    raise FaultError(f"zk_expire_session: broker(s) not registered again: {now}")
                time.sleep(0.2)

    def heal(self) -> None:
        self.cut.heal()


class _CutLinks(Isolate):
    """Internal helper for faults built from a link cut."""
    name = "link_cut"


class DeleteControllerZnode(Fault):
    """Delete ``/controller``; every live broker's watch fires and one wins the new election."""
    name = "delete_controller_znode"

    def apply(self) -> None:
        zk = self.ctx.cluster.zk()
        try:
            _, stat = zk.get("/controller")
            zk.delete("/controller", version=stat.version)
        except NoNodeError:
            raise TargetUnresolved("delete_controller_znode: /controller does not exist") from None
        self.detail["deleted_version"] = stat.version


class ClientCrash(Fault):
    """End a workload client abruptly, as Jepsen's clients crash: no flush, outstanding sends purged (they
    stay unsure), ``client.life`` died. Acts on the nemesis's ``workload`` (set by the runner), not on a
    container; nothing to heal."""
    name = "client_crash"

    def apply(self) -> None:
        wl = getattr(self, "workload", None)
        if wl is None:
            raise FaultError("client_crash needs the run's workload (nemesis.workload is not set)")
        try:
            self.detail["process"] = wl.crash(self.target, rng=self.ctx.rng)
        except LookupError as e:
            raise TargetUnresolved(str(e)) from None


FAULT_CLASSES: dict[str, type[Fault]] = {c.name: c for c in [
    Kill, Stop, Start, Restart, Pause, ZkKill, ZkPause, Isolate, LinkCut, Partition, OneWay, Bridge,
    Loss, Netem, Bandwidth, ZkExpireSession, DeleteControllerZnode, ClientCrash]}
