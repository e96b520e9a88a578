"""The KRaft metadata log reader's output, pinned: the decoding of the real segments under
tests/fixtures/kraft_metadata/<version>/ and of a varied hand-built log must stay exactly what the
table-interpreting reader (before the issue-15 speed work) produced — every record, every batch, every
``meta.*`` event with its keys in order, the history summary.

``decoded.json`` next to each segment and ``SYNTHETIC_SHA256`` were written by that reader:

    python tests/observer/test_kraft_decode_golden.py      # rewrites them; only when the output SHOULD change
"""

from __future__ import annotations

import hashlib
import json
import random
import struct
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness.observer.kraft_events import history_from_metadata_log  # noqa: E402
from harness.observer.kraft_metadata import parse_segment_bytes, read_metadata_blobs  # noqa: E402

import kraft_log_writer as w  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "kraft_metadata"
VERSIONS = sorted(p.name for p in FIXTURES.iterdir() if (p / "decoded.json").exists())
SEGMENT = "00000000000000000000.log"
GOLDEN = "decoded.json"
SYNTHETIC_SHA256 = "dcb6e1d1eb6e9fd19ea979c06f8ead0b96a72f74eb909df78471d4f965210d71"


def decoded(blob: bytes) -> dict:
    """Everything the reader gives for one segment, JSON-able, key order kept."""
    seg = parse_segment_bytes(blob, SEGMENT)
    log = read_metadata_blobs({SEGMENT: blob})
    hist = history_from_metadata_log(log)
    batches = [{k: v for k, v in asdict(b).items() if k != "records"} for b in seg.batches]
    return {"torn_tail": seg.torn_tail, "batches": batches, "records": [asdict(r) for r in log.records],
            "offset_gaps": log.offset_gaps, "events": hist.events, "summary": hist.summary()}


def dump(obj) -> str:
    return json.dumps(obj, indent=1) + "\n"


def synthetic_log(seed: int = 7, n_batches: int = 400) -> bytes:
    """A busy controller's log with every kind of record the writer makes: partition records and changes
    of every version and tag (leader -1 / -2, recovery state, ELR, unknown tags), topics created and
    removed, no-ops, Raft leader changes, metadata transactions committed and aborted, gzip batches."""
    rng = random.Random(seed)
    tids = ["igAcTB5hSXeZfNVQ6vpVfg", "AAAAAAAAAAAAAAAAAAAAAQ", "zz-_zz-_zz-_zz-_zz-_zw"]
    out, offset, epoch = [], 0, 1
    first = [w.topic_record(f"t{i}", t) for i, t in enumerate(tids)]
    first += [w.partition_record(t, p, [1, 2, 3], [1, 2, 3], 1 + p % 3, leader_epoch=p, partition_epoch=2 * p)
              for t in tids for p in range(4)]
    out.append(w.batch(offset, first))
    offset += len(first)

    def value():
        t, p, r = rng.choice(tids), rng.randrange(5), rng.random()
        if r < 0.55:
            kw = {}
            if rng.random() < 0.6:
                kw["isr"] = rng.sample([1, 2, 3], rng.randint(0, 3))
            if rng.random() < 0.5:
                kw["leader"] = rng.choice([-2, -1, 1, 2, 3])
            if rng.random() < 0.15:
                kw["lrs"] = rng.choice([-1, 0, 1])
            if rng.random() < 0.15:
                kw["elr"] = rng.sample([1, 2, 3], rng.randint(0, 2))
            if rng.random() < 0.15:
                kw["last_known_elr"] = rng.sample([1, 2, 3], rng.randint(0, 2))
            if rng.random() < 0.05:
                kw["extra_tags"] = {rng.choice([9, 42, 300]): bytes(rng.randrange(3))}
            return w.partition_change(t, p, version=rng.choice([0, 1, 2, 2]), **kw)
        if r < 0.65:
            return w.partition_record(t, p, rng.sample([1, 2, 3, 4], 3), rng.sample([1, 2, 3], 2),
                                      rng.choice([1, 2, 3]), rng.randrange(9), rng.randrange(9))
        if r < 0.75:
            return w.noop()
        if r < 0.78:
            return w.topic_record(f"n{rng.randrange(99)}", t)
        if r < 0.79:
            return w.frame(9, 0, w.uuid_bytes(t) + w.tagged({}))              # RemoveTopicRecord
        if r < 0.83:
            return w.frame(rng.choice([4, 99]), 0, b"\x01\x02")                # named only / unknown
        if r < 0.87:
            return w.frame(12, 0, w.compact_string("metadata.version") + struct.pack(">h", rng.randrange(30))
                           + w.tagged({}))                                      # FeatureLevelRecord
        if r < 0.92:
            return w.frame(7, 0, struct.pack(">iq", rng.randint(1, 3), rng.randrange(99)) + w.tagged({}))
        if r < 0.94:
            return w.frame(5, 2, struct.pack(">i", p))                           # cut short: does not decode
        if r < 0.96:
            return w.begin_txn(f"x{rng.randrange(9)}")
        if r < 0.985:
            return w.end_txn()
        return w.abort_txn(rng.choice(["test", ""]))

    for _ in range(n_batches):
        if rng.random() < 0.05:
            epoch += 1
            out.append(w.leader_change(offset, rng.choice((1, 2, 3)), epoch=epoch))
            offset += 1
            continue
        values = [value() for _ in range(rng.randint(1, 12))]
        out.append(w.batch(offset, values, epoch=epoch, ts=1_700_000_000_000 + offset * 7,
                           codec=1 if rng.random() < 0.1 else 0))
        offset += len(values)
    return b"".join(out)


def synthetic_digest() -> str:
    return hashlib.sha256(dump(decoded(synthetic_log())).encode()).hexdigest()


@pytest.mark.parametrize("version", VERSIONS)
def test_real_segment_decodes_exactly_as_pinned(version):
    want = (FIXTURES / version / GOLDEN).read_text()
    got = dump(decoded((FIXTURES / version / SEGMENT).read_bytes()))
    assert got == want


def test_real_segments_are_pinned():
    assert VERSIONS == sorted(p.name for p in FIXTURES.iterdir() if (p / SEGMENT).exists())


def test_synthetic_log_decodes_exactly_as_pinned():
    assert synthetic_digest() == SYNTHETIC_SHA256


if __name__ == "__main__":
    for d in sorted(p for p in FIXTURES.iterdir() if (p / SEGMENT).exists()):
        (d / GOLDEN).write_text(dump(decoded((d / SEGMENT).read_bytes())))
        print("wrote", d / GOLDEN)
    print("SYNTHETIC_SHA256 =", synthetic_digest())
