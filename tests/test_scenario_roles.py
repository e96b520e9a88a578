"""Which node roles a scenario needs (Scenario.needs_roles) and why it does not apply without them."""

from __future__ import annotations

import pytest

from harness import distributions
from harness.errors import ScenarioError
from harness.scenario.scenario import Scenario

ZK, KRAFT, GENERIC = (distributions.resolve(n) for n in ("apache-zk", "apache-kraft", "generic"))


def _s(**kw):
    return Scenario("fam.x", "d", None, **kw)


def test_needs_roles_defaults_follow_kraft():
    assert _s().needs_roles == ("zookeeper",)
    assert _s(kraft=True).needs_roles == ()
    assert _s().not_applicable("3.9.2", KRAFT) == "it acts on ZooKeeper itself, which this cluster does not run"
    assert _s(kraft=True).not_applicable("3.9.2", ZK) is None


def test_a_scenario_that_needs_a_controller_quorum():
    s = _s(kraft=True, needs_roles=("controller",))
    assert s.not_applicable("3.9.2", ZK) == "needs controller nodes (a KRaft quorum)"
    assert s.not_applicable("3.9.2", distributions.resolve()) is None      # the default: apache-kraft (issue 40)
    assert s.not_applicable("4.1.2", KRAFT) is None and s.not_applicable(None, GENERIC) is None


def test_unknown_roles_are_refused():
    with pytest.raises(ScenarioError, match="unknown role"):
        _s(needs_roles=("raft",))
