"""The layers in pyproject.toml ([tool.importlinter]) hold, and the linter would catch a break of them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"


def _lint(cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", LINT, "--no-cache"], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def test_the_contracts_are_kept():
    r = _lint(ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "BROKEN" not in r.stdout and r.stdout.count("KEPT") >= 4


def test_importing_the_suites_from_the_runner_breaks_a_contract(tmp_path):
    for pkg in ("harness", "reference", "reports", "suites"):
        shutil.copytree(ROOT / pkg, tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    runner = tmp_path / "harness" / "runner.py"
    runner.write_text(runner.read_text() + "\nimport suites  # noqa: E402,F401\n")
    r = _lint(tmp_path)
    assert r.returncode != 0
    assert "the core harness imports neither the suites nor the reports (only the CLI, its commands and certify do) BROKEN" in " ".join(r.stdout.split())
    assert "harness.runner is not allowed to import suites" in r.stdout


def test_importing_the_cli_from_the_cluster_breaks_the_layers(tmp_path):
    for pkg in ("harness", "reference", "reports", "suites"):
        shutil.copytree(ROOT / pkg, tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    node = tmp_path / "harness" / "cluster" / "node.py"
    node.write_text(node.read_text() + "\nimport harness.commands.run  # noqa: E402,F401\n")
    r = _lint(tmp_path)
    assert r.returncode != 0
    out = " ".join(r.stdout.split())
    assert "the harness in layers" in out and "BROKEN" in out
    assert "harness.cluster.node -> harness.commands.run" in out
