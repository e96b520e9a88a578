"""The durability checker's whole output (every check's verdict, counts, examples, windows, stats) on
240 seeded raw histories (durability_histories.py) equals the golden file generated from main
69b20a8 (plus a deterministic tie order for the availability examples, and acks_semantics corrected
by ZooKeeper's txn log: three cases), before the scan was restructured for speed (issue 22 item 4)."""

from __future__ import annotations

import gzip
import json

import pytest

from harness.checkers import check_durability
from tests.checkers.durability_histories import GOLDEN, cases, outcome

_CASES = cases()
with gzip.open(GOLDEN, "rt") as _f:
    _GOLDEN = json.load(_f)


def test_golden_covers_every_case_and_every_check_outcome():
    assert sorted(_GOLDEN) == sorted(name for name, *_ in _CASES)
    seen = {(name, c["verdict"]) for g in _GOLDEN.values() for name, c in g["checks"].items()}
    for check in ("lost", "unseen", "duplicates", "inconsistent_offsets", "nonmonotonic_send",
                  "nonmonotonic_poll", "poll_skip"):
        assert {(check, "FAIL"), (check, "PASS")} & seen == {(check, "FAIL"), (check, "PASS")} or \
            check == "unseen", check
    for check in ("acks_semantics", "failed_visible", "unexpected_values", "producer_fatal", "availability"):
        assert (check, "FAIL") in seen and (check, "PASS") in seen, check
    assert {g["verdict"] for g in _GOLDEN.values()} == {"PASS", "FAIL", "UNKNOWN"}


@pytest.mark.parametrize("case", _CASES, ids=[c[0] for c in _CASES])
def test_durability_output_unchanged(case):
    name, events, metadata, opts = case
    assert outcome(check_durability(events, metadata, opts)) == _GOLDEN[name]
