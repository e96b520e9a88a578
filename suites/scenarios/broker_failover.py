"""1. Broker failover (seeds 000/002 "Broker failover"; spec §5.2, §4.1)."""

from __future__ import annotations

from harness.scenario import RunContext, Scenario

from .common import T, state


def _leader_fault(fault: str):
    def script(ctx: RunContext) -> None:
        before = state(ctx)
        old = before["leader"]
        h = ctx.fault(fault, f"broker:{old}")
        ctx.wait_until(f"{T}-0 has a new leader after {fault} of leader {old}",
                       lambda: ctx.leader(T, 0) not in (None, old), 40)
        after = state(ctx)
        ctx.expect("the new leader was in the ISR (§4.1.2)", after["leader"] in before["isr"], after)
        ctx.expect("ISR = surviving ISR members (§4.1.2)",
                   set(after["isr"]) == set(before["isr"]) - {old}, {"before": before, "after": after})
        ctx.expect("leader epoch increased (§4.10)", after["leader_epoch"] > before["leader_epoch"], after)
        ctx.heal(h)
        ctx.wait_until(f"broker {old} back in the ISR of {T}-0 (§5.8)", lambda: old in ctx.isr(T, 0), 60)
    return script


SCENARIOS: list[Scenario] = [
    Scenario("broker_failover.kill_leader", "SIGKILL the leader of chaos-0; clean election from the ISR; restart",
             _leader_fault("kill"), tags=("smoke", "conformance", "chaos")),
    Scenario("broker_failover.stop_leader", "clean stop (controlled shutdown) of the leader of chaos-0",
             _leader_fault("stop"), tags=("conformance", "chaos")),
    Scenario("broker_failover.pause_leader", "freeze the leader of chaos-0 past the ZooKeeper session timeout",
             _leader_fault("pause"), tags=("conformance", "chaos")),
]
