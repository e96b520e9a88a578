"""Benchmark: durability checker time on a 1,000,000-send-operation synthetic history.

The history: 4 idempotent acks=all producers sending 1,000,000 values (invoke + ok, up to
16 in flight each) round-robin over 8 partitions; one assign-mode consumer reading every
record; ZooKeeper ISR changes (including below-min windows) and faults every 50,000 sends;
a final drain of every partition. That is 4,000,000+ events. Only ``check_durability`` is
timed (generation is not); it is single-threaded, and the figure is its CPU time (user + system)
on that one core, which, unlike wall-clock time, does not grow when other jobs share the machine.

Target: <= 10 s. Last line: ``durability_check: <seconds> s``.
Usage: python benchmarks/durability_check.py [--ops N]
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from harness.checkers import check_durability  # noqa: E402

TOPIC = "bench"


def generate(ops: int, partitions: int = 8, producers: int = 4, in_flight: int = 16) -> tuple[list, dict]:
    events: list[dict] = []
    add = events.append
    logs = [[] for _ in range(partitions)]
    t = 0.0

    def ev(type_, **f):
        d = {"seq": len(events), "t": t, "wall": 1.7e9 + t, "type": type_}
        d.update(f)
        add(d)

    for p in range(producers):
        ev("client.config", process=f"p{p}", role="producer",
           config={"acks": "all", "enable.idempotence": True})
    ev("client.config", process="c0", role="consumer", config={"mode": "assign"})
    for part in range(partitions):
        ev("zk.partition_state", zxid=part, source="watch", topic=TOPIC, partition=part, leader=1,
           leader_epoch=0, isr=[1, 2, 3], controller_epoch=1, leader_recovery_state=0, version=0, deleted=False)
    ev("phase", name="workload.start")
    op_id = 0
    sent = 0
    polled = [0] * partitions
    while sent < ops:
        for p in range(producers):
            proc = f"p{p}"
            batch = []
            for _ in range(min(in_flight, ops - sent)):
                op_id += 1
                part = op_id % partitions
                value = f"{proc}-{op_id}"
                t += 0.00001
                add({"seq": len(events), "t": t, "wall": 1.7e9 + t, "type": "client", "process": proc,
                     "f": "send", "phase": "invoke", "op_id": op_id, "topic": TOPIC, "partition": part,
                     "offset": None, "value": value, "error": None, "leader_epoch": None})
                batch.append((op_id, part, value))
                sent += 1
            for oid, part, value in batch:
                t += 0.00001
                logs[part].append(value)
                add({"seq": len(events), "t": t, "wall": 1.7e9 + t, "type": "client", "process": proc,
                     "f": "send", "phase": "ok", "op_id": oid, "topic": TOPIC, "partition": part,
                     "offset": len(logs[part]) - 1, "value": value, "error": None, "leader_epoch": 0})
            if sent >= ops:
                break
        # the consumer catches up on every partition
        for part in range(partitions):
            log = logs[part]
            for off in range(polled[part], len(log)):
                add({"seq": len(events), "t": t, "wall": 1.7e9 + t, "type": "client", "process": "c0",
                     "f": "poll", "phase": "ok", "op_id": None, "topic": TOPIC, "partition": part,
                     "offset": off, "value": log[off], "error": None, "leader_epoch": 0})
            polled[part] = len(log)
        if sent % 50_000 < producers * in_flight:
            ev("fault.start", fault_id=sent, fault="kill", target="leader(bench,0)", nodes=[], broker_ids=[3],
               params={})
            ev("zk.partition_state", zxid=sent, source="watch", topic=TOPIC, partition=0, leader=1,
               leader_epoch=1, isr=[1], controller_epoch=1, leader_recovery_state=0, version=1, deleted=False)
            t += 0.5
            ev("zk.partition_state", zxid=sent + 1, source="watch", topic=TOPIC, partition=0, leader=1,
               leader_epoch=1, isr=[1, 2, 3], controller_epoch=1, leader_recovery_state=0, version=2,
               deleted=False)
            ev("fault.end", fault_id=sent, fault="kill", nodes=[], ok=True, error=None)
    ev("phase", name="drain.start")
    for part in range(partitions):
        for off, value in enumerate(logs[part]):
            add({"seq": len(events), "t": t, "wall": 1.7e9 + t, "type": "client", "process": "drain",
                 "f": "drain", "phase": "ok", "op_id": None, "topic": TOPIC, "partition": part,
                 "offset": off, "value": value, "error": None, "leader_epoch": 0})
        ev("partition.end", topic=TOPIC, partition=part, end_offset=len(logs[part]))
    ev("phase", name="drain.end")
    metadata = {"schema_version": 1, "kafka_version": "3.9.0", "broker_config": {"min.insync.replicas": "2"},
                "topics": [{"name": TOPIC, "partitions": partitions, "replication_factor": 3, "config": {}}],
                "workload": {"acks": "all", "enable_idempotence": True}}
    return events, metadata


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", type=int, default=1_000_000, help="send operations (default 1,000,000)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    events, metadata = generate(args.ops)
    print(f"generated {len(events):,} events for {args.ops:,} send operations in {time.perf_counter() - t0:.1f} s")
    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    result = check_durability(events, metadata)
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(f"verdict {result['verdict']}: {result['reason']}")
    print("stats", result["stats"])
    if result["verdict"] != "PASS":
        raise SystemExit(f"expected PASS on a clean synthetic history, got {result['verdict']}")
    print(f"wall-clock {elapsed:.2f} s (inflated when other processes compete for the core)")
    print(f"durability_check: {cpu:.2f} s")


if __name__ == "__main__":
    main()
