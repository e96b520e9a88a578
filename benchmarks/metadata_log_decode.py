"""Benchmark: decoding and replaying a KRaft metadata log (harness/observer/kraft_metadata.py and
kraft_events.py), the cost the harness pays after every KRaft run and on every ``ctx.writes_since``.

The log is built the way Kafka writes it (record batch v2, CRC-32C, ``ApiMessageAndVersion``
frames, by tests/observer/kraft_log_writer.py): a topic of 50 partitions over 5 brokers, then
batches of PartitionChangeRecords as a busy controller writes them (ISR shrinks and expansions,
leader changes; up to 10 records per batch, the Raft client's usual grouping under load), with a
LeaderChange control batch now and then. The figure is records decoded and replayed into ``meta.*``
events per second (the time of building the bytes excluded), the best of ``--repeat`` runs.

Usage: python benchmarks/metadata_log_decode.py [--records N] [--seed S] [--repeat R]
Last line: ``metadata_log_decode: <records/s> records/s`` (issue 15 asks for >= 200,000).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from harness.observer.kraft_events import history_from_metadata_log  # noqa: E402
from harness.observer.kraft_metadata import read_metadata_blobs  # noqa: E402
from tests.observer import kraft_log_writer as w  # noqa: E402

TID = "igAcTB5hSXeZfNVQ6vpVfg"          # a topic id as Kafka prints it (URL-safe base64)
BROKERS = (1, 2, 3, 4, 5)
PARTS = 50


def build(n_records: int, seed: int) -> bytes:
    """A metadata log of about ``n_records`` records, as one segment's bytes."""
    rng = random.Random(seed)
    out, offset = [], 0
    replicas = {p: rng.sample(BROKERS, 3) for p in range(PARTS)}
    isr = {p: list(r) for p, r in replicas.items()}
    leader = {p: r[0] for p, r in replicas.items()}
    first = [w.topic_record("bench", TID)] + [w.partition_record(TID, p, replicas[p], isr[p], leader[p])
                                              for p in range(PARTS)]
    out.append(w.batch(offset, first))
    offset += len(first)
    raft_epoch = 1
    while offset < n_records:
        if rng.random() < 0.01:
            raft_epoch += 1
            out.append(w.leader_change(offset, rng.choice((1, 2, 3)), epoch=raft_epoch))
            offset += 1
            continue
        values = []
        for _ in range(rng.randint(1, 10)):
            p = rng.randrange(PARTS)
            if len(isr[p]) > 1 and rng.random() < 0.5:              # shrink: a follower leaves
                isr[p].remove(rng.choice([r for r in isr[p] if r != leader[p]]))
                values.append(w.partition_change(TID, p, isr=isr[p]))
            elif len(isr[p]) < 3:                                    # expand: it comes back
                isr[p].append(next(r for r in replicas[p] if r not in isr[p]))
                values.append(w.partition_change(TID, p, isr=isr[p]))
            else:                                                    # a leader change within the ISR
                leader[p] = rng.choice([r for r in isr[p] if r != leader[p]])
                values.append(w.partition_change(TID, p, leader=leader[p]))
        out.append(w.batch(offset, values, epoch=raft_epoch))
        offset += len(values)
    return b"".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    blob = build(args.records, args.seed)
    best = None
    for _ in range(args.repeat):
        t0 = time.process_time()
        log = read_metadata_blobs({"00000000000000000000.log": blob})
        hist = history_from_metadata_log(log)
        dt = time.process_time() - t0
        best = dt if best is None else min(best, dt)
    n = len(log.records)
    assert hist.complete and not hist.problems, (hist.complete, hist.problems[:3])
    parts = sum(1 for e in hist.events if e["type"] == "meta.partition")
    print(f"{len(blob) / 1e6:.1f} MB, {n} records, {parts} meta.partition events; best of {args.repeat}: "
          f"{best:.2f} s CPU")
    print(f"metadata_log_decode: {n / best:,.0f} records/s".replace(",", ""))


if __name__ == "__main__":
    main()
