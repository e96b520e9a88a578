"""2. Controller failover (seed 004; spec §2)."""

from __future__ import annotations

from harness.scenario import RunContext, Scenario

from .common import T


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


SCENARIOS: list[Scenario] = [
    Scenario("controller_failover.kill_controller", "SIGKILL the controller; a new one with epoch + 1",
             _controller_fault("kill"), tags=("smoke", "conformance", "chaos")),
    Scenario("controller_failover.delete_controller_znode", "delete /controller (seed 004); re-election, epoch + 1",
             _controller_fault("delete_controller_znode"), tags=("smoke", "conformance", "chaos")),
]
