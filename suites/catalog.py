"""Every scenario, gathered from the family modules in :mod:`suites.scenarios` (one module per
family of the seed articles' situations; spec sections in each description).

A scenario's script applies faults through ``ctx.fault`` and states what the controller must do
with ``ctx.wait_until`` / ``ctx.expect``; the conformance checker (reference model) and the
durability checker judge the whole recorded history afterwards.
"""

from __future__ import annotations

import importlib
import pkgutil

import suites.scenarios
from harness.scenario.scenario import Scenario

# listing order: the scenario list; any other module of suites/scenarios/ follows alphabetically
FAMILY_ORDER = ("broker_failover", "unclean", "controller_failover", "topics", "restart", "isr", "acks",
                "reassignment", "preferred_election", "zookeeper", "quorum", "network", "storage", "nightly")

SUITES = ("smoke", "conformance", "chaos", "nightly")


def _load() -> list[Scenario]:
    out: list[Scenario] = []
    seen: set[str] = set()
    names = [m.name for m in pkgutil.iter_modules(suites.scenarios.__path__) if m.name != "common"]
    names.sort(key=lambda n: (FAMILY_ORDER.index(n) if n in FAMILY_ORDER else len(FAMILY_ORDER), n))
    for mod in names:
        for s in importlib.import_module(f"suites.scenarios.{mod}").SCENARIOS:
            if s.name in seen:
                raise RuntimeError(f"scenario {s.name!r} is defined twice (suites/scenarios/{mod}.py)")
            seen.add(s.name)
            out.append(s)
    return out


SCENARIOS: list[Scenario] = _load()


def scenarios_for(target: str) -> list[Scenario]:
    """A suite name (its scenarios), ``all``, a family (``broker_failover``) or one scenario name."""
    if target == "all":
        return list(SCENARIOS)
    if target in SUITES:
        return [s for s in SCENARIOS if target in s.tags]
    exact = [s for s in SCENARIOS if s.name == target]
    return exact or [s for s in SCENARIOS if s.family == target]
