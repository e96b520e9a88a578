"""1. Broker failover (seeds 000/002 "Broker failover"; spec §5.2, §4.1, §4.4, §5.5).

The leader of chaos-0 is killed (SIGKILL), stopped cleanly (SIGTERM: controlled shutdown, §4.4)
or frozen past the ZooKeeper session timeout. The new leader must come from the ISR *as it was just
before the election*: under load a follower can drop out of the ISR and rejoin between the fault
and the election (replica.lag.time.max.ms is 5 s in the test clusters), so the state read when the
fault starts is not the one the controller elected from. That state is taken from the observer's
live events (the znode version just before the election; on KRaft the last protocol sample with a
lower leader epoch), falling back to the state read at the fault when the observer skipped it. The
reference model checks every write on the txn log (KRaft: every sample) anyway.
"""

from __future__ import annotations

from harness.scenario.scenario import RunContext, Scenario

from .common import T, state

_FIELDS = ("leader", "leader_epoch", "isr", "version")


def state_before(ctx: RunContext, after: dict, fallback: dict, topic: str = T, p: int = 0) -> dict:
    """The state ``after`` replaced, as the observer saw it; ``fallback`` when the observer missed it.

    ZooKeeper: the state znode at data version ``after.version - 1`` (the watcher's events). Without
    ZooKeeper (KRaft, no partition epoch visible): the last protocol sample with a lower leader epoch.
    """
    events = ctx.recorder.read_events()
    if after.get("version") is None:
        for e in reversed(events):
            if e["type"] != "admin.metadata" or e.get("source") != "protocol":
                continue
            for q in e.get("partitions") or []:
                if (q.get("topic") == topic and q.get("partition") == p and q.get("error") is None
                        and q.get("leader_epoch") is not None and q["leader_epoch"] < after["leader_epoch"]):
                    return {"leader": q["leader"], "leader_epoch": q["leader_epoch"], "isr": q["isr"],
                            "version": None}
        return fallback
    want = after["version"] - 1
    if fallback.get("version") == want:
        return fallback
    for e in reversed(events):
        if (e["type"] == "zk.partition_state" and e.get("topic") == topic and e.get("partition") == p
                and e.get("version") == want and not e.get("deleted")):
            return {k: e[k] for k in _FIELDS}
    return fallback


def _leader_fault(fault: str):
    def script(ctx: RunContext) -> None:
        at_fault = state(ctx)
        old = at_fault["leader"]
        h = ctx.fault(fault, f"broker:{old}")
        ctx.wait_until(f"{T}-0 has a new leader after {fault} of leader {old}",
                       lambda: ctx.leader(T, 0) not in (None, -1, old), 40)
        after = state(ctx)
        before = state_before(ctx, after, at_fault)
        if before["leader"] == old:     # the write that replaced the old leader, when it is the last one
            ctx.expect("the new leader was in the ISR (§4.1.2 / §4.4)", after["leader"] in before["isr"],
                       {"before": before, "after": after})
            ctx.expect("ISR = surviving ISR members (§4.1.2; §4.4: ISR − shutting down)",
                       set(after["isr"]) == set(before["isr"]) - {old}, {"before": before, "after": after})
        else:                           # leader-driven ISR changes followed the election: weaker checks
            ctx.expect("the new leader is in the ISR and the old one is not (§4.1.2)",
                       after["leader"] in after["isr"] and old not in after["isr"], after)
        ctx.expect("leader epoch increased (§4.10)", after["leader_epoch"] > at_fault["leader_epoch"], after)
        ctx.heal(h)
        ctx.wait_until(f"broker {old} back in the ISR of {T}-0 (§5.8)", lambda: old in ctx.isr(T, 0), 60)
    return script


SCENARIOS: list[Scenario] = [
    Scenario("broker_failover.kill_leader", "SIGKILL the leader of chaos-0; clean election from the ISR; restart",
             _leader_fault("kill"), tags=("smoke", "conformance", "chaos"), kraft=True),
    Scenario("broker_failover.stop_leader", "clean stop (controlled shutdown) of the leader of chaos-0",
             _leader_fault("stop"), tags=("conformance", "chaos"), kraft=True),
    Scenario("broker_failover.pause_leader", "freeze the leader of chaos-0 past the ZooKeeper session timeout",
             _leader_fault("pause"), tags=("conformance", "chaos"), kraft=True),
]
