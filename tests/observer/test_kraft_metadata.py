"""The KRaft metadata log reader (harness/observer/kraft_metadata.py, kraft_events.py, kraft_history.py).

The real segment in tests/fixtures/kraft_metadata/ was written by a 3-node Kafka 4.1.2 KRaft cluster
(tests/fixtures/make_kraft_metadata_fixture.py): topic ``fx`` created, the leader of ``fx-0`` killed,
restarted, the ISR restored. ``expected.json`` holds the protocol's answer (Metadata) at the moment the
segment was copied; the decoded history must end in that same state. Hand-built batches
(kraft_log_writer.py) cover what a healthy cluster does not write: torn tails, damage, other codecs,
unknown api keys, aborted transactions.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from harness.distributions import ApacheKraft, Generic
from harness.observer import kraft_history
from harness.observer.kraft_events import history_from_metadata_log
from harness.observer.kraft_metadata import (KraftLogError, crc32c, parse_segment_bytes, read_metadata_blobs)
from harness.observer.source import ProtocolSource
from reference import check_conformance

import kraft_log_writer as w  # noqa: E402  (tests/observer is on sys.path)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "kraft_metadata"
VERSIONS = sorted(p.name for p in FIXTURES.iterdir() if (p / "expected.json").exists())
LATEST = "4.1.2"
SEGMENT = "00000000000000000000.log"
TID = "igAcTB5hSXeZfNVQ6vpVfg"


@pytest.fixture(scope="module", params=VERSIONS)
def version(request) -> str:
    return request.param


@pytest.fixture(scope="module")
def real_bytes(version) -> bytes:
    return (FIXTURES / version / SEGMENT).read_bytes()


@pytest.fixture(scope="module")
def expected(version) -> dict:
    return json.loads((FIXTURES / version / "expected.json").read_text())


@pytest.fixture(scope="module")
def real_hist(real_bytes):
    return history_from_metadata_log(read_metadata_blobs({SEGMENT: real_bytes}))


@pytest.fixture(scope="module")
def latest_bytes() -> bytes:
    return (FIXTURES / LATEST / SEGMENT).read_bytes()


@pytest.fixture(scope="module")
def latest_hist(latest_bytes):
    return history_from_metadata_log(read_metadata_blobs({SEGMENT: latest_bytes}))


def _partitions(hist) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for e in hist.events:
        if e["type"] == "meta.partition":
            out.setdefault(f"{e['topic']}-{e['partition']}", []).append(e)
    return out


def counts_of(log) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in log.records:
        out[r.type] = out.get(r.type, 0) + 1
    return out


def _log(*batches: bytes):
    return read_metadata_blobs({SEGMENT: b"".join(batches)})


# -- the real segment -------------------------------------------------------------------------------
def test_crc32c_check_value():
    assert crc32c(b"123456789") == 0xE3069283          # the CRC-32C catalogue check value


def test_real_segment_is_complete_and_every_record_decodes(real_hist, real_bytes, version):
    log = read_metadata_blobs({SEGMENT: real_bytes})
    assert [r.offset for r in log.records] == list(range(len(log.records)))   # Raft offsets: no holes
    assert not [r for r in log.records if r.problem or r.type == "unknown"]
    assert real_hist.complete and real_hist.first_offset == 0 and not real_hist.torn_tails
    assert real_hist.problems == [] and real_hist.undecoded == []
    assert all(r.control for r in log.records if r.type == "LeaderChangeMessage") and counts_of(log)["LeaderChangeMessage"]
    counts = real_hist.record_counts
    assert counts["TopicRecord"] == 1 and counts["PartitionRecord"] == 2 and counts["NoOpRecord"] > 0
    if tuple(map(int, version.split(".")[:2])) >= (3, 9):     # bootstrap records as a metadata transaction
        assert counts["BeginTransactionRecord"] == counts["EndTransactionRecord"] == 1


def test_real_history_ends_in_the_state_the_brokers_reported(real_hist, expected):
    parts = _partitions(real_hist)
    assert set(parts) == set(expected["partitions"])
    for name, want in expected["partitions"].items():
        last = parts[name][-1]
        assert (last["leader"], last["leader_epoch"], sorted(last["isr"]), last["replicas"]) == \
            (want["leader"], want["leader_epoch"], want["isr"], want["replicas"]), name
        # partition epoch 0 from the PartitionRecord, +1 per PartitionChangeRecord
        assert [e["partition_epoch"] for e in parts[name]] == list(range(len(parts[name])))


def test_real_history_shows_the_killed_leaders_replacement(real_hist, expected):
    killed = expected["killed"]
    fx0 = _partitions(real_hist)["fx-0"]
    assert fx0[0]["record"] == "PartitionRecord" and fx0[0]["leader"] == killed and fx0[0]["leader_epoch"] == 0
    change = next(e for e in fx0 if e["leader"] != killed)
    assert change["record"] == "PartitionChangeRecord" and set(change["changed"]) == {"leader", "isr"}
    assert change["leader_epoch"] == 1 and killed not in change["isr"]
    # the controller fenced the killed broker right after moving its leadership; it came back with a new epoch
    b = [e for e in real_hist.events if e["type"] == "meta.broker" and e["broker_id"] == killed]
    # fenced by the controller in the same atomic write as the leader move, just after it
    fenced = next(e for e in b if e["fenced"] and e["offset"] > fx0[0]["offset"])
    assert change["offset"] < fenced["offset"] <= change["offset"] + 3
    again = [e for e in b if e["record"] == "RegisterBrokerRecord"]
    assert len(again) == 2 and again[1]["broker_epoch"] > again[0]["broker_epoch"]
    assert b[-1]["fenced"] is False and b[-1]["registered"]


def test_real_history_event_format(real_hist):
    offsets = [e["offset"] for e in real_hist.events]
    assert offsets == sorted(offsets)
    for e in real_hist.events:
        assert e["source"] == "metadata_log" and e["raft_epoch"] >= 1 and e["time_ms"] > 1.6e12
    epochs = [e["raft_epoch"] for e in real_hist.events]
    assert epochs == sorted(epochs)                     # a new Raft leader only appends after the old ones
    lcs = [e for e in real_hist.events if e["type"] == "meta.leader_change"]
    assert lcs and all(e["voters"] == [1, 2, 3] and e["leader_id"] in (1, 2, 3) for e in lcs)
    assert len({e["raft_epoch"] for e in lcs}) == len(lcs)     # one LeaderChangeMessage per Raft epoch
    feats = {e["name"]: e["level"] for e in real_hist.events if e["type"] == "meta.feature"}
    assert feats["metadata.version"] > 0
    (t,) = [e for e in real_hist.events if e["type"] == "meta.topic"]
    assert t["topic"] == "fx" and {e["topic_id"] for e in real_hist.events if e["type"] == "meta.partition"} == {
        t["topic_id"]}


# -- damage -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("keep,why", [(30, "shorter than a batch header"), (64, "declares")])
def test_torn_last_batch_is_dropped_and_reported(latest_bytes, keep, why):
    full = parse_segment_bytes(latest_bytes, SEGMENT)
    cut = latest_bytes[:full.batches[-1].position + keep]
    seg = parse_segment_bytes(cut, SEGMENT)
    assert why in seg.torn_tail
    assert [b.base_offset for b in seg.batches] == [b.base_offset for b in full.batches[:-1]]
    hist = history_from_metadata_log(read_metadata_blobs({SEGMENT: cut}))
    assert hist.complete and hist.torn_tails and hist.last_offset == full.batches[-2].last_offset


def test_torn_tail_with_a_bad_crc_is_dropped(latest_bytes):
    full = parse_segment_bytes(latest_bytes, SEGMENT)
    damaged = bytearray(latest_bytes)
    damaged[-3] ^= 0xFF                                 # inside the last batch
    seg = parse_segment_bytes(bytes(damaged), SEGMENT)
    assert "CRC" in seg.torn_tail and len(seg.batches) == len(full.batches) - 1


def test_damage_followed_by_more_data_is_an_error(latest_bytes):
    full = parse_segment_bytes(latest_bytes, SEGMENT)
    damaged = bytearray(latest_bytes)
    damaged[full.batches[3].position + 70] ^= 0xFF
    with pytest.raises(KraftLogError, match="CRC-32C"):
        parse_segment_bytes(bytes(damaged), SEGMENT)


def test_trailing_zeros_end_the_data(latest_bytes):
    seg = parse_segment_bytes(latest_bytes + b"\0" * 4096, SEGMENT)
    assert seg.torn_tail is None and len(seg.batches) == len(parse_segment_bytes(latest_bytes).batches)


def test_offset_gap_and_missing_prefix_make_the_history_incomplete():
    hist = history_from_metadata_log(_log(w.batch(0, [w.noop()]), w.batch(2, [w.noop()])))
    assert not hist.complete and hist.offset_gaps == [(0, 2)]
    hist = history_from_metadata_log(_log(w.batch(5, [w.noop()])))
    assert not hist.complete and not hist.starts_at_beginning


# -- codecs and unknown records --------------------------------------------------------------------
def test_gzip_batch_decodes():
    hist = history_from_metadata_log(_log(w.batch(0, [w.topic_record("g", TID), w.noop()], codec=1)))
    assert [e["type"] for e in hist.events] == ["meta.topic"] and hist.record_counts["NoOpRecord"] == 1


@pytest.mark.parametrize("codec,name", [(2, "snappy"), (3, "lz4"), (4, "zstd"), (6, "codec 6")])
def test_other_codecs_are_a_clear_error(codec, name):
    with pytest.raises(KraftLogError, match=f"compressed with {name}"):
        _log(w.batch(0, [w.noop()], codec=codec))


def test_unknown_api_key_is_kept_not_fatal():
    log = _log(w.batch(0, [w.frame(99, 3, b"\x01\x02\x03"), w.topic_record("u", TID)]))
    r = log.records[0]
    assert (r.type, r.api_key, r.version, r.problem) == ("unknown", 99, 3, None)
    hist = history_from_metadata_log(log)
    assert hist.complete and hist.record_counts["unknown"] == 1 and [e["topic"] for e in hist.events] == ["u"]


def test_unknown_tagged_field_is_skipped():
    log = _log(w.batch(0, [w.topic_record("t", TID), w.partition_record(TID, 0, [1, 2], [1, 2], 1),
                           w.partition_change(TID, 0, isr=[1], extra_tags={42: b"\x07\x07"})]))
    assert log.records[2].fields["_unknown_tags"] == [42]
    assert history_from_metadata_log(log).events[-1]["isr"] == [1]


def test_a_replayed_record_that_does_not_decode_makes_the_history_inexact():
    bad = w.frame(5, 2, struct.pack(">i", 0))                  # PartitionChangeRecord cut after its partition id
    hist = history_from_metadata_log(_log(w.batch(0, [bad])))
    assert not hist.complete and "PartitionChangeRecord v2 did not decode" in hist.undecoded[0]


# -- replay rules (PartitionRegistration.merge) -----------------------------------------------------
def _replay(*values: bytes):
    return history_from_metadata_log(_log(w.batch(0, [w.topic_record("t", TID), *values])))


def test_merge_epochs_and_absent_fields():
    hist = _replay(w.partition_record(TID, 0, [1, 2, 3], [1, 2, 3], leader=1, leader_epoch=4, partition_epoch=9),
                   w.partition_change(TID, 0, isr=[1, 2]),                 # ISR only: leader epoch unchanged
                   w.partition_change(TID, 0, leader=1),                   # the same leader: epoch still +1
                   w.partition_change(TID, 0, leader=-1, isr=[]),          # no leader
                   w.partition_change(TID, 0, leader=2, isr=[2], lrs=1),   # unclean: recovering
                   w.partition_change(TID, 0, lrs=-1, elr=[3], last_known_elr=[1]),
                   w.partition_change(TID, 0, version=0, lrs=0))
    ps = [e for e in hist.events if e["type"] == "meta.partition"]
    assert [(e["leader"], e["leader_epoch"], e["partition_epoch"]) for e in ps] == [
        (1, 4, 9), (1, 4, 10), (1, 5, 11), (-1, 6, 12), (2, 7, 13), (2, 7, 14), (2, 7, 15)]
    assert [e["isr"] for e in ps] == [[1, 2, 3], [1, 2], [1, 2], [], [2], [2], [2]]
    assert [e["leader_recovery_state"] for e in ps] == [0, 0, 0, 0, 1, 1, 0]
    assert (ps[5]["elr"], ps[5]["last_known_elr"], ps[5]["changed"]) == ([3], [1], ["elr", "last_known_elr"])
    assert ps[2]["changed"] == ["leader"] and ps[3]["changed"] == ["leader", "isr"] and ps[6]["changed"] == [
        "leader_recovery_state"]
    assert all(e["replicas"] == [1, 2, 3] and e["topic"] == "t" for e in ps)


def test_change_for_an_unknown_partition_is_a_problem():
    hist = _replay(w.partition_change(TID, 7, isr=[1]))
    assert hist.problems and "unknown partition" in hist.problems[0]


def test_aborted_transaction_is_discarded_and_an_open_one_not_applied():
    hist = _replay(w.begin_txn("x"), w.partition_record(TID, 0, [1], [1], 1), w.abort_txn("test"),
                   w.partition_record(TID, 1, [2], [2], 2))
    assert [(e["type"], e.get("partition")) for e in hist.events] == [("meta.topic", None), ("meta.partition", 1)]
    assert "aborted (test)" in hist.problems[0]
    hist = _replay(w.begin_txn("y"), w.partition_record(TID, 0, [1], [1], 1))
    assert [e["type"] for e in hist.events] == ["meta.topic"] and "ends inside" in hist.problems[0]


def test_leader_change_control_record():
    hist = history_from_metadata_log(_log(w.leader_change(0, 2, epoch=7), w.batch(1, [w.noop()], epoch=7)))
    (lc,) = hist.events
    assert (lc["type"], lc["leader_id"], lc["voters"], lc["raft_epoch"], lc["offset"]) == (
        "meta.leader_change", 2, [1, 2, 3], 7, 0)


# -- reading from nodes, and the observation source ---------------------------------------------------
class _Node:
    def __init__(self, node_id, files: dict[str, bytes] | Exception):
        self.node_id, self.name, self.files = node_id, f"kc-kmeta-broker{node_id}", files

    def list_dir(self, path):
        if isinstance(self.files, Exception):
            raise self.files
        assert path == "/var/lib/kafka/data/__cluster_metadata-0"
        return sorted(self.files) + ["leader-epoch-checkpoint", "quorum-state"]

    def read_file(self, path):
        return self.files[path.rsplit("/", 1)[1]]


class _Cluster:
    def __init__(self, distribution, nodes):
        self.distribution, self.started = distribution, True
        self.brokers = {n.node_id: n for n in nodes}
        self.broker_config = {"log.dirs": "/var/lib/kafka/data"}


class _Rec:
    def __init__(self):
        self.events, self.metadata, self.files = [], {}, {}

    def write_artifact(self, relpath, data):
        self.files[relpath] = data

    def emit(self, type_, **f):
        self.events.append({"type": type_, **f})

    def update_metadata(self, **f):
        self.metadata.update(f)


def test_read_kraft_history_keeps_the_most_complete_node(latest_bytes, capsys):
    full = parse_segment_bytes(latest_bytes)
    shorter = latest_bytes[:full.batches[-5].position]
    cl = _Cluster(ApacheKraft(), [_Node(1, {SEGMENT: shorter}), _Node(2, OSError("container gone")),
                                  _Node(3, {SEGMENT: latest_bytes}), _Node(4, {})])
    hist = kraft_history.read_kraft_history(cl)
    assert hist.node == "kc-kmeta-broker3" and hist.last_offset == full.batches[-1].last_offset
    assert capsys.readouterr().err.strip() == "(metadata log of kc-kmeta-broker2 unreadable: container gone)"
    assert kraft_history.metadata_marker(cl) == full.batches[-1].last_offset
    assert kraft_history.read_kraft_history(_Cluster(ApacheKraft(), [_Node(1, {})])) is None


def test_protocol_source_adds_the_history_where_a_metadata_log_is_kept(latest_bytes, latest_hist):
    rec = _Rec()
    src = ProtocolSource()
    src.view = object()                                 # started
    src.finish(_Cluster(ApacheKraft(), [_Node(1, {SEGMENT: latest_bytes})]), rec)
    assert [e["type"] for e in rec.events] == [e["type"] for e in latest_hist.events]
    assert all(e["source"] == "metadata_log" for e in rec.events)
    obs = rec.metadata["observer"]
    assert obs["complete"] and obs["readable"] and obs["events"] == len(latest_hist.events)
    assert obs["events_by_type"]["meta.partition"] == 6
    # the segments read are kept in the record, as they were, for Kafka's own tools
    assert obs["segments"] == [f"metadata_log/{SEGMENT}"] and rec.files == {f"metadata_log/{SEGMENT}": latest_bytes}
    # a foreign image: its log is read when it keeps Apache's (one built on Apache Kafka does) ...
    rec = _Rec()
    src.finish(_Cluster(Generic(), [_Node(1, {SEGMENT: latest_bytes})]), rec)
    assert [e["type"] for e in rec.events] == [e["type"] for e in latest_hist.events]
    # ... and a broker that keeps none is recorded as such, without failing the run
    rec = _Rec()
    src.finish(_Cluster(Generic(), [_Node(1, {})]), rec)
    assert rec.events == [] and rec.metadata["observer"]["readable"] is False
    assert ApacheKraft.metadata_log_required and not Generic.metadata_log_required


def test_zk_checker_ignores_metadata_log_events_and_kraft_checker_adds_log_rules(latest_hist):
    """The ZooKeeper-mode checker ignores meta.* events; the KRaft checker keeps every sample finding and
    adds the metadata-log rules (reference/kraft_log.py) -- here L9, since these samples are made up."""
    meta = {"distribution": "apache-kraft", "kafka_version": "4.1.2", "cluster": {"brokers": 3, "zookeepers": 0},
            "broker_config": {}, "topics": [{"name": "fx", "partitions": 1, "replication_factor": 3, "config": {}}]}
    evs = []
    for i, (leader, le, isr) in enumerate([(3, 0, [1, 2, 3]), (3, 0, [1, 2, 3]), (1, 1, [1, 2]), (1, 1, [1, 2, 3])]):
        evs.append({"seq": i, "t": i * 0.5, "wall": 1.7e9 + i, "type": "admin.metadata", "controller_id": None,
                    "brokers": [1, 2, 3], "answered_by": 1, "source": "protocol", "error": None,
                    "partitions": [{"topic": "fx", "partition": 0, "leader": leader, "leader_epoch": le,
                                    "replicas": [3, 1, 2], "isr": isr, "offline_replicas": [], "error": None}]})
    with_meta = evs + [{"seq": len(evs) + i, "t": 3.0, "wall": 1.7e9 + 9, **e} for i, e in enumerate(latest_hist.events)]
    zk_meta = {**meta, "distribution": "apache-zk", "kafka_version": "3.9.2", "cluster": {"brokers": 3, "zookeepers": 1}}
    a, b = check_conformance(evs, zk_meta, "apache-zk-3.9"), check_conformance(with_meta, zk_meta, "apache-zk-3.9")
    assert (a.verdict, a.stats, [str(d) for d in a.divergences + a.invariant_violations]) == \
        (b.verdict, b.stats, [str(d) for d in b.divergences + b.invariant_violations])
    a, b = check_conformance(evs, meta, "kraft-4.1"), check_conformance(with_meta, meta, "kraft-4.1")
    assert a.verdict == "PASS" and "metadata_log" not in a.stats
    assert {d.rule for d in b.invariant_violations + b.divergences} == {"L9"}      # samples not in the log
    assert {k: v for k, v in b.stats.items() if k not in ("metadata_log", "observation", "divergences",
                                                          "invariant_violations")} == \
        {k: v for k, v in a.stats.items() if k not in ("observation", "divergences", "invariant_violations")}
