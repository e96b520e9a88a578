"""Feature levels set at format time on a real 4.4.0 KRaft cluster (docs/kraft.md "Feature levels"): the
storage tool formats every node with ``--feature NAME=LEVEL``, and what the cluster finalized, asked of the
running cluster with Kafka's own ``kafka-features describe``, is what was asked; the metadata log read
through the one definition (``control_history.feature_levels``) says the same. One combined node:
``pytest tests/integration/test_feature_levels_cluster.py -n 0`` (~30 s when the image is built)."""

from __future__ import annotations

import pytest

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from harness import images
from harness.cluster import quorum_ops
from harness.cluster.cluster import Cluster, ClusterSpec
from harness.distributions.control_history import feature_levels
from harness.observer.kraft_history import read_kraft_history
from reference.kraft_log import LogChecker
from reference.profiles import kraft

pytestmark = pytest.mark.docker

VERSION = "4.4.0"
ASKED = {"transaction.version": 1, "group.version": 0, "eligible.leader.replicas.version": 0, "share.version": 1}


@pytest.fixture(scope="module")
def image(kc_docker):
    return images.inspect(images.build(VERSION).tag)


def test_cluster_finalizes_the_levels_it_was_formatted_with(image):
    cl = Cluster(ClusterSpec(brokers=1, distribution="apache-kraft", image=image.tag, features=dict(ASKED),
                             startup_timeout_s=180))
    try:
        cl.start()
        told = quorum_ops.finalized_features(cl)          # kafka-features describe, on the running cluster
        logged = feature_levels(cl.control.writes_since(-1))
    finally:
        cl.remove()
    for name, level in ASKED.items():
        assert told.get(name, 0) == level, (name, told)
        assert logged.get(name, 0) == level, (name, logged)   # level 0: no FeatureLevelRecord at all
    assert "group.version" not in logged and logged["metadata.version"] == 33      # the release's own default
    assert told["metadata.version"] == "4.4-IV2"


def _broker_config(cl, broker: int, value: str | None, key: str = "min.insync.replicas") -> None:
    op = AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
    res = ConfigResource(ResourceType.BROKER, str(broker),
                         incremental_configs=[ConfigEntry(key, value, incremental_operation=op)])
    for fut in cl.admin().incremental_alter_configs([res], request_timeout=30).values():
        fut.result(timeout=35)


def _refused(cl, broker: int, value: str | None):
    with pytest.raises(KafkaException) as refused:
        _broker_config(cl, broker, value)
    return refused.value.args[0]


def test_enabling_elr_clears_broker_level_min_isr_which_it_then_refuses(image):
    """docs/kraft.md rules L15 / L16 on a real 4.4.0 controller: a broker-level min.insync.replicas is allowed
    with ELR off; `kafka-features upgrade` to ELR deletes it and sets a cluster-wide one in its batch; then the
    controller refuses setting or deleting a broker-level one with INVALID_CONFIG, while another key of that
    broker is accepted (the refusal is the key's). The metadata log passes L14-L16. (librdkafka cannot name
    the cluster-wide BROKER resource "", so its removal is judged on fabricated logs only.)"""
    cl = Cluster(ClusterSpec(brokers=1, distribution="apache-kraft", image=image.tag,
                             features={"eligible.leader.replicas.version": 0}, startup_timeout_s=180))
    try:
        cl.start()
        b = cl.broker_ids[0]
        _broker_config(cl, b, "1")                                   # ELR off: allowed
        quorum_ops.features_tool(cl, ["upgrade", "--feature", "eligible.leader.replicas.version=1"])
        set_refused, delete_refused = _refused(cl, b, "1"), _refused(cl, b, None)
        _broker_config(cl, b, "-1", key="log.retention.bytes")      # another key of that broker: accepted
        hist = read_kraft_history(cl)
    finally:
        cl.remove()
    for err in (set_refused, delete_refused):
        assert err.code() == KafkaError.INVALID_CONFIG, err
        assert "Broker-level min.insync.replicas cannot be altered while ELR is enabled" in err.str()
    meta = sorted((e for e in hist.events if str(e.get("type", "")).startswith("meta.")), key=lambda e: e["offset"])
    [enable] = [e for e in meta if e["type"] == "meta.feature" and e.get("name") == "eligible.leader.replicas.version"]
    batch = [e for e in meta if (e.get("raft_epoch"), e.get("time_ms")) == (enable["raft_epoch"], enable["time_ms"])
             and e["offset"] < enable["offset"] and e["type"] == "meta.config"]
    assert {(e["resource_name"], e["value"]) for e in batch} >= {(str(b), None)}, batch   # the deletion, in its batch
    findings: list[tuple] = []
    checker = LogChecker(kraft(VERSION), {"broker_config": {}, "topics": []},
                         lambda rule, ev, msg, **kw: findings.append((rule, msg)))
    checker.run(meta, [])
    assert not findings, findings
    assert checker.stats["elr_enablings_judged"] == 1
