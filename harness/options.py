"""Small command-line value parsers shared by several subcommands."""

from __future__ import annotations

import re

from harness.errors import HarnessError


def config_pairs(pairs: list[str] | None, option: str = "--config") -> dict[str, str]:
    """``["a=1", "b=x=y"]`` -> ``{"a": "1", "b": "x=y"}``; a pair without ``=`` or with an empty key is
    a usage error naming the option."""
    out: dict[str, str] = {}
    for p in pairs or []:
        k, sep, v = p.partition("=")
        if not sep or not k.strip():
            raise HarnessError(f"{option} expects KEY=VALUE, got {p!r}")
        out[k.strip()] = v.strip()
    return out


def config_args(overrides: dict[str, str]) -> list[str]:
    """The ``--config KEY=VALUE`` arguments that give a child process the same overrides."""
    return [a for k, v in overrides.items() for a in ("--config", f"{k}={v}")]


LAYOUTS = ("combined", "dedicated-controllers")
# (distribution, layout) -> the distribution adapter that runs that layout (docs/kraft.md "Layouts")
_LAYOUT_ADAPTER = {("apache-kraft", "combined"): "apache-kraft",
                   ("apache-kraft", "dedicated-controllers"): "apache-kraft-dedicated",
                   ("apache-kraft-dedicated", "dedicated-controllers"): "apache-kraft-dedicated"}


def add_layout_arg(parser) -> None:
    parser.add_argument("--layout", choices=LAYOUTS, default=None,
                        help="KRaft node layout: combined (broker+controller nodes, the apache-kraft default) or "
                             "dedicated-controllers (a controller-only quorum beside the brokers: the same as "
                             "--distribution apache-kraft-dedicated); implies --distribution apache-kraft")


def apply_layout(args) -> None:
    """``--layout`` into ``args.distribution`` (the adapter that runs the layout); HarnessError when the
    distribution has no such layout (ZooKeeper mode, a generic image: their layout is the image's)."""
    layout = getattr(args, "layout", None)
    if layout is None:
        return
    dist = args.distribution or "apache-kraft"
    adapter = _LAYOUT_ADAPTER.get((dist, layout))
    if adapter is None:
        raise HarnessError(f"--layout {layout} is not a layout of --distribution {dist}: layouts are for Apache "
                           f"KRaft (apache-kraft: {', '.join(LAYOUTS)})")
    args.distribution = adapter


def check_distribution_fits(kafka_version: str | None, distribution: str | None,
                            default: str | None = "apache-zk") -> None:
    """Refuse a ``--kafka-version`` the ``--distribution`` cannot run (4.x in ZooKeeper mode, KRaft
    before 3.3) before an image is built or Docker asked; the same words as the check of the image
    itself (harness/distributions/__init__.py), which still covers ``--broker-image``. ``default`` is what no
    ``--distribution`` means (``run``, ``cluster up``: apache-zk; ``certify``: None, from the image)."""
    m = re.fullmatch(r"\s*(\d+)\.(\d+)(\.\d+)?\s*", kafka_version or "")
    if not m:
        return                      # the default version, or a malformed one (resolve_version says so)
    version, key = kafka_version.strip(), (int(m.group(1)), int(m.group(2)))
    distribution = distribution or default
    if distribution == "apache-zk" and key >= (4, 0):
        raise HarnessError(f"Kafka {version} has no ZooKeeper mode; use --distribution apache-kraft")
    if (distribution or "").startswith("apache-kraft") and key < (3, 3):   # apache-kraft, apache-kraft-dedicated
        raise HarnessError(f"Kafka {version} has no production KRaft mode; use 3.3 or newer")


def add_distribution_file_arg(parser) -> None:
    parser.add_argument("--distribution-file", metavar="PATH",
                        help="a broker described by a TOML distribution file instead of --distribution "
                             "(docs/broker-contract.md; example docs/examples/kfake.toml): its image, per-node "
                             "environment and command, node ids, layout and capabilities")


def apply_distribution_file(args) -> None:
    """``--distribution-file PATH`` into ``args.distribution`` (``file:<absolute path>``) after checking
    the file (one error naming the file and key); its image becomes ``--broker-image`` unless one is given."""
    path = getattr(args, "distribution_file", None)
    if not path:
        return
    from harness.distributions.file import PREFIX, FileDistribution   # lazy: loads the capability table
    if args.distribution and not args.distribution.startswith(PREFIX):
        raise HarnessError("--distribution-file and --distribution cannot be combined: the file is the distribution")
    if getattr(args, "layout", None):
        raise HarnessError("--layout does not apply to --distribution-file: the file's `layout` key says it")
    if getattr(args, "kafka_version", None):
        raise HarnessError("--kafka-version does not apply to --distribution-file: the file names its image "
                           "(--broker-image overrides it)")
    dist = FileDistribution(path)
    args.distribution = dist.name
    if hasattr(args, "broker_image") and not args.broker_image:
        args.broker_image = dist.image


def distribution_args(distribution: str | None) -> list[str]:
    """The arguments that give a child ``kafka-chaos run`` the same distribution."""
    if not distribution:
        return []
    if distribution.startswith("file:"):
        return ["--distribution-file", distribution[len("file:"):]]
    return ["--distribution", distribution]
