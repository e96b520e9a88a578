"""Transactions v2 on a real 4.4.0 KRaft cluster with Kafka's own Java client (the ``java-txn`` workload,
harness/workload/java_txn.py): one copier copies 200 records in transactions of 20, the output log is read
back batch by batch, and the ``txn-epochs`` checker judges it with the run's feature levels. The broker
finalizes ``transaction.version`` 2 by default on 4.4.0, so every transaction's marker must be one epoch
above its data and the next transaction must use that epoch (docs/transactions.md "Transactions v2").
No fault: the faults are the on-demand scenarios' (suites/scenarios/java_txn.py)."""

from __future__ import annotations

import json

import pytest

from harness import images
from harness.runner import execute
from harness.scenario.scenario import RunContext, Scenario, TopicSpec

pytestmark = pytest.mark.docker

VERSION = "4.4.0"


def _copy_some(ctx: RunContext) -> None:
    wl = ctx.nemesis.workload
    ctx.wait_until("the copier committed 100 records", lambda: wl.acknowledged() >= 100, 60)


SCENARIO = Scenario(
    "test.java_txn_tv2", "one Java copier, 200 records in transactions of 20, no fault", _copy_some,
    tags=(), topics=[TopicSpec("jtx", 1, 3), TopicSpec("jtx-in", 1, 3)],
    workload={"kind": "java-txn", "topic": "jtx", "partitions": 1, "chunk": 200, "transaction_size": 20,
              "random_aborts": False, "min_committed_txns": 5, "read_settle_s": 20},
    checks=("txn-epochs",), coverage={"acked_after_heal": 0, "producers_alive": False}, min_version="4.0",
    max_duration_s=90, kraft=True)


@pytest.fixture(scope="module")
def image(kc_docker):
    return images.build(VERSION).tag


def test_java_client_bumps_the_epoch_at_every_transaction(image, tmp_path):
    out = execute(SCENARIO, runs_dir=tmp_path, image=image, suite="pytest", distribution="apache-kraft")
    verdict = json.loads((out.path / "verdict.json").read_text())
    res = verdict["checks"]["txn-epochs"]
    assert out.verdict == "PASS", f"{out.reason} ({out.path})"
    st = res["stats"]
    assert st["transaction_version"] == 2
    assert st["committed_txns"] >= 10 and st["committed_records"] == st["input_records"] >= 200
    (key, seq), = st["epoch_sequences"].items()
    # each COMMIT one above its data; the next transaction at that epoch (a new copier instance's
    # InitProducerId bumps once more: above it)
    for (data, kind, marker), nxt in zip(seq, seq[1:]):
        assert kind == "commit" and marker == data[-1] + 1 and nxt[0][0] >= marker, seq
    assert sum(nxt[0] == [t[2]] for t, nxt in zip(seq, seq[1:])) >= 8, seq
    assert st["distinct_data_epochs"] >= st["committed_txns"]
