"""4. Broker startup / restart (spec §5.3-§5.5, §5.8).

A returning broker is not put back into any ISR by the controller: its replicas come online
(LeaderAndIsr with the current state, no ZooKeeper write), it fetches until caught up, and each
leader adds it back through AlterPartition (same leader epoch, partition epoch + 1).

``restart.kill_all`` kills every broker at once (Jepsen's "kill all nodes"): no replica is left to
serve, so what comes back is only what each broker kept in its log. Apache Kafka appends to its log
files before it acknowledges (acks=all: every ISR member has the write in its log); a SIGKILL leaves
those writes in the files (the host's page cache is not lost with the process), and log recovery at
start keeps every intact record (``UnifiedLog`` recovery from the recovery point), so every
acknowledged write must be read back by the final drain. It faults no node alone, so it also applies
where all node ids are served by one process (a broker that keeps its data only in memory loses it
here: the durability checker names every lost write).
"""

from __future__ import annotations

from harness.scenario.scenario import RunContext, Scenario

from .common import T, state

PARTS = 3


def _hosted(ctx: RunContext, broker: int) -> list[int]:
    return [p for p in range(PARTS) if broker in ctx.view.replicas(T, p)]


def _in_all_isrs(ctx: RunContext, broker: int) -> bool:
    return all(broker in ctx.isr(T, p) for p in _hosted(ctx, broker))


def _full_isr(ctx: RunContext) -> bool:
    return all(len(ctx.isr(T, p)) == len(ctx.view.replicas(T, p)) for p in range(PARTS))


def _registered_anew(ctx: RunContext, broker: int, epoch0: int | None) -> bool:
    """``broker`` is registered again after a restart: listed, with a new broker epoch (the czxid of
    its registration znode, §5.1; the offset of its RegisterBrokerRecord in the metadata log, §9.3).
    A broker whose control plane shows no epochs (a vendor's, no readable log) counts once listed."""
    if broker not in ctx.live_brokers():
        return False
    epochs = ctx.view.broker_epochs()
    return broker not in epochs or epochs[broker] != epoch0


def _acked(ctx: RunContext, since_t: float) -> int:
    """Writes the workload got acknowledged since run time ``since_t``."""
    return sum(1 for e in ctx.recorder.read_events() if e["type"] == "client" and e["f"] == "send"
               and e["phase"] == "ok" and e["t"] >= since_t)


def _catch_up(ctx: RunContext) -> None:
    st = state(ctx)
    controller = ctx.controller()
    # a follower of chaos-0 that is not the controller (a controller stop is controller_failover's case)
    follower = next(r for r in ctx.view.replicas(T, 0) if r not in (st["leader"], controller))
    epoch0 = ctx.view.broker_epochs().get(follower)
    h = ctx.fault("stop", f"broker:{follower}", heal="start")
    t_down = ctx.recorder.now()
    ctx.wait_until(f"broker {follower} unregistered after its clean stop", lambda: follower not in ctx.live_brokers(), 60)
    ctx.expect(f"the controller removed {follower} from every ISR (controlled shutdown, §5.5 step 3)",
               not any(follower in ctx.isr(T, p) for p in range(PARTS)), [state(ctx, p) for p in range(PARTS)])
    ctx.expect(f"no partition is led by the stopped broker {follower}",
               all(ctx.leader(T, p) not in (None, follower) for p in range(PARTS)),
               [state(ctx, p) for p in range(PARTS)])
    ctx.wait_until("the workload keeps writing while the follower is down (it must catch up later)",
                   lambda: _acked(ctx, t_down) >= 500, 60, interval_s=1.0)
    down = {p: state(ctx, p) for p in range(PARTS)}
    ctx.heal(h)
    ctx.wait_until(f"broker {follower} registered again with a new broker epoch (§5.1; KRaft: unfenced, §9.3)",
                   lambda: _registered_anew(ctx, follower, epoch0), 60)
    ctx.wait_until(f"broker {follower} caught up and is back in the ISR of each of its partitions (§5.3, §5.8)",
                   lambda: _in_all_isrs(ctx, follower), 90)
    back = {p: state(ctx, p) for p in range(PARTS)}
    ctx.expect("the leaders re-added it without a leader change or epoch bump (AlterPartition, §5.8, D7)",
               all(back[p]["leader"] == down[p]["leader"] and back[p]["leader_epoch"] == down[p]["leader_epoch"]
                   for p in range(PARTS)), {"down": down, "back": back})
    ctx.wait_until(f"broker {follower}'s replicas are online: Metadata lists it in every ISR of {T}",
                   lambda: _metadata_isr_has(ctx, follower), 30)


def _metadata_isr_has(ctx: RunContext, broker: int) -> bool:
    md = ctx.cluster.admin().list_topics(topic=T, timeout=5).topics[T]
    return md.error is None and all(broker in p.isrs for p in md.partitions.values() if broker in p.replicas)


def _rolling(ctx: RunContext) -> None:
    for b in sorted(ctx.live_brokers()):
        epoch0 = ctx.view.broker_epochs().get(b)
        ctx.fault("restart", f"broker:{b}")  # clean stop (controlled shutdown) then start
        ctx.wait_until(f"broker {b} registered again with a new broker epoch (§5.1; KRaft: unfenced, §9.3)",
                       lambda b=b, epoch0=epoch0: _registered_anew(ctx, b, epoch0), 90)
        ctx.wait_until(f"full ISR of {T} after restarting broker {b} (§5.3, §5.8)", lambda: _full_isr(ctx), 120)
        ctx.wait_until("a controller is elected", lambda: ctx.controller() is not None, 30)
    ctx.expect(f"every partition of {T} has a live leader after the rolling restart",
               all(ctx.leader(T, p) in ctx.live_brokers() for p in range(PARTS)),
               [state(ctx, p) for p in range(PARTS)])


def _kill_all(ctx: RunContext) -> None:
    ids = sorted(ctx.cluster.broker_ids)
    ctx.wait_until("the workload has writes acknowledged before the kill", lambda: _acked(ctx, 0.0) >= 300, 60,
                   interval_s=0.5)
    h = ctx.fault("kill", "all-brokers", wait=False)
    ctx.sleep(2.0)
    ctx.heal(h)                                  # start every broker again (without waiting for each)
    t_back = ctx.recorder.now()
    ctx.wait_until(f"every broker ({', '.join(map(str, ids))}) serves again after the kill",
                   lambda: sorted(ctx.live_brokers()) == ids, 120, interval_s=0.5)
    ctx.wait_until(f"every partition of {T} has a live leader after all brokers were killed and started",
                   lambda: all(ctx.leader(T, p) in ctx.live_brokers() for p in range(PARTS)), 60, interval_s=0.5)
    ctx.wait_until("the workload writes again after the restart", lambda: _acked(ctx, t_back) >= 300, 90,
                   interval_s=1.0)


SCENARIOS: list[Scenario] = [
    Scenario("restart.catch_up", "clean-stop a follower while the workload writes, start it again: it catches up, "
             "rejoins the ISR, its replicas come back online (§5.3, §5.5, §5.8)", _catch_up,
             tags=("conformance", "chaos"), max_duration_s=240, kraft=True),
    Scenario("restart.rolling", "rolling clean restart of every broker, one at a time, waiting for full ISR "
             "in between (§5.3-§5.5)", _rolling, tags=("conformance", "chaos"), max_duration_s=480, kraft=True),
    Scenario("restart.kill_all", "SIGKILL every broker at once while the workload writes, start them all again: "
             "every acknowledged write is still there (what a broker keeps in its log survives the process)",
             _kill_all, tags=("conformance", "chaos"), max_duration_s=300, kraft=True, faults_one_node=False),
]
