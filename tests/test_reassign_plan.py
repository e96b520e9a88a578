"""harness.cluster.reassign_plan: the client-side computations of ``kafka-reassign-partitions``, redone on the
host. The expected values of the move map, the throttles and the assignment are those of Apache
Kafka's own unit tests (``ReassignPartitionsUnitTest.testMoveMap``, ``AdminRackAwareTest``
``testReplicaAssignment``, trunk 1eb7644), so a difference from the tool shows here."""

from __future__ import annotations

import random

import pytest

from harness.cluster import reassign_plan as rp
from harness.errors import AdminOpError


def _kafka_move_map_case():
    ongoing = {("foo", 0): ([1, 2, 3, 4], [4], [3]), ("foo", 1): ([4, 5, 6, 7, 8], [7, 8], [4, 5]),
               ("foo", 2): ([1, 2, 3, 4], [3, 4], [1, 2]), ("foo", 3): ([1, 2, 3, 4], [3, 4], [1, 2]),
               ("foo", 4): ([1, 2, 3, 4], [3, 4], [1, 2]), ("foo", 5): ([1, 2, 3, 4], [3, 4], [1, 2])}
    targets = {("foo", 0): [1, 2, 5], ("foo", 2): [3, 4], ("foo", 3): [5, 6], ("foo", 4): [3],
               ("foo", 5): [3, 4, 5, 6], ("bar", 0): [1, 2, 3]}
    current = {("foo", p): [1, 2, 3, 4] for p in (0, 2, 3, 4, 5)}
    current.update({("foo", 1): [4, 5, 6, 7, 8], ("bar", 0): [2, 3, 4], ("baz", 0): [1, 2, 3]})
    return ongoing, targets, current


def test_move_map_throttles_and_brokers_as_kafkas_unit_test():
    moves = rp.move_map(*_kafka_move_map_case())
    assert moves == {("foo", 0): ({1, 2, 3}, {5}), ("foo", 1): ({4, 5, 6}, {7, 8}), ("foo", 2): ({1, 2}, {3, 4}),
                     ("foo", 3): ({1, 2}, {5, 6}), ("foo", 4): ({1, 2}, {3}), ("foo", 5): ({1, 2}, {3, 4, 5, 6}),
                     ("bar", 0): ({2, 3, 4}, {1})}
    leader, follower = rp.throttled_replicas(moves)
    assert leader == {"foo": "0:1,0:2,0:3,1:4,1:5,1:6,2:1,2:2,3:1,3:2,4:1,4:2,5:1,5:2", "bar": "0:2,0:3,0:4"}
    assert follower == {"foo": "0:5,1:7,1:8,2:3,2:4,3:5,3:6,4:3,5:3,5:4,5:5,5:6", "bar": "0:1"}
    assert rp.reassigning_brokers(moves) == [1, 2, 3, 4, 5, 6, 7, 8]


def test_throttled_replicas_sort_as_strings_like_a_java_treeset():
    leader, follower = rp.throttled_replicas({("t", 10): ({1}, {2}), ("t", 2): ({1}, {3})})
    assert leader == {"t": "10:1,2:1"} and follower == {"t": "10:2,2:3"}


def test_move_map_refuses_a_partition_without_replicas():
    with pytest.raises(AdminOpError, match="t-7"):
        rp.move_map({}, {("t", 7): [1, 2]}, {})


def test_verify_states():
    targets = {("t", 0): [4, 2, 3], ("t", 1): [1, 2], ("t", 2): [2, 1], ("gone", 0): [1]}
    ongoing = {("t", 0): ([4, 2, 3, 1], [4], [1]), ("other", 5): ([1], [], [])}
    current = {("t", 0): [4, 2, 3, 1], ("t", 1): [1, 2], ("t", 2): [1, 2]}
    assert rp.verify_states(targets, ongoing, current) == {
        ("gone", 0): "mismatch", ("t", 0): "in_progress", ("t", 1): "complete", ("t", 2): "mismatch"}
    # the same vocabulary as the tool's --verify output (admin_tool.parse_verify)
    assert set(rp.verify_states(targets, ongoing, current).values()) <= {"complete", "in_progress", "mismatch"}


def test_throttle_clear_brokers_include_target_replicas_not_listed():
    assert rp.throttle_clear_brokers([1, 2, 3], {("t", 0): [4, 2, 3], ("u", 1): [9]}) == [1, 2, 3, 4, 9]


def test_assign_replicas_as_kafkas_admin_utils_test():
    got = rp.assign_replicas(10, 3, [0, 1, 2, 3, 4], start_index=0, shift=0)
    assert got == {0: [0, 1, 2], 1: [1, 2, 3], 2: [2, 3, 4], 3: [3, 4, 0], 4: [4, 0, 1],
                   5: [0, 2, 3], 6: [1, 3, 4], 7: [2, 4, 0], 8: [3, 0, 1], 9: [4, 1, 2]}
    for n, rf, why in ((0, 3, "partitions"), (3, 0, "replication factor"), (3, 6, "larger than")):
        with pytest.raises(AdminOpError, match=why):
            rp.assign_replicas(n, rf, [0, 1, 2, 3, 4], 0, 0)


def test_generate_is_seeded_and_keeps_each_topics_replication_factor():
    current = {("chaos", 0): [1, 2, 3], ("chaos", 1): [2, 3, 1], ("chaos", 2): [3, 1, 2], ("two", 0): [1, 2]}
    a = rp.generate(current, [1, 2, 3, 4], random.Random(7))
    assert a == rp.generate(current, [1, 2, 3, 4], random.Random(7))          # a replay proposes the same
    assert set(a) == set(current)
    assert all(len(set(r)) == len(current[tp]) and set(r) <= {1, 2, 3, 4} for tp, r in a.items())
    # every start index the tool could draw is one of these (Random(s) draws start, then shift)
    rng = random.Random(7)
    start, shift = rng.randrange(4), rng.randrange(4)
    assert [a[("chaos", p)] for p in range(3)] == [rp.assign_replicas(3, 3, [1, 2, 3, 4], start, shift)[p]
                                                   for p in range(3)]
    with pytest.raises(AdminOpError, match="no broker"):
        rp.generate(current, [])


def test_tool_unavailable_only_asks_a_foreign_image_once():
    from types import SimpleNamespace

    from harness.cluster import admin_tool
    calls = []

    def node(code):
        return SimpleNamespace(status=lambda: "running", exec=lambda cmd: calls.append(cmd) or (code, ""))

    ours = SimpleNamespace(distribution=SimpleNamespace(foreign=False), brokers={1: node(1)})
    assert admin_tool.unavailable(ours) is None and calls == []          # images built here have the tools
    foreign = SimpleNamespace(distribution=SimpleNamespace(foreign=True), brokers={1: node(1)})
    assert admin_tool.unavailable(foreign) == admin_tool.NO_TOOL_REASON
    assert admin_tool.unavailable(foreign) == admin_tool.NO_TOOL_REASON and len(calls) == 1   # kept
    assert "kafka-run-class" in calls[0][-1]
    with_tools = SimpleNamespace(distribution=SimpleNamespace(foreign=True), brokers={1: node(0)})
    assert admin_tool.unavailable(with_tools) is None
