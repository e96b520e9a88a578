"""A judged run inside a pytest test: the pieces behind the plugin's ``kc_run`` / ``kc_judge`` fixtures.

A test is the script of a run. :class:`KcRun` starts the run the way ``kafka-chaos run`` does
(:func:`harness.runner.steps`: a fresh cluster, the observer, the nemesis, the topics, the workload),
hands the test its :class:`~harness.scenario.scenario.RunContext`, and when the test is done (``judge()``, or
the fixture's teardown) heals, drains, writes the run record and judges it with the reference model,
the durability checker and the test's expectations (:func:`harness.checkers.verdict.decide`).
Nothing here runs a cluster differently from the runner: it only stops at the runner's one yield.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.request import prepare, resolve_broker
from harness.runner import RunOutcome, resume, run_cluster_name, steps
from harness.scenario.scenario import ExpectationFailed, RunContext, Scenario, TopicSpec

# what a test may set for its run (the ``kafka_chaos`` marker, a parametrized ``kc_spec``, the options)
RUN_KEYS = ("distribution", "kafka_version", "image", "brokers", "zookeepers", "broker_config", "topic",
            "partitions", "replication_factor", "topic_config", "topics", "workload", "checks", "profile",
            "max_duration_s", "needs_roles", "coverage", "seed", "security")
CLUSTER_KEYS = ("distribution", "kafka_version", "image", "brokers", "zookeepers", "broker_config", "controllers",
                "security")


@dataclass
class RunSpec:
    """What one judged run is: the cluster, its topic, its workload and its checks."""
    name: str
    description: str = ""
    distribution: str | None = None
    kafka_version: str | None = None
    image: str | None = None
    brokers: int = 3
    zookeepers: int = 1
    broker_config: dict = field(default_factory=dict)
    topic: str = "chaos"
    partitions: int = 3
    replication_factor: int = 3
    topic_config: dict = field(default_factory=dict)
    topics: list | None = None           # TopicSpec s or dicts; default: one topic from the fields above
    workload: dict | None | bool = True   # True: the default workload on ``topic``; None/False: none
    checks: tuple = ("conformance", "durability", "expectations")
    profile: str | None = None
    max_duration_s: float = 180.0
    needs_roles: tuple = ()
    coverage: dict | None = None
    seed: int = 0
    security: str | None = None          # the clients' listener, PROTOCOL[:MECHANISM] (docs/security.md)

    @classmethod
    def from_dict(cls, name: str, values: dict, description: str = "") -> "RunSpec":
        unknown = sorted(set(values) - set(RUN_KEYS))
        if unknown:
            raise HarnessError(f"{name}: unknown kafka-chaos run setting(s) {unknown}; known: {', '.join(RUN_KEYS)}")
        return cls(name=name, description=description,
                   **{k: v for k, v in values.items() if v is not None or k == "workload"})

    def scenario(self) -> Scenario:
        topics = [t if isinstance(t, TopicSpec) else TopicSpec(**t) for t in (self.topics or [])] or [
            TopicSpec(self.topic, self.partitions, self.replication_factor, dict(self.topic_config))]
        if self.workload is True:
            workload = {"topic": topics[0].name, "partitions": topics[0].partitions}
        else:
            workload = dict(self.workload) if self.workload else None
        return Scenario(name=self.name, description=self.description, script=None, tags=("pytest",),
                        brokers=self.brokers, zookeepers=self.zookeepers, broker_config=dict(self.broker_config),
                        topics=topics, workload=workload, checks=tuple(self.checks), kraft=True,
                        max_duration_s=float(self.max_duration_s), needs_roles=tuple(self.needs_roles),
                        coverage=self.coverage, security=self.security)


def scenario_name(nodeid: str) -> str:
    """A run name for a test id (``family.variant`` form, file-system safe): ``pytest.<test name>``."""
    test = nodeid.rsplit("::", 1)[-1]
    return "pytest." + (re.sub(r"[^A-Za-z0-9_.-]+", "_", test).strip("_") or "test")[:80]


class KcRun:
    """One judged run: ``start()`` up to the script, the test acts through :attr:`ctx`, ``end()``
    heals, drains, records and judges (idempotent), :meth:`judge` fails the test unless PASS."""

    def __init__(self, spec: RunSpec, runs_dir: str | Path, *, suite: str = "pytest", keep_cluster: bool = False):
        self.spec = spec
        self.runs_dir = Path(runs_dir)
        self.suite = suite
        self.keep_cluster = keep_cluster
        self.ctx: RunContext | None = None
        self.outcome: RunOutcome | None = None
        self._run = None

    def start(self) -> "KcRun":
        req = prepare(self.spec.scenario(), kafka_version=self.spec.kafka_version, image=self.spec.image,
                      distribution=self.spec.distribution, profile=self.spec.profile)
        self._run = steps(req, runs_dir=self.runs_dir, suite=self.suite, seed=self.spec.seed,
                          keep_cluster=self.keep_cluster, cluster_name=run_cluster_name(_suffix()))
        try:
            self.ctx = next(self._run)
        except StopIteration as stop:         # the cluster did not start: the record says why
            self.outcome = stop.value
            raise HarnessError(f"{self.spec.name}: the run ended before the test could act: {self.outcome.verdict}"
                               f"({self.outcome.cause}): {self.outcome.reason} (record: {self.outcome.path})") from None
        return self

    # what the test acts on
    @property
    def cluster(self):
        return self.ctx.cluster

    @property
    def nemesis(self):
        return self.ctx.nemesis

    @property
    def observer(self):
        return self.ctx.view

    @property
    def workload(self):
        return self.ctx.nemesis.workload

    @property
    def topic(self) -> str:
        return self.ctx.scenario.topics[0].name

    def end(self, error: BaseException | None = None) -> RunOutcome:
        """Heal, drain, record and judge (once). ``error``: what ended the test early; an assertion
        counts as a failed expectation of the run, anything else as a script error."""
        if self.outcome is None:
            if self._run is None:
                raise HarnessError("the run was never started")
            if isinstance(error, AssertionError) and not isinstance(error, ExpectationFailed):
                error = ExpectationFailed(f"{type(error).__name__}: {error}")
            elif error is not None and not isinstance(error, (Exception, KeyboardInterrupt)):
                error = ExpectationFailed(f"{type(error).__name__}: {error}")
            self.outcome = resume(self._run, error)
        return self.outcome

    def verdict(self) -> dict:
        """The stored ``verdict.json`` of the ended run."""
        from harness.record import load_json_object
        return load_json_object(self.end().path / "verdict.json")

    def judge(self) -> RunOutcome:
        """End the run and raise :class:`RunFailed` unless its verdict is PASS."""
        out = self.end()
        if out.verdict != "PASS":
            raise RunFailed(failure_message(out, self.verdict()))
        return out


class RunFailed(AssertionError):
    """A judged run's verdict was not PASS; the message names the rule ids and the record."""


def _suffix() -> str:
    import secrets
    return secrets.token_hex(3)


def rule_ids(verdict: dict) -> list[str]:
    """What failed, by id: conformance rule ids (``H3``), ``durability.lost``-style data checks,
    ``expectation: <what>`` for the run's own failed expectations."""
    checks = verdict.get("checks") or {}
    out: list[str] = []
    conf = checks.get("conformance") or {}
    for d in (conf.get("invariant_violations") or []) + (conf.get("divergences") or []):
        if d.get("rule") and d["rule"] not in out:
            out.append(d["rule"])
    for name in ("durability", "transactions", "groups"):
        c = checks.get(name) or {}
        if c.get("verdict") == "FAIL":
            out += [f"{name}.{k}" for k, v in (c.get("checks") or {}).items() if (v or {}).get("verdict") == "FAIL"]
    exp: Any = checks.get("expectations") or {}
    if exp.get("verdict") == "FAIL":
        out += [f"expectation {e['rule']}: {e.get('what')}" if e.get("rule") else f"expectation: {e.get('what')}"
                for e in exp.get("items") or [] if not e.get("ok")]
        if exp.get("error") and not any(not e.get("ok") for e in exp.get("items") or []):
            out.append(f"expectation: {exp['error']}")
    return out


def failure_message(out: RunOutcome, verdict: dict) -> str:
    ids = rule_ids(verdict)
    label = f"{out.verdict}({out.cause})" if out.cause else out.verdict
    lines = [f"kafka-chaos: {out.scenario}: {label}: {out.reason}"]
    if ids:
        lines.append("failed: " + "; ".join(ids))
    lines.append(f"record: {out.path}  (re-judge: kafka-chaos check {out.path})")
    return "\n".join(lines)


def run_scenario_file(path, runs_dir, settings: dict, *, keep_cluster: bool = False, skip=None) -> tuple[RunOutcome, dict]:
    """Run a scenario file (docs/scenario-files.md; :func:`harness.scenario.file.load_file`) the way
    ``kafka-chaos run FILE`` does: ``settings`` (distribution, kafka_version, image, broker_config, seed,
    profile) win over the file's ``[cluster]`` defaults. Returns (outcome, stored verdict). ``skip(reason)``
    is called when the scenario does not apply to that cluster (e.g. it faults ZooKeeper on KRaft)."""
    from harness.record import load_json_object
    from harness.runner import execute
    from harness.scenario.file import load_file
    sf = load_file(path)
    req = resolve_broker(kafka_version=settings.get("kafka_version") or sf.kafka_version, image=settings.get("image"),
                         distribution=settings.get("distribution") or sf.distribution, profile=settings.get("profile"),
                         build_missing=True).request(sf.scenario)
    if req.not_applicable and skip is not None:
        skip(f"{sf.scenario.name}: {req.not_applicable}")
    out = execute(req, runs_dir=runs_dir, suite="pytest", seed=settings.get("seed", 0),
                  broker_config=settings.get("broker_config"), keep_cluster=keep_cluster)
    return out, load_json_object(out.path / "verdict.json")

