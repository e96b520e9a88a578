"""What a new user sees for every ``kafka-chaos`` usage error that needs no Docker engine.

Each case runs the real command line (``python -m harness.cli``) as a subprocess and asserts the
documented exit code (docs/cli.md: 0 pass, 1 a check failed, 2 usage or environment error), exactly
one ``error:`` line on stderr saying what is wrong (and, for a misspelt name, the closest valid one),
and no Python traceback.

Every subprocess gets ``DOCKER_HOST`` pointing at a socket that does not exist: a usage check that
stopped happening before Docker would show up as "Docker engine unreachable" instead of the expected
message — and can never start a cluster. The same setting covers the Docker-down path of every command
that needs Docker (one line, exit 2), including ``cleanup``, which is therefore safe to call here.

The ``report`` case near the end that reads a malformed record starts a Spark JVM (marked ``spark``,
~15 s); everything else takes well under a second per case. The last three call the CLI's last-resort handler in-process
with real exceptions (no user input reaches it any more, which is the point of it).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NO_DOCKER = "unix:///nonexistent/kafka-chaos-usage-test.sock"
IMAGE = "kafka-chaos/kafka:3.9.2"       # named only; with Docker down it is never looked at
SYNTHETIC_RUNS = REPO / "tests" / "fixtures" / "runs" / "synthetic"


def kc(*args: str, timeout: float = 120, **popen) -> subprocess.CompletedProcess:
    """``kafka-chaos ARGS`` with Docker unreachable, from the repository root."""
    env = {**os.environ, "DOCKER_HOST": NO_DOCKER, "KAFKA_CHAOS_QUIET": "1"}
    env.pop("KAFKA_CHAOS_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=REPO, **popen)


def one_error_line(res: subprocess.CompletedProcess, code: int = 2) -> str:
    """The only stderr line (an ``error:`` line); fails on a traceback, extra lines or another exit code."""
    assert "Traceback" not in res.stderr, res.stderr
    assert res.returncode == code, (res.returncode, res.stderr)
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, res.stderr
    assert "error:" in lines[0], lines[0]
    return lines[0]


def _record(parent: Path, **meta) -> Path:
    """A minimal run record (metadata.json only) as `--replay` reads it."""
    d = parent / "20261121T000000Z-isr.pause_follower-abcdef"
    d.mkdir(parents=True)
    base = {"schema_version": 1, "run_id": d.name, "scenario": "isr.pause_follower", "seed": 0, "schedule": [],
            "broker_image": IMAGE, "kafka_version": "3.9.2", "profile": "apache-zk-3.9", "suite": "adhoc",
            "broker_config": {}}
    (d / "metadata.json").write_text(json.dumps({**base, **meta}))
    return d


# -- no command, typos: the closest valid word is named ---------------------------------------------
@pytest.mark.parametrize("args, expected", [
    ([], ["`kafka-chaos` needs a command: images, cluster", "see `kafka-chaos --help`"]),
    (["cluster"], ["`kafka-chaos cluster` needs an action: up, status, down"]),
    (["images"], ["`kafka-chaos images` needs an action: build, build-kfake, build-kroxylicious, build-tansu, build-host, list"]),
    (["clustr", "up"], ["invalid choice: 'clustr'", "did you mean 'cluster'?"]),
    (["cluster", "upp"], ["invalid choice: 'upp'", "did you mean 'up'?", "`kafka-chaos cluster --help`"]),
    (["images", "buidl"], ["did you mean 'build'?"]),
    (["run", "--sed", "3", "smoke"], ["unrecognized arguments: --sed", "did you mean '--seed'?",
                                      "`kafka-chaos run --help`"]),
    (["cluster", "up", "--nmae", "x"], ["did you mean '--name'?", "`kafka-chaos cluster up --help`"]),
    (["images", "build", "--nope"], ["unrecognized arguments: --nope", "`kafka-chaos images build --help`"]),
    (["run", "broker_failover.kill_leadr"], ["no suite or scenario named 'broker_failover.kill_leadr'",
                                             "did you mean 'broker_failover.kill_leader'?", "kafka-chaos run list"]),
    (["run", "smok"], ["did you mean 'smoke'?"]),
    (["run", "brokerfailover"], ["did you mean 'broker_failover'?"]),
    (["run", "pause_follower"], ["did you mean 'isr.pause_follower'?"]),   # the variant alone
    (["run"], ["name a suite or scenario", "--replay RUN_DIR"]),
])
def test_missing_or_misspelt_names(args, expected):
    line = one_error_line(kc(*args))
    for text in expected:
        assert text in line, line


def test_an_unknown_name_with_nothing_close_gets_no_guess():
    line = one_error_line(kc("run", "zzzzzz"))
    assert "no suite or scenario named 'zzzzzz'" in line and "did you mean" not in line


# -- run: option values --------------------------------------------------------------------------
@pytest.mark.parametrize("args, expected", [
    (["--kafka-version", "3.9.2", "--broker-image", IMAGE], "not allowed with argument --kafka-version"),
    (["--seed", "abc"], "argument --seed: invalid int value: 'abc'"),
    (["--seed", "-1"], "--seed must be 0 or more"),
    (["--repeat", "0"], "--repeat must be at least 1"),
    (["--repeat", "abc"], "argument --repeat: invalid int value"),
    (["--parallel", "0"], "--parallel must be at least 1"),
    (["--parallel", "-3"], "--parallel must be at least 1"),
    (["--length", "-5"], "--length must be > 0 seconds, got -5"),
    (["--length", "0"], "--length must be > 0 seconds"),
    (["--length", "abc"], "argument --length: invalid float value"),
    (["--profile", "banana"], "--profile: unknown conformance profile 'banana'"),
    (["--profile", "apache-zk-3.9", "--distribution", "apache-kraft"], "describes the ZooKeeper-mode controller"),
    (["--distribution", "banana"], "argument --distribution: invalid choice: 'banana'"),
    (["--kafka-version", "banana"], "unknown Kafka version 'banana'"),
    (["--config", "foo"], "--config expects KEY=VALUE, got 'foo'"),
    (["--variant", "kip848"], "no scenario of 'isr.pause_follower' has the variant 'kip848'"),
])
def test_run_option_values(args, expected):
    line = one_error_line(kc("run", "isr.pause_follower", *args))
    assert expected in line, line


def test_run_into_a_runs_dir_that_cannot_be_made(tmp_path):
    (tmp_path / "a-file").write_text("")
    line = one_error_line(kc("run", "isr.pause_follower", "--runs-dir", str(tmp_path / "a-file" / "runs")))
    assert f"--runs-dir {tmp_path}/a-file/runs: {tmp_path}/a-file is not a directory" in line
    assert (tmp_path / "a-file").is_file()


def test_length_on_scenarios_without_a_random_schedule_is_noted(tmp_path):
    """Not an error (a suite mixes both kinds), but said: the run gets as far as Docker."""
    res = kc("run", "isr.pause_follower", "--length", "30", "--broker-image", IMAGE, "--runs-dir", str(tmp_path))
    assert res.returncode == 5 and "Traceback" not in res.stderr      # Docker down: environment
    lines = res.stderr.splitlines()
    assert lines[0].startswith("kafka-chaos: note: --length only changes scenarios with a random fault schedule")
    assert len(lines) == 2 and "Docker engine unreachable" in lines[1]


# -- run --replay ------------------------------------------------------------------------------------
def test_replay_of_a_missing_dir(tmp_path):
    line = one_error_line(kc("run", "--replay", str(tmp_path / "nope")))
    assert f"--replay {tmp_path}/nope: not a run record directory" in line


def test_replay_of_a_dir_that_is_not_a_run(tmp_path):
    line = one_error_line(kc("run", "--replay", str(tmp_path)))
    assert f"{tmp_path}/metadata.json: missing" in line


def test_replay_of_a_malformed_metadata_json(tmp_path):
    (tmp_path / "metadata.json").write_text("{not json")
    line = one_error_line(kc("run", "--replay", str(tmp_path)))
    assert f"{tmp_path}/metadata.json: not valid JSON" in line


def test_replay_with_an_unknown_profile(tmp_path):
    line = one_error_line(kc("run", "--replay", str(_record(tmp_path)), "--profile", "nope"))
    assert "--profile: unknown conformance profile 'nope'" in line


# -- certify -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("args, expected", [
    ([], "--profile is required"),
    (["--profile", "bananas"], "--profile: unknown conformance profile 'bananas'"),
    (["--profile", "apache-zk-3.9", "--capability", "brokr_failover"],
     "unknown capability 'brokr_failover' (did you mean 'broker_failover'?)"),
    (["--profile", "apache-zk-3.9", "--scenario", "isr.pause_folower"],
     "unknown scenario 'isr.pause_folower' (did you mean 'isr.pause_follower'?)"),
    (["--profile", "apache-zk-3.9", "--config", "foo"], "--config expects KEY=VALUE, got 'foo'"),
    (["--profile", "apache-zk-3.9", "--config", "=1"], "--config expects KEY=VALUE, got '=1'"),
    (["--profile", "apache-zk-3.9", "--retries", "-1"], "--retries must be 0 or more"),
    (["--profile", "apache-zk-3.9", "--seed", "-2"], "--seed must be 0 or more, got -2"),
    (["--profile", "apache-zk-3.9", "--parallel", "0"], "--parallel must be at least 1"),
    (["--profile", "apache-zk-3.9", "--kafka-version", "3.9.2", "--broker-image", IMAGE],
     "not allowed with argument --kafka-version"),
])
def test_certify_usage(args, expected):
    line = one_error_line(kc("certify", *args))
    assert expected in line, line


def test_certify_into_an_out_dir_that_cannot_be_made(tmp_path):
    (tmp_path / "a-file").write_text("")
    line = one_error_line(kc("certify", "--profile", "apache-zk-3.9", "--out", str(tmp_path / "a-file" / "cert")))
    assert f"{tmp_path}/a-file is not a directory" in line


# -- cluster / images option values --------------------------------------------------------------------
@pytest.mark.parametrize("args, expected", [
    (["cluster", "up", "--config", "foo"], "--config expects KEY=VALUE, got 'foo'"),
    (["cluster", "up", "--config", "=x"], "--config expects KEY=VALUE, got '=x'"),
    (["cluster", "up", "--brokers", "0"], "--brokers must be between 1 and 9, not 0"),
    (["cluster", "up", "--port-base", "70000"], "--port-base must be between 1024 and 65000"),
    (["cluster", "up", "--name", "Bad Name!"], "cluster name 'Bad Name!'"),
    (["cluster", "up", "--zookeepers", "2"], "argument --zookeepers: invalid choice: 2"),
    (["cluster", "up", "--kafka-version", "banana"], "unknown Kafka version 'banana'"),
    (["images", "build", "--kafka", "banana"], "unknown Kafka version 'banana'"),
])
def test_cluster_and_images_option_values(args, expected):
    line = one_error_line(kc(*args))
    assert expected in line, line


# -- Docker down: every command that needs Docker --------------------------------------------------
@pytest.mark.parametrize("args", [
    ["images", "build", "--kafka", "3.9.2"],
    ["images", "list"],
    ["cluster", "up", "--name", "nodock", "--broker-image", IMAGE],
    ["cluster", "status"],
    ["cluster", "status", "--name", "nodock"],
    ["cluster", "down", "--name", "nodock"],
    ["cluster", "down", "--all"],
    ["run", "isr.pause_follower", "--broker-image", IMAGE],
    ["certify", "--profile", "apache-zk-3.9", "--broker-image", IMAGE],
    ["cleanup"],    # safe: Docker is unreachable for this subprocess
], ids=lambda a: " ".join(a[:2]))
def test_docker_down_is_one_line_exit_5(args, tmp_path):
    if args[0] in ("run", "certify"):
        args = [*args, "--runs-dir", str(tmp_path)]
    line = one_error_line(kc(*args), code=5)       # an environment error (harness/errors.py)
    assert line.startswith(f"kafka-chaos: error: Docker engine unreachable at {NO_DOCKER}"), line
    assert "DOCKER_HOST" in line


def test_docker_down_on_replay(tmp_path):
    line = one_error_line(kc("run", "--replay", str(_record(tmp_path / "runs")), "--runs-dir", str(tmp_path)), code=5)
    assert "Docker engine unreachable" in line


# -- report (argument errors need no Spark) ----------------------------------------------------------
def test_report_without_arguments_is_one_line():
    line = one_error_line(kc("report"))
    assert line.startswith("kafka-chaos: error: the following arguments are required: RUNS_PATH, -o/--out")
    assert "`kafka-chaos report --help`" in line


def test_report_of_a_missing_runs_dir_fails_before_spark(tmp_path):
    line = one_error_line(kc("report", str(tmp_path / "no-runs"), "-o", str(tmp_path / "out")))
    assert line == f"kafka-chaos: error: RUNS_PATH {tmp_path}/no-runs does not exist"
    assert not (tmp_path / "out").exists()


def test_report_into_an_out_dir_under_a_file_fails_before_spark(tmp_path):
    (tmp_path / "a-file").write_text("")
    line = one_error_line(kc("report", str(SYNTHETIC_RUNS), "-o", str(tmp_path / "a-file" / "out")))
    assert line == f"kafka-chaos: error: -o {tmp_path}/a-file/out: {tmp_path}/a-file is not a directory"


def test_report_bad_gate_value():
    line = one_error_line(kc("report", "runs", "-o", "/tmp/x", "--fail-on-lost", "-1"))
    assert "--fail-on-lost must be >= 0" in line


# -- --help, --version, a closed pipe ------------------------------------------------------------------
@pytest.mark.parametrize("command", [
    [], ["images"], ["images", "build"], ["images", "list"], ["cluster"], ["cluster", "up"], ["cluster", "status"],
    ["cluster", "down"], ["cleanup"], ["run"], ["certify"], ["report"],
], ids=lambda c: " ".join(c) or "top")
def test_help_of_every_command_exits_0(command):
    res = kc(*command, "--help")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith(f"usage: {' '.join(['kafka-chaos', *command])}"), res.stdout[:200]
    assert res.stderr == ""


def test_version():
    res = kc("--version")
    assert res.returncode == 0 and res.stdout.startswith("kafka-chaos ")


def test_output_into_a_closed_pipe_is_no_traceback():
    """`kafka-chaos run list | head -1`: the reader is gone before the listing is written."""
    env = {**os.environ, "DOCKER_HOST": NO_DOCKER}
    env.pop("KAFKA_CHAOS_DEBUG", None)
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "run", "list"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)
    proc.stdout.close()             # before the child has even imported the catalog
    err = proc.stderr.read()
    proc.wait(timeout=60)
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert proc.returncode == 2


# -- report on records (the malformed one starts Spark) -----------------------------------------------
def test_report_of_an_empty_runs_dir_fails_before_spark(tmp_path):
    (tmp_path / "runs" / ".tmp-x").mkdir(parents=True)         # hidden from Spark: no record either
    (tmp_path / "runs" / ".tmp-x" / "metadata.json").write_text("{}")
    line = one_error_line(kc("report", str(tmp_path / "runs"), "-o", str(tmp_path / "out"), "--no-parquet"))
    assert line == f"kafka-chaos: error: no run records under {tmp_path}/runs"
    assert not (tmp_path / "out").exists()


@pytest.mark.spark
def test_report_skips_a_malformed_record_naming_it(tmp_path):
    """docs/reports.md: a malformed record is skipped, never silently: a warning naming it, listed in
    summary.json; the good records are reported and the default gate decides the exit code."""
    runs = tmp_path / "runs"
    good = sorted(SYNTHETIC_RUNS.iterdir())[1]
    shutil.copytree(good, runs / good.name)
    bad = runs / "20261121T000000Z-broken-000000"
    bad.mkdir()
    (bad / "metadata.json").write_text("{truncated")
    res = kc("report", str(runs), "-o", str(tmp_path / "out"), "--no-parquet", "--fail-on-fail", "0", timeout=600)
    assert "Traceback" not in res.stderr, res.stderr
    warned = [line for line in res.stderr.splitlines() if "skipped run record" in line]
    assert len(warned) == 1 and str(bad) in warned[0] and "metadata.json: not valid JSON" in warned[0], res.stderr
    # progress per stage on stderr, and no JVM warning (reports/spark.py JVM_NOISE)
    stages = [line.split(":")[1].strip().split(" ")[0] for line in res.stderr.splitlines()
              if re.match(r"report: \w+(: .*)? \(\d+\.\d s\)$", line)]
    assert stages == ["load", "tables", "html", "junit"], res.stderr
    assert "report: starting Spark" in res.stderr, res.stderr
    assert not [line for line in res.stderr.splitlines() if line.startswith("WARNING:")], res.stderr   # the JVM's
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert [s["path"].rstrip("/").rsplit("/", 1)[-1] for s in summary["skipped_records"]] == [bad.name]
    assert summary["totals"]["runs"] == 1
    assert res.returncode == summary["exit_code"]


# -- the last resort: an exception nothing else caught ----------------------------------------------
def _raised(exc: BaseException) -> BaseException:
    try:
        raise exc
    except BaseException as e:  # noqa: BLE001 - a real traceback to report from
        return e


def test_an_unexpected_exception_is_one_line_naming_where(capsys, monkeypatch):
    from harness import cli
    monkeypatch.delenv(cli.DEBUG_ENV, raising=False)
    assert cli._unexpected(_raised(KeyError("partition"))) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("kafka-chaos: error: unexpected KeyError at test_cli_usage.py:")
    assert f"{cli.DEBUG_ENV}=1 shows the traceback" in err


def test_os_and_docker_errors_are_said_as_such(capsys, monkeypatch, tmp_path):
    import docker.errors

    from harness import cli
    monkeypatch.delenv(cli.DEBUG_ENV, raising=False)
    try:
        (tmp_path / "nope" / "x").read_text()
    except OSError as e:
        assert cli._unexpected(e) == 2
    assert capsys.readouterr().err == f"kafka-chaos: error: No such file or directory: {tmp_path}/nope/x\n"
    assert cli._unexpected(_raised(docker.errors.APIError("409 Conflict: name in use"))) == 5     # environment
    assert capsys.readouterr().err == "kafka-chaos: error: the Docker engine refused a request: 409 Conflict: name in use\n"


def test_debug_setting_shows_the_real_exception(monkeypatch):
    from harness import cli
    monkeypatch.setenv(cli.DEBUG_ENV, "1")
    with pytest.raises(KeyError):
        cli._unexpected(_raised(KeyError("partition")))


def test_layout_selects_the_kraft_adapter_and_is_refused_elsewhere():
    """--layout dedicated-controllers = --distribution apache-kraft-dedicated; no layouts outside Apache KRaft."""
    from harness import distributions
    from harness.errors import HarnessError

    def ns(dist, layout):
        d = distributions.resolve(dist, layout=layout)
        assert d.layout == (layout or d.layout)       # the flag names the adapter's own layout
        return d.name

    assert ns(None, "dedicated-controllers") == "apache-kraft-dedicated"
    assert ns("apache-kraft", "dedicated-controllers") == "apache-kraft-dedicated"
    assert ns(None, "combined") == "apache-kraft" and ns("apache-zk", None) == "apache-zk"
    for dist in ("apache-zk", "generic"):
        with pytest.raises(HarnessError, match=f"not a layout of --distribution {dist}"):
            ns(dist, "dedicated-controllers")
    with pytest.raises(HarnessError, match="not a layout of --distribution apache-kraft-dedicated"):
        ns("apache-kraft-dedicated", "combined")
