"""``run --shard I/N``: every scenario of a suite in exactly one shard, the same slices on every machine,
balanced by expected durations."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.shard import assign, known_durations, parse_shard, select
from suites.catalog import scenarios_for

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("suite", ["conformance", "all", "smoke"])
@pytest.mark.parametrize("n", range(1, 9))
def test_each_scenario_in_exactly_one_shard(suite, n):
    names = [s.name for s in scenarios_for(suite)]
    shards = [select(names, f"{i}/{n}") for i in range(1, n + 1)]
    flat = [x for s in shards for x in s]
    assert sorted(flat) == sorted(names)
    for s in shards:                      # each shard keeps the suite's order
        assert s == [x for x in names if x in s]


def test_same_slices_whatever_the_input_order():
    names = [s.name for s in scenarios_for("conformance")]
    dur = {x: float(random.Random(x).randint(10, 70)) for x in names}
    a = assign(names, 3, dur)
    shuffled = names[:]
    random.Random(1).shuffle(shuffled)
    b = assign(shuffled, 3, dur)
    assert [sorted(s) for s in a] == [sorted(s) for s in b]


def test_shards_are_balanced_within_the_longest_scenario():
    rng = random.Random(7)
    for trial in range(50):
        names = [f"s{i}" for i in range(rng.randint(5, 60))]
        dur = {x: rng.uniform(5, 90) for x in names}
        for n in range(1, 9):
            loads = [sum(dur[x] for x in s) for s in assign(names, n, dur)]
            assert max(loads) - min(loads) <= max(dur.values()) + 1e-9


def test_unknown_durations_count_as_the_median():
    shards = assign(["a", "b", "c", "d"], 2, {"a": 100.0, "b": 10.0, "c": 10.0})
    loads = {tuple(s) for s in shards}
    assert ("a",) in loads                      # the long one alone; the others (d = median 10 s) together


@pytest.mark.parametrize("bad", ["", "3", "0/2", "3/2", "1/0", "a/b", "-1/2"])
def test_malformed_shard_is_a_usage_error(bad):
    with pytest.raises(HarnessError):
        parse_shard(bad)


def test_shipped_durations_name_real_scenarios():
    names = {s.name for s in scenarios_for("all")}
    table = known_durations()
    assert set(table) <= names


def test_cli_rejects_a_bad_shard_before_any_docker_work():
    r = subprocess.run([sys.executable, "-m", "harness.cli", "run", "smoke", "--shard", "3/2"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120, env={"PATH": "/usr/bin:/bin",
                                                                          "DOCKER_HOST": "unix:///nonexistent"})
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "kafka-chaos: error: --shard 3/2: I must be between 1 and N, and N at least 1"]


def _makespan(costs: list[float], workers: int) -> float:
    """The wall time of starting ``costs`` in this order on ``workers`` slots (each job takes the
    first free slot), as harness.parallel.run_children does."""
    free = [0.0] * workers
    for c in costs:
        k = min(range(workers), key=free.__getitem__)
        free[k] += c
    return max(free)


def test_longest_first_starts_the_longest_expected_first_and_keeps_order_on_ties():
    from harness.shard import longest_first
    names = ["a", "b", "c", "d", "e"]
    order = longest_first(names, {"a": 10, "b": 50, "c": 10, "d": 30})   # e unknown: median 20
    assert [names[i] for i in order] == ["b", "d", "e", "a", "c"]
    assert sorted(order) == list(range(5))
    assert longest_first([], {}) == []
    assert longest_first(["x", "y"], {}) == [0, 1]          # nothing known: the given order


def test_longest_first_never_lengthens_the_suite_on_two_workers():
    """On the shipped conformance durations, the start order run_children uses finishes no later
    than the catalogue's order on 2 workers (and strictly earlier when the catalogue ends long)."""
    from harness.shard import known_durations, longest_first
    table = known_durations()
    names = sorted(table)
    assert len(names) >= 30
    given = _makespan([table[n] for n in names], 2)
    lpt = _makespan([table[names[i]] for i in longest_first(names, table)], 2)
    assert lpt <= given + 1e-6                   # float sums of the same costs in another order
    worst = sorted(names, key=table.__getitem__)                       # shortest first: the long tail
    assert _makespan([table[names[i]] for i in longest_first(worst, table)], 2) < _makespan(
        [table[n] for n in worst], 2)
