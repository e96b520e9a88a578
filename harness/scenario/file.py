"""Scenario files: a declarative TOML form of a scenario (docs/scenario-files.md).

:func:`load` reads a ``.toml`` file and returns a real :class:`harness.scenario.scenario.Scenario` (its script
built by :mod:`harness.scenario.steps`), which the one runner executes like any scenario of
``suites/scenarios/``: ``kafka-chaos run path/to/scenario.toml``, or from Python / pytest::

    from harness.scenario.file import load
    scenario = load("docs/examples/broker_failover.toml")

A file that does not fit the schema (:mod:`harness.scenario.schema`) raises
:class:`ScenarioFileError`, a :class:`harness.errors.HarnessError` (exit code 2) whose message is one
line ``FILE:LINE: KEY: what is wrong; allowed: ...``. TOML parsers give no line numbers for keys, so
the line is found by scanning the source for the key's table header and the key itself.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from harness.scenario import schema
from harness.toml_file import TomlFileError, read_toml
from harness.errors import ScenarioError
from harness.nemesis.catalog import CATALOG
from harness.nemesis.targets import needs_role
from harness.scenario.scenario import Scenario, TopicSpec
from harness.scenario.steps import make_script


class ScenarioFileError(ScenarioError):
    """A scenario file cannot be read or does not fit the schema: ``path``, ``line`` (1-based, 0 when
    unknown) and ``key`` (dotted, e.g. ``steps[2].fault``) name the spot; the message is one line."""

    def __init__(self, path: str, line: int, key: str, message: str):
        self.path, self.line, self.key, self.detail = path, line, key, message
        where = f"{path}:{line}" if line else path
        super().__init__(f"{where}: {key}: {message}" if key else f"{where}: {message}")


@dataclass(frozen=True)
class ScenarioFile:
    """A loaded file: the scenario and the run defaults it names (``[cluster]`` distribution and
    kafka_version, used by ``kafka-chaos run FILE`` when the command line names none)."""
    path: str
    scenario: Scenario
    distribution: str | None = None
    kafka_version: str | None = None


def load(path: str | os.PathLike) -> Scenario:
    """The :class:`Scenario` a scenario file describes; ScenarioFileError when it does not fit the schema."""
    return load_file(path).scenario


def load_file(path: str | os.PathLike) -> ScenarioFile:
    p = str(path)
    try:
        text, doc = read_toml(p)
    except TomlFileError as e:
        raise ScenarioFileError(p, e.line, "", e.what) from None
    try:
        return ScenarioFile(p, *build(doc, Path(p).stem))
    except schema.SchemaError as e:
        raise ScenarioFileError(p, find_line(text, e.path), key_name(e.path), e.message) from None


def build(doc: dict, stem: str) -> tuple[Scenario, str | None, str | None]:
    """(scenario, distribution, kafka_version) of a parsed document; SchemaError when it does not fit."""
    schema.keys(doc, (), schema.TOP_KEYS, "the top level")
    name = schema.string(doc.get("name", "file." + re.sub(r"[^A-Za-z0-9_]", "_", stem)), ("name",),
                         pattern=schema._NAME)
    if "." not in name:
        raise schema.SchemaError(("name",), f"expected family.variant (e.g. broker_failover.{name}), got {name!r}")
    description = doc.get("description", f"scenario file {stem}.toml")
    schema.string(description, ("description",))
    tags = tuple(schema.strings(doc.get("tags", ["conformance"]), ("tags",), schema.SUITE_TAGS))
    cl = schema.cluster(doc)
    _check_features(cl)
    topics = schema.topics(doc, cl["brokers"])
    workload = schema.workload(doc, topics)
    steps = schema.steps(doc, [t["name"] for t in topics])
    mix = schema.random_mix(doc)
    if mix is not None and steps:
        raise schema.SchemaError(("random",), "a file has either [[steps]] or a [random] mix, not both")
    expect = schema.expectations(doc, steps, topics)
    checks = schema.checks(doc, expect, workload)
    _check_roles(cl["modes"], steps, mix)
    _check_topics(topics, steps, expect)
    coverage = doc.get("coverage")
    if coverage is not None:
        _coverage(coverage)
    partitions = {t["name"]: t["partitions"] for t in topics}
    script = make_script(steps, expect, partitions, random=mix is not None)
    if script is None and mix is None and not steps and not expect:
        script = make_script([], [], partitions)         # a file with no fault: a run under load only
    bound = _max_duration(doc, steps, expect, mix)
    kraft = "kraft" in cl["modes"]
    scenario = Scenario(
        name, description, script, tags=tags, brokers=cl["brokers"], zookeepers=cl["zookeepers"],
        broker_config=cl["config"],
        topics=[TopicSpec(t["name"], t["partitions"], t["replication_factor"], t["config"], t["assignment"])
                for t in topics],
        workload=workload, checks=checks, min_version=cl.get("min_version"), kraft=kraft, max_duration_s=bound,
        fault_mix=mix, coverage=coverage, security=cl.get("security"), features=cl.get("features", {}),
        needs_roles=("zookeeper",) if not kraft else ("controller",) if cl["modes"] == ["kraft"] else ())
    return scenario, cl.get("distribution"), cl.get("kafka_version")


def _max_duration(doc: dict, steps: list[dict], expect: list[dict], mix: dict | None) -> float:
    if "max_duration_s" in doc:
        return schema.number(doc["max_duration_s"], ("max_duration_s",), 10)
    span = sum(s["at"] + (s.get("duration") or 0) for s in steps) + sum(x.get("within", 0) for x in expect)
    if mix is not None:
        span += float(mix.get("length", 60))
    return max(180.0, span + 120.0)


def _check_roles(modes: list[str], steps: list[dict], mix: dict | None) -> None:
    """A fault or target acting through ZooKeeper needs ``modes = ["zookeeper"]``; a quorum target
    ``modes = ["kraft"]`` (a random mix draws only what the cluster has: harness.scenario.schedule.for_roles)."""
    have = {"zookeeper": "zookeeper", "kraft": "controller"}
    for s in steps:
        if "fault" not in s:
            continue
        p = ("steps", s["index"])
        need = CATALOG[s["fault"]].needs_role
        if need and any(have[m] != need for m in modes):
            raise schema.SchemaError((*p, "fault"), f"{s['fault']} acts through {need}: set [cluster] modes = "
                                     f"[\"{'zookeeper' if need == 'zookeeper' else 'kraft'}\"]")
        if CATALOG[s["fault"]].kind == "client":
            continue
        need = needs_role(s["target"])
        if need and any(have[m] != need for m in modes):
            raise schema.SchemaError((*p, "target"), f"{s['target']!r} names {need} nodes: set [cluster] modes = "
                                     f"[\"{'zookeeper' if need == 'zookeeper' else 'kraft'}\"]")


def _check_features(cl: dict) -> None:
    """``[cluster] features`` against the file's own ``distribution`` and ``kafka_version`` when it names
    them (Distribution.features_problem); otherwise they are judged with the broker of the run."""
    if not cl.get("features") or not (cl.get("distribution") or cl.get("kafka_version")):
        return
    from harness import distributions      # lazy: the adapters
    dist = distributions.resolve(cl.get("distribution"))      # None: the default adapter
    version = cl.get("kafka_version")
    if version is None:
        if dist.sets_features:
            return                          # the run's version decides the levels
        version = "0.0"
    why = dist.features_problem(cl["features"], version, cl["config"])
    if why:
        key = re.match(r"features\.([A-Za-z0-9_.]+?)(=|:| )", why)
        name = key.group(1) if key else None
        path = ("cluster", "features", name) if name in cl["features"] else ("cluster", "features")
        raise schema.SchemaError(path, re.sub(r"^features\.[^ :]+:? ?", "", why))


def _check_topics(topics: list[dict], steps: list[dict], expect: list[dict]) -> None:
    parts = {t["name"]: t["partitions"] for t in topics}
    for s in steps:
        if s.get("topic") in parts and s.get("partition", 0) >= parts[s["topic"]]:
            raise schema.SchemaError(("steps", s["index"], "partition"),
                                     f"{s['topic']} has partitions 0..{parts[s['topic']] - 1}")
        m = re.match(r"^(?:leader|follower)\(\s*([^,\s]+)\s*,\s*(\d+)\s*\)$", s.get("target", ""))
        if m and (m.group(1) not in parts or int(m.group(2)) >= parts[m.group(1)]):
            raise schema.SchemaError(("steps", s["index"], "target"),
                                     f"{s['target']!r}: no such partition among this file's topics "
                                     f"({', '.join(f'{t}: 0..{n - 1}' for t, n in parts.items())})")
    for x in expect:
        if x.get("topic") in parts and x.get("partition", 0) >= parts[x["topic"]]:
            raise schema.SchemaError(("expect", x["index"], "partition"),
                                     f"{x['topic']} has partitions 0..{parts[x['topic']] - 1}")


def _coverage(cov) -> None:
    from harness.checkers.coverage import DEFAULT_NEEDS
    schema.keys(cov, ("coverage",), tuple(DEFAULT_NEEDS), "[coverage]")
    for k, v in cov.items():
        want = type(DEFAULT_NEEDS[k])
        ok = isinstance(v, bool) if want is bool else (isinstance(v, (int, float)) and not isinstance(v, bool))
        if not ok:
            raise schema.SchemaError(("coverage", k), f"expected {'a boolean' if want is bool else 'a number'}, "
                                     f"got {v!r}")


# ------------------------------------------------------------------------------------- where a key is
def key_name(path: tuple) -> str:
    out = ""
    for part in path:
        name = f'"{part}"' if isinstance(part, str) and "." in part else part
        out += f"[{part}]" if isinstance(part, int) else (f".{name}" if out else str(name))
    return out


def find_line(text: str, path: tuple) -> int:
    """The 1-based line of the value at ``path`` (table names, array indexes, keys) in TOML source
    ``text``: the line of its key below the innermost table header that matches a prefix of the path
    (``[[steps]]`` counted for an index), else that header's line, else the first line naming the
    key anywhere; 0 when nothing is found."""
    lines = text.splitlines()
    headers: list[tuple[int, list[str], bool]] = []    # (line index, dotted names, array of tables)
    for i, ln in enumerate(lines):
        m = re.match(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$", ln)
        if m:
            headers.append((i, [n.strip().strip("\"'") for n in m.group(2).split(".")], m.group(1) == "[["))
    best, consumed = None, 0
    for depth in range(len(path), 0, -1):
        prefix = path[:depth]
        names = [q for q in prefix if isinstance(q, str)]
        if isinstance(prefix[-1], int):
            arr = [h for h in headers if h[1] == names and h[2]]
            if prefix[-1] < len(arr):
                best, consumed = arr[prefix[-1]], depth
                break
        else:
            tab = [h for h in headers if h[1] == names and not h[2]] or [h for h in headers if h[1] == names]
            if tab:
                best, consumed = tab[0], depth
                break
    if best is not None:
        start = best[0] + 1
        end = next((h[0] for h in headers if h[0] > best[0]), len(lines))
    else:
        start, end = 0, (headers[0][0] if headers else len(lines))
    line = best[0] if best is not None else None
    for key in [q for q in path[consumed:] if isinstance(q, str)]:
        k = re.escape(key)
        pat = re.compile(rf'(^\s*|[{{,]\s*)(?:{k}|"{k}"|\'{k}\')\s*=')
        hit = next((i for i in range(start, end) if pat.search(lines[i])), None)
        if hit is None:
            break
        line = start = hit
    if line is not None:
        return line + 1
    last = next((q for q in reversed(path) if isinstance(q, str)), None)
    if last:
        k = re.escape(last)
        pat = re.compile(rf'(^\s*|[{{,]\s*)(?:{k}|"{k}"|\'{k}\')\s*=')
        hit = next((i for i, ln in enumerate(lines) if pat.search(ln)), None)
        if hit is not None:
            return hit + 1
    return 0
