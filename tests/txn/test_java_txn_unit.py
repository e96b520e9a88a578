"""The java-txn workload's settings and its refusal without a Docker cluster (no Docker needed here;
the real thing: tests/integration/test_java_txn.py and the java_txn scenarios)."""

from __future__ import annotations

import pytest

from harness.workload import make_workload
from harness.workload.java_txn import COPIER, JavaTxnWorkloadConfig


def test_metadata_names_the_ids_and_topics():
    cfg = JavaTxnWorkloadConfig(topic="jtx", partitions=2)
    md = cfg.to_metadata()
    assert md["kind"] == "java-txn" and md["input_topic"] == "jtx-in" and md["partitions"] == [0, 1]
    assert md["transactional_ids"] == {"0": "kc-jtx-jtx-0", "1": "kc-jtx-jtx-1"}
    assert md["client"] == COPIER and md["isolation.level"] == "read_committed"
    assert JavaTxnWorkloadConfig(topic="t", transactional_id="x", input_topic="src").tx_id(3) == "x-3"


@pytest.mark.parametrize("cluster", [None, object()])
def test_refused_without_a_docker_cluster(cluster):
    with pytest.raises(ValueError, match="needs a cluster the harness runs in Docker"):
        make_workload("127.0.0.1:9092", {"kind": "java-txn", "topic": "jtx"}, lambda *a, **k: None, cluster=cluster)
