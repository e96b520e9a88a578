"""Read-write transactions and the client ``crash`` fault on a real cluster (KRaft 4.4.0, named
explicitly), through harness.runner.execute: 3 transactional producers whose transactions poll and send
over 4 partitions, one ``crash`` 8 s in (a new producer with the crashed one's transactional.id takes
its slot), about 20 s of load. Must PASS with ``wr`` edges between committed transactions (their reads
are in the record), the crash and its replacement recorded, and the replacement committing.

The one CI Docker test of issue 42 (markers ``docker`` only; about 45-60 s with the cluster start).
The long versions: ``transactions.read_write_crash`` and docs/examples/scenarios/jepsen_kafka_txn_queue.toml.
"""

from __future__ import annotations

import pytest

from harness.record import read_run
from harness.runner import execute
from harness.scenario.scenario import Scenario, TopicSpec
from suites.scenarios.transactions import committed_at_least

pytestmark = [pytest.mark.docker]


def _script(ctx) -> None:
    committed_at_least(ctx, 20, 5, 25)
    ctx.fault("crash", "p1")
    committed_at_least(ctx, 120, 8, 25)


SCENARIO = Scenario(
    "pytest.txn_read_write_crash", "3 producers, read-write transactions, one client crash", _script,
    tags=("pytest",), topics=[TopicSpec("rw", 4, 3, config={"min.insync.replicas": "2"})],
    workload={"kind": "txn", "topic": "rw", "partitions": 4, "producers": 3, "max_txn_length": 3,
              "rate": 10.0, "abort_ratio": 0.1, "consumers": 1},
    checks=("transactions", "expectations"), coverage={"acked_after_heal": 0, "committed_txns": 50},
    min_version="2.5", kraft=True, max_duration_s=90)


def test_read_write_transactions_with_a_client_crash_pass(tmp_path):
    out = execute(SCENARIO, runs_dir=tmp_path, distribution="apache-kraft", kafka_version="4.4.0", suite="pytest")
    rec = read_run(out.path)
    txn = rec.verdict["checks"]["transactions"]
    assert out.verdict == "PASS", (out.reason, {k: c for k, c in txn.get("checks", {}).items()
                                                if c.get("verdict") != "PASS"})
    assert txn["stats"]["edges"]["wr"] > 0 and txn["stats"]["txn_reads"] > 0, txn["stats"]
    crash = [e for e in rec.events if e["type"] == "txn.crash"]
    assert [(e["process"], e["replacement"], e["transactional_id"]) for e in crash] == [
        ("p1", "p4", rec.metadata["workload"]["transactional_ids"][1])]
    inits = [e["process"] for e in rec.events if e["type"] == "txn.init"]
    assert "p4" in inits                  # the replacement initialised the same transactional.id
    assert any(e["type"] == "txn" and e["process"] == "p4" and e["phase"] == "ok" and e["outcome"] == "commit"
               for e in rec.events)
