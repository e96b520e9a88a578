"""Admin-API sampler: conversion of confluent-kafka metadata objects, and bounded sampling against
an unreachable loopback address (the cluster-side behaviour is in tests/integration/test_observer.py)."""

from __future__ import annotations

import socket

import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import BrokerMetadata, ClusterMetadata, PartitionMetadata, TopicMetadata

from harness.observer.admin_sampler import AdminSampler, metadata_fields
from harness.record import RunRecorder, read_run


def _pm(pid, leader, replicas, isrs, error=None):
    pm = PartitionMetadata()
    pm.id, pm.leader, pm.replicas, pm.isrs, pm.error = pid, leader, replicas, isrs, error
    return pm


def _md():
    md = ClusterMetadata()
    md.controller_id, md.orig_broker_id = 2, 3
    for b in (1, 2, 3):
        bm = BrokerMetadata()
        bm.id, bm.host, bm.port = b, "127.0.0.1", 9090 + b
        md.brokers[b] = bm
    t = TopicMetadata()
    t.topic = "t1"
    t.partitions = {1: _pm(1, -1, [2, 3, 1], [3], KafkaError(KafkaError.LEADER_NOT_AVAILABLE)),
                    0: _pm(0, 1, [1, 2, 3], [1, 2])}
    md.topics["t1"] = t
    off = TopicMetadata()
    off.topic = "__consumer_offsets"
    off.partitions = {0: _pm(0, 1, [1], [1])}
    md.topics["__consumer_offsets"] = off
    gone = TopicMetadata()
    gone.topic, gone.error = "gone", KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)
    md.topics["gone"] = gone
    return md


def test_metadata_fields():
    f = metadata_fields(_md())
    assert f["controller_id"] == 2 and f["brokers"] == [1, 2, 3] and f["answered_by"] == 3
    assert [(p["topic"], p["partition"]) for p in f["partitions"]] == [("gone", None), ("t1", 0), ("t1", 1)]
    p0, p1 = f["partitions"][1], f["partitions"][2]
    assert (p0["leader"], p0["replicas"], p0["isr"], p0["error"], p0["leader_epoch"]) == (1, [1, 2, 3], [1, 2], None, None)
    assert (p1["leader"], p1["error"]) == (-1, "LEADER_NOT_AVAILABLE")
    assert f["partitions"][0]["error"] == "UNKNOWN_TOPIC_OR_PART"
    only = metadata_fields(_md(), topics=["__consumer_offsets"])
    assert [p["topic"] for p in only["partitions"]] == ["__consumer_offsets"]
    md = _md()
    md.controller_id = -1
    assert metadata_fields(md)["controller_id"] is None


def test_sampler_is_bounded_and_records_failures(tmp_path):
    with socket.socket() as s:          # a loopback port with nothing listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    rec = RunRecorder(tmp_path, "observer.sampler")
    sampler = AdminSampler(f"127.0.0.1:{port}", emit=rec.emit, interval=0.05, max_samples=2,
                           request_timeout=0.5)
    assert not sampler.supports_reassignments       # confluent-kafka 2.16 lacks it
    sampler.start()
    sampler.join(timeout=30)
    sampler.stop()
    assert len(sampler.samples) == 2
    run = read_run(rec.finish("UNKNOWN", "no cluster"))
    evs = run.of_type("admin.metadata")
    assert len(evs) == 2 and all(e["error"] and e["partitions"] == [] for e in evs)


def test_sampler_rejects_bad_interval():
    with pytest.raises(ValueError, match="interval"):
        AdminSampler("127.0.0.1:1", interval=0)
