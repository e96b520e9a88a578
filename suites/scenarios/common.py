"""What every scenario module shares: the default topic, state readers, and the diagnostics a run
records when a broker does not come back as expected."""

from __future__ import annotations

from typing import Callable

from harness.nemesis import netrules
from harness.record import windows
from harness.scenario.scenario import RunContext, StepTimeout

# log lines worth keeping when a broker does not rejoin: replication, ISR changes, controller requests
_DIAG_KEYS = ("Fetcher", "fetch", "Error", "WARN", "ERROR", "LeaderAndIsr", "Truncat", "AlterPartition",
              "AlterIsr", "ISR", "stale")

T = "chaos"  # the default topic every scenario's workload writes to


def state(ctx: RunContext, p: int = 0, topic: str = T) -> dict:
    """The partition's state znode now (leader, leader_epoch, isr, ...); fails if it has none."""
    st = ctx.view.partition_state(topic, p, fresh=True)
    assert st is not None, f"{topic}-{p} has no state znode"
    return st


def fault_times(ctx: RunContext, handle) -> dict[str, float]:
    """The recorded window of one applied fault (``ctx.fault``'s handle), run-clock seconds:
    ``{"start": .., "heal": .., "end": ..}`` as far as recorded. ``heal`` is when its effect was
    undone (a node started or unpaused, rules about to be removed), ``end`` when the heal was done;
    a fault with nothing to heal (restart, start, ...) has all three once ``ctx.fault`` returned
    (docs/faults.md "Recording"). Use ``heal`` for "after the fault stopped", not the time heal() returned."""
    return windows.fault_times(ctx.recorder.read_events(), handle.fault_id)


def diagnose(ctx: RunContext, brokers) -> dict:
    """What the record should keep when a broker does not rejoin: every broker's KAFKA_CHAOS chains
    (leftover rules) and the recent replication / ISR / controller-request log lines of ``brokers``
    and of the controller (a stuck fetcher, a refused AlterPartition, a lost LeaderAndIsr)."""
    out: dict = {}
    for b in ctx.cluster.broker_ids:
        try:
            _, rules = ctx.cluster.brokers[b].exec(["sh", "-c", netrules.list_script()])
            out[f"rules_b{b}"] = netrules.parse_listing(rules)[-20:]
        except Exception as e:  # noqa: BLE001 - diagnostics only
            out[f"rules_b{b}"] = f"{type(e).__name__}: {e}"
    try:
        controller = ctx.controller()
    except Exception:  # noqa: BLE001
        controller = None
    for b in dict.fromkeys([*brokers, *([controller] if controller is not None else [])]):
        try:
            lines = ctx.cluster.brokers[b].logs(3000).splitlines()
            out[f"log_b{b}"] = [ln for ln in lines if any(k in ln for k in _DIAG_KEYS)][-40:]
        except Exception as e:  # noqa: BLE001
            out[f"log_b{b}"] = f"{type(e).__name__}: {e}"
    return out


def wait_or_diagnose(ctx: RunContext, what: str, predicate: Callable[[], bool], timeout_s: float,
                     brokers, state_of: Callable[[], object] | None = None) -> float:
    """``ctx.wait_until``; on a timeout, record :func:`diagnose` of ``brokers`` (and ``state_of()``)
    as a failed expectation, then fail as the wait would have."""
    try:
        return ctx.wait_until(what, predicate, timeout_s)
    except StepTimeout:
        detail = diagnose(ctx, brokers)
        if state_of is not None:
            try:
                detail["states"] = state_of()
            except Exception as e:  # noqa: BLE001
                detail["states"] = f"{type(e).__name__}: {e}"
        ctx.expect(f"diagnostics: {what}", False, detail)
        raise
