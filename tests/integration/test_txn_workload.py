"""The transactional workload on a real cluster (1 ZooKeeper, 3 brokers), through harness.runner.execute:
a short ``transactions.leader_kill`` (the leader of txn-0 killed and restarted while a transactional
producer commits and aborts and a read_committed consumer reads) must PASS, with the transaction
checker applicable and enough transactions committed and aborted.

Marked ``chaos`` as well as ``docker``: about a minute and a half of a real cluster, so it is not in
the default CI selection (``-m "smoke or not (conformance or chaos or nightly)"``).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness.record import read_run
from harness.runner import execute
from suites.scenarios.transactions import SCENARIOS

pytestmark = [pytest.mark.docker, pytest.mark.chaos]


def test_leader_kill_under_transactions_passes(kc_image, tmp_path):
    scenario = replace(next(s for s in SCENARIOS if s.name == "transactions.leader_kill"), tags=("pytest",))
    out = execute(scenario, runs_dir=tmp_path, image=kc_image.tag, distribution="apache-zk", suite="pytest")
    rec = read_run(out.path)
    txn = rec.verdict["checks"]["transactions"]
    assert out.verdict == "PASS", (out.reason, {k: c for k, c in txn.get("checks", {}).items()
                                                if c.get("verdict") != "PASS"})
    assert txn["applicable"] is True and txn["verdict"] == "PASS"
    assert txn["stats"]["committed"] >= 100, txn["stats"]
    assert txn["stats"]["aborted"] >= 10, txn["stats"]
    assert rec.metadata["workload"]["kind"] == "txn"
    assert rec.metadata["workload"]["isolation.level"] == "read_committed"
    # every transaction wrote to two partitions at least
    invokes = [e for e in rec.events if e["type"] == "txn" and e["phase"] == "invoke"]
    assert invokes and all(len({o["partition"] for o in e["ops"]}) >= 2 for e in invokes)
    assert any(e["type"] == "fault.start" and e["fault"] == "kill" for e in rec.events)
