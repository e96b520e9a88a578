"""check_durability pauses the cyclic collector and frees its scan before resuming it: the collector's
state is restored (on, or left off when the caller had it off) and the result, built from the freed scan,
is whole (examples and windows are the result's own, still readable)."""

from __future__ import annotations

import gc

from harness.checkers import FAIL, check_durability
from tests.checkers.synthetic import History


def _lossy() -> History:
    h = History(partitions=2, broker_config={"min.insync.replicas": "2"})
    h.producer("p0", acks="all", **{"enable.idempotence": True})
    h.consumer("c0", mode="assign")
    for p in range(2):
        h.isr(p, [1, 2, 3])
    for i in range(20):
        h.send("p0", partition=i % 2)
    h.isr(0, [1])
    h.send("p0", partition=0)
    h.advance(3.0)
    h.isr(0, [1, 2, 3])
    lost = h.lose(1, 3)
    h.drain()
    h.lost_value = lost
    return h


def test_collector_state_restored_and_result_whole():
    h = _lossy()
    was = gc.isenabled()
    try:
        gc.enable()
        first = check_durability(h.events, h.metadata)
        assert gc.isenabled()
        gc.disable()
        second = check_durability(h.events, h.metadata)
        assert not gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()
    gc.collect()
    assert first == second
    lost = first["checks"]["lost"]
    assert lost["verdict"] == FAIL and [d["value"] for d in lost["examples"]] == [h.lost_value]
    assert first["checks"]["acks_semantics"]["isr_below_min_windows"] == 1
