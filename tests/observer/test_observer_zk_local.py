"""The live watcher and the reconciliation against a real ZooKeeper 3.8 on 127.0.0.1.

ZooKeeper is started and stopped by the fixture from the jars at $KAFKA_CHAOS_ZK_CLASSPATH
(see make_fixtures.py); the tests skip when it is unset. Znodes are written in Kafka's formats.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import pytest
from kazoo.client import KazooClient

sys.path.insert(0, str(Path(__file__).resolve().parent))

from make_fixtures import broker_json, controller_json, state_json, topic_json  # noqa: E402
from zk_local_server import ENV, LocalZooKeeper, classpath  # noqa: E402

from harness.observer.reconcile import contiguity_problems, emit_reconciled, reconcile  # noqa: E402
from harness.observer.txn_events import history_from_txnlog  # noqa: E402
from harness.observer.txnlog import read_txnlog_dir  # noqa: E402
from harness.observer.zk_watcher import ZkWatcher  # noqa: E402
from harness.record import RunRecorder, read_run  # noqa: E402

pytestmark = pytest.mark.skipif(not classpath(), reason=f"{ENV} not set: no ZooKeeper jars to start a "
                                "loopback ZooKeeper (see tests/observer/make_fixtures.py)")

STATE = "/brokers/topics/t1/partitions/0/state"


@pytest.fixture
def zk_server():
    with LocalZooKeeper(classpath()) as server:
        yield server


@pytest.fixture
def writer(zk_server):
    c = KazooClient(hosts=zk_server.connect, timeout=5.0)
    c.start()
    for p in ("/brokers/ids", "/brokers/topics", "/admin/delete_topics"):
        c.ensure_path(p)
    c.create("/controller_epoch", b"0")
    yield c
    c.stop()
    c.close()


def _elect(c: KazooClient, bid: int, epoch_version: int) -> None:
    t = c.transaction()
    t.create("/controller", controller_json(bid), ephemeral=True)
    t.set_data("/controller_epoch", str(epoch_version + 1).encode(), epoch_version)
    assert t.commit()[0] == "/controller"


def _make_topic(c: KazooClient, name: str, parts: dict) -> None:
    c.create(f"/brokers/topics/{name}", topic_json(parts, topic_id="AAAAAAAAAAAAAAAAAAAAAQ"))
    for p, reps in parts.items():
        c.create(f"/brokers/topics/{name}/partitions/{p}/state", state_json(reps[0], 0, reps, 1),
                 makepath=True)


def test_watcher_view_follows_controller_brokers_and_partitions(zk_server, writer):
    with ZkWatcher(zk_server.connect) as w:
        b1 = KazooClient(hosts=zk_server.connect, timeout=5.0)
        b1.start()
        try:
            b1.create("/brokers/ids/1", broker_json(1), ephemeral=True)
            writer.create("/brokers/ids/2", broker_json(2), ephemeral=True)
            _elect(b1, 1, 0)
            _make_topic(writer, "t1", {0: [1, 2], 1: [2, 1]})
            assert w.wait_until(lambda v: v.controller_id() == 1 and v.live_brokers() == [1, 2]
                                and v.partition_state("t1", 1) is not None, 10)
            assert w.controller_epoch() == 1
            assert w.replicas("t1", 1) == [2, 1] and w.partitions("t1") == [0, 1]
            epoch1 = writer.exists("/brokers/ids/1").czxid
            assert w.broker_epochs()[1] == epoch1
            st = w.partition_state("t1", 1)
            assert (st["leader"], st["isr"], st["version"]) == (2, [2, 1], 0)
            assert w.controller_id(fresh=True) == 1 and w.live_brokers(fresh=True) == [1, 2]

            writer.set(STATE, state_json(2, 1, [2], 1))
            assert w.wait_until(lambda v: v.leader("t1", 0) == 2, 10)
            assert w.followers("t1", 0) == [1] and w.isr("t1", 0) == [2]
            assert w.partition_state("t1", 0, fresh=True)["version"] == 1

            b1.stop()           # broker 1 (the controller) closes its session
            assert w.wait_until(lambda v: v.controller_id() is None and v.live_brokers() == [2], 10)
        finally:
            b1.close()
        evs = w.events
    types = [e["type"] for e in evs]
    assert {"zk.controller", "zk.controller_epoch", "zk.broker", "zk.topic", "zk.partition_state",
            "zk.delete_topics"} <= set(types)
    assert all(e["source"] == "watch" for e in evs)
    dereg = [e for e in evs if e["type"] == "zk.broker" and not e["registered"]]
    assert [(e["broker_id"], e["broker_epoch"]) for e in dereg] == [(1, epoch1)]
    assert dereg[0]["zxid"] > epoch1


def _burst(c: KazooClient, path: str, n: int, start_version: int) -> None:
    """n successive controller-style writes (multi: epoch check + setData) as fast as possible."""
    for i in range(n):
        t = c.transaction()
        t.check("/controller_epoch", 1)
        t.set_data(path, state_json(1 + i % 2, start_version + i, [1, 2] if i % 3 else [1], 1))
        res = t.commit()
        assert res[1].version == start_version + i + 1, res


def test_burst_watcher_gaps_are_filled_by_the_txn_log(zk_server, writer, tmp_path):
    """The completeness property on a loopback ZooKeeper: whatever the watcher misses in a burst of
    writes from several clients, watched + gap versions cover everything, and the reconciled
    history has every version 0..N."""
    rec = RunRecorder(tmp_path, "observer.burst")
    with ZkWatcher(zk_server.connect, emit=rec.emit) as w:
        writer.create("/brokers/ids/1", broker_json(1), ephemeral=True)
        _elect(writer, 1, 0)
        _make_topic(writer, "t1", {0: [1, 2], 1: [2, 1], 2: [1, 2]})
        assert w.wait_until(lambda v: all(v.partition_state("t1", p) for p in range(3)), 10)
        clients = []
        for _ in range(3):
            c = KazooClient(hosts=zk_server.connect, timeout=5.0)
            c.start()
            clients.append(c)
        n = 150
        threads = [threading.Thread(target=_burst, args=(c, f"/brokers/topics/t1/partitions/{p}/state", n, 0))
                   for p, c in enumerate(clients)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        for c in clients:
            c.stop()
            c.close()
        assert w.wait_until(lambda v: all(v.partition_state("t1", p)["version"] == n for p in range(3)), 20)
        watch_events = list(w.events)
    # watcher's own bookkeeping: seen versions + reported gaps = 0..n for every partition
    for p in range(3):
        path = f"/brokers/topics/t1/partitions/{p}/state"
        seen = {e["version"] for e in watch_events if e["type"] == "zk.partition_state" and e["partition"] == p}
        gaps = {v for e in watch_events if e["type"] == "zk.gap" and e["path"] == path
                for v in e["missing_versions"]}
        assert seen | gaps == set(range(n + 1)) and not (seen & gaps), p
    hist = history_from_txnlog(read_txnlog_dir(zk_server.data_dir))
    r = reconcile(watch_events, hist)
    assert r.txnlog_complete and r.unexplained == [] and r.before_log == [] and r.after_log == []
    assert contiguity_problems(r.history) == []
    for p in range(3):
        versions = [e["version"] for e in r.history if e["type"] == "zk.partition_state" and e["partition"] == p]
        assert versions == list(range(n + 1))
    missed = {m["partition"]: set(m["missing_versions"]) for m in r.missed if m["kind"] == "partition_state"}
    for e in watch_events:
        if e["type"] == "zk.gap":
            p = int(e["path"].split("/")[5])
            assert set(e["missing_versions"]) <= missed[p]
    print("watcher missed", {p: len(v) for p, v in missed.items()}, "of", n + 1, "versions per partition")
    assert r.ok and r.report()["missed_partition_state_versions"] == sum(len(v) for v in missed.values())
    emit_reconciled(rec.emit, r)
    run = read_run(rec.finish("PASS", "observer test"))
    assert len(run.of_type("zk.partition_state")) >= 3 * (n + 1)
    assert all(isinstance(e["zxid"], int) for e in run.of_type("zk.partition_state"))
    json.dumps(r.report())


def test_reconcile_flags_watch_events_the_log_lacks(zk_server, writer):
    with ZkWatcher(zk_server.connect) as w:
        _make_topic(writer, "t1", {0: [1, 2]})
        assert w.wait_until(lambda v: v.partition_state("t1", 0) is not None, 10)
        events = list(w.events)
    hist = history_from_txnlog(read_txnlog_dir(zk_server.data_dir))
    assert reconcile(events, hist).unexplained == []
    st = next(e for e in events if e["type"] == "zk.partition_state")
    forged = dict(st, leader=7)                      # content the log never had
    bogus = dict(st, version=5, zxid=st["zxid"])     # a version that never existed
    r = reconcile(events + [forged, bogus], hist)
    assert len(r.unexplained) == 2 and not r.ok
    assert "different content" in r.unexplained[0]["why"]


def test_watcher_survives_session_expiry_of_brokers_and_deletion_of_controller(zk_server, writer):
    with ZkWatcher(zk_server.connect) as w:
        b = KazooClient(hosts=zk_server.connect, timeout=5.0)
        b.start()
        b.create("/brokers/ids/3", broker_json(3), ephemeral=True)
        _elect(b, 3, 0)
        assert w.wait_until(lambda v: v.controller_id() == 3, 10)
        writer.delete("/controller")                 # the seed-004 trick
        assert w.wait_until(lambda v: v.controller_id() is None, 10)
        _elect(b, 3, 1)
        assert w.wait_until(lambda v: v.controller_id() == 3 and v.controller_epoch() == 2, 10)
        b.stop()
        b.close()
        assert w.wait_until(lambda v: v.live_brokers() == [] and v.controller_id() is None, 10)
        events = list(w.events)
    r = reconcile(events, history_from_txnlog(read_txnlog_dir(zk_server.data_dir)))
    assert r.unexplained == [] and r.ok
    ctl = [e["broker_id"] for e in r.history if e["type"] == "zk.controller"]
    assert ctl == [3, None, 3, None]


def test_deleted_state_znodes_and_topic_are_seen(zk_server, writer):
    """Topic deletion (spec §6.2): the watcher emits one ``deleted`` partition_state per partition
    and drops the topic from its view (it once failed on the cached zxid and emitted nothing)."""
    with ZkWatcher(zk_server.connect) as w:
        writer.create("/brokers/ids/1", broker_json(1), ephemeral=True)
        _make_topic(writer, "t1", {0: [1], 1: [1]})
        assert w.wait_until(lambda v: v.partition_state("t1", 1) is not None, 10)
        writer.delete("/brokers/topics/t1", recursive=True)
        assert w.wait_until(lambda v: "t1" not in v.topics() and v.partition_state("t1", 0) is None
                            and v.partition_state("t1", 1) is None, 10)
        evs = w.events
    gone = [e for e in evs if e["type"] == "zk.partition_state" and e.get("deleted")]
    assert sorted(e["partition"] for e in gone) == [0, 1]
    # the deleting zxid is the parent's pzxid; here the parent went too, so it may be unknown (None)
    assert all(e["topic"] == "t1" and e["version"] == 0 and e["source"] == "watch" for e in gone), gone
