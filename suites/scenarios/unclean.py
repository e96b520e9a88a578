"""1b. All ISR replicas dead; unclean leader election (seeds 000/002; spec §4.1.3, §4.8, §4.9, §5.2).

Both scenarios use four brokers and one partition replicated on brokers 1-3 only, so that broker 4
stays alive and a controller exists while every replica is down (with three brokers, killing all
replicas kills every possible controller and nobody writes ``leader = -1``). The replicas die one
after the other, each death observed in ZooKeeper before the next, which makes the surviving ISR
member deterministic (§4.9 "sequential deaths"): the last one to die.

* ``unclean.all_isr_dead``: unclean election off. After the last death the state is
  ``leader = -1, isr = [last]`` (§4.8 case 1, §4.9). A returning replica that is not that last ISR
  member changes nothing (§5.2 worked example, "broker 1 returns"); the partition recovers when the
  last ISR member returns: it becomes leader with ``isr = [it]`` and the others rejoin (§5.3, §5.8).
  Nothing acknowledged (``acks=all``, idempotent) is lost.
* ``unclean.out_of_sync_elected``: unclean election on for the topic. The first replica to die
  misses every write acknowledged (``acks=1``) after its death; when it is the first to return,
  it is elected although it is not in the ISR, with ``isr = [it]`` and leader recovery state
  RECOVERING on 3.2+ (§4.1.3). The writes it never had are lost, and the durability checker must
  report them as ``ALLOWED`` by that configuration, not as violations.
"""

from __future__ import annotations

from harness.scenario import RunContext, Scenario, TopicSpec

from .common import T, state, wait_or_diagnose

REPLICAS = [1, 2, 3]


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


def _all_isr_dead(ctx: RunContext) -> None:
    order, handles = _kill_replicas_in_turn(ctx)
    first, second, last = order
    ctx.wait_until(f"{T}-0 has no leader (leader = -1) once its last ISR member {last} died (§4.8 case 1)",
                   lambda: state(ctx)["leader"] == -1, 40)
    dead = state(ctx)
    ctx.expect(f"the last ISR member {last} stays in the ISR: leader -1, isr [{last}] (§4.9)",
               dead["leader"] == -1 and dead["isr"] == [last], dead)
    # a replica outside the ISR returns: unclean election is off, nothing may change (§5.2 example)
    ctx.heal(handles.pop(first))
    ctx.wait_until(f"broker {first} registered again", lambda: first in ctx.live_brokers(), 60)
    ctx.sleep(5.0)   # the controller handles a broker startup within a second or two
    still = state(ctx)
    ctx.expect(f"out-of-sync replica {first} is not elected with unclean election off (§4.1.2)",
               still["leader"] == -1 and still["isr"] == [last] and still["leader_epoch"] == dead["leader_epoch"],
               still)
    # the last ISR member returns: clean offline election (§5.3 step 3)
    ctx.heal(handles.pop(last))
    ctx.wait_until(f"{T}-0 recovers with its last ISR member {last} as leader (§4.9, §5.3)",
                   lambda: ctx.leader(T, 0) == last, 60)
    back = state(ctx)
    ctx.expect("the recovery election bumps the leader epoch by one (§4.10)",
               back["leader_epoch"] == dead["leader_epoch"] + 1, back)
    ctx.heal(handles.pop(second))
    ctx.wait_until(f"all replicas of {T}-0 rejoin the ISR (§5.8)", lambda: len(ctx.isr(T, 0)) == 3, 90)


def _out_of_sync_elected(ctx: RunContext) -> None:
    order, handles = _kill_replicas_in_turn(ctx)
    first, second, last = order
    ctx.wait_until(f"{T}-0 has no leader once every replica is dead (§4.8)",
                   lambda: state(ctx)["leader"] == -1, 40)
    dead = state(ctx)
    # the first replica to die has none of the writes acknowledged since; unclean election is on
    ctx.heal(handles.pop(first))
    ctx.wait_until(f"out-of-sync replica {first} is elected leader (unclean election, §4.1.3)",
                   lambda: ctx.leader(T, 0) == first, 60)
    el = state(ctx)
    ctx.expect(f"unclean election: isr = [{first}], leader epoch + 1 (§4.1.3, §4.10)",
               el["isr"] == [first] and el["leader_epoch"] == dead["leader_epoch"] + 1, el)
    for b in (last, second):
        ctx.heal(handles.pop(b))
    wait_or_diagnose(ctx, f"all replicas of {T}-0 rejoin the ISR behind {first} (§5.8)",
                     lambda: len(ctx.isr(T, 0)) == 3, 90, [last, second], lambda: state(ctx))


_TOPIC = TopicSpec(T, 1, 3, assignment={0: REPLICAS})

SCENARIOS: list[Scenario] = [
    Scenario("unclean.all_isr_dead", "every ISR replica of chaos-0 dies in turn (unclean election off): "
             "leader -1, an out-of-sync replica is not elected, recovery when the last ISR member returns",
             _all_isr_dead, tags=("conformance", "chaos"), brokers=4,
             broker_config={"unclean.leader.election.enable": "false"},
             topics=[_TOPIC],
             workload={"topic": T, "partitions": 1, "acks": "all", "enable_idempotence": True, "rate": 100.0,
                       "delivery_timeout_ms": 60000, "request_timeout_ms": 5000},
             max_duration_s=240),
    Scenario("unclean.out_of_sync_elected", "unclean election on: every replica of chaos-0 dies in turn, the "
             "first to die (out of sync) returns first and is elected; the acks=1 writes it missed are lost, "
             "as the configuration allows", _out_of_sync_elected, tags=("conformance", "chaos"), brokers=4,
             topics=[TopicSpec(T, 1, 3, config={"unclean.leader.election.enable": "true"},
                               assignment={0: REPLICAS})],
             workload={"topic": T, "partitions": 1, "acks": "1", "enable_idempotence": False, "rate": 100.0,
                       "delivery_timeout_ms": 60000, "request_timeout_ms": 5000},
             max_duration_s=240),
]
