"""Execute one scenario on a fresh cluster and write its run record (:func:`execute`).

The verdict is decided from the record by :func:`harness.checkers.verdict.decide` (docs/verdicts.md);
the ``kafka-chaos run`` command that picks scenarios from the suites is :mod:`harness.commands.run`.
"""

from __future__ import annotations

import errno
import os
import platform
import random
import socket
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from harness import __version__
from harness.cluster import container_logs, group_coordinator
from harness import docker_util
from harness.checkers.verdict import decide
from harness.cluster.cluster import Cluster, ClusterSpec
from harness.cluster.listener_security import check_client_access
from harness.cluster.security import Security
from harness.distributions.control_history import feature_levels, from_metadata_events
from harness.errors import HarnessError
from harness.cluster.lifecycle import Shield
from harness.nemesis import Nemesis
from harness.observer import source as observation
from harness.observer.docker_events import DockerEventWatcher
from harness.cluster.owner import mark_record_dir
from harness.record import RunRecorder
from harness.record.events import PHASE_PROGRESS_NOT_AWAITED
from harness.request import RunRequest, prepare
from harness.scenario.scenario import ExpectationFailed, RunContext, Scenario, run_scheduled
from harness.scenario.schedule import Schedule, generate_schedule
from harness.workload import make_workload

LOGS_WAIT_S = 60.0      # the record waits this long at most for the containers' logs


def cluster_prefix() -> str:
    """The prefix of a run's cluster name: ``r``, or ``$KAFKA_CHAOS_CLUSTER_PREFIX`` (lower-case letters,
    digits, '-'; e.g. to tell apart the clusters of several sessions sharing one Docker host)."""
    p = os.environ.get("KAFKA_CHAOS_CLUSTER_PREFIX", "").strip().lower()
    return p if p and len(p) <= 16 and p[0].isalnum() and all(c.isalnum() or c == "-" for c in p) else "r"

def run_cluster_name(suffix: str) -> str:
    """A run's cluster name: :func:`cluster_prefix`, the pytest-xdist worker id when there is one
    (``$PYTEST_XDIST_WORKER``: each worker's clusters are its own) and ``suffix``."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "").strip().lower()
    worker = worker if worker.isalnum() and len(worker) <= 8 else ""
    return f"{cluster_prefix()}{worker + '-' if worker else ''}{suffix}"


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _git_sha() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                              cwd=Path(__file__).resolve().parent.parent).stdout.strip() or None
    except Exception:
        return None


def host_facts() -> dict:
    return {"hostname": socket.gethostname(), "platform": platform.platform(), "cpus": os.cpu_count(),
            "python": platform.python_version(), "docker_version": docker_util.engine_version()}


@dataclass
class RunOutcome:
    scenario: str
    path: Path
    verdict: str
    reason: str
    seconds: float
    cause: str | None = None      # why an UNKNOWN run is undecided (harness/checkers/verdict.py CAUSES)


def _full_isr(view, topic) -> bool:
    """Every partition of ``topic`` (a TopicSpec) has all its replicas in the ISR (read now: ZooKeeper, or
    a Metadata answer without ZooKeeper)."""
    return all(len(view.isr(topic.name, p, fresh=True)) == topic.replication_factor
               for p in range(topic.partitions))


def classify_exception(e: BaseException) -> str:
    """The verdict cause of an exception that ended a run (harness/checkers/verdict.py CAUSES)."""
    if isinstance(e, KeyboardInterrupt):
        return "aborted"
    if isinstance(e, OSError) and e.errno == errno.ENOSPC:
        return "disk-full"
    mod = type(e).__module__ or ""
    if mod.startswith(("docker.", "requests.", "urllib3.")):
        return "docker-error"
    if isinstance(e, HarnessError):
        return getattr(e, "cause", None) or "environment"
    if mod.startswith(("kazoo.", "confluent_kafka")):
        return "environment"
    return "harness-crash"


def _script_line(e: BaseException) -> str:
    """Where in a scenario script (or the harness code it called) the exception was raised."""
    frames = traceback.extract_tb(e.__traceback__)
    mine = [f for f in frames if "/suites/" in f.filename or "/scenarios/" in f.filename] or frames
    f = mine[-1] if mine else None
    return f"{Path(f.filename).name}:{f.lineno} in {f.name}" if f else "unknown line"


def execute(run: Scenario | RunRequest, *, kafka_version: str | None = None, image: str | None = None,
            distribution=None, profile: str | None = None, **kw) -> RunOutcome:
    """Run one scenario on a fresh cluster and publish its run record. ``run``: a :class:`RunRequest`
    (what a command resolved), or a scenario that is resolved here, once, with ``kafka_version``,
    ``image``, ``distribution`` and ``profile`` (:func:`harness.request.prepare`); other keywords: :func:`steps`."""
    if not isinstance(run, RunRequest):
        run = prepare(run, kafka_version=kafka_version, image=image, distribution=distribution, profile=profile)
    return drive(steps(run, **kw), run.scenario.script or run_scheduled)


def drive(run, script) -> RunOutcome:
    """Run ``script(ctx)`` at the yield of ``run`` (a :func:`steps` generator) and return its outcome.
    An exception of the script goes into the run where the script would have raised it; one that
    is not the runner's to judge (``BaseException`` other than Ctrl-C) is recorded and raised again."""
    try:
        ctx = next(run)
    except StopIteration as stop:           # the run ended before the script (the cluster did not start)
        return stop.value
    return finish(run, script, ctx)


def finish(run, script, ctx) -> RunOutcome:
    """The second half of :func:`drive`: ``script(ctx)``, then the rest of ``run`` (heal, drain, judge)."""
    try:
        script(ctx)
    except (Exception, KeyboardInterrupt) as e:
        return resume(run, e)
    except BaseException as e:              # e.g. pytest's fail/skip: record it, then let it go on
        resume(run, ExpectationFailed(f"{type(e).__name__}: {e}"))
        raise
    return resume(run, None)


def resume(run, error: BaseException | None) -> RunOutcome:
    """Go on with ``run`` after its yield: with the script's ``error`` (thrown in where the script ran) or
    none; returns the outcome."""
    try:
        if error is None:
            run.send(None)
        else:
            run.throw(error)
    except StopIteration as stop:
        return stop.value
    raise HarnessError("the run yielded twice")  # pragma: no cover - steps() yields once


def steps(run: RunRequest, *, runs_dir: str | Path = "runs", suite: str = "adhoc", seed: int = 0,
          broker_config: dict | None = None, schedule: Schedule | None = None, replay_of: str | None = None,
          cluster_name: str | None = None, keep_cluster: bool = False):
    """One run as a generator: it yields the :class:`RunContext` once, when the script is to run
    (faults.start), and returns the :class:`RunOutcome` (``StopIteration.value``) after healing,
    draining and judging. Drive it with :func:`drive`; an exception of the script is thrown into it
    at the yield. When the cluster does not start it returns without yielding.

    ``run``: the scenario, image, distribution adapter and profile a command resolved once
    (:mod:`harness.request`); the adapter names how the run observes the control plane
    (harness/observer/source.py: ZooKeeper watch + transaction log for ``apache-zk``, the Kafka protocol
    for ``apache-kraft`` and ``generic``, docs/kraft.md) and the default profile it is judged with.

    ``schedule``: the fault schedule to run (a replay passes the stored one); by default a scenario
    with a ``fault_mix`` generates it from ``seed``. ``replay_of``: the run id being replayed.
    ``cluster_name``: the cluster's name (default: :func:`run_cluster_name` of the run id);
    ``keep_cluster``: leave it running afterwards (like ``cluster up``: ``kafka-chaos cluster down`` removes it).
    """

    t0 = time.monotonic()
    scenario, info, dist = run.scenario, run.image, run.distribution
    if run.not_applicable:
        raise HarnessError(f"{scenario.name} does not apply to {info.tag} ({dist.name}): {run.not_applicable}")
    cfg = dict(scenario.broker_config, **(broker_config or {}))
    if schedule is None and scenario.fault_mix is not None:
        schedule = generate_schedule(seed, scenario.fault_mix, dist.roles)
    if schedule is not None:
        scenario = scenario.covering(schedule)
    security = Security.parse(scenario.security, "security") if scenario.security else None
    rec = RunRecorder(runs_dir, scenario.name, on_open=mark_record_dir, metadata={
        "suite": suite, "harness_version": __version__, "git_sha": _git_sha(),
        "kafka_version": info.kafka_version, "broker_image": info.tag, "image_id": info.image_id,
        "distribution": dist.name, "controller_model": dist.controller_model, "profile": run.profile,
        "broker_config": dict(cfg),   # the overrides asked for; replaced by the full applied config at start
        "cluster": {"brokers": scenario.brokers, "zookeepers": scenario.zookeepers if "zookeeper" in dist.roles else 0},
        "topics": [t.to_dict() for t in scenario.topics], "workload": None, "seed": seed,
        "schedule": schedule.to_json() if schedule is not None else [], "fault_mix": scenario.fault_mix,
        "host": host_facts(), "replay_of": replay_of, "description": scenario.description,
        "variant": scenario.variant,
        # the feature levels the storage was formatted with (the finalized ones, ``features``, are read from
        # the metadata log when the run ends: harness/observer/source.py)
        **({"features_requested": dict(scenario.features)} if scenario.features else {}),
        # the client-facing listener, without secrets (the cluster's own description replaces it at start)
        "security": (security or Security()).describe(),
        "tags": list(scenario.tags), "checks": list(scenario.checks), "record": {"end_marker": True}})
    cluster = view = nemesis = workload = docker_events = None
    obs = observation.for_distribution(dist)    # how this distribution's control plane is seen
    healed_clean = False
    script_error = None
    env_error = None
    env_cause = None
    interrupted = False
    ctx = None
    try:
        cluster = Cluster(ClusterSpec(brokers=scenario.brokers, zookeepers=scenario.zookeepers, image=info.tag,
                                      broker_config=cfg, name=cluster_name or run_cluster_name(rec.run_id[-6:]), distribution=dist,
                                      persistent=keep_cluster, security=security, features=dict(scenario.features)))
        cluster.start()
        rec.update_metadata(broker_config=cluster.broker_config, cluster_name=cluster.name,
                            security=cluster.security.describe())
        check_client_access(cluster)     # refused credentials, an untrusted certificate: one line, no fault
        rec.phase("cluster.ready")
        docker_events = None if cluster.is_remote else _watch_docker(cluster, rec)
        view = obs.start(cluster, rec, [t.name for t in scenario.topics], scenario.max_duration_s)
        nemesis = Nemesis(cluster, rec, view, random.Random(seed))
        ctx = RunContext(cluster, rec, view, nemesis, scenario, seed, schedule)
        for t in scenario.topics:
            ctx.action("create_topic", lambda t=t: cluster.create_topic(
                t.name, t.partitions, t.replication_factor, t.config, assignment=t.assignment), **t.to_dict())
        for t in scenario.topics:
            ctx.wait_until(f"{t.name}: full ISR after creation", lambda t=t: _full_isr(view, t), 60)
        if scenario.workload:
            rec.phase("groups.ready", **group_coordinator.settle(cluster))    # before any fault (its docstring)
            workload = make_workload(cluster.client_config(),
                                     {"duration_s": scenario.max_duration_s, **scenario.workload}, rec.emit,
                                     cluster=cluster)
            rec.update_metadata(workload=workload.config.to_metadata())
            workload.start()
            nemesis.workload = workload          # the client_crash fault's handle
            rec.update_metadata(coverage_needs=scenario.coverage)
            # acknowledged writes before the first fault: a client fault on a producer still fetching its
            # producer id would stall every partition, not just the faulted one
            if not workload.wait_acknowledged(min(20, max(1, len(workload.producers) * 10)), timeout_s=60):
                raise HarnessError("the workload got no acknowledged write within 60 s of starting; the cluster "
                                   "is not serving clients")
        rec.phase("faults.start")
        try:
            yield ctx        # the script runs here (drive(): scenario.script; the pytest plugin: a test)
        except ExpectationFailed as e:
            script_error = str(e)
            rec.phase("script.failed", kind="expectation", error=script_error)
        except Exception as e:
            if classify_exception(e) != "harness-crash":
                raise                      # Docker, ZooKeeper, the cluster: the environment
            traceback.print_exc()
            rec.phase("script.failed", kind="error", error=f"{type(e).__name__}: {e} ({_script_line(e)})")
        finally:
            healed_clean = not nemesis.heal_all()  # records phase faults.healed with any residue
        if workload is not None:
            workload.stop()
        # after healing every partition must get its full ISR back (progress, spec §8.4 P1/P2) -- unless a
        # container was removed from outside: its replicas cannot rejoin, and the run is UNKNOWN
        # (container-removed) whatever the wait would show
        gone = nemesis.gone() if not healed_clean else []
        if gone:
            rec.phase(PHASE_PROGRESS_NOT_AWAITED, reason=f"{', '.join(gone)} removed by something other than the harness")
        for t in [] if gone else scenario.topics:
            if view.topics() and t.name not in view.topics():
                continue  # deleted by the scenario
            try:
                ctx.wait_until(f"{t.name}: full ISR after healing", lambda t=t: _full_isr(view, t), 60)
            except ExpectationFailed as e:
                script_error = script_error or str(e)
        if workload is not None:
            workload.drain(timeout_s=60)  # records its own drain.start / drain.end phases
    except KeyboardInterrupt:
        interrupted = True
        env_error, env_cause = "aborted (Ctrl-C)", "aborted"
    except HarnessError as e:
        env_error, env_cause = str(e), classify_exception(e)
    except Exception as e:  # docker / kazoo / client failures of the environment, or a harness bug
        env_error, env_cause = f"{type(e).__name__}: {e}", classify_exception(e)
        traceback.print_exc()
    finally:
        shield = Shield("the run's cleanup (heal, remove the cluster, publish the record)").start()
        # heal again unless the heal after the script left nothing (the run went on without faults)
        for closer in (lambda: nemesis and not healed_clean and nemesis.heal_all(), obs.stop,
                       lambda: docker_events and docker_events.stop()):
            try:
                closer()
            except Exception:
                pass
        try:
            if cluster is not None:
                obs.finish(cluster, rec)        # the ground-truth history, where there is one
        except Exception as e:
            rec.emit("phase", name="observer.error", error=f"{type(e).__name__}: {e}")
        remover = _remove_in_background(cluster, rec) if cluster is not None and not keep_cluster else None
    try:
        return _conclude(rec, scenario, ctx, env_error, env_cause, interrupted, workload, t0,
                         logs_saved=remover.logs_saved if remover is not None else None)
    finally:
        if remover is not None:
            remover.join()      # the containers are gone before the caller goes on
        shield.stop()           # raises KeyboardInterrupt for a signal deferred meanwhile


def finalized_features(events: list[dict]) -> dict[str, int] | None:
    """The run's finalized feature levels (metadata.json ``features``) from the metadata log events in
    its record, through the one definition (control_history.feature_levels); None without a metadata
    log (ZooKeeper mode, a log that could not be read)."""
    meta = [e for e in events if str(e.get("type", "")).startswith("meta.")]
    return feature_levels(from_metadata_events(meta)) if meta else None


def _watch_docker(cluster: Cluster, rec: RunRecorder):
    """Docker's own events for the cluster's containers, into the record (None when the engine does not
    stream them: the verdict then cannot tell outside stops from faults, and the record says so)."""
    try:
        return DockerEventWatcher(docker_util.client(), cluster.name, rec.emit).start()
    except Exception as e:  # noqa: BLE001
        rec.phase("observer.error", error=f"docker events: {type(e).__name__}: {e}")
        return None


def _remove_in_background(cluster: Cluster, rec: RunRecorder) -> threading.Thread:
    """Save the containers' logs into the record (harness/cluster/container_logs.py), then remove the
    containers, while the run is judged (nothing else reads them any more). The thread's
    ``logs_saved`` event is set once the logs are in the record (or could not be saved)."""
    logs_saved = threading.Event()

    def remove() -> None:
        try:
            rec.update_metadata(container_logs=container_logs.save_cluster(cluster, rec.write_artifact))
        except Exception as e:  # noqa: BLE001 - evidence is optional; the run goes on
            rec.update_metadata(container_logs=[{"error": f"{type(e).__name__}: {e}"[:300]}])
        finally:
            logs_saved.set()
        try:
            cluster.remove()
        except Exception as e:  # noqa: BLE001 - orphans are reaped by the next start or `cleanup`
            _say(f"(could not remove cluster {cluster.name}: {type(e).__name__}: {e}; `kafka-chaos cleanup`)")
    t = threading.Thread(target=remove, name=f"remove-{cluster.name}")
    t.logs_saved = logs_saved
    t.start()
    return t


def _conclude(rec: RunRecorder, scenario: Scenario, ctx, env_error, env_cause, interrupted: bool,
              workload, t0: float, logs_saved: threading.Event | None = None) -> RunOutcome:
    """Judge the recorded run (harness/checkers/verdict.py) and publish its record (once the
    containers' logs are in it: ``logs_saved``, bounded)."""
    if env_error:
        rec.emit("phase", name="aborted" if interrupted else "environment.error", error=env_error,
                 cause=env_cause or "environment")
    rec.phase("run.end")                  # the record is complete up to here (verdict.record_complete)
    events = rec.read_events()
    try:
        levels = finalized_features(events)
    except (KeyError, TypeError, ValueError) as e:     # a malformed meta event: the record says so, no levels
        levels = None
        rec.update_metadata(features_error=f"{type(e).__name__}: {e}"[:300])
    if levels is not None:                # before judging: a checker may read the run's levels
        rec.update_metadata(features=levels)
    try:
        v = decide(events, rec.metadata)
        verdict, reason, cause, checks = v.verdict, v.reason, v.cause, v.checks
        extra = {"coverage": v.coverage} if v.coverage is not None else None
    except Exception as e:  # a checker bug must not lose the record: publish it as UNKNOWN
        traceback.print_exc()
        verdict, reason, cause = "UNKNOWN", f"checker error: {type(e).__name__}: {e}", "checker-error"
        extra = None
        checks = {"expectations": {"verdict": "UNKNOWN", "items": ctx.expectations if ctx else []}}
    stats = {"seconds": round(time.monotonic() - t0, 1), "events": len(events)}
    if workload is not None:
        stats["workload"] = workload.stats()
    if logs_saved is not None and not logs_saved.wait(LOGS_WAIT_S):
        rec.update_metadata(container_logs=[{"error": f"not saved within {LOGS_WAIT_S:.0f} s"}])
    path = rec.finish(verdict, reason, checks, stats, cause=cause, extra=extra)
    if interrupted:
        raise KeyboardInterrupt
    return RunOutcome(scenario.name, path, verdict, reason, time.monotonic() - t0, cause)
