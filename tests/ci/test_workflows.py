"""The GitHub Actions workflows (.github/workflows/*.yml and the users' recipe
docs/examples/ci/github-actions.yml) pass actionlint (github.com/rhysd/actionlint v1.7.12: workflow
syntax, expressions and contexts, job and matrix references, each known action's inputs).

actionlint is built once from the Go module proxy by scripts/build-actionlint.sh and cached under
~/.cache/kafka-chaos/actionlint (about 20-30 s on 2 cores, offline afterwards). Without Go (and no cached
binary) the tests are skipped, saying so. shellcheck and pyflakes are turned off so the result does not
depend on what else the host has. The broken workflows prove the linter really reads the files.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "scripts" / "build-actionlint.sh"
VERSION = "v1.7.12"
CACHED = Path(os.environ.get("KAFKA_CHAOS_CACHE", Path.home() / ".cache" / "kafka-chaos")) / "actionlint" / f"actionlint-{VERSION}"
RECIPE = ROOT / "docs" / "examples" / "ci" / "github-actions.yml"


@pytest.fixture(scope="module")
def actionlint() -> Path:
    if not CACHED.exists() and shutil.which("go") is None:
        pytest.skip(f"go is not installed: scripts/build-actionlint.sh builds actionlint {VERSION} with it")
    res = subprocess.run([str(BUILD), VERSION], capture_output=True, text=True, timeout=1800)
    if res.returncode != 0:
        pytest.fail(f"scripts/build-actionlint.sh failed ({res.returncode}): "
                    + (res.stderr.strip().splitlines() or ["?"])[-1], pytrace=False)
    return Path(res.stdout.strip().splitlines()[-1])


def lint(actionlint: Path, files: list[Path]) -> tuple[int, list[dict], str]:
    """Exit code, the errors (actionlint's JSON) and its verbose log."""
    res = subprocess.run([str(actionlint), "-shellcheck=", "-pyflakes=", "-verbose", "-format", "{{json .}}",
                          *map(str, files)], capture_output=True, text=True, timeout=120, cwd=ROOT)
    errors = json.loads(res.stdout) if res.stdout.strip() else []
    return res.returncode, errors, res.stderr


def workflows() -> list[Path]:
    return sorted((ROOT / ".github" / "workflows").glob("*.y*ml")) + [RECIPE]


def test_the_workflows_pass_actionlint(actionlint):
    files = workflows()
    assert len(files) >= 2 and all(f.exists() for f in files), files
    rc, errors, log = lint(actionlint, files)
    shown = "\n".join(f"{e['filepath']}:{e['line']}:{e['column']}: {e['message']} [{e['kind']}]" for e in errors)
    assert rc == 0 and not errors, f"actionlint {VERSION} found errors:\n{shown or log[-2000:]}"
    assert f"Found 0 errors in {len(files)} files" in log, log[-2000:]


def test_actionlint_flags_a_broken_workflow(actionlint, tmp_path):
    broken = tmp_path / "broken.yml"
    broken.write_text("""name: broken
on: [push]
jobs:
  a:
    strategy:
      matrix:
        shard: [1, 2]
    steps:
      - uses: actions/setup-go@v5
        with:
          go-versoin: "1.26"
      - run: echo "${{ matrix.shrad }}"
""")
    rc, errors, _ = lint(actionlint, [broken])
    assert rc == 1
    messages = " | ".join(e["message"] for e in errors)
    assert all(e["filepath"].endswith("broken.yml") for e in errors)
    assert '"runs-on" section is missing' in messages, messages
    assert 'input "go-versoin" is not defined' in messages, messages
    assert 'property "shrad" is not defined' in messages, messages


@pytest.mark.parametrize("typo", [("merge-multiple: true", "merge-multipl: true", 'input "merge-multipl" is not defined'),
                                  ("${{ matrix.shard }}", "${{ matrix.shards }}", 'property "shards" is not defined'),
                                  ("needs: shard", "needs: shards", 'needs job "shards" which does not exist')],
                         ids=lambda t: t[1])
def test_actionlint_flags_a_typo_in_the_users_recipe(actionlint, tmp_path, typo):
    """The recipe is read to the end: one typo in it is an error naming it, at its line (a `needs` error
    is reported at the job's line, just above)."""
    good, bad, message = typo
    text = RECIPE.read_text()
    assert good in text
    broken = tmp_path / "github-actions.yml"
    broken.write_text(text.replace(good, bad, 1))
    rc, errors, _ = lint(actionlint, [broken])
    assert rc == 1
    line = text[:text.index(good)].count("\n") + 1
    hits = [e for e in errors if message in e["message"]]
    assert hits and hits[0]["line"] in (line - 1, line), (line, errors)
