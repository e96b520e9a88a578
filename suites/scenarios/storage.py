"""Shared storage: faults on the store of stateless brokers (layout ``shared-storage``,
docs/broker-contract.md "Layout shared-storage").

A shared-storage broker keeps nothing a client relies on in its own process: every partition lives in
a store — a distribution file's ``[[service]]`` of role ``store`` (an object store, a database) — and
any broker may serve any partition. What such a broker promises a client is what Kafka promises for
acks=all: an acknowledged write is durable (here: in the store) and is read back, once, in order;
a write the store did not take is not acknowledged (an error or a timeout, which the idempotent
producer retries). Each scenario faults the store while the workload writes, heals it and expects
acknowledged writes again afterwards. Judged by the durability checker (every acknowledged write
read back by the final drain, no duplicate, no reordering) and the expectations; not by the
conformance checker, whose model is Kafka's replication among the node ids (leaders, followers,
ISR), which a shared-storage broker does not have (each broker may report itself as the leader of
every partition). The topic has replication factor 1: replication is the store's business.
"""

from __future__ import annotations

from harness.scenario.scenario import SHARED_STORAGE, RunContext, Scenario, TopicSpec
from harness.errors import ScenarioError

from .common import T

PARTS = 3
FAULT_S = 10.0           # how long the store stays paused / cut / down


def _store(ctx: RunContext) -> str:
    """The name of the cluster's (first) store service."""
    for s in getattr(ctx.cluster.distribution, "services", ()):
        if s.role == "store":
            return s.name
    raise ScenarioError(f"{ctx.scenario.name}: the distribution declares no [[service]] of role store")


def _acked(ctx: RunContext) -> int:
    """Writes the workload has had acknowledged so far (its own counter: no re-read of the event log per poll)."""
    return ctx.nemesis.workload.acknowledged()


def _around(ctx: RunContext, fault: str, **params) -> None:
    """Writes acknowledged, then ``fault`` on the store for FAULT_S, then acknowledged writes again."""
    store = _store(ctx)
    ctx.wait_until("the workload has writes acknowledged before the store fault", lambda: _acked(ctx) >= 200,
                   60, interval_s=0.5)
    h = ctx.fault(fault, f"service:{store}", **params)
    ctx.sleep(FAULT_S)
    ctx.heal(h)
    at_heal = _acked(ctx)
    ctx.wait_until(f"the brokers acknowledge writes again after the store's {fault} was healed",
                   lambda: _acked(ctx) - at_heal >= 200, 90, interval_s=1.0)


def _pause(ctx: RunContext) -> None:
    _around(ctx, "pause")


def _kill(ctx: RunContext) -> None:
    _around(ctx, "kill")


def _cut(ctx: RunContext) -> None:
    _around(ctx, "partition")


def _scenario(name: str, description: str, script) -> Scenario:
    return Scenario(name, description, script, tags=("conformance", "chaos"), needs_roles=(),
                    layouts=(SHARED_STORAGE,), topics=[TopicSpec(T, PARTS, 1)],
                    workload={"topic": T, "partitions": PARTS}, checks=("durability", "expectations"),
                    faults_one_node=False, max_duration_s=180)


SCENARIOS: list[Scenario] = [
    _scenario("storage.pause_store", f"freeze the store for {FAULT_S:.0f} s while the workload writes; after the "
              "heal the brokers acknowledge writes again and every acknowledged write is read back", _pause),
    _scenario("storage.kill_store", f"SIGKILL the store while the workload writes, start it {FAULT_S:.0f} s later; "
              "every write acknowledged before or after is read back", _kill),
    _scenario("storage.partition_store", f"cut the store from every broker for {FAULT_S:.0f} s (the brokers keep "
              "serving clients); every acknowledged write is read back after the heal", _cut),
]
