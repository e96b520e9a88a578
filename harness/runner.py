"""Execute scenarios and write one run record each; the ``kafka-chaos run`` command.

Verdicts: PASS when every check the scenario names passes; FAIL when a check found the broker
misbehaving; UNKNOWN when the environment failed (cluster did not start, Docker died, Ctrl-C).
"""

from __future__ import annotations

import argparse
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

from . import __version__, docker_util, images
from .checkers.verdict import decide
from .cluster import Cluster, ClusterSpec
from .errors import HarnessError
from .options import config_args, config_pairs
from .record import RunRecorder
from .scenario import ExpectationFailed, RunContext, Scenario, run_scheduled
from .schedule import Schedule, generate_schedule

ZK_LOG_DIR = "/var/lib/zookeeper/version-2"


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


# -- the ZooKeeper transaction log: ground truth of every controller write ---------------------
def read_zk_history(cluster):
    """The most complete transaction-log history among the ZooKeeper nodes (None if unreadable)."""
    from .observer.txn_events import history_from_txnlog
    from .observer.txnlog import read_txnlog_blobs
    best = None
    for zk in cluster.zookeepers:
        try:
            names = [n for n in zk.list_dir(ZK_LOG_DIR) if n.startswith("log.")]
            if not names:
                continue
            hist = history_from_txnlog(read_txnlog_blobs({n: zk.read_file(f"{ZK_LOG_DIR}/{n}") for n in names}))
        except Exception as e:  # a node's log may be unreadable after a fault; try the others
            _say(f"  (txn log of {zk.name} unreadable: {e})")
            continue
        key = (hist.complete, len(hist.events))
        if best is None or key > best[0]:
            best = (key, hist)
    return best[1] if best else None


def _full_isr(view, topic) -> bool:
    """Every partition of ``topic`` (a TopicSpec) has all its replicas in the ISR (read now: ZooKeeper, or
    a Metadata answer without ZooKeeper)."""
    return all(len(view.isr(topic.name, p, fresh=True)) == topic.replication_factor
               for p in range(topic.partitions))


def judge(events: list[dict], metadata: dict, scenario: Scenario, expectations: list[dict] | None,
          script_error: str | None) -> tuple[str, str, dict]:
    """(verdict, reason, checks) of a run's events: :func:`harness.checkers.verdict.decide` with the
    scenario's checks (kept for callers that re-judge modified copies of a record)."""
    v = decide(events, metadata, checks=scenario.checks, expectations=expectations, script_error=script_error)
    return v.verdict, v.reason, v.checks


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


def execute(scenario: Scenario, *, runs_dir: str | Path = "runs", image: str | None = None,
            kafka_version: str | None = None, suite: str = "adhoc", seed: int = 0,
            profile: str | None = None, broker_config: dict | None = None,
            schedule: Schedule | None = None, replay_of: str | None = None,
            distribution: str | None = None) -> RunOutcome:
    """Run one scenario on a fresh cluster and publish its run record.

    ``distribution``: how the cluster runs (harness/distributions.py): ``apache-zk`` (default) is
    observed through ZooKeeper (watcher + transaction log); a cluster without ZooKeeper
    (``apache-kraft``, ``generic``) through the Kafka protocol only (docs/kraft.md), judged with a
    KRaft profile.

    ``schedule``: the fault schedule to run (a replay passes the stored one); by default a scenario
    with a ``fault_mix`` generates it from ``seed``. ``replay_of``: the run id being replayed.
    """
    from . import distributions
    from .nemesis import Nemesis
    from .observer.admin_sampler import AdminSampler
    from .observer.protocol_sampler import ProtocolSampler
    from .observer.protocol_view import ProtocolView
    from .observer.reconcile import emit_reconciled, reconcile
    from .observer.zk_watcher import ZkWatcher
    from .workload import Workload, WorkloadConfig

    t0 = time.monotonic()
    info = images.image_for(kafka_version, image)
    cfg = dict(scenario.broker_config, **(broker_config or {}))
    dist = distributions.get(distribution)
    why = scenario.not_applicable(info.kafka_version, dist.has_zookeeper)
    if why:
        raise HarnessError(f"{scenario.name} does not apply to {info.tag} ({dist.name}): {why}")
    series = '.'.join(info.kafka_version.split('.')[:2]) if info.kafka_version else None
    default_profile = "compatible" if series is None else (
        f"apache-zk-{series}" if dist.has_zookeeper else f"kraft-{series}")
    if schedule is None and scenario.fault_mix is not None:
        schedule = generate_schedule(seed, scenario.fault_mix)
    if schedule is not None:
        scenario = scenario.covering(schedule)
    rec = RunRecorder(runs_dir, scenario.name, metadata={
        "suite": suite, "harness_version": __version__, "git_sha": _git_sha(),
        "kafka_version": info.kafka_version, "broker_image": info.tag, "image_id": info.image_id,
        "distribution": dist.name, "profile": profile or default_profile,
        "broker_config": dict(cfg),   # the overrides asked for; replaced by the full applied config at start
        "cluster": {"brokers": scenario.brokers, "zookeepers": scenario.zookeepers if dist.has_zookeeper else 0},
        "topics": [t.to_dict() for t in scenario.topics], "workload": None, "seed": seed,
        "schedule": schedule.to_json() if schedule is not None else [], "fault_mix": scenario.fault_mix,
        "host": host_facts(), "replay_of": replay_of, "description": scenario.description,
        "tags": list(scenario.tags), "checks": list(scenario.checks), "record": {"end_marker": True}})
    cluster = watcher = view = sampler = nemesis = workload = docker_events = None
    healed_clean = False
    script_error = None
    env_error = None
    env_cause = None
    interrupted = False
    ctx = None
    try:
        cluster = Cluster(ClusterSpec(brokers=scenario.brokers, zookeepers=scenario.zookeepers, image=info.tag,
                                      broker_config=cfg, name=f"r{rec.run_id[-6:]}", distribution=dist.name))
        cluster.start()
        rec.update_metadata(broker_config=cluster.broker_config, cluster_name=cluster.name)
        rec.phase("cluster.ready")
        docker_events = _watch_docker(cluster, rec)
        if dist.has_zookeeper:
            view = watcher = ZkWatcher(cluster.zookeeper_connect, emit=rec.emit).start()
            sampler = AdminSampler(cluster.bootstrap_servers, emit=rec.emit, interval=1.0,
                                   duration=scenario.max_duration_s + 180,
                                   topics=[t.name for t in scenario.topics]).start()
        else:  # no ZooKeeper: the protocol is the only window (leader epochs, the quorum)
            view = ProtocolView(cluster)
            sampler = ProtocolSampler.for_cluster(cluster, emit=rec.emit, interval=0.5,
                                                  duration=scenario.max_duration_s + 300,
                                                  topics=[t.name for t in scenario.topics]).start()
        nemesis = Nemesis(cluster, rec, view, random.Random(seed))
        ctx = RunContext(cluster, rec, view, nemesis, scenario, seed, schedule)
        for t in scenario.topics:
            ctx.action("create_topic", lambda t=t: cluster.create_topic(
                t.name, t.partitions, t.replication_factor, t.config, assignment=t.assignment), **t.to_dict())
        for t in scenario.topics:
            ctx.wait_until(f"{t.name}: full ISR after creation", lambda t=t: _full_isr(view, t), 60)
        if scenario.workload:
            wcfg = WorkloadConfig(**{"duration_s": scenario.max_duration_s, **scenario.workload})
            rec.update_metadata(workload=wcfg.to_metadata())
            workload = Workload(cluster.bootstrap_servers, wcfg, rec.emit).start()
            # acknowledged writes before the first fault: a client fault on a producer still fetching its
            # producer id would stall every partition, not just the faulted one
            if not workload.wait_acknowledged(min(20, max(1, len(workload.producers) * 10)), timeout_s=60):
                raise HarnessError("the workload got no acknowledged write within 60 s of starting; the cluster "
                                   "is not serving clients")
        rec.phase("faults.start")
        try:
            (scenario.script or run_scheduled)(ctx)
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
        # after healing every partition must get its full ISR back (progress, spec §8.4 P1/P2)
        for t in scenario.topics:
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
        # heal again unless the heal after the script left nothing (the run went on without faults)
        for closer in (lambda: nemesis and not healed_clean and nemesis.heal_all(), lambda: sampler and sampler.stop(),
                       lambda: watcher and watcher.stop(), lambda: docker_events and docker_events.stop()):
            try:
                closer()
            except Exception:
                pass
        try:
            if cluster is not None and cluster.started and watcher is not None:
                hist = read_zk_history(cluster)
                if hist is not None:
                    r = reconcile(list(watcher.events), hist)
                    emit_reconciled(rec.emit, r)
                    rec.update_metadata(observer=r.report())
        except Exception as e:
            rec.emit("phase", name="observer.error", error=f"{type(e).__name__}: {e}")
        remover = _remove_in_background(cluster) if cluster is not None else None
    try:
        return _conclude(rec, scenario, ctx, env_error, env_cause, interrupted, workload, t0)
    finally:
        if remover is not None:
            remover.join()      # the containers are gone before the caller goes on


def _watch_docker(cluster: Cluster, rec: RunRecorder):
    """Docker's own events for the cluster's containers, into the record (None when the engine does not
    stream them: the verdict then cannot tell outside stops from faults, and the record says so)."""
    from .observer.docker_events import DockerEventWatcher
    try:
        return DockerEventWatcher(docker_util.client(), cluster.name, rec.emit).start()
    except Exception as e:  # noqa: BLE001
        rec.phase("observer.error", error=f"docker events: {type(e).__name__}: {e}")
        return None


def _remove_in_background(cluster: Cluster) -> threading.Thread:
    """Remove the cluster's containers while the run is judged (nothing reads them any more)."""
    def remove() -> None:
        try:
            cluster.remove()
        except Exception as e:  # noqa: BLE001 - orphans are reaped by the next start or `cleanup`
            _say(f"(could not remove cluster {cluster.name}: {type(e).__name__}: {e}; `kafka-chaos cleanup`)")
    t = threading.Thread(target=remove, name=f"remove-{cluster.name}")
    t.start()
    return t


def _conclude(rec: RunRecorder, scenario: Scenario, ctx, env_error, env_cause, interrupted: bool,
              workload, t0: float) -> RunOutcome:
    """Judge the recorded run (harness/checkers/verdict.py) and publish its record."""
    if env_error:
        rec.emit("phase", name="aborted" if interrupted else "environment.error", error=env_error,
                 cause=env_cause or "environment")
    rec.phase("run.end")                  # the record is complete up to here (verdict.record_complete)
    events = rec.read_events()
    try:
        v = decide(events, rec.metadata)
        verdict, reason, cause, checks = v.verdict, v.reason, v.cause, v.checks
    except Exception as e:  # a checker bug must not lose the record: publish it as UNKNOWN
        traceback.print_exc()
        verdict, reason, cause = "UNKNOWN", f"checker error: {type(e).__name__}: {e}", "checker-error"
        checks = {"expectations": {"verdict": "UNKNOWN", "items": ctx.expectations if ctx else []}}
    stats = {"seconds": round(time.monotonic() - t0, 1), "events": len(events)}
    if workload is not None:
        stats["workload"] = workload.stats()
    path = rec.finish(verdict, reason, checks, stats, cause=cause)
    if interrupted:
        raise KeyboardInterrupt
    return RunOutcome(scenario.name, path, verdict, reason, time.monotonic() - t0, cause)


# -- command line ------------------------------------------------------------------------------
def add_parser(sub) -> None:
    r = sub.add_parser("run", help="run a suite or scenario on fresh clusters, one run record each",
                       description="Run a suite (smoke, conformance, chaos, nightly), a family or one scenario; "
                                   "or replay a recorded run with --replay RUN_DIR. Exit codes: 0 every verdict "
                                   "PASS, 1 a check failed, 2 usage or environment error (UNKNOWN).")
    r.add_argument("target", metavar="SUITE_OR_SCENARIO", nargs="?",
                   help="a suite (smoke, conformance, chaos, nightly), a family or a scenario name; `list` lists "
                        "them (optional with --replay)")
    r.add_argument("--runs-dir", default="runs", help="where run records go (default ./runs)")
    r.add_argument("--seed", type=int, default=None,
                   help="run seed (default 0): random targets and generated fault schedules derive from it; "
                        "repeat i uses seed + i")
    r.add_argument("--repeat", type=int, default=1)
    r.add_argument("--parallel", type=int, default=1, metavar="N",
                   help="run N scenarios at a time, each in its own process and cluster (default 1)")
    r.add_argument("--suite", help=argparse.SUPPRESS)  # set by --parallel for its child processes
    r.add_argument("--length", type=float, metavar="SECONDS",
                   help="seconds of faults for scenarios with a random fault schedule (nightly.*)")
    r.add_argument("--shard", metavar="I/N",
                   help="run only shard I of N: a deterministic slice balanced by expected durations "
                        "(suites/durations.json), so N CI jobs cover the suite exactly once")
    r.add_argument("--replay", metavar="RUN_DIR",
                   help="re-run a recorded run: its scenario, seed, stored fault schedule, image and broker config")
    g = r.add_mutually_exclusive_group()
    g.add_argument("--kafka-version", metavar="V")
    g.add_argument("--broker-image", metavar="IMG")
    r.add_argument("--distribution", choices=["apache-zk", "apache-kraft", "generic"], default=None,
                   help="apache-zk (default: ZooKeeper mode, observed through ZooKeeper), apache-kraft (KRaft, "
                        "observed through the Kafka protocol) or generic (a foreign image configured by KAFKA_* "
                        "variables; the default for an image not built here); scenarios that need ZooKeeper "
                        "are skipped without it")
    r.add_argument("--profile", help="conformance profile (default: apache-zk-<version>, kraft-<version> on KRaft, "
                                     "or compatible)")
    r.add_argument("--config", action="append", metavar="KEY=VALUE",
                   help="broker config override on top of each scenario's own (repeatable); the run is judged "
                        "against the configuration it ran with")
    r.set_defaults(func=cmd_run)


def _run_many(jobs: list[tuple[Scenario, dict]], runs_dir: str) -> int:
    """Execute (scenario, execute-kwargs) jobs in order with a progress line each; the exit code."""
    outcomes: list[RunOutcome] = []
    for n, (s, kw) in enumerate(jobs, 1):
        _say(f"[{n}/{len(jobs)}] {s.name}: running ...")
        o = execute(s, runs_dir=runs_dir, **kw)
        outcomes.append(o)
        what = f"{o.verdict}({o.cause})" if o.cause else o.verdict
        _say(f"[{n}/{len(jobs)}] {s.name}: {what} in {o.seconds:.0f} s — {o.reason}  ({o.path})")
    passed = sum(o.verdict == "PASS" for o in outcomes)
    _say(f"{passed}/{len(outcomes)} PASS; run records under {runs_dir}/")
    if any(o.verdict == "UNKNOWN" for o in outcomes) and not any(o.verdict == "FAIL" for o in outcomes):
        return 2
    return 0 if passed == len(outcomes) else 1


def _replay_jobs(args) -> list[tuple[Scenario, dict]]:
    from suites.catalog import scenarios_for

    from .replay import plan_replay
    plan = plan_replay(args.replay)
    if args.target and args.target != plan.scenario:
        raise HarnessError(f"--replay {args.replay} is a run of {plan.scenario!r}, not {args.target!r}; "
                           "leave SUITE_OR_SCENARIO out")
    if args.seed is not None or args.length is not None:
        raise HarnessError("--seed and --length cannot be combined with --replay: the recorded seed and "
                           "schedule are used")
    if args.config:
        raise HarnessError("--config cannot be combined with --replay: the recorded broker configuration is used")
    found = [s for s in scenarios_for(plan.scenario) if s.name == plan.scenario]
    if not found:
        raise HarnessError(f"--replay {args.replay}: scenario {plan.scenario!r} is not in this harness version "
                           "(`kafka-chaos run list`)")
    if args.kafka_version or args.broker_image:   # replay the same schedule against another broker
        info = images.image_for(args.kafka_version, args.broker_image, build_missing=False)
        profile = args.profile
    elif plan.broker_image and images.find_image(plan.broker_image) is not None:
        info, profile = images.image_for(None, plan.broker_image), args.profile or plan.profile
    elif plan.kafka_version:
        info, profile = images.image_for(plan.kafka_version, None, build_missing=True), args.profile or plan.profile
    else:
        what = f"the recorded image {plan.broker_image!r} is not here" if plan.broker_image else "the record names no image"
        raise HarnessError(f"--replay {args.replay}: {what} and no Kafka version; pass --broker-image")
    _say(f"replaying {plan.run_id}: {plan.scenario}, seed {plan.seed}, {len(plan.schedule)} scheduled fault(s), "
         f"image {info.tag}")
    kw = dict(image=info.tag, suite=plan.suite, seed=plan.seed, profile=profile, broker_config=plan.broker_config,
              schedule=plan.schedule, replay_of=plan.run_id, distribution=args.distribution or plan.distribution)
    return [(found[0], kw)] * args.repeat


def cmd_run(args) -> int:
    from suites.catalog import SUITES, scenarios_for
    if args.repeat < 1:
        raise HarnessError("--repeat must be at least 1")
    if args.parallel < 1:
        raise HarnessError("--parallel must be at least 1")
    if args.shard:
        from .shard import parse_shard
        parse_shard(args.shard)          # a malformed value is a usage error before any Docker work
    if args.replay:
        if args.shard:
            raise HarnessError("--shard cannot be combined with --replay")
        if args.parallel > 1:
            _say("(--parallel is not used with --replay: replays run one at a time)")
        return _run_many(_replay_jobs(args), args.runs_dir)
    if not args.target:
        raise HarnessError("name a suite or scenario (`kafka-chaos run list`), or give --replay RUN_DIR")
    if args.target == "list":
        for s in scenarios_for("all"):
            print(f"{s.name:45} {','.join(s.tags):28} {s.description}")
        return 0
    overrides = config_pairs(args.config)
    chosen = scenarios_for(args.target)
    if not chosen:
        raise HarnessError(f"no suite or scenario named {args.target!r} (try `kafka-chaos run list`)")
    info = images.image_for(args.kafka_version, args.broker_image, build_missing=args.kafka_version is None
                            and args.broker_image is None)
    if args.distribution is None and info.distribution == "generic":
        args.distribution = "generic"          # an image not built here runs no other way
    suite = args.suite or (args.target if args.target in SUITES else "adhoc")
    seed = args.seed or 0
    if args.length is not None:
        chosen = [s.with_length(args.length) for s in chosen]
    from . import distributions
    zk = distributions.get(args.distribution).has_zookeeper
    skipped = [(s.name, s.not_applicable(info.kafka_version, zk)) for s in chosen]
    skipped = [(n, why) for n, why in skipped if why]
    for n, why in skipped:
        _say(f"skipped {n}: {why}")
    chosen = [s for s in chosen if not s.not_applicable(info.kafka_version, zk)]
    if not chosen:
        raise HarnessError(f"no scenario of {args.target!r} applies to {info.tag}"
                           f"{'' if zk else ' on ' + str(args.distribution)}")
    if args.shard:
        from .shard import select
        mine = set(select([s.name for s in chosen], args.shard))
        _say(f"shard {args.shard}: {len(mine)} of {len(chosen)} scenario(s)")
        chosen = [s for s in chosen if s.name in mine]
        if not chosen:
            return 0
    if args.parallel > 1 and len(chosen) * args.repeat > 1:
        from .parallel import Job, run_parallel
        extra = (["--profile", args.profile] if args.profile else []) + (
            ["--distribution", args.distribution] if args.distribution else []) + (
            ["--length", str(args.length)] if args.length is not None else []) + config_args(overrides)
        pjobs = [Job(s.name, [s.name, "--seed", str(seed + i), "--broker-image", info.tag, "--runs-dir",
                              args.runs_dir, "--suite", suite, *extra])
                 for i in range(args.repeat) for s in chosen]
        return run_parallel(pjobs, args.parallel, args.runs_dir)
    jobs = [(s, dict(image=info.tag, suite=suite, seed=seed + i, profile=args.profile,
                     distribution=args.distribution, broker_config=overrides or None))
            for i in range(args.repeat) for s in chosen]
    return _run_many(jobs, args.runs_dir)
