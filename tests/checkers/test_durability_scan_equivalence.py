"""The durability scan's shortcuts (a read where its value was first read skips the position
bookkeeping; whether a send key's acks are in order is decided during the scan) against a plain
restatement of the three checks they feed, on random raw histories with conflicting values, repeated
reads, and acks out of op id order."""

from __future__ import annotations

import random

import pytest

from harness.checkers import check_durability

TOPIC = "t"


def _history(rng: random.Random) -> list[dict]:
    evs: list[dict] = []

    def add(**f):
        evs.append({"seq": len(evs), "t": len(evs) * 0.01, "wall": 1.7e9 + len(evs) * 0.01, **f})

    add(type="client.config", process="p0", role="producer", config={"acks": "all", "enable.idempotence": True})
    add(type="client.config", process="c0", role="consumer", config={"mode": "assign"})
    values = [f"v{i}" for i in range(rng.randint(3, 14))]
    for i, v in enumerate(values):
        op = i if rng.random() < 0.8 else rng.randint(0, len(values))     # some acks out of op id order
        add(type="client", process="p0", f="send", phase="invoke", op_id=op, topic=TOPIC, partition=i % 2,
            offset=None, value=v, error=None)
        add(type="client", process="p0", f="send", phase="ok", op_id=op, topic=TOPIC, partition=i % 2,
            offset=rng.randint(0, 6), value=v, error=None)
    for _ in range(rng.randint(0, 20)):
        add(type="client", process=rng.choice(["c0", "drain"]), f=rng.choice(["poll", "drain"]), phase="ok",
            op_id=None, topic=TOPIC, partition=rng.randint(0, 1), offset=rng.randint(0, 6),
            value=rng.choice(values + ["x"]), error=None)
    return evs


def _oracle(evs: list[dict]) -> tuple[dict, dict, list]:
    first: dict = {}
    conflicts: dict = {}
    read_first: dict = {}
    dups: dict = {}
    order: dict = {}
    for e in evs:
        if e["type"] != "client" or e["phase"] != "ok":
            continue
        at = ((e["topic"], e["partition"]), e["offset"])
        old = first.setdefault(at, e["value"])
        if old != e["value"]:
            vals = conflicts.setdefault(at, [old])
            if e["value"] not in vals:
                vals.append(e["value"])
        if e["f"] == "send":
            order.setdefault(e["partition"], []).append((e["op_id"], e["offset"]))
            continue
        prev = read_first.setdefault(e["value"], at)
        if prev != at:
            lst = dups.setdefault(e["value"], [prev])
            if at not in lst:
                lst.append(at)
    back = []
    for part, acks in order.items():
        acks = sorted(acks)
        back += [(part, o1) for (_, o0), (_, o1) in zip(acks, acks[1:]) if o1 <= o0]
    return conflicts, dups, back


@pytest.mark.parametrize("seed", range(300))
def test_scan_shortcuts_match_a_plain_restatement(seed):
    rng = random.Random(seed)
    evs = _history(rng)
    meta = {"schema_version": 1, "kafka_version": "3.9.0", "broker_config": {}, "workload": {},
            "topics": [{"name": TOPIC, "partitions": 2, "replication_factor": 3, "config": {}}]}
    r = check_durability(evs, meta, {"max_examples": 1000})
    conflicts, dups, back = _oracle(evs)
    inc = r["checks"]["inconsistent_offsets"]
    assert [(d["partition"], d["offset"], d["values"]) for d in inc["examples"]] == \
        [(tp[1], off, vals) for (tp, off), vals in conflicts.items()]
    dup = r["checks"]["duplicates"]
    assert sorted((d["value"], tuple((p["partition"], p["offset"]) for p in d["positions"]))
                  for d in dup["examples"]) == \
        sorted((v, tuple((tp[1], off) for tp, off in ps)) for v, ps in dups.items())
    ns = r["checks"]["nonmonotonic_send"]
    assert sorted((d["partition"], d["offset"]) for d in ns["examples"]) == sorted(back)
