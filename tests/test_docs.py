"""The documentation stays in step with the code: docs/scenarios.md names every scenario the catalog
has, docs/architecture.md names every module, and no doc names a module path that no longer exists."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from suites.catalog import SCENARIOS

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_every_scenario_is_documented_with_its_applicability():
    text = (DOCS / "scenarios.md").read_text()
    rows = {line.split("|")[1].strip().strip("`"): line for line in text.splitlines()
            if line.startswith("| `")}
    missing = [s.name for s in SCENARIOS if s.name not in rows]
    assert not missing, f"docs/scenarios.md lacks {missing}"
    stale = sorted(set(rows) - {s.name for s in SCENARIOS})
    assert not stale, f"docs/scenarios.md lists scenarios that no longer exist: {stale}"
    for s in SCENARIOS:
        if "controller" in s.needs_roles:       # a KRaft quorum: never ZooKeeper mode
            assert "KRaft only" in rows[s.name], rows[s.name]
            continue
        assert ("ZK + KRaft" in rows[s.name]) == s.kraft, rows[s.name]


# --- docs/architecture.md names every module, and every module path the docs name exists -----------

ROOT = DOCS.parent
PACKAGES = ("harness", "reference", "reports", "suites")
# a path such as harness/cluster/node.py (not the tail of tests/reference/x.py or of a longer name)
_PATH = re.compile(r"(?<![\w/.-])((?:harness|reference|reports|suites)/[\w/]*\w\.py)\b")
# a dotted name such as harness.record.windows.fault_windows
_DOTTED = re.compile(r"(?<![\w/.-])((?:harness|reference|reports|suites)(?:\.[A-Za-z_]\w*)+)")


def _docstring_only(path: Path) -> bool:
    body = ast.parse(path.read_text()).body
    return all(isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) for node in body)


def _modules() -> list[str]:
    """Every .py under the four packages, but docstring-only __init__.py files and test_*.py files."""
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "__pycache__" in path.parts or path.name.startswith("test_"):
                continue
            if path.name == "__init__.py" and _docstring_only(path):
                continue
            found.append(path.relative_to(ROOT).as_posix())
    return found


def _doc_files() -> list[Path]:
    return sorted(DOCS.glob("*.md")) + [ROOT / "README.md"]


def test_architecture_names_every_module():
    text = (DOCS / "architecture.md").read_text()
    named = set(_PATH.findall(text))
    missing = [m for m in _modules() if m not in named]
    assert not missing, f"docs/architecture.md does not name {missing}"


def test_docs_name_only_module_paths_that_exist():
    stale = [f"{doc.relative_to(ROOT)}: {p}" for doc in _doc_files()
             for p in sorted(set(_PATH.findall(doc.read_text()))) if not (ROOT / p).is_file()]
    assert not stale, f"module paths that do not exist: {stale}"


def test_docs_name_only_dotted_modules_that_exist():
    """``harness.x.y.name``: the longest prefix that is a module must define the next part."""
    stale = []
    for doc in _doc_files():
        for name in sorted(set(_DOTTED.findall(doc.read_text()))):
            parts = name.split(".")
            if parts[-1] in ("md", "py", "toml", "json", "html"):
                continue
            for i in range(len(parts), 0, -1):
                base = ROOT.joinpath(*parts[:i])
                source = base.with_suffix(".py") if base.with_suffix(".py").is_file() else base / "__init__.py"
                if source.is_file():
                    break
            if i < len(parts) and not re.search(rf"\b{re.escape(parts[i])}\b", source.read_text()):
                stale.append(f"{doc.relative_to(ROOT)}: {name}")
    assert not stale, f"dotted names that do not exist: {stale}"
