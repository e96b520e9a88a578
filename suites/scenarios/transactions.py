"""Transactions (issue 17): a transactional producer (``transactional.id``, each transaction sending
to >= 2 partitions, 20 % aborted on purpose) and a read_committed consumer, judged by the transaction
checker (harness/checkers/txn.py, docs/transactions.md) besides the conformance checker. Every run
must commit >= 200 transactions (coverage need ``committed_txns``; fewer is UNKNOWN, not FAIL).

``transactions.leader_kill`` — the leader of a data partition is killed (SIGKILL) mid-run.
``transactions.coordinator_kill`` — the transaction coordinator of the producer's ``transactional.id``
is killed mid-run (target ``txn-coordinator(<id>)``: the broker FindCoordinator names at apply time,
the leader of the id's ``__transaction_state`` partition).
``transactions.coordinator_pause`` — the coordinator is frozen (SIGSTOP of its cgroup) until another
broker coordinates the id, then thawed: for a moment it still believes it is the coordinator.
``transactions.coordinator_partition`` — the coordinator is cut from every other node (clients still
reach it) until another broker coordinates the id, then reconnected.
``transactions.zombie_fenced`` — a second producer with the same ``transactional.id`` starts mid-run and
fences the first: nothing the fenced one begins afterwards may commit or become visible.

One flow for ZooKeeper mode and KRaft: what moves the coordinator is the same in both (a broker that
stops answering loses the leadership of its ``__transaction_state`` partitions: in ZooKeeper mode when
its session expires, ``zookeeper.session.timeout.ms`` 6 s; in KRaft when the controller fences it after
``broker.session.timeout.ms`` 9 s without a heartbeat, ``BrokerHeartbeatManager``), and FindCoordinator
answers from each broker's metadata cache in both (``KafkaApis.getCoordinator``: the leader of
``partitionFor(id)`` of ``__transaction_state``). The scenarios ask FindCoordinator through the other
brokers first (a broker cut off from the cluster still names itself).

The load is waited for, not assumed: the fault comes once 80 transactions committed (8-30 s in), and
the run goes on after the heal until 230 did (10-60 s): a busy machine commits fewer a second.

Tagged ``chaos``; ``transactions.coordinator_kill`` is also ``conformance``: the certificate's evidence for
the ``transactions`` capability (harness/certify/capabilities.py selects conformance scenarios), one run of
about a minute.
"""

from __future__ import annotations

import time

from harness.scenario.scenario import RunContext, Scenario, TopicSpec

TOPIC = "txn"
PARTITIONS = 4
TXN_STATE = "__transaction_state"
TXN_STATE_PARTITIONS = 3  # transaction.state.log.num.partitions of the test clusters (harness/cluster/cluster.py)
TX_ID = f"kc-tx-{TOPIC}"
BEFORE, AFTER = 80, 230     # transactions committed before the fault / by the end (the coverage needs 200)


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode`` (UTF-16 code units), as a signed 32-bit int."""
    h = 0
    for unit in s.encode("utf-16-be").hex(" ", 2).split():
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def txn_state_partition(transactional_id: str, partitions: int = TXN_STATE_PARTITIONS) -> int:
    """The ``__transaction_state`` partition of a transactional id: Kafka's
    ``TransactionStateManager.partitionFor`` = ``Utils.abs(transactionalId.hashCode) % partitions``;
    its leader is the transaction coordinator FindCoordinator names."""
    h = java_string_hash(transactional_id)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def _partitions(ctx: RunContext) -> int:
    cfg = ctx.cluster.broker_config if isinstance(getattr(ctx.cluster, "broker_config", None), dict) else {}
    return int(cfg.get("transaction.state.log.num.partitions", TXN_STATE_PARTITIONS))


def committed_at_least(ctx: RunContext, n: int, at_least_s: float, at_most_s: float) -> None:
    """Sleep ``at_least_s``, then on until the workload committed ``n`` transactions (``at_most_s`` in all):
    the load the coverage need asks for on a slow or busy machine too. No expectation: too few is the
    coverage's UNKNOWN, not a finding."""
    ctx.sleep(at_least_s)
    wl = ctx.nemesis.workload
    deadline = time.monotonic() + max(0.0, at_most_s - at_least_s)
    while wl is not None and wl.acknowledged() < n and time.monotonic() < deadline:
        ctx.sleep(0.5)


def _kill_and_wait(ctx: RunContext, topic: str, partition: int, what: str) -> None:
    ctx.wait_until(f"{topic}-{partition} has a leader", lambda: ctx.leader(topic, partition) not in (None, -1), 30)
    old = ctx.leader(topic, partition)
    h = ctx.fault("kill", f"broker:{old}")
    ctx.wait_until(f"{topic}-{partition} has a new leader after the kill of {what} {old}",
                   lambda: ctx.leader(topic, partition) not in (None, -1, old), 40)
    ctx.sleep(10)           # transactions against the new leader while the old one is down
    ctx.heal(h)
    committed_at_least(ctx, AFTER, 10, 60)   # and after it rejoined


def leader_kill(ctx: RunContext) -> None:
    committed_at_least(ctx, BEFORE, 8, 30)
    _kill_and_wait(ctx, TOPIC, 0, "the leader")


def coordinator(ctx: RunContext, last: tuple[int, ...] = ()) -> int | None:
    """The broker FindCoordinator names for the workload's transactional id (None on an error answer);
    the brokers in ``last`` are asked after the others."""
    _port, info = ctx.cluster.coordinator(TX_ID, "transaction", last=last)
    return info.node_id if info.error is None and info.node_id >= 0 else None


def _coordinator_fault(ctx: RunContext, fault: str, **params) -> None:
    """``fault`` on the transaction coordinator (resolved at apply time), held until FindCoordinator,
    asked through the other brokers, names another broker, then 8 s more; healed, then 10 s of
    transactions after."""
    ctx.sleep(8)
    ctx.wait_until(f"FindCoordinator names the coordinator of {TX_ID}", lambda: coordinator(ctx) is not None, 30)
    p = txn_state_partition(TX_ID, _partitions(ctx))
    ctx.recorder.emit("phase", name="txn.coordinator", transactional_id=TX_ID, partition=p,
                      broker=coordinator(ctx), partition_leader=ctx.leader(TXN_STATE, p))
    h = ctx.fault(fault, f"txn-coordinator({TX_ID})", **params)
    old = tuple(h.broker_ids)
    ctx.wait_until(f"a broker other than {list(old)} coordinates {TX_ID}",
                   lambda: coordinator(ctx, old) not in (None, *old), 45)
    ctx.sleep(8)            # transactions with the new coordinator while the old one is out
    ctx.heal(h)
    committed_at_least(ctx, AFTER, 10, 60)   # and after it is back


def coordinator_kill(ctx: RunContext) -> None:
    _coordinator_fault(ctx, "kill")


def coordinator_pause(ctx: RunContext) -> None:
    _coordinator_fault(ctx, "pause")


def coordinator_partition(ctx: RunContext) -> None:
    _coordinator_fault(ctx, "partition")


def zombie_fenced(ctx: RunContext) -> None:
    committed_at_least(ctx, AFTER, 35, 80)   # the second producer starts at 15 s; both run, the first fenced


RW_TOPIC, RW_PARTITIONS, RW_PRODUCERS = "rw", 8, 5


def read_write_crash(ctx: RunContext) -> None:
    """Four client crashes 6 s apart once 40 read-write transactions committed (each a new process with
    the crashed one's transactional.id), then on until 250 committed in all."""
    committed_at_least(ctx, 40, 6, 30)
    for _ in range(4):
        ctx.fault("crash", "random-producer")
        ctx.sleep(6)
    committed_at_least(ctx, 250, 4, 40)


_TOPICS = [TopicSpec(TOPIC, PARTITIONS, 3, config={"min.insync.replicas": "2"})]
_WORKLOAD = {"kind": "txn", "topic": TOPIC, "partitions": PARTITIONS, "rate": 20.0, "abort_ratio": 0.2,
             "sends_per_txn": 4, "txn_partitions": 2}
_CHECKS = ("conformance", "transactions", "expectations")
# a transactional workload has no plain sends: no acknowledged write per partition is counted after the heal;
_COVERAGE = {"acked_after_heal": 0, "committed_txns": 200}

SCENARIOS: list[Scenario] = [
    Scenario("transactions.leader_kill",
             "transactional producer (2+ partitions per transaction, 20 % aborted) and a read_committed "
             "consumer; the leader of txn-0 killed mid-run and restarted",
             leader_kill, tags=("chaos",), topics=_TOPICS, workload=_WORKLOAD, checks=_CHECKS,
             coverage=_COVERAGE, min_version="2.5", max_duration_s=180, kraft=True),
    Scenario("transactions.coordinator_kill",
             "transactional producer and a read_committed consumer; the transaction coordinator "
             "(txn-coordinator(<id>): FindCoordinator's answer) killed until another broker coordinates, "
             "then restarted",
             coordinator_kill, tags=("conformance", "chaos"), topics=_TOPICS, workload=_WORKLOAD, checks=_CHECKS,
             coverage=_COVERAGE, min_version="2.5", max_duration_s=180, kraft=True),
    Scenario("transactions.coordinator_pause",
             "transactional producer and a read_committed consumer; the transaction coordinator paused until "
             "another broker coordinates the id, then unpaused (a stale coordinator for a moment)",
             coordinator_pause, tags=("chaos",), topics=_TOPICS, workload=_WORKLOAD, checks=_CHECKS,
             coverage=_COVERAGE, min_version="2.5", max_duration_s=180, kraft=True),
    Scenario("transactions.coordinator_partition",
             "transactional producer and a read_committed consumer; the transaction coordinator cut from every "
             "other node (clients still reach it) until another broker coordinates the id, then reconnected",
             coordinator_partition, tags=("chaos",), topics=_TOPICS, workload=_WORKLOAD, checks=_CHECKS,
             coverage=_COVERAGE, min_version="2.5", max_duration_s=180, kraft=True),
    Scenario("transactions.zombie_fenced",
             "a second producer with the same transactional.id starts 15 s in and fences the first; the "
             "fenced one's later transactions must neither commit nor become visible",
             zombie_fenced, tags=("chaos",), topics=_TOPICS, workload={**_WORKLOAD, "zombie_at_s": 15.0},
             checks=_CHECKS, coverage={**_COVERAGE, "producers_alive": False}, min_version="2.5", kraft=True,
             max_duration_s=180),
    Scenario("transactions.read_write_crash",
             "5 transactional producers with read-write transactions (1-4 polls / sends over 8 partitions, "
             "consumed offsets committed in the transaction); 4 client crashes, each replaced by a new producer "
             "with the same transactional.id: no input record consumed by two committed transactions",
             read_write_crash, tags=("chaos",), topics=[TopicSpec(RW_TOPIC, RW_PARTITIONS, 3,
                                                                  config={"min.insync.replicas": "2"})],
             workload={"kind": "txn", "topic": RW_TOPIC, "partitions": RW_PARTITIONS, "producers": RW_PRODUCERS,
                       "max_txn_length": 4, "rate": 8.0, "abort_ratio": 0.1, "consumers": 1},
             checks=_CHECKS, coverage={**_COVERAGE, "committed_txns": 200}, min_version="2.5", kraft=True,
             max_duration_s=150),
]
