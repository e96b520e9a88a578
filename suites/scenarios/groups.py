"""Consumer groups (issue 17): an idempotent producer and three members of one consumer group that
commit synchronously after each batch and on every revocation (harness/workload/groups.py), judged by
the groups checker (harness/checkers/groups.py, docs/transactions.md "Consumer-group checks": a
committed offset handed out below an acknowledged commit, records skipped between a commit and the
next owner's first fetch, a record consumed by two members of one generation, a member reading
backwards; rebalance times measured) besides the conformance and durability checkers.

``groups.member_kill`` — one member ends abruptly (``client_crash``: what it processed since its last
commit is not committed; librdkafka's close sends LeaveGroup, a thread cannot be SIGKILLed), and the
others take its partitions from its last commit.
``groups.member_pause`` — one member stops polling for longer than ``max.poll.interval.ms`` (10 s):
librdkafka leaves the group, the others take over, and the member rejoins when it polls again.
``groups.coordinator_kill`` / ``groups.coordinator_pause`` — the group coordinator
(``group-coordinator(<group>)``: the broker FindCoordinator names at apply time, the leader of the
group's ``__consumer_offsets`` partition) killed / frozen until another broker coordinates the group.
``groups.static_member_kill`` — static membership (``group.instance.id``): a member killed; a static
member sends no LeaveGroup (KIP-345), so its partitions wait for the session timeout.

Every scenario has the variant ``kip848`` (``kafka-chaos run groups --variant kip848``): the same script
with the KIP-848 protocol (``group.protocol=consumer``, Kafka 4.0+; the brokers'
``group.consumer.session.timeout.ms`` lowered to 10 s, heartbeats every 2 s, from their 45 s / 5 s
defaults, ``GroupCoordinatorConfig``). Without ``--variant`` the members use the classic protocol.

One flow for ZooKeeper mode and KRaft: the group coordinator moves with the leadership of its
``__consumer_offsets`` partition in both, and FindCoordinator answers from each broker's metadata
cache (``KafkaApis.getCoordinator``). Tagged ``chaos`` (each run is about a minute); ``groups.member_kill``
is also ``conformance``: the certificate's evidence for the ``consumer-groups`` capability.
"""

from __future__ import annotations

from harness.scenario.scenario import RunContext, Scenario, TopicSpec

TOPIC = "grp"
PARTITIONS = 6
GROUP = f"kc-g-{TOPIC}"           # GroupWorkloadConfig.group with no process prefix


def coordinator(ctx: RunContext, last: tuple[int, ...] = ()) -> int | None:
    """The broker FindCoordinator names for the group (None on an error answer), the brokers in ``last``
    asked after the others."""
    _port, info = ctx.cluster.coordinator(GROUP, "group", last=last)
    return info.node_id if info.error is None and info.node_id >= 0 else None


def group_formed(ctx: RunContext) -> None:
    """Until every member is assigned and committed once, bounded by the broker's own group settings
    (:meth:`harness.workload.groups.GroupWorkload.formation_bound_s`), instead of a fixed 12 s sleep."""
    wl = ctx.nemesis.workload
    ctx.wait_until(f"{GROUP} formed: every member assigned and committed", wl.formed,
                   wl.formation_bound_s(ctx.cluster.broker_config), interval_s=0.2)


AFTER_TAKEOVER_S = 8.0   # the others consume the partitions they took over (past coverage's 5 s settle)


def member_kill(ctx: RunContext) -> None:
    """``m1`` ends abruptly; waited for (not a fixed 30 s): the others own every partition and commit
    again (a dynamic member's close sends LeaveGroup, so that is the rebalance; a static member sends
    none, so it waits for the session timeout first, bounded like the group's formation), then
    :data:`AFTER_TAKEOVER_S` of their consumption."""
    group_formed(ctx)
    ctx.fault("client_crash", "m1")
    wl = ctx.nemesis.workload
    ctx.wait_until(f"{GROUP} rebalanced without m1: the others own every partition and commit again",
                   lambda: wl.taken_over("m1"), wl.formation_bound_s(ctx.cluster.broker_config), interval_s=0.2)
    ctx.sleep(AFTER_TAKEOVER_S)


def member_pause(ctx: RunContext) -> None:
    group_formed(ctx)
    ctx.action("pause_member", lambda: ctx.nemesis.workload.pause_member("m1", 20.0), member="m1", seconds=20.0)
    ctx.sleep(35)                 # it leaves after max.poll.interval.ms, rejoins after 20 s, rebalances again


def _coordinator_fault(fault: str):
    def script(ctx: RunContext) -> None:
        group_formed(ctx)
        ctx.wait_until(f"FindCoordinator names the coordinator of {GROUP}", lambda: coordinator(ctx) is not None, 30)
        h = ctx.fault(fault, f"group-coordinator({GROUP})")
        old = tuple(h.broker_ids)
        ctx.wait_until(f"a broker other than {list(old)} coordinates {GROUP}",
                       lambda: coordinator(ctx, old) not in (None, *old), 45)
        ctx.sleep(8)              # members commit to the new coordinator
        ctx.heal(h)
        ctx.sleep(12)
    script.__name__ = f"coordinator_{fault}"
    return script


_TOPICS = [TopicSpec(TOPIC, PARTITIONS, 3, config={"min.insync.replicas": "2"})]
_WORKLOAD = {"kind": "group", "topic": TOPIC, "partitions": PARTITIONS, "rate": 100.0, "members": 3}
_CHECKS = ("conformance", "durability", "groups", "expectations")
_KIP848_BROKER = {"group.consumer.min.session.timeout.ms": "6000", "group.consumer.session.timeout.ms": "10000",
                  "group.consumer.min.heartbeat.interval.ms": "1000", "group.consumer.heartbeat.interval.ms": "2000"}
# the KIP-848 protocol (group.protocol=consumer) for the same script: `kafka-chaos run groups --variant kip848`
KIP848 = {"workload": {"group_protocol": "consumer"}, "broker_config": _KIP848_BROKER, "min_version": "4.0"}


def _scenario(name: str, description: str, script, workload=None, tags=("chaos",), **kw) -> Scenario:
    return Scenario(name, description, script, tags=tags, topics=_TOPICS, workload=workload or _WORKLOAD,
                    checks=_CHECKS, kraft=True, max_duration_s=kw.pop("max_duration_s", 120),
                    variants={"kip848": {**KIP848, "description": f"{description} (KIP-848: group.protocol=consumer)"}},
                    **kw)


SCENARIOS: list[Scenario] = [
    _scenario("groups.member_kill", "three members of a group; one killed abruptly once the group formed",
              member_kill, tags=("conformance", "chaos"), faults_one_node=False),
    _scenario("groups.member_pause", "three members of a group; one stops polling for 20 s (past "
              "max.poll.interval.ms), leaves and rejoins", member_pause, faults_one_node=False),
    _scenario("groups.coordinator_kill", "three members of a group; the group coordinator (FindCoordinator's "
              "answer) killed until another broker coordinates the group, then restarted",
              _coordinator_fault("kill")),
    _scenario("groups.coordinator_pause", "three members of a group; the group coordinator paused until "
              "another broker coordinates the group, then unpaused", _coordinator_fault("pause")),
    _scenario("groups.static_member_kill", "three static members (group.instance.id); one killed abruptly",
              member_kill, workload={**_WORKLOAD, "static": True}, faults_one_node=False),
]
