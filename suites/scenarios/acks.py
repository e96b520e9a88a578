"""6. acks semantics (seed 001; spec §5.12)."""

from __future__ import annotations

from harness.scenario import RunContext, Scenario, TopicSpec

from .common import T, state


def _acks_below_min_isr(ctx: RunContext) -> None:
    st = state(ctx)
    followers = [r for r in ctx.view.replicas(T, 0) if r != st["leader"]]
    handles = [ctx.fault("pause", f"broker:{f}") for f in followers]
    ctx.wait_until(f"ISR of {T}-0 shrinks to the leader alone", lambda: ctx.isr(T, 0) == [st["leader"]], 40)
    ctx.sleep(4)  # acks=all writes must now fail with NOT_ENOUGH_REPLICAS (checked on the history)
    for h in handles:
        ctx.heal(h)
    ctx.wait_until(f"ISR of {T}-0 is full again", lambda: len(ctx.isr(T, 0)) == 3, 60)


SCENARIOS: list[Scenario] = [
    Scenario("acks.all_below_min_isr", "acks=all with min.insync.replicas=2 while the ISR is the leader alone",
             _acks_below_min_isr, tags=("conformance", "chaos"),
             broker_config={"min.insync.replicas": "2"},
             topics=[TopicSpec(T, 3, 3)],
             workload={"topic": T, "partitions": 3, "acks": "all", "enable_idempotence": True,
                       "delivery_timeout_ms": 8000, "request_timeout_ms": 3000}),
]
