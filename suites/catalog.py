"""Every scenario, by family (the seed articles' situations; spec sections in each description).

A scenario's script applies faults through ``ctx.fault`` and states what the controller must do
with ``ctx.wait_until`` / ``ctx.expect``; the conformance checker (reference model) and the
durability checker judge the whole recorded history afterwards.
"""

from __future__ import annotations

from harness.scenario import RunContext, Scenario, TopicSpec

T = "chaos"


def _state(ctx: RunContext, p: int = 0) -> dict:
    st = ctx.view.partition_state(T, p, fresh=True)
    assert st is not None, f"{T}-{p} has no state znode"
    return st


# -- 1. broker failover (seed 000/002 "Broker failover"; spec §5.2, §4.1) -------------------------
def _leader_fault(fault: str):
    def script(ctx: RunContext) -> None:
        before = _state(ctx)
        old = before["leader"]
        h = ctx.fault(fault, f"broker:{old}")
        ctx.wait_until(f"{T}-0 has a new leader after {fault} of leader {old}",
                       lambda: ctx.leader(T, 0) not in (None, old), 40)
        after = _state(ctx)
        ctx.expect("the new leader was in the ISR (§4.1.2)", after["leader"] in before["isr"], after)
        ctx.expect("ISR = surviving ISR members (§4.1.2)",
                   set(after["isr"]) == set(before["isr"]) - {old}, {"before": before, "after": after})
        ctx.expect("leader epoch increased (§4.10)", after["leader_epoch"] > before["leader_epoch"], after)
        ctx.heal(h)
        ctx.wait_until(f"broker {old} back in the ISR of {T}-0 (§5.8)", lambda: old in ctx.isr(T, 0), 60)
    return script


# -- 2. controller failover (seed 004; spec §2) ---------------------------------------------------
def _controller_fault(fault: str, target: str = "controller"):
    def script(ctx: RunContext) -> None:
        ctx.wait_until("a controller is elected", lambda: ctx.controller() is not None, 20)
        c0, e0 = ctx.controller(), ctx.view.controller_epoch()
        h = ctx.fault(fault, target)
        if fault == "delete_controller_znode":
            ctx.wait_until("a controller is re-elected after /controller was deleted",
                           lambda: ctx.controller() is not None and (ctx.view.controller_epoch() or 0) > e0, 30)
        else:
            ctx.wait_until(f"a new controller replaces {c0}", lambda: ctx.controller() not in (None, c0), 40)
        ctx.wait_until("controller epoch is old + 1 (§2.2, D11)",
                       lambda: ctx.view.controller_epoch() == e0 + 1, 10)
        ctx.heal(h)
        ctx.wait_until("every partition has a live leader", lambda: all(
            (ctx.leader(T, p) or -1) in ctx.live_brokers() for p in range(3)), 60)
    return script


# -- 5. follower fetch and ISR shrink / expand (spec §5.7, §5.8) --------------------------------
def _isr_follower_fault(fault: str, leader_driven: bool = False, **params):
    """Take a follower of chaos-0 out of replication. A paused follower also stops heartbeating to
    ZooKeeper, so the controller may remove it first (session expiry, §4.6, LE + 1); a follower cut
    from the other brokers only keeps its session, so the leader shrinks the ISR (§5.7, LE kept)."""
    def script(ctx: RunContext) -> None:
        before = _state(ctx)
        follower = next(r for r in ctx.view.replicas(T, 0) if r != before["leader"])
        h = ctx.fault(fault, f"broker:{follower}", **params)
        ctx.wait_until(f"follower {follower} leaves the ISR of {T}-0 after replica.lag.time.max.ms (§5.7)",
                       lambda: follower not in ctx.isr(T, 0), 30)
        mid = _state(ctx)
        ctx.expect("the leader stays the leader while a follower drops out", mid["leader"] == before["leader"], mid)
        if leader_driven:
            # the follower kept its ZooKeeper session: only the leader can have shrunk the ISR (AlterPartition)
            ctx.expect("a leader-driven ISR shrink keeps the leader epoch (H10, §5.9)",
                       mid["leader_epoch"] == before["leader_epoch"], mid)
        ctx.heal(h)
        ctx.wait_until(f"follower {follower} rejoins the ISR (§5.8)", lambda: follower in ctx.isr(T, 0), 60)
    return script


# -- 6. acks semantics (seed 001; spec §5.12) ----------------------------------------------------
def _acks_below_min_isr(ctx: RunContext) -> None:
    st = _state(ctx)
    followers = [r for r in ctx.view.replicas(T, 0) if r != st["leader"]]
    handles = [ctx.fault("pause", f"broker:{f}") for f in followers]
    ctx.wait_until(f"ISR of {T}-0 shrinks to the leader alone", lambda: ctx.isr(T, 0) == [st["leader"]], 40)
    ctx.sleep(4)  # acks=all writes must now fail with NOT_ENOUGH_REPLICAS (checked on the history)
    for h in handles:
        ctx.heal(h)
    ctx.wait_until(f"ISR of {T}-0 is full again", lambda: len(ctx.isr(T, 0)) == 3, 60)


SCENARIOS: list[Scenario] = [
    Scenario("broker_failover.kill_leader", "SIGKILL the leader of chaos-0; clean election from the ISR; restart",
             _leader_fault("kill"), tags=("smoke", "conformance", "chaos")),
    Scenario("broker_failover.stop_leader", "clean stop (controlled shutdown) of the leader of chaos-0",
             _leader_fault("stop"), tags=("conformance", "chaos")),
    Scenario("broker_failover.pause_leader", "freeze the leader of chaos-0 past the ZooKeeper session timeout",
             _leader_fault("pause"), tags=("conformance", "chaos")),
    Scenario("controller_failover.kill_controller", "SIGKILL the controller; a new one with epoch + 1",
             _controller_fault("kill"), tags=("smoke", "conformance", "chaos")),
    Scenario("controller_failover.delete_controller_znode", "delete /controller (seed 004); re-election, epoch + 1",
             _controller_fault("delete_controller_znode"), tags=("smoke", "conformance", "chaos")),
    Scenario("isr.pause_follower", "pause a follower: it leaves the ISR after the lag time and rejoins",
             _isr_follower_fault("pause"), tags=("smoke", "conformance", "chaos")),
    Scenario("isr.partition_follower", "cut a follower from the other brokers (ZooKeeper link intact): "
             "leader-driven ISR shrink and expand", _isr_follower_fault("link_cut", leader_driven=True,
                                                                        links=["broker-broker"]),
             tags=("conformance", "chaos")),
    Scenario("acks.all_below_min_isr", "acks=all with min.insync.replicas=2 while the ISR is the leader alone",
             _acks_below_min_isr, tags=("conformance", "chaos"),
             broker_config={"min.insync.replicas": "2"},
             topics=[TopicSpec(T, 3, 3)],
             workload={"topic": T, "partitions": 3, "acks": "all", "enable_idempotence": True,
                       "delivery_timeout_ms": 8000, "request_timeout_ms": 3000}),
]

SUITES = ("smoke", "conformance", "chaos", "nightly")


def scenarios_for(target: str) -> list[Scenario]:
    """A suite name (its scenarios), ``all``, a family (``broker_failover``) or one scenario name."""
    if target == "all":
        return list(SCENARIOS)
    if target in SUITES:
        return [s for s in SCENARIOS if target in s.tags]
    exact = [s for s in SCENARIOS if s.name == target]
    return exact or [s for s in SCENARIOS if s.family == target]
