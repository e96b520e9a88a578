"""reports.summary without Spark: one record -> one summary row (event typing as Spark's JSON
reader with the event schema, SQL null semantics of the counts, ZooKeeper ground truth), and the
listing of reports.compact.scan."""

from __future__ import annotations

import json
import os

from reports import compact
from reports.summary import SUMMARY_FIELDS, aggregate, event, events, structural_truth, summarize
from tests.reports.synthetic import RunBuilder


def _line(**kw) -> bytes:
    return json.dumps({"seq": 0, "t": 1.0, "type": "client", **kw}).encode()


def test_event_types_follow_the_schema():
    assert event(_line(f="send", phase="ok"))["t"] == 1.0
    assert event(b'{"seq": 1, "t": 2, "type": "x"}')["t"] == 2.0 and isinstance(event(b'{"t": 2, "type": "x"}')["t"],
                                                                               float)
    assert event(_line(topic=5))["topic"] == "5"                       # strings keep any value as its text
    assert event(_line(error={"a": 1}))["error"] == {"a": 1}           # not compared: left as it is
    for bad in (_line(t="1.0"), _line(seq=1.5), _line(seq=2 ** 64), _line(ok="true"), _line(isr=[1, "2"]),
                _line(isr=3), b'{"t": 1.0}', b'{"type": "x"}', b'[1, 2]', b'{"t": 1.0, "type": "x"',
                b'\xff\xfe'):
        assert event(bad) is None, bad


def test_whole_file_and_line_by_line_agree():
    good = b"\n".join([_line(f="send", phase="invoke"), b"", _line(f="send", phase="ok"), b"  "]) + b"\n"
    assert events(good) == ([event(_line(f="send", phase="invoke")), event(_line(f="send", phase="ok"))], 0)
    torn = good + b'{"seq": 9, "t": 3.0, "type": "client"\n'
    evs, bad = events(torn)
    assert len(evs) == 2 and bad == 1
    two_on_one_line = good + _line() + b"," + _line() + b"\n"          # would parse as two array items
    assert events(two_on_one_line)[1] == 1


def test_counts_are_null_when_every_condition_is_null():
    only_send_without_phase = [{"t": 1.0, "type": "client", "f": "send"}]
    agg = aggregate(only_send_without_phase)
    assert agg["sends"] is None and agg["acknowledged_writes"] is None
    assert agg["consumed"] == 0                                        # f not in (poll, drain): false AND null
    agg = aggregate(only_send_without_phase + [{"t": 2.0, "type": "phase"}])
    assert (agg["sends"], agg["acknowledged_writes"], agg["consumed"], agg["last_t"]) == (0, 0, 0, 2.0)
    agg = aggregate([{"t": 1.0, "type": "client", "f": "send", "phase": "ok"},
                     {"t": 1.5, "type": "client", "f": "poll", "phase": "ok"},
                     {"t": 4.0, "type": "client", "f": "send", "phase": "ok"},
                     {"t": 2.0, "type": "zk.partition_state", "source": "txnlog"},
                     {"t": 2.0, "type": "zk.partition_state", "source": "watch"},
                     {"t": 2.0, "type": "zk.partition_state"}])
    assert (agg["acknowledged_writes"], agg["consumed"], agg["max_ack_gap_s"]) == (2, 1, 3.0)
    assert agg["partition_states"] == 1                                # the txn-log copy only
    assert aggregate([{"t": 2.0, "type": "zk.partition_state"}])["partition_states"] == 1


def test_txn_log_states_replace_the_watchers_and_are_retimed():
    evs = [{"t": 1.0, "type": "zk.partition_state", "source": "watch", "leader": 1},
           {"t": 9.0, "type": "zk.partition_state", "source": "txnlog", "leader": 1, "zk_time": 100.5,
            "wall": 108.0},
           {"t": 3.0, "type": "fault.start", "fault": "kill"}, {"t": 3.5, "type": "client"}]
    got = structural_truth(evs)
    assert [(e["type"], e["t"]) for e in got] == [("zk.partition_state", 1.5), ("fault.start", 3.0)]


def test_summary_row_of_a_record_and_of_a_skipped_one(tmp_path):
    b = RunBuilder("r1")
    b.pstate(0.5, leader=1, epoch=0, isr=[1, 2, 3]).sends([1.0, 2.0]).fault(3.0, "kill", [1], end=8.0)
    b.pstate(4.0, leader=2, epoch=1, isr=[2, 3]).pstate(9.0, leader=2, epoch=1, isr=[1, 2, 3])
    d = b.write(tmp_path / "runs", "PASS")
    listing = compact.scan(str(tmp_path / "runs"))
    assert list(listing) == [f"file:{d}"]
    (row,) = compact.summarize_local(listing)
    r = dict(zip(SUMMARY_FIELDS, row))
    assert r["skip_reason"] is None and r["acknowledged_writes"] == 2 and r["faults"] == 1
    (f,) = r["derived_faults"]
    assert f[1] == "kill" and f[4] == 1.0 and f[7] == 6.0              # new leader after 1 s, ISR back after 6 s
    os.remove(d / "events.jsonl")
    r = dict(zip(SUMMARY_FIELDS, summarize(f"file:{d}", {"metadata.json": (d / "metadata.json").read_bytes()})))
    assert r["skip_reason"] == "verdict.json: missing; events.jsonl: missing" and r["run_id"] is None


def test_scan_hides_dot_and_underscore_names_and_no_symlink_loop(tmp_path):
    root = tmp_path / "runs"
    RunBuilder("a").write(root, "PASS")
    RunBuilder("b").write(root / ".tmp-b", "PASS")
    RunBuilder("c").write(root / "_summaries", "PASS")
    (root / "loop").symlink_to(root, target_is_directory=True)       # back to an enclosing directory: not followed
    RunBuilder("d").write(tmp_path / "elsewhere", "PASS")
    (root / "link").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    got = sorted(os.path.relpath(d[len("file:"):], root) for d in compact.scan(str(root)))
    assert got == ["a", "link/d"]
