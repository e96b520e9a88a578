"""The CI recipes (docs/ci.md: docs/examples/ci/github-actions.yml, docs/examples/ci/gitlab-ci.yml), the
code blocks of docs/ci.md and this repository's workflow use only real ``kafka-chaos`` commands: every subcommand and flag is in that
command's ``--help`` (the real CLI, run as a user would), every command line parses with the real
parsers, the suite, shard and distribution are ones ``kafka-chaos run`` accepts, and the artifacts the
files upload are the directories the commands write. The report step is run for real (Spark) on stored
run records: it writes report.html and junit.xml where the recipes upload them from.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import ci_yaml
from harness.cli import build_parser
from harness.errors import HarnessError
from harness import distributions
from harness.shard import parse_shard
from reports.job import parse_args as parse_report_args
from suites.catalog import scenarios_for

ROOT = Path(__file__).resolve().parents[2]
GITHUB = ROOT / "docs" / "examples" / "ci" / "github-actions.yml"
GITLAB = ROOT / "docs" / "examples" / "ci" / "gitlab-ci.yml"
OWN = sorted((ROOT / ".github" / "workflows").glob("*.y*ml"))
DOC = ROOT / "docs" / "ci.md"
GATE_CONFIG = ROOT / "docs" / "examples" / "ci" / "kafka-chaos-gate.json"
REAL_RUNS = ROOT / "tests" / "fixtures" / "runs" / "real"
WITH_ACTION = ("images", "cluster")          # `kafka-chaos images build`, `kafka-chaos cluster up`, ...


def rel(p: Path) -> str:
    return str(p.relative_to(ROOT))


def all_invocations() -> list[ci_yaml.Invocation]:
    found = ci_yaml.github_invocations(GITHUB, rel(GITHUB)) + ci_yaml.gitlab_invocations(GITLAB, rel(GITLAB))
    for wf in OWN:
        found += ci_yaml.github_invocations(wf, rel(wf))
    for script in ci_yaml.markdown_scripts(DOC):
        found += ci_yaml.invocations(script, {}, rel(DOC), "docs")
    return found


def doc_pytest_commands() -> list[list[str]]:
    return [cmd for script in ci_yaml.markdown_scripts(DOC) for cmd in ci_yaml.commands(script) if cmd[0] == "pytest"]


def command_path(argv: list[str]) -> tuple[str, ...]:
    return tuple(argv[:2]) if argv[0] in WITH_ACTION else (argv[0],)


@functools.lru_cache(maxsize=None)
def help_options(path: tuple[str, ...], cwd: str, module: str = "harness.cli") -> frozenset[str]:
    """The option strings `kafka-chaos PATH --help` (or `pytest --help`, module "pytest") lists: the real
    command in a subprocess."""
    res = subprocess.run([sys.executable, "-m", module, *path, "--help"], cwd=cwd,
                         capture_output=True, text=True, timeout=120)
    shown = f"`{module} {' '.join(path)} --help`"
    assert res.returncode == 0, f"{shown} exited {res.returncode}: {res.stderr.strip()}"
    opts = set()
    for line in res.stdout.splitlines():
        m = re.match(r"  (-\S.*?)(?:\s{2,}|$)", line)          # "  -o OUT, --out OUT   help text"
        if m:
            opts.update(part.split()[0].split("=")[0] for part in re.split(r", (?=-)", m.group(1)))
    assert "--help" in opts, f"no options parsed from {shown}:\n{res.stdout}"
    return frozenset(opts)


@pytest.fixture(scope="module")
def empty_dir(tmp_path_factory) -> str:
    """Where the --help commands run: no ./runs of this checkout, as in a user's project."""
    return str(tmp_path_factory.mktemp("cwd"))


def flags(argv: list[str]) -> list[str]:
    return [w.split("=", 1)[0] for w in argv if w.startswith("-") and not re.fullmatch(r"-\d+(\.\d+)?", w)]


def test_the_files_hold_the_commands_a_shard_and_a_gate_need():
    """Not vacuous: each recipe runs a shard, builds the image and gates; each of this repository's
    workflows is read (its report step counts)."""
    assert OWN, "no .github/workflows/*.yml"
    by_file: dict[str, set[str]] = {}
    for inv in all_invocations():
        by_file.setdefault(inv.where.split(" job ")[0], set()).add(" ".join(command_path(inv.argv)))
    assert by_file[rel(GITHUB)] == {"images build", "run", "report"}, by_file
    assert by_file[rel(GITLAB)] == {"images build", "run", "report"}, by_file
    assert "report" in by_file[rel(ROOT / ".github" / "workflows" / "ci.yml")], by_file
    assert by_file[rel(DOC)] == {"images build", "run", "report"}, by_file
    assert doc_pytest_commands(), "docs/ci.md shows no pytest command"
    for inv in all_invocations():
        if inv.argv[0] == "run":
            assert "--shard" in inv.argv, inv
        if inv.argv[0] == "report" and "docs/examples" in inv.where:
            assert "--gate" in inv.argv, inv


@pytest.mark.parametrize("inv", all_invocations(), ids=str)
def test_every_flag_is_in_the_commands_help(inv, empty_dir):
    known = help_options(command_path(inv.argv), empty_dir)
    unknown = [f for f in flags(inv.argv) if f not in known]
    assert not unknown, f"{inv}: {unknown} not in `kafka-chaos {' '.join(command_path(inv.argv))} --help`"


@pytest.mark.parametrize("inv", all_invocations(), ids=str)
def test_every_command_line_parses_and_names_real_things(inv):
    if inv.argv[0] == "report":
        opts = parse_report_args(inv.argv[1:])            # argparse: SystemExit(2) on a bad value
        assert opts.out and opts.runs_path, inv
        return
    args = build_parser().parse_args(inv.argv)
    assert getattr(args, "func", None), f"{inv}: no command runs"
    if inv.argv[0] == "run":
        assert scenarios_for(args.target), f"{inv}: no suite or scenario named {args.target!r}"
        i, n = parse_shard(args.shard)
        assert n >= 2, f"{inv}: --shard {args.shard} is one shard of {n}"
        try:
            distributions.resolve(args.distribution, args.distribution_file, args.layout).fits(args.kafka_version)
        except HarnessError as e:
            pytest.fail(f"{inv}: {e}")


@pytest.mark.parametrize("cmd", doc_pytest_commands(), ids=" ".join)
def test_the_pages_pytest_commands_use_the_plugins_options(cmd, empty_dir):
    """From an empty directory, as a user's project: the options come from the installed plugin."""
    known = help_options((), empty_dir, "pytest")
    assert "--kc-runs-dir" in known
    unknown = [f for f in flags(cmd[1:]) if f not in known]
    assert not unknown, f"docs/ci.md: {' '.join(cmd)}: {unknown} not in `pytest --help`"


def test_the_gate_config_example_loads():
    from reports.gate import RULES, load_config
    cfg = load_config(str(GATE_CONFIG))
    assert set(cfg) <= {*RULES, "min_runs"} and cfg["min_runs"] == len(scenarios_for("smoke")), cfg
    assert GATE_CONFIG.name in DOC.read_text()


def test_a_misspelt_flag_is_caught(empty_dir):
    """The check is not vacuous: a flag that does not exist is not in the help's option list."""
    assert "--shard" in help_options(("run",), empty_dir)
    assert not {"--shards", "--gates", "--runs"} & help_options(("run",), empty_dir)
    assert "--gate" in help_options(("report",), empty_dir)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "smoke", "--distribution", "apache-zookeeper"])


def _one(invs, job, sub):
    found = [i for i in invs if i.job == job and i.argv[0] == sub]
    assert len(found) == 1, f"job {job}: {len(found)} `kafka-chaos {sub}` commands"
    return found[0]


def _dir(p: str) -> str:
    return p.rstrip("/")


def test_github_recipe_uploads_what_the_commands_write():
    wf = ci_yaml.load(GITHUB)
    invs = ci_yaml.github_invocations(GITHUB, rel(GITHUB))
    run_args = build_parser().parse_args(_one(invs, "shard", "run").argv)
    report = parse_report_args(_one(invs, "gate", "report").argv[1:])
    steps = {job: wf["jobs"][job]["steps"] for job in ("shard", "gate")}

    def uses(job, action):
        return [s.get("with") or {} for s in steps[job] if str(s.get("uses", "")).startswith(action + "@")]

    [shard_up] = uses("shard", "actions/upload-artifact")
    assert _dir(shard_up["path"]) == _dir(run_args.runs_dir)
    [down] = uses("gate", "actions/download-artifact")
    assert down["merge-multiple"] is True and _dir(down["path"]) == _dir(report.runs_path)
    assert re.fullmatch(down["pattern"].replace("*", ".*"), shard_up["name"].replace("${{ matrix.shard }}", "1"))
    [report_up] = uses("gate", "actions/upload-artifact")
    assert _dir(report_up["path"]) == _dir(report.out)
    assert wf["jobs"]["gate"]["needs"] == "shard" and "cancelled()" in wf["jobs"]["gate"]["if"]


def test_gitlab_recipe_uploads_what_the_commands_write():
    doc = ci_yaml.load(GITLAB)
    jobs = ci_yaml.gitlab_jobs(doc)
    invs = ci_yaml.gitlab_invocations(GITLAB, rel(GITLAB))
    run_args = build_parser().parse_args(_one(invs, "shard", "run").argv)
    report = parse_report_args(_one(invs, "gate", "report").argv[1:])
    assert isinstance(jobs["shard"]["parallel"], int) and jobs["shard"]["parallel"] >= 2
    assert [_dir(p) for p in jobs["shard"]["artifacts"]["paths"]] == [_dir(run_args.runs_dir)]
    assert jobs["shard"]["artifacts"]["when"] == "always"
    assert jobs["gate"]["needs"] == [{"job": "shard", "artifacts": True}] and jobs["gate"]["when"] == "always"
    gate_art = jobs["gate"]["artifacts"]
    assert [_dir(p) for p in gate_art["paths"]] == [_dir(report.out)]
    assert gate_art["reports"]["junit"] == f"{_dir(report.out)}/junit.xml"
    assert doc["stages"].index(jobs["shard"]["stage"]) < doc["stages"].index(jobs["gate"]["stage"])


def report_commands() -> list[list[str]]:
    """The gate jobs' report commands, each distinct one once (both recipes run the same one today)."""
    found = [_one(ci_yaml.github_invocations(GITHUB, rel(GITHUB)), "gate", "report").argv,
             _one(ci_yaml.gitlab_invocations(GITLAB, rel(GITLAB)), "gate", "report").argv]
    return [argv for i, argv in enumerate(found) if argv not in found[:i]]


@pytest.mark.spark
@pytest.mark.parametrize("argv", report_commands(), ids=" ".join)
def test_the_recipes_report_step_writes_the_uploaded_files(argv, tmp_path):
    """The gate job's command as written, on stored run records merged into its RUNS_PATH: it decides
    (exit 0 or 1, not 2) and writes report.html and junit.xml (one test case per record) in the directory
    the job uploads (the JUnit file GitLab reads)."""
    report = parse_report_args(argv[1:])
    shutil.copytree(REAL_RUNS, tmp_path / report.runs_path)
    records = [d for d in (tmp_path / report.runs_path).iterdir() if (d / "verdict.json").exists()]
    assert records
    res = subprocess.run([sys.executable, "-m", "harness.cli", *argv], cwd=tmp_path,
                         capture_output=True, text=True, timeout=900)
    assert res.returncode in (0, 1), f"kafka-chaos {' '.join(argv)} exited {res.returncode}: {res.stderr[-2000:]}"
    out = tmp_path / report.out
    assert (out / "report.html").stat().st_size > 0
    cases = ET.parse(out / "junit.xml").getroot().iter("testcase")
    assert len(list(cases)) == len(records)
