"""9. ZooKeeper faults (spec §1.3, §2.3, §5.1-§5.4).

The controller learns everything through ZooKeeper sessions and watches. A 3-node ensemble
survives the loss of one node (follower or leader): sessions move to another server, no broker
registration disappears, no controller election happens. Without a quorum nothing can be written
or expired, so the controller's view freezes; brokers keep serving their current leadership
(produce needs no ZooKeeper write while the ISR does not change). A broker whose session does
expire is dead for the controller (§5.2) and re-registers with a new broker epoch (§5.1, §5.3).
"""

from __future__ import annotations

from harness.nemesis.targets import zookeeper_mode
from harness.scenario.scenario import RunContext, Scenario

from .common import T, state

PARTS = 3


def _zk_modes(ctx: RunContext) -> dict[int, str | None]:
    return {z.node_id: zookeeper_mode(z) for z in ctx.cluster.zookeepers}


def _serving(ctx: RunContext) -> bool:
    """The ensemble has a leader and the others follow it (a quorum serves)."""
    return _all_serve(_zk_modes(ctx))


def _all_serve(modes: dict[int, str | None]) -> bool:
    return "leader" in modes.values() and all(m in ("leader", "follower") for m in modes.values())


def _ensemble(ctx: RunContext) -> dict[int, str]:
    """Wait until every ZooKeeper node answers ``srvr`` as leader or follower; returns that snapshot
    (``srvr`` may time out on a loaded host, so roles are taken from one complete answer)."""
    snap: dict[int, str | None] = {}

    def complete() -> bool:
        snap.clear()
        snap.update(_zk_modes(ctx))
        return _all_serve(snap)
    ctx.wait_until("the ZooKeeper ensemble serves (every node is leader or follower)", complete, 60)
    return dict(snap)


def _registrations(ctx: RunContext) -> dict[int, int]:
    """Broker id -> broker epoch (czxid of /brokers/ids/<id>) read from ZooKeeper now."""
    return {b: ctx.cluster.broker_epoch(b) for b in ctx.cluster.broker_ids}


def _healthy(ctx: RunContext) -> bool:
    live = ctx.live_brokers()
    return (len(live) == len(ctx.cluster.broker_ids) and ctx.controller() in live
            and all(len(ctx.isr(T, p)) == len(ctx.view.replicas(T, p)) and ctx.leader(T, p) in live
                    for p in range(PARTS)))


def _acked(ctx: RunContext, t0: float, t1: float) -> int:
    return sum(1 for e in ctx.recorder.read_events() if e["type"] == "client" and e["f"] == "send"
               and e["phase"] == "ok" and t0 <= e["t"] <= t1)


def _lose_one(role: str):
    """Kill one ZooKeeper node (a follower or the leader) for longer than the session timeout."""
    def script(ctx: RunContext) -> None:
        modes = _ensemble(ctx)
        victim = next(z for z, m in sorted(modes.items()) if m == role)
        regs, c0, e0 = _registrations(ctx), ctx.controller(), ctx.view.controller_epoch()
        h = ctx.fault("zk_kill", f"zk:{victim}")
        ctx.wait_until(f"the surviving ZooKeeper nodes serve, one leading, one following (a quorum of 2 of 3) "
                       f"after losing the {role} {victim}",
                       lambda: sorted(str(m) for z, m in _zk_modes(ctx).items() if z != victim)
                       == ["follower", "leader"], 60)
        ctx.sleep(10)  # longer than zookeeper.session.timeout.ms: an expiring session would show by now
        after = _registrations(ctx)
        ctx.expect("no broker lost its ZooKeeper session: every registration keeps its broker epoch (§5.1)",
                   after == regs, {"before": regs, "after": after})
        ctx.expect("no controller election: same controller, same controller epoch (§2.1)",
                   ctx.controller() == c0 and ctx.view.controller_epoch() == e0,
                   {"before": [c0, e0], "after": [ctx.controller(), ctx.view.controller_epoch()]})
        ctx.heal(h)
        ctx.wait_until(f"ZooKeeper node {victim} rejoined the ensemble", lambda: _serving(ctx), 60)
        ctx.wait_until("every broker registered, one live controller, full ISR", lambda: _healthy(ctx), 60)
    return script


def _quorum_loss(ctx: RunContext) -> None:
    modes = _ensemble(ctx)
    regs, c0, e0 = _registrations(ctx), ctx.controller(), ctx.view.controller_epoch()
    leaders0 = {p: state(ctx, p) for p in range(PARTS)}
    victims = [z for z, m in sorted(modes.items()) if m == "follower"]  # both followers: the leader loses its quorum
    h = ctx.fault("zk_kill", ",".join(f"zk:{z}" for z in victims))
    t0 = ctx.recorder.now()
    ctx.wait_until("no ZooKeeper node serves (quorum lost)",
                   lambda: not any(m in ("leader", "follower") for m in _zk_modes(ctx).values()), 60)
    ctx.sleep(15)  # well past zookeeper.session.timeout.ms: without a quorum no session can expire
    t1 = ctx.recorder.now()
    n = _acked(ctx, t0 + 2, t1)
    ctx.expect("brokers keep serving their partitions without ZooKeeper: writes were acknowledged during "
               "the quorum loss (leadership needs no ZooKeeper write while the ISR is stable)", n > 0,
               {"acked": n, "window_s": round(t1 - t0 - 2, 1)})
    ctx.heal(h)
    ctx.wait_until("the ensemble has a quorum again", lambda: _serving(ctx), 90)
    ctx.wait_until("every broker registered, one live controller, full ISR", lambda: _healthy(ctx), 90)
    after = _registrations(ctx)
    ctx.expect("sessions survived the outage (ZooKeeper expires sessions only with a quorum): "
               "same broker epochs", after == regs, {"before": regs, "after": after})
    ctx.expect("no controller election: same controller, same controller epoch (§2.1)",
               ctx.controller() == c0 and ctx.view.controller_epoch() == e0,
               {"before": [c0, e0], "after": [ctx.controller(), ctx.view.controller_epoch()]})
    now = {p: state(ctx, p) for p in range(PARTS)}
    ctx.expect("leaders and leader epochs unchanged by the outage",
               all(now[p]["leader"] == leaders0[p]["leader"] and now[p]["leader_epoch"] == leaders0[p]["leader_epoch"]
                   for p in range(PARTS)), {"before": leaders0, "after": now})


def _session_expiry(ctx: RunContext) -> None:
    st = state(ctx)
    controller = ctx.controller()
    # the leader of chaos-0 unless it is the controller (whose expiry is a controller failover)
    victim = st["leader"] if st["leader"] != controller else next(
        r for r in ctx.view.replicas(T, 0) if r != controller)
    e0 = ctx.cluster.broker_epoch(victim)
    ctx.fault("zk_expire_session", f"broker:{victim}")  # waits: registration gone, then back
    e1 = ctx.cluster.broker_epoch(victim)
    ctx.expect(f"broker {victim} re-registered with a new, larger broker epoch (§5.1)",
               e1 is not None and e0 is not None and e1 > e0, {"before": e0, "after": e1})
    def regs() -> list:
        return [(e["registered"], e.get("broker_epoch")) for e in ctx.recorder.read_events()
                if e["type"] == "zk.broker" and e.get("broker_id") == victim]

    # The ZooKeeper watcher records asynchronously: the fault saw the new registration in ZooKeeper,
    # the watcher's zk.broker event for it may still be on its way (seen once: [[true,62],[false,62]]).
    ctx.wait_until(f"the observer recorded broker {victim}'s new registration",
                   lambda: bool(regs()) and regs()[-1][0], 30, interval_s=0.5)
    regs = regs()
    ctx.expect(f"/brokers/ids/{victim} was deleted, then created again: the controller sees a failure, then a "
               "startup (§5.1, §5.4)", any(not r for r, _ in regs) and bool(regs) and regs[-1] == (True, e1), regs)
    ctx.wait_until(f"every partition of {T} has a leader (the controller processed the failure, §5.2)",
                   lambda: all(ctx.leader(T, p) is not None for p in range(PARTS)), 30)
    if st["leader"] == victim:
        after = state(ctx)
        ctx.expect(f"the leader of {T}-0 changed away from the expired broker {victim}, leader epoch bumped (§5.2)",
                   after["leader"] != victim and after["leader_epoch"] > st["leader_epoch"],
                   {"before": st, "after": after})
    ctx.expect("the controller did not change (a broker's expiry is not a controller failover)",
               ctx.controller() == controller, {"before": controller, "after": ctx.controller()})
    ctx.wait_until(f"broker {victim} rejoins every ISR of {T} (§5.3, §5.8)",
                   lambda: all(victim in ctx.isr(T, p) for p in range(PARTS)), 90)


SCENARIOS: list[Scenario] = [
    Scenario("zookeeper.kill_follower", "SIGKILL a ZooKeeper follower of a 3-node ensemble: sessions move, "
             "no registration or controller change", _lose_one("follower"), tags=("conformance", "chaos"),
             zookeepers=3, max_duration_s=200),
    Scenario("zookeeper.kill_leader", "SIGKILL the ZooKeeper leader of a 3-node ensemble: a new ZooKeeper "
             "leader, sessions survive the election", _lose_one("leader"), tags=("conformance", "chaos"),
             zookeepers=3, max_duration_s=200),
    Scenario("zookeeper.quorum_loss", "kill two of three ZooKeeper nodes for 15 s, start them again: "
             "the controller's view freezes, produce continues, nothing expires", _quorum_loss,
             tags=("conformance", "chaos"), zookeepers=3, max_duration_s=240),
    Scenario("zookeeper.session_expiry", "expire a broker's ZooKeeper session (the leader of chaos-0 unless "
             "it is the controller): failure + startup with a new broker epoch (§5.1-5.4)", _session_expiry,
             tags=("conformance", "chaos"), max_duration_s=200),
]
