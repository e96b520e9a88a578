"""Seeded fault schedules: generate, store in metadata.json, reload for replay, execute.

A schedule is a list of :class:`ScheduleItem` ``(at, fault, target, duration, params)``: at ``at``
seconds after the fault phase starts, apply ``fault`` to the role ``target`` (resolved at fault
time), heal it ``duration`` seconds later. :func:`generate_schedule` derives it from a seed and a
fault mix with ``random.Random(seed)`` only, so the same (seed, mix) gives the same schedule on
every machine and Python version. Items never overlap: after each fault's heal comes a quiet
interval. The mix format and replay are described in docs/faults.md.
"""

from __future__ import annotations

import heapq
import json
import math
import os
import random
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from harness.errors import ScenarioError
from harness.nemesis.catalog import CATALOG, FaultSpecError, fault_info, validate_params
from harness.nemesis.fault_base import FaultError
from harness.nemesis.targets import TargetError, needs_role, parse_target
from harness.record import RecordError, load_json_object

MAX_ITEMS = 10_000
ITEM_KEYS = ("at", "fault", "target", "duration", "params")


class ScheduleError(ScenarioError):
    """A schedule, a fault mix or a stored run's schedule is malformed."""


def _number(v, where: str, minimum: float = 0.0) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < minimum:
        raise ScheduleError(f"{where}: expected a number >= {minimum:g}, got {v!r}")
    return float(v)


def _range(v, where: str) -> tuple[float, float]:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        lo = hi = _number(v, where)
    elif isinstance(v, (list, tuple)) and len(v) == 2:
        lo, hi = _number(v[0], f"{where}[0]"), _number(v[1], f"{where}[1]")
    else:
        raise ScheduleError(f"{where}: expected [min, max] seconds or a number, got {v!r}")
    if lo > hi:
        raise ScheduleError(f"{where}: min {lo:g} is greater than max {hi:g}")
    return lo, hi


# -- items ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ScheduleItem:
    """One planned fault. ``at``/``duration`` in seconds; ``target`` a role string (docs/faults.md)."""
    at: float
    fault: str
    target: str
    duration: float
    params: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"at": self.at, "fault": self.fault, "target": self.target, "duration": self.duration,
                "params": dict(self.params)}

    @classmethod
    def from_json(cls, obj, where: str = "schedule item") -> "ScheduleItem":
        """Validate and build one item; every error names ``where`` and the field."""
        if not isinstance(obj, dict):
            raise ScheduleError(f"{where}: expected an object with {', '.join(ITEM_KEYS)}, got {type(obj).__name__}")
        unknown = sorted(set(obj) - set(ITEM_KEYS))
        if unknown:
            raise ScheduleError(f"{where}: unknown field(s) {unknown}; allowed: {', '.join(ITEM_KEYS)}")
        missing = [k for k in ITEM_KEYS[:4] if k not in obj]
        if missing:
            raise ScheduleError(f"{where}: missing field(s) {missing}")
        at = _number(obj["at"], f"{where}.at")
        duration = _number(obj["duration"], f"{where}.duration")
        if obj["fault"] not in CATALOG:
            raise ScheduleError(f"{where}.fault: unknown fault {obj['fault']!r}; known: {', '.join(sorted(CATALOG))}")
        try:
            if CATALOG[obj["fault"]].kind != "client":   # a client fault names a workload process
                parse_target(obj["target"])
        except TargetError as e:
            raise ScheduleError(f"{where}.target: {e}") from None
        try:
            params = validate_params(obj["fault"], obj.get("params") or {})
        except FaultSpecError as e:
            raise ScheduleError(f"{where}.params: {e}") from None
        return cls(at, obj["fault"], obj["target"], duration, params)


@dataclass
class Schedule:
    """A seed (None for hand-written schedules) and its items, sorted by ``at``."""
    seed: int | None
    items: list[ScheduleItem]

    def __iter__(self):
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    @property
    def end(self) -> float:
        """When the last planned heal happens (seconds after the start)."""
        return max((i.at + i.duration for i in self.items), default=0.0)

    def to_json(self) -> list[dict]:
        """The ``schedule`` value of metadata.json."""
        return [i.to_json() for i in self.items]

    def dumps(self) -> str:
        return json.dumps({"seed": self.seed, "schedule": self.to_json()}, sort_keys=True)

    @classmethod
    def from_json(cls, items, seed=None, source: str = "schedule") -> "Schedule":
        if not isinstance(items, list):
            raise ScheduleError(f"{source}: expected a list of items, got {type(items).__name__}")
        if len(items) > MAX_ITEMS:
            raise ScheduleError(f"{source}: {len(items)} items, more than the limit {MAX_ITEMS}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise ScheduleError(f"{source}: seed must be an integer or null, got {seed!r}")
        parsed = [ScheduleItem.from_json(obj, f"{source}[{n}]") for n, obj in enumerate(items)]
        return cls(seed, sorted(parsed, key=lambda i: i.at))


# -- the fault mix ------------------------------------------------------------------------------------
BROKER_ROLES = ["random-broker", "controller"]


def _default_targets(name: str) -> list[str]:
    info = fault_info(name)
    if info.kind in ("process", "network", "degradation") and info.name != "partition":
        return list(BROKER_ROLES)
    if info.name == "partition":
        return ["random-minority", "controller"]
    return [info.default_target]


DEFAULT_PARAMS: dict[str, dict] = {
    "netem": {"delay_ms": 100, "jitter_ms": 20},
    "loss": {"loss_pct": 20},
    "bandwidth": {"rate_kbit": 1000},
    "link_cut": {"links": ["client"]},
}


@dataclass(frozen=True)
class FaultChoice:
    weight: float
    targets: tuple[str, ...]
    duration: tuple[float, float]
    params: dict


@dataclass(frozen=True)
class FaultMix:
    """What a generated schedule draws from (see :func:`parse_mix` for the JSON form)."""
    faults: dict[str, FaultChoice]
    interval: tuple[float, float]
    length: float
    max_faults: int


def parse_mix(mix: dict) -> FaultMix:
    """Validate a fault mix::

        {"length": 120, "interval": [5, 10], "duration": [5, 15], "max_faults": 100,
         "faults": {"kill": 1, "pause": {"weight": 2, "targets": ["follower(t,0)"],
                                         "duration": [3, 8], "params": {}}}}

    A bare number is a weight with the fault's default targets, the mix's duration and default
    params. ``interval`` is the quiet time between one fault's heal and the next fault.
    """
    if isinstance(mix, FaultMix):
        return mix
    if not isinstance(mix, dict):
        raise ScheduleError(f"fault mix: expected an object, got {type(mix).__name__}")
    unknown = sorted(set(mix) - {"length", "interval", "duration", "max_faults", "faults"})
    if unknown:
        raise ScheduleError(f"fault mix: unknown key(s) {unknown}")
    length = _number(mix.get("length", 60), "fault mix.length")
    if length <= 0:
        raise ScheduleError("fault mix.length: must be > 0 seconds")
    interval = _range(mix.get("interval", [5, 10]), "fault mix.interval")
    duration = _range(mix.get("duration", [5, 15]), "fault mix.duration")
    max_faults = mix.get("max_faults", 1000)
    if isinstance(max_faults, bool) or not isinstance(max_faults, int) or not 1 <= max_faults <= MAX_ITEMS:
        raise ScheduleError(f"fault mix.max_faults: expected an integer in 1..{MAX_ITEMS}, got {max_faults!r}")
    faults_in = mix.get("faults")
    if not isinstance(faults_in, dict) or not faults_in:
        raise ScheduleError("fault mix.faults: expected a non-empty object {fault: weight | {...}}")
    faults: dict[str, FaultChoice] = {}
    for name in sorted(faults_in):
        where = f"fault mix.faults.{name}"
        if name not in CATALOG:
            raise ScheduleError(f"{where}: unknown fault; known: {', '.join(sorted(CATALOG))}")
        spec = faults_in[name]
        if not isinstance(spec, dict):
            spec = {"weight": spec}
        bad = sorted(set(spec) - {"weight", "targets", "duration", "params"})
        if bad:
            raise ScheduleError(f"{where}: unknown key(s) {bad}")
        weight = _number(spec.get("weight", 1), f"{where}.weight")
        targets = spec.get("targets", _default_targets(name))
        if isinstance(targets, str):
            targets = [targets]
        if not isinstance(targets, list) or not targets:
            raise ScheduleError(f"{where}.targets: expected a non-empty list of target strings")
        for k, t in enumerate(targets):
            if CATALOG[name].kind == "client":   # a client fault names a workload process, not a node
                if not isinstance(t, str) or not t:
                    raise ScheduleError(f"{where}.targets[{k}]: expected a process name or random-producer")
                continue
            try:
                parse_target(t)
            except TargetError as e:
                raise ScheduleError(f"{where}.targets[{k}]: {e}") from None
        dur = (0.0, 0.0) if CATALOG[name].instant else _range(spec.get("duration", duration), f"{where}.duration")
        try:
            params = validate_params(name, spec.get("params", DEFAULT_PARAMS.get(name, {})))
        except FaultSpecError as e:
            raise ScheduleError(f"{where}.params: {e}") from None
        faults[name] = FaultChoice(weight, tuple(targets), dur, params)
    if not any(c.weight > 0 for c in faults.values()):
        raise ScheduleError("fault mix.faults: at least one weight must be > 0")
    return FaultMix(faults, interval, length, max_faults)


def for_roles(mix, roles) -> FaultMix:
    """``mix`` without what a cluster running only ``roles`` (``Distribution.roles``, e.g. ("broker",
    "zookeeper") or ("broker", "controller")) cannot have: faults acting through a role it lacks
    (``FaultInfo.needs_role``: ZooKeeper sessions, /controller) and targets naming one (``random-zk``,
    ``quorum-leader``, ...: :func:`harness.nemesis.targets.needs_role`). One mix thus serves every
    distribution: a ZooKeeper-mode run draws its ZooKeeper faults, a KRaft run its quorum faults, from
    the same seed as if the others were never listed. ScheduleError when nothing is left."""
    m = parse_mix(mix)
    have = set(roles)
    faults = {}
    for name, c in m.faults.items():
        need = fault_info(name).needs_role
        if need is not None and need not in have:
            continue
        client = fault_info(name).kind == "client"   # a workload process: any cluster has it
        targets = tuple(t for t in c.targets if client or (needs_role(t) or "broker") in have)
        if targets:
            faults[name] = replace(c, targets=targets)
    if not any(c.weight > 0 for c in faults.values()):
        raise ScheduleError(f"fault mix: no fault left for a cluster with roles {', '.join(sorted(have))}")
    return replace(m, faults=faults)


def generate_schedule(seed: int, mix, roles=None) -> Schedule:
    """The schedule for ``seed`` and ``mix`` (for a cluster running ``roles``: :func:`for_roles`; None:
    the mix as written): identical for identical inputs (``random.Random(seed)``)."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ScheduleError(f"seed must be an integer, got {seed!r}")
    m = parse_mix(mix) if roles is None else for_roles(mix, roles)
    rng = random.Random(seed)
    names = sorted(m.faults)
    weights = [m.faults[n].weight for n in names]
    items: list[ScheduleItem] = []
    t = rng.uniform(*m.interval)
    while len(items) < m.max_faults:
        name = rng.choices(names, weights)[0]
        c = m.faults[name]
        target = c.targets[rng.randrange(len(c.targets))]
        duration = round(rng.uniform(*c.duration), 3)
        if t + duration > m.length:
            break
        items.append(ScheduleItem(round(t, 3), name, target, duration, dict(c.params)))
        t += duration + rng.uniform(*m.interval)
    return Schedule(seed, items)


# -- storage -------------------------------------------------------------------------------------------
def load_schedule(run_dir: str | os.PathLike) -> Schedule:
    """The schedule (and seed) stored in a run record's metadata.json, for ``--replay RUN_DIR``.

    ``run_dir`` may also be the metadata.json file itself. Raises ScheduleError naming the file and
    the offending item/field.
    """
    p = Path(run_dir)
    meta_path = p if p.is_file() else p / "metadata.json"
    if not p.exists():
        raise ScheduleError(f"{p}: no such run record")
    try:
        meta = load_json_object(meta_path)
    except RecordError as e:
        raise ScheduleError(f"{e} (is {p} a run record directory?)") from None
    if "schedule" not in meta:
        raise ScheduleError(f"{meta_path}: has no 'schedule' field; this run recorded no fault schedule")
    if meta["schedule"] is None:
        raise ScheduleError(f"{meta_path}: 'schedule' is null; this run recorded no fault schedule")
    return Schedule.from_json(meta["schedule"], meta.get("seed"), source=f"{meta_path}: schedule")


# -- execution ---------------------------------------------------------------------------------------
@dataclass
class ItemResult:
    """What happened to one item: when it was applied and healed (seconds after start), and errors."""
    item: ScheduleItem
    fault_id: int | None = None
    applied_at: float | None = None
    healed_at: float | None = None
    ok: bool = False
    error: str | None = None


def run_schedule(nemesis, schedule: Schedule, stop_event: threading.Event | None = None, *,
                 max_overrun_s: float = 120.0, clock: Callable[[], float] = time.monotonic,
                 on_result: Callable[[ItemResult], Any] | None = None) -> list[ItemResult]:
    """Apply each item at its time and heal it ``duration`` after its apply returned; one result per item tried.

    Heals can block (a killed broker is started and waited for): when a heal ends later than
    planned, every later item shifts by that lateness, so the quiet interval after each heal and each
    fault's duration stay as planned and consecutive faults never overlap because of a slow heal.
    Bounded: it returns by ``schedule.end + max_overrun_s`` (items not started by then are skipped)
    or soon after ``stop_event`` is set. Every fault it applied is healed before it returns, also on
    exceptions and KeyboardInterrupt (the caller still runs ``nemesis.heal_all()`` for everything
    else). A fault that fails or whose target names nothing is recorded and the run goes on.
    """
    stop = stop_event or threading.Event()
    start = clock()
    deadline = schedule.end + max_overrun_s
    items = sorted(schedule.items, key=lambda i: i.at)
    heals: list[tuple[float, int, Any, ItemResult]] = []
    results: list[ItemResult] = []
    nxt = 0
    seq = 0
    drift = 0.0  # how late the plan runs because heals (or applies) took longer than planned

    def now() -> float:
        return clock() - start

    def do_heal(entry) -> None:
        nonlocal drift
        _, _, handle, res = entry
        ok = nemesis.heal(handle)
        res.healed_at = now()
        drift = max(drift, res.healed_at - (res.item.at + res.item.duration))
        if not ok and res.ok:
            res.ok, res.error = False, "heal failed"
        if on_result:
            on_result(res)

    try:
        while (nxt < len(items) or heals) and not stop.is_set():
            t = now()
            if t > deadline:
                break
            next_apply = items[nxt].at + drift if nxt < len(items) else math.inf
            next_heal = heals[0][0] if heals else math.inf
            due = min(next_apply, next_heal)
            if due > t:
                stop.wait(min(due - t, 1.0))
                continue
            if next_heal <= next_apply:
                do_heal(heapq.heappop(heals))
                continue
            item = items[nxt]
            nxt += 1
            res = ItemResult(item, applied_at=t)
            results.append(res)
            try:
                handle = nemesis.apply(item)
            except (FaultError, FaultSpecError) as e:
                res.error = f"{type(e).__name__}: {e}"
                if on_result:
                    on_result(res)
                continue
            res.fault_id, res.ok = getattr(handle, "fault_id", None), True
            seq += 1
            heapq.heappush(heals, (now() + item.duration, seq, handle, res))
    finally:
        while heals:
            do_heal(heapq.heappop(heals))
    return results
