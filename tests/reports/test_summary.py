"""reports.summary without Spark: one record -> one summary row (events read by the one strict record
reader, SQL null semantics of the counts, ZooKeeper ground truth), and the listing of reports.compact.scan."""

from __future__ import annotations

import json
import os

from reports import compact
from reports.summary import SUMMARY_FIELDS, aggregate, structural_truth, summarize
from tests.reports.synthetic import RunBuilder


def test_events_are_read_by_the_one_record_reader(tmp_path):
    """No reader of its own: a record the strict reader refuses is skipped with the reader's message
    (file, line, field), relative to the record."""
    b = RunBuilder("r1")
    b.pstate(0.5, leader=1, epoch=0, isr=[1, 2, 3]).sends([1.0, 2.0])
    d = b.write(tmp_path / "runs", "PASS")
    files = {n: (d / n).read_bytes() for n in ("metadata.json", "verdict.json", "events.jsonl")}
    assert dict(zip(SUMMARY_FIELDS, summarize(f"file:{d}", files)))["skip_reason"] is None
    lines = files["events.jsonl"].splitlines()
    for bad, words in ((lines + [lines[-1]], "events.jsonl:6: field 'seq' 4 does not follow 4"),
                       (lines + [b'{"seq": 9, "t": 3.0, "type": "client"'], "events.jsonl:6: not valid JSON"),
                       ([lines[0].replace(b'"t":0.5', b'"t":"0.5"')] + lines[1:], "events.jsonl:1: field 't'")):
        r = dict(zip(SUMMARY_FIELDS, summarize(f"file:{d}", {**files, "events.jsonl": b"\n".join(bad)})))
        assert r["skip_reason"].startswith(words), r["skip_reason"]
        assert r["verdict"] is None and r["stored_verdict"] is None


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
