"""The ``kafka-chaos`` command line (docs/cli.md).

Exit codes (harness/errors.py, docs/cli.md "Exit codes"): 0 success / every verdict PASS, 1 a check
failed, 2 usage error, 3 INCOMPATIBLE, 4 ran but undecided (UNKNOWN), 5 environment error, 130 Ctrl-C
(which cleans up first). Every error is one ``kafka-chaos: error: ...`` line on
stderr, with the closest valid name for a misspelt one; option values that can be checked without
Docker are checked before anything is built or started; no traceback reaches the user
(``KAFKA_CHAOS_DEBUG=1`` shows it for an unexpected exception).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import re
import signal
import sys
import tempfile
import traceback
from pathlib import Path

from harness import __version__, distributions, images
from harness.certify import command as certify
from harness.commands import check, cluster_status, completion, demo, doctor, plan, run as run_command, validate
from harness import docker_util
from harness.cluster import lifecycle
from harness.record import storage
from harness.cluster.cleanup import list_clusters, remove_cluster
from harness.cluster.cluster import Cluster, ClusterSpec
from harness.cluster.security import Security
from harness.errors import EXIT_ENV, EXIT_INTERRUPTED, EXIT_USAGE, HarnessError
from harness.cluster.lifecycle import reap_at_start
from harness.options import (add_distribution_args, add_nodes_arg, add_security_arg, check_security, config_pairs,
                             did_you_mean)

EXIT_OK, EXIT_FAIL = 0, 1
DEBUG_ENV = "KAFKA_CHAOS_DEBUG"   # set to 1 to see the traceback of an unexpected error


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (plus the closest valid choice or option) and exit code 2."""

    def error(self, message: str):  # noqa: D401
        m = re.match(r"argument .*: invalid choice: '(.*?)' \(choose from (.*)\)$", message)
        if m:
            message += did_you_mean(m.group(1), re.findall(r"'([^']*)'", m.group(2)))
        self.exit(EXIT_USAGE, f"kafka-chaos: error: {message} (see `{self.prog} --help`)\n")

    def unrecognized(self, extras: list[str]):
        """Unknown options or surplus arguments, reported by the subcommand's own parser."""
        options = [o for a in self._actions for o in a.option_strings if a.help != argparse.SUPPRESS]
        hints = "".join(did_you_mean(e.split("=", 1)[0], options) for e in extras if e.startswith("-"))
        self.error(f"unrecognized arguments: {' '.join(extras)}{hints}")


# -- images ----------------------------------------------------------------------------------------
def cmd_images_build(args) -> int:
    versions = args.kafka or [None]
    for v in versions:
        b = images.build(v, force=args.force)
        state = "cached" if b.cached else "built"
        print(f"{b.tag} {state} in {b.seconds:.1f} s (id {b.image_id.replace('sha256:', '')[:12]})")
    return EXIT_OK


def cmd_images_build_kfake(args) -> int:
    from harness.foreign_images import build_kfake  # lazy: only this command builds Go
    b = build_kfake(force=args.force)
    print(f"{b.tag} {'cached' if b.cached else 'built'} in {b.seconds:.1f} s (id {b.image_id.replace('sha256:', '')[:12]})")
    return EXIT_OK


def cmd_images_build_kroxylicious(args) -> int:
    from harness.foreign_images import build_kroxylicious  # lazy: only this command runs Maven
    b = build_kroxylicious(args.kafka, force=args.force)
    print(f"{b.tag} {'cached' if b.cached else 'built'} in {b.seconds:.1f} s (id {b.image_id.replace('sha256:', '')[:12]})")
    return EXIT_OK


def cmd_images_build_tansu(args) -> int:
    from harness.foreign_images import build_seaweedfs, build_tansu  # lazy: only this command runs cargo and Go
    for b in (build_tansu(args.version, force=args.force), build_seaweedfs(force=args.force)):
        print(f"{b.tag} {'cached' if b.cached else 'built'} in {b.seconds:.1f} s "
              f"(id {b.image_id.replace('sha256:', '')[:12]})")
    return EXIT_OK


def cmd_images_build_host(args) -> int:
    from harness import host_image  # lazy: only this command builds the SSH test host image
    for v in args.kafka or ["4.4.0"]:
        b = host_image.build(v, force=args.force)
        print(f"{b.tag} {'cached' if b.cached else 'built'} in {b.seconds:.1f} s (id {b.image_id.replace('sha256:', '')[:12]})")
    return EXIT_OK


def cmd_images_list(args) -> int:
    rows = images.list_images()
    if args.json:
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    if not rows:
        print("no kafka-chaos images; build one with `kafka-chaos images build`")
        return EXIT_OK
    print(f"{'IMAGE':40} {'KAFKA':8} {'ID':14} {'SIZE':>8}  CREATED")
    for r in rows:
        print(f"{r['tag']:40} {r['kafka_version'] or '-':8} {r['id']:14} {r['size_mb']:>6}MB  {r['created']}")
    return EXIT_OK


# -- cluster ---------------------------------------------------------------------------------------
def _print_cluster(cl) -> None:
    print(f"cluster={cl.name}")
    print(f"bootstrap.servers={cl.bootstrap_servers}")
    for k, v in cl.security.client_config().items():    # what a client needs to connect (docs/security.md)
        print(f"{k}={v}")
    if cl.zookeepers:
        print(f"zookeeper.connect={cl.zookeeper_connect}")
    else:
        print(f"distribution={cl.distribution.name}")
    if cl.controllers:     # a dedicated quorum: each controller's id, container and published CONTROLLER port
        print("controllers=" + ",".join(f"{c.node_id}@{c.name}:{c.endpoint}" for c in cl.controllers))


@contextlib.contextmanager
def _starting(name: str):
    """Hold a host-wide lock on the cluster name while ``cluster up`` starts it.

    Two ``cluster up --name X`` at the same moment would both pass the "already exists" check and then
    collide on the container names; the loser's cleanup removed the winner's containers too. With the
    lock the second one stops at once with one line, and the first is untouched."""
    locks = Path(tempfile.gettempdir()) / "kafka-chaos-locks"
    locks.mkdir(exist_ok=True)
    path = locks / f"cluster-up-{name}.lock"   # kept: unlinking a lock file others may hold is racy
    with open(path, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            pid = f.read().strip() or "?"
            raise HarnessError(f"a cluster named {name!r} is being started by another `kafka-chaos cluster up` "
                               f"(pid {pid}); wait for it, then see `kafka-chaos cluster status --name {name}`") from None
        f.seek(0)
        f.truncate()
        f.write(str(os.getpid()))
        f.flush()
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def cmd_cluster_up(args) -> int:
    spec = ClusterSpec(brokers=args.brokers, zookeepers=args.zookeepers, kafka_version=args.kafka_version,
                       image=args.broker_image, broker_config=config_pairs(args.config), name=args.name,
                       persistent=True, port_base=args.port_base, build_missing=args.build,
                       distribution=args.adapter, controllers=args.controllers,
                       security=Security.parse(args.security) if args.security else None)
    cl = Cluster(spec)
    with _starting(spec.name):
        cl.start()
    _print_cluster(cl)
    print(f"# stop it with: kafka-chaos cluster down --name {cl.name}", file=sys.stderr)
    return EXIT_OK


def _nodes_status(path: str) -> int:
    """``cluster status --nodes FILE``: each node's host, roles and process state (read-only)."""
    from harness.cluster.remote_cluster import accesses, pending_everywhere   # lazy: paramiko
    f = distributions.resolve(nodes=path).nodes
    print(f"cluster={f.name}")
    print(f"bootstrap.servers={f.bootstrap_servers}")
    print(f"nodes_file={f.path}")
    accs = accesses(f)
    try:
        for (name, acc), rn in zip(accs.items(), f.nodes):
            _print_node(name, ",".join(rn.roles), acc.status(), acc.where())
        pending = pending_everywhere(f, accs)
    finally:
        for a in accs.values():
            a.close()
    if pending:
        print(f"# {len(pending)} change(s) not undone yet: `kafka-chaos cleanup --nodes {path}`")
    return EXIT_OK


def cmd_cluster_status(args) -> int:
    if args.json:      # harness/commands/cluster_status.py
        print(cluster_status.status_json(args.name, args.nodes))
        return EXIT_OK
    if args.nodes:
        return _nodes_status(args.nodes)
    names = [args.name] if args.name else sorted(list_clusters())
    if not names:
        print("no kafka-chaos clusters are running")
        return EXIT_OK
    for i, name in enumerate(names):
        if i:
            print()
        if _print_ssh_hosts(name):
            continue
        cl = Cluster.attach(name)
        _print_cluster(cl)
        for n in cl.nodes():
            _print_node(n.name, n.role, n.status(), str(n.endpoint))
    return EXIT_OK


def _print_node(name: str, role: str, status: str, where: str) -> None:
    """One node's line of ``cluster status``: name, role(s), state, where it is reached."""
    print(f"# {name:24} {role:18} {status:11} {where}")


def _print_ssh_hosts(name: str) -> bool:
    """An SSH test host set (tests/remote/hosts.py) under ``name``: its containers, not a cluster to attach to."""
    from harness.cluster.cleanup import labelled_containers
    cs = labelled_containers(f"{docker_util.LABEL_CLUSTER}={name}")
    if not cs or not all(c["Labels"].get(docker_util.LABEL_SSHHOST) == "1" for c in cs):
        return False
    print(f"# {name}: SSH test hosts (docs/ssh-test-hosts.md), reached over SSH through a nodes file; "
          f"`kafka-chaos cluster down --name {name}` removes them")
    for c in sorted(cs, key=lambda c: c["Names"][0]):
        ports = ", ".join(f"{p['PrivatePort']}->127.0.0.1:{p['PublicPort']}" for p in c.get("Ports", []) if p.get("PublicPort"))
        _print_node(c["Names"][0].lstrip("/"), "sshhost", c["State"], ports)
    return True


def cmd_cluster_down(args) -> int:
    if args.all:
        names = sorted(list_clusters())
    else:
        names = [args.name]
        if args.name not in list_clusters():
            raise HarnessError(f"no cluster named {args.name!r} (see `kafka-chaos cluster status`)")
    for name in names:
        n = remove_cluster(name)
        print(f"removed cluster {name} ({n} containers)")
    return EXIT_OK


def _cleanup_nodes(args) -> int:
    """``cleanup --nodes FILE``: undo what the journal of that nodes file still names (but a live harness's)."""
    from harness.cluster import remote_cluster     # lazy: paramiko
    f = distributions.resolve(nodes=args.nodes).nodes
    journal = remote_cluster.journal_of(f)
    if args.dry_run:
        accs = remote_cluster.accesses(f)        # with the hosts' copies: what a harness on another machine left
        try:
            pending = remote_cluster.pending_everywhere(f, accs)
        finally:
            for a in accs.values():
                a.close()
        for e in pending:
            print(f"would undo {e['kind']} on {e['node']} ({e.get('host', '?')}, run {e.get('run', '?')})")
        if not pending:
            print("nothing to undo")
        return EXIT_OK
    with lifecycle.Shield("cleanup"):
        n = remote_cluster.cleanup(f)
    left = journal.pending()
    print(f"undid {n} change(s) on the hosts of {f.name}" + (f"; {len(left)} left (a running harness's)" if left else ""))
    return EXIT_OK


def cmd_cleanup(args) -> int:
    """Remove what the harness made: everything labelled (default) or only what dead owners left
    (``--dead-only``); plus in-progress run records of dead owners; ``--dry-run`` lists it instead."""
    if args.nodes:
        return _cleanup_nodes(args)
    runs_dirs = args.runs_dir or (["runs"] if Path("runs").is_dir() else [])
    everything = not args.dead_only
    if args.dry_run:
        items = lifecycle.find(docker_util.client(), everything=everything, runs_dirs=runs_dirs)
        for i in items:
            print(f"would remove {i.line()}")
        if not items:
            print("nothing to remove")
        return EXIT_OK
    with lifecycle.Shield("cleanup"):
        done = lifecycle.reap(docker_util.client(), everything=everything, runs_dirs=runs_dirs)
    for i in done:
        print(f"removed {i.line()}")
    print(f"removed {lifecycle.summary(done) or 'nothing'}")
    return EXIT_OK


# -- report ----------------------------------------------------------------------------------------
def run_report(argv: list[str]) -> int:
    """`kafka-chaos report ...`: handed whole to the Spark job's own parser (reports/job.py)."""
    try:
        from reports import job  # lazy: the Spark report job; an ImportError here is exit 5 (the install), not a crash at start-up
    except ImportError as e:
        print(f"kafka-chaos: error: the report job is not available: {e} (pip install 'kafka-chaos[report]')",
              file=sys.stderr)
        return EXIT_ENV
    try:
        return job.main(argv)
    except KeyboardInterrupt:
        print("kafka-chaos: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as e:  # noqa: BLE001 - one line, exit 2, never a traceback
        return _unexpected(e)


def cmd_report(args) -> int:
    return run_report(args.rest)


# -- checks made before any Docker work (each command module has its own: ``precheck``) -----------
def _check_cluster_up(args) -> None:
    """`cluster up`: the distribution (resolved here, once: ``args.adapter``), and an unknown
    --kafka-version or one the distribution cannot run, said before Docker is asked anything."""
    if args.distribution_file and args.kafka_version:
        raise HarnessError("--kafka-version does not apply to --distribution-file: the file names its image "
                           "(--broker-image overrides it)")
    check_security(args)
    args.adapter = distributions.resolve(args.distribution, args.distribution_file, args.layout)
    if args.kafka_version:
        args.adapter.fits(args.kafka_version)
        images.resolve_version(args.kafka_version)


def _check_images(args) -> None:
    """`images build`: every --kafka version is resolved before the first build starts."""
    if getattr(args, "images_command", None) in ("build", "build-host"):
        for v in args.kafka or []:
            images.resolve_version(v)




# -- parser ----------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="kafka-chaos", description="Chaos and conformance harness for real Kafka-compatible clusters.",
                epilog="Exit codes: 0 pass, 1 a check failed, 2 usage error, 3 incompatible broker, 4 ran but undecided "
                       "(UNKNOWN), 5 environment error, 130 interrupted (docs/cli.md).")
    p.add_argument("--version", action="version", version=f"kafka-chaos {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    pi = sub.add_parser("images", help="build or list the local broker images")
    isub = pi.add_subparsers(dest="images_command", metavar="ACTION", parser_class=_Parser)
    b = isub.add_parser("build", help="build kafka-chaos/kafka:<version> offline (cached)")
    b.add_argument("--kafka", action="append", metavar="VERSION",
                   help=f"Kafka version or series (default: {images.default_version_help()}); repeat for several")
    b.add_argument("--force", action="store_true", help="rebuild even if cached")
    b.set_defaults(func=cmd_images_build, precheck=_check_images)
    bk = isub.add_parser("build-kfake", help="build kafka-chaos/kfake:latest offline: franz-go's kfake (Go module) "
                                             "as a broker binary (brokers/kfake, docs/broker-contract.md)")
    bk.add_argument("--force", action="store_true", help="rebuild even if cached")
    bk.set_defaults(func=cmd_images_build_kfake)
    bx = isub.add_parser("build-kroxylicious", help="build kafka-chaos/kroxylicious:<kafka> offline: the Kroxylicious "
                                                    "proxy (Maven Central) in front of Apache Kafka KRaft, one per node "
                                                    "(brokers/kroxylicious, docs/broker-contract.md)")
    bx.add_argument("--kafka", default="4.1.2", metavar="VERSION", help="the Apache Kafka image behind it (default 4.1.2)")
    bx.add_argument("--force", action="store_true", help="rebuild even if cached")
    bx.set_defaults(func=cmd_images_build_kroxylicious)
    bt = isub.add_parser("build-tansu", help="build kafka-chaos/tansu:<version> and its store kafka-chaos/seaweedfs:latest "
                                             "offline: Tansu (crates.io, cargo) and SeaweedFS (Go module proxy) "
                                             "(brokers/tansu, docs/examples/tansu.toml)")
    bt.add_argument("--version", default="0.6.0", metavar="VERSION", help="the tansu crate's version (default 0.6.0)")
    bt.add_argument("--force", action="store_true", help="rebuild the images even if cached")
    bt.set_defaults(func=cmd_images_build_tansu)
    bh = isub.add_parser("build-host", help="build kafka-chaos/sshhost:<version> offline: an SSH test host (sshd, Kafka "
                                            "as a service) for --nodes tests (docs/ssh-test-hosts.md)")
    bh.add_argument("--kafka", action="append", metavar="VERSION", help="Kafka version (default 4.4.0); repeat for several")
    bh.add_argument("--force", action="store_true", help="rebuild even if cached")
    bh.set_defaults(func=cmd_images_build_host, precheck=_check_images)
    ls = isub.add_parser("list", help="show the images built here")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=cmd_images_list)

    pc = sub.add_parser("cluster", help="start, inspect or remove a cluster left running for exploration")
    csub = pc.add_subparsers(dest="cluster_command", metavar="ACTION", parser_class=_Parser)
    up = csub.add_parser("up", help="start a cluster and leave it running")
    up.add_argument("--name", default="default", help="cluster name (default: default)")
    up.add_argument("--brokers", type=int, default=3)
    up.add_argument("--zookeepers", type=int, default=1, choices=[1, 3, 5])
    g = up.add_mutually_exclusive_group()
    g.add_argument("--kafka-version", metavar="V", help=f"Kafka version (default: {images.default_version_help()})")
    g.add_argument("--broker-image", metavar="IMG", help="an image present locally")
    up.add_argument("--config", action="append", metavar="KEY=VALUE", help="broker config override (repeatable)")
    add_distribution_args(up, distributions.CHOICES_HELP)
    up.add_argument("--controllers", type=int, default=3, choices=[1, 3, 5],
                    help="controller-only nodes of apache-kraft-dedicated (default 3; ids 101, 102, ...)")
    up.add_argument("--port-base", type=int, help="fixed host ports: brokers BASE+id, ZooKeeper BASE+100+n")
    up.add_argument("--build", action="store_true", help="build the image first if it is missing")
    add_security_arg(up)
    up.set_defaults(func=cmd_cluster_up, precheck=_check_cluster_up)
    st = csub.add_parser("status", help="print bootstrap.servers / zookeeper.connect of running clusters")
    st.add_argument("--name")
    st.add_argument("--json", action="store_true", help="the clusters as one JSON object on stdout")
    add_nodes_arg(st, "show")
    st.set_defaults(func=cmd_cluster_status)
    dn = csub.add_parser("down", help="remove a cluster")
    dn.add_argument("--name", default="default")
    dn.add_argument("--all", action="store_true", help="remove every kafka-chaos cluster")
    dn.set_defaults(func=cmd_cluster_down)

    cu = sub.add_parser("cleanup", help="remove every container, network and volume the harness created "
                                          "(--dead-only: only what dead kafka-chaos processes left)")
    cu.add_argument("--dead-only", action="store_true",
                    help="only what kafka-chaos processes that died on this host left (what every command does "
                         "first); never a live process's cluster nor a `cluster up` cluster")
    cu.add_argument("--dry-run", action="store_true", help="list what would be removed, one line each")
    cu.add_argument("--runs-dir", action="append", metavar="DIR",
                    help="also look for in-progress records (.tmp-*) of dead runs here (default: ./runs)")
    add_nodes_arg(cu, "undo what runs left on")
    cu.set_defaults(func=cmd_cleanup)

    rp = sub.add_parser("report", help="aggregate run records with Spark (options: `kafka-chaos report --help`)",
                        add_help=False)
    rp.add_argument("rest", nargs=argparse.REMAINDER)
    rp.set_defaults(func=cmd_report)

    _add_run_parser(sub)
    return p


def _add_run_parser(sub) -> None:
    """`run`, `certify`, `check`, `demo`, `doctor` and `completion` are defined next to their commands."""
    run_command.add_parser(sub)
    certify.add_parser(sub)
    plan.add_args(sub.choices["certify"])
    plan.attach(sub.choices["certify"], plan.certify_plan)     # certify --plan: harness/commands/plan.py
    check.add_parser(sub)
    demo.add_parser(sub, main)
    doctor.add_parser(sub)
    completion.add_parser(sub, build_parser)
    validate.add_parser(sub)      # validate FILE...: harness/commands/validate.py


def _reap_at_start(args=None) -> None:
    """Every command first removes what dead kafka-chaos processes left (harness/cluster/lifecycle.py): silent
    and quick when there is nothing, never blocking when Docker is down. ``cleanup`` does it itself."""
    if args is not None and (args.command in ("cleanup", "completion", "doctor", "validate") or getattr(args, "plan", False)):
        return      # --plan touches nothing: not even what dead processes left
    runs = [getattr(args, "runs_dir", None) or "runs"]
    reap_at_start([storage.local_runs_dir(r) for r in runs if isinstance(r, str)])


def _sigterm_as_interrupt(signum, frame):
    """SIGTERM behaves like Ctrl-C so that cleanup code (heal faults, remove containers) runs."""
    raise KeyboardInterrupt


def _subparser(parser: argparse.ArgumentParser, args) -> argparse.ArgumentParser:
    """The parser of the deepest (sub)command ``args`` selected (``cluster up`` -> that one)."""
    p = parser
    while True:
        sp = next((a for a in p._actions if isinstance(a, argparse._SubParsersAction)), None)
        name = getattr(args, sp.dest, None) if sp else None
        if not name or name not in sp.choices:
            return p
        p = sp.choices[name]


def _missing_action(parser: argparse.ArgumentParser, args) -> int:
    """No command, or a group (``images``, ``cluster``) without its action: name what may follow."""
    p = _subparser(parser, args)
    sp = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    what = "a command" if p is parser else "an action"
    print(f"kafka-chaos: error: `{p.prog}` needs {what}: {', '.join(sp.choices)} (see `{p.prog} --help`)",
          file=sys.stderr)
    return EXIT_USAGE


def _unexpected(e: BaseException) -> int:
    """Any other exception: one line instead of a traceback (``KAFKA_CHAOS_DEBUG=1`` re-raises)."""
    if os.environ.get(DEBUG_ENV, "") not in ("", "0"):
        raise e
    if isinstance(e, BrokenPipeError):   # `kafka-chaos run list | head`: the reader left; stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_USAGE
    if type(e).__module__.split(".")[0] == "docker":   # docker-py: the engine refused a request
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        print(f"kafka-chaos: error: the Docker engine refused a request: {msg}", file=sys.stderr)
        return EXIT_USAGE if "invalid reference format" in msg else EXIT_ENV   # a malformed name is the user's
    elif isinstance(e, OSError) and e.strerror:
        where = f": {e.filename}" if e.filename else ""
        print(f"kafka-chaos: error: {e.strerror}{where}", file=sys.stderr)
    else:
        last = traceback.extract_tb(e.__traceback__)[-1:] or None
        at = f" at {Path(last[0].filename).name}:{last[0].lineno}" if last else ""
        msg = str(e).splitlines()[0] if str(e) else ""
        print(f"kafka-chaos: error: unexpected {type(e).__name__}{at}: {msg} (a harness bug: please report "
              f"it; {DEBUG_ENV}=1 shows the traceback)", file=sys.stderr)
    return EXIT_USAGE


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["report"]:
        _reap_at_start()
        return run_report(argv[1:])
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
    if extras:
        _subparser(parser, args).unrecognized(extras)
    if not getattr(args, "func", None):
        return _missing_action(parser, args)
    signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
    try:
        _reap_at_start(args)
        if getattr(args, "precheck", None):     # each command's own checks before any Docker work
            args.precheck(args)
        return args.func(args)
    except HarnessError as e:
        print(f"kafka-chaos: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("kafka-chaos: interrupted; containers of this command were removed", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as e:  # noqa: BLE001 - no traceback for the user: one line, exit 2
        return _unexpected(e)


if __name__ == "__main__":
    sys.exit(main())
