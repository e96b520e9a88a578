"""Seeded raw histories for the durability checker's equivalence test (test_durability_golden.py).

Each case is a random history written event by event (no simulated cluster behind it), so that
every branch of the scan and of the judging is reached: producers with acks=all / 1 / 0 with and
without idempotence; acks at their log offset, at a wrong one, at -1 or with none; fail and info
completions (NOT_ENOUGH_REPLICAS, _MSG_TIMED_OUT, others); repeated and reused values; polls by
assign- and subscribe-mode consumers that go back, repeat and skip; reads of values never sent,
conflicting values at one offset; ISR windows from the ZooKeeper watch (with commit times, txn-log
copies, deletions, unclean recovery) and from admin.metadata; faults; producer ids and epoch bumps;
fatal client errors; time gaps; full, partial or missing final drains. Nothing here depends on the
checker's code, so the golden file generated once from the checker before a restructuring pins its
whole output after it.

Regenerate (only when the checker's verdicts are meant to change):
``python -m tests.checkers.durability_histories``.
"""

from __future__ import annotations

import gzip
import json
import os
import random

GOLDEN = os.path.join(os.path.dirname(__file__), "data", "durability_golden.json.gz")
N_CASES = 240
PRODUCER_CONFIGS = (
    {"acks": "all", "enable.idempotence": True},
    {"acks": "all", "enable.idempotence": False, "max.in.flight.requests.per.connection": 5},
    {"acks": "all", "enable.idempotence": False, "max.in.flight.requests.per.connection": 1},
    {"acks": "1", "enable.idempotence": False},
    {"acks": "0", "enable.idempotence": False},
    {"acks": "-1", "enable.idempotence": True},
)
ERRORS_FAIL = ("NOT_ENOUGH_REPLICAS", "MSG_SIZE_TOO_LARGE", "TOPIC_AUTHORIZATION_FAILED")
ERRORS_INFO = ("_MSG_TIMED_OUT", "_TIMED_OUT", "NOT_LEADER_OR_FOLLOWER", "_TRANSPORT")


def history(seed: int) -> tuple[list[dict], dict]:
    rng = random.Random(seed)
    topics = ["t"] + (["u"] if rng.random() < 0.3 else [])
    n_parts = {tp: rng.randint(1, 3) for tp in topics}
    evs: list[dict] = []
    clock = [0.0]

    def add(type_, **f):
        ev = {"seq": len(evs), "t": round(clock[0], 6), "wall": 1.7e9 + clock[0], "type": type_}
        ev.update(f)
        evs.append(ev)
        return ev

    procs = [f"p{i}" for i in range(rng.randint(1, 3))]
    for p in procs:
        cfg = dict(rng.choice(PRODUCER_CONFIGS))
        if rng.random() < 0.1:
            cfg = {}                                   # no config: the workload's settings apply
        add("client.config", process=p, role="producer", config=cfg)
    consumers = {"c0": "assign"}
    if rng.random() < 0.5:
        consumers["c1"] = "subscribe"
    for c, mode in consumers.items():
        add("client.config", process=c, role="consumer", config={"mode": mode})
    partitions = [(tp, p) for tp in topics for p in range(n_parts[tp])]
    for tp, p in partitions:
        add("zk.partition_state", zxid=len(evs), source="watch", topic=tp, partition=p, leader=1,
            leader_epoch=0, isr=[1, 2, 3], controller_epoch=1, leader_recovery_state=0, version=0, deleted=False)
    if rng.random() < 0.8:
        add("phase", name="workload.start")

    logs: dict = {x: [] for x in partitions}
    pending: dict[str, list] = {p: [] for p in procs}
    sent: list[str] = []
    polled: dict = {}
    op = 0
    fault = 0
    open_faults: list[int] = []
    pid_state = {p: [rng.randint(1000, 2000), 0, 1] for p in procs}
    steps = rng.randint(20, 160)
    for _ in range(steps):
        r = rng.random()
        clock[0] += rng.choice((0.001, 0.01, 0.05, 0.2)) if rng.random() < 0.97 else rng.uniform(5, 9)
        if r < 0.30:                                   # invoke
            p = rng.choice(procs)
            op += 1
            value = f"{p}-{op}" if (not sent or rng.random() < 0.95) else rng.choice(sent)
            x = rng.choice(partitions)
            op_id = op if rng.random() < 0.9 else rng.randint(1, op + 2)
            add("client", process=p, f="send", phase="invoke", op_id=op_id, topic=x[0], partition=x[1],
                offset=None, value=value, error=None, leader_epoch=None)
            pending[p].append((op_id, value, x))
            sent.append(value)
        elif r < 0.55:                                 # complete one in-flight send
            p = rng.choice(procs)
            if not pending[p]:
                continue
            op_id, value, x = pending[p].pop(0 if rng.random() < 0.85 else -1)
            k = rng.random()
            if k < 0.8:
                logs[x].append(value)
                off = len(logs[x]) - 1
                j = rng.random()
                if j < 0.05:
                    off = -1
                elif j < 0.08:
                    off = None
                elif j < 0.14:
                    off = rng.randint(0, off + 2)
                add("client", process=p, f="send", phase="ok", op_id=op_id, topic=x[0], partition=x[1],
                    offset=off, value=value if rng.random() < 0.97 else None, error=None, leader_epoch=0)
            elif k < 0.9:
                if rng.random() < 0.3:
                    logs[x].append(value)              # failed, but written
                add("client", process=p, f="send", phase="fail", op_id=op_id, topic=x[0], partition=x[1],
                    offset=None, value=value, error=rng.choice(ERRORS_FAIL + (None,)), leader_epoch=None)
            else:
                if rng.random() < 0.5:
                    logs[x].append(value)
                add("client", process=p, f="send", phase="info", op_id=op_id, topic=x[0], partition=x[1],
                    offset=None, value=value, error=rng.choice(ERRORS_INFO), leader_epoch=None)
        elif r < 0.75:                                 # a consumer reads
            c = rng.choice(list(consumers))
            x = rng.choice(partitions)
            log = logs[x]
            if not log:
                continue
            nxt = polled.get((c, x), 0)
            j = rng.random()
            if j < 0.1:
                nxt = rng.randint(0, len(log) - 1)     # back / repeat
            elif j < 0.2:
                nxt = min(len(log) - 1, nxt + rng.randint(1, 3))  # skip
            if nxt >= len(log):
                continue
            value = log[nxt]
            j = rng.random()
            if j < 0.04:
                value = f"stray-{rng.randint(0, 3)}"
            elif j < 0.08 and sent:
                value = rng.choice(sent)
            add("client", process=c, f="poll", phase="ok", op_id=None, topic=x[0], partition=x[1], offset=nxt,
                value=value, error=None, leader_epoch=0)
            polled[(c, x)] = nxt + 1
        elif r < 0.85:                                 # the cluster changes
            x = rng.choice(partitions)
            j = rng.random()
            isr = sorted(rng.sample([1, 2, 3], rng.randint(1, 3)))
            if j < 0.6:
                extra = {"zk_time": 1.7e9 + clock[0] - rng.uniform(0, 0.5)} if rng.random() < 0.5 else {}
                add("zk.partition_state", zxid=len(evs), source="watch" if rng.random() < 0.9 else "txnlog",
                    topic=x[0], partition=x[1], leader=isr[0], leader_epoch=1, isr=isr, controller_epoch=1,
                    leader_recovery_state=1 if rng.random() < 0.05 else 0, version=len(evs),
                    deleted=rng.random() < 0.03, **extra)
            else:
                add("admin.metadata", controller_id=1, brokers=[1, 2, 3], partitions=[
                    {"topic": y[0], "partition": y[1], "leader": 1, "replicas": [1, 2, 3],
                     "isr": isr if y == x else [1, 2, 3], "error": None if rng.random() < 0.95 else "LEADER_NOT_AVAILABLE"}
                    for y in partitions])
        elif r < 0.92:                                 # faults
            if open_faults and rng.random() < 0.5:
                fid = open_faults.pop(0)
                add("fault.end", fault_id=fid, fault="kill", nodes=[], ok=True, error=None)
            else:
                fault += 1
                open_faults.append(fault)
                add("fault.start", fault_id=fault, fault=rng.choice(("kill", "pause", "partition")),
                    target="leader(t,0)", nodes=[], broker_ids=[], params={})
        elif r < 0.97:                                 # producer id samples, epoch bumps
            p = rng.choice(procs)
            st = pid_state[p]
            if rng.random() < 0.3:
                st[1] += 1
                st[2] += 1
            add("client.producer_id", process=p, producer_id=st[0], producer_epoch=st[1], epoch_cnt=st[2],
                instance=0)
        else:
            p = rng.choice(procs)
            if rng.random() < 0.3:
                add("client.life", process=p, role="producer", state="fatal",
                    error=rng.choice(("OUT_OF_ORDER_SEQUENCE_NUMBER", "_FENCED", "UNKNOWN_PRODUCER_ID")),
                    **({"acked_before": rng.randint(0, 5)} if rng.random() < 0.5 else {}))
            else:
                add("client.life", process=p, role="producer", state="running", error=None)
    for p in procs:                                    # what is still in flight ends unknown, or stays open
        for op_id, value, x in pending[p]:
            if rng.random() < 0.7:
                add("client", process=p, f="send", phase="info", op_id=op_id, topic=x[0], partition=x[1],
                    offset=None, value=value, error="_MSG_TIMED_OUT", leader_epoch=None)
    j = rng.random()
    if j < 0.8:                                        # the final drain: all, some, or without end offsets
        add("phase", name="drain.start")
        ends = rng.random() < 0.85
        for x in partitions:
            if rng.random() < 0.1:
                continue
            log = logs[x]
            cut = len(log) if rng.random() < 0.85 else rng.randint(0, len(log))
            for off, value in enumerate(log[:cut]):
                if rng.random() < 0.03:
                    continue                           # a lost record
                add("client", process="drain", f="drain", phase="ok", op_id=None, topic=x[0], partition=x[1],
                    offset=off, value=value, error=None, leader_epoch=0)
            if ends:
                add("partition.end", topic=x[0], partition=x[1], end_offset=cut)
        add("phase", name="drain.end")
    metadata = {
        "schema_version": 1, "kafka_version": rng.choice(("3.9.0", "2.8.2", None)),
        "broker_config": {"min.insync.replicas": rng.choice(("1", "2", "3"))},
        "topics": [{"name": tp, "partitions": n_parts[tp], "replication_factor": 3,
                    "config": ({"unclean.leader.election.enable": "true"} if rng.random() < 0.15 else {})}
                   for tp in topics],
        "workload": {"acks": "all", "enable_idempotence": True},
    }
    return evs, metadata


def cases() -> list[tuple[str, list[dict], dict, dict]]:
    out = []
    for seed in range(N_CASES):
        evs, md = history(seed)
        opts = {"max_examples": 1000} if seed % 3 else {}
        if seed % 7 == 0:
            opts["max_skip_scan"] = 1       # the sorted-index path of poll_skip
        if seed % 5 == 0:
            opts["availability_limit_s"] = 4.0
        out.append((f"s{seed}", evs, md, opts))
    return out


def outcome(result: dict) -> dict:
    """The checker's whole result, as JSON would store it."""
    return json.loads(json.dumps(result, sort_keys=True, default=str))


def main() -> None:
    from harness.checkers import check_durability
    golden = {name: outcome(check_durability(evs, md, opts)) for name, evs, md, opts in cases()}
    os.makedirs(os.path.dirname(GOLDEN), exist_ok=True)
    with gzip.open(GOLDEN, "wt") as f:
        json.dump(golden, f, sort_keys=True, separators=(",", ":"))
    verdicts: dict = {}
    for g in golden.values():
        verdicts[g["verdict"]] = verdicts.get(g["verdict"], 0) + 1
    print(f"wrote {GOLDEN}: {len(golden)} cases, verdicts {verdicts}")


if __name__ == "__main__":
    main()
