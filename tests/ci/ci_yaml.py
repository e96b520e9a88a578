"""The ``kafka-chaos`` command lines of a CI file (a GitHub Actions workflow or a GitLab CI file), with
the file's variables substituted the way the CI system and the shell would, for the tests that check them
against the real command line (tests/ci/test_ci_recipes.py).

GitHub: ``${{ matrix.X }}`` is X's first matrix value, ``${{ strategy.job-total }}`` the number of matrix
jobs, ``${{ strategy.job-index }}`` 0; ``$VAR`` comes from the workflow's, the job's and the step's
``env``. GitLab: ``$VAR`` comes from the file's and the job's ``variables``; ``$CI_NODE_INDEX`` is 1 and
``$CI_NODE_TOTAL`` the job's ``parallel``. A variable a ``kafka-chaos`` command uses but the file does
not define is an error (a recipe must work as written). ``sudo "$(command -v kafka-chaos)" ...`` and
``python3 -m harness.cli ...`` (this repository's own workflow) count as ``kafka-chaos`` commands.
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import yaml

OPERATORS = {";", "&&", "||", "|", "&"}
PROGRAM = {"kafka-chaos", "$(command -v kafka-chaos)"}
SHELL_VAR = re.compile(r"\$(?:\{(\w+)\}|(\w+))")
GH_EXPR = re.compile(r"\$\{\{\s*([\w.-]+)\s*\}\}")


@dataclass
class Invocation:
    where: str          # "docs/examples/ci/gitlab-ci.yml job shard"
    job: str
    argv: list[str]     # the words after `kafka-chaos`, variables substituted

    def __str__(self) -> str:
        return f"{self.where}: kafka-chaos {shlex.join(self.argv)}"


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def commands(script: str) -> list[list[str]]:
    """The simple commands of a shell script (one word list each), split at ``;``, ``&&``, ``||``, ``|``
    and line ends; comments dropped."""
    out: list[list[str]] = []
    for line in script.replace("\\\n", " ").splitlines():
        lex = shlex.shlex(line, posix=True, punctuation_chars=True)
        lex.whitespace_split = True
        cmd: list[str] = []
        for tok in lex:
            if tok in OPERATORS:
                out.append(cmd)
                cmd = []
            else:
                cmd.append(tok)
        out.append(cmd)
    return [c for c in out if c]


def _kafka_chaos_argv(cmd: list[str]) -> list[str] | None:
    while cmd and cmd[0] == "sudo":
        cmd = cmd[1:]
        while cmd and cmd[0].startswith("-"):       # sudo's own options
            cmd = cmd[1:]
    if cmd[:3] in (["python", "-m", "harness.cli"], ["python3", "-m", "harness.cli"]):
        return cmd[3:]
    return cmd[1:] if cmd and cmd[0] in PROGRAM else None


# variables the GitHub runner sets for every step (not defined in the file)
GITHUB_RUNNER_ENV = {"GITHUB_STEP_SUMMARY": "step-summary.md"}


def _substitute(word: str, variables: dict[str, str], where: str) -> str:
    def var(m: re.Match) -> str:
        name = m.group(1) or m.group(2)
        if name not in variables:
            raise ValueError(f"{where}: ${name} is used by a kafka-chaos command but not defined in the file")
        return str(variables[name])
    if "${{" in word:
        raise ValueError(f"{where}: unresolved GitHub expression in {word!r}")
    return SHELL_VAR.sub(var, word)


def invocations(script: str, variables: dict[str, str], where: str, job: str) -> list[Invocation]:
    found = []
    for cmd in commands(script):
        argv = _kafka_chaos_argv(cmd)
        if argv is not None:
            found.append(Invocation(where, job, [_substitute(w, variables, where) for w in argv]))
    return found


def _str_env(env: dict | None) -> dict[str, str]:
    return {k: str(v) for k, v in (env or {}).items()}


def github_invocations(path: Path, rel: str) -> list[Invocation]:
    wf = load(path)
    found = []
    for job_id, job in wf["jobs"].items():
        matrix = {k: v for k, v in ((job.get("strategy") or {}).get("matrix") or {}).items()
                  if isinstance(v, list)}
        exprs = {f"matrix.{k}": str(v[0]) for k, v in matrix.items()}
        exprs["strategy.job-total"] = str(math.prod(len(v) for v in matrix.values()))
        exprs["strategy.job-index"] = "0"
        for i, step in enumerate(job.get("steps") or []):
            if "run" not in step:
                continue
            where = f"{rel} job {job_id} step {step.get('name') or i + 1}"
            script = GH_EXPR.sub(lambda m: exprs.get(m.group(1), m.group(0)), step["run"])
            variables = {**GITHUB_RUNNER_ENV, **_str_env(wf.get("env")), **_str_env(job.get("env")),
                         **_str_env(step.get("env"))}
            found += invocations(script, variables, where, job_id)
    return found


def gitlab_jobs(doc: dict) -> dict[str, dict]:
    """The jobs of a GitLab CI file (hidden ``.templates`` merged in through ``extends``)."""
    reserved = {"variables", "stages", "default", "include", "workflow", "image", "services", "cache",
                "before_script", "after_script"}
    jobs = {}
    for name, job in doc.items():
        if name in reserved or name.startswith(".") or not isinstance(job, dict):
            continue
        merged: dict = {}
        bases = job.get("extends") or []
        for base in [bases] if isinstance(bases, str) else bases:
            merged.update(doc[base])
        merged.update(job)
        jobs[name] = merged
    return jobs


def gitlab_invocations(path: Path, rel: str) -> list[Invocation]:
    doc = load(path)
    found = []
    for name, job in gitlab_jobs(doc).items():
        variables = {**_str_env(doc.get("variables")), **_str_env(job.get("variables"))}
        total = job.get("parallel")
        if isinstance(total, int):
            variables.update(CI_NODE_INDEX="1", CI_NODE_TOTAL=str(total))
        for key in ("before_script", "script", "after_script"):
            for line in job.get(key) or []:
                found += invocations(line, variables, f"{rel} job {name} {key}", name)
    return found


def markdown_scripts(path: Path) -> list[str]:
    """The ```sh code blocks of a Markdown page."""
    return re.findall(r"^```sh\n(.*?)^```", path.read_text(), flags=re.S | re.M)
