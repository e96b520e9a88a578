"""The stable name of a run's test for CI: ``family.scenario[distribution-version]`` (JUnit in
reports/junit.py, ``run --json`` / ``--summary-md`` in harness/commands/run_summary.py).

Stable across builds and machines: no run id, no timestamp, no absolute path (a distribution file or
nodes file by its name: ``file:/home/ci/kfake.toml`` -> ``kfake``)."""

from __future__ import annotations

from pathlib import PurePath


def short_distribution(dist: str | None) -> str | None:
    """``file:/abs/kfake.toml`` -> ``file:kfake.toml`` (the file's name, not this machine's path)."""
    if not dist or ":" not in dist:
        return dist
    kind, rest = dist.split(":", 1)
    return f"{kind}:{PurePath(rest).name}"


def broker_label(distribution: str | None, broker: str | None) -> str:
    """``distribution-version``: ``apache-kraft-4.4.0``; a file's adapter by the file's stem."""
    dist = distribution or ""
    if ":" in dist:                    # file:/abs/kfake.toml, remote:/abs/nodes.toml
        dist = PurePath(dist.split(":", 1)[1]).stem
    version = broker or "unknown"
    return f"{dist}-{version}" if dist else str(version)


def case_name(scenario: str, distribution: str | None, broker: str | None) -> str:
    return f"{scenario}[{broker_label(distribution, broker)}]"
