"""``kafka-chaos validate FILE...`` (harness/commands/validate.py, docs/cli.md): ten broken files of the three
kinds give ten one-line errors ``FILE:LINE: KEY: what`` naming the right line, exit 2, and nothing is asked
of Docker (``DOCKER_HOST`` points nowhere) nor written; the shipped examples are all valid."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_nodes_file import GOOD, hostdir, three  # noqa: F401 - hostdir: a fixture

ROOT = Path(__file__).resolve().parents[1]
NO_DOCKER = "unix:///nonexistent/kafka-chaos-validate.sock"

SCENARIO = (ROOT / "docs/examples/scenarios/broker_failover.toml").read_text()
DIST = (ROOT / "docs/examples/kfake.toml").read_text()


def _with(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def _line_of(text: str, needle: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines(), 1) if needle in ln)


# name -> (file text, (line marker or None for 0, key, words of the message))
def broken_files() -> dict[str, tuple[str, str | None, str, str]]:
    nodes = GOOD.format(nodes=three())
    return {
        "s_fault.toml": (_with(SCENARIO, 'fault = "kill"', 'fault = "kil"'), 'fault = "kil"', "steps[0].fault",
                         "kil"),
        "s_toml.toml": (_with(SCENARIO, "partitions = 3", "partitions = = 3"), "partitions = = 3", "",
                        "not valid TOML"),
        "s_topkey.toml": ("bogus = 1\n" + SCENARIO, "bogus = 1", "bogus", "bogus"),
        "s_brokers.toml": (_with(SCENARIO, "brokers = 3", "brokers = 0"), "brokers = 0", "cluster.brokers", ""),
        "s_dist.toml": (_with(SCENARIO, "brokers = 3", 'brokers = 3\ndistribution = "apache-zzk"'),
                        'distribution = "apache-zzk"', "cluster.distribution", "apache-zzk"),
        "d_layout.toml": (_with(DIST, 'layout = "single-node"', 'layout = "ring"'), 'layout = "ring"', "layout",
                          "ring"),
        "d_ids.toml": (_with(DIST, "node_ids = [111]", "node_ids = [111, 111]"), "node_ids = [111, 111]",
                       "node_ids", "twice"),
        "d_missing.toml": (_with(DIST, 'name = "kfake"', ""), None, "name", "missing"),
        "n_port.toml": (nodes.replace("ssh = { port = 22003 }", "ssh = { port = 70000 }"), "port = 70000",
                        "node[1].ssh.port", "70000"),
        "n_roles.toml": (nodes.replace('roles = ["broker", "controller"]', 'roles = ["brokr"]', 1), '["brokr"]',
                         "node[0].roles", "brokr"),
    }


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DOCKER_HOST": NO_DOCKER}
    return subprocess.run([sys.executable, "-m", "harness.cli", "validate", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def broken(hostdir):
    files = broken_files()
    for name, (text, *_rest) in files.items():
        (hostdir / name).write_text(text)
    return hostdir, files


def test_ten_broken_files_give_ten_one_line_errors(broken):
    d, files = broken
    before = sorted(p.name for p in d.iterdir())
    r = _run(*files, cwd=d)
    assert r.returncode == 2, r.stderr
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    errors = [ln for ln in lines if ln.startswith("kafka-chaos: error: ")]
    assert len(errors) == 10, r.stderr
    assert lines[-1] == "0 of 10 file(s) valid"
    assert len(lines) == 11 and "Traceback" not in r.stderr
    for err, (name, (text, marker, key, words)) in zip(errors, files.items()):
        line = _line_of(text, marker) if marker else 0
        head = f"kafka-chaos: error: {name}:{line}: " + (f"{key}: " if key else "")
        assert err.startswith(head), (err, head)
        assert words in err, err
    assert sorted(p.name for p in d.iterdir()) == before       # nothing written


def test_valid_files_ok_and_mixed_exit_code(broken):
    d, files = broken
    (d / "nodes.toml").write_text(GOOD.format(nodes=three()))
    examples = sorted(str(p) for p in (ROOT / "docs/examples").glob("*.toml")) + \
        sorted(str(p) for p in (ROOT / "docs/examples/scenarios").glob("*.toml"))
    r = _run(*examples, "nodes.toml", cwd=d)
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.splitlines()) == len(examples) + 1
    assert all(": ok (" in ln for ln in r.stdout.splitlines())
    assert "ok (nodes file t1, 3 node(s))" in r.stdout
    r = _run("nodes.toml", "d_layout.toml", cwd=d)
    assert r.returncode == 2
    assert r.stdout.splitlines() == ["nodes.toml: ok (nodes file t1, 3 node(s))"]
    assert re.search(r"^kafka-chaos: error: d_layout.toml:\d+: layout: ", r.stderr, re.M)


def test_kind_option_and_github_format(broken):
    d, files = broken
    r = _run("--kind", "scenario", "d_layout.toml", cwd=d)        # read as a scenario: its keys do not fit
    assert r.returncode == 2 and "d_layout.toml:" in r.stderr and "layout" in r.stderr
    r = _run("--format", "github", "s_fault.toml", "missing.toml", cwd=d)
    assert r.returncode == 2
    line = _line_of(files["s_fault.toml"][0], 'fault = "kil"')
    assert r.stdout.splitlines()[0].startswith(f"::error file=s_fault.toml,line={line}::steps[0].fault: ")
    assert r.stdout.splitlines()[1].startswith("::error file=missing.toml::cannot read")


def test_every_error_of_a_file_is_listed(hostdir):
    """Three independent mistakes in one scenario file, two in a distribution file and two in a nodes file:
    each is its own line with its own line number and key (not only the first), and a mistake the others
    refer to (a step's fault that an expectation names) does not add a line of its own."""
    s = _with(_with(_with(SCENARIO, 'fault = "kill"', 'fault = "kil"'), "brokers = 3", "brokers = 0"),
              "partitions = 3", "partitions = -1")
    d = _with(_with(DIST, 'layout = "single-node"', 'layout = "ring"'), "node_ids = [111]", "node_ids = [111, 111]")
    n = GOOD.format(nodes=three()).replace("ssh = { port = 22003 }", "ssh = { port = 70000 }").replace(
        'roles = ["broker", "controller"]', 'roles = ["brokr"]', 1)
    (hostdir / "s.toml").write_text(s)
    (hostdir / "d.toml").write_text(d)
    (hostdir / "n.toml").write_text(n)
    r = _run("s.toml", "d.toml", "n.toml", cwd=hostdir)
    assert r.returncode == 2 and r.stdout == ""
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("kafka-chaos: error: ")]
    want = [("s.toml", s, "brokers = 0", "cluster.brokers"), ("s.toml", s, "partitions = -1", "topics[0].partitions"),
            ("s.toml", s, 'fault = "kil"', "steps[0].fault"),
            ("d.toml", d, 'layout = "ring"', "layout"), ("d.toml", d, "node_ids = [111, 111]", "node_ids"),
            ("n.toml", n, '["brokr"]', "node[0].roles"), ("n.toml", n, "port = 70000", "node[1].ssh.port")]
    heads = sorted(f"kafka-chaos: error: {f}:{_line_of(t, m)}: {k}: " for f, t, m, k in want)
    assert sorted(e[:len(h)] for e, h in zip(sorted(errors), heads)) == heads, r.stderr
    assert len(errors) == len(want), r.stderr
    assert r.stderr.splitlines()[-1] == "0 of 3 file(s) valid"
