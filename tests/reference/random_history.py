"""Seeded random histories from the controller model: the conformance checker's benchmark
(benchmarks/conformance_check.py) and its golden equivalence test (tests/reference/checker_histories.py).

The model is driven by a seeded random schedule over 5 brokers: mostly leader-side ISR shrinks and
expansions (60 % when one is enabled), plus broker failures, restarts and bounces, controlled
shutdowns, controller failovers, preferred elections and reassignments (half of those skipped);
topic deletions only when ``deletes`` (5 % of the enabled ones). The rendered run-record events are
returned. The same arguments give the same events: the golden file depends on it.
"""

from __future__ import annotations

import random

from reference.model import ControllerModel
from reference.model_events import BrokerStartup, ControllerElected, CreateTopic, DeleteTopic, Reassign
from tests.reference.render import Renderer
from reference.state import ModelConfig

BROKERS = (1, 2, 3, 4, 5)


def generate(n_events: int, seed: int, *, version: tuple[int, ...] = (3, 9), partitions: int = 6,
             topic: str = "t", deletes: bool = False) -> list[dict]:
    """At least ``n_events`` events of one correct history of topic ``topic`` (RF 3)."""
    rng = random.Random(seed)
    cfg = ModelConfig(version=version)
    m = ControllerModel(cfg)
    s = m.initial_state()
    r = Renderer(cfg.version)
    picker = lambda options, label: rng.randrange(len(options))  # noqa: E731
    parts = tuple((p, tuple(rng.sample(BROKERS, 3))) for p in range(partitions))
    for ev in [BrokerStartup(b) for b in BROKERS] + [ControllerElected(None), CreateTopic(topic, parts)]:
        o = m.step_one(s, ev, picker)
        r.writes(o.writes)
        s = o.state
    while len(r.events) < n_events:
        groups: dict[str, list] = {}
        for e in m.enabled_events(s, BROKERS):
            if isinstance(e, DeleteTopic) and not (deletes and rng.random() < 0.05):
                continue
            groups.setdefault(type(e).__name__, []).append(e)
        # ISR changes dominate real histories; weight them up
        kind = "AlterPartition" if "AlterPartition" in groups and rng.random() < 0.6 else rng.choice(sorted(groups))
        ev = rng.choice(groups[kind])
        if isinstance(ev, Reassign) and rng.random() < 0.5:
            continue
        o = m.step_one(s, ev, picker)
        r.event_inputs(ev)
        r.writes(o.writes)
        s = o.state
    return r.events
