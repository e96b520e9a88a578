"""8. Preferred-replica election (manual and auto rebalance) and controlled shutdown (spec §4.3, §4.4,
§4.7, §5.5).

The workload topic ``chaos`` has a fixed assignment, so partition ``p`` has preferred replica
``p + 1``: ``{0: [1,2,3], 1: [2,3,1], 2: [3,1,2]}``.

What the spec says and the scripts check (ZooKeeper's transaction log is read after each act):

* preferred election (§4.3): only ``RS[0]``, only if online and in the ISR, no fallback; ISR unchanged,
  one leader-epoch bump; a partition already led by ``RS[0]`` is not elected (ELECTION_NOT_NEEDED);
* auto rebalance (§4.7): with ``auto.leader.rebalance.enable`` every
  ``leader.imbalance.check.interval.seconds`` a broker whose imbalance ratio exceeds 10 % gets its
  partitions back by preferred elections — no admin act;
* controlled shutdown (§4.4, §5.5): before the stopping broker B deregisters, each partition it
  leads gets the first replica in RS order that is in the ISR and not shutting down, ISR − B, one
  bump; each partition it follows loses B from the ISR in one write, with one bump in ZooKeeper mode
  and none on KRaft with ``metadata.version`` 3.6+ (``ctx.semantics.controller_isr_shrink_bumps``,
  §9.2); nothing more is written for them when B's registration goes; the controller (not B) and
  its epoch do not change.

  On KRaft (§9.3) "deregisters" is "is fenced": a SIGTERMed broker asks to shut down in its heartbeats
  (``wantShutDown``); while it leads partitions the controller puts it in controlled shutdown
  (``BrokerHeartbeatManager.calculateNextBrokerState`` -> ``CONTROLLED_SHUTDOWN``;
  ``ReplicationControlManager.handleBrokerInControlledShutdown`` writes a BrokerRegistrationChangeRecord
  ``inControlledShutdown`` and, in the same batch, ``generateLeaderAndIsrUpdates`` with B as the broker
  to remove: each partition with B in its ISR loses it, a partition it led gets the first acceptable
  ISR member in replica order). Once B leads nothing and the brokers caught up, the next heartbeat is
  answered ``SHUTDOWN_NOW`` and ``handleBrokerFenced`` fences it (B is in no ISR by then: no partition
  record). No UnregisterBrokerRecord is written; a broker stays registered, fenced. On the combined
  layout B is a quorum voter: the scenario stops a broker that is not the active controller, as in
  ZooKeeper mode, so the quorum keeps its leader and epoch.
"""

from __future__ import annotations

from harness.cluster import admin_ops as ao
from harness.distributions.control_history import feature_levels, of_partition
from harness.scenario.scenario import RunContext, Scenario, TopicSpec

from .common import T, state

ASSIGN = {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}
TOPICS = [TopicSpec(T, 3, 3, assignment=ASSIGN)]
PARTS = [(T, p) for p in ASSIGN]


def _state_writes(writes: list[dict], p: int) -> list[dict]:
    """The leadership writes of ``chaos-p`` among the controller's writes (harness/distributions/control_history.py)."""
    return of_partition(writes, "state", T, p)


def _controller_writes(writes: list[dict], start: dict) -> list[tuple[dict, dict]]:
    """(state before, write) for each write that bumped the leader epoch: the controller's writes.
    Leader-side ISR changes (AlterPartition, e.g. a follower lagging under load) keep the epoch (§4.10)."""
    out, prev = [], start
    for w in writes:
        if w["leader_epoch"] != prev["leader_epoch"]:
            out.append((prev, w))
        prev = w
    return out


def _expect_preferred_write(ctx: RunContext, evs: list[dict], p: int, before: dict, how: str) -> None:
    """Exactly one controller write for ``chaos-p`` among ``evs`` (the controller's writes after the act):
    leader RS[0], ISR unchanged, LE + 1 (§4.3, §9.4)."""
    cw = _controller_writes(_state_writes(evs, p), before)
    pref = ASSIGN[p][0]
    ctx.expect(f"{T}-{p}: {how} wrote leader {pref} (RS[0]) with the ISR unchanged and leader epoch + 1, "
               "in one controller write (§4.3, §9.4)",
               len(cw) == 1 and cw[0][1]["leader"] == pref and sorted(cw[0][1]["isr"]) == sorted(cw[0][0]["isr"])
               and cw[0][1]["leader_epoch"] == cw[0][0]["leader_epoch"] + 1,
               {"before": before, "controller writes": [w for _, w in cw]})


def _move_leadership_away(ctx: RunContext, p: int):
    """Kill the preferred leader of chaos-p; returns the fault handle once another replica leads."""
    pref = ASSIGN[p][0]
    ctx.wait_until(f"{T}-{p} led by its preferred replica {pref}", lambda: ctx.leader(T, p) == pref, 30)
    h = ctx.fault("kill", f"broker:{pref}")
    nxt = ASSIGN[p][1]
    ctx.wait_until(f"{T}-{p}: leader {nxt}, the next replica in RS order (§4.1)", lambda: ctx.leader(T, p) == nxt, 40)
    return h


def manual(ctx: RunContext) -> None:
    """Kill broker 1 (preferred for chaos-0); an election while it is down fails (no fallback); after it
    rejoined the ISR, ElectLeaders(PREFERRED) gives chaos-0 back to it; the others need no election."""
    h = _move_leadership_away(ctx, 0)
    res = ctx.action("elect_preferred", lambda: ao.elect_preferred(ctx.cluster, [(T, 0)]), partitions=[
        {"topic": T, "partition": 0}], via="admin-api")
    ctx.expect(f"{T}-0: preferred election refused while broker 1 is down (§4.3: no fallback; KRaft §9.4: "
               "the fallback keeps leader 2, no change -> PREFERRED_LEADER_NOT_AVAILABLE)",
               res.get((T, 0)) == "PREFERRED_LEADER_NOT_AVAILABLE", ao.by_name(res))
    ctx.expect(f"{T}-0: leader still 2", ctx.leader(T, 0) == 2, state(ctx, 0))
    ctx.heal(h)
    ctx.wait_until(f"broker 1 back in the ISR of {T}-0 (§5.8)", lambda: 1 in ctx.isr(T, 0), 60)
    ctx.sleep(2)
    ctx.expect(f"{T}-0: leadership did not return by itself (auto.leader.rebalance.enable=false)",
               ctx.leader(T, 0) == 2, state(ctx, 0))
    before = state(ctx, 0)
    others = {p: state(ctx, p) for p in (1, 2)}
    marker = ctx.history_marker()
    res = ctx.action("elect_preferred", lambda: ao.elect_preferred(ctx.cluster, PARTS),
                     partitions=[{"topic": t, "partition": p} for t, p in PARTS], via="admin-api")
    ctx.expect(f"{T}-0 elected; {T}-1 and {T}-2 already led by RS[0]: ELECTION_NOT_NEEDED (§4.3, §9.4)",
               res == {(T, 0): None, (T, 1): "ELECTION_NOT_NEEDED", (T, 2): "ELECTION_NOT_NEEDED"}, ao.by_name(res))
    ctx.wait_until(f"{T}-0: leader 1 again", lambda: ctx.leader(T, 0) == 1, 30)
    evs = ctx.writes_since(marker)
    _expect_preferred_write(ctx, evs, 0, before, "ElectLeaders(PREFERRED)")
    for p in (1, 2):
        cw = [w for _, w in _controller_writes(_state_writes(evs, p), others[p])]
        ctx.expect(f"{T}-{p}: no controller write (no election needed)", not cw, {"before": others[p], "writes": cw})


def auto_rebalance(ctx: RunContext) -> None:
    """With auto.leader.rebalance.enable and a 5 s check interval, chaos-0's leadership returns to broker
    1 by itself once it is back in the ISR."""
    h = _move_leadership_away(ctx, 0)
    marker = ctx.history_marker()
    ctx.heal(h)
    ctx.wait_until(f"{T}-0: leader 1 again without any admin act (auto rebalance, §4.7, §9.4)",
                   lambda: ctx.leader(T, 0) == 1, 120)
    writes = _state_writes(ctx.writes_since(marker), 0)
    k = next((i for i, w in enumerate(writes) if w["leader"] == 1), None)
    prev = writes[k - 1] if k else None
    ctx.expect(f"{T}-0: the rebalance elected 1 only once it was in the ISR, ISR unchanged, leader epoch + 1 "
               "(§4.3, §9.4)", prev is not None and prev["leader"] == 2 and 1 in prev["isr"]
               and sorted(writes[k]["isr"]) == sorted(prev["isr"]) and writes[k]["leader_epoch"] == prev["leader_epoch"] + 1,
               {"writes": writes})


def _left(w: dict, b: int) -> bool:
    """Whether the controller's write ``w`` takes broker ``b`` out of the live brokers: its registration
    deleted (ZooKeeper, §5.2), or fenced (KRaft, §9.3: a controlled shutdown ends in a fencing)."""
    return w.get("broker_id") == b and ((w["kind"] == "broker" and not w["registered"])
                                        or (w["kind"] == "fence" and w["fenced"]))


def controlled_shutdown(ctx: RunContext) -> None:
    """Clean stop of a broker B that leads a partition and is not the controller: its leadership and
    ISR memberships move before it deregisters (KRaft: is fenced); the controller and its epoch stay."""
    ctx.wait_until("a controller is elected", lambda: ctx.controller() is not None, 30)
    ctl, epoch = ctx.controller(), ctx.view.controller_epoch()
    b = min(x for x in (1, 2, 3) if x != ctl)
    led = b - 1                                          # chaos-(b-1) has RS[0] = b
    ctx.wait_until(f"{T}-{led} led by broker {b}", lambda: ctx.leader(T, led) == b, 30)
    shrink_bump = int(ctx.semantics.controller_isr_shrink_bumps(feature_levels(ctx.writes_since(-1))))
    before = {p: state(ctx, p) for p in ASSIGN}
    marker = ctx.history_marker()
    h = ctx.fault("stop", f"broker:{b}")                # SIGTERM: controlled shutdown, then exit
    ctx.wait_until(f"broker {b} deregistered (KRaft: fenced)", lambda: b not in ctx.live_brokers(), 60)
    evs = ctx.writes_since(marker)
    gone = [w["seq"] for w in evs if _left(w, b)]
    ctx.expect(f"broker {b}'s registration went away (KRaft: it was fenced) once", len(gone) == 1, gone)
    gone_z = gone[0] if gone else float("inf")
    for p, rs in ASSIGN.items():
        st0 = before[p]
        removals, bumps, prev = [], [], st0
        for w in _state_writes(evs, p):
            if b in prev["isr"] and b not in w["isr"]:
                removals.append((prev, w))
            if w["leader_epoch"] != prev["leader_epoch"]:
                bumps.append(w)
            prev = w
        early = [(a, w) for a, w in removals if w["seq"] < gone_z]
        late = [w for w in bumps + [w for _, w in removals] if w["seq"] > gone_z]
        ok = len(early) == 1
        if ok:
            a, w = early[0]
            isr = [r for r in a["isr"] if r != b]
            if p == led:
                new = next((r for r in rs if r != b and r in a["isr"]), None)
                what, bump = f"leader {new} (first of RS {rs} in the ISR, not shutting down), ISR − {b}", 1
                ok = w["leader"] == new
            else:
                what, bump = f"leader {a['leader']} kept, {b} removed from the ISR", shrink_bump
                ok = w["leader"] == a["leader"]
            ok = (ok and sorted(w["isr"]) == sorted(isr) and w["leader_epoch"] == a["leader_epoch"] + bump
                  and all(x is w for x in bumps if x["seq"] < gone_z))
        else:
            what, bump = ("leadership moved", 1) if p == led else (f"{b} removed from the ISR", shrink_bump)
        ctx.expect(f"{T}-{p}: before broker {b} deregistered, one controller write: {what}, leader epoch + {bump}, "
                   f"and no other leader-epoch change (§4.4, §5.5; §9.2)", ok,
                   {"before": st0, "writes removing it before": [w for _, w in early],
                    "epoch changes": bumps})
        ctx.expect(f"{T}-{p}: no controller write when broker {b}'s registration went (§5.2: not in any ISR)",
                   not late, late)
    ctx.expect(f"the controller ({ctl}) and its epoch ({epoch}) did not change",
               ctx.controller() == ctl and ctx.view.controller_epoch() == epoch
               and not [w for w in evs if w["kind"] == "controller_epoch"],
               {"controller": ctx.controller(), "epoch": ctx.view.controller_epoch()})
    ctx.heal(h)
    ctx.wait_until(f"broker {b} back in every ISR", lambda: all(b in ctx.isr(T, p) for p in ASSIGN), 60)


_WL = {"topic": T, "partitions": 3}
SCENARIOS: list[Scenario] = [
    Scenario("preferred_election.manual", "leadership moved away by a kill; ElectLeaders(PREFERRED) brings "
             "it back (refused while RS[0] is down)", manual, tags=("conformance", "chaos"), topics=TOPICS,
             workload=_WL, min_version="2.4", kraft=True, reads_controller_log=True),
    Scenario("preferred_election.auto_rebalance", "auto.leader.rebalance.enable with a 5 s check: "
             "leadership returns to RS[0] by itself", auto_rebalance, tags=("conformance", "chaos"), topics=TOPICS,
             workload=_WL, broker_config={"auto.leader.rebalance.enable": "true",
                                          "leader.imbalance.check.interval.seconds": "5"}, kraft=True, reads_controller_log=True),
    Scenario("preferred_election.controlled_shutdown", "clean stop of a partition leader: leadership and "
             "ISR move before it deregisters; controller epoch unchanged", controlled_shutdown,
             tags=("conformance", "chaos"), topics=TOPICS, workload=_WL, kraft=True, reads_controller_log=True),
]
