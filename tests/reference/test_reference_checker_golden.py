"""The ZooKeeper-mode checker's whole output (verdict, every divergence and violation with its
explanation and allowed writes, stats) on 72 seeded model histories with mutations
(checker_histories.py) equals the golden file generated from main a343a9d, before the checker's
hot path was restructured (issue 22 item 4)."""

from __future__ import annotations

import gzip
import json

import pytest

from reference import check_conformance
from tests.reference.checker_histories import GOLDEN, cases, outcome

_CASES = cases()
with gzip.open(GOLDEN, "rt") as _f:
    _GOLDEN = json.load(_f)


def test_golden_covers_every_case():
    assert sorted(_GOLDEN) == sorted(name for name, *_ in _CASES)
    rules = {d["rule"] for g in _GOLDEN.values() for d in g["divergences"] + g["invariant_violations"]}
    assert {"P1", "P3", "H2", "H11", "H19", "D1", "D4", "D10"} <= rules


@pytest.mark.parametrize("case", _CASES, ids=[c[0] for c in _CASES])
def test_checker_output_unchanged(case):
    name, events, metadata, profile = case
    got = json.loads(json.dumps(outcome(check_conformance(events, metadata, profile)), sort_keys=True))
    assert got == _GOLDEN[name]
