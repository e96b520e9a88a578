"""Reconciliation on the real ZooKeeper fixture log: watch events are simulated as a subset of what
the log contains (as a watcher that skipped some versions would have seen them)."""

from __future__ import annotations

from pathlib import Path

from harness.observer.reconcile import contiguity_problems, emit_reconciled, reconcile
from harness.observer.txn_events import history_from_txnlog
from harness.observer.txnlog import merge_txnlog_files, read_txnlog_dir, read_txnlog_file
from harness.record import RunRecorder, read_run

FIX = Path(__file__).resolve().parent / "fixtures" / "kafka_zk"


def _hist():
    return history_from_txnlog(read_txnlog_dir(FIX))


def _as_watch(ev: dict, **over) -> dict:
    w = {k: v for k, v in ev.items() if k != "zk_time"}
    w.update(source="watch", **over)
    return w


def test_watcher_that_saw_everything_misses_nothing():
    h = _hist()
    r = reconcile([_as_watch(e) for e in h.events], h)
    assert r.ok and r.missed == [] and r.missed_by_type == {} and r.unexplained == []
    assert r.report()["missed_partition_state_versions"] == 0


def test_skipped_versions_are_reported_per_znode():
    h = _hist()
    skip = {("t1", 0, 2), ("t1", 0, 3), ("t1", 1, 5)}
    watch = [_as_watch(e) for e in h.events
             if not (e["type"] == "zk.partition_state" and (e["topic"], e["partition"], e["version"]) in skip)]
    r = reconcile(watch, h)
    assert r.ok and r.unexplained == []
    got = {(m["topic"], m["partition"]): m["missing_versions"] for m in r.missed}
    assert got == {("t1", 0): [2, 3], ("t1", 1): [5]}
    assert r.missed_by_type == {"zk.partition_state": 3}
    assert r.report()["missed_partition_state_versions"] == 3


def test_deletions_match_with_upper_bound_zxid():
    h = _hist()
    watch = []
    for e in h.events:
        if e["type"] == "zk.broker" and not e["registered"]:
            watch.append(_as_watch(e, zxid=e["zxid"] + 2))      # parent pzxid read a bit later
        else:
            watch.append(_as_watch(e))
    assert reconcile(watch, h).unexplained == []
    # a deregistration noticed *before* any deletion happened is unexplained
    first_dereg = next(e for e in h.events if e["type"] == "zk.broker" and not e["registered"])
    bad = _as_watch(first_dereg, zxid=first_dereg["broker_epoch"])
    r = reconcile(watch + [bad], h)
    assert len(r.unexplained) == 1 and "no such deletion" in r.unexplained[0]["why"]


def test_forged_content_is_unexplained_and_not_ok():
    h = _hist()
    st = next(e for e in h.events if e["type"] == "zk.partition_state" and e["version"] == 3)
    r = reconcile([_as_watch(st, isr=[9])], h)
    assert not r.ok and len(r.unexplained) == 1 and "different content" in r.unexplained[0]["why"]
    ctl = next(e for e in h.events if e["type"] == "zk.controller" and e["broker_id"] is not None)
    r = reconcile([_as_watch(ctl, zxid=ctl["zxid"] + 1)], h)
    assert len(r.unexplained) == 1


def test_partial_log_is_not_ok_and_old_watch_events_are_not_checked():
    later = sorted(FIX.glob("log.*"), key=lambda p: int(p.name[4:], 16))[-1]
    h = history_from_txnlog(merge_txnlog_files([read_txnlog_file(later)]))
    full = _hist()
    r = reconcile([_as_watch(e) for e in full.events], h)
    assert not r.ok and not r.txnlog_complete
    assert r.before_log and all(e["zxid"] < h.first_zxid for e in r.before_log)
    assert r.unexplained == []


def test_contiguity_problems_detects_holes_and_allows_recreation():
    ev = lambda v, z, deleted=False: {"type": "zk.partition_state", "topic": "t", "partition": 0,  # noqa: E731
                                      "version": v, "zxid": z, "deleted": deleted}
    assert contiguity_problems([ev(0, 1), ev(1, 2), ev(1, 3, True), ev(0, 4)]) == []
    probs = contiguity_problems([ev(0, 1), ev(2, 2)])
    assert len(probs) == 1 and "version 2 follows 0" in probs[0]
    assert "first version in history is 3" in contiguity_problems([ev(3, 1)])[0]


def test_emit_reconciled_writes_history_and_filled_gaps(tmp_path):
    h = _hist()
    watch = [_as_watch(e) for e in h.events if not (e["type"] == "zk.partition_state" and e["version"] == 1)]
    r = reconcile(watch, h)
    rec = RunRecorder(tmp_path, "observer.reconcile")
    emit_reconciled(rec.emit, r)
    run = read_run(rec.finish("PASS", "test"))
    zk = [e for e in run.events if e["type"].startswith("zk.") and e["type"] != "zk.gap"]
    assert [(e["type"], e["zxid"]) for e in zk] == [(e["type"], e["zxid"]) for e in h.events]
    assert all(e["source"] == "txnlog" for e in zk)
    gaps = run.of_type("zk.gap")
    assert {g["path"] for g in gaps} == {"/brokers/topics/t1/partitions/0/state",
                                         "/brokers/topics/t1/partitions/1/state"}
    assert all(g["missing_versions"] == [1] and g["filled"] for g in gaps)
