"""The ``kafka-chaos run`` command: pick scenarios from the suite catalog, run them (one at a time, in
parallel child processes, or one shard of the suite), print a line per run and exit with the verdicts'
code. Running one scenario is :func:`harness.runner.execute`; this module sits on top of it and of
:mod:`suites.catalog`.
"""

from __future__ import annotations

import argparse
import os
import sys

from suites.catalog import SCENARIOS, SUITES, scenarios_for

from harness import distributions, images
from harness.errors import EXIT_FAIL, EXIT_OK, EXIT_UNKNOWN, HarnessError
from harness.options import (add_distribution_args, add_nodes_arg, add_security_arg, check_runs_dir, check_security,
                             config_args, config_pairs, did_you_mean, feature_pairs)
from harness.parallel import GATE_ENV, Job, run_parallel
from harness.commands import plan as planning
from harness.commands.replay import plan_replay
from harness.request import RunRequest, check_profile, resolve_broker
from harness.runner import RunOutcome, execute
from harness.shard import parse_shard, select
from harness.record.storage import Publisher


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def add_parser(sub) -> None:
    r = sub.add_parser("run", help="run a suite or scenario on fresh clusters, one run record each",
                       description="Run a suite (smoke, conformance, chaos, nightly), a family or one scenario; "
                                   "or replay a recorded run with --replay RUN_DIR. Exit codes: 0 every verdict "
                                   "PASS, 1 a check failed, 2 usage error, 3 incompatible, 4 a verdict UNKNOWN "
                                   "(nothing FAILed), 5 environment error, 130 interrupted (docs/cli.md).")
    r.add_argument("target", metavar="SUITE_OR_SCENARIO", nargs="?",
                   help="a suite (smoke, conformance, chaos, nightly), a family, a scenario name or a scenario file "
                        "(PATH.toml, docs/scenario-files.md); `list` lists them (optional with --replay)")
    r.add_argument("--runs-dir", default="runs",
                   help="where run records go (default ./runs); s3://BUCKET/PREFIX: recorded locally, then "
                        "published to object storage (docs/fleet.md)")
    r.add_argument("--s3-endpoint", metavar="URL", help="S3-compatible endpoint for an s3:// --runs-dir "
                                                         "(default: $AWS_ENDPOINT_URL, else AWS)")
    r.add_argument("--seed", type=int, default=None,
                   help="run seed (default 0): random targets and generated fault schedules derive from it; "
                        "repeat i uses seed + i")
    r.add_argument("--repeat", type=int, default=1)
    r.add_argument("--parallel", type=int, default=1, metavar="N",
                   help="run N scenarios at a time, each in its own process and cluster (default 1)")
    r.add_argument("--suite", help=argparse.SUPPRESS)  # set by --parallel for its child processes
    # set by a parent (run --parallel, certify --parallel) that ran the distribution file's preflight once
    # already: a child does not start a cluster of its own to check the same contract again
    r.add_argument("--preflight-passed", action="store_true", help=argparse.SUPPRESS)
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
    add_distribution_args(r, distributions.CHOICES_HELP + "; generic is the default for an image not built here; "
                        "scenarios that need ZooKeeper are skipped without it")
    r.add_argument("--profile", help="conformance profile (default: kraft-<version> on KRaft, apache-zk-<version> "
                                     "in ZooKeeper mode, or compatible)")
    r.add_argument("--variant", metavar="NAME",
                   help="run each chosen scenario as its variant NAME (e.g. kip848: the consumer groups with "
                        "group.protocol=consumer); scenarios without it are skipped, the run records it")
    r.add_argument("--config", action="append", metavar="KEY=VALUE",
                   help="broker config override on top of each scenario's own (repeatable); the run is judged "
                        "against the configuration it ran with")
    r.add_argument("--feature", action="append", metavar="NAME=LEVEL",
                   help="format the cluster's storage with this feature level (repeatable; e.g. "
                        "transaction.version=1), over each scenario's own [cluster] features; Apache KRaft "
                        "distributions only (docs/kraft.md \"Feature levels\")")
    r.add_argument("--summary-md", metavar="FILE",
                   help="append a Markdown table of the verdicts to FILE (e.g. \"$GITHUB_STEP_SUMMARY\")")
    planning.add_args(r)
    add_security_arg(r)
    add_nodes_arg(r)
    r.set_defaults(func=cmd_run, precheck=precheck)


def precheck(args) -> None:
    """Option values, the runs directory and the target name (with the closest known name when it is
    misspelt), before any Docker work; a scenario file is loaded here, once (``args.scenario_file``)."""
    args.scenario_file = None
    if args.target == "list" and not args.replay:
        return
    if args.length is not None and not args.length > 0:
        raise HarnessError(f"--length must be > 0 seconds, got {args.length:g}")
    if args.seed is not None and args.seed < 0:
        raise HarnessError(f"--seed must be 0 or more, got {args.seed}")
    if args.nodes and args.parallel > 1:
        raise HarnessError("--parallel does not apply to --nodes: the nodes file names one cluster, runs take it in turn")
    if args.nodes and args.config:
        raise HarnessError("--config does not apply to --nodes: the nodes run their own configuration")
    if args.nodes and args.replay:
        raise HarnessError("--replay cannot be combined with --nodes yet: replay the run on its own adapter")
    planning.check_no_plan_conflicts(args, json_alone=True)     # run --json: the verdicts (run_summary.py)
    if not args.plan:              # a plan writes nothing and connects to nothing (an s3:// store)
        check_runs_dir(args.runs_dir, endpoint=args.s3_endpoint)
    check_profile(None, args.profile, args.kafka_version)
    check_security(args)
    args.features = feature_pairs(getattr(args, "feature", None))
    if args.features and args.replay:
        raise HarnessError("--feature cannot be combined with --replay: the recorded feature levels are used")
    if args.target and args.target.endswith(".toml"):
        from harness.scenario.file import load_file     # a scenario file: its errors name file, line and key
        args.scenario_file = load_file(args.target)
    if not args.target or args.replay:
        return
    chosen = [args.scenario_file.scenario] if args.scenario_file else scenarios_for(args.target)
    if not chosen:
        names = [*SUITES, "all", "list", *(s.family for s in SCENARIOS), *(s.name for s in SCENARIOS)]
        raise HarnessError(f"no suite or scenario named {args.target!r}{did_you_mean(args.target, names)}; "
                           "`kafka-chaos run list` lists them")
    if args.length is not None and not any(s.fault_mix for s in chosen):
        print(f"kafka-chaos: note: --length only changes scenarios with a random fault schedule (nightly.*); "
              f"{args.target!r} has none", file=sys.stderr)


def wait_at_gate() -> bool:
    """A child of ``--parallel`` started ahead (``$KAFKA_CHAOS_START_GATE=stdin``, harness/parallel.py):
    wait, with everything imported and the image resolved, for the parent's "go" on stdin; False when
    the parent closed it instead (interrupted, or gone): nothing is to run. True at once otherwise."""
    if os.environ.get(GATE_ENV) != "stdin":
        return True
    return sys.stdin.readline().strip() == "go"


def _run_many(jobs: list[tuple[RunRequest, dict]], runs_dir: str, endpoint: str | None = None,
              done: list | None = None) -> int:
    """Execute (run request, execute-kwargs) jobs in order with a progress line each; the exit code.
    Each finished record is published to an ``s3://`` runs dir at once (harness/record/storage.py)."""
    if not wait_at_gate():
        _say("not started: the parallel run that started this process ahead ended first")
        return 2
    pub = Publisher(runs_dir, endpoint)
    outcomes: list[RunOutcome] = []
    for n, (req, kw) in enumerate(jobs, 1):
        s = req.scenario
        _say(f"[{n}/{len(jobs)}] {s.label}: running ...")
        o = execute(req, runs_dir=pub.local, **kw)
        outcomes.append(o)
        if done is not None:
            done.append(o.path)
        where = pub.publish(o.path)
        what = f"{o.verdict}({o.cause})" if o.cause else o.verdict
        _say(f"[{n}/{len(jobs)}] {s.label}: {what} in {o.seconds:.0f} s — {o.reason}  ({where})")
    passed = sum(o.verdict == "PASS" for o in outcomes)
    _say(f"{passed}/{len(outcomes)} PASS; run records under {runs_dir}/")
    pub.raise_failed()
    if any(o.verdict == "FAIL" for o in outcomes):
        return EXIT_FAIL
    return EXIT_OK if passed == len(outcomes) else EXIT_UNKNOWN     # ran, undecided (harness/errors.py)


def _replay_jobs(args) -> list[tuple[RunRequest, dict]]:
    plan = plan_replay(args.replay)
    from_file = None
    if args.scenario_file is not None:      # the record of a scenario file: the file again
        from_file = args.scenario_file.scenario
        if from_file.name != plan.scenario:
            raise HarnessError(f"--replay {args.replay} is a run of {plan.scenario!r}; {args.target} describes "
                               f"{from_file.name!r}")
    elif args.target and args.target != plan.scenario:
        raise HarnessError(f"--replay {args.replay} is a run of {plan.scenario!r}, not {args.target!r}; "
                           "leave SUITE_OR_SCENARIO out")
    if args.seed is not None or args.length is not None:
        raise HarnessError("--seed and --length cannot be combined with --replay: the recorded seed and "
                           "schedule are used")
    if args.config:
        raise HarnessError("--config cannot be combined with --replay: the recorded broker configuration is used")
    found = [from_file] if from_file else [s for s in scenarios_for(plan.scenario) if s.name == plan.scenario]
    if not found:
        raise HarnessError(f"--replay {args.replay}: scenario {plan.scenario!r} is not in this harness version "
                           "(`kafka-chaos run list`; a scenario file's run: give the file too, "
                           "`run FILE.toml --replay RUN_DIR`)")
    if args.variant and args.variant != plan.variant:
        raise HarnessError(f"--variant cannot change a replay: {plan.run_id} ran variant {plan.variant!r}")
    found = [found[0].with_variant(plan.variant).with_security(args.security or plan.security)
             .with_features(plan.features)]
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
    asked = args.distribution or args.distribution_file or args.layout
    broker = resolve_broker(image=info.tag, distribution=args.distribution if asked else plan.distribution,
                            distribution_file=args.distribution_file, layout=args.layout, profile=profile)
    _say(f"replaying {plan.run_id}: {plan.scenario}, seed {plan.seed}, {len(plan.schedule)} scheduled fault(s), "
         f"image {info.tag}")
    kw = dict(suite=plan.suite, seed=plan.seed, broker_config=plan.broker_config, schedule=plan.schedule,
              replay_of=plan.run_id)
    return [(broker.request(found[0]), kw)] * args.repeat


def cmd_run(args) -> int:
    """Run, then (``--json`` / ``--summary-md``) say what the records of this invocation decided."""
    done: list = []
    code = _cmd_run(args, done)
    if args.plan or args.target == "list" and not args.replay or not (args.json or args.summary_md):
        return code
    from harness.commands import run_summary
    runs = run_summary.rows(done)
    if args.json:
        print(run_summary.as_json(runs, code))
    if args.summary_md:
        run_summary.write_markdown(args.summary_md, runs, code)
    return code


def _cmd_run(args, done: list) -> int:
    if args.repeat < 1:
        raise HarnessError("--repeat must be at least 1")
    if args.parallel < 1:
        raise HarnessError("--parallel must be at least 1")
    if args.shard:
        parse_shard(args.shard)          # a malformed value is a usage error before any Docker work
    if args.plan:
        return planning.run_plan(args)   # harness/commands/plan.py: touches nothing
    if args.replay:
        if args.shard:
            raise HarnessError("--shard cannot be combined with --replay")
        jobs = _replay_jobs(args)        # a bad record or option is one error line, before any note
        if args.parallel > 1:
            _say("(--parallel is not used with --replay: replays run one at a time)")
        return _run_many(jobs, args.runs_dir, args.s3_endpoint, done)
    if not args.target:
        raise HarnessError("name a suite or scenario (`kafka-chaos run list`), or give --replay RUN_DIR")
    if args.target == "list":
        for s in scenarios_for("all"):
            print(f"{s.name:45} {','.join(s.tags):28} {s.description}")
        return 0
    overrides = config_pairs(args.config)
    sf = args.scenario_file              # a scenario file (docs/scenario-files.md): its [cluster] defaults
    chosen = [sf.scenario] if sf else scenarios_for(args.target)
    if not chosen:
        raise HarnessError(f"no suite or scenario named {args.target!r} (try `kafka-chaos run list`)")
    if args.variant:
        if not any(args.variant in s.variants for s in chosen):
            raise HarnessError(f"no scenario of {args.target!r} has the variant {args.variant!r}")
        for s in chosen:
            if args.variant not in s.variants:
                _say(f"skipped {s.name}: has no variant {args.variant!r}")
        chosen = [s.with_variant(args.variant) for s in chosen if args.variant in s.variants]
    kafka_version, distribution = args.kafka_version, args.distribution
    if sf and not args.distribution_file and not args.nodes:
        if kafka_version is None and args.broker_image is None:
            kafka_version = sf.kafka_version
        distribution = distribution or sf.distribution
    broker = resolve_broker(kafka_version=kafka_version, image=args.broker_image, distribution=distribution,
                            distribution_file=args.distribution_file, layout=args.layout, profile=args.profile,
                            build_missing=kafka_version is None and args.broker_image is None, nodes=args.nodes,
                            check_nodes=False)
    info, dist = broker.image, broker.distribution
    suite = args.suite or (args.target if args.target in SUITES else "adhoc")
    seed = args.seed or 0
    if args.length is not None:
        chosen = [s.with_length(args.length) for s in chosen]
    chosen = [s.with_security(args.security) for s in chosen]     # --security over a file's [cluster] security
    features = getattr(args, "features", None) or {}
    if features:                # asked on the command line: refused at once where the broker cannot take them
        why = dist.features_problem(features, info.kafka_version, overrides)
        if why:
            raise HarnessError(f"--feature: {why}")
        chosen = [s.with_features(features) for s in chosen]     # over a scenario's own [cluster] features
    requests = broker.applicable(chosen, _say)       # each scenario's applicability, decided once
    if not requests:
        raise HarnessError(f"no scenario of {args.target!r} applies to {info.tag}"
                           f" ({dist.name})")
    if args.nodes:       # every host reachable, host keys known, services running: before any run
        from harness.cluster.remote_cluster import check_nodes   # lazy: paramiko
        check_nodes(dist.nodes)
    if dist.needs_preflight and not args.preflight_passed:
        from harness.certify.preflight import EXIT_INCOMPATIBLE, preflight   # lazy: starts a cluster
        pf = preflight(dist, info.tag)
        _say(f"preflight: {pf.verdict} in {pf.seconds:.1f} s: {pf.line}")
        if not pf.ok:
            print(f"INCOMPATIBLE {pf.line}", file=sys.stderr if args.json else sys.stdout)
            return EXIT_INCOMPATIBLE
    if args.shard:
        mine = set(select([r.scenario.name for r in requests], args.shard))
        _say(f"shard {args.shard}: {len(mine)} of {len(requests)} scenario(s)")
        requests = [r for r in requests if r.scenario.name in mine]
        if not requests:
            return 0
    if args.parallel > 1 and len(requests) * args.repeat > 1:
        extra = (["--profile", args.profile] if args.profile else []) + dist.cli_args() + (
            ["--length", str(args.length)] if args.length is not None else []) + config_args(overrides) + (
            ["--variant", args.variant] if args.variant else []) + (
            ["--security", args.security] if args.security else []) + [
            a for k, v in features.items() for a in ("--feature", f"{k}={v}")]
        pub = Publisher(args.runs_dir, args.s3_endpoint)   # children record locally; this process publishes
        before = set(os.listdir(pub.local)) if os.path.isdir(pub.local) else set()
        target = args.target if sf else None     # a file's scenario is the file
        pjobs = [Job(r.scenario.name, [target or r.scenario.name, "--seed", str(seed + i), "--broker-image",
                                       info.tag, "--runs-dir", pub.local, "--suite", suite, *extra])
                 for i in range(args.repeat) for r in requests]
        try:
            return run_parallel(pjobs, args.parallel, pub.local, done)
        finally:
            pub.publish_new(before)
            pub.raise_failed()
    jobs = [(r, dict(suite=suite, seed=seed + i, broker_config=overrides or None))
            for i in range(args.repeat) for r in requests]
    return _run_many(jobs, args.runs_dir, args.s3_endpoint, done)
