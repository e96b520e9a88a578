"""Replay a recorded run: ``kafka-chaos run --replay RUN_DIR``.

A replay re-runs the recorded scenario with what made the original run what it was, read from its
``metadata.json``: the scenario, the seed (``random-*`` / ``follower(...)`` targets draw from it), the
stored fault **schedule** (used as stored, never regenerated, so a replay stays identical even if the
generator or the scenario's fault mix changed since), the broker image (or Kafka version), the
broker configuration actually applied and the conformance profile. The new record's ``replay_of``
names the original run. What cannot be replayed (an unknown scenario, a malformed record, an image
that no longer exists) is one clear error, before anything starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.errors import ScenarioError
from harness.record import RecordError, load_json_object
from harness.scenario.schedule import Schedule, load_schedule


@dataclass
class ReplayPlan:
    run_id: str
    scenario: str
    seed: int
    schedule: Schedule
    broker_image: str | None
    kafka_version: str | None
    profile: str | None
    broker_config: dict[str, str]
    suite: str
    distribution: str | None = None
    variant: str | None = None            # the scenario's variant the run was (Scenario.with_variant)
    security: str | None = None           # the listener it ran with, PROTOCOL[:MECHANISM] (None: PLAINTEXT)
    features: dict[str, int] | None = None    # the feature levels it asked for (metadata.json features_requested)


def plan_replay(run_dir: str | Path) -> ReplayPlan:
    """Read what a replay needs from a run record; ScenarioError naming the file on bad input."""
    p = Path(run_dir)
    if not p.is_dir():
        raise ScenarioError(f"--replay {p}: not a run record directory")
    try:
        meta = load_json_object(p / "metadata.json")
    except RecordError as e:
        raise ScenarioError(f"--replay: {e}") from None
    where = p / "metadata.json"
    scenario = meta.get("scenario")
    if not isinstance(scenario, str) or not scenario:
        raise ScenarioError(f"{where}: no 'scenario' name; cannot tell what to replay")
    seed = meta.get("seed", 0)
    if seed is None:
        seed = 0
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ScenarioError(f"{where}: 'seed' must be an integer, got {seed!r}")
    schedule = load_schedule(p)          # validates every item; ScheduleError (a ScenarioError) names it
    schedule.seed = seed
    cfg = meta.get("broker_config") or {}
    if not isinstance(cfg, dict):
        raise ScenarioError(f"{where}: 'broker_config' must be an object, got {type(cfg).__name__}")
    return ReplayPlan(run_id=str(meta.get("run_id") or p.name), scenario=scenario, seed=seed, schedule=schedule,
                      broker_image=meta.get("broker_image"), kafka_version=meta.get("kafka_version"),
                      profile=meta.get("profile"), broker_config={str(k): str(v) for k, v in cfg.items()},
                      suite=str(meta.get("suite") or "adhoc"), distribution=meta.get("distribution"),
                      variant=meta.get("variant") if isinstance(meta.get("variant"), str) else None,
                      security=_security(meta.get("security")), features=_features(meta.get("features_requested")))


def _features(recorded) -> dict[str, int] | None:
    """metadata.json ``features_requested`` (None: the run asked for none, or a record from before it)."""
    if not isinstance(recorded, dict):
        return None
    return {str(k): v for k, v in recorded.items() if isinstance(v, int) and not isinstance(v, bool)} or None


def _security(recorded) -> str | None:
    """metadata.json ``security`` (Security.describe(): no secrets) as PROTOCOL[:MECHANISM]; None: PLAINTEXT."""
    if not isinstance(recorded, dict) or recorded.get("protocol") in (None, "PLAINTEXT"):
        return None
    proto, mech = str(recorded["protocol"]), recorded.get("mechanism")
    return f"{proto}:{mech}" if mech else proto
