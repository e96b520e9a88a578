"""Dynamic quorum (KIP-853): controllers added to and removed from the KRaft voter set under faults.

Runs on ``--distribution apache-kraft-dynamic`` only (needs the ``dynamic-quorum`` role; Kafka 4.x): 3
brokers, 3 initial voters (controllers 101-103, formatted with ``--initial-controllers``) and 2 spare
controllers (104, 105) that start as observers (harness/distributions/dynamic_quorum.py). Voter changes
are Kafka's own ``kafka-metadata-quorum add-controller`` / ``remove-controller`` run in a controller
container (harness/cluster/quorum_ops.py), each recorded as an ``action``.

What is judged besides the scenario's expectations: the whole metadata log with the voter-set rules
Q1-Q7 (reference/kraft_voters.py: one voter change per VotersRecord, none before the previous one
committed, no removed voter elected, a removed leader hands over, kraft.version never down, no feature
changed unasked) and every other KRaft rule, and the workload's acknowledged writes (durability).

From Apache Kafka 4.4.0's raft module (docs/kraft.md, "The dynamic quorum"): AddVoterHandler and
RemoveVoterHandler refuse a change while the previous VotersRecord is uncommitted or the leader has no
high watermark in its epoch (REQUEST_TIMED_OUT), so the actions retry until a bound; a new voter must be
caught up with the leader's log end; a leader removed from the set resigns once the removal commits.
"""

from __future__ import annotations

import time

from harness.cluster import quorum_ops
from harness.scenario.scenario import RunContext, Scenario, TopicSpec

from .common import T

ROLES = ("controller", "dynamic-quorum")


def _status(ctx: RunContext, avoid=()) -> dict:
    return quorum_ops.status(ctx.cluster, avoid=tuple(avoid))


def _voter_ids(st: dict) -> set[int]:
    return {v["id"] for v in st["voters"]}


def _stable(ctx: RunContext, why: str, want: set[int] | None = None, avoid=(), timeout_s: float = 90) -> dict:
    """Wait until the quorum has a leader (and, with ``want``, exactly those voters); returns the status."""
    snap: dict = {}

    def ok() -> bool:
        snap.clear()
        snap.update(_status(ctx, avoid))
        return (snap.get("leader_id") or -1) >= 0 and (want is None or _voter_ids(snap) == want)
    ctx.wait_until(why, ok, timeout_s, interval_s=1.0)
    return dict(snap)


def _caught_up(ctx: RunContext, ids: set[int], since_ms: float, timeout_s: float = 90) -> None:
    """Every voter in ``ids`` answered a fetch caught up with the leader after ``since_ms`` (DescribeQuorum
    through the brokers: ReplicaState.last_caught_up_timestamp)."""
    def ok() -> bool:
        q = ctx.cluster.quorum()
        got = {v.replica_id: v.last_caught_up_timestamp for v in q.voters}
        return set(got) == ids and all((got[i] or 0) >= since_ms for i in ids)
    ctx.wait_until(f"voters {sorted(ids)} caught up with the leader (DescribeQuorum)", ok, timeout_s, interval_s=1.0)


def _spares(st: dict, ctx: RunContext) -> list[int]:
    return sorted(n.node_id for n in ctx.cluster.controllers if n.node_id not in _voter_ids(st))


def _add(ctx: RunContext, node_id: int, avoid=()) -> None:
    ctx.action("add_controller", lambda: quorum_ops.add_controller(ctx.cluster, node_id, avoid=tuple(avoid)),
               controller=node_id)


def _remove(ctx: RunContext, node_id: int, directory_id: str, avoid=()) -> None:
    ctx.action("remove_controller", lambda: quorum_ops.remove_controller(ctx.cluster, node_id, directory_id,
                                                                         avoid=tuple(avoid)),
               controller=node_id, directory_id=directory_id)


# -- the scripts --------------------------------------------------------------------------------------
def _grow_under_leader_kill(ctx: RunContext) -> None:
    st = _stable(ctx, "the metadata quorum has a leader")
    start = _voter_ids(st)
    first, second = _spares(st, ctx)[:2]
    _add(ctx, first)
    _stable(ctx, f"controller {first} is a voter", start | {first})
    h = ctx.fault("kill", "quorum-leader")
    killed = h.nodes[0].node_id
    _add(ctx, second, avoid=(killed,))     # retried until the other voters elected a leader
    st = _stable(ctx, f"controller {second} is a voter while {killed} is down", start | {first, second},
                 avoid=(killed,))
    ctx.expect(f"a voter other than the killed leader {killed} leads after the kill", st["leader_id"] != killed, st)
    t_heal = time.time() * 1000
    ctx.heal(h)
    grown = start | {first, second}
    _caught_up(ctx, grown, t_heal)
    final = _stable(ctx, "five voters with a leader", grown)
    ctx.expect(f"the voter set grew from {sorted(start)} to {sorted(grown)}", _voter_ids(final) == grown, final)


def _shrink_under_partition(ctx: RunContext) -> None:
    st = _stable(ctx, "the metadata quorum has a leader")
    start = _voter_ids(st)
    dirs = {v["id"]: v.get("directoryId") for v in st["voters"]}
    h = ctx.fault("isolate", "quorum-follower")
    cut = h.nodes[0].node_id
    _remove(ctx, cut, dirs[cut], avoid=(cut,))
    shrunk = start - {cut}
    _stable(ctx, f"voter {cut} removed while it is cut off", shrunk, avoid=(cut,))
    t_heal = time.time() * 1000
    ctx.heal(h)
    st = _stable(ctx, f"after the heal the voters stay {sorted(shrunk)}", shrunk)
    ctx.expect(f"the removed voter {cut} is an observer after the heal (it follows, it does not vote)",
               cut in {o["id"] for o in st["observers"]} or _wait_observer(ctx, cut), st)
    _caught_up(ctx, shrunk, t_heal)
    # the removed controller, same disk and directory id, is added back
    _add(ctx, cut)
    final = _stable(ctx, f"controller {cut} is a voter again", start)
    ctx.expect(f"the voter set went {sorted(start)} -> {sorted(shrunk)} -> {sorted(start)}", _voter_ids(final) == start,
               final)


def _wait_observer(ctx: RunContext, node_id: int) -> bool:
    try:
        ctx.wait_until(f"controller {node_id} fetches as an observer",
                       lambda: node_id in {o["id"] for o in _status(ctx)["observers"]}, 60, interval_s=2.0)
        return True
    except Exception:  # noqa: BLE001 - StepTimeout: the expectation records the failure
        return False


def _replace_wiped_voter(ctx: RunContext) -> None:
    st = _stable(ctx, "the metadata quorum has a leader")
    start = _voter_ids(st)
    dirs = {v["id"]: v.get("directoryId") for v in st["voters"]}
    followers = sorted(start - {st["leader_id"]})
    # every follower is marked to lose its disk at its next start; the fault kills one of them, the
    # others are unmarked at once (they keep running: the mark is read only by a start)
    for f in followers:
        quorum_ops.wipe_on_restart(ctx.cluster, f)
    h = ctx.fault("kill", "quorum-follower")
    victim = h.nodes[0].node_id
    for f in followers:
        if f != victim:
            quorum_ops.cancel_wipe(ctx.cluster, f)
    _remove(ctx, victim, dirs[victim], avoid=(victim,))
    _stable(ctx, f"voter {victim} (old disk {dirs[victim]}) removed", start - {victim}, avoid=(victim,))
    ctx.heal(h)                                          # starts it: a new disk, formatted as an observer
    new_dir: list = []

    def reformatted() -> bool:
        new_dir[:] = [quorum_ops.directory_id(ctx.cluster, victim)]
        return new_dir[0] not in (None, dirs[victim])
    ctx.wait_until(f"controller {victim} formatted its new disk with a new directory id", reformatted, 90,
                   interval_s=2.0)
    _add(ctx, victim)
    final = _stable(ctx, f"controller {victim} is a voter again with its new disk", start)
    got = {v["id"]: v.get("directoryId") for v in final["voters"]}
    ctx.expect(f"voter {victim}'s directory id changed {dirs[victim]} -> {new_dir[0]} (a new replica, not the old one)",
               got.get(victim) == new_dir[0], got)


def _remove_leader(ctx: RunContext) -> None:
    st = _stable(ctx, "the metadata quorum has a leader")
    start = _voter_ids(st)
    leader, epoch = st["leader_id"], st["leader_epoch"]
    dirs = {v["id"]: v.get("directoryId") for v in st["voters"]}
    spare = _spares(st, ctx)[0]
    _add(ctx, spare)                                   # 4 voters, so that 3 stay after the leader leaves
    _stable(ctx, f"controller {spare} is a voter", start | {spare})
    _remove(ctx, leader, dirs[leader], avoid=(leader,))
    after = _stable(ctx, f"the leader {leader} removed itself: another voter leads", (start | {spare}) - {leader},
                    avoid=(leader,))
    ctx.expect(f"the removed leader {leader} handed over: leader {after['leader_id']} in epoch {after['leader_epoch']} "
               f"(> {epoch}), a member of the new set (RemoveVoterHandler: resign once the removal commits)",
               after["leader_id"] != leader and (after["leader_epoch"] or 0) > epoch, after)
    _add(ctx, leader)                                  # the old leader, same disk, back as a voter
    _stable(ctx, f"controller {leader} is a voter again", start | {spare})


def _scenario(name: str, description: str, script, max_s: float = 300.0) -> Scenario:
    return Scenario(f"dynamic_quorum.{name}", description, script, tags=("conformance", "chaos"), brokers=3,
                    topics=[TopicSpec(T, 3, 3)], kraft=True, needs_roles=ROLES, max_duration_s=max_s,
                    reads_controller_log=True)


SCENARIOS: list[Scenario] = [
    _scenario("grow_under_leader_kill", "grow the voter set 3 -> 5 (add-controller twice) with the quorum leader "
              "SIGKILLed between the two additions: the second is added through the new leader; the voter-set "
              "rules hold on the whole metadata log", _grow_under_leader_kill),
    _scenario("shrink_under_partition", "cut a voting follower off the network, remove it (remove-controller) while "
              "cut off, heal: it follows as an observer; then add it back (3 -> 2 -> 3)", _shrink_under_partition),
    _scenario("remove_leader", "add a spare (4 voters), then remove the quorum leader itself: it resigns once the "
              "removal commits and a member of the new set leads in a later epoch (Q3, Q4 on the log); add it back",
              _remove_leader),
    _scenario("replace_wiped_voter", "a voting follower loses its disk: remove it by its old directory id, it "
              "comes back formatted with a new directory id as an observer, add it again", _replace_wiped_voter),
]
