"""``kafka-chaos validate FILE...``: check scenario, distribution and nodes files before spending minutes.

Each file is read by the loader ``run`` / ``certify`` / ``cluster up`` use (so what passes here loads
there), and nothing else happens: no Docker request, no SSH connection, no network, no file written::

    $ kafka-chaos validate docs/examples/scenarios/isr.toml broken.toml kfake.toml
    docs/examples/scenarios/isr.toml: ok (scenario file isr.shrink_expand)
    kafka-chaos: error: broken.toml:7: steps[0].fault: unknown fault 'kil'; allowed: ... (did you mean 'kill'?)
    kfake.toml: ok (distribution file kfake)

One line per file: ``FILE: ok (...)`` on stdout, or the file's first error as ``FILE:LINE: KEY: what``
on stderr (LINE 0 when the key is not in the file, e.g. a missing required key). Exit 0 when every
file is valid, 2 otherwise. ``--kind`` names the kind of every file; without it the kind is taken
from the file's keys: ``[[node]]`` tables make a nodes file, a top-level ``image`` a distribution file,
anything else a scenario file. ``--format github`` writes the errors as GitHub workflow commands
(``::error file=...,line=...::``) so they show on the pull request's diff.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

from harness.errors import HarnessError

KINDS = ("scenario", "distribution", "nodes")
EXIT_OK, EXIT_INVALID = 0, 2


def add_parser(sub) -> None:
    v = sub.add_parser("validate", help="check scenario, distribution and nodes files (one line each; nothing is "
                                        "started)")
    v.add_argument("files", nargs="+", metavar="FILE", help="TOML files: scenario, distribution (--distribution-file) "
                                                          "or nodes (--nodes) files")
    v.add_argument("--kind", choices=KINDS, help="the kind of every FILE (default: told by each file's keys)")
    v.add_argument("--format", choices=("text", "github"), default="text",
                   help="text (default), or github: errors as GitHub workflow annotations on stdout")
    v.set_defaults(func=cmd_validate)


def kind_of(doc: dict) -> str:
    """The kind of a parsed file, from its keys (see the module docstring)."""
    if isinstance(doc.get("node"), list):
        return "nodes"
    if "image" in doc:
        return "distribution"
    return "scenario"


def _path_of(key: str) -> tuple:
    """``service[0].port`` / ``ssh.key_file`` / ``config."log.dirs"`` -> ("service", 0, "port") ..."""
    out: list = []
    for m in re.finditer(r'"([^"]*)"|\[(\d+)\]|([^.\[\]"]+)', key):
        quoted, index, plain = m.groups()
        out.append(int(index) if index is not None else quoted if quoted is not None else plain)
    return tuple(out)


def _nodes_where(doc: dict, where: str) -> tuple:
    """A nodes file error's ``where`` (``node 3``, ``node #2``, ``node 3: ssh``, ``ports``, ``client``) as a path."""
    path: list = []
    for part in [p.strip() for p in where.split(":") if p.strip()]:
        m = re.fullmatch(r"node (#?)(\d+)", part)
        if not m:
            path.append(part)
            continue
        nodes = doc.get("node") if isinstance(doc.get("node"), list) else []
        if m.group(1):
            path += ["node", int(m.group(2)) - 1]
        else:
            idx = next((i for i, t in enumerate(nodes) if isinstance(t, dict) and t.get("id") == int(m.group(2))), None)
            path += ["node"] + ([idx] if idx is not None else [])
    return tuple(path)


def _toml_line(e: BaseException) -> int:
    m = re.search(r"\(at line (\d+), column \d+\)", str(e))
    return int(m.group(1)) if m else 0


def _check_scenario(name: str) -> str:
    from harness import distributions
    from harness.scenario.file import load_file      # errors are already FILE:LINE: KEY: what
    f = load_file(name)
    if f.distribution:          # a [cluster] distribution the harness does not know, or a version it cannot run
        try:
            adapter = distributions.resolve(f.distribution)
            adapter.fits(f.kafka_version)
        except HarnessError as e:
            from harness.scenario.file import find_line
            text = Path(name).read_text(encoding="utf-8")
            raise _Invalid(name, find_line(text, ("cluster", "distribution")), "cluster.distribution", str(e)) from None
    return f"scenario file {f.scenario.name}"


def _check_distribution(name: str, doc: dict, text: str) -> str:
    from harness.distributions.file import DistributionFileError, parse
    from harness.distributions.capability_table import capability_names
    from harness.scenario.file import find_line
    try:
        spec = parse(Path(name).expanduser().absolute(), doc, tuple(capability_names()))
    except DistributionFileError as e:
        key = getattr(e, "key", "")
        raise _Invalid(name, find_line(text, _path_of(key)) if key else 0, key, getattr(e, "what", str(e))) from None
    return f"distribution file {spec.name}, {spec.layout}, node ids {','.join(map(str, spec.node_ids))}"


def _check_nodes(name: str, doc: dict, text: str) -> str:
    from harness.remote.nodes_file import NodesFileError, load
    from harness.scenario.file import find_line, key_name
    try:
        f = load(name)
    except NodesFileError as e:
        if not hasattr(e, "key"):
            raise _Invalid(name, _toml_line(e), "", str(e).split(": ", 1)[-1]) from None
        path = _nodes_where(doc, e.where) + _path_of(e.key)
        raise _Invalid(name, find_line(text, path), key_name(path), e.what) from None
    return f"nodes file {f.name}, {len(f.nodes)} node(s)"


class _Invalid(Exception):
    def __init__(self, path: str, line: int, key: str, what: str):
        super().__init__(what)
        self.path, self.line, self.key, self.what = path, line, key, what

    def text(self) -> str:
        return f"{self.path}:{self.line}: {self.key}: {self.what}" if self.key else f"{self.path}:{self.line}: {self.what}"


def validate(name: str, kind: str | None = None) -> str:
    """Check one file; its one-line description when valid, :class:`_Invalid` (file, line, key, what) when not."""
    from harness.scenario.file import ScenarioFileError
    try:
        text = Path(name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise _Invalid(name, 0, "", f"cannot read: {e.strerror if isinstance(e, OSError) else e}") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise _Invalid(name, _toml_line(e), "", "not valid TOML: "
                       + re.sub(r"\s*\(at line \d+, column \d+\)", "", str(e))) from None
    kind = kind or kind_of(doc)
    try:
        if kind == "distribution":
            return _check_distribution(name, doc, text)
        if kind == "nodes":
            return _check_nodes(name, doc, text)
        return _check_scenario(name)
    except ScenarioFileError as e:
        raise _Invalid(e.path, e.line, e.key, e.detail) from None


def _github(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def cmd_validate(args) -> int:
    bad = 0
    for name in args.files:
        try:
            what = validate(name, args.kind)
        except _Invalid as e:
            bad += 1
            if args.format == "github":
                where = f"file={_github(e.path)}" + (f",line={e.line}" if e.line else "")
                print(f"::error {where}::{_github((e.key + ': ' if e.key else '') + e.what)}")
            else:
                print(f"kafka-chaos: error: {e.text()}", file=sys.stderr)
            continue
        print(f"{name}: ok ({what})")
    if len(args.files) > 1 or bad:
        print(f"{len(args.files) - bad} of {len(args.files)} file(s) valid", file=sys.stderr)
    return EXIT_INVALID if bad else EXIT_OK
