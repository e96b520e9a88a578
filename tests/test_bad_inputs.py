"""Every bad input of docs/errors.md, run as the user would, against what the page says it gives.

The table is read from docs/errors.md itself, so the page and the behaviour cannot drift apart. Each
row runs ``python -m harness.cli ...`` as a subprocess (its own process group, no
``KAFKA_CHAOS_QUIET``) in a fresh directory holding the fixtures the page lists, and must:

* print exactly one stderr line, ``kafka-chaos: error: <the row's text>`` (``...`` in the text: any
  text in between), besides at most the start-up reaping line the page allows; no traceback;
* exit with the row's code;
* leave nothing: no process of its group, no container, network or volume whose
  ``kafka-chaos.owner-pid`` label is its pid, no new file or directory in its working directory (so
  no ``.tmp-*`` run record either).

Rows whose *needs* is ``-`` run with an unreachable ``DOCKER_HOST``: a check that happened only after
Docker was asked would give "Docker engine unreachable" instead. ``docker`` rows need a real engine and
start nothing; the ``cluster`` row needs a running cluster, which a module fixture starts (the
default: one KRaft broker) and removes: run these under the machine's cluster limit. The cluster name
is ``$KAFKA_CHAOS_TEST_CLUSTER`` when set (default ``bad-inputs-<pid>``).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "errors.md"
NO_DOCKER = "unix:///nonexistent/kafka-chaos-bad-inputs.sock"
PREFIX = "kafka-chaos: error: "
REAP_LINE = re.compile(r"^kafka-chaos: removed .* left by dead kafka-chaos processes")
CLUSTER = os.environ.get("KAFKA_CHAOS_TEST_CLUSTER") or f"bad-inputs-{os.getpid()}"
TIMEOUT = 300          # a loaded 2-core host: Python start, imports, a Docker call or two


@dataclass(frozen=True)
class Row:
    n: int
    command: str
    needs: str
    prints: str
    exit: int
    todo: str


def _code(cell: str) -> str:
    """The text of a Markdown code span (`` `x` `` or ``` `` x `` ```)."""
    m = re.match(r"(`+)\s?(.*?)\s?\1", cell.strip())
    assert m, f"docs/errors.md: expected a code span, got {cell!r}"
    return m.group(2)


def rows() -> list[Row]:
    out = []
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if not re.match(r"\| \d+ \|", line):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        assert len(cells) == 6, f"docs/errors.md: a row needs 6 cells: {line}"
        out.append(Row(int(cells[0]), _code(cells[1]), cells[2], _code(cells[3]), int(cells[4]), cells[5]))
    return out


ROWS = rows()


# -- the page itself ---------------------------------------------------------------------------------
def test_the_page_lists_at_least_40_inputs_numbered_in_order():
    assert len(ROWS) >= 40
    assert [r.n for r in ROWS] == list(range(1, len(ROWS) + 1))
    assert len({(r.command, r.needs) for r in ROWS}) == len(ROWS), "a row is listed twice"
    for r in ROWS:
        assert r.command.startswith("kafka-chaos"), r
        assert r.needs in ("-", "docker", "cluster"), r
        assert r.exit in (0, 1, 2, 3, 4, 5), r     # harness/errors.py, docs/cli.md "Exit codes"
        assert r.prints and r.todo, r


def test_the_page_is_linked_from_readme_and_cli_doc():
    assert "docs/errors.md" in (REPO / "README.md").read_text(encoding="utf-8")
    assert "errors.md" in (REPO / "docs" / "cli.md").read_text(encoding="utf-8")


# -- fixtures of the page's "Fixtures" section -------------------------------------------------------
RECORD = {"schema_version": 1, "run_id": "20261121T000000Z-isr.pause_follower-abcdef",
          "scenario": "isr.pause_follower", "seed": 0, "schedule": [], "broker_image": "kafka-chaos/kafka:3.9.2",
          "kafka_version": "3.9.2", "profile": "apache-zk-3.9", "suite": "adhoc", "broker_config": {}}


def make_fixtures(t: Path) -> None:
    def meta(name: str, body) -> None:
        (t / name).mkdir()
        text = body if isinstance(body, str) else json.dumps(body)
        (t / name / "metadata.json").write_text(text, encoding="utf-8")

    (t / "a-file").write_text("", encoding="utf-8")
    (t / "empty").mkdir()
    meta("record", RECORD)
    meta("bad-json", "{not json")
    meta("not-object", "[1, 2]")
    meta("seed-text", {**RECORD, "seed": "x"})
    meta("bad-fault", {**RECORD, "schedule": [{"at": 1, "fault": "nosuch", "target": "leader", "duration": 5}]})
    meta("old-scenario", {**RECORD, "scenario": "gone.away"})
    meta("gone-image", {**RECORD, "broker_image": "does/not:exist", "kafka_version": None})
    (t / "bad-gate.json").write_text(json.dumps({"fail_on_lost": "x"}), encoding="utf-8")


def tree(t: Path) -> set[str]:
    return {str(p.relative_to(t)) for p in t.rglob("*")}


def _docker():
    """The Docker client, or None when no engine answers."""
    from harness import docker_util
    from harness.errors import DockerUnavailable
    try:
        return docker_util.client()
    except DockerUnavailable:
        return None


def owned_by(client, pid: int) -> list[str]:
    """Containers, networks and volumes whose owner label is ``pid``."""
    from harness.docker_util import LABEL_OWNER_PID
    flt = {"label": f"{LABEL_OWNER_PID}={pid}"}
    return ([f"container {c.name}" for c in client.containers.list(all=True, filters=flt)]
            + [f"network {n.name}" for n in client.networks.list(filters=flt)]
            + [f"volume {v.name}" for v in client.volumes.list(filters=flt)])


def _busy_port() -> socket.socket:
    """A socket listening on 127.0.0.1:P with P-1 >= 1024 and the ZooKeeper port P+99 free."""
    while True:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        p = s.getsockname()[1]
        with socket.socket() as z:
            try:
                z.bind(("127.0.0.1", p + 99))
            except OSError:
                s.close()
                continue
        if 1025 <= p <= 65000:
            s.listen(1)
            return s
        s.close()


@pytest.fixture(scope="module")
def running_cluster():
    """A cluster named CLUSTER (the default: 1 KRaft broker) for the ``cluster`` rows; removed afterwards."""
    env = {**os.environ, "KAFKA_CHAOS_QUIET": "1"}
    up = subprocess.run([sys.executable, "-m", "harness.cli", "cluster", "up", "--name", CLUSTER, "--brokers", "1"],
                        capture_output=True, text=True, timeout=600, cwd=REPO, env=env)
    try:
        assert up.returncode == 0, up.stderr
        yield CLUSTER
    finally:
        subprocess.run([sys.executable, "-m", "harness.cli", "cluster", "down", "--name", CLUSTER],
                       capture_output=True, text=True, timeout=600, cwd=REPO, env=env)


def _param(r: Row):
    marks = [pytest.mark.docker] if r.needs != "-" else []
    return pytest.param(r, marks=marks, id=f"{r.n:02d}-{r.command.removeprefix('kafka-chaos ')[:60]}")


# -- every row ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("row", [_param(r) for r in ROWS])
def test_bad_input(row: Row, tmp_path: Path, request):
    t = tmp_path / "work"
    t.mkdir()
    make_fixtures(t)
    before = tree(t)
    subs = {"$T": str(t), "$CLUSTER": CLUSTER}
    listener = None
    if "$PORT" in row.command + row.prints or "$BASE" in row.command:
        listener = _busy_port()
        port = listener.getsockname()[1]
        subs.update({"$PORT": str(port), "$BASE": str(port - 1)})
    if row.needs == "cluster":
        request.getfixturevalue("running_cluster")
    client = _docker()
    if row.needs != "-":
        for tag in re.findall(r"kafka-chaos/kafka:[\w.]+", row.command):
            if client.images.list(name=tag) == []:
                pytest.skip(f"{tag} is not built here")

    def sub(text: str) -> str:
        for k in sorted(subs, key=len, reverse=True):
            text = text.replace(k, subs[k])
        return text

    argv = shlex.split(sub(row.command))
    env = {k: v for k, v in os.environ.items() if k not in ("KAFKA_CHAOS_QUIET", "KAFKA_CHAOS_DEBUG")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    env["TMPDIR"] = str(tmp_path)             # lock files and the record registry: not in the working dir
    if row.needs == "-":
        env["DOCKER_HOST"] = NO_DOCKER
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", *argv[1:]], cwd=t, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=60)
        if listener:
            listener.close()

    # one line, the documented text and code, no traceback
    assert "Traceback" not in err, err
    lines = [ln for ln in err.splitlines() if ln.strip() and not REAP_LINE.match(ln)]
    assert len(lines) == 1, f"row {row.n}: expected one stderr line, got:\n{err}"
    line = lines[0]
    parts = sub(row.prints).split(" ... ")
    assert line.startswith(PREFIX + parts[0]), f"row {row.n}: {line!r} does not start with {PREFIX + parts[0]!r}"
    at = len(PREFIX + parts[0])
    for part in parts[1:]:
        i = line.find(part, at)
        assert i >= 0, f"row {row.n}: {part!r} not in {line!r} after column {at}"
        at = i + len(part)
    assert proc.returncode == row.exit, f"row {row.n}: exit {proc.returncode}, documented {row.exit}; {line}"

    # nothing left: processes, Docker objects, files (run records, .tmp-* directories, outputs)
    with pytest.raises(ProcessLookupError):
        os.killpg(proc.pid, 0)
    if client is not None:
        assert owned_by(client, proc.pid) == [], f"row {row.n} left Docker objects"
    assert tree(t) == before, f"row {row.n} created {sorted(tree(t) - before)}"
