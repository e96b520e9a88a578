"""Seeded histories for the checker's equivalence test (test_reference_checker_golden.py).

Each case is a model-generated history (the benchmark's generator, benchmarks/conformance_check.py,
at a small size) with seeded mutations that make the checker report: perturbed partition states,
dropped and duplicated events, gaps, graceful and ZooKeeper faults, time jumps (P1/P3), txn-log
times (the time merge), under several profiles. Nothing here depends on the checker's code, so the
golden file (tests/reference/data/checker_golden.json.gz) generated once from the checker before a
restructuring pins its output after it.

Regenerate (only when the checker's verdicts are meant to change):
``python -m tests.reference.checker_histories``.
"""

from __future__ import annotations

import copy
import gzip
import json
import os
import random

from tests.reference import random_history
from tests.reference.random_history import BROKERS
from tests.reference.render import metadata_for
from reference.state import ModelConfig

GOLDEN = os.path.join(os.path.dirname(__file__), "data", "checker_golden.json.gz")
PROFILES = ("apache-zk-3.9", "compatible", "apache-zk-2.8", "apache-zk-3.1")


def generate(n_events: int, seed: int, version=(3, 9), deletes: bool = False) -> list[dict]:
    """The benchmark's generator (tests/reference/random_history.py), ``deletes``: topic deletions too."""
    return random_history.generate(n_events, seed, version=version, deletes=deletes)


def mutate(events: list[dict], rng: random.Random, kinds: tuple) -> list[dict]:
    evs = copy.deepcopy(events)
    n = len(evs)
    if "perturb" in kinds:
        states = [e for e in evs if e["type"] == "zk.partition_state" and not e.get("deleted")]
        for e in rng.sample(states, min(len(states), 8)):
            f = rng.choice(("leader", "isr", "leader_epoch", "version", "controller_epoch", "recovery"))
            if f == "leader":
                e["leader"] = rng.choice((-1,) + BROKERS)
            elif f == "isr":
                e["isr"] = rng.sample(BROKERS, rng.randrange(0, 4))
            elif f == "recovery":
                e["leader_recovery_state"] = 1 - (e.get("leader_recovery_state") or 0)
            else:
                e[f] += rng.choice((-1, 1, 2))
    if "drop" in kinds:
        drop = set(rng.sample(range(n), max(1, n // 100)))
        evs = [e for i, e in enumerate(evs) if i not in drop]
    if "dup" in kinds:
        for e in rng.sample(evs, 20):
            if e["type"].startswith("zk."):
                evs.append(dict(e, source="watch", seq=e["seq"] + 0.5))
    extra = []
    if "gap" in kinds:
        zs = [e for e in evs if e["type"].startswith("zk.")]
        for e in rng.sample(zs, 6):
            path = {"zk.partition_state": f"/brokers/topics/{e.get('topic')}/partitions/{e.get('partition')}/state",
                    "zk.topic": f"/brokers/topics/{e.get('topic')}", "zk.broker": "/brokers/ids",
                    "zk.controller": "/controller"}.get(e["type"], "/brokers/ids")
            extra.append({"seq": e["seq"] - 0.25, "wall": e["wall"], "type": "zk.gap", "path": path,
                          "zxid": e["zxid"], "source": "txnlog"})
    if "faults" in kinds:
        for i in range(8):
            at = rng.choice(evs)
            fid = f"f{i}"
            zk = rng.random() < 0.25
            extra.append({"seq": at["seq"] + 0.1, "wall": at["wall"], "type": "fault.start", "fault_id": fid,
                          "fault": "zk_pause" if zk else rng.choice(("stop", "kill", "pause", "isolate")),
                          "nodes": ["zk1"] if zk else ["kafka-1"], "broker_ids": [] if zk else rng.sample(BROKERS, 2),
                          "params": {"graceful": True} if rng.random() < 0.3 else {}})
            end = rng.choice(evs)
            if end["seq"] > at["seq"]:
                extra.append({"seq": end["seq"] + 0.2, "wall": end["wall"], "type": "fault.end", "fault_id": fid})
    evs.extend(extra)
    evs.sort(key=lambda e: e["seq"])
    if "jumps" in kinds:         # time stands still for minutes here and there: progress bounds pass
        shift = 0.0
        cuts = set(rng.sample(range(len(evs)), 6))
        for i, e in enumerate(evs):
            if i in cuts:
                shift += rng.choice((20.0, 90.0, 400.0))
            e["wall"] += shift
    if "stall" in kinds:         # minutes pass right after a deregistration or reassignment start (P1, P3)
        shift = 0.0
        hot = [i for i, e in enumerate(evs) if (e["type"] == "zk.broker" and not e["registered"])
               or (e["type"] == "zk.topic" and (e.get("adding_replicas") or e.get("removing_replicas")))]
        cuts = set(rng.sample(hot, min(len(hot), 8)))
        for i, e in enumerate(evs):
            e["wall"] += shift
            if i in cuts:
                shift += rng.choice((45.0, 400.0))
    if "zk_time" in kinds:       # txn-log times: the time merge of normalize
        for e in evs:
            if e["type"].startswith("zk."):
                e["zk_time"] = e["wall"] - rng.choice((0.0, 0.0005, 0.002))
    for i, e in enumerate(evs):  # integer seqs again
        e["seq"] = i
    return evs


KINDS = ((), ("perturb",), ("drop",), ("dup", "gap"), ("faults", "jumps"), ("perturb", "faults", "jumps"),
         ("drop", "jumps", "zk_time"), ("gap", "faults", "zk_time"), ("perturb", "drop", "dup", "gap", "faults", "jumps"),
         ("stall",), ("stall", "faults"), ("stall", "zk_time"))


def cases():
    """(name, events, metadata, profile) for every case, deterministic."""
    out = []
    for seed in range(3):
        version = ((3, 9), (2, 8), (3, 1))[seed]
        base = generate(1500, seed, version, deletes=seed == 1)
        md = metadata_for(ModelConfig(version=version), f"apache-zk-{version[0]}.{version[1]}")
        if seed == 2:
            md["broker_config"]["unclean.leader.election.enable"] = "true"
        for k, kinds in enumerate(KINDS):
            evs = mutate(base, random.Random(seed * 100 + k), kinds)
            for profile in (md["profile"], "compatible"):
                out.append((f"s{seed}-{'+'.join(kinds) or 'clean'}-{profile}", evs, md, profile))
    return out


def outcome(res) -> dict:
    return {"verdict": res.verdict, "divergences": [d.to_dict() for d in res.divergences],
            "invariant_violations": [d.to_dict() for d in res.invariant_violations],
            "stats": {k: v for k, v in res.stats.items()}}


def main() -> None:
    from reference import check_conformance
    golden = {name: outcome(check_conformance(evs, md, profile)) for name, evs, md, profile in cases()}
    with gzip.open(GOLDEN, "wt") as f:
        json.dump(golden, f, sort_keys=True, separators=(",", ":"))
    print(f"wrote {GOLDEN}: {len(golden)} cases, "
          f"{sum(len(g['divergences']) + len(g['invariant_violations']) for g in golden.values())} findings")


if __name__ == "__main__":
    main()
