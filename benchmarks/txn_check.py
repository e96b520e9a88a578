"""Benchmark: transaction checker time (including cycle search) on a 1,000,000-operation history.

The history (seeded, synthetic, realistic in shape): 10 transactional producers (``--producers``), each running one
transaction at a time, concurrently, over 8 partitions; each transaction sends 2-5 records
(sends of concurrent transactions interleave in every partition's log, so write-write cycles
abound), 10 % abort, one in five is consume-transform-produce (reads 1-2 committed input records
and commits their offsets). Commit and abort markers take offsets as in Kafka. A read_committed
consumer polls every partition up to its last stable offset as the run goes, and a final drain
reads every partition again. The operations counted are the micro-operations: sends plus reads
(transactional input reads and consumer polls; the drain is not counted). With the default
``--ops 1000000`` that is ~500,000 sends in ~143,000 transactions, ~500,000 reads, and ~1.6
million events in all.

Only ``check_transactions`` is timed (generation is not); the figure is its CPU time (user +
system), which, unlike wall-clock time, does not grow when other jobs share the machine.
Target: <= 10 s. Last line: ``txn_check: <seconds> s``.
Usage: python benchmarks/txn_check.py [--ops N] [--seed S] [--producers P]
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from harness.checkers.txn import check_transactions  # noqa: E402

TOPIC = "bench"


def generate(ops: int, seed: int = 1, partitions: int = 8, producers: int = 10) -> tuple[list, dict]:
    rnd = random.Random(seed)
    events: list[dict] = []
    add = events.append
    t = 0.0
    logs: list[list] = [[] for _ in range(partitions)]  # (value | None, txn id | None)
    status: dict[int, str] = {}  # txn id -> "open" | "commit" | "abort"
    pos = [0] * partitions  # the consumer's next offset per partition
    committed_inputs: list = []  # (partition, offset, value) not yet consumed by a pipeline
    open_tx: list = [None] * producers  # producer -> [txn id, op_id, parts, values, offsets, reads, written]
    op_ids = [0] * producers
    n_ops = 0
    n_txn = 0

    def ev(type_, **f):
        d = {"seq": len(events), "t": t, "wall": 1.7e9 + t, "type": type_}
        d.update(f)
        add(d)

    for k in range(producers):
        ev("client.config", process=f"p{k}", role="producer",
           config={"transactional.id": f"tx-{k}", "acks": "all", "enable.idempotence": True})
        ev("txn.init", process=f"p{k}", transactional_id=f"tx-{k}", producer_epoch=0)
    ev("client.config", process="c0", role="consumer", config={"isolation.level": "read_committed", "mode": "assign"})
    for p in range(partitions):
        ev("txn.seek", process="c0", topic=TOPIC, partition=p, offset=0)
    ev("phase", name="workload.start")

    def poll(proc: str, drain: bool = False) -> int:
        n = 0
        for p in range(partitions):
            log = logs[p]
            off = pos[p] if not drain else 0
            while off < len(log):
                value, tx = log[off]
                if value is not None:
                    st = status[tx]
                    if st == "open":
                        break  # the last stable offset
                    if st == "commit":
                        d = {"seq": len(events), "t": t, "wall": 1.7e9 + t, "type": "txn.poll", "process": proc,
                             "topic": TOPIC, "partition": p, "offset": off, "value": value}
                        if drain:
                            d["drain"] = True
                        add(d)
                        n += 1
                off += 1
            if not drain:
                pos[p] = off
        return n

    step = 0
    while n_ops < ops:
        step += 1
        t += 0.0001
        k = rnd.randrange(producers)
        proc = f"p{k}"
        tx = open_tx[k]
        if tx is None:
            op_ids[k] += 1
            n_txn += 1
            tid = n_txn
            status[tid] = "open"
            parts = [rnd.randrange(partitions) for _ in range(rnd.randint(2, 5))]
            values = [f"{proc}-{op_ids[k]}-{j}" for j in range(len(parts))]
            reads = []
            if committed_inputs and rnd.random() < 0.2:
                for _ in range(min(len(committed_inputs), rnd.randint(1, 2))):
                    reads.append(committed_inputs.pop(0))
            outcome = "abort" if rnd.random() < 0.1 else "commit"
            open_tx[k] = [tid, op_ids[k], parts, values, [None] * len(parts), reads, 0, outcome]
            add({"seq": len(events), "t": t, "wall": 1.7e9 + t, "type": "txn", "process": proc,
                 "op_id": op_ids[k], "phase": "invoke", "f": "txn", "transactional_id": f"tx-{k}",
                 "outcome": outcome, "error": None,
                 "ops": [{"f": "send", "topic": TOPIC, "partition": p, "value": v, "offset": None}
                         for p, v in zip(parts, values)]})
            continue
        tid, op_id, parts, values, offsets, reads, written, outcome = tx
        if written < len(parts):
            p = parts[written]
            offsets[written] = len(logs[p])
            logs[p].append((values[written], tid))
            tx[6] = written + 1
            continue
        # complete: markers, completion event
        status[tid] = outcome
        for p in sorted(set(parts)):
            logs[p].append((None, None))
        n_ops += len(parts) + len(reads)
        ops_out = [{"f": "send", "topic": TOPIC, "partition": p, "value": v, "offset": o}
                   for p, v, o in zip(parts, values, offsets)]
        ops_out += [{"f": "read", "topic": TOPIC, "partition": p, "offset": o, "value": v} for p, o, v in reads]
        add({"seq": len(events), "t": t, "wall": 1.7e9 + t, "type": "txn", "process": proc, "op_id": op_id,
             "phase": "ok", "f": "txn", "transactional_id": f"tx-{k}", "outcome": outcome, "error": None,
             "ops": ops_out})
        if outcome == "commit" and rnd.random() < 0.3:
            committed_inputs.append((parts[0], offsets[0], values[0]))
        open_tx[k] = None
        if step % 64 == 0:
            n_ops += poll("c0")
    for k in range(producers):  # finish what is open
        tx = open_tx[k]
        if tx is not None:
            tid, op_id, parts, values, offsets, reads, written, outcome = tx
            for j in range(written, len(parts)):
                offsets[j] = len(logs[parts[j]])
                logs[parts[j]].append((values[j], tid))
            status[tid] = "abort"
            for p in sorted(set(parts)):
                logs[p].append((None, None))
            ev("txn", process=f"p{k}", op_id=op_id, phase="ok", f="txn", transactional_id=f"tx-{k}",
               outcome="abort", error=None,
               ops=[{"f": "send", "topic": TOPIC, "partition": p, "value": v, "offset": o}
                    for p, v, o in zip(parts, values, offsets)])
    poll("c0")
    ev("phase", name="drain.start")
    for p in range(partitions):
        ev("txn.seek", process="drain", topic=TOPIC, partition=p, offset=0)
    poll("drain", drain=True)
    for p in range(partitions):
        ev("partition.end", topic=TOPIC, partition=p, end_offset=len(logs[p]))
    ev("phase", name="drain.end")
    metadata = {"schema_version": 1, "kafka_version": "3.9.2", "broker_config": {"min.insync.replicas": "2"},
                "topics": [{"name": TOPIC, "partitions": partitions, "replication_factor": 3, "config": {}}],
                "workload": {"isolation.level": "read_committed"}}
    return events, metadata


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", type=int, default=1_000_000, help="micro-operations: sends + reads (default 1,000,000)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--producers", type=int, default=10, help="concurrent transactional producers (default 10)")
    args = ap.parse_args()
    if args.ops <= 0 or args.producers <= 0:
        ap.error("--ops and --producers must be positive")      # one line, exit 2
    t0 = time.perf_counter()
    events, metadata = generate(args.ops, args.seed, producers=args.producers)
    print(f"generated {len(events):,} events for {args.ops:,} operations in {time.perf_counter() - t0:.1f} s")
    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    result = check_transactions(events, metadata)
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(f"verdict {result['verdict']}: {result['reason']}")
    print("stats", result["stats"])
    edges = result["stats"]["edges"]
    print(f"edges ww {edges['ww']:,} wr {edges['wr']:,} process {edges['process']:,} "
          f"({args.producers} producers)")
    ww = result["checks"]["ww-cycles"]
    print(f"ww-cycles {ww['verdict']}: {ww['count']} components, largest {ww['largest_component']}, "
          f"{ww['by_anomaly']}")
    if result["verdict"] != "PASS":
        raise SystemExit(f"expected PASS on a clean synthetic history, got {result['verdict']}")
    print(f"wall-clock {elapsed:.2f} s (inflated when other processes compete for the core)")
    print(f"txn_check: {cpu:.2f} s")


if __name__ == "__main__":
    main()
