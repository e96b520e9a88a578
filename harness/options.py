"""Small command-line value parsers shared by several subcommands."""

from __future__ import annotations

import difflib
import os
from pathlib import Path

from harness.distributions import KRAFT_LAYOUTS, NAMES
from harness.errors import HarnessError
from harness.record import storage


def did_you_mean(word: str, candidates, n: int = 1) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``candidates`` to ``word``, or ``""``.

    A scenario's variant alone (``kill_leader``) finds its full ``family.variant`` names (up to 3);
    otherwise the closest spelling (difflib)."""
    candidates = list(dict.fromkeys(candidates))
    close = [c for c in candidates if "." in c and c.rsplit(".", 1)[-1] == word][:3]
    close = close or difflib.get_close_matches(word, candidates, n=n, cutoff=0.6)
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""


def check_writable_dir(path: str, option: str) -> None:
    """A usage error unless ``path`` is, or could be created as, a writable directory (creates nothing)."""
    probe = Path(path).expanduser().absolute()
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    if not probe.is_dir():
        raise HarnessError(f"{option} {path}: {probe} is not a directory")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise HarnessError(f"{option} {path}: {probe} is not writable")


def check_runs_dir(runs_dir: str, option: str = "--runs-dir", endpoint: str | None = None) -> None:
    """A local runs dir must be writable; an ``s3://`` one must parse, answer and accept our credentials
    (and its local staging directory must be writable): checked before any Docker work."""
    if storage.is_remote(runs_dir):
        check_writable_dir(storage.local_runs_dir(runs_dir), f"{option} {runs_dir}: staging directory")
        storage.open_store(runs_dir, endpoint).check()
    else:
        check_writable_dir(runs_dir, option)


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


def feature_pairs(pairs: list[str] | None) -> dict[str, int]:
    """``--feature NAME=LEVEL`` values (``["transaction.version=1"]``) -> ``{"transaction.version": 1}``; an
    unknown name or a level that is not an integer is a usage error naming it (whether the broker knows
    the level is decided with the broker: Distribution.features_problem)."""
    from reference.feature_versions import NAMES
    out: dict[str, int] = {}
    for p in pairs or []:
        k, sep, v = p.partition("=")
        k = k.strip()
        if not sep or not k or not v.strip().isdigit():
            raise HarnessError(f"--feature expects NAME=LEVEL (e.g. transaction.version=1), got {p!r}")
        if k not in NAMES:
            raise HarnessError(f"--feature {p}: unknown feature {k!r}; known: {', '.join(NAMES)}")
        out[k] = int(v)
    return out


def config_args(overrides: dict[str, str]) -> list[str]:
    """The ``--config KEY=VALUE`` arguments that give a child process the same overrides."""
    return [a for k, v in overrides.items() for a in ("--config", f"{k}={v}")]


def add_security_arg(parser) -> None:
    """``--security PROTOCOL[:MECHANISM]``: the client-facing listener of the clusters a command starts
    (checked by :func:`check_security`; docs/security.md)."""
    parser.add_argument("--security", metavar="PROTOCOL[:MECHANISM]", default=None,
                        help="the brokers' client listener: PLAINTEXT (default), SSL, SASL_PLAINTEXT or SASL_SSL, "
                             "with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (default for SASL) after a colon, e.g. "
                             "SASL_SSL:SCRAM-SHA-512; certificates and the password are made per run "
                             "(docs/security.md)")


def check_security(args) -> None:
    """``args.security`` normalised (``sasl_ssl`` -> ``SASL_SSL:SCRAM-SHA-512``); a bad value is one line."""
    if getattr(args, "security", None) is not None:
        from harness.cluster.security import Security     # noqa: the parsing rules live with the dataclass
        args.security = Security.parse(args.security, "--security").spec()


def add_distribution_args(parser, help: str) -> None:
    """``--distribution`` (its ``help``), ``--layout`` and ``--distribution-file``: the three ways a command
    line names the distribution adapter (resolved once: :func:`harness.distributions.resolve`)."""
    parser.add_argument("--distribution", choices=NAMES, default=None, help=help)
    parser.add_argument("--layout", choices=tuple(KRAFT_LAYOUTS), default=None,
                        help="KRaft node layout: combined (broker+controller nodes, the apache-kraft default) or "
                             "dedicated-controllers (a controller-only quorum beside the brokers: the same as "
                             "--distribution apache-kraft-dedicated); implies --distribution apache-kraft")
    parser.add_argument("--distribution-file", metavar="PATH",
                        help="a broker described by a TOML distribution file instead of --distribution "
                             "(docs/broker-contract.md; example docs/examples/kfake.toml): its image, per-node "
                             "environment and command, node ids, layout and capabilities")


def add_nodes_arg(parser, what: str = "run against") -> None:
    """``--nodes FILE``: a cluster the harness does not start (docs/remote.md)."""
    parser.add_argument("--nodes", metavar="FILE",
                        help=f"{what} the nodes a TOML nodes file names, reached over SSH (a cluster the harness "
                             "does not start; docs/remote.md): host keys checked, every change on the hosts "
                             "journaled and undone")
