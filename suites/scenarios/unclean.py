"""1b. All ISR replicas dead; unclean leader election (seeds 000/002; spec §4.1.3, §4.8, §4.9, §5.2, §9.5).

Both scenarios use five brokers and one partition replicated on brokers 3-5 only, so that brokers 1
and 2 stay alive while every replica is down: in ZooKeeper mode a controller exists to write
``leader = -1``; on KRaft (combined layout, brokers 1-3 are the quorum's voters) two of the three
voters stay up, so the quorum keeps a majority and the controller keeps committing (with replicas on
1-3, killing them all would kill the quorum). The replicas die one after the other, each death
observed in the ISR before the next, which makes the surviving ISR member deterministic (§4.9
"sequential deaths"): the last one to die.

What the partition looks like once every replica is dead, and how the last ISR member comes back,
is asked of ``ctx.semantics`` (reference/semantics.py) with the cluster's feature levels read from
the controller's log (``feature_levels``: the FeatureLevelRecords of the KRaft metadata log; none in
ZooKeeper mode), and judged on the controller's own writes (``ctx.writes_since``: the ZooKeeper
transaction log, the KRaft metadata log), which carry the ELR and the leader recovery state:

* ``unclean.all_isr_dead``: unclean election off. After the last death the state is
  ``leader = -1, isr = [last]`` (§4.8 case 1, §4.9; KRaft without ELR the same:
  ``PartitionChangeBuilder.build`` writes an empty ISR only with ELR), or with ELR (KRaft, Kafka 4.1's
  default for a new cluster, ``eligible.leader.replicas.version`` 1) ``isr = [], elr = [last]``
  (``maybePopulateTargetElr``, §9.5). A returning replica that is not that last ISR member changes
  nothing (§5.2 worked example, "broker 1 returns"; KRaft ``electAnyLeader`` on its unfencing finds no
  ISR / ELR member and unclean election is off); the partition recovers when the last ISR member
  returns: it becomes leader with ``isr = [it]``, leader epoch + 1, and the others rejoin (§5.3, §5.8).
  With ELR the kill was an unclean shutdown: the restarted broker registers without its previous broker
  epoch, the controller takes it out of the ELR (``handleBrokerShutdown``) and elects it as the last
  known leader when it is unfenced (``canElectLastKnownLeader``, 4.1.0+: only an acceptable one), which
  Kafka treats as an unclean election: leader recovery state RECOVERING, then RECOVERED with the leader's
  first ISR expansion.
  Nothing acknowledged (``acks=all``, idempotent) is lost.
* ``unclean.out_of_sync_elected``: unclean election on for the topic. The first replica to die
  misses every write acknowledged (``acks=1``) after its death; when it is the first to return,
  it is elected although it is not in the ISR, with ``isr = [it]`` and leader recovery state
  RECOVERING on 3.2+ (§4.1.3). The new leader marks it RECOVERED locally when it takes leadership
  (``Partition.makeLeader``); the controller's state says so only with the leader's next AlterPartition,
  its first ISR expansion when the other replicas return (it refuses a larger ISR while RECOVERING). KRaft elects it when it is unfenced:
  ``handleBrokerUnfenced`` runs ``generateLeaderAndIsrUpdates`` over the leaderless partitions with
  ``Election.UNCLEAN`` for a topic whose ``unclean.leader.election.enable`` is true (the periodic
  ``maybeElectUncleanLeaders``, every 5 minutes, is not needed). The writes it never had are lost, and
  the durability checker must report them as ``ALLOWED`` by that configuration, not as violations.
"""

from __future__ import annotations

from harness.distributions.control_history import feature_levels, of_partition
from harness.scenario.scenario import RunContext, Scenario, TopicSpec

from .common import T, state, wait_or_diagnose

REPLICAS = [3, 4, 5]   # brokers 1 and 2 (two of KRaft's three voters) stay up


def _kill_replicas_in_turn(ctx: RunContext) -> tuple[list[int], dict]:
    """Kill the followers, then the leader of chaos-0, each after its death shows in the ISR.

    Returns the death order (first follower, second follower, leader) and the kill handles by broker
    (healing a handle starts that broker again)."""
    st = state(ctx)
    leader = st["leader"]
    followers = [r for r in REPLICAS if r != leader]
    handles: dict[int, object] = {}
    for f in followers:
        handles[f] = ctx.fault("kill", f"broker:{f}")
        ctx.wait_until(f"killed follower {f} leaves the ISR of {T}-0 (§5.2 step 4, §4.6)",
                       lambda f=f: f not in ctx.isr(T, 0), 40)
        ctx.sleep(2.0)   # writes acknowledged by the shrunken ISR only
    ctx.expect(f"the ISR of {T}-0 is the leader {leader} alone", ctx.isr(T, 0) == [leader], state(ctx))
    handles[leader] = ctx.fault("kill", f"broker:{leader}")
    return followers + [leader], handles


def _writes(ctx: RunContext, after: int) -> list[dict]:
    """The controller's state writes of chaos-0 after ``after`` (a write's ``seq``)."""
    return [w for w in of_partition(ctx.writes_since(-1), "state", T, 0) if w["seq"] > after]


def _leaderless(ctx: RunContext, last: int, features: dict) -> dict:
    """Wait until chaos-0 has no leader; check the controller's write of that state against what the
    controller model writes once the last ISR member ``last`` died; return that write."""
    ctx.wait_until(f"{T}-0 has no leader (leader = -1) once its last ISR member {last} died (§4.8 case 1)",
                   lambda: state(ctx)["leader"] == -1, 40)
    want = ctx.semantics.leaderless_state(last, features)
    writes = _writes(ctx, -1)
    dead = writes[-1] if writes else {}
    ctx.expect(f"the controller wrote leader -1, isr {want['isr']}, ELR {want['elr']} after the last ISR "
               f"member {last} died (§4.9; §9.5 with ELR)",
               dead.get("leader") == -1 and dead.get("isr") == want["isr"] and dead.get("elr") == want["elr"],
               {"last write": dead, "expected": want, "features": features})
    seen = state(ctx)
    ctx.expect(f"the brokers show leader -1, isr {want['isr']}", seen["leader"] == -1 and seen["isr"] == want["isr"],
               seen)
    return dead


def _recovery(ctx: RunContext, writes: list[dict], leader: int, dead: dict, recovering: bool, why: str) -> dict | None:
    """The election of ``leader`` after the leaderless write ``dead``: isr [leader], leader epoch + 1, leader
    recovery state RECOVERING when ``recovering`` (§4.1.3). Returns the election write (None if none)."""
    el = next((w for w in writes if w["leader"] >= 0), None)
    ok = (el is not None and el["leader"] == leader and el["isr"] == [leader]
          and el["leader_epoch"] == dead["leader_epoch"] + 1
          and el["leader_recovery_state"] == (1 if recovering else dead["leader_recovery_state"]))
    ctx.expect(f"{T}-0: the controller elected {leader} with isr [{leader}], leader epoch + 1, leader recovery "
               f"state {'RECOVERING' if recovering else 'unchanged'} ({why}; §4.10)", ok,
               {"leaderless": dead, "writes since": writes[:6]})
    return el


def _recovered(ctx: RunContext, el: dict | None) -> None:
    """After a RECOVERING election ``el`` and the replicas' return: the leader marks the partition RECOVERED
    when it takes leadership (``Partition.makeLeader``), and the controller learns it with the leader's next
    AlterPartition, i.e. its first ISR expansion; no write expands the ISR while RECOVERING (the controller
    refuses that: KIP-704). So the writes since end RECOVERED and each ISR of more than one is RECOVERED."""
    if el is None or el["leader_recovery_state"] != 1:
        return
    ws = _writes(ctx, el["seq"])
    bad = [w for w in ws if len(w["isr"]) > 1 and w["leader_recovery_state"] != 0]
    ctx.expect(f"{T}-0: leader {el['leader']} marked the partition RECOVERED with its first ISR expansion, no "
               "larger ISR while RECOVERING (§4.1.3, KIP-704)",
               bool(ws) and ws[-1]["leader_recovery_state"] == 0 and not bad, {"writes since the election": ws[:8]})


def _all_isr_dead(ctx: RunContext) -> None:
    order, handles = _kill_replicas_in_turn(ctx)
    first, second, last = order
    features = feature_levels(ctx.writes_since(-1))
    dead = _leaderless(ctx, last, features)
    # a replica outside the ISR returns: unclean election is off, nothing may change (§5.2 example)
    ctx.heal(handles.pop(first))
    ctx.wait_until(f"broker {first} registered again", lambda: first in ctx.live_brokers(), 60)
    ctx.sleep(5.0)   # the controller handles a broker startup within a second or two
    still = state(ctx)
    elected = [w for w in _writes(ctx, dead["seq"]) if w["leader"] >= 0]
    ctx.expect(f"out-of-sync replica {first} is not elected with unclean election off (§4.1.2): no controller "
               "write elects a leader, the brokers still show the leaderless state",
               not elected and still["leader"] == -1 and still["isr"] == dead["isr"]
               and still["leader_epoch"] == dead["leader_epoch"], {"state": still, "elections": elected})
    # the last ISR member returns: clean offline election (§5.3 step 3), or with ELR the last known leader
    recovering, why = ctx.semantics.last_isr_member_return(features)
    ctx.heal(handles.pop(last))
    ctx.wait_until(f"{T}-0 recovers with its last ISR member {last} as leader (§4.9, §5.3)",
                   lambda: ctx.leader(T, 0) == last, 60)
    back = state(ctx)
    ctx.expect("the recovery election bumps the leader epoch by one (§4.10)",
               back["leader_epoch"] == dead["leader_epoch"] + 1, back)
    el = _recovery(ctx, _writes(ctx, dead["seq"]), last, dead, recovering, why)
    ctx.heal(handles.pop(second))
    ctx.wait_until(f"all replicas of {T}-0 rejoin the ISR (§5.8)", lambda: len(ctx.isr(T, 0)) == 3, 90)
    _recovered(ctx, el)


def _out_of_sync_elected(ctx: RunContext) -> None:
    order, handles = _kill_replicas_in_turn(ctx)
    first, second, last = order
    features = feature_levels(ctx.writes_since(-1))
    dead = _leaderless(ctx, last, features)    # unclean election on, but no replica is alive to elect
    # the first replica to die has none of the writes acknowledged since; unclean election is on
    ctx.heal(handles.pop(first))
    ctx.wait_until(f"out-of-sync replica {first} is elected leader (unclean election, §4.1.3)",
                   lambda: ctx.leader(T, 0) == first, 60)
    el = state(ctx)
    ctx.expect(f"unclean election: isr = [{first}], leader epoch + 1 (§4.1.3, §4.10)",
               el["isr"] == [first] and el["leader_epoch"] == dead["leader_epoch"] + 1, el)
    recovering = ctx.semantics.unclean_marks_recovering(ctx.recorder.metadata.get("kafka_version"))
    el = _recovery(ctx, _writes(ctx, dead["seq"]), first, dead, recovering, "an unclean election, §4.1.3")
    for b in (last, second):
        ctx.heal(handles.pop(b))
    wait_or_diagnose(ctx, f"all replicas of {T}-0 rejoin the ISR behind {first} (§5.8)",
                     lambda: len(ctx.isr(T, 0)) == 3, 90, [last, second], lambda: state(ctx))
    _recovered(ctx, el)


_TOPIC = TopicSpec(T, 1, 3, assignment={0: REPLICAS})

SCENARIOS: list[Scenario] = [
    Scenario("unclean.all_isr_dead", "every ISR replica of chaos-0 dies in turn (unclean election off): "
             "leader -1, an out-of-sync replica is not elected, recovery when the last ISR member returns",
             _all_isr_dead, tags=("conformance", "chaos"), brokers=5, kraft=True,
             broker_config={"unclean.leader.election.enable": "false"},
             topics=[_TOPIC],
             workload={"topic": T, "partitions": 1, "acks": "all", "enable_idempotence": True, "rate": 100.0,
                       "delivery_timeout_ms": 60000, "request_timeout_ms": 5000},
             max_duration_s=360),
    Scenario("unclean.out_of_sync_elected", "unclean election on: every replica of chaos-0 dies in turn, the "
             "first to die (out of sync) returns first and is elected; the acks=1 writes it missed are lost, "
             "as the configuration allows", _out_of_sync_elected, tags=("conformance", "chaos"), brokers=5, kraft=True,
             topics=[TopicSpec(T, 1, 3, config={"unclean.leader.election.enable": "true"},
                               assignment={0: REPLICAS})],
             workload={"topic": T, "partitions": 1, "acks": "1", "enable_idempotence": False, "rate": 100.0,
                       "delivery_timeout_ms": 60000, "request_timeout_ms": 5000},
             max_duration_s=360),
]
