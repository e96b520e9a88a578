"""A partition's offset table in the durability scan (scan.pos_get / pos_put: a list indexed by offset
until an offset a list cannot hold comes) behaves like the dict it replaces: the same record found or kept
for every offset, the same keys, including negative, far-ahead, bool and float offsets (a bool or a float is
the key of the int it equals)."""

from __future__ import annotations

import random

import pytest

from harness.checkers.scan import MAX_GAP, Scan, pos_get, pos_put
from harness.checkers.config import RunFacts


def _offset(rng: random.Random, n: int):
    k = rng.random()
    if k < 0.6:
        return n + rng.choice((0, 0, 0, 1, 2)) if rng.random() < 0.7 else rng.randint(0, n + 2)
    return rng.choice((-1, -n - 3, True, False, 1.0, 2.5, float(n), n + MAX_GAP, n + MAX_GAP + 1, 2 ** 40))


@pytest.mark.parametrize("seed", range(200))
def test_offset_table_is_a_dict(seed):
    rng = random.Random(seed)
    st = [("t", 0), [], None, {}, {}]
    model: dict = {}
    for i in range(rng.randint(1, 300)):
        off = _offset(rng, len(model))
        if rng.random() < 0.5:
            r = [f"v{i}"]
            assert pos_put(st, off, r) is model.setdefault(off, r)
        else:
            assert pos_get(st, off) is model.get(off)
    table = st[1]
    if type(table) is dict:
        assert table == model and {k: type(k) for k in table} == {k: type(k) for k in model}   # True stays True
    else:
        assert {o: r for o, r in enumerate(table) if r is not None} == model
        assert all(type(k) is int for k in model)
    scan = Scan(RunFacts({}), isr_lag_s=1.0, gap_s=5.0)
    scan.pos[("t", 0)] = table
    assert sorted(scan.offsets(("t", 0))) == sorted(model)
    assert scan.offsets(("t", 1)) == {}


def test_a_far_offset_or_a_float_turns_the_list_into_a_dict():
    st = [("t", 0), [], None, {}, {}]
    a, b, c = ["a"], ["b"], ["c"]
    assert pos_put(st, 0, a) is a and pos_put(st, 3, b) is b and type(st[1]) is list
    assert pos_get(st, 1) is None and pos_get(st, True) is None and pos_get(st, 3) is b
    assert pos_put(st, 3 + MAX_GAP + 1, c) is c and type(st[1]) is dict
    assert st[1] == {0: a, 3: b, 3 + MAX_GAP + 1: c}
    st = [("t", 0), [], None, {}, {}]
    pos_put(st, 0, a)
    assert pos_get(st, 0.0) is a and type(st[1]) is dict
