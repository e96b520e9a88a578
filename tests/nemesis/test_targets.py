"""Target grammar: parsing, canonical form, errors; resolution against an in-memory view."""

from __future__ import annotations

import random

import pytest

from harness.nemesis.catalog import FaultSpecError, normalize_links, validate_params
from harness.nemesis.targets import (Target, TargetError, TargetUnresolved, format_target, parse_target,
                                     resolve)


@pytest.mark.parametrize("spec, expected", [
    ("controller", [Target("controller")]),
    ("Random-Broker", [Target("random-broker")]),
    ("zookeeper-leader", [Target("zookeeper-leader")]),
    ("broker:2", [Target("broker", node_id=2)]),
    ("zk:1", [Target("zk", node_id=1)]),
    ("leader(orders,0)", [Target("leader", topic="orders", partition=0)]),
    ("follower( my.topic_1-x , 12 )", [Target("follower", topic="my.topic_1-x", partition=12)]),
    ("leader(t,0),broker:3, zk:1", [Target("leader", topic="t", partition=0), Target("broker", node_id=3),
                                   Target("zk", node_id=1)]),
    ("broker:1,broker:1", [Target("broker", node_id=1)]),
])
def test_parse(spec, expected):
    assert parse_target(spec) == expected


def test_canonical_form_round_trips():
    spec = "leader(t,0),follower(u,3),broker:2,zk:1,controller,random-minority,all-brokers"
    assert format_target(parse_target(spec)) == spec
    assert parse_target(format_target(parse_target(spec))) == parse_target(spec)


@pytest.mark.parametrize("spec", ["", "   ", None, 3, "broker", "broker:", "broker:x", "leader(t)",
                                  "leader(t,0", "leader t,0)", "follower(t,-1)", "controller,,broker:1",
                                  "kafka:1", "leader(t/x,0)"])
def test_parse_errors(spec):
    with pytest.raises(TargetError):
        parse_target(spec)


def test_target_error_is_a_spec_error():
    assert issubclass(TargetError, FaultSpecError)


def test_links_and_params_validation():
    assert normalize_links(None) == ("broker-broker", "broker-zk", "zk-zk")
    assert normalize_links("client-broker,inter-broker") == ("client", "broker-broker")
    with pytest.raises(FaultSpecError, match="unknown link"):
        normalize_links(["ethernet"])
    assert validate_params("netem", {"delay_ms": 50, "jitter_ms": 5.5}) == {"delay_ms": 50, "jitter_ms": 5.5}
    with pytest.raises(FaultSpecError, match="must be >= 0"):
        validate_params("netem", {"delay_ms": -1})
    with pytest.raises(FaultSpecError, match="must be bool"):
        validate_params("isolate", {"clients": 1})
    with pytest.raises(FaultSpecError, match="direction"):
        validate_params("one_way", {"direction": "sideways"})
    with pytest.raises(FaultSpecError, match="unknown fault"):
        validate_params("nope", {})


# -- resolution with a plain in-memory view and node objects ---------------------------------------
class _Node:
    def __init__(self, role, node_id):
        self.role, self.node_id = role, node_id
        self.alias = f"broker{node_id}" if role == "broker" else f"zk{node_id}"
        self.name = f"kc-x-{self.alias}"


class _Cluster:
    name = "x"

    def __init__(self, n=5):
        self.brokers = {i: _Node("broker", i) for i in range(1, n + 1)}
        self.zookeepers = [_Node("zookeeper", 1)]

    @property
    def broker_ids(self):
        return sorted(self.brokers)


class _View:
    def __init__(self, controller=2, states=None, replicas=None):
        self._c, self._s, self._r = controller, states or {}, replicas or {}

    def controller_id(self):
        return self._c

    def live_brokers(self):
        return [1, 2, 3, 4, 5]

    def partition_state(self, topic, partition):
        return self._s.get((topic, partition))

    def replicas(self, topic, partition):
        return self._r.get((topic, partition), [])


def _ids(nodes):
    return [n.alias for n in nodes]


def test_resolve_roles():
    cl = _Cluster()
    view = _View(controller=2, states={("t", 0): {"leader": 3, "isr": [3, 1, 5]}},
                 replicas={("t", 0): [3, 1, 4, 5]})
    rng = random.Random(0)
    assert _ids(resolve("controller", cl, view, rng)) == ["broker2"]
    assert _ids(resolve("leader(t,0)", cl, view, rng)) == ["broker3"]
    # a follower in the ISR is preferred (4 is a replica but not in sync)
    assert {_ids(resolve("follower(t,0)", cl, view, random.Random(s)))[0] for s in range(30)} == {"broker1", "broker5"}
    assert _ids(resolve("broker:4,zk:1,broker:4", cl, view, rng)) == ["broker4", "zk1"]
    assert len(resolve("random-minority", cl, view, rng)) == 2        # (5 - 1) // 2
    assert len(resolve("all-brokers", cl, view, rng)) == 5


def test_random_targets_follow_the_seed():
    cl, view = _Cluster(), _View()
    a = [_ids(resolve("random-broker", cl, view, r))[0] for r in [random.Random(11)] for _ in range(10)]
    b = [_ids(resolve("random-broker", cl, view, r))[0] for r in [random.Random(11)] for _ in range(10)]
    assert a == b and len(set(a)) > 1


@pytest.mark.parametrize("spec, view, message", [
    ("controller", _View(controller=None), "no controller"),
    ("leader(t,0)", _View(states={("t", 0): {"leader": -1, "isr": []}}), "no leader"),
    ("leader(t,0)", _View(), "no state znode"),
    ("follower(t,0)", _View(states={("t", 0): {"leader": 1, "isr": [1]}}, replicas={("t", 0): [1]}), "no follower"),
    ("broker:9", _View(), "broker 9 is not part"),
    ("zk:3", _View(), "no ZooKeeper node 3"),
])
def test_unresolvable_targets(spec, view, message):
    with pytest.raises(TargetUnresolved, match=message):
        resolve(spec, _Cluster(), view, random.Random(0))
