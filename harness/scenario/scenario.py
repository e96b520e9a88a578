"""Scenarios: what a run does (cluster shape, topics, workload, a fault script) and what it expects.

A scenario is data plus one ``script(ctx)`` function; :mod:`harness.runner` executes it:

    cluster -> observer -> topics -> workload -> script (faults, actions, waits) -> heal
      -> drain -> ZooKeeper txn log -> run record -> conformance + durability + expectations -> verdict

The script talks to the cluster only through :class:`RunContext`, which records every fault and
action in the run's event log.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from reference import semantics, versions

from harness.distributions.base import SHARED_STORAGE, Distribution
from harness.errors import HarnessError, ScenarioError
from harness.scenario.schedule import run_schedule


class ExpectationFailed(AssertionError):
    """A scenario's own expectation about the broker was not met (a broker verdict: FAIL)."""


class StepTimeout(ExpectationFailed):
    """The cluster did not reach an expected state in the bounded time (progress rule, spec §8.4)."""


# why a scenario that needs a role does not apply to a distribution without it (Scenario.not_applicable)
ROLE_REASONS = {
    "zookeeper": "it acts on ZooKeeper itself, which this cluster does not run",
    "controller": "needs controller nodes (a KRaft quorum)",
    "dynamic-quorum": "needs a dynamic KRaft quorum with spare controllers (distribution apache-kraft-dynamic, Kafka 4.x)",
}


VARIANT_KEYS = {"workload", "broker_config", "min_version", "description", "features"}


@dataclass
class TopicSpec:
    name: str
    partitions: int = 1
    replication_factor: int = 3
    config: dict[str, str] = field(default_factory=dict)
    assignment: dict[int, list[int]] | None = None  # explicit replica assignment, partition -> brokers

    def to_dict(self) -> dict:
        return {"name": self.name, "partitions": self.partitions, "replication_factor": self.replication_factor,
                "config": dict(self.config), "assignment": self.assignment}


@dataclass
class Scenario:
    name: str                                   # family.variant, e.g. broker_failover.kill_leader
    description: str
    script: Callable[["RunContext"], None] | None  # None: run the seeded schedule (``fault_mix``) only
    tags: tuple[str, ...] = ("conformance",)    # smoke / conformance / chaos / nightly
    brokers: int = 3
    zookeepers: int = 1
    broker_config: dict[str, str] = field(default_factory=dict)
    topics: list[TopicSpec] = field(default_factory=lambda: [TopicSpec("chaos", 3, 3)])
    workload: dict[str, Any] | None = field(default_factory=lambda: {"topic": "chaos", "partitions": 3})
    # the run passes only if these checks pass; "conformance" and "durability" unless a scenario says otherwise
    checks: tuple[str, ...] = ("conformance", "durability", "expectations")
    min_version: str | None = None              # skip on older Kafka versions (e.g. a 2.4+ feature)
    # runs on clusters without ZooKeeper (KRaft) too: set only for scenarios written and verified for
    # both modes (they observe through ctx.view, fault no ZooKeeper and expect §9 behaviour there)
    kraft: bool = False
    max_duration_s: float = 180.0               # hard bound on the script
    # a seeded random fault schedule (harness.scenario.schedule.parse_mix format): generated from the run's seed,
    # stored in metadata.json, executed by run_scheduled(); ``--replay`` re-runs the stored schedule
    fault_mix: dict[str, Any] | None = None
    # what the run must exercise, judged by harness.checkers.coverage.check_coverage (keys of its DEFAULT_NEEDS,
    # e.g. {"settle_s": 10, "acked_after_heal": 0}); None: the defaults
    coverage: dict[str, Any] | None = None
    # the node roles besides brokers the scenario needs (Distribution.roles must have each); None: from
    # ``kraft`` (False: a ZooKeeper ensemble, True: none). ("controller",): a KRaft quorum
    needs_roles: tuple[str, ...] | None = None
    # named variants a run may ask for (``kafka-chaos run groups --variant kip848``): name -> changes, each of
    # ``workload`` (keys merged into the workload), ``broker_config`` (merged), ``min_version``, ``description``.
    # The script stays the same and the run keeps the scenario's name; metadata.json ``variant`` names it
    variants: dict[str, dict[str, Any]] = field(default_factory=dict)
    variant: str | None = None                  # the variant this scenario object is (set by with_variant)
    # the script faults one broker (or controller) node while the other nodes keep running: kill, stop,
    # pause or a network fault on broker:N, the controller, a partition's leader, a coordinator. True unless
    # the script's faults are client-side only (or it has none): a broker serving several node ids from
    # one process (Distribution.one_process) cannot take such a fault, so the scenario does not apply there
    faults_one_node: bool = True
    # the script reads the controller's decided writes (ctx.history_marker / ctx.writes_since): from the
    # ZooKeeper txn log or a KRaft metadata log; a distribution that keeps neither (a distribution file
    # without ZooKeeper and without ``metadata_log``) cannot run it
    reads_controller_log: bool = False
    # the distribution layouts it applies to (docs/broker-contract.md "Layouts"); None: every layout whose
    # brokers own their partitions' replicas, i.e. all but ``shared-storage`` (stateless brokers over a
    # store: no replicas, ISR or leader election among the node ids to fault or to judge)
    layouts: tuple[str, ...] | None = None
    # the client-facing listener's security, ``PROTOCOL[:MECHANISM]`` (harness/cluster/security.py,
    # docs/security.md; a scenario file's ``[cluster] security``, ``run --security``); None: PLAINTEXT
    security: str | None = None
    # feature levels the cluster's storage is formatted with (a scenario file's ``[cluster] features``,
    # ``run --feature NAME=LEVEL``): {"transaction.version": 1}; empty: the release's defaults. Only the
    # Apache KRaft adapters set them (Distribution.features_problem; docs/kraft.md "Feature levels")
    features: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.needs_roles is None:
            self.needs_roles = () if self.kraft else ("zookeeper",)
        self.needs_roles = tuple(self.needs_roles)
        unknown = [r for r in self.needs_roles if r not in ROLE_REASONS]
        if unknown:
            raise ScenarioError(f"{self.name}: unknown role(s) {unknown} in needs_roles; known: {', '.join(ROLE_REASONS)}")

        for v, change in self.variants.items():
            bad = set(change) - VARIANT_KEYS
            if bad:
                raise ScenarioError(f"{self.name}: variant {v!r} changes {sorted(bad)}; a variant may change "
                                    f"{', '.join(sorted(VARIANT_KEYS))}")

    @property
    def label(self) -> str:
        """The name, with the variant in brackets when it is one (``groups.member_kill[kip848]``)."""
        return f"{self.name}[{self.variant}]" if self.variant else self.name

    def with_variant(self, variant: str | None) -> "Scenario":
        """This scenario as its variant ``variant`` (None: itself); ScenarioError when it has no such variant."""
        if variant is None:
            return self
        if variant not in self.variants:
            have = ", ".join(sorted(self.variants)) or "none"
            raise ScenarioError(f"{self.name} has no variant {variant!r} (its variants: {have})")
        change = self.variants[variant]
        workload = {**self.workload, **change.get("workload", {})} if self.workload else self.workload
        newer = [v for v in (self.min_version, change.get("min_version")) if v]
        min_version = max(newer, key=versions.parse) if newer else None
        return replace(self, workload=workload, broker_config={**self.broker_config, **change.get("broker_config", {})},
                       min_version=min_version, description=change.get("description", self.description),
                       features={**self.features, **change.get("features", {})}, variant=variant, variants={})

    def with_features(self, features: dict[str, int] | None) -> "Scenario":
        """This scenario with the feature levels ``features`` over its own (``run --feature``; None or
        empty: itself)."""
        return replace(self, features={**self.features, **features}) if features else self

    @property
    def family(self) -> str:
        return self.name.split(".", 1)[0]

    def not_applicable(self, kafka_version: str | None, distribution: Distribution) -> str | None:
        """Why this scenario cannot run on that broker (None when it can): a ``min_version`` above the
        broker's Kafka version (unknown versions are run), or a distribution (the run's
        :class:`harness.distributions.base.Distribution`) that runs none of a role the scenario needs
        (:attr:`needs_roles`; the reason per role: :data:`ROLE_REASONS`), or fewer nodes, or another layout."""
        roles = distribution.roles
        if self.broker_config and getattr(distribution, "fixed_config", False):
            return (f"sets broker configuration ({', '.join(f'{k}={v}' for k, v in self.broker_config.items())}); "
                    "the cluster runs its own (--nodes)")
        why = self.layout_not_applicable(distribution.layout) or distribution.features_problem(
            self.features, kafka_version, self.broker_config)
        if why:
            return why
        for r in self.needs_roles:
            if r not in roles:
                return ROLE_REASONS[r]
        if "zookeeper" in roles:
            zk = distribution.zookeeper_count(self.zookeepers)
            if zk < self.zookeepers:      # a distribution file whose zookeeper service has a fixed count
                return f"needs a ZooKeeper ensemble of {self.zookeepers}; the distribution runs {zk}"
        if self.min_version and kafka_version and versions.older_than(kafka_version, self.min_version):
            return f"needs Kafka {self.min_version}+ (this is {kafka_version})"
        # a distribution that fixes its nodes (a distribution file: its declared node ids) may run fewer
        # brokers than the scenario's cluster or its topics' replication need; the Apache adapters run
        # as many as asked (broker_ids(n) has n ids), so this never applies to them
        have = len(distribution.broker_ids(self.brokers))
        rf = max([t.replication_factor for t in self.topics] + [
            len(r) for t in self.topics for r in (t.assignment or {}).values()] + [1])
        need = max(self.brokers, rf) if have < self.brokers else rf
        if have < need:
            return (f"needs {need} brokers (replication factor {rf}); the distribution runs {have} "
                    f"(layout {distribution.layout})")
        ids = distribution.broker_ids(self.brokers)
        if self.faults_one_node and distribution.one_process and len(ids) > 1:
            return (f"node ids {','.join(map(str, sorted(ids)))} share one process: the scenario faults "
                    f"one node alone")
        if self.reads_controller_log and "zookeeper" not in roles and not distribution.metadata_log:
            return ("reads the controller's decided writes; the broker keeps no controller log the harness can "
                    "read (no ZooKeeper, no KRaft metadata log)")
        return None

    def layout_not_applicable(self, layout: str) -> str | None:
        """Why this scenario does not apply to a distribution of ``layout`` (None: it does)."""
        if self.layouts is None:
            if layout == SHARED_STORAGE:
                return ("written for brokers that own their partitions' replicas (leaders, followers, ISR among "
                        "the node ids); layout shared-storage has stateless brokers over a store")
            return None
        if layout not in self.layouts:
            return f"needs layout {' or '.join(self.layouts)}; this distribution's layout is {layout}"
        return None

    def with_security(self, spec: str | None) -> "Scenario":
        """This scenario on a cluster whose clients connect with ``spec`` (``SASL_SSL:SCRAM-SHA-512``;
        None: as the scenario says)."""
        return self if spec is None else replace(self, security=spec)

    def with_length(self, seconds: float) -> "Scenario":
        """This scenario with ``seconds`` of scheduled faults (scenarios with a ``fault_mix`` only)."""
        if self.fault_mix is None:
            return self
        if not seconds > 0:
            raise ScenarioError(f"--length must be > 0 seconds, got {seconds!r}")
        extra = max(60.0, self.max_duration_s - float(self.fault_mix.get("length", 0)))
        return replace(self, fault_mix={**self.fault_mix, "length": seconds}, max_duration_s=seconds + extra)

    def covering(self, schedule) -> "Scenario":
        """This scenario with a time bound long enough for ``schedule`` (a replayed one may be longer)."""
        need = schedule.end + 120.0 + 15.0 * len(schedule)   # heals may run late (run_schedule shifts)
        return self if self.max_duration_s >= need else replace(self, max_duration_s=need)


class RunContext:
    """What a scenario script can use. Every fault and action lands in the event log."""

    def __init__(self, cluster, recorder, view, nemesis, scenario: Scenario, seed: int, schedule=None):
        self.schedule = schedule  # harness.scenario.schedule.Schedule or None
        self.cluster = cluster
        self.recorder = recorder
        self.view = view
        self.nemesis = nemesis
        self.scenario = scenario
        self.seed = seed
        self.expectations: list[dict] = []
        self._deadline = time.monotonic() + scenario.max_duration_s

    # ---- what the distribution adapter says about this cluster's controller
    @property
    def semantics(self) -> semantics.Semantics:
        """What the scenario may expect of this cluster's controller where the ZooKeeper-mode and the
        KRaft controller differ (reference/semantics.py), by the distribution's ``controller_model``."""
        return semantics.for_model(self.cluster.distribution.controller_model)

    def has_role(self, role: str) -> bool:
        """Whether this cluster's distribution runs nodes of ``role`` (``Distribution.roles``: e.g.
        "zookeeper" for an ensemble, "controller" for a KRaft quorum): for the part of a scenario
        that acts on such nodes (a legacy znode), the rest of it running everywhere."""
        return role in self.cluster.distribution.roles

    def history_marker(self) -> int:
        """A marker for :meth:`writes_since` (the newest controller write now)."""
        return self.cluster.control.history_marker()

    def writes_since(self, marker: int) -> list[dict]:
        """Every controller write after ``marker`` from the control plane's own log (the ZooKeeper txn
        log, the KRaft metadata log), in harness/distributions/control_history.py's form."""
        return self.cluster.control.writes_since(marker)

    # ---- faults
    def fault(self, fault: str, target: str | None = None, **params):
        """Apply a fault now (target resolved now, from the observer's view); returns a handle for heal()."""
        return self.nemesis.apply(fault, target, params or None)

    def heal(self, handle) -> None:
        self.nemesis.heal(handle)

    # ---- actions (administrative acts, not faults)
    def action(self, action_name: str, fn: Callable[[], Any], **params) -> Any:
        try:
            out = fn()
        except Exception as e:
            self.recorder.emit("action", action=action_name, params=params, ok=False,
                               error=f"{type(e).__name__}: {e}")
            raise
        self.recorder.emit("action", action=action_name, params=params, ok=True, error=None)
        return out

    # ---- waiting and expectations
    def wait_until(self, what: str, predicate: Callable[[], bool], timeout_s: float = 30.0,
                   interval_s: float = 0.2) -> float:
        """Wait (bounded) for ``predicate``; returns seconds waited; raises StepTimeout with ``what``."""
        t0 = time.monotonic()
        deadline = min(t0 + timeout_s, self._deadline)
        while True:
            try:
                if predicate():
                    waited = time.monotonic() - t0
                    self.recorder.emit("expect", what=what, ok=True, waited_s=round(waited, 3))
                    self.expectations.append({"what": what, "ok": True, "waited_s": round(waited, 3)})
                    return waited
            except HarnessError:
                raise
            except Exception:  # the cluster is mid-fault; keep asking until the deadline
                pass
            if time.monotonic() >= deadline:
                self.recorder.emit("expect", what=what, ok=False, waited_s=round(time.monotonic() - t0, 3))
                self.expectations.append({"what": what, "ok": False, "waited_s": round(time.monotonic() - t0, 3)})
                raise StepTimeout(f"{what}: not reached within {timeout_s:.0f} s")
            time.sleep(interval_s)

    def expect(self, what: str, ok: bool, detail: Any = None, *, rule: str | None = None) -> None:
        """Record a scenario expectation; a failed one fails the run (after the run is recorded).
        ``rule``: an id for it (a test's or a scenario file's), named when it fails."""
        extra = {"rule": rule} if rule else {}
        self.recorder.emit("expect", what=what, ok=bool(ok), detail=detail, **extra)
        self.expectations.append({"what": what, "ok": bool(ok), "detail": detail, **extra})

    def sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, min(seconds, self._deadline - time.monotonic())))

    # ---- convenience views
    def leader(self, topic: str, partition: int) -> int | None:
        return self.view.leader(topic, partition, fresh=True)

    def isr(self, topic: str, partition: int) -> list[int]:
        return sorted(self.view.isr(topic, partition, fresh=True))

    def controller(self) -> int | None:
        return self.view.controller_id(fresh=True)

    def live_brokers(self) -> list[int]:
        return sorted(self.view.live_brokers(fresh=True))


def run_scheduled(ctx: RunContext) -> None:
    """Execute the run's fault schedule (``ctx.schedule``): each item applied at its time, healed
    after its duration, all bounded. Each item's outcome lands in the log as ``schedule.item``."""
    if ctx.schedule is None:
        raise HarnessError(f"{ctx.scenario.name}: no script and no fault schedule")

    def record(res) -> None:
        index = next(i for i, item in enumerate(ctx.schedule.items) if item is res.item)
        ctx.recorder.emit("schedule.item", index=index, fault=res.item.fault,
                          target=res.item.target, fault_id=res.fault_id, ok=res.ok, error=res.error,
                          applied_at=None if res.applied_at is None else round(res.applied_at, 3),
                          healed_at=None if res.healed_at is None else round(res.healed_at, 3))

    overrun = max(60.0, ctx.scenario.max_duration_s - ctx.schedule.end - 15.0)
    results = run_schedule(ctx.nemesis, ctx.schedule, max_overrun_s=overrun, on_result=record)
    tried = sum(1 for r in results if r.ok)
    ctx.expect(f"the schedule ran: {tried} of {len(ctx.schedule)} faults applied and healed",
               len(results) == len(ctx.schedule), {"applied": tried, "planned": len(ctx.schedule)})
