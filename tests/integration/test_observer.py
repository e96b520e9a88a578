"""Observer completeness on a real cluster (3 brokers, 1 ZooKeeper, Apache Kafka 3.9.2 ZK mode).

Bursts of partition-state writes are forced with controlled shutdowns, broker kills (session
expiry), restarts (ISR expansion) and preferred-leader elections. The live watcher may miss
versions; after reconciliation with ZooKeeper's own transaction log (read out of the container),
every partition-state znode must have every version 0..N, and everything the watcher saw must be in
the log.
"""

from __future__ import annotations

import json
import time

import pytest
from confluent_kafka import ElectionType, TopicPartition
from confluent_kafka.admin import NewTopic
from kazoo.client import KazooClient

from harness.observer.admin_sampler import AdminSampler
from harness.observer.reconcile import contiguity_problems, emit_reconciled, reconcile
from harness.observer.txn_events import history_from_txnlog
from harness.observer.txnlog import read_txnlog_blobs
from harness.observer.zk_watcher import ZkWatcher
from harness.record import RunRecorder, read_run

pytestmark = pytest.mark.docker

TOPIC = "observed"
PARTITIONS = 60
ZK_LOG_DIR = "/var/lib/zookeeper/version-2"


def _full_isr(w: ZkWatcher) -> bool:
    return all(sorted(w.isr(TOPIC, p)) == [1, 2, 3] for p in range(PARTITIONS))


def _elect_preferred(admin) -> None:
    parts = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
    fut = admin.elect_leaders(ElectionType.PREFERRED, parts)
    try:
        fut.result(timeout=30)
    except Exception:       # noqa: BLE001 - "election not needed" for some partitions is fine
        pass


def _read_txnlog(cluster):
    zk = cluster.zookeepers[0]
    names = [n for n in zk.list_dir(ZK_LOG_DIR) if n.startswith("log.")]
    assert names, f"no txn logs in {ZK_LOG_DIR}"
    return read_txnlog_blobs({n: zk.read_file(f"{ZK_LOG_DIR}/{n}") for n in names})


def test_reconciled_history_has_every_partition_state_version(kc_cluster_factory, tmp_path):
    cluster = kc_cluster_factory(brokers=3, zookeepers=1)
    rec = RunRecorder(tmp_path, "observer.completeness")
    watcher = ZkWatcher(cluster.zookeeper_connect, emit=rec.emit).start()
    sampler = AdminSampler(cluster.bootstrap_servers, emit=rec.emit, interval=0.5, duration=600,
                           topics=[TOPIC]).start()
    try:
        assert watcher.wait_until(lambda w: w.live_brokers() == [1, 2, 3] and w.controller_id() is not None, 30)
        # (an AdminClient kept alive while its futures run: a temporary one destroys its handle)
        admin = cluster.admin()
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)])[TOPIC].result(timeout=60)
        assert watcher.wait_until(lambda w: len(w.partitions(TOPIC)) == PARTITIONS and all(
            w.partition_state(TOPIC, p) for p in range(PARTITIONS)), 30)
        epochs_before = watcher.broker_epochs()

        # burst 1: the controller is killed (session expiry -> new controller;
        # every partition it led is written twice back to back: leader=-1, then the election, spec §2.5)
        ctl = watcher.controller_id(fresh=True)
        cluster.kill_broker(ctl)
        assert watcher.wait_until(lambda w: ctl not in w.live_brokers() and w.controller_id() not in (None, ctl), 60)
        cluster.start_broker(ctl)
        assert watcher.wait_until(_full_isr, 90)
        _elect_preferred(admin)
        # burst 2: controlled shutdown of a broker that leads partitions, then back + preferred election
        victim = watcher.leader(TOPIC, 0)
        cluster.stop_broker(victim)
        assert watcher.wait_until(lambda w: victim not in w.live_brokers(), 60)
        cluster.start_broker(victim)
        assert watcher.wait_until(_full_isr, 90)
        _elect_preferred(admin)

        # burst 3: legacy reassignments (the /admin/reassign_partitions znode, as the old
        # kafka-reassign-partitions --zookeeper wrote it) rotating every partition's replica order:
        # each is written twice back to back (LE bump at start, then at completion, spec §7)
        zk = KazooClient(hosts=cluster.zookeeper_connect, timeout=10.0)
        zk.start()
        try:
            for _ in range(3):
                plan = [{"topic": TOPIC, "partition": p,
                         "replicas": watcher.replicas(TOPIC, p)[1:] + watcher.replicas(TOPIC, p)[:1]}
                        for p in range(PARTITIONS)]
                zk.create("/admin/reassign_partitions",
                          json.dumps({"version": 1, "partitions": plan}).encode())
                assert watcher.wait_until(lambda w: w.reassignments() is None and all(
                    w.replicas(TOPIC, e["partition"]) == e["replicas"] for e in plan), 60)
        finally:
            zk.stop()
            zk.close()
        _elect_preferred(admin)
        assert watcher.wait_until(lambda w: all(w.leader(TOPIC, p) == w.replicas(TOPIC, p)[0]
                                                for p in range(PARTITIONS)), 60)
        time.sleep(1.0)          # let the last notifications and a sample arrive
        view = {p: watcher.partition_state(TOPIC, p) for p in range(PARTITIONS)}
        controller = watcher.controller_id(fresh=True)
    finally:
        sampler.stop()
        watcher.stop()
    watch_events = list(watcher.events)
    txn = history_from_txnlog(_read_txnlog(cluster))
    r = reconcile(watch_events, txn)

    # the ground truth is complete and explains everything the watcher saw
    assert txn.complete, (txn.first_zxid, txn.zxid_gaps)
    assert r.unexplained == [], r.unexplained[:3]
    assert contiguity_problems(r.history) == []
    for p in range(PARTITIONS):
        versions = [e["version"] for e in r.history if e["type"] == "zk.partition_state"
                    and e["topic"] == TOPIC and e["partition"] == p]
        assert versions == list(range(len(versions))), p
        assert versions[-1] == view[p]["version"] and versions[-1] >= 3, (p, versions)
    # watcher gaps are exactly versions the log has and the watcher lacks
    missed = {m["path"]: set(m["missing_versions"]) for m in r.missed}
    for g in (e for e in watch_events if e["type"] == "zk.gap"):
        assert set(g["missing_versions"]) <= missed.get(g["path"], set()), g
    topic_versions = [e["version"] for e in r.history if e["type"] == "zk.topic" and e["topic"] == TOPIC]
    assert topic_versions == list(range(len(topic_versions))) and len(topic_versions) >= 4
    # brokers: the killed controller deregistered with its old epoch and came back with a new one
    deregs = [e for e in r.history if e["type"] == "zk.broker" and e["broker_id"] == ctl and not e["registered"]]
    assert deregs and deregs[0]["broker_epoch"] == epochs_before[ctl]
    regs = [e for e in r.history if e["type"] == "zk.broker" and e["broker_id"] == ctl and e["registered"]]
    assert regs[-1]["broker_epoch"] > epochs_before[ctl]
    epochs = [e["epoch"] for e in r.history if e["type"] == "zk.controller_epoch"]
    assert epochs == list(range(epochs[0], epochs[0] + len(epochs))) and len(epochs) >= 2
    # the Admin-API samples agree with ZooKeeper once things settled
    samples = [s for s in sampler.samples if s.get("error") is None and s["partitions"]]
    assert samples and samples[-1]["controller_id"] == controller
    last = {q["partition"]: q for q in samples[-1]["partitions"]}
    for p in range(PARTITIONS):
        assert last[p]["leader"] == view[p]["leader"] and last[p]["replicas"] == watcher.replicas(TOPIC, p)

    emit_reconciled(rec.emit, r)
    run = read_run(rec.finish("PASS" if r.ok else "FAIL", "observer completeness",
                              stats={"observer": r.report()}))
    assert r.ok
    rep = r.report()
    print(f"watch saw {len(watch_events)} events; filled from the txn log: "
          f"{rep['missed_partition_state_versions']} partition-state and {rep['missed_topic_versions']} "
          f"topic versions the watcher missed; history {len(r.history)} events")
    assert run.of_type("admin.metadata") and run.of_type("zk.partition_state")
