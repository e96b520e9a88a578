"""``run --plan`` and ``certify --plan``: what a command would run, where, with which faults, the commands
each fault issues per node and the expected duration — printed (``--json``: as JSON) without touching
anything: no Docker call, no image build or lookup, no connection (not even Maven Central for a Kafka
series), no file written and no run directory created. Exit 0 (a bad scenario file, suite or option
is still one line and exit 2, as without ``--plan``).

The plan is built from what the run itself uses: the scenarios and their applicability
(:class:`harness.request.Broker`, ``certify``'s capability plan), the distribution adapter's nodes
(``node_groups``, ``broker_ids``, ``voter_ids``), each scenario's faults
(:mod:`harness.scenario.script_faults`: a seeded schedule exactly as the run generates it, a scenario
file's steps, a Python script's ``ctx.fault`` calls) and per fault the commands on each node
(:mod:`harness.nemesis.describe`). Only the image is not asked for (Docker is not contacted): the plan
names the tag the run would use. Durations are estimates: docs/cli.md "Plan" says what they are based on.
"""

from __future__ import annotations

import json
import re
import statistics
from types import SimpleNamespace

from harness import images
from harness.distributions.base import DEFAULT, Distribution
from harness.errors import HarnessError, UnknownVersion
from harness.nemesis.catalog import CATALOG
from harness.nemesis.describe import ACCESS, ExampleCluster, PlanNode, fault_commands
from harness.nemesis.targets import TargetError, parse_target
from harness.request import Broker, check_profile
from harness.runner import cluster_prefix
from harness.scenario.script_faults import stated_faults
from harness.shard import known_durations

# Estimates (seconds; docs/cli.md "Plan"): from the cluster's start to the first fault, the median of 82
# conformance runs on a 2-core host (2026-11-28: 17.0 s apache-zk 3.9.2, 15.3 s apache-kraft 4.4.0); after
# the last heal, the ISR wait, drain and verdict; a distribution file's preflight cluster (a guess)
STARTUP_S = 16.0
TAIL_S = 15.0
PREFLIGHT_S = 30.0
RUN = "<run>"                           # the run id's part of a cluster name, known when the run starts
FREE_PORT = "127.0.0.1:<free port>"     # picked at start from 20000-31999 (harness/cluster/host_ports.py)

TARGET_WORDS = {
    "controller": "the active controller", "random-broker": "a random broker (seeded)",
    "random-zk": "a random ZooKeeper node (seeded)", "random-minority": "a random minority of the brokers (seeded)",
    "zookeeper-leader": "the ZooKeeper leader", "all-brokers": "every broker", "all-zk": "every ZooKeeper node",
    "quorum-leader": "the KRaft quorum leader", "quorum-follower": "a quorum follower (seeded)",
    "quorum-followers": "every quorum follower", "quorum-majority": "a majority of the quorum voters",
    "quorum-voters": "every quorum voter", "quorum-observers": "every broker that is no voter",
}


def target_words(target: str) -> str:
    """A target in words (``leader(chaos,0)`` -> the leader of partition 0 of topic chaos)."""
    m = re.fullmatch(r"(broker|zk|service):\{.*\}", target)
    if m:
        return {"broker": "a broker", "zk": "a ZooKeeper node", "service": "a store service"}[m.group(1)] + \
            " the script picks at run time"
    try:
        items = parse_target(target)
    except TargetError:
        return "chosen by the script at run time"
    out = []
    for t in items:
        if t.kind in TARGET_WORDS:
            out.append(TARGET_WORDS[t.kind])
        elif t.kind == "broker":
            out.append(f"broker {t.node_id}")
        elif t.kind == "zk":
            out.append(f"ZooKeeper node {t.node_id}")
        elif t.kind == "service":
            out.append(f"service {t.key}" + (f" node {t.node_id}" if t.node_id is not None else " (every node)"))
        elif t.kind in ("leader", "follower"):
            out.append(f"{'the leader' if t.kind == 'leader' else 'a follower'} of partition {t.partition} of topic {t.topic}")
        else:
            out.append(f"the {'transaction' if t.kind == 'txn-coordinator' else 'group'} coordinator of {t.key}")
    return " and ".join(out)


# -- the broker, resolved without Docker or the network -----------------------------------------------
def _version_offline(requested: str | None, mode: str = images.KRAFT) -> tuple[str | None, str]:
    """(the Kafka version a run would resolve ``requested`` to, how it was found) without asking Maven
    Central: an exact version as given, a series from the version list cached here, else the default of
    ``mode`` (``images.DEFAULT_VERSIONS``)."""
    req = (requested or "latest").strip()
    req = images.default_series(mode) if req == "latest" else req
    if not re.fullmatch(r"\d+(\.\d+){0,2}", req):
        raise UnknownVersion(f"unknown Kafka version {requested!r}: expected a version like 4.4.0 or a series like 4.4 or 4")
    if req.count(".") == 2:
        return req, "as given"
    try:
        cached = json.loads((images.cache_path() / "kafka-versions.json").read_text())
    except (OSError, ValueError):
        cached = []
    found = [v for v in cached if isinstance(v, str) and v.startswith(req + ".")]
    if found:
        return found[-1], f"the newest {req}.x in the version list cached here (the run may find a newer one)"
    offline = dict(images.DEFAULT_VERSIONS.values())     # series -> offline fallback
    if req in offline:
        return offline[req], f"the offline default for {req}.x (the run asks Maven Central)"
    return None, f"the newest {req}.x on Maven Central, found when the run starts"


def plan_broker(*, kafka_version=None, image=None, distribution=None, distribution_file=None, layout=None,
                profile=None, default: str | None = DEFAULT, nodes=None) -> tuple[Broker, str]:
    """:func:`harness.request.resolve_broker` without Docker: (the Broker, a note on the image).
    ``nodes``: a nodes file (``--nodes``): hosts the harness connects to, no image."""
    from harness import distributions
    if nodes:                              # the adapter reads the file; it connects to nothing until a run
        dist = distributions.resolve(distribution, distribution_file, layout, nodes=nodes)
        version = getattr(dist, "kafka_version", None) or kafka_version
        check_profile(dist, profile, version)
        return (Broker(images.ImageInfo("(none: the nodes run their own Kafka)", None, version, "nodes"), dist,
                       profile), f"the nodes file's Kafka {version or '(version not given)'}")
    if distribution_file and kafka_version:
        raise HarnessError("--kafka-version does not apply to --distribution-file: the file names its image "
                           "(--broker-image overrides it)")
    if isinstance(distribution, Distribution):
        dist = distribution
    elif distribution or distribution_file or layout:
        dist = distributions.resolve(distribution, distribution_file, layout)
    else:
        dist = None
    tag = image or (dist.image if dist is not None else None)
    m = re.fullmatch(rf"{re.escape(images.KAFKA_REPO)}:(\d+\.\d+\.\d+)", tag or "")
    if tag and not m:                      # an image not built here: its labels are read when the run starts
        version, note = None, "not looked up (Docker is not contacted); its labels are read when the run starts"
        label = "generic"
    else:
        mode = (dist or distributions.resolve(default)).controller_model if dist or default else images.KRAFT
        version, note = (m.group(1), "as given") if m else _version_offline(kafka_version, mode)
        tag = images.image_tag(version) if version else f"{images.KAFKA_REPO}:<newest {kafka_version}.x>"
        label = images.image_distribution(version or f"{kafka_version}.0")      # a series: its first release
        note = f"Kafka {version or '?'}: {note}; whether it is built is checked when the run starts" + (
            " (built then if missing)" if not image and not kafka_version else "")
    if dist is None:
        name = "generic" if label == "generic" else (default or label)
        dist = distributions.resolve(name)
    dist.fits(version)
    check_profile(dist, profile, version)
    info = images.ImageInfo(tag, None, version, label)
    if version or label != "generic":
        dist.check_image(info)
    return Broker(info, dist, profile), note


def security_of(*sources) -> dict:
    """The listener security of the run, without secrets: the first source that has one."""
    for s in sources:
        if s:
            return s.describe() if hasattr(s, "describe") else {"protocol": str(s)}
    return {"protocol": "PLAINTEXT"}


# -- the nodes of one cluster ---------------------------------------------------------------------------
def cluster_nodes(dist: Distribution, brokers: int, zookeepers: int) -> tuple[str, list[PlanNode], list[int]]:
    """(cluster name, nodes, quorum voter ids) of a run's cluster of this shape: the containers it would
    create, or the hosts of a nodes file (an adapter with ``plan_nodes()``)."""
    if callable(getattr(dist, "plan_nodes", None)):
        nodes = [PlanNode(n.role, n.node_id, n.name, n.alias, str(getattr(n, "endpoint", "") or n.host_port),
                          getattr(n, "client_port", n.host_port), n.access, getattr(n, "address", "") or "")
                 for n in dist.plan_nodes()]
        voters = dist.voter_ids(nodes)
        for n in nodes:
            n.runs_controller = n.role == "controller" or n.node_id in voters and n.role == "broker"
        return getattr(dist, "cluster_name", "nodes"), nodes, voters
    name = f"{cluster_prefix()}{RUN}"
    spec = SimpleNamespace(brokers=brokers, zookeepers=zookeepers, controllers=3, name=name)
    nodes: list[PlanNode] = []
    for g in dist.node_groups(spec):
        for nid in g.ids:
            cname = f"kc-{name}-{g.prefix}{nid}"
            nodes.append(PlanNode(g.role, nid, cname, f"{g.alias}{nid}", f"{FREE_PORT} -> {g.container_port}",
                                  g.container_port, ACCESS(cname), service=g.service))
    ids = dist.broker_ids(brokers)
    port = FREE_PORT + (" (consecutive)" if dist.contiguous_ports else "")
    home = {b: (ids[0] if dist.one_process else b) for b in ids}
    for b in ids:
        cname = f"kc-{name}-b{home[b]}"
        nodes.append(PlanNode("broker", b, cname, f"broker{home[b]}", port, 0, ACCESS(cname)))
    voters = dist.voter_ids([n for n in nodes if n.role in ("broker", "controller")])
    for n in nodes:
        n.runs_controller = n.role == "controller" or (n.role == "broker" and n.node_id in voters)
    return name, nodes, voters


def _shape(scenario, dist: Distribution) -> tuple[int, int]:
    return scenario.brokers, scenario.zookeepers if "zookeeper" in dist.roles else 0


# -- per scenario -----------------------------------------------------------------------------------------
def _when(f, how: str) -> str:
    if how == "schedule":
        return f"at {f.at:g} s" + (f", healed {f.duration:g} s later" if f.duration else " (an event: nothing to heal)")
    if how == "steps":
        start = f"{f.at:g} s after step {f.after!r}" if f.after else f"at {f.at:g} s"
        heal = ("healed when every step has run" if f.duration is None else
                "an event: nothing to heal" if f.duration == 0 else f"healed {f.duration:g} s later")
        return f"{start}, {heal}"
    extra = [x for x, on in (("once per element of a loop", f.repeated), ("in a branch (some clusters only)",
                                                                          f.conditional)) if on]
    instant = f.kind in CATALOG and CATALOG[f.kind].instant
    return "when the script gets there" + (f", {', '.join(extra)}" if extra else "") + (
        "; an event: nothing to heal" if instant else "; healed by the script")


def _example_target(target: str, nodes: list[PlanNode]) -> str | None:
    """A target the script builds at run time (``broker:{old}``) as an example the plan can resolve."""
    m = re.fullmatch(r"(broker|zk|service):\{.*\}", target)
    if not m:
        return None
    if m.group(1) == "service":
        svc = next((n.service for n in nodes if n.service), None)
        return f"service:{svc}" if svc else None
    role = "broker" if m.group(1) == "broker" else "zookeeper"
    first = next((n for n in nodes if n.role == role), None)
    return f"{m.group(1)}:{first.node_id}" if first else None


def _steps_end(faults) -> float:
    ends, at_of = [0.0], {}
    for f in faults:
        start = (at_of.get(f.after, 0.0) if f.after else 0.0) + (f.at or 0.0)
        at_of[f.source] = start
        ends.append(start + (f.duration or 0.0))
    return max(ends)


def scenario_plan(req, seed: int, known: dict[str, float], fallback_s: float) -> dict:
    """One applicable scenario's entry: its cluster, its faults with their commands, its estimate."""
    s, dist = req.scenario, req.distribution
    brokers, zks = _shape(s, dist)
    cname, nodes, voters = cluster_nodes(dist, brokers, zks)
    example = ExampleCluster(nodes, voters, {t.name: t.replication_factor for t in s.topics})
    how, stated = stated_faults(s, seed, dist.roles)
    faults = []
    for f in stated:
        entry = {"fault": f.kind, "target": f.target, "target_words": target_words(f.target), "params": f.params,
                 "when": _when(f, how), "source": f.source, "note": f.note}
        target = f.target if f.resolved or f.kind not in CATALOG else None
        if f.kind in CATALOG and target is None:
            target = _example_target(f.target, nodes)
        if f.kind in CATALOG and target is not None:
            entry["commands"] = fault_commands(f.kind, target, f.params, example, seed)
            entry["commands"]["example"] = entry["commands"]["example"] or target != f.target
        faults.append(entry)
    if s.name in known:
        est, basis = known[s.name], "measured median (suites/durations.json)"
    elif how in ("schedule", "steps"):
        end = max((f.at + f.duration for f in stated), default=0.0) if how == "schedule" else _steps_end(stated)
        est, basis = STARTUP_S + end + TAIL_S, f"start-up {STARTUP_S:g} s + faults {end:.0f} s + {TAIL_S:g} s after"
    else:
        est, basis = fallback_s, "median of the measured scenarios (suites/durations.json)"
    return {"name": s.name, "label": s.label, "description": s.description, "applies": True,
            "cluster": {"name": cname, "network": f"kc-{cname}", "brokers": brokers, "zookeepers": zks,
                        "nodes": [n.to_dict() for n in nodes]},
            "fault_source": how, "faults": faults, "max_duration_s": s.max_duration_s,
            "estimate_s": round(est, 1), "estimate_basis": basis}


def build(command: str, target: str, broker: Broker, image_note: str, requests, skipped, *, seed: int = 0,
          repeat: int = 1, parallel: int = 1, security: dict | None = None, overrides: dict | None = None,
          extra: dict | None = None) -> dict:
    """The whole plan: ``requests`` (RunRequests that apply) and ``skipped`` ((scenario, reason) pairs)."""
    dist, info = broker.distribution, broker.image
    known = known_durations()
    fallback = statistics.median(known.values()) if known else 30.0
    entries = [scenario_plan(r, seed, known, fallback) for r in requests]
    runs = [e["estimate_s"] for e in entries for _ in range(repeat)]
    lanes = [0.0] * max(1, parallel)
    for d in sorted(runs, reverse=True):      # longest first to the least loaded (as --parallel runs them)
        lanes[lanes.index(min(lanes))] += d
    pre = PREFLIGHT_S if dist.needs_preflight and runs else 0.0
    where = ({"kind": "nodes", "text": f"the hosts of {getattr(dist, 'nodes_file', 'the nodes file')} over SSH "
                                       "(nothing started: the cluster is connected to, not created)"}
             if callable(getattr(dist, "plan_nodes", None)) else
             {"kind": "containers", "text": "containers on the local Docker engine (one fresh cluster per run, "
                                            "removed after it), ports published on 127.0.0.1 only"})
    return {"plan": command, "target": target, "touched": "nothing: no Docker call, no connection, no file written",
            "broker": {"image": info.tag, "kafka_version": info.kafka_version, "image_note": image_note,
                       "distribution": dist.name, "layout": dist.layout, "roles": list(dist.roles),
                       "controller_model": dist.controller_model,
                       "profile": broker.profile or dist.default_profile(info.kafka_version),
                       "preflight": bool(dist.needs_preflight)},
            "security": security or {"protocol": "PLAINTEXT"}, "where": where, "seed": seed, "repeat": repeat,
            "broker_config": dict(overrides or {}), **(extra or {}),
            "scenarios": entries,
            "not_applicable": [{"name": s.name, "reason": why} for s, why in skipped],
            "duration": {"runs": len(runs), "serial_s": round(pre + sum(runs)), "parallel": parallel,
                         "parallel_s": round(pre + max(lanes)), "preflight_s": pre,
                         "basis": "per scenario: the measured median of suites/durations.json (cluster start to "
                                  "verdict, 2-core host, apache-zk 3.9.2, --parallel 2) where there is one; else "
                                  f"start-up {STARTUP_S:g} s (median to the first fault) + its schedule + "
                                  f"{TAIL_S:g} s; else the median of the measured ones. --parallel N: longest "
                                  "first to the least loaded of N lanes"}}


def emit(plan: dict, as_json: bool) -> int:
    from harness.commands.plan_text import render
    print(json.dumps(plan, indent=2) if as_json else render(plan))
    return 0


def check_no_plan_conflicts(args, *incompatible: str, json_alone: bool = False) -> None:
    """``--json`` needs ``--plan`` (but with ``json_alone``: ``run --json``, the verdicts as JSON); options
    that act on records cannot be planned (one error line)."""
    if getattr(args, "json", False) and not getattr(args, "plan", False) and not json_alone:
        raise HarnessError("--json is for --plan (the plan as JSON); leave it out")
    for opt in incompatible:
        if getattr(args, opt.lstrip("-").replace("-", "_"), None) and getattr(args, "plan", False):
            raise HarnessError(f"--plan cannot be combined with {opt}")


# -- the commands ---------------------------------------------------------------------------------------
def add_args(parser) -> None:
    """``--plan`` and ``--json`` on ``parser``."""
    parser.add_argument("--plan", action="store_true",
                        help="print what would run, where, with which faults, the commands each fault issues per "
                             "node and the expected duration; touch nothing (no Docker, no connection, no file); "
                             "exit 0 (docs/cli.md \"Plan\")")
    parser.add_argument("--json", action="store_true", help="with --plan: the plan as JSON (run without --plan: "
                                                            "the verdicts as one JSON object on stdout)")


def attach(parser, planner) -> None:
    """Route ``parser``'s command to ``planner(args)`` when ``--plan`` is given (certify: its command
    module sits below this one in the layers and cannot call it)."""
    func = parser.get_default("func")

    def route(args):
        if getattr(args, "plan", False):
            return planner(args)
        check_no_plan_conflicts(args)          # --json without --plan
        return func(args)
    parser.set_defaults(func=route)


def _skipped_variant(chosen, variant):
    if not variant:
        return chosen, []
    if not any(variant in s.variants for s in chosen):
        raise HarnessError(f"no scenario has the variant {variant!r}")
    return ([s.with_variant(variant) for s in chosen if variant in s.variants],
            [(s, f"has no variant {variant!r}") for s in chosen if variant not in s.variants])


def run_plan(args) -> int:
    """``kafka-chaos run ... --plan``."""
    from suites.catalog import SUITES, scenarios_for
    from harness.options import config_pairs
    from harness.shard import parse_shard, select
    check_no_plan_conflicts(args, "--replay")
    if args.repeat < 1 or args.parallel < 1:
        raise HarnessError("--repeat and --parallel must be at least 1")
    if not args.target or args.target == "list":
        raise HarnessError("--plan needs a suite, scenario or scenario file to plan")
    sf = args.scenario_file
    chosen, skipped = _skipped_variant([sf.scenario] if sf else scenarios_for(args.target), args.variant)
    kafka_version, distribution = args.kafka_version, args.distribution
    if sf and not args.distribution_file:
        if kafka_version is None and args.broker_image is None:
            kafka_version = sf.kafka_version
        distribution = distribution or sf.distribution
    broker, note = plan_broker(kafka_version=kafka_version, image=args.broker_image, distribution=distribution,
                               distribution_file=args.distribution_file, layout=args.layout, profile=args.profile,
                               nodes=getattr(args, "nodes", None))
    if args.length is not None:
        chosen = [s.with_length(args.length) for s in chosen]
    requests = []
    for s in chosen:
        r = broker.request(s)
        (skipped.append((s, r.not_applicable)) if r.not_applicable else requests.append(r))
    refusal = None if requests else (f"no scenario of {args.target!r} applies to {broker.image.tag} "
                                     f"({broker.distribution.name}); the plan above says why")
    extra = {}
    if args.shard:
        parse_shard(args.shard)
        mine = set(select([r.scenario.name for r in requests], args.shard))
        skipped += [(r.scenario, f"not in shard {args.shard}") for r in requests if r.scenario.name not in mine]
        requests = [r for r in requests if r.scenario.name in mine]
        extra["shard"] = args.shard
    if args.variant:
        extra["variant"] = args.variant
    suite = args.target if args.target in SUITES else "adhoc"
    plan = build("run", args.target, broker, note, requests, skipped, seed=args.seed or 0, repeat=args.repeat,
                 parallel=args.parallel, overrides=config_pairs(args.config),
                 security=security_of(getattr(args, "security", None), getattr(sf, "security", None),
                                      getattr(broker.distribution, "security", None)),
                 extra={"suite": suite, "runs_dir": args.runs_dir, **extra})
    emit(plan, args.json)
    if refusal:                    # as the run would: one error line and exit 2, after the plan says why
        raise HarnessError(refusal)
    return 0


def owner_line(dist: Distribution, confirmed: bool) -> dict | None:
    """certify on hosts the harness does not own: whether the owner confirmed it (None: not such a cluster)."""
    if not getattr(dist, "foreign_hosts", False):
        return None
    ok = confirmed or getattr(dist, "owner_confirmed", False)
    return {"required": True, "given": ok,
            "text": "confirmed" if ok else "NOT confirmed: certify refuses without --i-own-this-cluster "
                                            "(or the nodes file's owner_confirmed = true)"}


def certify_plan(args) -> int:
    """``kafka-chaos certify ... --plan``."""
    from suites.catalog import SCENARIOS
    from harness.certify.capabilities import Subject, plan as capability_plan, resolve_profile
    from harness.certify.fleet import shard_todo
    from harness.certify.command import selected_capabilities
    from harness.options import config_pairs
    from harness.request import RunRequest
    check_no_plan_conflicts(args, "--merge")
    if args.capability and "list" in args.capability:
        raise HarnessError("--capability list lists the capabilities; leave --plan out")
    if args.parallel < 1 or args.retries < 0:
        raise HarnessError("--parallel must be at least 1 and --retries 0 or more")
    broker, note = plan_broker(kafka_version=args.kafka_version, image=args.broker_image, distribution=args.distribution,
                               distribution_file=args.distribution_file, layout=args.layout, profile=args.profile,
                               default=None, nodes=getattr(args, "nodes", None))
    info, dist = broker.image, broker.distribution
    subject = Subject.from_image_info(info, dist)
    profile = resolve_profile(args.profile or dist.default_profile(info.kafka_version), subject)
    selected, required = selected_capabilities(args)
    only = list(dict.fromkeys(args.scenario or [])) or None
    plans = capability_plan(SCENARIOS, subject, selected, only)
    by_name = {cp.capability.name: cp for cp in plans}
    lacking = [n for n in required if n in by_name and (by_name[n].na_reason or not by_name[n].applicable)]
    todo = [(cp, sp) for cp in plans for sp in cp.applicable]
    if args.shard:
        todo = shard_todo(todo, args.shard)
    broker = Broker(info, dist, profile)
    seen, requests = set(), []
    for _, sp in todo:
        if sp.name not in seen:
            seen.add(sp.name)
            requests.append(RunRequest(sp.scenario, broker))
    skipped = [(sp.scenario, sp.reason) for cp in plans for sp in cp.scenarios if not sp.applicable]
    extra = {"profile_given": bool(args.profile), "retries": args.retries,
             "capabilities": [{"name": cp.capability.name, "scenarios": [sp.name for sp in cp.applicable],
                               "not_applicable": cp.na_reason} for cp in plans],
             "owner_confirmation": owner_line(dist, getattr(args, "i_own_this_cluster", False)),
             "out": args.out or f"certificates/<time>-{profile}"}
    if lacking:                  # as certify does (_required_not_applicable): INCOMPATIBLE before any run
        extra["would_stop"] = (f"INCOMPATIBLE before any run (exit 3): required capability {', '.join(lacking)} "
                               "cannot apply to this broker")
    if dist.needs_preflight:
        extra["preflight_note"] = ("the preflight's ApiVersions may make more capabilities NOT-APPLICABLE "
                                   "(shown here as if every API were advertised)")
    plan = build("certify", "certify", broker, note, requests, skipped, seed=args.seed, parallel=args.parallel,
                 overrides=config_pairs(args.config),
                 security=security_of(getattr(args, "security", None), getattr(dist, "security", None)),
                 extra=extra)
    return emit(plan, args.json)
