"""2. Controller failover (seed 004; spec §2; KRaft §9.1).

On KRaft the controller is the Raft quorum leader and its epoch the Raft epoch (DescribeQuorum): a
failover raises it by at least one (every candidacy takes a new epoch), not by exactly one as
``/controller_epoch`` does in ZooKeeper mode (D11).
"""

from __future__ import annotations

from harness.scenario.scenario import RunContext, Scenario

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
        sem = ctx.semantics
        ctx.wait_until(sem.controller_epoch_rule, lambda: sem.controller_epoch_ok(e0, ctx.view.controller_epoch()), 10)
        ctx.heal(h)
        ctx.wait_until("every partition has a live leader", lambda: all(
            (ctx.leader(T, p) or -1) in ctx.live_brokers() for p in range(3)), 60)
    return script


SCENARIOS: list[Scenario] = [
    Scenario("controller_failover.kill_controller", "SIGKILL the controller; a new one with epoch + 1",
             _controller_fault("kill"), tags=("smoke", "conformance", "chaos"), kraft=True),
    Scenario("controller_failover.delete_controller_znode", "delete /controller (seed 004); re-election, epoch + 1",
             _controller_fault("delete_controller_znode"), tags=("smoke", "conformance", "chaos")),
]
