"""10. Network partitions (spec §1.3, §2.3-§2.5, §5.2, §5.7-§5.8; KRaft §9.1, §9.3).

In ZooKeeper mode the controller sees the network only through ZooKeeper sessions: a broker cut
from ZooKeeper for longer than ``zookeeper.session.timeout.ms`` is dead (§5.2) and re-registers
with a new broker epoch when it can reach ZooKeeper again (§5.1); a broker cut only from its
clients keeps its session, its replication and its ISR membership.

KRaft (written once for both, the differences asked of ``ctx.semantics``, reference/semantics.py):
the control plane is the active controller, reached over the CONTROLLER listener. A broker cut from
it stops heartbeating and is fenced after ``broker.session.timeout.ms`` (9 s): no longer listed in
Metadata, its leaderships moved to ISR members (leader epoch + 1), removed from every ISR
(ReplicationControlManager.handleBrokerFenced). When its heartbeats arrive again, caught up, the
controller unfences it with the same registration and broker epoch
(BrokerHeartbeatManager.calculateNextBrokerState; BrokerLifecycleManager only retries a failed
heartbeat, it never re-registers for it): ``control_plane_loss_reregisters`` is False. With combined
nodes (brokers 1-3 are the voters) the isolated controller is also the quorum leader: it resigns
when it hears from no majority (check quorum, 1.5 x ``controller.quorum.fetch.timeout.ms``), the
other voters elect a leader with a higher Raft epoch (§9.1), and after the heal it cannot win a vote
(its log's last epoch is older than theirs, KafkaRaftClient.handleVoteRequest). Without pre-vote
(Kafka before 4.0, KIP-996) a voter that was cut off returns with the epochs it took alone and may
force one more election; the controller of the majority is therefore checked during the cut.
A broker cut off with its client link up keeps answering Metadata from its stale cache; the protocol
view asks the brokers the quorum leader reports behind last (harness/observer/protocol_view.py).
"""

from __future__ import annotations

from harness.scenario.scenario import RunContext, Scenario

from .common import T, state, wait_or_diagnose

PARTS = 3


def _states(ctx: RunContext) -> dict[int, dict]:
    return {p: state(ctx, p) for p in range(PARTS)}


def _hosted(ctx: RunContext, broker: int) -> list[int]:
    return [p for p in range(PARTS) if broker in ctx.view.replicas(T, p)]


def _out_of_isrs(ctx: RunContext, broker: int) -> bool:
    """``broker`` left every ISR, except where it is the last member: the controller keeps the last
    ISR member (§4.6, §4.9)."""
    return all(broker not in isr or isr == [broker] for isr in (ctx.isr(T, p) for p in range(PARTS)))


def _failed_over(ctx: RunContext, broker: int) -> bool:
    """Every partition is led by another live broker, or is offline (leader -1) because ``broker`` was
    its last ISR member: a leader cut from its followers may shrink the ISR to itself before its own
    session expires (§5.7 with replica.lag.time.max.ms < session timeout), and then no clean
    election is possible until it returns (§4.9, unclean election disabled)."""
    live = ctx.live_brokers()
    for p in range(PARTS):
        st = state(ctx, p)
        if not ((st["leader"] != broker and st["leader"] in live) or (st["leader"] == -1 and st["isr"] == [broker])):
            return False
    return True


def _all_led(ctx: RunContext) -> bool:
    live = ctx.live_brokers()
    return all(ctx.leader(T, p) in live for p in range(PARTS))


def _in_all_isrs(ctx: RunContext, broker: int) -> bool:
    return all(broker in ctx.isr(T, p) for p in _hosted(ctx, broker))


def _wait_rejoin(ctx: RunContext, broker: int, timeout_s: float = 90) -> None:
    """Wait until every partition has a live leader again (offline ones are re-elected when their
    last ISR member returns, §8.4 P1) and ``broker`` is back in every ISR of its partitions; on a
    timeout record diagnostics."""
    wait_or_diagnose(ctx, f"every partition of {T} has a live leader after {broker} returned (§5.3 step 3, P1)",
                     lambda: _all_led(ctx), 60, [broker], lambda: _states(ctx))
    wait_or_diagnose(ctx, f"broker {broker} rejoins every ISR of {T} (§5.3, §5.8)",
                     lambda: _in_all_isrs(ctx, broker), timeout_s, [broker], lambda: _states(ctx))


def _wait_rejoin_all(ctx: RunContext) -> None:
    brokers = list(ctx.cluster.broker_ids)
    wait_or_diagnose(ctx, f"every broker listed and every partition of {T} led with its full ISR",
                     lambda: ctx.live_brokers() == sorted(brokers) and _all_led(ctx)
                     and all(_in_all_isrs(ctx, b) for b in brokers), 90, brokers, lambda: _states(ctx))


def _acked(ctx: RunContext, t0: float, t1: float, partitions) -> int:
    parts = set(partitions)
    return sum(1 for e in ctx.recorder.read_events() if e["type"] == "client" and e["f"] == "send"
               and e["phase"] == "ok" and t0 <= e["t"] <= t1 and e.get("partition") in parts)


def _cut_from_control_plane(ctx: RunContext, victim: int, fault: str, target: str, during=None, **params) -> None:
    """Apply a fault that cuts ``victim`` from the control plane (ZooKeeper; KRaft: the active
    controller) and the other brokers; expect it to be taken as failed (ZooKeeper mode: session expiry,
    §5.2; KRaft: fencing, §9.3): out of every ISR, leaders elsewhere; then its return
    (``ctx.semantics.control_plane_return_rule``)."""
    sem = ctx.semantics
    e0 = ctx.view.broker_epochs().get(victim)    # ZooKeeper: czxid; KRaft: its RegisterBrokerRecord's offset
    before = _states(ctx)
    h = ctx.fault(fault, target, **params)
    ctx.wait_until(f"broker {victim}: {sem.control_plane_loss_rule}", lambda: victim not in ctx.live_brokers(), 60)
    ctx.wait_until(f"every partition of {T} is led by a live broker other than {victim}, or offline with "
                   f"{victim} as its last ISR member (§5.2 step 3, §9.3, §4.9)", lambda: _failed_over(ctx, victim), 40)
    ctx.wait_until(f"broker {victim} removed from every ISR of {T} where it is not the last member "
                   "(§5.2 step 4, §9.3, §4.6)", lambda: _out_of_isrs(ctx, victim), 40)
    mid = _states(ctx)
    ctx.expect("each leader change bumped the leader epoch (§4.10, §9.2)",
               all(mid[p]["leader_epoch"] > before[p]["leader_epoch"] for p in range(PARTS)
                   if mid[p]["leader"] != before[p]["leader"]), {"before": before, "during": mid})
    if during is not None:
        during()
    ctx.heal(h)
    _returns(ctx, victim, e0)
    _wait_rejoin(ctx, victim)


def _returns(ctx: RunContext, victim: int, e0: int | None) -> None:
    """``victim`` reaches the control plane again: ZooKeeper mode registers it anew (a new broker
    epoch, §5.1), KRaft unfences it with the registration it had (§9.3) — reference/semantics.py
    ``control_plane_loss_reregisters``."""
    sem = ctx.semantics
    if sem.control_plane_loss_reregisters:
        ctx.wait_until(f"broker {victim} {sem.control_plane_return_rule}",
                       lambda: ctx.view.broker_epochs().get(victim) not in (None, e0), 60)
        return
    ctx.wait_until(f"broker {victim} reaches the active controller again: listed (unfenced, §9.3)",
                   lambda: victim in ctx.live_brokers(), 60)
    e1 = ctx.view.broker_epochs().get(victim)
    ctx.expect(f"broker {victim} {sem.control_plane_return_rule}", e1 is not None and e1 == e0,
               {"before": e0, "now": e1})


def unmoved_unless_fenced(before: dict[int, dict], after: dict[int, dict], writes: list[dict]) -> tuple[bool, dict]:
    """Whether every partition kept its leader and leader epoch from ``before`` to ``after`` (states by
    partition), leaving out those whose leader a fence write among ``writes`` (control_history) fenced;
    with what was judged."""
    fenced = sorted({w["broker_id"] for w in writes if w.get("kind") == "fence" and w.get("fenced")})
    judged = [p for p in sorted(before) if before[p]["leader"] not in fenced]
    ok = all((after[p]["leader"], after[p]["leader_epoch"]) == (before[p]["leader"], before[p]["leader_epoch"])
             for p in judged)
    return ok, {"before": before, "after": after, "fenced": fenced, "judged": judged}


def _isolate_controller(ctx: RunContext) -> None:
    sem = ctx.semantics
    ctx.wait_until("a controller is elected", lambda: ctx.controller() is not None, 20)
    c0, ep0 = ctx.controller(), ctx.view.controller_epoch()

    def replaced() -> None:
        ctx.wait_until(f"a new controller replaces the isolated controller {c0} (§2.1; KRaft: the other voters "
                       "elect a quorum leader, §9.1)", lambda: ctx.controller() not in (None, c0), 60)
        ctx.wait_until(sem.controller_epoch_rule, lambda: sem.controller_epoch_ok(ep0, ctx.view.controller_epoch()),
                       20)
    if c0 in ctx.cluster.broker_ids:
        # peer links: other brokers and ZooKeeper (KRaft: the other voters and brokers); clients keep theirs
        _cut_from_control_plane(ctx, c0, "isolate", f"broker:{c0}", during=replaced)
    else:
        # a controller-only node (apache-kraft-dedicated): the new active controller writes no partition
        # state of its own (§9.9). It does fence a broker whose heartbeats reach it only after
        # broker.session.timeout.ms from its activation (§9.3; Semantics.failover_rewrites_partitions),
        # and that broker's leaderships move: seen on 4.4.0, broker 3's heartbeat channel still aimed at
        # the isolated controller 8 s after the new one was active ("Fencing broker 3 at epoch 22 because
        # its session has timed out", 9.0 s after "Becoming the active controller"). Only partitions
        # led by a broker fenced meanwhile (its fence record in the metadata log) may change.
        before = _states(ctx)
        marker = ctx.history_marker()
        h = ctx.fault("isolate", "controller")
        replaced()
        ctx.heal(h)
        _wait_rejoin_all(ctx)
        after = _states(ctx)
        ok, detail = unmoved_unless_fenced(before, after, ctx.writes_since(marker))
        ctx.expect("a failover of a controller that is no broker moves no partition: same leaders and leader "
                   "epochs (§9.9), except where the new controller fenced the leader (§9.3)", ok, detail)
    # ZooKeeper: /controller is held by the new one; KRaft: the voters that moved on have a log with a
    # higher last epoch than c0's, so they refuse it their votes (KafkaRaftClient.handleVoteRequest)
    ctx.expect(f"the old controller {c0} did not take the controller role back",
               ctx.controller() != c0, {"controller": ctx.controller()})


def _minority_split(ctx: RunContext) -> None:
    controller = ctx.controller()
    st = state(ctx)
    # the minority: the leader of chaos-0 unless it is the controller (that is isolate_controller)
    victim = st["leader"] if st["leader"] != controller else next(
        r for r in ctx.view.replicas(T, 0) if r != controller)

    def majority_kept_its_controller() -> None:
        # checked while the minority is cut off: once it returns, a KRaft voter without pre-vote (before
        # Kafka 4.0, KIP-996) asks for votes with the epochs it took alone and may force a new election
        ctx.expect("the controller (in the majority, with ZooKeeper / the quorum) did not change",
                   ctx.controller() == controller, {"before": controller, "after": ctx.controller()})
    _cut_from_control_plane(ctx, victim, "partition", f"broker:{victim}", during=majority_kept_its_controller)


def _client_only(ctx: RunContext) -> None:
    # an idempotent producer needs a producer id (InitProducerId, sent to any broker) before its first
    # send: cut the client link only once writes flow on every partition, or all partitions stall
    ctx.wait_until(f"the workload's writes are acknowledged on every partition of {T}", lambda: all(
        _acked(ctx, 0, ctx.recorder.now() + 1, [p]) > 0 for p in range(PARTS)), 60, interval_s=0.5)
    st = state(ctx)
    leader = st["leader"]
    led = [p for p in range(PARTS) if ctx.leader(T, p) == leader]
    others = [p for p in range(PARTS) if p not in led]
    e0 = ctx.view.broker_epochs().get(leader)     # None where the control plane shows no epochs
    before = _states(ctx)
    h = ctx.fault("link_cut", f"broker:{leader}", links=["client"])
    t0 = ctx.recorder.now()
    ctx.sleep(15)  # > zookeeper.session.timeout.ms and > replica.lag.time.max.ms (5 s)
    t1 = ctx.recorder.now()
    during = _states(ctx)
    ctx.expect("ISR, leaders and leader epochs unchanged: replication and the ZooKeeper session (KRaft: "
               "controller heartbeats) are intact",
               all(set(during[p]["isr"]) == set(before[p]["isr"]) and during[p]["leader"] == before[p]["leader"]
                   and during[p]["leader_epoch"] == before[p]["leader_epoch"] for p in range(PARTS)),
               {"before": before, "during": during})
    # the ZooKeeper session and KRaft's heartbeats (over the controller listener) are untouched by a client cut
    e1 = ctx.view.broker_epochs().get(leader)
    ctx.expect(f"broker {leader} keeps its registration: listed, unfenced, same broker epoch (§5.1, §9.3)",
               leader in ctx.live_brokers() and e1 == e0, {"before": e0, "now": e1, "live": ctx.live_brokers()})
    cut = _acked(ctx, t0 + 3, t1, led)
    ctx.expect(f"no write to the partitions led by {leader} ({led}) was acknowledged while its client link was cut",
               cut == 0, {"acked": cut, "partitions": led})
    ctx.heal(h)
    t2 = ctx.recorder.now()
    ctx.wait_until(f"writes to {led} are acknowledged again after the heal (clients reconnect)",
                   lambda: _acked(ctx, t2, ctx.recorder.now() + 1, led) > 0, 60, interval_s=1.0)
    ctx.expect(f"writes to the other partitions {others} were acknowledged while {leader} was cut off",
               _acked(ctx, t0 + 3, t1, others) > 0 if others else True,
               {"acked": _acked(ctx, t0 + 3, t1, others), "partitions": others})


def _one_way(ctx: RunContext) -> None:
    st = state(ctx)
    controller = ctx.controller()
    follower = next(r for r in ctx.view.replicas(T, 0) if r not in (st["leader"], controller))
    # direction "out": its packets to the other brokers and ZooKeeper are dropped; it still receives theirs
    _cut_from_control_plane(ctx, follower, "one_way", f"broker:{follower}", direction="out")
    after = state(ctx)
    ctx.expect(f"the leader of {T}-0 did not change (a follower was cut)", after["leader"] == st["leader"],
               {"before": st, "after": after})


SCENARIOS: list[Scenario] = [
    Scenario("network.isolate_controller", "isolate the controller from brokers and ZooKeeper (KRaft: the other "
             "voters and brokers): session expiry / fencing, new controller (epoch + 1; KRaft: higher Raft epoch), "
             "leaders elsewhere; it re-registers (KRaft: is unfenced) after the heal (§2.3-2.5, §9.1, §9.3)",
             _isolate_controller, tags=("conformance", "chaos"), max_duration_s=240, kraft=True),
    Scenario("network.minority_split", "partition one broker (the leader of chaos-0, not the controller) from the "
             "majority and ZooKeeper (KRaft: the quorum): broker failure (§5.2; KRaft: fenced, §9.3), return with a "
             "new epoch (KRaft: unfenced, same epoch)", _minority_split,
             tags=("conformance", "chaos"), max_duration_s=240, kraft=True),
    Scenario("network.client_only", "cut only the client link of the leader of chaos-0: replication, session and "
             "ISR intact; its partitions' writes stall until the heal", _client_only,
             tags=("conformance", "chaos"), max_duration_s=200, kraft=True),
    Scenario("network.one_way", "one-way loss of a follower (its outgoing packets dropped): ZooKeeper session "
             "expires (KRaft: no heartbeat reaches the controller, fenced), the controller removes it from the ISR "
             "(§5.2, §9.3), it returns with a new epoch (KRaft: unfenced, same epoch)", _one_way,
             tags=("conformance", "chaos"), max_duration_s=240, kraft=True),
]
