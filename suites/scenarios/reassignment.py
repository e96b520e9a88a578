"""7. Partition reassignment (seed 003; spec §7, KIP-455 ZooKeeper controller 2.4–3.9).

Four brokers; the workload topic ``chaos`` lives on brokers 1–3 only, so broker 4 starts with no
replica and a reassignment can move one onto it. Reassignments follow seed 003's flow of Kafka's
``kafka-reassign-partitions`` (generate / execute / verify / cancel, with its throttle), done from the
host through the protocol (harness/cluster/admin_ops.py: Metadata, ListPartitionReassignments,
AlterPartitionReassignments, IncrementalAlterConfigs; recorded ``via="api"``), or through the legacy
``/admin/reassign_partitions`` znode (``via="znode"``). Only ``target_down`` runs the tool itself
(``via="tool"``, harness/cluster/admin_tool.py): its subject there is the tool's own refusal, which is
NOT-APPLICABLE on an image without Kafka's tools.

What the spec says and the scripts check (besides the conformance checker, which judges every
write of the whole history):

* start (U1, §7.1): the topic znode gets ``RS' = distinct(target ++ ORS)``, ``AR = RS' − ORS``,
  ``RR = RS' − target``; then (A1) one leader-epoch bump with leader and ISR unchanged;
* completion (§7.4 B3–B6) once ``target ⊆ ISR``: the leader stays if it is in the target and online,
  else the first target replica online and in the ISR is elected; each removed replica leaves the
  ISR with one bump; the topic znode is rewritten last with ``RS = target``;
* ``ΔLE = #A1 + 1 (B3) + |RR ∩ ISR|`` (§7.5); a broker startup resumes a reassignment whose target
  contains it with another A1 (§7.7);
* cancel (§7.8): the replicas become ORS in target-first order (``[1,2,3] → [4,2,3]`` cancelled
  gives ``[2,3,1]``), one bump (B3);
* the API path rejects a target broker that is not alive (§7.3); the znode path does not validate,
  and such a reassignment waits until the broker is back (§7.7).

On KRaft (§9; every scenario here but ``znode``, which names ZooKeeper) the same flows run; where the
controllers differ the scripts ask ``ctx.semantics`` (reference/semantics.py) and read the writes from
the metadata log. What they rely on, from Apache Kafka's ``metadata/.../controller`` sources (3.9.0
and trunk of 2024-10, 1eb7644):

* the start writes ``RS = target ++ sorted(ORS − target)`` without a leader-epoch bump, the
  completion is one record, LE + 1 when it removes a replica (§9.2, §9.6; PartitionChangeBuilder
  ``triggerLeaderEpochBumpForReplicaReassignmentIfNeeded``);
* completion needs every target replica in the ISR, as in ZooKeeper mode (PartitionReassignmentReplicas
  ``maybeCompleteReassignment``: ``newTargetIsr.containsAll(newTargetReplicas)``), checked inside
  every partition change: the AlterPartition that adds the last target replica completes it. From 4.3
  (KAFKA-19975, apache/kafka#21114; read from the kafka-metadata 4.3.0 / 4.4.0 jars) every *adding*
  replica in the ISR is enough unless the target is smaller than the replica set (fewer added than
  removed): a target replica that was a replica before and is out of the ISR no longer holds it back
  (reference/semantics.py ``reassignment_completes``; ``kill_broker_mid``);
* a dead leader is replaced when its broker is fenced (``broker.session.timeout.ms``;
  ReplicationControlManager ``handleBrokerFenced``) by the first replica in RS order that is in the
  ISR and active (PartitionChangeBuilder ``electAnyLeader``); a broker's restart resumes nothing
  (``handleBrokerUnfenced`` elects leaderless partitions only), so no A1 at startup;
* AlterPartitionReassignments validates only that each target broker is registered
  (ReplicationControlManager ``validateManualPartitionAssignment``): a killed broker stays registered
  (fenced), so a reassignment onto it is accepted and waits; a broker id never registered is refused
  with INVALID_REPLICA_ASSIGNMENT ("no such broker is registered").

Slow reassignments (for cancel and a kill in the middle) copy a preloaded partition under a throttle
set as the tool's ``--throttle`` sets it (1000 B/s; topic-level throttled replicas and broker-level
rates) and are released by clearing the broker throttle rates.
"""

from __future__ import annotations

import random
import time

from confluent_kafka import Producer

from harness.cluster import admin_ops as ao
from harness.cluster import admin_tool
from harness.distributions.control_history import of_partition
from harness.errors import HarnessError
from harness.protocol import ProtocolClient, ProtocolError, UnsupportedApi
from harness.scenario.scenario import RunContext, Scenario, TopicSpec

from .common import T, state

BULK = "bulk"                     # a preloaded topic the throttled scenarios move
ASSIGN = {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}   # chaos on brokers 1-3; broker 4 holds nothing
THROTTLE = 1000                   # B/s
SMALL_FETCH = 16384               # replica.fetch.max.bytes and producer batch.size of the throttled scenarios
SLOW = {"replica.fetch.max.bytes": str(SMALL_FETCH)}
TOPICS = [TopicSpec(T, 3, 3, assignment=ASSIGN)]
BULK_TOPICS = TOPICS + [TopicSpec(BULK, 1, 3, assignment={0: [1, 2, 3]})]


# ---------------------------------------------------------------------------- helpers
def _assignment(ctx: RunContext, topic: str, p: int) -> tuple[list[int], list[int], list[int]]:
    a = ao.topic_assignment(ctx.cluster, topic).get(p)
    assert a is not None, f"{topic}-{p} not in its topic znode"
    return a


def _reassigning(ctx: RunContext, topic: str, p: int) -> bool:
    _, ar, rr = _assignment(ctx, topic, p)
    return bool(ar or rr)


def _preload(ctx: RunContext, topic: str, mb: int = 4) -> None:
    """Write ``mb`` MB to partition 0 of ``topic`` (acks=all) in batches of at most ``SMALL_FETCH`` bytes.

    Copying it under the 1 KB/s throttle then takes far longer than any scenario: the replication
    quota lets one fetch through whenever the rate over its window (11 × 1 s) is below the limit,
    and with ``replica.fetch.max.bytes = SMALL_FETCH`` such a fetch carries one batch. (With the
    default 1 MB fetch size a throttled follower still gets about 1 MB every 11 s.)"""
    p = Producer({**ctx.cluster.client_config(), "acks": "all", "linger.ms": 50,
                  "batch.size": SMALL_FETCH})
    value = b"r" * 10_000
    for _ in range(mb * 100):
        while True:
            try:
                p.produce(topic, value, partition=0)
                break
            except BufferError:
                p.poll(0.1)
        p.poll(0)
    left = p.flush(60)
    assert left == 0, f"preloading {topic}: {left} records not delivered in 60 s"


def _writes(ctx: RunContext, marker: int) -> list[dict]:
    """The controller's writes after ``marker`` from its own log (ZooKeeper's txn log, the KRaft
    metadata log; read once per check: copying the log out of the containers takes seconds)."""
    return ctx.writes_since(marker)


def _history(evs: list[dict], topic: str, p: int) -> tuple[list[tuple], list[dict]]:
    """(assignment writes (RS, AR, RR, seq) of p, state writes of p) among ``evs``."""
    topic_w = [(w["replicas"], w["adding"], w["removing"], w["seq"]) for w in of_partition(evs, "assignment", topic, p)]
    return topic_w, of_partition(evs, "state", topic, p)


def _expect_history(ctx: RunContext, evs: list[dict], topic: str, p: int, ors: list[int], target: list[int],
                    before: dict, leader: int | None, bumps: int, why: str, isr: list[int] | None = None) -> None:
    """The spec's expectations on the whole reassignment of ``topic-p`` from ``ors`` to ``target``,
    read from the controller's own log (``evs`` = :func:`_writes`): the start entry, the final entry,
    the leader (None: any target replica), the ISR (``isr``, the target unless given) and ΔLE when it
    completed."""
    tp, sem = f"{topic}-{p}", ctx.semantics
    topic_w, state_w = _history(evs, topic, p)
    if set(target) - set(ors):
        exp = sem.reassignment_start(ors, target)
        started = [(list(rs), list(ar), list(rr)) for rs, ar, rr, _ in topic_w if ar or rr]
        ctx.expect(f"{tp}: the reassignment started with RS={exp[0]} adding={exp[1]} removing={exp[2]} "
                   f"({sem.cite_start})", bool(started) and list(started[0]) == list(exp),
                   {"reassigning entries": started[:3]})
    final = topic_w[-1] if topic_w else None
    ctx.expect(f"{tp}: the assignment ends with replicas {target}, nothing adding or removing (§7.4 B6, §9.6)",
               final is not None and list(final[0]) == target and not final[1] and not final[2],
               {"last entry": final})
    # the partition state when the completion wrote the final assignment (ZooKeeper: after B3/B4; KRaft:
    # the same record); later leader-side ISR changes (a follower lagging under load) are not part of it
    done = [z for rs, ar, rr, z in topic_w if list(rs) == target and not ar and not rr]
    # a pure reorder writes the new order twice in one ZooKeeper controller event: U1, then (after B3) B6 (§7.5)
    reorder = set(target) == set(ors) and target != ors
    b6 = (done[1] if reorder and len(done) > 1 else done[0]) if done else None
    st = next((w for w in reversed(state_w) if b6 is None or w["seq"] <= b6), before)
    ctx.expect(f"{tp}: leader {leader if leader is not None else f'in {target}'} after the reassignment "
               "(§7.4 B3, §4.2, §9.4)", st["leader"] == leader if leader is not None else st["leader"] in target, st)
    want = sorted(target if isr is None else isr)
    ctx.expect(f"{tp}: ISR = {'the target ' if isr is None or want == sorted(target) else ''}{want} when it "
               "completed (§7.4 B4, §9.6)", sorted(st["isr"]) == want, st)
    ctx.expect(f"{tp}: leader epoch {before['leader_epoch']} + {bumps} ({why})",
               st["leader_epoch"] == before["leader_epoch"] + bumps,
               {"before": before["leader_epoch"], "after": st["leader_epoch"],
                "epochs": [w["leader_epoch"] for w in state_w]})


def _wait_complete(ctx: RunContext, plan: dict, timeout_s: float = 150.0) -> None:
    """Wait until verify (the tool's ``--verify`` from the host) reports every partition of the plan
    complete (as seed 003 step 4)."""
    ctx.wait_until("verify (ListPartitionReassignments + Metadata): every partition completed",
                   lambda: all(s == "complete" for s in ao.reassign_verify(ctx.cluster, plan).values()),
                   timeout_s, interval_s=1.0)


# ---------------------------------------------------------------------------- scenarios
def move_replicas(ctx: RunContext) -> None:
    """Seed 003's flow: generate a plan for chaos over brokers 1-4, execute it, verify (the tool's
    --generate / --execute / --verify done from the host; the start index drawn from the run's seed)."""
    current, proposed = ao.reassign_generate(ctx.cluster, [T], [1, 2, 3, 4],
                                             rng=random.Random(ctx.seed))   # read-only: not an action
    now = {(e["topic"], e["partition"]): e["replicas"] for e in current["partitions"]}
    ctx.expect("generate reports the current assignment", now == {(T, p): r for p, r in ASSIGN.items()}, ao.by_name(now))
    targets = ao.plan_targets(proposed)
    ctx.expect("generate proposes 3 distinct replicas on brokers 1-4 for every partition, broker 4 included",
               set(targets) == {(T, p) for p in ASSIGN}
               and all(len(set(r)) == 3 and set(r) <= {1, 2, 3, 4} for r in targets.values())
               and any(4 in r for r in targets.values()), ao.by_name(targets))
    plan = ao.make_plan(targets)
    before = {p: state(ctx, p) for p in ASSIGN}
    marker = ctx.history_marker()
    ctx.action("reassign", lambda: ao.reassign_execute(ctx.cluster, plan), **ao.action_params(plan, via="api"))
    _wait_complete(ctx, plan)
    evs = _writes(ctx, marker)
    for (_, p), target in sorted(targets.items()):
        ors, b = ASSIGN[p], before[p]
        if target == ors:
            # generate may propose a partition's current replicas (its start index is random): nothing
            # to move, and what the controller writes for such a no-op is not specified here
            ctx.expect(f"{T}-{p}: generate kept its replicas {ors}; they are unchanged",
                       _assignment(ctx, T, p) == (ors, [], []), _assignment(ctx, T, p))
            continue
        bumps, why = ctx.semantics.reassignment_bumps(ors, target)
        _expect_history(ctx, evs, T, p, ors, target, b, ctx.semantics.reassignment_leader(b["leader"], target),
                        bumps, why)


def via_znode(ctx: RunContext) -> None:
    """The legacy path: write /admin/reassign_partitions; the controller carries it out and deletes
    the node. chaos-1 [2,3,1] → [3,4,2]: leader 2 stays (it is in the target), 1 is removed."""
    ors, target = ASSIGN[1], [3, 4, 2]
    plan = ao.make_plan({(T, 1): target})
    before = state(ctx, 1)
    marker = ctx.history_marker()
    ctx.action("reassign", lambda: ao.write_reassign_znode(ctx.cluster, plan), **ao.action_params(plan, via="znode"))
    ctx.wait_until(f"{T}-1: replicas {target} and /admin/reassign_partitions deleted by the controller (§1.6)",
                   lambda: _assignment(ctx, T, 1) == (target, [], []) and ao.reassign_znode(ctx.cluster) is None,
                   90, interval_s=0.5)
    _expect_history(ctx, _writes(ctx, marker), T, 1, ors, target, before, before["leader"],
                    *ctx.semantics.reassignment_bumps(ors, target))


def _expect_replica_deleted(ctx: RunContext, broker: int, tp: str, why: str, timeout_s: float = 60.0) -> None:
    """Expect broker ``broker`` to stop holding a replica of ``tp`` within ``timeout_s``, as the broker
    itself says through DescribeLogDirs (its log manager drops the log when it renames the directory
    ``<tp>.<id>-delete``; harness/protocol/admin_messages.py). On failure the detail holds the broker's
    answer and its log lines about ``tp``; a broker that never answers is a harness problem (UNKNOWN)."""
    topic, part = tp.rsplit("-", 1)
    port = ctx.cluster.brokers[broker].host_port
    deadline = time.monotonic() + timeout_s
    hosted, last_err = None, None
    while True:
        try:
            with ProtocolClient(port=port, timeout=5.0) as c:
                hosted = c.describe_log_dirs({topic: [int(part)]}).hosted()
        except UnsupportedApi:
            raise
        except ProtocolError as e:
            last_err = str(e)
        gone = hosted is not None and (topic, int(part)) not in hosted
        if gone or time.monotonic() >= deadline:
            break
        ctx.sleep(1.0)
    if hosted is None:
        raise HarnessError(f"broker {broker} never answered DescribeLogDirs in {timeout_s:.0f} s: {last_err}")
    detail = None if gone else {"describe_log_dirs": sorted(f"{t}-{p}" for t, p in hosted),
                                "log": [ln for ln in ctx.cluster.brokers[broker].logs(tail=3000).splitlines()
                                        if tp in ln][-25:]}
    ctx.expect(f"broker {broker} deleted its {tp} replica ({why})", gone, detail)


def controller_not(ctx: RunContext, broker: int, attempts: int = 6) -> None:
    """Make sure killing ``broker`` is not also a controller failover where one would write partition
    states of its own (ZooKeeper mode, §2.5: leader -1 then an election, A1 on every reassignment in
    progress), which would blur the epoch accounting: delete /controller until another broker wins the
    election (seed 004's trick; each round is a recorded fault). A KRaft quorum leader that dies writes
    no partition state by itself (§9.9: the next one replays the metadata log; it resumes nothing):
    nothing to do there (``ctx.semantics.failover_rewrites_partitions``)."""
    if not ctx.semantics.failover_rewrites_partitions:
        return
    ctx.wait_until("a controller is elected", lambda: ctx.controller() is not None, 30)
    for _ in range(attempts):
        c = ctx.controller()
        if c is not None and c != broker:
            return
        e0 = ctx.view.controller_epoch() or 0
        ctx.fault("delete_controller_znode", "controller")
        ctx.wait_until("a controller is re-elected", lambda: ctx.controller() is not None
                       and (ctx.view.controller_epoch() or 0) > e0, 30)
    ctx.expect(f"broker {broker} is not the controller", ctx.controller() != broker, ctx.controller())


def _start_throttled(ctx: RunContext, target: list[int]) -> tuple[dict, dict, int]:
    """Preload bulk-0 and start its reassignment to ``target`` under a throttle (set as the tool's
    ``--throttle`` sets it); returns
    (plan, state before, history marker) once the assignment shows it in progress."""
    _preload(ctx, BULK)
    plan = ao.make_plan({(BULK, 0): target})
    before = state(ctx, 0, BULK)
    marker = ctx.history_marker()
    ctx.action("reassign", lambda: ao.reassign_execute(ctx.cluster, plan, throttle=THROTTLE),
               **ao.action_params(plan, via="api", throttle=THROTTLE))
    exp = ctx.semantics.reassignment_start([1, 2, 3], target)
    ctx.wait_until(f"{BULK}-0: the assignment shows RS={exp[0]} adding={exp[1]} removing={exp[2]} "
                   f"({ctx.semantics.cite_start})",
                   lambda: _assignment(ctx, BULK, 0) == exp, 30)
    return plan, before, marker


def cancel(ctx: RunContext) -> None:
    """Cancel an in-flight reassignment bulk-0 [1,2,3] → [4,2,3] (held back by a throttle): the start
    lists RS = [4, 2, 3, 1] (§7.1 U1; §9.6 T ++ sorted(current − T)); the cancel leaves ORS in the
    order it has in RS, [2, 3, 1] (§7.8, §9.6: RS − adding), keeps leader 1 and removes broker 4's replica."""
    sem = ctx.semantics
    plan, before, marker = _start_throttled(ctx, [4, 2, 3])
    ctx.sleep(3)
    states = ao.reassign_verify(ctx.cluster, plan)
    ctx.expect(f"{BULK}-0: still in progress under the throttle before the cancel", states[(BULK, 0)] == "in_progress",
               ao.by_name(states))
    ctx.expect(f"{BULK}-0: broker 4 not in the ISR yet", 4 not in ctx.isr(BULK, 0), state(ctx, 0, BULK))
    ctx.action("cancel_reassign", lambda: ao.reassign_cancel(ctx.cluster, plan), **ao.action_params(plan, via="api"))
    ctx.wait_until(f"{BULK}-0: replicas [2, 3, 1] after the cancel (§7.8, §9.6: ORS in target-first order)",
                   lambda: _assignment(ctx, BULK, 0) == ([2, 3, 1], [], []), 30)
    st = state(ctx, 0, BULK)
    ctx.expect(f"{BULK}-0: leader 1 kept (it is in ORS and online, §7.8 B3, §9.4)", st["leader"] == before["leader"] == 1, st)
    ctx.expect(f"{BULK}-0: ISR back to [1, 2, 3]", sorted(st["isr"]) == [1, 2, 3], st)
    start, why = sem.reassignment_start_bumps([1, 2, 3], [4, 2, 3])
    ctx.expect(f"{BULK}-0: leader epoch + {start + 1} in all ({why}; one at the cancel)",
               st["leader_epoch"] == before["leader_epoch"] + start + 1, {"before": before, "after": st})
    topic_w, state_w = _history(_writes(ctx, marker), BULK, 0)
    ctx.expect(f"{BULK}-0: broker 4 never entered the ISR", all(4 not in w["isr"] for w in state_w),
               [w["isr"] for w in state_w])
    ctx.expect(f"{BULK}-0: the assignment went [4,2,3,1]+AR[4]+RR[1] → [2,3,1]",
               [list(w[0]) for w in topic_w][:1] == [[4, 2, 3, 1]] and bool(topic_w) and list(topic_w[-1][0]) == [2, 3, 1],
               [w[:3] for w in topic_w])
    v = ao.kafka_version(ctx.cluster)
    known = (" — before 3.5 a known Kafka bug, KAFKA-13972: the broker ignores a StopReplica whose leader "
             "epoch equals its own, leaving a stray replica" if v is not None and v < (3, 5) else "")
    _expect_replica_deleted(ctx, 4, f"{BULK}-0", "no longer a replica: StopReplica delete=true, §7.8 U3; "
                            "the metadata log, §9.6" + known)
    ctx.wait_until("no reassignment listed any more (ListPartitionReassignments)",
                   lambda: not ao.reassign_list(ctx.cluster), 60, interval_s=1.0)


def kill_broker_mid(ctx: RunContext) -> None:
    """bulk-0 [1,2,3] → [1,3,4] under a throttle; the leader (1, in the target) is killed mid-way.

    Both modes: the start lists RS' = [1,3,4,2] (§7.1 U1, §9.6); the dead leader is replaced by the
    first of RS' online and in the ISR, 3 (ZK: the offline election, §4.1, §7.10; KRaft: the fencing
    of 1 after broker.session.timeout.ms, §9.3, ReplicationControlManager.handleBrokerFenced →
    PartitionChangeBuilder.electAnyLeader, RS order); with the throttle cleared, 4 catches up from
    3 and joins the ISR. ZK and KRaft until 4.2: the reassignment cannot complete without 1 (every
    target replica must be in the ISR: §7.6; KRaft PartitionReassignmentReplicas.maybeCompleteReassignment,
    ``newTargetIsr.containsAll(newTargetReplicas)``); after 1 restarts and rejoins the ISR it completes
    (ZK: resumed at 1's startup with A1, §7.7, then B3/B4/B6; KRaft: the AlterPartition adding 1 to
    the ISR completes it in the same record, §9.6). KRaft from 4.3 (KAFKA-19975): the adding replica 4
    in the ISR is enough, so the AlterPartition adding 4 completes it with 1 still down, ISR [3, 4], and 1
    rejoins later (``Semantics.reassignment_completes``). Leader 3 stays (it is in the target).
    ΔLE: ZK 5 (A1, the election, A1 at 1's startup, B3, B4 for 2); KRaft 2 (the election, the
    completion removing 2: §9.2)."""
    sem = ctx.semantics
    ors, target = [1, 2, 3], [1, 3, 4]
    controller_not(ctx, 1)
    plan, before, marker = _start_throttled(ctx, target)
    rs = sem.reassignment_start(ors, target)[0]
    ctx.expect(f"{BULK}-0: leader 1 before the kill", before["leader"] == 1, before)
    h = ctx.fault("kill", "broker:1")
    ctx.wait_until(f"{BULK}-0: leader 3, the first of RS' {rs} online and in the ISR (§4.1, §7.10; §9.3, §9.4)",
                   lambda: ctx.leader(BULK, 0) == 3, 40)
    # every other broker must be listed to have its throttle cleared (broker 4's follower throttle above
    # all). KRaft: a controller failover (broker 1 may lead the quorum) can fence a broker-only node
    # whose heartbeats reach the new quorum leader only after broker.session.timeout.ms from its
    # activation (ClusterControlManager.activate → BrokerHeartbeatManager.register); seen on 4.1.2:
    # broker 4 fenced with 1, unfenced 0.9 s later
    others = [b for b in ctx.cluster.broker_ids if b != 1]
    ctx.wait_until(f"brokers {others} listed", lambda: set(others) <= set(ctx.live_brokers()), 30)
    ctx.action("set_config", lambda: ao.clear_replication_throttle(ctx.cluster, others),
               topic=None, brokers=others, config={k: None for k in ao.THROTTLE_KEYS})
    ctx.wait_until(f"{BULK}-0: broker 4 caught up and joined the ISR once unthrottled (§5.8)",
                   lambda: 4 in ctx.isr(BULK, 0), 90)
    # with 1 down the ISR is the rest of RS'; whether that completes it is the controller's rule
    # (KRaft from 4.3: the adding replica 4 in the ISR is enough, KAFKA-19975)
    adding, removing = [r for r in rs if r not in ors], [r for r in rs if r not in target]
    completes, done_isr, why_done = sem.reassignment_completes(
        rs, adding, removing, [r for r in rs if r != 1], ctx.recorder.metadata.get("kafka_version"))
    if completes:
        ctx.wait_until(f"{BULK}-0: reassignment completed with broker 1 (in the target, not adding) down "
                       f"({why_done})", lambda: _assignment(ctx, BULK, 0) == (target, [], []), 30)
        waited = False
    else:
        ctx.sleep(2)
        waited = _reassigning(ctx, BULK, 0)
        if completes is False:   # None: a foreign image, either is some Apache release's behaviour
            ctx.expect(f"{BULK}-0: still being reassigned while broker 1 (in the target) is down ({why_done})",
                       waited, _assignment(ctx, BULK, 0))
    ctx.heal(h)
    ctx.action("set_config", lambda: ao.clear_replication_throttle(ctx.cluster, [1]),
               topic=None, brokers=[1], config={k: None for k in ao.THROTTLE_KEYS})
    ctx.wait_until(f"{BULK}-0: reassignment completed after broker 1 came back",
                   lambda: _assignment(ctx, BULK, 0) == (target, [], []), 120)
    moved, why = sem.reassignment_bumps(ors, target)
    resumed, why_resume = (sem.reassignment_resume_bumps(1) if waited
                           else (0, "none for 1's startup: it had completed"))
    _expect_history(ctx, _writes(ctx, marker), BULK, 0, ors, target, before, 3, moved + 1 + resumed,
                    f"{why}; one for the election replacing 1; {why_resume}",
                    isr=target if waited else done_isr)
    _wait_complete(ctx, plan, 60)


LEGACY_ROLE = "zookeeper"      # the nodes that hold /admin/reassign_partitions (Distribution.roles)


def _refused(ctx: RunContext, fn, plan: dict, via: str) -> str | None:
    """Run the reassignment ``fn`` as a recorded action; the refusal's text, or None when accepted."""
    try:
        ctx.action("reassign", fn, **ao.action_params(plan, via=via))
    except ao.AdminOpError as e:
        if via == "api" and not isinstance(e, ao.ReassignmentRefused):
            raise                      # no answer from the controller: a harness problem, not a refusal
        return str(e)
    return None


def target_down(ctx: RunContext) -> None:
    """chaos-2 [3,1,2] → [4,1,2] while broker 4 is down.

    The API part runs on every distribution: the tool refuses (it checks the ids against DescribeCluster,
    which lists live brokers only — ZK: registered, KRaft: registered and unfenced: "Unknown broker id
    4"; Kafka's tool run in a broker container, ``via="tool"``: NOT-APPLICABLE where the image has no
    tools, harness/cluster/admin_tool.py ``unavailable``); AlterPartitionReassignments sent directly meets the
    controller's own check. A broker id never
    registered is refused by both (INVALID_REPLICA_ASSIGNMENT); for broker 4, down, ZooKeeper mode wants
    adding replicas live (§7.3, KafkaController.validateReplicas: INVALID_REPLICA_ASSIGNMENT), KRaft
    only registered (§9.6, ReplicationControlManager.validateManualPartitionAssignment) and a killed
    broker stays registered, fenced (§9.3): the request is accepted and the reassignment waits.

    The znode part runs only where the cluster has ZooKeeper nodes (``ctx.has_role(LEGACY_ROLE)``) and
    the API refused: the legacy /admin/reassign_partitions path validates nothing and starts it anyway
    (§7.3). Either way the started reassignment stays in progress while 4 is down (§7.6, §9.6), and
    completes after 4 restarts (ZK: resumed at its startup with A1, §7.7; KRaft: once 4 joins the ISR,
    the completion inside that AlterPartition, §9.6)."""
    sem = ctx.semantics
    ors, target = ASSIGN[2], [4, 1, 2]
    plan = ao.make_plan({(T, 2): target})
    h = ctx.fault("kill", "broker:4")
    ctx.wait_until("broker 4 no longer listed (ZK: deregistered, §5.2; KRaft: fenced, §9.3)",
                   lambda: 4 not in ctx.live_brokers(), 40)
    # the subject here is Kafka's tool itself: it checks the broker ids against the live cluster
    # ("Unknown broker id 4") before the controller's own validation is reached. An image without the
    # tools (a foreign broker) cannot be asked: that expectation is NOT-APPLICABLE, the rest runs
    no_tool = admin_tool.unavailable(ctx.cluster)
    if no_tool is None:
        refused = _refused(ctx, lambda: admin_tool.reassign_execute(ctx.cluster, plan), plan, "tool")
        ctx.expect("the tool refuses a reassignment onto a dead broker", refused is not None, refused)
    else:
        ctx.expect("the tool refuses a reassignment onto a dead broker: NOT-APPLICABLE", True,
                   {"not_applicable": no_tool})
    ghost = [9, 1, 2]
    refused = _refused(ctx, lambda: ao.alter_reassignment(ctx.cluster, T, 2, ghost),
                       ao.make_plan({(T, 2): ghost}), "api")
    ctx.expect("AlterPartitionReassignments onto broker 9, never registered: INVALID_REPLICA_ASSIGNMENT "
               "(§7.3; §9.6: 'no such broker is registered')",
               refused is not None and "INVALID_REPLICA_ASSIGNMENT" in refused, refused)
    ctx.expect(f"{T}-2: assignment unchanged after the refusals", _assignment(ctx, T, 2) == (ors, [], []),
               _assignment(ctx, T, 2))
    before = state(ctx, 2)
    marker = ctx.history_marker()
    accepts = sem.reassignment_accepts_target(registered=sem.killed_broker_registered, alive=False)
    refused = _refused(ctx, lambda: ao.alter_reassignment(ctx.cluster, T, 2, target), plan, "api")
    ctx.expect(f"AlterPartitionReassignments onto broker 4, down: "
               f"{'accepted' if accepts else 'INVALID_REPLICA_ASSIGNMENT'} ({sem.cite_target_check})",
               refused is None if accepts else (refused is not None and "INVALID_REPLICA_ASSIGNMENT" in refused),
               refused)
    via = "api" if refused is None else None
    if via is None and ctx.has_role(LEGACY_ROLE):
        ctx.action("reassign", lambda: ao.write_reassign_znode(ctx.cluster, plan), **ao.action_params(plan, via="znode"))
        via = "znode"
    if via is None:     # refused, and no legacy path to try on this distribution
        ctx.expect(f"{T}-2: assignment unchanged", _assignment(ctx, T, 2) == (ors, [], []), _assignment(ctx, T, 2))
        ctx.heal(h)
        return
    exp = sem.reassignment_start(ors, target)
    ctx.wait_until(f"{T}-2: the {via} path started it: RS={exp[0]} adding={exp[1]} removing={exp[2]} "
                   f"({sem.cite_start})", lambda: _assignment(ctx, T, 2) == exp, 30)
    znode = (lambda: ao.reassign_znode(ctx.cluster)) if via == "znode" else (lambda: None)
    t0 = time.monotonic()
    ctx.sleep(10)
    ctx.expect(f"{T}-2: still in progress {time.monotonic() - t0:.0f} s later with broker 4 down (§7.6, §9.6)",
               _assignment(ctx, T, 2) == exp and 4 not in ctx.isr(T, 2)
               and (via != "znode" or znode() is not None), {"assignment": _assignment(ctx, T, 2),
                                                              "state": state(ctx, 2)})
    ctx.heal(h)
    ctx.wait_until(f"{T}-2: completed after broker 4 restarted"
                   + ("; /admin/reassign_partitions deleted" if via == "znode" else ""),
                   lambda: _assignment(ctx, T, 2) == (target, [], []) and znode() is None, 90)
    moved, why = sem.reassignment_bumps(ors, target)
    resumed, why_resume = sem.reassignment_resume_bumps(1)
    _expect_history(ctx, _writes(ctx, marker), T, 2, ors, target, before,
                    sem.reassignment_leader(before["leader"], target), moved + resumed, f"{why}; {why_resume}")


_WL = {"topic": T, "partitions": 3}
SCENARIOS: list[Scenario] = [
    Scenario("reassignment.move_replicas", "seed 003 flow: --generate over brokers 1-4, --execute, --verify",
             move_replicas, tags=("conformance", "chaos"), brokers=4, topics=TOPICS, workload=_WL,
             min_version="2.6", max_duration_s=240, kraft=True, reads_controller_log=True),
    Scenario("reassignment.znode", "legacy /admin/reassign_partitions: chaos-1 [2,3,1] → [3,4,2]",
             via_znode, tags=("conformance", "chaos"), brokers=4, topics=TOPICS, workload=_WL,
             min_version="2.4", max_duration_s=180, reads_controller_log=True),
    Scenario("reassignment.kill_broker_mid", "throttled bulk-0 → [1,3,4]; leader 1 killed mid-way; "
             "completes after restart", kill_broker_mid, tags=("conformance", "chaos"), brokers=4,
             topics=BULK_TOPICS, workload=_WL, broker_config=SLOW, min_version="2.6", max_duration_s=300,
             kraft=True, reads_controller_log=True),
    Scenario("reassignment.cancel", "throttled bulk-0 [1,2,3] → [4,2,3] cancelled: replicas [2,3,1]",
             cancel, tags=("conformance", "chaos"), brokers=4, topics=BULK_TOPICS, workload=_WL, broker_config=SLOW,
             min_version="2.6", max_duration_s=240, kraft=True, reads_controller_log=True),
    Scenario("reassignment.target_down", "target broker 4 down: the tool refuses; AlterPartitionReassignments "
             "refused (ZK: not live) or accepted (KRaft: registered, fenced); the znode path (ZooKeeper only) "
             "starts it anyway; it waits and completes after restart", target_down, tags=("conformance", "chaos"),
             brokers=4, topics=TOPICS, workload=_WL, min_version="2.6", max_duration_s=240, kraft=True, reads_controller_log=True),
]
