"""Share groups (KIP-932, queues for Kafka; issue 40): an idempotent producer and three members of one
share group acknowledging explicitly (accept, and a seeded 5 % release / 1 % reject; harness/workload/
share.py), judged by the share checker (harness/checkers/share.py, docs/share-groups.md: every
acknowledged write accepted, rejected or archived; no record held by two acquisitions at once; a
released or timed-out record delivered again; nothing delivered after a confirmed accept / reject;
delivery counts never going down) besides the conformance and durability checkers.

The group's lock is 15 s (``share.record.lock.duration.ms``, the broker's minimum by default) so a
record whose holder vanished comes back within a scenario.

``share.member_crash`` — member ``m1`` ends holding a batch it never acknowledged (close() leaves the
group: the broker releases its acquisitions); the others get those records again.
``share.member_pause`` — ``m1`` holds its next batch un-acknowledged for 25 s, past the lock: the
records go to the others, and its late acknowledgements come back refused.
``share.leader_kill`` — the leader of partition 0 SIGKILLed (the share-partition moves to the new
leader, which reloads its state from ``__share_group_state``), restarted.
``share.coordinator_kill`` — the group coordinator of the share group (FindCoordinator key type group:
the leader of the group's ``__consumer_offsets`` partition) SIGKILLed, restarted.
``share.state_coordinator_kill`` — the share coordinator of partition 0's state (FindCoordinator key
type 2, key ``group:topicId:0``: the leader of its ``__share_group_state`` partition) SIGKILLed, restarted.

KRaft only, Kafka 4.2+ (``share.version`` 1 is the default from metadata.version 4.2-IV0: ShareVersion in
kafka-server-common 4.4.0). Tagged ``chaos``; ``share.member_crash`` and ``share.leader_kill`` also
``conformance``: the certificate's evidence for the ``share-groups`` capability. Variant ``dlq``
(``--variant dlq``, Kafka 4.4+): the group has a dead-letter topic and the ``share-dlq`` check applies;
variant ``dlq_limit`` fills it with records archived at the delivery limit (30 % releases, limit 2).
Every scenario samples the share-partition start offsets once the group formed (``share.spso``:
the ``share-spso-*`` checks).
"""

from __future__ import annotations

from harness.scenario.scenario import RunContext, Scenario, TopicSpec

TOPIC = "sq"
PARTITIONS = 6
GROUP = f"kc-s-{TOPIC}"          # ShareWorkloadConfig.group with no process prefix
LOCK_S = 15.0
AFTER_S = LOCK_S + 8.0           # a lock's worth for what a vanished holder left, then consumption again


def group_formed(ctx: RunContext) -> None:
    """Until every member processed a record (each got partitions from the share-group assignor); then
    the share-partition start offsets are sampled until the workload's drain ends (:func:`sample_spso`)."""
    ctx.wait_until(f"share group {GROUP} formed: every member processed a record", ctx.nemesis.workload.formed,
                   60, interval_s=0.2)
    sample_spso(ctx)


def sample_spso(ctx: RunContext) -> None:
    """Start the SPSO sampler (DescribeShareGroupOffsets every 0.5 s: harness/observer/share_sampler.py)
    of the group's partitions; the workload stops it after its drain. Its ``share.spso`` events feed the
    checker's ``share-spso-backwards`` and ``share-spso-delivered-below``."""
    from harness.observer.share_sampler import SpsoSampler
    wl = ctx.nemesis.workload
    sampler = SpsoSampler.for_cluster(ctx.cluster, wl.config.group, TOPIC, list(range(PARTITIONS)),
                                      emit=ctx.recorder.emit, interval=0.5,
                                      duration=ctx.scenario.max_duration_s + 300).start()
    wl.attach(sampler)
    # samples from before the first fault, the SPSO's starting point (a group coordinator's first answer can
    # take seconds: it asks the share coordinators); at most 15 s, then the scenario goes on regardless
    for _ in range(30):
        if sampler.answered():
            break
        ctx.sleep(0.5)
    ctx.sleep(1)


def member_crash(ctx: RunContext) -> None:
    group_formed(ctx)
    ctx.fault("client_crash", "m1")
    ctx.sleep(AFTER_S)


def member_pause(ctx: RunContext) -> None:
    group_formed(ctx)
    ctx.action("pause_member", lambda: ctx.nemesis.workload.pause_member("m1", LOCK_S + 10),
               member="m1", seconds=LOCK_S + 10)
    ctx.sleep(LOCK_S + 10 + 8)


def leader_kill(ctx: RunContext) -> None:
    group_formed(ctx)
    old = ctx.leader(TOPIC, 0)
    h = ctx.fault("kill", f"broker:{old}")
    ctx.wait_until(f"{TOPIC}-0 has a new leader after the kill of {old}",
                   lambda: ctx.leader(TOPIC, 0) not in (None, -1, old), 40)
    ctx.sleep(10)                   # members fetch from the new leader's share-partition
    ctx.heal(h)
    ctx.wait_until(f"broker {old} back in the ISR of {TOPIC}-0", lambda: old in ctx.isr(TOPIC, 0), 60)
    ctx.sleep(8)


def _coordinator(ctx: RunContext, key: str, key_type, last=()) -> int | None:
    _port, info = ctx.cluster.coordinator(key, key_type, last=last)
    return info.node_id if info.error is None and info.node_id >= 0 else None


def _kill_coordinator(ctx: RunContext, key: str, key_type, what: str) -> None:
    group_formed(ctx)
    ctx.wait_until(f"FindCoordinator names the {what}", lambda: _coordinator(ctx, key, key_type) is not None, 30)
    old = _coordinator(ctx, key, key_type)
    h = ctx.fault("kill", f"broker:{old}")
    ctx.wait_until(f"a broker other than {old} is the {what}",
                   lambda: _coordinator(ctx, key, key_type, (old,)) not in (None, old), 45)
    ctx.sleep(10)
    ctx.heal(h)
    ctx.sleep(10)


def coordinator_kill(ctx: RunContext) -> None:
    _kill_coordinator(ctx, GROUP, "group", f"group coordinator of {GROUP}")


def topic_id(ctx: RunContext, topic: str) -> str:
    """The topic's id (Metadata through confluent-kafka's admin client), as FindCoordinator's share key
    spells it: base64url without padding, like Kafka's ``Uuid.toString``. librdkafka prints standard
    base64 ('+', '/'): a topic id with either made the key unknown to the broker (a run of
    share.state_coordinator_kill waited 30 s for a coordinator of ``kc-s-sq:9JL/OEyARvyaSzgYUF5yxw:0``)."""
    from confluent_kafka.admin import AdminClient
    from harness.clientlog import with_logger
    from harness.workload.config import connection
    admin = AdminClient(with_logger(connection(ctx.cluster.bootstrap_servers)))
    desc = admin.describe_topics(__import__("confluent_kafka").TopicCollection([topic]))[topic].result(timeout=15)
    return str(desc.topic_id).replace("+", "-").replace("/", "_").rstrip("=")


def state_coordinator_kill(ctx: RunContext) -> None:
    key = f"{GROUP}:{topic_id(ctx, TOPIC)}:0"
    _kill_coordinator(ctx, key, 2, f"share coordinator of {key}")


_TOPICS = [TopicSpec(TOPIC, PARTITIONS, 3, config={"min.insync.replicas": "2"})]
_WORKLOAD = {"kind": "share", "topic": TOPIC, "partitions": PARTITIONS, "rate": 100.0, "members": 3,
             "record_lock_duration_ms": int(LOCK_S * 1000), "delivery_count_limit": 5}
_CHECKS = ("conformance", "durability", "share", "expectations")
# the dead-letter topic (share.version 2, Kafka 4.4+): `kafka-chaos run share --variant dlq`; rejects at 5 %
DLQ = {"workload": {"dlq_topic": f"dlq.{TOPIC}", "reject_rate": 0.05}, "min_version": "4.4"}
# archived at the delivery limit and routed to the dead-letter topic (SharePartition: a release or lock timeout
# at share.delivery.count.limit -> ARCHIVING -> DLQ "Offset delivery count exceeded the threshold.", 4.4.0):
# `--variant dlq_limit`: limit 2 (the broker's minimum), 30 % released, no rejects: ~9 % of the records archived
DLQ_LIMIT = {"workload": {"dlq_topic": f"dlq.{TOPIC}", "release_rate": 0.3, "reject_rate": 0.0,
                          "delivery_count_limit": 2}, "min_version": "4.4"}


def _scenario(name: str, description: str, script, tags=("chaos",), workload=None, checks=_CHECKS, **kw) -> Scenario:
    return Scenario(name, description, script, tags=tags, topics=_TOPICS, workload=workload or _WORKLOAD,
                    checks=checks, kraft=True, needs_roles=("controller",), min_version="4.2",
                    max_duration_s=kw.pop("max_duration_s", 150),
                    variants={"dlq": {**DLQ, "description": f"{description} (dead-letter topic dlq.{TOPIC})"},
                              "dlq_limit": {**DLQ_LIMIT, "description": f"{description} (records released past "
                                            f"the delivery limit 2 routed to the dead-letter topic dlq.{TOPIC})"}},
                    **kw)


SCENARIOS: list[Scenario] = [
    _scenario("share.member_crash", "three members of a share group; one crashes holding un-acknowledged records",
              member_crash, tags=("conformance", "chaos"), faults_one_node=False),
    _scenario("share.member_pause", "three members of a share group; one holds a batch 25 s, past the 15 s "
              "acquisition lock", member_pause, faults_one_node=False),
    _scenario("share.leader_kill", "three members of a share group; the leader of partition 0 killed, restarted",
              leader_kill, tags=("conformance", "chaos")),
    _scenario("share.coordinator_kill", "three members of a share group; its group coordinator killed until "
              "another broker coordinates it, restarted", coordinator_kill),
    _scenario("share.state_coordinator_kill", "three members of a share group; the share coordinator of "
              "partition 0's state (__share_group_state) killed, restarted", state_coordinator_kill),
]
