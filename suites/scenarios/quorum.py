"""10. KRaft quorum faults (controller-spec §9.1, §9.3; the KRaft counterparts of the ZooKeeper family).

In KRaft the controller is the leader of a Raft quorum of voters (here the first three nodes, combined
broker+controller nodes; targets ``quorum-*`` ask DescribeQuorum who they are, whatever the layout).
Its epoch is the Raft epoch: every election takes a new one (§9.1), and the metadata log records each
new leader as a LeaderChange control record (``controller_epoch`` writes with ``leader_id``).

What the scenarios rely on, from Apache Kafka's sources (3.7+, so 3.9 and 4.x):

- a voter whose fetch from the leader times out (``controller.quorum.fetch.timeout.ms``, 2 s) starts an
  election (KafkaRaftClient ``pollFollowerAsVoter``); losing one of three voters changes nothing else;
- a leader that has not heard from a majority within 1.5 × that timeout resigns (check quorum,
  KafkaRaftClient ``pollLeader``: ``timeUntilCheckQuorumExpires == 0`` → ``transitionToResigned``), so
  without a majority there is no leader, nothing is committed, and the next leader has a higher epoch;
- a broker learns metadata only from committed records and keeps serving its partitions meanwhile;
- brokers heartbeat to the active controller over the CONTROLLER listener; one silent for
  ``broker.session.timeout.ms`` (9 s) is fenced: removed from every ISR, its leaderships moved to the
  first active ISR member in replica order (§9.3, one leader epoch bump each, §9.2); a heartbeat after it
  caught up unfences it, with the same registration (BrokerHeartbeatManager
  ``calculateNextBrokerState``; checked, not assumed: the record keeps its registrations).

Cluster layout: voters 1-3 are brokers too, so killing a voter also kills a broker. Scenarios place
replicas on broker-only nodes 4 (and 5) where that matters.
"""

from __future__ import annotations

from harness.distributions.control_history import of_partition
from harness.scenario.scenario import RunContext, Scenario, TopicSpec

from .common import T, state, wait_or_diagnose

PARTS = 3
# every voter leads one partition; broker 4 (not a voter) holds a replica of each
SPREAD = {0: [1, 2, 4], 1: [2, 3, 4], 2: [3, 1, 4]}
# broker 4 leads chaos-0 and follows the others
FOUR_LEADS = {0: [4, 1, 2], 1: [1, 4, 3], 2: [2, 3, 4]}
# only brokers 4 and 5 (not voters): chaos-1 is led by 5, the others by 4 (Kafka refuses a manual
# assignment whose partitions differ in replication factor)
OUTSIDE = {0: [4, 5], 1: [5, 4], 2: [4, 5]}


def _topic(assignment: dict[int, list[int]]) -> list[TopicSpec]:
    return [TopicSpec(T, PARTS, len(assignment[0]), assignment=assignment)]


def _ms(ctx: RunContext, key: str, default: str) -> float:
    return int(ctx.cluster.broker_config.get(key, default)) / 1000.0


def _session_s(ctx: RunContext) -> float:
    return _ms(ctx, "broker.session.timeout.ms", "9000")


def _heartbeat_s(ctx: RunContext) -> float:
    return _ms(ctx, "broker.heartbeat.interval.ms", "2000")


def _quorum(ctx: RunContext) -> tuple[int | None, int | None]:
    """(leader, Raft epoch) DescribeQuorum names now; (None, None) when no leader answers."""
    try:
        q = ctx.cluster.quorum()
    except Exception:  # noqa: BLE001 - no broker answered (nodes down mid-fault)
        return None, None
    if q.error is not None or q.leader_id < 0:
        return None, None
    return q.leader_id, q.leader_epoch


def _stable_quorum(ctx: RunContext) -> tuple[int, int]:
    snap: list = []

    def has_leader() -> bool:
        snap[:] = _quorum(ctx)
        return snap[0] is not None
    ctx.wait_until("the metadata quorum has a leader", has_leader, 60)
    return snap[0], snap[1]


def _healthy(ctx: RunContext) -> bool:
    """Every broker listed (registered, unfenced), a quorum leader, every partition led by a listed
    broker with its full replica set in the ISR."""
    live = ctx.live_brokers()
    if live != sorted(ctx.cluster.broker_ids) or _quorum(ctx)[0] is None:
        return False
    for p in range(PARTS):
        st = ctx.view.partition_state(T, p)
        if st is None or st["leader"] not in live or sorted(st["isr"]) != sorted(st["replicas"]):
            return False
    return True


def _wait_healthy(ctx: RunContext, why: str, brokers, timeout_s: float = 120) -> None:
    wait_or_diagnose(ctx, f"{why}: every broker listed, a quorum leader, full ISR on {T}",
                     lambda: _healthy(ctx), timeout_s, brokers)


def _acked(ctx: RunContext, t0: float, t1: float, partitions=None) -> int:
    return sum(1 for e in ctx.recorder.read_events() if e["type"] == "client" and e["f"] == "send"
               and e["phase"] == "ok" and t0 <= e["t"] <= t1
               and (partitions is None or e.get("partition") in partitions))


def _leader_changes(writes: list[dict]) -> list[dict]:
    return [w for w in writes if w["kind"] == "controller_epoch"]


def _fencing(writes: list[dict], broker: int) -> list[dict]:
    return [w for w in writes if w["kind"] == "fence" and w["broker_id"] == broker]


def _registrations(writes: list[dict], broker: int) -> list[dict]:
    return [w for w in writes if w["kind"] == "broker" and w["broker_id"] == broker]


def _no_leaderless(ctx: RunContext, writes: list[dict], why: str) -> None:
    bad = [w for p in range(PARTS) for w in of_partition(writes, "state", T, p) if w["leader"] < 0]
    ctx.expect(f"no partition of {T} was written leaderless ({why})", not bad, bad[:5])


def _moved_off(ctx: RunContext, writes: list[dict], broker: int, before: dict[int, dict]) -> None:
    """The partitions ``broker`` led got a leader from their ISR with exactly one epoch bump, and it
    left every ISR it was in (§9.3 fencing / failure; §9.2 one bump per leader change)."""
    for p, st in before.items():
        states = of_partition(writes, "state", T, p)
        if st["leader"] == broker:
            first = next((w for w in states if w["leader"] != broker), None)
            ctx.expect(f"{T}-{p}: leadership moved from {broker} to a member of its ISR, leader epoch + 1 "
                       "(§9.3, §9.2)", first is not None and first["leader"] in st["isr"]
                       and first["leader_epoch"] == st["leader_epoch"] + 1, {"before": st, "write": first})
        if broker in st["isr"]:
            ctx.expect(f"{T}-{p}: broker {broker} removed from the ISR (§9.3)",
                       any(broker not in w["isr"] for w in states), {"before": st, "writes": states[:6]})


# -- the scripts --------------------------------------------------------------------------------------
def _kill_leader(ctx: RunContext) -> None:
    leader, e0 = _stable_quorum(ctx)
    before = {p: state(ctx, p) for p in range(PARTS)}
    marker = ctx.history_marker()
    h = ctx.fault("kill", "quorum-leader")
    now: list = []

    def new_leader() -> bool:
        now[:] = _quorum(ctx)
        return now[0] not in (None, leader)
    ctx.wait_until(f"a new quorum leader replaces {leader}", new_leader, 40)
    new, e1 = now
    sem = ctx.semantics
    ctx.expect(sem.controller_epoch_rule, sem.controller_epoch_ok(e0, e1), {"before": [leader, e0], "after": now})
    ctx.wait_until(f"every partition of {T} is led by a live broker other than {leader} (its broker part fenced, "
                   "§9.3)", lambda: all(ctx.leader(T, p) not in (None, leader) for p in range(PARTS)),
                   _session_s(ctx) + 40)
    ctx.heal(h)
    _wait_healthy(ctx, f"node {leader} is back", [leader])
    writes = ctx.writes_since(marker)
    changes = _leader_changes(writes)
    ctx.expect(f"the metadata log records the new quorum leader {new} with epoch {e1} (LeaderChange, §9.1)",
               any(c["epoch"] == e1 and c["leader_id"] == new for c in changes), changes)
    _no_leaderless(ctx, writes, "§9.9: a controller failover re-elects no partition; §9.3 picks an active ISR member")
    _moved_off(ctx, writes, leader, before)


def _pause_leader(ctx: RunContext) -> None:
    leader, e0 = _stable_quorum(ctx)
    marker = ctx.history_marker()
    h = ctx.fault("pause", "quorum-leader")
    changes: list = []

    # Read from the metadata log, not DescribeQuorum: brokers forward DescribeQuorum to the controller
    # they know, and a request to the frozen one hangs until the channel's request timeout (30 s on
    # 4.1.2: no answer from any broker for 30 s although the voters had elected node 3 at once)
    def elected() -> bool:
        changes[:] = [c for c in _leader_changes(ctx.writes_since(marker)) if c["epoch"] > e0]
        return bool(changes)
    waited = ctx.wait_until(f"the voters elect a new quorum leader while {leader} is frozen: a LeaderChange "
                            f"with an epoch above {e0} in the metadata log (controller.quorum.fetch.timeout.ms)",
                            elected, 40, interval_s=1.0)
    ctx.heal(h)
    new, e1 = changes[0]["leader_id"], changes[0]["epoch"]
    ctx.expect(ctx.semantics.controller_epoch_rule + f"; the new leader is not the frozen {leader}",
               ctx.semantics.controller_epoch_ok(e0, e1) and new != leader,
               {"before": [leader, e0], "after": [new, e1], "election_s": round(waited, 1)})
    after: list = []

    def resolved() -> bool:
        after[:] = _quorum(ctx)
        return after[0] is not None and after[1] >= e1
    ctx.wait_until(f"after the unpause {leader} does not lead with its stale epoch {e0}: the quorum's epoch is "
                   f">= {e1}", resolved, 60)
    _wait_healthy(ctx, f"node {leader} resumed", [leader])
    _no_leaderless(ctx, ctx.writes_since(marker), "§9.9")


def _kill_follower(ctx: RunContext) -> None:
    leader, e0 = _stable_quorum(ctx)
    marker = ctx.history_marker()
    h = ctx.fault("kill", "quorum-follower")
    victim = h.nodes[0].node_id
    t0 = ctx.recorder.now()
    ctx.wait_until(f"every partition of {T} is led by a live broker other than {victim} (§9.3)",
                   lambda: all(ctx.leader(T, p) not in (None, victim) for p in range(PARTS)), _session_s(ctx) + 40)
    ctx.sleep(max(0.0, t0 + _session_s(ctx) + 3 - ctx.recorder.now()))
    t1 = ctx.recorder.now()
    now = _quorum(ctx)
    ctx.expect(f"losing the follower {victim} changes no quorum leader and no epoch (2 of 3 voters remain)",
               now == (leader, e0), {"before": [leader, e0], "after": now})
    n = _acked(ctx, t0 + 1, t1)
    ctx.expect("writes continue while a voter is down", n > 0, {"acked": n, "window_s": round(t1 - t0 - 1, 1)})
    ctx.heal(h)
    _wait_healthy(ctx, f"voter {victim} is back", [victim])
    now = _quorum(ctx)
    ctx.expect(f"the returning voter {victim} follows: same quorum leader, same epoch", now == (leader, e0),
               {"before": [leader, e0], "after": now})
    changes = _leader_changes(ctx.writes_since(marker))
    ctx.expect("no LeaderChange in the metadata log (no election)", not changes, changes)


def _majority_loss(ctx: RunContext) -> None:
    leader, e0 = _stable_quorum(ctx)
    victim = 5                                          # leads chaos-1 ([5, 4]); not a voter
    ctx.wait_until(f"{T}-1 is led by broker {victim}", lambda: ctx.leader(T, 1) == victim, 30)
    before = {p: state(ctx, p) for p in range(PARTS)}
    marker = ctx.history_marker()
    h = ctx.fault("kill", "quorum-majority")           # both followers: the leader is left alone
    t0 = ctx.recorder.now()
    ctx.wait_until(f"no quorum leader of epoch {e0}: {leader} resigned without a majority (check quorum, "
                   "1.5 x controller.quorum.fetch.timeout.ms)", lambda: _quorum(ctx) != (leader, e0), 30)
    ctx.sleep(max(0.0, t0 + 6 - ctx.recorder.now()))
    t1 = ctx.recorder.now()
    n = _acked(ctx, t0 + 1, t1)
    ctx.expect("brokers keep serving their partitions without a quorum: writes were acknowledged",
               n > 0, {"acked": n, "window_s": round(t1 - t0 - 1, 1)})
    hb = ctx.fault("kill", f"broker:{victim}")
    tk = ctx.recorder.now()
    ctx.sleep(_session_s(ctx) + 4)
    t2 = ctx.recorder.now()
    live, st1 = ctx.live_brokers(), ctx.view.partition_state(T, 1)
    ctx.expect(f"without a quorum the death of broker {victim} is not acted on: it is still listed and still "
               f"leads {T}-1 with the same leader epoch (fencing needs a committed record, §9.3)",
               victim in live and st1 is not None and st1["leader"] == victim
               and st1["leader_epoch"] == before[1]["leader_epoch"], {"live": live, "state": st1})
    n2 = _acked(ctx, tk + 1, t2, partitions={0, 2})
    ctx.expect(f"acks=all writes to {T}-0 and {T}-2 stall: their leader 4 cannot remove the dead {victim} from "
               "the ISR without a committed AlterPartition (§9.4)", n2 == 0,
               {"acked": n2, "window_s": round(t2 - tk - 1, 1), "lost_quorum_s": round(t2 - t0, 1)})
    ctx.heal(h)                                        # the two voters start: a majority again
    after: list = []

    def elected() -> bool:
        after[:] = _quorum(ctx)
        return after[0] is not None and after[1] > e0
    ctx.wait_until(f"the quorum elects a leader with an epoch above {e0}", elected, 90)
    ctx.wait_until(f"the pending change happens: broker {victim} fenced, {T}-1 led by 4",
                   lambda: victim not in ctx.live_brokers() and ctx.leader(T, 1) == 4, _session_s(ctx) + 60)
    ctx.heal(hb)
    _wait_healthy(ctx, f"broker {victim} and the voters are back", [victim])
    writes = ctx.writes_since(marker)
    regained = [c for c in _leader_changes(writes) if c["epoch"] > e0]
    fences = [f for f in _fencing(writes, victim) if f["fenced"]]
    ctx.expect(f"broker {victim} was fenced only after the quorum had a new leader: the fencing record follows "
               "its LeaderChange in the metadata log", bool(regained) and bool(fences)
               and fences[0]["seq"] > regained[0]["seq"], {"leader_changes": regained, "fences": fences})
    moved = next((w for w in of_partition(writes, "state", T, 1) if w["leader"] != victim), None)
    # ReplicationControlManager.handleBrokerFenced writes the broker's ISR and leader changes first, then
    # the fencing record, in one batch
    ctx.expect(f"{T}-1: leader 4, leader epoch + 1, in the fencing's batch: after the new LeaderChange, just "
               "before the fencing record (§9.3, §9.2)",
               moved is not None and moved["leader"] == 4 and moved["leader_epoch"] == before[1]["leader_epoch"] + 1
               and bool(fences) and bool(regained) and regained[0]["seq"] < moved["seq"] < fences[0]["seq"],
               {"before": before[1], "write": moved})
    for p in (0, 2):
        shrink = next((w for w in of_partition(writes, "state", T, p) if victim not in w["isr"]), None)
        ctx.expect(f"{T}-{p}: {victim} left the ISR only after the quorum was back", shrink is not None
                   and bool(regained) and shrink["seq"] > regained[0]["seq"], {"write": shrink})


def _cut_from_brokers(ctx: RunContext) -> None:
    leader, e0 = _stable_quorum(ctx)
    before = {p: state(ctx, p) for p in range(PARTS)}
    marker = ctx.history_marker()
    # peers broker 4 only: with dedicated controllers every broker is an observer, and cutting them all
    # would fence them all (no leader left to move chaos-0 to)
    h = ctx.fault("link_cut", "quorum-leader", links=["controller"], peers="broker:4")
    # judged on the controller's own log (what the brokers show of it lags: on a dedicated layout broker
    # 4 is also cut from the metadata it would fetch)
    waited = ctx.wait_until("broker 4 cannot heartbeat to the active controller: the metadata log fences it (§9.3)",
                            lambda: any(f["fenced"] for f in _fencing(ctx.writes_since(marker), 4)),
                            _session_s(ctx) + 30, interval_s=1.0)
    floor = _session_s(ctx) - _heartbeat_s(ctx) - 0.5
    ctx.expect(f"not fenced before its session could have expired (>= {floor:g} s: broker.session.timeout.ms "
               "- broker.heartbeat.interval.ms)", waited >= floor, {"waited_s": round(waited, 1)})

    def led_elsewhere() -> bool:
        states = of_partition(ctx.writes_since(marker), "state", T, 0)
        return (states[-1]["leader"] if states else before[0]["leader"]) not in (-1, 4)
    ctx.wait_until(f"{T}-0 has a new leader other than 4 in the metadata log", led_elsewhere, 30, interval_s=1.0)
    ctx.heal(h)
    ctx.wait_until("broker 4 reaches the controller again and is unfenced (listed)",
                   lambda: 4 in ctx.live_brokers(), 60)
    _wait_healthy(ctx, "the cut is healed", [4])
    now = _quorum(ctx)
    ctx.expect(f"the quorum stayed intact: {leader} still leads with epoch {e0} (its links to the voters were "
               "not cut)", now == (leader, e0), {"before": [leader, e0], "after": now})
    writes = ctx.writes_since(marker)
    fences = _fencing(writes, 4)
    ctx.expect("the metadata log has broker 4 fenced, then unfenced (§9.3)",
               [f["fenced"] for f in fences][:2] == [True, False], {"fencing": fences,
                                                                     "registrations": _registrations(writes, 4)})
    _moved_off(ctx, writes, 4, before)
    ctx.expect("no LeaderChange in the metadata log (no election)", not _leader_changes(writes),
               _leader_changes(writes))


def _fence_paused_broker(ctx: RunContext) -> None:
    leader, e0 = _stable_quorum(ctx)
    before = {p: state(ctx, p) for p in range(PARTS)}
    marker = ctx.history_marker()
    h = ctx.fault("pause", "broker:4")
    waited = ctx.wait_until("the frozen broker 4 is fenced: no longer listed (§9.3)",
                            lambda: 4 not in ctx.live_brokers(), _session_s(ctx) + 30)
    floor = _session_s(ctx) - _heartbeat_s(ctx) - 0.5
    ctx.expect(f"not fenced before its session could have expired (>= {floor:g} s)", waited >= floor,
               {"waited_s": round(waited, 1)})
    ctx.wait_until(f"{T}-0 has a new leader other than 4", lambda: ctx.leader(T, 0) not in (None, 4), 30)
    ctx.heal(h)
    ctx.wait_until("broker 4 heartbeats again and is unfenced (listed)", lambda: 4 in ctx.live_brokers(), 60)
    _wait_healthy(ctx, "broker 4 resumed", [4])
    writes = ctx.writes_since(marker)
    fences = _fencing(writes, 4)
    regs = _registrations(writes, 4)
    ctx.expect("the metadata log has broker 4 fenced, then unfenced (§9.3)",
               [f["fenced"] for f in fences][:2] == [True, False], {"fencing": fences, "registrations": regs})
    ctx.expect("unfenced with its registration kept: the same broker epoch, no new registration "
               "(BrokerHeartbeatManager: a caught-up heartbeat unfences)",
               not regs and len({f["broker_epoch"] for f in fences}) == 1, {"fencing": fences, "registrations": regs})
    _moved_off(ctx, writes, 4, before)
    now = _quorum(ctx)
    ctx.expect("a broker's fencing is no controller failover: same quorum leader and epoch", now == (leader, e0),
               {"before": [leader, e0], "after": now})


def _scenario(name: str, description: str, script, brokers: int, assignment, max_s: float = 300) -> Scenario:
    return Scenario(f"quorum.{name}", description, script, tags=("conformance", "chaos"), brokers=brokers,
                    topics=_topic(assignment), kraft=True, needs_roles=("controller",), max_duration_s=max_s, reads_controller_log=True)


SCENARIOS: list[Scenario] = [
    _scenario("kill_leader", "SIGKILL the active controller (the quorum leader): a new leader, Raft epoch up "
              "(§9.1); the partitions it led move to ISR members with LE + 1, none leaderless (§9.3, §9.9)",
              _kill_leader, 4, SPREAD),
    _scenario("pause_leader", "freeze the active controller until the voters elect another one: higher epoch; "
              "after the unpause it follows (§9.1)", _pause_leader, 4, SPREAD),
    _scenario("kill_follower", "SIGKILL a quorum follower for longer than the session timeout: no election, same "
              "epoch, writes continue; it rejoins as a follower", _kill_follower, 4, SPREAD),
    _scenario("majority_loss", "kill two of three voters (the followers) for ~20 s: the leader resigns, a broker "
              "killed meanwhile is not fenced, produce to live leaders continues; once they are back a leader "
              "with a higher epoch commits the pending fencing and election", _majority_loss, 5, OUTSIDE, 360),
    _scenario("cut_from_brokers", "cut the active controller's CONTROLLER listener from broker 4, not a voter "
              "(quorum links intact): broker 4 cannot heartbeat, is fenced, loses its leaderships and "
              "ISR places; unfenced after the heal; no election (§9.3)", _cut_from_brokers, 4, FOUR_LEADS),
    _scenario("fence_paused_broker", "freeze broker 4 (not a voter) past broker.session.timeout.ms: fenced in the "
              "metadata log, leadership moved, unfenced with the same registration after it resumes (§9.3)",
              _fence_paused_broker, 4, FOUR_LEADS),
]
