"""Cases taken from Apache Kafka's own system tests (``tests/kafkatest/`` in apache/kafka), re-expressed
as scenarios of this harness. Each names the test it comes from and what was kept.

``kafkatest.reassign_partitions`` — ``kafkatest/tests/core/reassign_partitions_test.py``
(``ReassignPartitionsTest.test_reassign_partitions`` with ``bounce_brokers=True``): four brokers, one
topic of 20 partitions with replication factor 3 and ``min.insync.replicas=3``, an idempotent producer
at 1,000 messages a second with ``retries=5``, a jumbled reassignment of every partition (each partition
gets the replica list of another partition, shuffled), every other broker cleanly restarted while it
runs, and the reassignment verified complete within 60 s after the restarts. Kafka's test runs
``kafka-reassign-partitions``; here its ``--execute`` and ``--verify`` are done from the host through
the protocol (harness/cluster/admin_ops.py, recorded ``via="api"``): the tool is not what the test is about. Kafka's test then checks
that every acknowledged message is consumed; here the durability checker does that (and more: the
duplicates its ``ProduceConsumeValidateTest`` turned off, KAFKA-18905 / KAFKA-9199, are findings with
their evidence), the conformance checker judges every controller write, and the run's coverage says
whether the producer lived through it.
"""

from __future__ import annotations

import random

from harness.cluster import admin_ops as ao
from harness.scenario.scenario import RunContext, Scenario, TopicSpec

from .common import T

PARTITIONS = 20
BROKERS = 4


def _jumbled(current: dict[int, list[int]], rng: random.Random) -> dict[int, list[int]]:
    """kafkatest's ``reassign_partitions``: every partition takes another partition's replica list
    (a rotation of the partition order), shuffled, so most replicas move and most leaders change."""
    parts = sorted(current)
    shift = rng.randrange(1, len(parts)) if len(parts) > 1 else 0
    out = {}
    for i, p in enumerate(parts):
        replicas = list(current[parts[(i + shift) % len(parts)]])
        rng.shuffle(replicas)
        out[p] = replicas
    return out


def reassign_partitions(ctx: RunContext) -> None:
    rng = random.Random(ctx.seed)
    current = {p: ctx.view.replicas(T, p) for p in range(PARTITIONS)}
    assert all(current.values()), f"replica lists unknown: {current}"
    targets = _jumbled(current, rng)
    plan = ao.make_plan({(T, p): r for p, r in targets.items()})
    ctx.sleep(5)                           # load first: the producer is at its rate before anything moves
    ctx.action("reassign", lambda: ao.reassign_execute(ctx.cluster, plan), **ao.action_params(plan, via="api"))
    for b in sorted(ctx.cluster.broker_ids)[::2]:          # bounce every other broker, cleanly
        ctx.fault("restart", f"broker:{b}")
    ctx.wait_until("verify (the tool's --verify from the host): every partition completed within 60 s of the restarts",
                   lambda: all(s == "complete" for s in ao.reassign_verify(ctx.cluster, plan).values()),
                   60, interval_s=2.0)
    ctx.wait_until("every partition's replica list is its target", lambda: all(
        ctx.view.replicas(T, p) == target for p, target in targets.items()), 30)
    ctx.sleep(5)                           # traffic after the reassignment, before the final read


_CONFIG = {"min.insync.replicas": "3"}
SCENARIOS: list[Scenario] = [
    Scenario("kafkatest.reassign_partitions",
             "Kafka's reassign_partitions_test: 20 partitions RF 3 min ISR 3, idempotent producer 1000/s "
             "retries=5, jumbled reassignment of all partitions, every other broker cleanly restarted",
             reassign_partitions, tags=("chaos",), brokers=BROKERS,
             topics=[TopicSpec(T, PARTITIONS, 3, config=_CONFIG)],
             workload={"topic": T, "partitions": PARTITIONS, "rate": 1000.0, "retries": 5,
                       "enable_idempotence": True, "acks": "all"},
             min_version="2.6", max_duration_s=300, kraft=True),
]
