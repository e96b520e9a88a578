"""The ``kafka-chaos`` command line.

Exit codes: 0 success / every verdict PASS, 1 a check failed, 2 usage or environment error
(including Ctrl-C, which cleans up first).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys

from . import __version__
from .errors import HarnessError

EXIT_OK, EXIT_FAIL, EXIT_ENV = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors and exit code 2."""

    def error(self, message: str):  # noqa: D401
        self.exit(EXIT_ENV, f"kafka-chaos: error: {message} (see `{self.prog} --help`)\n")


def _config_pairs(pairs: list[str] | None) -> dict[str, str]:
    out = {}
    for p in pairs or []:
        if "=" not in p:
            raise HarnessError(f"--config expects KEY=VALUE, got {p!r}")
        k, v = p.split("=", 1)
        out[k.strip()] = v.strip()
    return out


# -- images ----------------------------------------------------------------------------------------
def cmd_images_build(args) -> int:
    from . import images
    versions = args.kafka or [None]
    for v in versions:
        b = images.build(v, force=args.force)
        state = "cached" if b.cached else "built"
        print(f"{b.tag} {state} in {b.seconds:.1f} s (id {b.image_id.replace('sha256:', '')[:12]})")
    return EXIT_OK


def cmd_images_list(args) -> int:
    from . import images
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
    if cl.distribution.has_zookeeper:
        print(f"zookeeper.connect={cl.zookeeper_connect}")
    else:
        print(f"distribution={cl.distribution.name}")


def cmd_cluster_up(args) -> int:
    from .cluster import Cluster, ClusterSpec
    spec = ClusterSpec(brokers=args.brokers, zookeepers=args.zookeepers, kafka_version=args.kafka_version,
                       image=args.broker_image, broker_config=_config_pairs(args.config), name=args.name,
                       persistent=True, port_base=args.port_base, build_missing=args.build,
                       distribution=args.distribution)
    cl = Cluster(spec)
    cl.start()
    _print_cluster(cl)
    print(f"# stop it with: kafka-chaos cluster down --name {cl.name}", file=sys.stderr)
    return EXIT_OK


def cmd_cluster_status(args) -> int:
    from .cluster import Cluster, list_clusters
    names = [args.name] if args.name else sorted(list_clusters())
    if not names:
        print("no kafka-chaos clusters are running")
        return EXIT_OK
    for i, name in enumerate(names):
        cl = Cluster.attach(name)
        if i:
            print()
        _print_cluster(cl)
        for n in cl.nodes():
            print(f"# {n.name:24} {n.role:10} {n.status():8} 127.0.0.1:{n.host_port}")
    return EXIT_OK


def cmd_cluster_down(args) -> int:
    from .cluster import list_clusters, remove_cluster
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


def cmd_cleanup(args) -> int:
    from .cluster import cleanup_all
    counts = cleanup_all()
    print(f"removed {counts['containers']} containers, {counts['networks']} networks, {counts['volumes']} volumes")
    return EXIT_OK


# -- report ----------------------------------------------------------------------------------------
def run_report(argv: list[str]) -> int:
    """`kafka-chaos report ...`: handed whole to the Spark job's own parser (reports/job.py)."""
    try:
        from reports import job
    except ImportError as e:
        print(f"kafka-chaos: error: the report job is not available: {e}", file=sys.stderr)
        return EXIT_ENV
    try:
        return job.main(argv)
    except KeyboardInterrupt:
        print("kafka-chaos: interrupted", file=sys.stderr)
        return EXIT_ENV


def cmd_report(args) -> int:
    return run_report(args.rest)


# -- parser ----------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="kafka-chaos", description="Chaos and conformance harness for real Kafka-compatible clusters.",
                epilog="Exit codes: 0 pass, 1 a check failed, 2 usage or environment error.")
    p.add_argument("--version", action="version", version=f"kafka-chaos {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    pi = sub.add_parser("images", help="build or list the local broker images")
    isub = pi.add_subparsers(dest="images_command", metavar="ACTION", parser_class=_Parser)
    b = isub.add_parser("build", help="build kafka-chaos/kafka:<version> offline (cached)")
    b.add_argument("--kafka", action="append", metavar="VERSION",
                   help="Kafka version or series (default: latest 3.9.x); repeat for several")
    b.add_argument("--force", action="store_true", help="rebuild even if cached")
    b.set_defaults(func=cmd_images_build)
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
    g.add_argument("--kafka-version", metavar="V", help="Kafka version (default: latest 3.9.x)")
    g.add_argument("--broker-image", metavar="IMG", help="an image present locally")
    up.add_argument("--config", action="append", metavar="KEY=VALUE", help="broker config override (repeatable)")
    up.add_argument("--distribution", choices=["apache-zk", "apache-kraft"], default=None,
                    help="apache-zk (default: ZooKeeper mode) or apache-kraft (KRaft: combined broker+controller "
                         "nodes, no ZooKeeper)")
    up.add_argument("--port-base", type=int, help="fixed host ports: brokers BASE+id, ZooKeeper BASE+100+n")
    up.add_argument("--build", action="store_true", help="build the image first if it is missing")
    up.set_defaults(func=cmd_cluster_up)
    st = csub.add_parser("status", help="print bootstrap.servers / zookeeper.connect of running clusters")
    st.add_argument("--name")
    st.set_defaults(func=cmd_cluster_status)
    dn = csub.add_parser("down", help="remove a cluster")
    dn.add_argument("--name", default="default")
    dn.add_argument("--all", action="store_true", help="remove every kafka-chaos cluster")
    dn.set_defaults(func=cmd_cluster_down)

    cu = sub.add_parser("cleanup", help="remove every container, network and volume the harness created")
    cu.set_defaults(func=cmd_cleanup)

    rp = sub.add_parser("report", help="aggregate run records with Spark (see `kafka-chaos report -- --help`)",
                        add_help=False)
    rp.add_argument("rest", nargs=argparse.REMAINDER)
    rp.set_defaults(func=cmd_report)

    _add_run_parser(sub)
    return p


def _add_run_parser(sub) -> None:
    """`run` lives in harness.runner once suites exist; registered here when importable."""
    try:
        from . import runner
    except ImportError:
        return
    runner.add_parser(sub)
    from . import certify
    certify.add_parser(sub)


def _sigterm_as_interrupt(signum, frame):
    """SIGTERM behaves like Ctrl-C so that cleanup code (heal faults, remove containers) runs."""
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["report"]:
        return run_report(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        # no command, or a group without an action: say what is missing
        what = args.command or "a command"
        print(f"kafka-chaos: error: {what} needs an action (see `kafka-chaos {args.command or ''} --help`)"
              .replace(" `kafka-chaos  --help`", " `kafka-chaos --help`"), file=sys.stderr)
        return EXIT_ENV
    signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
    try:
        return args.func(args)
    except HarnessError as e:
        print(f"kafka-chaos: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("kafka-chaos: interrupted; containers of this command were removed", file=sys.stderr)
        return EXIT_ENV


if __name__ == "__main__":
    sys.exit(main())
