"""The faults: one small class each, with ``apply()`` and an idempotent ``heal()``.

A fault gets its target nodes already resolved (by :class:`harness.nemesis.Nemesis`, which also
records ``fault.start``/``fault.end``). Everything acts on containers of the harness's own cluster
only: process faults through the Docker API, network faults with iptables/tc run by ``docker exec``
*inside* the target containers (their own network namespaces; the host's tables are never touched).

Here: the process faults (kill, stop, start, restart, pause), the ZooKeeper and controller faults, the
client crash, and :data:`FAULT_CLASSES` (name -> class). The base class and its context:
harness/nemesis/fault_base.py; the network faults: harness/nemesis/net_faults.py.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from kazoo.exceptions import NoNodeError

from harness.errors import HarnessError
from harness.nemesis.fault_base import Context, Fault, FaultError
from harness.nemesis.net_faults import Bandwidth, Bridge, Isolate, LinkCut, Loss, Netem, OneWay, Partition
from harness.nemesis.targets import TargetUnresolved, zookeeper_mode

if TYPE_CHECKING:  # pragma: no cover
    from harness.cluster.cluster import Cluster
    from harness.cluster.node import Node


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
    if wait and node.role == "service":     # a distribution file's store: its ready line, when it has one
        deadline = time.monotonic() + timeout_s
        while not node.started():
            if node.status() not in ("running", "paused") or time.monotonic() > deadline:
                raise FaultError(f"{node.name}: service not ready (did not log {node.started_line!r}) "
                                 f"{timeout_s:.0f} s after start; status {node.status()}")
            time.sleep(0.3)
    elif wait and node.role != "zookeeper":   # a dedicated KRaft controller
        try:
            ctx.cluster.control.wait_node_ready(node, timeout_s)
        except HarnessError as e:
            raise FaultError(str(e)) from None
    elif wait:
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
        # ZooKeeper (or the controllers) first: brokers need it to register
        for n in sorted(self.nodes, key=lambda n: n.role == "broker"):
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
            for attempt in range(4):       # thawing can fail transiently under load, as freezing can
                if n.status() != "paused":
                    break
                try:
                    n.unpause()
                    self.restoring()
                    break
                except Exception as e:  # noqa: BLE001 - docker APIError "unable to thaw"
                    if attempt == 3:
                        raise FaultError(f"unpause {n.name}: {e}") from None
                    time.sleep(0.5)


class ZkKill(Kill):
    name = "zk_kill"


class ZkPause(Pause):
    name = "zk_pause"


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


class ClientRestart(Fault):
    """Jepsen's client crash for transactional clients: the workload ends one client abruptly (no commit,
    abort or flush) and starts a new process with the same ``transactional.id``, whose
    ``init_transactions()`` fences the old. The nemesis only asks, through the workload's
    ``crash_client(target, rng)`` (harness/workload/txn.py :meth:`TxnWorkload.crash_client`); nothing to heal."""
    name = "crash"

    def apply(self) -> None:
        wl = getattr(self, "workload", None)
        crash = getattr(wl, "crash_client", None)
        if crash is None:
            raise FaultError("crash needs a run whose workload has transactional clients (kind txn); "
                             + ("nemesis.workload is not set" if wl is None else f"this one is {type(wl).__name__}"))
        try:
            self.detail.update(crash(self.target, rng=self.ctx.rng))
        except LookupError as e:
            raise TargetUnresolved(str(e)) from None


FAULT_CLASSES: dict[str, type[Fault]] = {c.name: c for c in [
    Kill, Stop, Start, Restart, Pause, ZkKill, ZkPause, Isolate, LinkCut, Partition, OneWay, Bridge,
    Loss, Netem, Bandwidth, ZkExpireSession, DeleteControllerZnode, ClientCrash, ClientRestart]}
