"""``kafka-chaos validate FILE...``: check scenario, distribution and nodes files before spending minutes.

Each file is read by the loader ``run`` / ``certify`` / ``cluster up`` use (so what passes here loads
there), and nothing else happens: no Docker request, no SSH connection, no network, no file written::

    $ kafka-chaos validate docs/examples/scenarios/isr.toml broken.toml kfake.toml
    docs/examples/scenarios/isr.toml: ok (scenario file isr.shrink_expand)
    kafka-chaos: error: broken.toml:7: steps[0].fault: unknown fault 'kil'; allowed: ... (did you mean 'kill'?)
    kfake.toml: ok (distribution file kfake)

``FILE: ok (...)`` on stdout for a valid file, or every error of the file, one line each, as
``FILE:LINE: KEY: what`` on stderr (LINE 0 when the key is not in the file, e.g. a missing required key):
after an error the value is set aside and the file checked again (:func:`validate`). Exit 0 when every
file is valid, 2 otherwise. ``--kind`` names the kind of every file; without it the kind is taken
from the file's keys: ``[[node]]`` tables make a nodes file, a top-level ``image`` a distribution file,
anything else a scenario file. ``--format github`` writes the errors as GitHub workflow commands
(``::error file=...,line=...::``) so they show on the pull request's diff.
"""

from __future__ import annotations

import re
import sys
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


MAX_ERRORS = 50          # per file: a guard; each error sets a key aside, so a file has at most this many


class _Invalid(Exception):
    def __init__(self, path: str, line: int, key: str, what: str):
        super().__init__(what)
        self.path, self.line, self.key, self.what = path, line, key, what

    def text(self) -> str:
        return f"{self.path}:{self.line}: {self.key}: {self.what}" if self.key else f"{self.path}:{self.line}: {self.what}"


def _check_scenario(name: str, doc: dict) -> str:
    from harness.scenario.file import build
    scenario, _dist, _version = build(doc, Path(name).stem)
    return f"scenario file {scenario.name}"


def _scenario_distribution(name: str, doc: dict, text: str) -> "_Invalid | None":
    """A ``[cluster] distribution`` the harness does not know, or a version its adapter cannot run."""
    from harness import distributions
    from harness.scenario.file import find_line
    cl = doc.get("cluster") if isinstance(doc.get("cluster"), dict) else {}
    dist, version = cl.get("distribution"), cl.get("kafka_version")
    if not isinstance(dist, str) or (version is not None and not isinstance(version, str)):
        return None                              # the schema reports a value of the wrong type
    try:
        distributions.resolve(dist).fits(version)
    except HarnessError as e:
        return _Invalid(name, find_line(text, ("cluster", "distribution")), "cluster.distribution", str(e))
    return None


def _check_distribution(name: str, doc: dict) -> str:
    from harness.distributions.file import parse
    from harness.distributions.capability_table import capability_names
    spec = parse(Path(name).expanduser().absolute(), doc, tuple(capability_names()))
    return f"distribution file {spec.name}, {spec.layout}, node ids {','.join(map(str, spec.node_ids))}"


def _check_nodes(name: str, doc: dict) -> str:
    from harness.remote.nodes_file import parse
    f = parse(Path(name).expanduser().absolute(), doc)
    return f"nodes file {f.name}, {len(f.nodes)} node(s)"


def _error_path(e: Exception, doc: dict) -> tuple[tuple, str] | None:
    """(path of the offending value in ``doc``, what is wrong) of a loader's error; None for another error."""
    from harness.scenario.schema import SchemaError
    from harness.distributions.file import DistributionFileError
    from harness.remote.nodes_file import NodesFileError
    if isinstance(e, SchemaError):
        return e.path, e.message
    if isinstance(e, NodesFileError) and hasattr(e, "key"):
        return _nodes_where(doc, e.where) + _path_of(e.key), e.what
    if isinstance(e, DistributionFileError) and hasattr(e, "key"):
        return _path_of(e.key), e.what
    return None


def _original(path: tuple, removed: dict) -> tuple:
    """``path`` in the document as written, given the array elements set aside (``removed``: array path as
    written -> the indexes removed from it)."""
    out: list = []
    for part in path:
        if isinstance(part, int):
            i = part
            for r in sorted(removed.get(tuple(out), ())):
                if r <= i:
                    i += 1
            part = i
        out.append(part)
    return tuple(out)


def _set_aside(doc: dict, path: tuple, removed: dict) -> tuple | None:
    """Remove the value at ``path`` (or, when it is missing, the innermost table or array element around
    it) from ``doc``, so that checking again goes past it; the path removed (as written), None when
    nothing can be (a missing top-level key)."""
    node, depth = doc, 0
    for part in path:
        ok = (isinstance(node, dict) and isinstance(part, str) and part in node) or \
             (isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node))
        if not ok:
            break
        node, depth = node[part], depth + 1
    target = path[:depth]
    if not target:
        return None
    parent = doc
    for part in target[:-1]:
        parent = parent[part]
    original = _original(target, removed)
    if isinstance(parent, list):
        removed.setdefault(original[:-1], []).append(original[-1])
    del parent[target[-1]]
    return original


def _substitute(doc: dict, path: tuple, what: str, original: tuple, aside: list) -> tuple | None:
    """For a string value outside a list the error names (``...; allowed: a, b`` / ``choose one of a, b``),
    put the closest allowed value in its place instead of removing it, so that the keys that refer to it
    (a step's fault, an expectation's ``after``) are checked as written; the path, None when not such an
    error (or already substituted once)."""
    import difflib
    m = re.search(r"(?:allowed|choose one of|roles):\s*(.+)$", what)
    if not m or not path or original in aside:
        return None
    allowed = [a.strip() for a in re.sub(r"\s*\(did you mean.*$", "", m.group(1)).split(",") if a.strip()]
    parent = doc
    try:
        for part in path[:-1]:
            parent = parent[part]
        value = parent[path[-1]]
    except (KeyError, IndexError, TypeError):
        return None
    if not isinstance(value, str) or not allowed or value in allowed:
        return None
    parent[path[-1]] = (difflib.get_close_matches(value, allowed, 1, 0.0) or allowed)[0]
    return path


def _related(a: tuple, b: tuple) -> bool:
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def validate(name: str, kind: str | None = None) -> tuple[str | None, list[_Invalid]]:
    """Check one file: (its one-line description, []) when valid, else (None, every error found).

    The file is read and parsed once (:func:`harness.toml_file.read_toml`) and checked by the loader ``run``,
    ``certify`` or ``--nodes`` use. After each error the offending value is set aside (removed from a copy of
    the document; a required key that is missing sets aside the table around it) and the copy is checked
    again, until it passes or nothing more can be set aside: every error in independent keys is listed. An
    error that only follows from a value already set aside (the same key, or a table around it) is not."""
    import copy
    from harness.scenario.file import find_line, key_name
    from harness.toml_file import TomlFileError, read_toml
    try:
        text, doc = read_toml(name)
    except TomlFileError as e:
        return None, [_Invalid(name, e.line, "", e.what)]
    kind = kind or kind_of(doc)
    check = {"distribution": _check_distribution, "nodes": _check_nodes}.get(kind, _check_scenario)
    errors: list[_Invalid] = []
    if kind == "scenario":
        bad_dist = _scenario_distribution(name, doc, text)
        errors += [bad_dist] if bad_dist else []
    work, removed, aside, what = copy.deepcopy(doc), {}, [], None
    for _ in range(MAX_ERRORS):
        try:
            what = check(name, work)
            break
        except Exception as e:              # noqa: BLE001 - a loader's error is sorted below; others re-raised
            found = _error_path(e, work)
            if found is None:
                if isinstance(e, HarnessError):
                    errors.append(_Invalid(name, 0, "", str(e)))
                    break
                raise
            path, what_wrong = found
            original = _original(path, removed)
            key = key_name(original)
            if not any(_related(original, a) for a in aside) and not any(x.key == key for x in errors):
                errors.append(_Invalid(name, find_line(text, original) if original else 0, key, what_wrong))
            if _substitute(work, path, what_wrong, original, aside) is not None:
                aside.append(original)
                continue
            gone = _set_aside(work, path, removed)
            if gone is None:
                break
            aside.append(gone)
    return (None, errors) if errors else (what, [])


def _github(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def cmd_validate(args) -> int:
    bad = 0
    for name in args.files:
        what, errors = validate(name, args.kind)
        if errors:
            bad += 1
        for e in errors:
            if args.format == "github":
                where = f"file={_github(e.path)}" + (f",line={e.line}" if e.line else "")
                print(f"::error {where}::{_github((e.key + ': ' if e.key else '') + e.what)}")
            else:
                print(f"kafka-chaos: error: {e.text()}", file=sys.stderr)
        if not errors:
            print(f"{name}: ok ({what})")
    if len(args.files) > 1 or bad:
        print(f"{len(args.files) - bad} of {len(args.files)} file(s) valid", file=sys.stderr)
    return EXIT_INVALID if bad else EXIT_OK
