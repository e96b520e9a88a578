"""ZooKeeper txn-log reader and txn -> zk.* events, on real ZooKeeper 3.8.4 logs (fixtures made by
make_fixtures.py, checked against what the client saw) and on synthetic edge cases."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from txnlog_writer import encode_txn, log_file, record  # noqa: E402

from harness.observer.txn_events import TxnEventBuilder, history_from_txnlog  # noqa: E402
from harness.observer.txnlog import (CloseSessionTxn, CreateSessionTxn, CreateTxn, DeleteTxn,  # noqa: E402
                                     ErrorTxn, MultiTxn, OpCode, SetDataTxn, SubTxn, Txn, TxnLogError,
                                     decode_txn, merge_txnlog_files, parse_txnlog_bytes,
                                     read_txnlog_blobs, read_txnlog_dir, read_txnlog_file)

FIX = Path(__file__).resolve().parent / "fixtures" / "kafka_zk"
EXPECTED = json.loads((FIX / "expected.json").read_text())


@pytest.fixture(scope="module")
def history():
    return history_from_txnlog(read_txnlog_dir(FIX))


def _of(events, type_, **match):
    return [e for e in events if e["type"] == type_ and all(e.get(k) == v for k, v in match.items())]


# -- the real ZooKeeper log ---------------------------------------------------------------------
def test_fixture_log_is_complete_and_contiguous():
    log = read_txnlog_dir(FIX)
    assert len(log.files) >= 2, "fixture should span a log roll"
    assert log.starts_at_beginning and log.first_zxid == 1
    assert log.zxid_gaps == []
    assert [t.zxid for t in log.txns] == list(range(1, log.last_zxid + 1))
    assert all(f.torn_tail is None for f in log.files)
    assert all(f.version == 2 for f in log.files)


def test_every_client_observed_partition_state_write_is_in_the_log(history):
    exp = [e for e in EXPECTED["expect"] if e["kind"] == "partition_state"]
    assert len(exp) > 20
    for e in exp:
        got = _of(history.events, "zk.partition_state", topic=e["topic"], partition=e["partition"],
                  version=e["version"], deleted=False)
        assert len(got) == 1, e
        g = got[0]
        assert g["zxid"] == e["zxid"], (g, e)
        for k in ("leader", "leader_epoch", "isr", "controller_epoch", "leader_recovery_state"):
            assert g[k] == e[k], (k, g, e)
        assert g["source"] == "txnlog" and g["zk_time"] > 1e9


def test_partition_versions_are_contiguous_and_failed_writes_change_nothing(history):
    per = {}
    for e in _of(history.events, "zk.partition_state", deleted=False):
        per.setdefault((e["topic"], e["partition"]), []).append(e["version"])
    for key, versions in per.items():
        assert versions == list(range(len(versions))), key
    # the zombie multi and the stale setData (leader 3, LE 9) never show up
    assert not _of(history.events, "zk.partition_state", leader_epoch=9, topic="t1", partition=0)
    assert len(per[("t1", 0)]) == 10


def test_brokers_epochs_and_deregistration_by_close_and_expiry(history):
    for e in EXPECTED["expect"]:
        if e["kind"] == "broker" and e["registered"]:
            got = _of(history.events, "zk.broker", broker_id=e["broker_id"], registered=True,
                      zxid=e["zxid"])
            assert len(got) == 1 and got[0]["broker_epoch"] == e["broker_epoch"], e
        elif e["kind"] == "broker":
            got = _of(history.events, "zk.broker", broker_id=e["broker_id"], registered=False,
                      zxid=e["zxid"])
            assert len(got) == 1, e
    log = read_txnlog_dir(FIX)
    expiry = next(e for e in EXPECTED["expect"] if e.get("via") == "expiry")
    close = [t for t in log.txns if t.zxid == expiry["zxid"]][0]
    assert close.type == OpCode.closeSession and close.client_id == expiry["session"]
    # broker 1's deregistration carries the epoch (czxid) it registered with
    reg = _of(history.events, "zk.broker", broker_id=1, registered=True)[0]
    dereg = _of(history.events, "zk.broker", broker_id=1, registered=False)[0]
    assert dereg["broker_epoch"] == reg["broker_epoch"]


def test_controller_history(history):
    ctl = [(e["zxid"], e["broker_id"]) for e in _of(history.events, "zk.controller")]
    exp = [(e["zxid"], e["broker_id"]) for e in EXPECTED["expect"] if e["kind"] == "controller"]
    for x in exp:
        assert x in ctl, x
    # election = create /controller and epoch+1 in one multi: same zxid
    epochs = _of(history.events, "zk.controller_epoch")
    assert [e["epoch"] for e in epochs] == [0, 1, 2, 3]
    assert [e["version"] for e in epochs] == [0, 1, 2, 3]
    for e in epochs[1:]:
        assert any(z == e["zxid"] and b is not None for z, b in ctl)
    # the controller's expiry removes /controller at the same zxid as its broker registration
    expiry = next(e for e in EXPECTED["expect"] if e.get("via") == "expiry")
    assert (expiry["zxid"], None) in ctl


def test_topics_reassignment_and_deletion(history):
    for e in EXPECTED["expect"]:
        if e["kind"] == "topic":
            got = _of(history.events, "zk.topic", topic=e["topic"], version=e["version"], deleted=False)
            assert len(got) == 1 and got[0]["zxid"] == e["zxid"], e
            assert got[0]["partitions"] == e["partitions"] and got[0]["topic_id"] == e["topic_id"]
            if "removing_replicas" in e:
                assert got[0]["removing_replicas"] == e["removing_replicas"]
        elif e["kind"] == "reassign":
            got = _of(history.events, "zk.reassign_partitions", zxid=e["zxid"])
            assert len(got) == 1 and got[0]["partitions"] == e["partitions"], e
        elif e["kind"] == "delete_topics":
            got = _of(history.events, "zk.delete_topics", zxid=e["zxid"])
            assert len(got) == 1 and got[0]["topics"] == e["topics"], e
        elif e["kind"] == "topic_deleted":
            got = _of(history.events, "zk.topic", topic=e["topic"], deleted=True)
            assert len(got) == 1 and got[0]["zxid"] == e["zxid"], e
        elif e["kind"] == "partition_state_deleted":
            got = _of(history.events, "zk.partition_state", topic=e["topic"], deleted=True)
            assert len(got) == 1 and got[0]["zxid"] == e["zxid"] and got[0]["version"] == 0, e


def test_events_are_in_zxid_order(history):
    zx = [e["zxid"] for e in history.events]
    assert zx == sorted(zx)
    assert history.complete and history.problems == []


def test_log_starting_later_reports_unknown_history_and_still_decodes():
    later = sorted(FIX.glob("log.*"), key=lambda p: int(p.name[4:], 16))[-1]
    log = merge_txnlog_files([read_txnlog_file(later)])
    assert not log.starts_at_beginning and log.first_zxid == int(later.name[4:], 16)
    h = history_from_txnlog(log)
    assert not h.complete and h.first_zxid == log.first_zxid
    full = history_from_txnlog(read_txnlog_dir(FIX))
    # every partition-state version written inside the window is identical to the full replay
    key = lambda e: (e["topic"], e["partition"], e["version"], e["zxid"], e["leader"], e["deleted"])  # noqa: E731
    tail = [key(e) for e in _of(full.events, "zk.partition_state") if e["zxid"] >= log.first_zxid
            and not e["deleted"]]
    assert tail and tail == [key(e) for e in _of(h.events, "zk.partition_state") if not e["deleted"]]
    # deregistrations at closeSession still appear (the 3.8 closeSession txn lists the paths)
    dereg = [e["zxid"] for e in _of(full.events, "zk.broker", registered=False) if e["zxid"] >= log.first_zxid]
    assert dereg == [e["zxid"] for e in _of(h.events, "zk.broker", registered=False)]


def test_close_session_without_paths_uses_tracked_ephemerals():
    """ZooKeeper < 3.6 (or closeSessionTxn disabled): the closeSession has no body; the reader must
    know from the creates which ephemerals the session owned."""
    log = read_txnlog_dir(FIX)
    stripped = []
    for t in log.txns:
        if t.type == OpCode.closeSession:
            t = Txn(t.client_id, t.cxid, t.zxid, t.time_ms, t.type, CloseSessionTxn(None), t.digest)
        stripped.append(t)
    for digest in (True, False):
        raw = log_file(stripped, digest=digest)
        f = parse_txnlog_bytes(raw, "log.1")
        assert all(isinstance(t.body, CloseSessionTxn) and t.body.paths is None
                   for t in f.txns if t.type == OpCode.closeSession)
        h = history_from_txnlog(merge_txnlog_files([f]))
        full = history_from_txnlog(log)
        strip = lambda evs: [{k: v for k, v in e.items()} for e in evs  # noqa: E731
                             if e["type"] in ("zk.broker", "zk.controller")]
        assert strip(h.events) == strip(full.events)


# -- synthetic edge cases ---------------------------------------------------------------------------
S1, S2 = 0x100, 0x200


def _t(zxid, type_, body, sess=S1):
    return Txn(sess, zxid & 0xFFFF, zxid, 1_700_000_000_000 + zxid, type_, body)


STATE = b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1,2]}'


def test_round_trip_of_every_txn_type():
    txns = [
        _t(1, OpCode.createSession, CreateSessionTxn(6000)),
        _t(2, OpCode.create, CreateTxn("/a", b"x", False, 1)),
        _t(3, OpCode.create2, CreateTxn("/b", None, True, 2)),
        _t(4, OpCode.createContainer, CreateTxn("/c", b"", False, 3, container=True)),
        _t(5, OpCode.createTTL, CreateTxn("/d", b"", False, 4, ttl=5000)),
        _t(6, OpCode.setData, SetDataTxn("/a", b"y", 1)),
        _t(7, OpCode.delete, DeleteTxn("/a")),
        _t(8, OpCode.deleteContainer, DeleteTxn("/c")),
        _t(9, OpCode.error, ErrorTxn(-101)),
        _t(10, OpCode.multi, MultiTxn([SubTxn(OpCode.create, CreateTxn("/e", b"1", True, 5)),
                                       SubTxn(OpCode.setData, SetDataTxn("/b", b"2", 1))])),
        _t(11, OpCode.closeSession, CloseSessionTxn(["/b", "/e"])),
        _t(12, OpCode.closeSession, CloseSessionTxn([])),
    ]
    for digest in (True, False):
        f = parse_txnlog_bytes(log_file(txns, digest=digest), "log.1")
        assert [(t.zxid, t.type, t.body) for t in f.txns] == [(t.zxid, t.type, t.body) for t in txns]
        assert all((t.digest is not None) == (digest and t.type != OpCode.error) for t in f.txns)


def test_create_v0_record_is_accepted():
    t = _t(1, OpCode.create, CreateTxn("/brokers/ids/1", b"{}", True, -1))
    got = decode_txn(encode_txn(t, digest=False, v0=True))
    assert got.body == CreateTxn("/brokers/ids/1", b"{}", True, -1)


def test_failed_multi_and_error_txn_yield_nothing():
    b = TxnEventBuilder()
    b.feed(_t(1, OpCode.create, CreateTxn("/brokers/topics/t/partitions/0/state", STATE)))
    # a sub-txn before the failing one keeps its type: the whole multi must still be ignored
    failed = MultiTxn([SubTxn(OpCode.setData, SetDataTxn("/brokers/topics/t/partitions/0/state", STATE, 1)),
                       SubTxn(OpCode.error, ErrorTxn(-103))])
    assert b.feed(_t(2, OpCode.multi, failed)) == []
    assert b.feed(_t(3, OpCode.error, ErrorTxn(-103))) == []
    ev = b.feed(_t(4, OpCode.setData, SetDataTxn("/brokers/topics/t/partitions/0/state", STATE, 1)))
    assert [(e["version"], e["zxid"]) for e in ev] == [(1, 4)]


def test_chroot_is_stripped_and_other_paths_ignored():
    b = TxnEventBuilder(chroot="/kafka")
    assert b.feed(_t(1, OpCode.create, CreateTxn("/brokers/ids/1", b"{}", True))) == []
    ev = b.feed(_t(2, OpCode.create, CreateTxn("/kafka/brokers/ids/1", b"{}", True)))
    assert ev[0]["type"] == "zk.broker" and ev[0]["broker_epoch"] == 2
    ev = b.feed(_t(3, OpCode.closeSession, CloseSessionTxn(None)))
    assert [(e["broker_id"], e["registered"], e["broker_epoch"]) for e in ev] == [(1, False, 2)]


def test_explicitly_deleted_ephemeral_is_not_deleted_again_at_close():
    b = TxnEventBuilder()
    b.feed(_t(1, OpCode.create, CreateTxn("/controller", b'{"version":2,"brokerid":4}', True)))
    assert b.feed(_t(2, OpCode.delete, DeleteTxn("/controller")))[0]["broker_id"] is None
    assert b.feed(_t(3, OpCode.closeSession, CloseSessionTxn(None))) == []


def test_malformed_znode_is_reported_not_fatal():
    b = TxnEventBuilder()
    assert b.feed(_t(1, OpCode.create, CreateTxn("/brokers/topics/t/partitions/0/state", b"{nope"))) == []
    assert b.feed(_t(2, OpCode.create, CreateTxn("/controller_epoch", b"x"))) == []
    assert len(b.problems) == 2 and "0x1" in b.problems[0] and "not JSON" in b.problems[0]


def test_torn_tail_is_dropped_and_reported():
    good = [_t(1, OpCode.createSession, CreateSessionTxn(6000)),
            _t(2, OpCode.create, CreateTxn("/x", b"1"))]
    raw = log_file(good, padding=0)
    last = record(encode_txn(_t(3, OpCode.setData, SetDataTxn("/x", b"2", 1))))
    for torn in (last[:-5], last[:-1], last[:12] + b"\0" * (len(last) - 12)):
        f = parse_txnlog_bytes(raw + torn + b"\0" * 32, "log.1")
        assert [t.zxid for t in f.txns] == [1, 2] and f.torn_tail, torn
    f = parse_txnlog_bytes(raw + last, "log.1")                 # no padding at all is fine
    assert [t.zxid for t in f.txns] == [1, 2, 3] and f.torn_tail is None


def test_corruption_in_the_middle_raises():
    txns = [_t(i, OpCode.create, CreateTxn(f"/n{i}", b"v")) for i in range(1, 4)]
    raw = bytearray(log_file(txns))
    raw[16 + 12 + 30] ^= 0xFF            # inside the first record's payload
    with pytest.raises(TxnLogError, match="checksum"):
        parse_txnlog_bytes(bytes(raw), "log.1")


def test_bad_header_and_empty_dir(tmp_path):
    with pytest.raises(TxnLogError, match="bad magic"):
        parse_txnlog_bytes(b"ZKSN" + b"\0" * 20, "log.1")
    with pytest.raises(TxnLogError, match="version 3"):
        parse_txnlog_bytes(b"ZKLG" + (3).to_bytes(4, "big") + b"\0" * 8, "log.1")
    with pytest.raises(TxnLogError, match="too short"):
        parse_txnlog_bytes(b"ZKLG", "log.1")
    with pytest.raises(TxnLogError, match="no ZooKeeper txn-log files"):
        read_txnlog_dir(tmp_path)
    with pytest.raises(TxnLogError, match="no ZooKeeper txn-log files"):
        read_txnlog_blobs({"snapshot.0": b""})


def test_missing_log_file_is_a_reported_gap():
    a = parse_txnlog_bytes(log_file([_t(z, OpCode.create, CreateTxn(f"/n{z}", b"")) for z in (1, 2)]), "log.1")
    c = parse_txnlog_bytes(log_file([_t(z, OpCode.create, CreateTxn(f"/n{z}", b"")) for z in (7, 8)]), "log.7")
    new_epoch = (1 << 32) | 1
    d = parse_txnlog_bytes(log_file([_t(new_epoch, OpCode.create, CreateTxn("/m", b""))]),
                           f"log.{new_epoch:x}")
    log = merge_txnlog_files([d, c, a])
    assert [t.zxid for t in log.txns] == [1, 2, 7, 8, new_epoch]
    assert log.zxid_gaps == [(2, 7)]          # an epoch change restarting at counter 1 is no gap


def test_blobs_match_dir():
    blobs = {p.name: p.read_bytes() for p in FIX.iterdir()}
    assert [t.zxid for t in read_txnlog_blobs(blobs).txns] == [t.zxid for t in read_txnlog_dir(FIX).txns]
