"""A mutated history whose P1 liveness findings fall due together (run by test_hash_seed_order.py in
child processes with different PYTHONHASHSEED): prints the whole conformance result."""

from __future__ import annotations

import random
import sys

from reference import check_conformance
from tests.reference import random_history
from tests.reference.render import metadata_for
from reference.state import ModelConfig


def mutated(n: int = 10000, seed: int = 3) -> tuple[list[dict], dict]:
    """A model-generated history, corrupted at random (states, registrations, most fault.start events
    dropped) and its wall clock stretched 3000x, so that P1 obligations expire at the same events."""
    ev = random_history.generate(n, 1, partitions=12, topic="bench")
    md = metadata_for(ModelConfig(version=(3, 9)), "apache-zk-3.9")
    rng = random.Random(seed)
    for _ in range(seed * 40):
        i = rng.randrange(len(ev))
        e, k = ev[i], rng.random()
        if e is None:
            continue
        if e["type"] == "zk.partition_state":
            if k < 0.3:
                e["leader"] = rng.choice([1, 2, 3, 4, 5, -1])
            elif k < 0.5:
                e["isr"] = rng.sample([1, 2, 3, 4, 5], rng.randrange(0, 4))
            elif k < 0.6:
                e["leader_epoch"] += rng.choice([-1, 1, 2])
            elif k < 0.7:
                e["version"] += rng.choice([1, 2])
            elif k < 0.8:
                e["controller_epoch"] += rng.choice([-1, 1])
            elif k < 0.85:
                e["leader_recovery_state"] = 1
            else:
                ev[i] = None
        elif e["type"] == "zk.broker" and k < 0.5:
            ev[i] = None
        elif e["type"] == "fault.start" and k < 0.5:
            e["params"] = {"graceful": True}
        elif e["type"] == "action" and k < 0.3:
            e["action"] = "elect_unclean"
        elif k < 0.2:
            ev[i] = None
    ev = [e for e in ev if e is not None]
    ev = [e for e in ev if e["type"] != "fault.start" or rng.random() < 0.1]
    for e in ev:
        if "wall" in e:
            e["wall"] = 1.7e9 + (e["wall"] - 1.7e9) * 3000
    return ev, md


if __name__ == "__main__":
    events, metadata = mutated()
    r = check_conformance(events, metadata, "apache-zk-3.9")
    sys.stdout.write(repr((r.verdict, r.divergences, r.invariant_violations, sorted(r.stats.items(), key=str))))
