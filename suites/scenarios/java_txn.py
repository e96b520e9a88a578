"""Transactions v2 (KIP-890 part 2) with Apache Kafka's own Java client: the ``java-txn`` workload
(harness/workload/java_txn.py: ``TransactionalMessageCopier`` in containers of the broker's image, one per
input partition, copying read-process-write with about a third of the transactions aborted), judged from
the output topic's record batches (harness/checkers/txn_epochs.py): the producer epoch of every data batch
and marker, per producer id, in log order; exactly-once copying of every acknowledged input record.

``java_txn.coordinator_kill`` — the transaction coordinator of the first copier's ``transactional.id`` is
killed until another broker coordinates it, then restarted; then the second copier's container is killed
(``client_crash``) and a new instance with the same ``transactional.id`` fences it.
``java_txn.leader_kill`` — the leader of the output partition ``jtx-0`` is killed and restarted; then the
first copier's container is killed and replaced.
``java_txn.zombie_pause`` — the first copier's container is frozen, a replacement with the same
``transactional.id`` fences it, and the frozen one is thawed: a live zombie with the old epoch.

KRaft only, Kafka 4.0+ (the Java client speaks TV2 when the brokers finalize ``transaction.version`` 2,
the default of a 4.x cluster formatted at the newest metadata version). Tagged ``chaos``: run on demand,
e.g. ``kafka-chaos run java_txn --distribution apache-kraft --kafka-version 4.4.0`` (docs/transactions.md);
variant ``tv1`` (``--variant tv1``): the cluster formatted with ``transaction.version=1``.
"""

from __future__ import annotations

import time

from harness.scenario.scenario import RunContext, Scenario, TopicSpec

TOPIC = "jtx"
PARTITIONS = 2
TX_ID = f"kc-jtx-{TOPIC}"               # JavaTxnWorkloadConfig.tx_id: <prefix>-<partition>
BEFORE, AFTER = 400, 1600               # records committed before the first fault / by the end


def committed_at_least(ctx: RunContext, n: int, at_least_s: float, at_most_s: float) -> None:
    """Sleep ``at_least_s``, then on until the copiers committed ``n`` records (``at_most_s`` in all)."""
    ctx.sleep(at_least_s)
    wl = ctx.nemesis.workload
    deadline = time.monotonic() + max(0.0, at_most_s - at_least_s)
    while wl is not None and wl.acknowledged() < n and time.monotonic() < deadline:
        ctx.sleep(0.5)


def coordinator(ctx: RunContext, tx_id: str, last: tuple[int, ...] = ()) -> int | None:
    _port, info = ctx.cluster.coordinator(tx_id, "transaction", last=last)
    return info.node_id if info.error is None and info.node_id >= 0 else None


def _crash_and_replace(ctx: RunContext, process: str) -> None:
    """Kill a copier's container mid-transaction; its thread starts a new instance at once (same id)."""
    ctx.fault("client_crash", process)
    committed_at_least(ctx, AFTER, 10, 70)


def coordinator_kill(ctx: RunContext) -> None:
    committed_at_least(ctx, BEFORE, 5, 60)
    tx = f"{TX_ID}-0"
    ctx.wait_until(f"FindCoordinator names the coordinator of {tx}", lambda: coordinator(ctx, tx) is not None, 30)
    h = ctx.fault("kill", f"txn-coordinator({tx})")
    old = tuple(h.broker_ids)
    _moved_then_crash(ctx, h, f"a broker other than {list(old)} coordinates {tx}",
                      lambda: coordinator(ctx, tx, old) not in (None, *old), 45, "j1")


def leader_kill(ctx: RunContext) -> None:
    committed_at_least(ctx, BEFORE, 5, 60)
    ctx.wait_until(f"{TOPIC}-0 has a leader", lambda: ctx.leader(TOPIC, 0) not in (None, -1), 30)
    old = ctx.leader(TOPIC, 0)
    h = ctx.fault("kill", f"broker:{old}")
    _moved_then_crash(ctx, h, f"{TOPIC}-0 has a new leader after the kill of {old}",
                      lambda: ctx.leader(TOPIC, 0) not in (None, -1, old), 40, "j0")


def _moved_then_crash(ctx: RunContext, h, what: str, moved, timeout_s: float, copier: str) -> None:
    """After a kill: wait until the cluster moved what the kill took (``moved``), keep the fault 8 s more,
    heal, wait for the copying to go on, then crash the client ``copier`` and start its replacement."""
    ctx.wait_until(what, moved, timeout_s)
    ctx.sleep(8)
    ctx.heal(h)
    committed_at_least(ctx, 2 * BEFORE + ctx.nemesis.workload.acknowledged() // 2, 5, 30)
    _crash_and_replace(ctx, copier)


def zombie_pause(ctx: RunContext) -> None:
    committed_at_least(ctx, BEFORE, 5, 60)
    wl = ctx.nemesis.workload
    ctx.action("zombie", lambda: wl.zombie("j0", 15.0), copier="j0", pause_s=15.0)
    committed_at_least(ctx, AFTER, 25, 90)     # the replacement copies on; the zombie thawed meanwhile


_TOPICS = [TopicSpec(TOPIC, PARTITIONS, 3, config={"min.insync.replicas": "2"}),
           TopicSpec(f"{TOPIC}-in", PARTITIONS, 3, config={"min.insync.replicas": "2"})]
_WORKLOAD = {"kind": "java-txn", "topic": TOPIC, "partitions": PARTITIONS, "chunk": 1500, "transaction_size": 20,
             "random_aborts": True, "min_committed_txns": 60}
_CHECKS = ("conformance", "txn-epochs", "expectations")
_COVERAGE = {"acked_after_heal": 0, "producers_alive": False}
# the same script on a cluster formatted with transaction.version 1 (h3's format-time feature levels): the Java
# client then speaks the v1 protocol and the epoch stays from one InitProducerId to the next
_VARIANTS = {"tv1": {"features": {"transaction.version": 1},
                     "description": "as the default run, on a cluster formatted with transaction.version=1"}}

SCENARIOS: list[Scenario] = [
    Scenario("java_txn.coordinator_kill",
             "Kafka's Java read-process-write client (TransactionalMessageCopier, 2 copiers, 1/3 of the "
             "transactions aborted); the transaction coordinator killed until another broker coordinates, "
             "then a copier's container killed and replaced (fenced); epochs per transaction read from the log",
             coordinator_kill, tags=("chaos",), topics=_TOPICS, workload=_WORKLOAD, checks=_CHECKS,
             coverage=_COVERAGE, min_version="4.0", max_duration_s=300, kraft=True, needs_roles=("controller",), variants=_VARIANTS),
    Scenario("java_txn.leader_kill",
             "Kafka's Java read-process-write client; the leader of jtx-0 killed and restarted, then a copier's "
             "container killed and replaced (fenced); epochs per transaction read from the log",
             leader_kill, tags=("chaos",), topics=_TOPICS, workload=_WORKLOAD, checks=_CHECKS,
             coverage=_COVERAGE, min_version="4.0", max_duration_s=300, kraft=True, needs_roles=("controller",), variants=_VARIANTS),
    Scenario("java_txn.zombie_pause",
             "Kafka's Java read-process-write client; a copier's container frozen mid-run, a replacement with the "
             "same transactional.id started (fencing it), the frozen one thawed 15 s later: a zombie whose "
             "writes carry the fenced epoch and must be refused",
             zombie_pause, tags=("chaos",), topics=_TOPICS, workload=_WORKLOAD, checks=_CHECKS,
             coverage=_COVERAGE, min_version="4.0", max_duration_s=300, kraft=True, needs_roles=("controller",),
             variants=_VARIANTS, faults_one_node=False),
]
