"""The documentation names every scenario the catalog has (docs/scenarios.md stays in step)."""

from __future__ import annotations

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
