"""Broker certification: the ``kafka-chaos certify`` command.

``certify`` runs the conformance scenarios a profile selects (one run record each, through
:func:`harness.runner.execute`), groups them by **capability** and writes a certificate (HTML +
JSON, rendered by :mod:`reports.certificate`) that says, per capability, PASS / FAIL /
NOT-APPLICABLE with the evidence runs, and overall CERTIFIED only if every applicable capability
passed.

The capability -> scenario-family mapping is one table, :data:`harness.certify.capabilities.CAPABILITIES`
(with the subject and the plan of which scenarios apply); scenario families
are found by :mod:`suites.catalog`, so a family added under ``suites/scenarios/`` is certified as
soon as it exists (until then its capability is NOT-APPLICABLE, "no scenario in this harness
version").

``--config key=value`` applies broker property overrides to every cluster (``execute(...,
broker_config=...)``) to simulate a broker that does not behave as it is asked to. The run
records are judged against the configuration actually applied (their own ``verdict.json``); the
certificate judges each run against the configuration the certification *declares* (the
scenario's ``broker_config`` over the harness defaults, overrides reverted), because that is the
contract a certified broker must honour. Without overrides the two judgements are the same.

Exit codes (harness/errors.py): 0 certified, 1 a capability failed, 2 usage error, 3 INCOMPATIBLE, 4
INCONCLUSIVE (a run the environment spoiled and no capability failed), 5 environment error, 130 interrupted.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from reports.certificate import write_certificate
from suites.catalog import SCENARIOS

from harness import __version__, runner
from harness.certify.capabilities import Subject, plan, resolve_profile, unmapped_scenarios
from harness.distributions.capability_table import CAPABILITIES, NO_SCENARIO, SELECT_TAG, capability, capability_names
from harness.certify.certificate_data import (CERTIFICATE_SCHEMA, EXIT_INCOMPATIBLE, EXIT_OK, FAIL, INCOMPATIBLE,
                                              NA, UNKNOWN, UNRECORDED, build_certificate, measured_facts)
from harness.checkers.verdict import decide
from harness.errors import HarnessError
from harness.distributions.node_settings import DEFAULT_BROKER_CONFIG
from harness.options import (add_distribution_args, add_nodes_arg, add_security_arg, check_runs_dir, check_security,
                             check_writable_dir, config_args, config_pairs, did_you_mean,
                             feature_pairs)
from harness.parallel import Job, run_children
from harness.shard import parse_shard
from harness.certify.fleet import merged_results, shard_todo
from harness.record import facts, read_run
from harness.record.read import evidence_problems, file_digests
from harness.record.storage import Publisher
from harness.record.writer import file_sha256
from harness.request import Broker, RunRequest, resolve_broker


# -- judging a run for the certificate -----------------------------------------------------------
def declared_config(applied: dict, scenario_config: dict, overrides: dict, defaults: dict) -> dict:
    """The broker configuration the certification asks for: the applied one with every overridden
    key put back to the scenario's value, else the harness default, else removed."""
    out = dict(applied)
    for k in overrides:
        if k in scenario_config:
            out[k] = str(scenario_config[k])
        elif k in defaults:
            out[k] = str(defaults[k])
        else:
            out.pop(k, None)
    return out


def failing_rules(checks: dict) -> list[dict]:
    """What failed in a verdict's ``checks``: ``[{"check", "rule", "detail"}]`` (conformance rules,
    durability checks, unmet expectations). Tolerates the flat fixture shape of older records."""
    out: list[dict] = []
    conf = checks.get("conformance") or {}
    for d in list(conf.get("invariant_violations") or []) + list(conf.get("divergences") or []):
        full = str(d.get("rule_id") or d.get("rule") or "?")  # "§8.2/§4.1.3/H11": spec sections, then the id
        out.append({"check": "conformance", "rule": full.rsplit("/", 1)[-1],
                    "detail": _short(f"{d.get('subject', '')} {d.get('explanation', '')} ({full})".strip())})
    dur = checks.get("durability") or {}
    inner = dur.get("checks") if isinstance(dur.get("checks"), dict) else {
        k: v for k, v in dur.items() if isinstance(v, dict)}
    for name, c in inner.items():
        if c.get("verdict") == FAIL:
            out.append({"check": "durability", "rule": name,
                        "detail": _short(c.get("reason") or f"count {c.get('count')}")})
    for name, c in checks.items():  # flat shape: durability checks at the top level
        if name not in ("conformance", "durability", "expectations") and isinstance(c, dict) \
                and c.get("verdict") == FAIL:
            out.append({"check": "durability", "rule": name, "detail": _short(f"count {c.get('count')}")})
    exp = checks.get("expectations") or {}
    for item in exp.get("items") or []:
        if not item.get("ok"):
            out.append({"check": "expectations", "rule": "expectation",
                        "detail": _short(str(item.get("what")))})
    if exp.get("error"):
        out.append({"check": "expectations", "rule": "script", "detail": _short(str(exp["error"]))})
    return out


def _short(text: str, n: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[:n - 1] + "…"


def _environment_spoiled(record) -> bool:
    return any(e.get("type") == "phase" and e.get("name") in ("environment.error", "aborted")
               for e in record.events) or str(record.verdict.get("reason", "")).startswith("checker error")


def judge_run(run_dir: Path, scenario, overrides: dict, defaults: dict | None = None) -> dict:
    """The certificate's judgement of one run record: ``{"verdict", "reason", "failing_rules",
    "run_verdict", "run_reason", "judged_against"}``.

    Without overrides this is the record's own verdict. With overrides (and a record the
    environment did not spoil) the record's events are judged again, by the same checks
    (:func:`harness.checkers.verdict.decide`), against the declared configuration."""
    rec = read_run(run_dir, with_events=bool(overrides))
    digests = record_digests(run_dir)
    problems = evidence_problems(rec.verdict, digests, __version__)
    if problems and not overrides:
        rec = read_run(run_dir)      # the stored verdict cannot be verified: its events are judged below
    cause = (rec.verdict.get("cause") or UNRECORDED) if rec.verdict["verdict"] == UNKNOWN else None
    out = {"run_verdict": rec.verdict["verdict"], "run_reason": rec.verdict.get("reason", ""),
           "verdict": rec.verdict["verdict"], "reason": rec.verdict.get("reason", ""),
           "cause": cause, "run_cause": cause,
           "failing_rules": failing_rules(rec.verdict.get("checks") or {}),
           "judged_against": "applied configuration",
           "container_logs": [e["path"] for e in rec.metadata.get("container_logs") or [] if e.get("path")],
           "measured": measured_facts(rec.verdict),
           # the levels the run finalized (its metadata log) and asked for: what the evidence ran at
           "features": facts.features(rec.metadata), "features_requested": facts.features_requested(rec.metadata),
           "record": {"sha256": digests, "evidence": "verified" if not problems else "; ".join(problems)}}
    if problems and not overrides:
        return _rederived(out, rec, problems)
    if not overrides or _environment_spoiled(rec):
        return out
    if defaults is None:
        defaults = DEFAULT_BROKER_CONFIG
    meta = dict(rec.metadata)
    meta["broker_config"] = declared_config(meta.get("broker_config") or {}, scenario.broker_config,
                                            overrides, defaults)
    exp = (rec.verdict.get("checks") or {}).get("expectations") or {}
    v = decide(rec.events, meta, checks=scenario.checks, expectations=list(exp.get("items") or []),
               script_error=exp.get("error"))
    out.update(verdict=v.verdict, reason=v.reason, failing_rules=failing_rules(v.checks),
               cause="undecided" if v.verdict == UNKNOWN else None,
               judged_against="declared configuration (overrides reverted: "
                              + ", ".join(f"{k}={meta['broker_config'].get(k, '<unset>')}" for k in overrides)
                              + ")")
    return out


def record_digests(run_dir: Path) -> dict:
    """The SHA-256 of a record's metadata.json, events.jsonl (:func:`harness.record.read.file_digests`) and
    verdict.json: what the certificate cites for each evidence run."""
    return {**file_digests(run_dir), "verdict_sha256": file_sha256(Path(run_dir) / "verdict.json")}


def _rederived(out: dict, rec, problems: list[str]) -> dict:
    """``out`` for a record whose stored verdict cannot be verified (no evidence, a digest that differs, another
    harness version): the verdict the checkers derive from its events now; a disagreement is named."""
    v = decide(rec.events, rec.metadata)
    stored = (out["run_verdict"], out["run_cause"] if out["run_cause"] != UNRECORDED else None)
    out.update(verdict=v.verdict, reason=v.reason, cause=(v.cause or UNRECORDED) if v.verdict == UNKNOWN else None,
               failing_rules=failing_rules(v.checks), judged_against="re-derived from the events ("
               + "; ".join(problems) + ")")
    if stored[0] != v.verdict or (stored[1] and stored[1] != v.cause):
        out["record"]["disagrees"] = (f"verdict.json says {stored[0]}, the events give {v.verdict}"
                                      + (f"({v.cause})" if v.cause else ""))
    return out


# -- command line --------------------------------------------------------------------------------
def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _iso_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def git_facts() -> dict:
    """The harness checkout: ``{"git_sha", "git_dirty"}`` (None when not a git checkout)."""
    root = Path(__file__).resolve().parents[2]

    def git(*a):
        return subprocess.run(["git", *a], capture_output=True, text=True, timeout=10, cwd=root)
    try:
        sha = git("rev-parse", "HEAD").stdout.strip() or None
        dirty = bool(git("status", "--porcelain", "--untracked-files=no").stdout.strip()) if sha else None
    except Exception:
        sha, dirty = None, None
    return {"git_sha": sha, "git_dirty": dirty}


def add_parser(sub) -> None:
    c = sub.add_parser("certify", help="run the conformance scenarios of a profile and write a certificate",
                       description="Run the conformance scenarios the profile selects and write a certificate "
                                   "(certificate.html + certificate.json) with PASS / FAIL / NOT-APPLICABLE per "
                                   "capability and the evidence runs.",
                       epilog="Exit codes: 0 certified, 1 a capability failed, 2 usage error, 3 INCOMPATIBLE (a "
                              "--distribution-file broker or a generic image failed the preflight, or a --require'd "
                              "capability cannot apply to the broker), 4 INCONCLUSIVE, 5 environment error, "
                              "130 interrupted (docs/cli.md).")
    g = c.add_mutually_exclusive_group()
    g.add_argument("--kafka-version", metavar="V", help="certify the locally built Apache Kafka V image")
    g.add_argument("--broker-image", metavar="IMG", help="certify this local image (default: the default "
                                                          "Apache Kafka image, KRaft on the newest 4.x, built if missing)")
    c.add_argument("--profile", help="conformance profile: compatible, kraft-<major>.<minor> (e.g. kraft-4.4) or "
                                     "apache-zk-<major>.<minor> (e.g. apache-zk-3.9); required")
    c.add_argument("--out", metavar="DIR", help="where the certificate goes (default "
                                                "certificates/<time>-<profile>)")
    c.add_argument("--runs-dir", metavar="DIR", help="where the evidence run records go (default OUT/runs); "
                                                     "s3://BUCKET/PREFIX: published to object storage")
    c.add_argument("--s3-endpoint", metavar="URL", help="S3-compatible endpoint (default: $AWS_ENDPOINT_URL)")
    c.add_argument("--shard", metavar="I/N", help="run only shard I of N of the applicable scenarios (the same "
                                                  "balanced slices as `run --shard`); merge the shards with --merge")
    c.add_argument("--merge", action="store_true",
                   help="run nothing: build the certificate from the records the shards left in --runs-dir")
    c.add_argument("--config", action="append", metavar="KEY=VALUE",
                   help="broker config override for every cluster (repeatable); runs are judged against "
                        "the configuration the certification declares")
    c.add_argument("--capability", action="append", metavar="NAME",
                   help="certify only this capability (repeatable); `--capability list` lists them")
    c.add_argument("--require", action="append", metavar="NAME",
                   help="this capability must be decided (repeatable; e.g. --require acks: durability under "
                        "acks and min.insync.replicas): NOT-APPLICABLE to the broker gives INCOMPATIBLE before any "
                        "run, undecided gives INCONCLUSIVE; never CERTIFIED without it")
    c.add_argument("--scenario", action="append", metavar="NAME",
                   help="only this scenario as evidence (repeatable): a quick, partial certificate")
    c.add_argument("--retries", type=int, default=1, metavar="N",
                   help="re-run a scenario whose run the environment spoiled (UNKNOWN) up to N times (default 1)")
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--feature", action="append", metavar="NAME=LEVEL",
                   help="certify at this feature level (repeatable; over each scenario's own; refused like "
                        "`run --feature`, docs/kraft.md \"Feature levels\")")
    c.add_argument("--parallel", type=int, default=1, metavar="N",
                   help="run N scenarios at a time, each in its own process and cluster (default 1)")
    add_distribution_args(c, "how the image's clusters run: the image's own mode by default (kafka-chaos images of "
                        "4.x: apache-kraft; of 3.x: apache-zk), apache-kraft or apache-kraft-dedicated (a kraft-<x.y> "
                        "profile or compatible; scenarios written for ZooKeeper mode only are NOT-APPLICABLE), "
                        "apache-zk (an apache-zk-<x.y> profile) or generic (default for any other image: configured "
                        "by KAFKA_* variables like apache/kafka, KRaft, use --profile compatible; docs/certify.md)")
    add_nodes_arg(c, "certify")
    c.add_argument("--i-own-this-cluster", action="store_true",
                   help="certify a cluster of hosts the harness did not start (--nodes FILE): you own it and "
                        "accept that every fault of the certification runs on it (or the nodes file's "
                        "owner_confirmed = true); refused without")
    add_security_arg(c)
    c.set_defaults(func=cmd_certify, precheck=precheck)


def precheck(args) -> None:
    """Output directories, --shard and --capability / --scenario names (closest known name when
    misspelt), before the image is built or looked up."""
    if args.capability and "list" in args.capability:
        return
    if args.seed < 0:
        raise HarnessError(f"--seed must be 0 or more, got {args.seed}")
    check_security(args)
    args.features = feature_pairs(getattr(args, "feature", None))   # the same parse and refusal as `run --feature`
    if args.nodes and args.parallel > 1:
        raise HarnessError("--parallel does not apply to --nodes: the nodes file names one cluster")
    check_writable_dir(args.out or "certificates", "--out")
    if args.runs_dir and not getattr(args, "plan", False):   # a plan connects to no s3:// store
        check_runs_dir(args.runs_dir, endpoint=args.s3_endpoint)
    if args.shard:
        parse_shard(args.shard)
    for n in args.capability or []:
        if n not in capability_names():
            raise HarnessError(f"unknown capability {n!r}{did_you_mean(n, capability_names())}; "
                               "`kafka-chaos certify --capability list` lists them")
    names = [s.name for s in SCENARIOS]
    for n in args.scenario or []:
        if n not in names:
            raise HarnessError(f"unknown scenario {n!r}{did_you_mean(n, names)}; `kafka-chaos run list` lists them")


def require_owner(dist, confirmed: bool) -> None:
    """A cluster of hosts the harness did not start (a ``--nodes`` file: ``Distribution.foreign_hosts``)
    is certified only when its owner said so: ``--i-own-this-cluster`` or the file's
    ``owner_confirmed = true`` (``Distribution.owner_confirmed``); else one line, exit 2, before any run."""
    if getattr(dist, "foreign_hosts", False) and not (confirmed or getattr(dist, "owner_confirmed", False)):
        raise HarnessError(f"certify runs every fault of the certification on the hosts of {dist.name}, which the "
                           "harness did not start: pass --i-own-this-cluster (or set owner_confirmed = true in the "
                           "nodes file) to confirm they are yours to break")


def _print_capabilities(scenarios) -> None:
    for cap in CAPABILITIES:
        members = [s.name for s in scenarios if s.family in cap.families and SELECT_TAG in s.tags]
        print(f"{cap.name:20} {cap.title}")
        print(f"{'':20}   families: {', '.join(cap.families)}; scenarios: {', '.join(members) or NO_SCENARIO}")


def _record_attempt(results: dict, tag: str, sp, run_dir: Path, seconds: float, attempt: int,
                    overrides: dict, pub: Publisher | None = None) -> dict:
    j = judge_run(run_dir, sp.scenario, overrides)
    where = pub.publish(run_dir) if pub else str(run_dir)     # s3://: uploaded now, the staged copy removed
    j.update(run_id=run_dir.name, path=where, seconds=round(seconds, 1), attempt=attempt)
    results.setdefault(sp.name, []).append(j)
    extra = f" (run verdict {j['run_verdict']})" if j["run_verdict"] != j["verdict"] else ""
    _say(f"{tag}: {j['verdict']}{extra} in {seconds:.0f} s — {j['reason']}  ({where})")
    return j


def _run_serial(todo, args, broker: Broker, overrides: dict, runs_dir: Path, results: dict,
                pub: Publisher | None = None) -> None:
    """One scenario at a time in this process; an UNKNOWN run is retried at once (``--retries``)."""
    for i, (cp, sp) in enumerate(todo, 1):
        for attempt in range(args.retries + 1):
            tag = f"[{i}/{len(todo)}] {cp.capability.name}/{sp.name}" + (f" (retry {attempt})" if attempt else "")
            _say(f"{tag}: running ...")
            # the plan decided the scenario applies (capabilities.plan): the request says so without asking again
            scenario = sp.scenario.with_security(getattr(args, "security", None))     # --security (docs/security.md)
            if args.features:                                 # --feature over the scenario's own levels
                scenario = scenario.with_features(args.features)
            o = runner.execute(RunRequest(scenario, broker), runs_dir=runs_dir, suite="certify", seed=args.seed,
                               broker_config=overrides or None)
            if _record_attempt(results, tag, sp, o.path, o.seconds, attempt, overrides, pub)["verdict"] != UNKNOWN:
                break


def _run_parallel(todo, args, broker: Broker, overrides: dict, runs_dir: Path, results: dict,
                  pub: Publisher | None = None) -> None:
    """``--parallel N``: every scenario in its own ``kafka-chaos run`` child with its own cluster, N at
    a time (:mod:`harness.parallel`); the runs spoiled by the environment (UNKNOWN) are retried
    together in a next round, up to ``--retries`` rounds."""
    extra = ["--broker-image", broker.image.tag, "--runs-dir", str(runs_dir), "--suite", "certify",
             "--profile", broker.profile, *broker.distribution.cli_args(), *config_args(overrides),
             *(["--security", args.security] if getattr(args, "security", None) else []),
             *[a for f in getattr(args, "feature", None) or [] for a in ("--feature", f)]]
    pending = list(todo)
    for attempt in range(args.retries + 1):
        if not pending:
            break
        if attempt:
            _say(f"retry round {attempt}: {len(pending)} scenario(s) whose run was UNKNOWN")
        done = run_children([Job(sp.name, [sp.name, "--seed", str(args.seed), *extra]) for _, sp in pending],
                            args.parallel, str(runs_dir))
        again = []
        for (cp, sp), r in zip(pending, done):
            tag = f"{cp.capability.name}/{sp.name}" + (f" (retry {attempt})" if attempt else "")
            if r.path is None or not (r.path / "verdict.json").exists():
                j = {"verdict": UNKNOWN, "run_verdict": UNKNOWN, "failing_rules": [], "judged_against": "",
                     "cause": "harness-crash", "run_cause": "harness-crash",
                     "reason": f"the run left no record (exit {r.returncode}; log {r.log}): {r.rest}"[:300],
                     "run_reason": "", "run_id": r.log.name, "path": str(r.log), "seconds": 0.0, "attempt": attempt}
                results.setdefault(sp.name, []).append(j)
                _say(f"{tag}: {UNKNOWN} — {j['reason']}")
            else:
                j = _record_attempt(results, tag, sp, r.path, r.seconds or 0.0, attempt, overrides, pub)
            if j["verdict"] == UNKNOWN:
                again.append((cp, sp))
        pending = again


def _preflight(subject: Subject, image: str, out_dir: Path, started_at: str):
    """The contract check of a distribution file before any scenario (harness/certify/preflight.py); an
    INCOMPATIBLE broker gets a certificate.json saying so with the one line, and no scenario runs."""
    from harness.certify.preflight import preflight   # lazy: starts a cluster
    spec = getattr(subject.adapter, "spec", None)       # a distribution file; else generic: no file
    _say(f"preflight of {spec.path if spec else subject.adapter.name} ({image}) ...")
    pf = preflight(subject.adapter, image)
    _say(f"preflight: {pf.verdict} in {pf.seconds:.1f} s: {pf.line}")
    if not pf.ok:
        _write_incompatible(out_dir, pf.line, subject, started_at, pf,
                            "nothing was decided: the broker does not fit its distribution file" if spec else
                            "nothing was decided: the image does not fit the generic distribution (an image "
                            "configured like apache/kafka); describe it with a distribution file")
    return pf


def _write_incompatible(out_dir: Path, line: str, subject: Subject, started_at: str, pf, scope_text: str,
                        **extra) -> None:
    """An INCOMPATIBLE certificate.json (no scenario ran) with its one line, said and printed."""
    cert = {"schema_version": CERTIFICATE_SCHEMA, "kind": "kafka-chaos certificate",
            "overall": INCOMPATIBLE, "overall_reason": line, "exit_code": EXIT_INCOMPATIBLE,
            "subject": subject.to_dict(), **extra, "started_at": started_at, "finished_at": _iso_now(),
            "harness": {"version": __version__, **git_facts()},
            **({"preflight": pf.to_dict()} if pf is not None else {}),
            "scope_text": scope_text, "capabilities": []}
    (out_dir / "certificate.json").write_text(json.dumps(cert, indent=2) + "\n")
    _say(f"{INCOMPATIBLE}: {line}; {out_dir / 'certificate.json'}")
    print(f"{INCOMPATIBLE} {line}")


def _required_not_applicable(plans, required: list[str], subject: Subject, *, out_dir: Path,
                              started_at: str, profile: str, pf) -> bool:
    """A ``--require``'d capability that cannot apply to this broker (its plan is NOT-APPLICABLE, or
    none of its scenarios applies) makes the certificate INCOMPATIBLE at once, with that reason, and
    no scenario runs: the certification asked for evidence this broker cannot give."""
    by_name = {cp.capability.name: cp for cp in plans}
    missing = [(n, by_name[n].na_reason or "none of its scenarios applies to this broker: " + "; ".join(
        f"{sp.name} ({sp.reason})" for sp in by_name[n].scenarios if not sp.applicable)[:300])
        for n in required if n in by_name and (by_name[n].na_reason or not by_name[n].applicable)]
    if not missing:
        return False
    line = "; ".join(f"required capability {n} is not applicable: {why}" for n, why in missing)
    _write_incompatible(out_dir, line, subject, started_at, pf,
                        "nothing was run: a required capability cannot apply to this broker", profile=profile,
                        required=required, not_applicable=[{"name": n, "reason": why} for n, why in missing])
    return True


def selected_capabilities(args) -> tuple[list[str] | None, list[str]]:
    """``--capability`` (None: every one) and ``--require``, each named once and known; a required
    capability must be among the selected ones. Shared by certify and ``certify --plan``."""
    selected = list(dict.fromkeys(args.capability or [])) or None
    required = list(dict.fromkeys(args.require or []))
    for n in (selected or []) + required:
        capability(n)
    for n in required:
        if selected and n not in selected:
            raise HarnessError(f"--require {n}: the capability is not selected; add --capability {n}")
    return selected, required


def cmd_certify(args) -> int:
    if args.capability and "list" in args.capability:
        _print_capabilities(SCENARIOS)
        return EXIT_OK
    if not args.profile:
        raise HarnessError("--profile is required: compatible, kraft-<major>.<minor> or apache-zk-<major>.<minor> "
                           "(e.g. kraft-4.4; `kafka-chaos certify --plan` shows the one a run would use)")
    if args.retries < 0:
        raise HarnessError("--retries must be 0 or more")
    if args.parallel < 1:
        raise HarnessError("--parallel must be at least 1")
    selected, required = selected_capabilities(args)
    overrides = config_pairs(args.config)
    broker = resolve_broker(kafka_version=args.kafka_version, image=args.broker_image, distribution=args.distribution,
                            distribution_file=args.distribution_file, layout=args.layout, profile=args.profile,
                            default=None, build_missing=args.kafka_version is None and args.broker_image is None,
                            nodes=args.nodes, check_nodes=False)
    require_owner(broker.distribution, args.i_own_this_cluster)
    if args.nodes:
        f = broker.distribution.nodes
        from harness.cluster.remote_cluster import check_nodes   # lazy: paramiko
        check_nodes(f)
    info = broker.image
    features = args.features  # parsed by precheck
    if features:              # refused before any container starts, with run --feature's line
        why = broker.distribution.features_problem(features, info.kafka_version, overrides)
        if why:
            raise HarnessError(f"--feature: {why}")
    subject = Subject.from_image_info(info, broker.distribution)
    profile = resolve_profile(args.profile, subject)
    broker = Broker(info, broker.distribution, profile)
    started_at = _iso_now()
    at_levels = "".join(f"-{k}={v}" for k, v in sorted(features.items()))   # a certificate at chosen levels
    out_dir = Path(args.out or f"certificates/{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{profile}{at_levels}")
    pub = Publisher(args.runs_dir, args.s3_endpoint) if args.runs_dir else None
    runs_dir = Path(pub.local) if pub else out_dir / "runs"
    out_dir.mkdir(parents=True, exist_ok=True)
    only = list(dict.fromkeys(args.scenario or [])) or None
    pf = None
    # a distribution file's contract, and any foreign image under `generic`: INCOMPATIBLE in seconds
    # instead of every scenario waiting out its start (issue 43)
    if subject.adapter.needs_preflight or subject.adapter.name == "generic":
        pf = _preflight(subject, info.tag, out_dir, started_at)
        if not pf.ok:
            return EXIT_INCOMPATIBLE
    plans = plan(SCENARIOS, subject, selected, only, advertised_apis=pf.api_keys if pf else None)
    todo = [(cp, sp) for cp in plans for sp in cp.applicable]
    if required and _required_not_applicable(plans, required, subject, out_dir=out_dir,
                                             started_at=started_at, profile=profile, pf=pf):
        return EXIT_INCOMPATIBLE
    if args.merge and args.shard:
        raise HarnessError("--merge builds the certificate of every shard: leave --shard out")
    if args.merge and not args.runs_dir:
        raise HarnessError("--merge needs --runs-dir: the folder or s3:// prefix the shards wrote their records to")
    if args.shard:        # a shard's certificate is partial: it names its scenarios
        only = sorted({sp.name for _, sp in shard_todo(todo, args.shard)})
        plans = plan(SCENARIOS, subject, selected, only, advertised_apis=pf.api_keys if pf else None)
        todo = [(cp, sp) for cp in plans for sp in cp.applicable]
    _say(f"certifying {subject.broker_image} (Kafka {subject.kafka_version or 'unknown'}, {subject.distribution}) "
         f"with profile {profile}: {len(todo)} scenarios in {sum(1 for cp in plans if cp.applicable)} "
         f"capabilities" + (f"; overrides {overrides}" if overrides else ""))
    for cp in plans:
        if cp.na_reason:
            _say(f"  {cp.capability.name}: {NA} ({cp.na_reason})")
    results: dict[str, list[dict]] = {}
    interrupted = False
    try:
        if args.merge:
            scen = {sp.name: sp.scenario for _, sp in todo}
            results = merged_results(args.runs_dir, set(scen), info.tag, profile, subject.distribution,
                                     lambda d, name: judge_run(d, scen[name], overrides), args.s3_endpoint)
            _say(f"merged {sum(map(len, results.values()))} record(s) of {len(results)} of {len(todo)} "
                 f"scenario(s) from {args.runs_dir}")
        elif args.parallel > 1:
            _run_parallel(todo, args, broker, overrides, runs_dir, results, pub)
        else:
            _run_serial(todo, args, broker, overrides, runs_dir, results, pub)
    except KeyboardInterrupt:
        interrupted = True
    cert = build_certificate(plans, results, subject=subject, profile=profile, overrides=overrides,
                             started_at=started_at, finished_at=_iso_now(), out_dir=out_dir, git=git_facts(),
                             selected=selected, unmapped=unmapped_scenarios(SCENARIOS), interrupted=interrupted,
                             only=only, required=required)
    if pf is not None:
        cert["preflight"] = pf.to_dict()
    if args.shard:
        cert["shard"] = args.shard
    if pub:
        pub.raise_failed()
    html, js = write_certificate(cert, out_dir)
    for c in cert["capabilities"]:
        _say(f"  {c['name']:20} {c['status']:15} {c['reason']}")
    _say(f"scope: {cert['scope_text']}")
    _say(f"{cert['overall']}: {cert['overall_reason']}; certificate {html} (and {js.name})")
    print(f"{cert['overall']} {html}")
    if interrupted:
        raise KeyboardInterrupt
    return cert["exit_code"]
