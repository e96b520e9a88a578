"""5. Follower fetch and ISR shrink / expand (spec §5.7, §5.8, §5.9).

A follower taken out of replication leaves the ISR after ``replica.lag.time.max.ms`` (5 s in the
test clusters) and rejoins once it has caught up. Who writes the shrink depends on the fault:

* paused follower: it also stops heartbeating to ZooKeeper, so the controller may remove it first
  (session expiry, §4.6, leader epoch + 1);
* follower cut from the other brokers only (``link_cut links=[replication]``: the inter-broker
  listener, which in ZooKeeper mode is every broker-to-broker link): it keeps its control-plane link
  (its ZooKeeper session; KRaft: its CONTROLLER connections, so it keeps heartbeating and is never
  fenced), so only its leader can shrink the ISR, with AlterPartition to the controller (§5.7, §5.9,
  §9.4; leader epoch kept, §9.2). The follower must therefore not be the controller in ZooKeeper
  mode: a leader cannot reach a controller cut from the brokers, and then nothing shrinks the ISR at
  all (``isr.partition_controller_follower`` asserts exactly that).

KRaft: a leader sends AlterPartition to the active controller over the CONTROLLER listener
(BrokerServer's AlterPartitionManager uses RaftControllerNodeProvider: the quorum leader's endpoint on
``controller.listener.names``), not over the inter-broker listener, and learns the result from the
metadata log it fetches there (reference/semantics.py ``controller_channel_is_inter_broker``). The
KRaft counterpart of "the controller cut from the brokers only, its session kept" is the active
controller (a combined node) with its replication links cut and its quorum links intact: it stays
the quorum leader, its heartbeats are local, and the leader of a partition it follows removes it
from the ISR with an AlterPartition the controller accepts — a leader-driven shrink (leader epoch
kept, §9.2), after which acks=all writes continue; nothing stalls until the heal.
"""

from __future__ import annotations

from harness.errors import NotSupported
from harness.scenario.scenario import RunContext, Scenario, TopicSpec

from .common import T, fault_times, state

CUT = {"links": ["replication"]}   # the inter-broker listener: replication, not the KRaft CONTROLLER listener


def _isr_follower_fault(fault: str, leader_driven: bool = False, **params):
    """Take a follower of chaos-0 out of replication (never the controller when ``leader_driven``)."""
    def script(ctx: RunContext) -> None:
        before = state(ctx)
        followers = [r for r in ctx.view.replicas(T, 0) if r != before["leader"]]
        if leader_driven:
            ctx.wait_until("a controller is elected", lambda: ctx.controller() is not None, 30)
            ctrl = ctx.controller()
            followers = [f for f in followers if f != ctrl]   # the leader must reach the controller (§5.9)
        follower = followers[0]
        h = ctx.fault(fault, f"broker:{follower}", **params)
        ctx.wait_until(f"follower {follower} leaves the ISR of {T}-0 after replica.lag.time.max.ms (§5.7)",
                       lambda: follower not in ctx.isr(T, 0), 40)
        mid = state(ctx)
        ctx.expect("the leader stays the leader while a follower drops out", mid["leader"] == before["leader"], mid)
        if leader_driven:
            # the follower kept its ZooKeeper session (KRaft: its heartbeats): only the leader can have shrunk
            # the ISR (AlterPartition)
            ctx.expect("a leader-driven ISR shrink keeps the leader epoch (H10, §5.9)",
                       mid["leader_epoch"] == before["leader_epoch"], mid)
            live = ctx.live_brokers()
            ctx.expect(f"follower {follower} kept its control-plane link: still registered (KRaft: unfenced, its "
                       "heartbeats do not cross the cut)", follower in live, {"live": live})
        ctx.heal(h)
        ctx.wait_until(f"follower {follower} rejoins the ISR (§5.8)", lambda: follower in ctx.isr(T, 0), 60)
    return script


STALL_S = 15.0   # three times replica.lag.time.max.ms


def _ok_after(ctx: RunContext, p: int, t_from: float, t_to: float) -> int:
    """Acknowledged sends to chaos-``p`` invoked at or after ``t_from`` and acknowledged by ``t_to``."""
    inv: dict[tuple, float] = {}
    n = 0
    for e in ctx.recorder.read_events():
        if e["type"] != "client" or e.get("f") != "send":
            continue
        k = (e["process"], e["op_id"])
        if e["phase"] == "invoke":
            inv[k] = e["t"]
        elif e["phase"] == "ok" and e.get("partition") == p and inv.get(k, -1.0) >= t_from and e["t"] <= t_to:
            n += 1
    return n


def _partition_controller_follower(ctx: RunContext) -> None:
    """Cut the controller, a follower of a partition led by another broker, from the brokers only
    (its replication links; its ZooKeeper session / KRaft quorum links kept)."""
    ctx.wait_until("a controller is elected", lambda: ctx.controller() is not None, 30)
    c = ctx.controller()
    if c not in ctx.cluster.broker_ids:
        raise NotSupported(f"{ctx.scenario.name}: the active controller {c} is no broker on this "
                           f"{ctx.cluster.distribution.name} cluster (a dedicated quorum): it follows no partition "
                           "and has no replication links to cut; run it with combined nodes (apache-kraft) or ZooKeeper")
    ep = ctx.view.controller_epoch()
    p = next(q for q in range(3) if ctx.leader(T, q) not in (None, -1, c))
    before = state(ctx, p)
    h = ctx.fault("link_cut", f"broker:{c}", **CUT)
    t_cut = ctx.recorder.now()
    if ctx.semantics.controller_channel_is_inter_broker:
        ctx.sleep(STALL_S)
        mid = state(ctx, p)
        ctx.expect(f"broker {c} keeps its ZooKeeper session and stays controller", ctx.controller() == c,
                   {"controller": ctx.controller()})
        ctx.expect(f"{T}-{p}: leader {before['leader']} cannot reach controller {c} with AlterPartition, so the "
                   f"cut follower {c} stays in the ISR past replica.lag.time.max.ms (§5.7, §5.9)",
                   c in mid["isr"] and mid["version"] == before["version"], {"before": before, "after": mid})
        stalled = _ok_after(ctx, p, t_cut + 1.0, ctx.recorder.now())
        ctx.expect(f"acks=all writes to {T}-{p} stall: its maximal ISR still holds {c}, the high watermark "
                   "cannot advance (§5.13)", stalled == 0, {"acknowledged_in_window": stalled})
        ctx.heal(h)
        t_heal = fault_times(ctx, h)["heal"]   # when the rules' removal began, not when heal() returned
        ctx.wait_until(f"acks=all writes to {T}-{p} resume once the cut is healed",
                       lambda: _ok_after(ctx, p, t_cut, ctx.recorder.now()) > 0, 60)
        ctx.expect("the stalled writes complete after the heal, none before", _ok_after(ctx, p, t_cut, t_heal) == 0)
        return
    # KRaft: AlterPartition reaches the active controller over the CONTROLLER listener (module docstring)
    ctx.wait_until(f"{T}-{p}: leader {before['leader']} removes the cut follower {c} from the ISR with an "
                   "AlterPartition over the CONTROLLER listener (§9.4, §5.7)", lambda: c not in ctx.isr(T, p), 40)
    mid = state(ctx, p)
    t_shrunk = ctx.recorder.now()
    ctx.expect(f"{T}-{p}: a leader-driven ISR shrink keeps the leader and the leader epoch (§9.2, H10)",
               mid["leader"] == before["leader"] and mid["leader_epoch"] == before["leader_epoch"],
               {"before": before, "after": mid})
    ctx.wait_until(f"acks=all writes to {T}-{p} are acknowledged with the shrunk ISR while the cut lasts (§5.13)",
                   lambda: _ok_after(ctx, p, t_shrunk, ctx.recorder.now()) > 0, 30)
    ctx.expect(f"broker {c} keeps its quorum links: still the active controller, same Raft epoch {ep}, and listed "
               "(its heartbeats do not cross the cut)",
               ctx.controller() == c and ctx.view.controller_epoch() == ep and c in ctx.live_brokers(),
               {"controller": ctx.controller(), "epoch": ctx.view.controller_epoch(), "live": ctx.live_brokers()})
    ctx.heal(h)
    ctx.wait_until(f"broker {c} rejoins the ISR of {T}-{p} once the cut is healed (§5.8)",
                   lambda: c in ctx.isr(T, p), 60)


SCENARIOS: list[Scenario] = [
    Scenario("isr.pause_follower", "pause a follower: it leaves the ISR after the lag time and rejoins",
             _isr_follower_fault("pause"), tags=("smoke", "conformance", "chaos"), kraft=True),
    Scenario("isr.partition_follower", "cut a follower (not the controller) from the other brokers, ZooKeeper "
             "link (KRaft: its CONTROLLER link) intact: leader-driven ISR shrink and expand",
             _isr_follower_fault("link_cut", leader_driven=True, **CUT), tags=("conformance", "chaos"), kraft=True),
    Scenario("isr.partition_controller_follower", "cut the controller, a follower of a partition led by another "
             "broker, from the brokers only: that leader cannot shrink the ISR (AlterPartition needs the "
             "controller), acks=all writes stall until healed; KRaft: AlterPartition travels over the CONTROLLER "
             "listener, so the leader shrinks the ISR (leader epoch kept) and writes continue",
             _partition_controller_follower, tags=("conformance", "chaos"), kraft=True,
             topics=[TopicSpec(T, 3, 3)],
             # the stall outlasts no delivery timeout: a timed-out message would make librdkafka bump
             # the producer epoch and possibly duplicate in-flight messages (librdkafka #4953)
             workload={"topic": T, "partitions": 3, "acks": "all", "enable_idempotence": True,
                       "delivery_timeout_ms": 120000, "request_timeout_ms": 10000}),
]
