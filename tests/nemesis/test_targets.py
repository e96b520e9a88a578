"""Target grammar: parsing, canonical form, errors; resolution against an in-memory view."""

from __future__ import annotations

import random

import pytest

from harness.protocol.endpoint import Endpoint
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
    assert normalize_links(None) == ("broker-broker", "broker-zk", "zk-zk", "service")
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


# -- the KRaft quorum (DescribeQuorum through cluster.quorum()) ------------------------------------
class _Dist:
    def __init__(self, name, roles):
        self.name, self.roles = name, roles


class _Replica:
    def __init__(self, rid):
        self.replica_id = rid


class _Quorum:
    def __init__(self, leader, voters, error=None):
        self.leader_id, self.voters, self.error = leader, [_Replica(v) for v in voters], error


class _KraftCluster(_Cluster):
    def __init__(self, n=5, leader=2, voters=(1, 2, 3), error=None, raises=None):
        super().__init__(n)
        self.zookeepers = []
        self.distribution = _Dist("apache-kraft", ("broker", "controller"))
        self._q, self._raises = _Quorum(leader, voters, error), raises

    def nodes(self):
        return [self.brokers[b] for b in self.broker_ids]

    def quorum(self):
        if self._raises:
            raise self._raises
        return self._q


@pytest.mark.parametrize("spec", ["quorum-leader", "quorum-follower", "quorum-followers", "quorum-majority",
                                  "quorum-voters", "quorum-observers", "QUORUM-LEADER"])
def test_parse_quorum_targets(spec):
    assert str(parse_target(spec)[0]) == spec.lower()


def test_resolve_quorum_targets():
    cl, view = _KraftCluster(leader=2), _View()
    assert _ids(resolve("quorum-leader", cl, view, random.Random(0))) == ["broker2"]
    assert {_ids(resolve("quorum-follower", cl, view, random.Random(s)))[0] for s in range(30)} == {"broker1", "broker3"}
    assert _ids(resolve("quorum-followers", cl, view, random.Random(0))) == ["broker1", "broker3"]
    # the smallest majority, followers first: the leader is left alone without a quorum
    assert _ids(resolve("quorum-majority", cl, view, random.Random(0))) == ["broker1", "broker3"]
    assert _ids(resolve("quorum-voters", cl, view, random.Random(0))) == ["broker1", "broker2", "broker3"]
    assert _ids(resolve("quorum-observers", cl, view, random.Random(0))) == ["broker4", "broker5"]
    # five voters: three of the four followers, seeded
    five = _KraftCluster(n=5, leader=5, voters=(1, 2, 3, 4, 5))
    picks = {tuple(_ids(resolve("quorum-majority", five, view, random.Random(s)))) for s in range(40)}
    assert all(len(p) == 3 and "broker5" not in p for p in picks) and len(picks) > 1
    # a single voter is its own majority
    assert _ids(resolve("quorum-majority", _KraftCluster(n=3, leader=1, voters=(1,)), view, random.Random(0))) == ["broker1"]


@pytest.mark.parametrize("cluster, spec, message", [
    (_KraftCluster(leader=-1), "quorum-leader", "the quorum has no leader"),
    (_KraftCluster(leader=-1), "quorum-majority", "the quorum has no leader"),
    (_KraftCluster(n=1, leader=1, voters=(1,)), "quorum-follower", "no follower"),
    (_KraftCluster(n=3), "quorum-observers", "every broker .* is a voter"),
    (_KraftCluster(error="NOT_LEADER_OR_FOLLOWER"), "quorum-leader", "DescribeQuorum answered NOT_LEADER"),
    (_KraftCluster(raises=OSError("refused")), "quorum-voters", "DescribeQuorum not answered"),
    (_KraftCluster(leader=7, voters=(1, 2, 7)), "quorum-leader", "node 7 is not part"),
])
def test_unresolvable_quorum_targets(cluster, spec, message):
    with pytest.raises(TargetUnresolved, match=message):
        resolve(spec, cluster, _View(), random.Random(0))


@pytest.mark.parametrize("spec", ["quorum-leader", "quorum-follower", "quorum-majority", "quorum-voters",
                                  "quorum-observers"])
def test_quorum_targets_on_a_zookeeper_cluster_are_an_error(spec):
    cl = _Cluster()
    cl.distribution = _Dist("apache-zk", ("broker", "zookeeper"))
    with pytest.raises(TargetError) as e:
        resolve(spec, cl, _View(), random.Random(0))
    msg = str(e.value)
    assert "\n" not in msg and msg == (f"{spec}: cluster x runs apache-zk (roles: broker, zookeeper): "
                                       "it has no KRaft controller quorum")


# -- coordinators (FindCoordinator through cluster.coordinator()) ----------------------------------
class _Info:
    def __init__(self, node_id, error=None, version=4):
        self.node_id, self.error, self.version = node_id, error, version


class _CoordCluster(_Cluster):
    def __init__(self, answers):
        super().__init__(3)
        for b in self.brokers.values():
            b.endpoint = Endpoint("10.0.0.5", 9000 + b.node_id)      # a nodes file's brokers on another host
        self.answers, self.asked = answers, []

    def coordinator(self, key, key_type):
        self.asked.append((key, key_type))
        got = self.answers[(key, key_type)]
        if isinstance(got, Exception):
            raise got
        return got


def test_parse_coordinator_targets():
    assert parse_target("txn-coordinator(kc-tx-txn), group-coordinator( g.1 )") == [
        Target("txn-coordinator", key="kc-tx-txn"), Target("group-coordinator", key="g.1")]
    assert format_target(parse_target("txn-coordinator(a),broker:1")) == "txn-coordinator(a),broker:1"
    for bad in ("txn-coordinator()", "txn-coordinator(a,b)", "group-coordinator"):
        with pytest.raises(TargetError):
            parse_target(bad)


def test_resolve_coordinators_and_record_how():
    cl = _CoordCluster({("tx", "transaction"): (Endpoint("10.0.0.5", 9002), _Info(3)), ("g", "group"): (Endpoint("10.0.0.5", 9001), _Info(1, version=3))})
    notes = []
    assert _ids(resolve("txn-coordinator(tx),group-coordinator(g)", cl, _View(), random.Random(0), notes)) == [
        "broker3", "broker1"]
    assert cl.asked == [("tx", "transaction"), ("g", "group")]
    assert notes == [{"target": "txn-coordinator(tx)", "key_type": "transaction", "key": "tx", "node_id": 3,
                      "answered_by": 2, "version": 4},
                     {"target": "group-coordinator(g)", "key_type": "group", "key": "g", "node_id": 1,
                      "answered_by": 1, "version": 3}]


@pytest.mark.parametrize("answer, message", [
    ((Endpoint("10.0.0.5", 9001), _Info(-1, "COORDINATOR_NOT_AVAILABLE")), "answered COORDINATOR_NOT_AVAILABLE"),
    (RuntimeError("no broker answered"), "FindCoordinator not answered"),
    ((Endpoint("10.0.0.5", 9001), _Info(7)), "broker 7 is not part"),
])
def test_unresolvable_coordinators(answer, message):
    with pytest.raises(TargetUnresolved, match=message):
        resolve("txn-coordinator(tx)", _CoordCluster({("tx", "transaction"): answer}), _View(), random.Random(0))


class _SilentThenLeaderZk:
    """A ZooKeeper node whose `srvr` answers nothing for its first ``silent`` asks (an election, a slow
    host), then says it is the leader."""

    role, client_port = "zookeeper", 2181

    def __init__(self, node_id: int, silent: int):
        self.node_id, self.silent, self.asked = node_id, silent, 0

    def exec(self, cmd):
        self.asked += 1
        return (0, "Zookeeper version: 3.8\nMode: leader\n") if self.asked > self.silent else (1, "")


def test_zookeeper_leader_is_asked_again_until_one_answers(monkeypatch):
    import types
    from harness.nemesis import targets
    monkeypatch.setattr(targets, "ZK_MODE_WAIT_S", 5.0)
    zk = _SilentThenLeaderZk(1, silent=2)
    cluster = types.SimpleNamespace(zookeepers=[zk], name="t")
    assert resolve("zookeeper-leader", cluster, None, random.Random(0)) == [zk] and zk.asked == 3
    never = _SilentThenLeaderZk(1, silent=10**6)
    monkeypatch.setattr(targets, "ZK_MODE_WAIT_S", 0.6)
    with pytest.raises(TargetUnresolved, match=r"within 1 s \(\{1: None\}\)"):
        resolve("zookeeper-leader", types.SimpleNamespace(zookeepers=[never], name="t"), None, random.Random(0))
    assert never.asked >= 2
