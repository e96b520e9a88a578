"""5. Follower fetch and ISR shrink / expand (spec §5.7, §5.8)."""

from __future__ import annotations

from harness.scenario import RunContext, Scenario

from .common import T, state


def _isr_follower_fault(fault: str, leader_driven: bool = False, **params):
    """Take a follower of chaos-0 out of replication. A paused follower also stops heartbeating to
    ZooKeeper, so the controller may remove it first (session expiry, §4.6, LE + 1); a follower cut
    from the other brokers only keeps its session, so the leader shrinks the ISR (§5.7, LE kept)."""
    def script(ctx: RunContext) -> None:
        before = state(ctx)
        follower = next(r for r in ctx.view.replicas(T, 0) if r != before["leader"])
        h = ctx.fault(fault, f"broker:{follower}", **params)
        ctx.wait_until(f"follower {follower} leaves the ISR of {T}-0 after replica.lag.time.max.ms (§5.7)",
                       lambda: follower not in ctx.isr(T, 0), 30)
        mid = state(ctx)
        ctx.expect("the leader stays the leader while a follower drops out", mid["leader"] == before["leader"], mid)
        if leader_driven:
            # the follower kept its ZooKeeper session: only the leader can have shrunk the ISR (AlterPartition)
            ctx.expect("a leader-driven ISR shrink keeps the leader epoch (H10, §5.9)",
                       mid["leader_epoch"] == before["leader_epoch"], mid)
        ctx.heal(h)
        ctx.wait_until(f"follower {follower} rejoins the ISR (§5.8)", lambda: follower in ctx.isr(T, 0), 60)
    return script


SCENARIOS: list[Scenario] = [
    Scenario("isr.pause_follower", "pause a follower: it leaves the ISR after the lag time and rejoins",
             _isr_follower_fault("pause"), tags=("smoke", "conformance", "chaos")),
    Scenario("isr.partition_follower", "cut a follower from the other brokers (ZooKeeper link intact): "
             "leader-driven ISR shrink and expand", _isr_follower_fault("link_cut", leader_driven=True,
                                                                        links=["broker-broker"]),
             tags=("conformance", "chaos")),
]
