"""The nemesis: applies faults by name and role target, records them, and heals everything.

    with Nemesis(cluster, recorder, seed=7) as nem:      # heal_all() on every exit path
        h = nem.apply("pause", "follower(t,0)")
        ...
        nem.heal(h)

Every applied fault gets a ``fault_id`` and exactly one ``fault.start``, one ``fault.heal`` and one
``fault.end`` event, at the true times (docs/run-record.md, "Faults"): ``fault.heal`` when its effect
is undone (the container started or unpaused, the rules removed), ``fault.end`` when the heal is done
(a restarted broker serves again). A fault with nothing to heal (``restart``, ``start``,
``zk_expire_session``, ``delete_controller_znode``: ``instant`` in the catalog) ends when its apply
returns, not at the final ``heal_all``. ``heal_all()`` heals the active faults, then sweeps every container of the
cluster (unpause, flush the KAFKA_CHAOS_* chains, delete a netem/tbf qdisc, start stopped nodes when
asked) and reports what, if anything, could not be restored.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from harness.errors import HarnessError
from harness.cluster.lifecycle import Shield
from harness.nemesis import netrules
from harness.record.events import FAULT_END, FAULT_HEAL, FAULT_START, PHASE, PHASE_FAULTS_HEALED
from harness.nemesis.catalog import FaultSpecError, fault_info, validate_params
from harness.nemesis.fault_base import Context, Fault, FaultError
from harness.nemesis.faults import FAULT_CLASSES, start_node
from harness.nemesis.targets import TargetUnresolved, parse_target, resolve
from harness.nemesis.view import ZkView


class FaultSkipped(FaultError):
    """The target named nothing at fault time (e.g. no controller); recorded, nothing applied."""


class _NullRecorder:
    def emit(self, type_: str, **fields: Any) -> dict:
        return {}


_RESIDUE_SCRIPT = (netrules.list_script() + "\necho '--qdisc--'\ntc qdisc show dev eth0 2>/dev/null || true"
                   "\necho '--end--'")
_SWEEP_SCRIPT = (netrules.flush_script()
                 + "\nif tc qdisc show dev eth0 | grep -Eq ' (netem|tbf) '; then tc qdisc del dev eth0 root; fi\ntrue")


@contextlib.contextmanager
def defer_sigint():
    """Hold Ctrl-C (and SIGTERM) back while healing (main thread only), with a line saying so; re-raised
    as KeyboardInterrupt afterwards (harness/cluster/lifecycle.py Shield)."""
    with Shield("healing the faults"):
        yield


def _spec_fields(spec, target, params) -> tuple[str, str | None, dict | None]:
    if isinstance(spec, str):
        return spec, target, params
    if isinstance(spec, dict):
        return spec.get("fault"), target or spec.get("target"), params if params is not None else spec.get("params")
    if hasattr(spec, "fault"):   # ScheduleItem, FaultSpec
        return spec.fault, target or getattr(spec, "target", None), (
            params if params is not None else getattr(spec, "params", None))
    raise FaultSpecError(f"cannot apply {spec!r}: expected a fault name, a dict or a schedule item")


class Nemesis:
    """Applies and heals faults on one cluster. Thread-safe.

    ``view``: anything with the :class:`~harness.nemesis.view.View` methods (default: a
    :class:`ZkView` reading ZooKeeper directly). ``rng`` (or ``seed``): the RNG ``random-*`` and
    ``follower(...)`` targets draw from; seed it with the run seed so replays choose alike.
    """

    def __init__(self, cluster, recorder=None, view=None, rng: random.Random | None = None,
                 seed: int | None = None):
        self.cluster = cluster
        self.recorder = recorder or _NullRecorder()
        self.view = view or ZkView(cluster)
        self.rng = rng or random.Random(seed)
        self.ctx = Context(cluster, self.view, self.rng)
        self._lock = threading.RLock()
        self._next_id = 1
        self.active: list[Fault] = []
        self.history: list[Fault] = []
        self.workload = None   # set by the runner: the run's Workload, for client_crash

    # -- one fault ------------------------------------------------------------------------------------
    def apply(self, spec, target: str | None = None, params: dict | None = None) -> Fault:
        """Resolve the target now, record ``fault.start`` and apply; returns the handle for :meth:`heal`.

        Raises FaultSpecError (bad input), FaultSkipped (target names nothing now) or FaultError; in
        every failure case whatever was partially applied is undone and ``fault.end`` recorded.
        """
        name, target, params = _spec_fields(spec, target, params)
        info = fault_info(name)
        params = validate_params(name, params)
        target = target or info.default_target
        if info.kind != "client":    # a client fault names a workload process, not a node
            parse_target(target)
        with self._lock:
            fid = self._next_id
            self._next_id += 1
        notes: list = []   # what coordinator targets resolved to (FindCoordinator), for fault.start
        try:
            nodes = [] if info.kind == "client" else resolve(target, self.cluster, self.view, self.rng, notes)
        except TargetUnresolved as e:
            self._emit_start(fid, name, target, [], [], params)
            self.recorder.emit(FAULT_END, fault_id=fid, fault=name, nodes=[], ok=False, error=f"skipped: {e}")
            raise FaultSkipped(str(e)) from None
        except FaultSpecError:
            raise
        except Exception as e:  # noqa: BLE001 - e.g. ZooKeeper unreachable while reading the view
            self._emit_start(fid, name, target, [], [], params)
            msg = f"cannot resolve target {target!r}: {type(e).__name__}: {e}"
            self.recorder.emit(FAULT_END, fault_id=fid, fault=name, nodes=[], ok=False, error=msg)
            raise FaultError(msg) from e
        bad = [n.alias for n in nodes if n.role not in info.roles]
        if bad:
            raise FaultSpecError(f"{name}: target {target!r} resolved to {bad}, but {name} acts on "
                                 f"{' or '.join(info.roles)} nodes only")
        # node ids served by one process (a distribution file's layout single-node): a fault on one of
        # them would hit them all; never pretend it reached one node alone (Scenario.not_applicable keeps
        # such scenarios out of a certificate's plan; this is the guard for everything else)
        sharing = getattr(self.cluster, "sharing", None)
        shared = sorted({b for n in nodes if n.role == "broker" for b in (sharing(n) if sharing else [])})
        if shared and info.kind == "process" and set(shared) <= {n.node_id for n in nodes if n.role == "broker"}:
            # every node id of each such process is targeted (e.g. all-brokers): the process fault reaches
            # them all, as asked; it acts once per container (the record names every node id)
            nodes, shared = _containers(nodes), []
        if shared:
            self._emit_start(fid, name, target, [n.name for n in nodes], [], params)
            msg = (f"{name} on {target}: node ids {','.join(map(str, shared))} share one process, so a fault "
                   f"cannot reach one node alone; this harness does not apply it")
            self.recorder.emit(FAULT_END, fault_id=fid, fault=name, nodes=[], ok=False, error=msg)
            raise FaultError(msg)
        fault = FAULT_CLASSES[name](self.ctx, fid, target, nodes, params)
        fault.on_restore = self._emit_heal
        fault.workload = self.workload
        self._emit_start(fid, name, target, [n.name for n in nodes], fault.broker_ids, params, notes,
                         fault.kafka_node_ids)
        with self._lock:
            self.active.append(fault)
            self.history.append(fault)
        try:
            fault.apply()
        except BaseException as e:
            err = e if isinstance(e, HarnessError) else None
            with contextlib.suppress(Exception):
                fault.heal()
            self._finish(fault, ok=False, error=f"apply failed: {e}")
            if isinstance(e, TargetUnresolved):
                raise FaultSkipped(str(e)) from None
            if err is None and isinstance(e, Exception):
                raise FaultError(f"{name} on {target}: {type(e).__name__}: {e}") from e
            raise
        if info.instant:       # an event, not a state: it is over once apply returned
            self._finish(fault, ok=True, error=None)
        return fault

    def _emit_start(self, fid, name, target, nodes, broker_ids, params, resolved=None, node_ids=None) -> None:
        extra = {"resolved": resolved} if resolved else {}
        self.recorder.emit(FAULT_START, fault_id=fid, fault=name, target=target, nodes=nodes,
                           broker_ids=broker_ids, node_ids=node_ids if node_ids is not None else broker_ids,
                           params=params, **extra)

    def _emit_heal(self, fault: Fault) -> None:
        """Record ``fault.heal`` for ``fault`` once: its effect is being undone now."""
        with self._lock:
            if getattr(fault, "heal_recorded", False):
                return
            fault.heal_recorded = True
        self.recorder.emit(FAULT_HEAL, fault_id=fault.fault_id, fault=fault.name,
                           nodes=[n.name for n in fault.nodes])

    def _finish(self, fault: Fault, ok: bool, error: str | None) -> None:
        with self._lock:
            if fault.healed:
                return
            fault.healed = True
            if fault in self.active:
                self.active.remove(fault)
        self._emit_heal(fault)      # no-op when the fault recorded it at its restore
        self.recorder.emit(FAULT_END, fault_id=fault.fault_id, fault=fault.name,
                           nodes=[n.name for n in fault.nodes], ok=ok, error=error)

    def heal(self, fault: Fault) -> bool:
        """Heal one fault (idempotent: a healed fault is left alone). True when it healed cleanly."""
        if fault.healed:
            return True
        # fault.heal: the effect is undone from now on (a killed broker may be running again before
        # fault.end, which waits for its startup). Process faults record it themselves as soon as
        # the Docker start / unpause returned (a killed broker's start first waits for its old session
        # to expire).
        if not fault.marks_restore:
            self._emit_heal(fault)
        try:
            fault.heal()
        except Exception as e:  # noqa: BLE001 - recorded; heal_all sweeps what is left
            self._finish(fault, ok=False, error=f"heal failed: {e}")
            return False
        self._finish(fault, ok=True, error=None)
        return True

    # -- everything -----------------------------------------------------------------------------------
    def heal_all(self, start_stopped: bool = True, timeout_s: float = 60.0) -> list[str]:
        """Restore the whole cluster; never raises (Ctrl-C is held back until it is done).

        Heals the active faults (newest first), then every container: unpause, empty the
        KAFKA_CHAOS_* chains, delete a netem/tbf root qdisc and, with ``start_stopped``, start
        exited nodes (ZooKeeper and services first). Returns :meth:`residue` (empty when all is restored).
        """
        with defer_sigint():
            t0 = time.monotonic()
            errors: list[str] = []
            with self._lock:
                active = list(reversed(self.active))
            for f in active:
                if not self.heal(f):
                    errors.append(f"{f!r} did not heal cleanly")
            nodes = _containers(self.cluster.nodes())
            # every running node is swept at once (docker exec round trips dominate); stopped nodes are
            # started afterwards one by one, ZooKeeper first
            swept = _each(nodes, self._sweep)
            stopped = []
            for n, (st, err) in zip(nodes, swept):
                if err:
                    errors.append(f"{n.name}: {err}")
                elif start_stopped and st in ("exited", "created"):
                    stopped.append(n)
            for n in sorted(stopped, key=lambda n: n.role not in ("zookeeper", "service")):
                try:
                    start_node(self.ctx, n, wait=True, timeout_s=timeout_s)
                except Exception as e:  # noqa: BLE001 - keep restoring the others
                    errors.append(f"{n.name}: {e}")
            left = self.residue(include_stopped=start_stopped)
            # seconds: how long the sweep took (its window, for telling its own Docker events apart);
            # faults: the ids still active when it began (their fault.end is in that window)
            self.recorder.emit(PHASE, name=PHASE_FAULTS_HEALED, residue=left, errors=errors,
                               seconds=round(time.monotonic() - t0, 3), faults=[f.fault_id for f in active])
            return left + [e for e in errors if e not in left]

    @staticmethod
    def _sweep(n) -> str:
        """Unpause ``n`` and empty its chains and qdiscs; its status afterwards."""
        st = n.status()
        if st == "paused":
            n.unpause()
            st = "running"
        if st == "running" and not _bare_store(n):
            n.exec(["sh", "-c", _SWEEP_SCRIPT])
        return st

    def residue(self, include_stopped: bool = True) -> list[str]:
        """What is still applied: paused nodes, KAFKA_CHAOS_* rules, netem/tbf qdiscs, stopped nodes."""
        nodes = _containers(self.cluster.nodes())
        out: list[str] = []
        for n, (found, err) in zip(nodes, _each(nodes, lambda n: _node_residue(n, include_stopped))):
            out += [f"{n.name}: cannot inspect ({err})"] if err else found
        return out

    def gone(self) -> list[str]:
        """The cluster's containers that no longer exist (status ``missing``): removed by something other than
        the harness (no fault removes one), so nothing the harness does brings them back."""
        nodes = _containers(self.cluster.nodes())
        return [n.name for n, (st, err) in zip(nodes, _each(nodes, lambda n: n.status())) if not err and st == "missing"]

    def __enter__(self) -> "Nemesis":
        return self

    def __exit__(self, *exc) -> None:
        self.heal_all()


def _containers(nodes) -> list:
    """One node per container (the node ids of a one-process broker share one), in order."""
    out: list = []
    for n in nodes:
        if all(m.name != n.name for m in out):
            out.append(n)
    return out


def _each(nodes: list, fn) -> list[tuple[Any, str | None]]:
    """``fn(node)`` for every node concurrently: ``(result, None)`` or ``(None, error text)`` each, in
    node order."""
    if not nodes:
        return []

    def one(n):
        try:
            return fn(n), None
        except Exception as e:  # noqa: BLE001 - reported per node
            return None, f"{type(e).__name__}: {e}"
    with ThreadPoolExecutor(max_workers=len(nodes), thread_name_prefix="nemesis-node") as pool:
        return list(pool.map(one, nodes))


def _bare_store(n) -> bool:
    """A distribution file's store service whose image has no ``sh``/``iptables``/``tc``: it never took
    rules (its peers hold them, harness/nemesis/netrules.py), and nothing can be swept or inspected in it."""
    if getattr(n, "role", None) != "service":
        return False
    try:
        code, _ = n.exec(["sh", "-c", "command -v iptables >/dev/null && command -v tc >/dev/null"])
    except Exception:  # noqa: BLE001 - no sh at all
        return True
    return code != 0


def _node_residue(n, include_stopped: bool) -> list[str]:
    st = n.status()
    if st == "paused":
        return [f"{n.name}: paused"]
    if st != "running":
        return [f"{n.name}: {st}"] if include_stopped else []
    if _bare_store(n):
        return []
    text = ""
    for _ in range(3):   # docker exec can lose the output of a short command: need the marker
        try:
            _, text = n.exec(["sh", "-c", _RESIDUE_SCRIPT])
        except Exception as e:  # noqa: BLE001
            text = f"error: {e}"
        if "--end--" in text:
            break
    if "--end--" not in text:
        return [f"{n.name}: cannot inspect ({text.strip()[:200] or 'no output'})"]
    rules_part, _, qdisc = text.partition("--qdisc--")
    return ([f"{n.name}: iptables {r}" for r in netrules.parse_listing(rules_part)]
            + [f"{n.name}: qdisc {q.strip()}" for q in qdisc.splitlines() if " netem " in q or " tbf " in q])


@contextlib.contextmanager
def nemesis_guard(cluster, recorder=None, view=None, rng=None, seed=None, start_stopped: bool = True):
    """``with nemesis_guard(cluster, recorder, seed=s) as nem:`` — heal_all on any exit, Ctrl-C included."""
    nem = Nemesis(cluster, recorder, view, rng, seed)
    try:
        yield nem
    finally:
        nem.heal_all(start_stopped=start_stopped)
