"""Negative controls for read-write (consume-transform-produce) transactions on real clusters (issue 42):
``transactions.read_write_crash`` (5 transactional producers, read-write transactions, 4 client crashes)
run with one DELIBERATE MISCONFIGURATION of the transform stage, a workload knob that exists for these
controls only (docs/transactions.md "Negative controls"); the run itself must come out FAIL naming the
anomaly. Nothing is forged:

- ``transform_isolation = "read_uncommitted"``: the transactions' polls read records of transactions
  that are later aborted (10-30 % are, on purpose, after a flush) -> ``transactions: G1a`` (examples
  with ``reader_txn``: the reading transaction, and the aborted writer).
- ``offsets_outside_txn = true``: the consumed offsets are committed by the consumer every 2 s, outside
  the transaction (an at-least-once pipeline); a crashed client's replacement starts at the last such
  commit and consumes again what committed transactions had consumed -> ``transactions: eos-duplicate``.

Markers ``docker`` and ``chaos`` (each run about a minute); run one at a time inside a cluster slot:
``flock /tmp/kc/slotA.lock python -m pytest -m "docker and chaos" suites/test_txn_rw_negative_controls.py -s -rA``
(on ``apache-kraft`` 4.4.0, named explicitly).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from harness.runner import execute
from suites.catalog import scenarios_for

pytestmark = [pytest.mark.docker, pytest.mark.chaos]
NAME = "transactions.read_write_crash"


def _misconfigured(workload: dict, description: str):
    base = next(s for s in scenarios_for(NAME) if s.name == NAME)
    change = {"workload": workload, "description": f"{base.description}; NEGATIVE CONTROL: {description}"}
    return replace(base, variants={"negative": change}).with_variant("negative")


DISTRIBUTION, VERSION = "apache-kraft", "4.4.0"


def _run(scenario, runs_dir):
    out = execute(scenario, runs_dir=runs_dir, distribution=DISTRIBUTION, kafka_version=VERSION, suite="pytest")
    verdict = json.loads((Path(out.path) / "verdict.json").read_text())
    print(f"{scenario.name}[negative]: {out.verdict} in {out.seconds:.0f} s — {out.reason} ({out.path})")
    return out, verdict


def _failed(verdict: dict, anomaly: str) -> dict:
    chk = verdict["checks"]["transactions"]["checks"][anomaly]
    assert chk["verdict"] == "FAIL", (anomaly, chk)
    assert chk["examples"], chk
    return chk


def test_transform_reading_read_uncommitted_reads_aborted_writes(tmp_path_factory):
    """G1a: the consume stage of consume-transform-produce reads read_uncommitted."""
    s = _misconfigured({"transform_isolation": "read_uncommitted", "abort_ratio": 0.3},
                       "the transactions' polls read_uncommitted (aborted records visible to them)")
    out, verdict = _run(s, tmp_path_factory.mktemp("runs"))
    assert out.verdict == "FAIL" and "G1a" in out.reason, out.reason
    g1a = _failed(verdict, "G1a")
    ex = next(e for e in g1a["examples"] if "reader_txn" in e)
    assert ex["writer"]["status"] == "aborted" and {"value", "topic", "partition", "offset"} <= set(ex), ex


def test_offsets_committed_outside_the_transaction_duplicate_after_a_crash(tmp_path_factory):
    """eos-duplicate: input offsets committed by the consumer, not in the transaction; clients crash."""
    s = _misconfigured({"offsets_outside_txn": True},
                       "consumed offsets committed outside the transaction every 2 s (at-least-once)")
    out, verdict = _run(s, tmp_path_factory.mktemp("runs"))
    assert out.verdict == "FAIL" and "eos-duplicate" in out.reason, out.reason
    dup = _failed(verdict, "eos-duplicate")
    ex = dup["examples"][0]
    assert ex["first"]["process"] != ex["again"]["process"], ex     # the crashed one and its replacement
