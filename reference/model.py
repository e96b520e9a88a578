"""The ZK-mode controller as a pure state machine (spec §2, §4.7, §5, §10).

``ControllerModel.step(state, event)`` returns **every** allowed outcome (next state + the
ZooKeeper writes, in order) of one event; the input state is never modified. Choice points where
Apache Kafka does not determine the result (controller race winner §2.1, processing order of
brokers in one batch §4.9/D8, legacy reassignment RS order §7.11) are enumerated. Timing
nondeterminism (when a leader shrinks/expands its ISR, when StopReplica responses arrive) is
expressed by those being separate events; :meth:`ControllerModel.enabled_events` lists them.

Events (spec §10.2) are the dataclasses in reference/model_events.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from reference import deletion, reassignment
from reference.context import Ctx, Write
from reference.elections import (RULE_INIT, RULE_PREFERRED, RULE_SHUTDOWN, controlled_shutdown_election,
                                 init_new_partition, offline, preferred_election)
from reference.model_events import (AlterPartition, AutoRebalance, BrokerBounce, BrokerFailure, BrokerStartup,
                                    CompleteTopicDeletion, ControlledShutdown, ControllerElected, ControllerLost,
                                    CreateTopic, DeleteTopic, ElectPreferred, ElectUnclean, Event, Reassign,
                                    SetUnclean)
from reference.profiles import GATE_ALTER_PARTITION, GATE_FENCING, GATE_KIP455, GATE_KIP841, GATE_RECOVERY, GATE_TOPIC_ID
from reference.state import NO_LEADER, RECOVERED, Assignment, ClusterState, ModelConfig, TopicInfo


@dataclass
class Outcome:
    """One allowed result of an event: the next state and the writes, in ZooKeeper order."""
    state: ClusterState
    writes: list[Write]
    choices: tuple[tuple[str, int], ...] = ()
    error: str | None = None


# ---------------------------------------------------------------------------------- the model
class ControllerModel:
    """Pure ZK-mode controller. ``config.version`` selects the Apache behaviour (§10.3 gates)."""

    def __init__(self, config: ModelConfig | None = None):
        self.config = config or ModelConfig()

    def initial_state(self) -> ClusterState:
        return ClusterState(config=self.config)

    # -- stepping --------------------------------------------------------------------------
    def step(self, state: ClusterState, event: Event) -> list[Outcome]:
        """All allowed outcomes of ``event`` in ``state`` (depth-first over every choice point)."""
        outcomes: list[Outcome] = []
        seen: set = set()
        stack: list[tuple[int, ...]] = [()]
        while stack:
            prefix = stack.pop()
            ctx = Ctx(state.clone(), prefix=prefix)
            err = self._dispatch(ctx, event)
            for i in range(len(prefix), len(ctx.taken)):
                for alt in range(ctx.widths[i] - 1, 0, -1):
                    stack.append(tuple(ctx.taken[:i]) + (alt,))
            key = tuple(w.sig() for w in ctx.writes)
            if key in seen:
                continue
            seen.add(key)
            outcomes.append(Outcome(ctx.s, ctx.writes, tuple(zip(ctx.labels, ctx.taken)), err))
        return outcomes

    def step_one(self, state: ClusterState, event: Event,
                 picker: Callable[[Sequence[Any], str], int] | None = None) -> Outcome:
        """One outcome, resolving each choice point with ``picker(options, label) -> index``
        (default: the first option). Used by generators that need one path, not all."""
        ctx = Ctx(state.clone(), picker=picker)
        err = self._dispatch(ctx, event)
        return Outcome(ctx.s, ctx.writes, tuple(zip(ctx.labels, ctx.taken)), err)

    def _dispatch(self, ctx: Ctx, ev: Event) -> str | None:
        handler = getattr(self, "_on_" + type(ev).__name__, None)
        if handler is None:
            raise TypeError(f"unknown model event {ev!r}")
        return handler(ctx, ev)

    # -- §4.7: the offline election trigger (triggerOnlinePartitionStateChange) ---------------
    def _online_partition_state_change(self, ctx: Ctx, topics=None, allow_unclean_for=()) -> None:
        """Every New/Offline partition not queued for deletion → OnlinePartition (PSM:59-83):
        initialization (§4.1.1) or offline election (§4.1.2-4.1.3)."""
        s = ctx.s
        live = s.live_set()
        for topic in sorted(s.topics if topics is None else topics):
            if topic in s.deleting or topic not in s.topics:
                continue
            for p, a in sorted(s.topics[topic].assignments.items()):
                tp = (topic, p)
                st = s.partitions.get(tp)
                if st is None:
                    e = init_new_partition(a.rs, live)
                    if e is not None:
                        ctx.create_state(tp, e.leader, e.isr, RULE_INIT)
                    continue
                if st.leader != NO_LEADER and st.leader in live:
                    continue
                allow = s.unclean_allowed(topic) or tp in allow_unclean_for
                e, unclean = offline(a.rs, st.isr, st.recovery, live, allow, s.at_least(GATE_RECOVERY))
                if e is not None:
                    ctx.write_state(tp, e.leader, e.isr, e.recovery, "§4.1.3/D2" if unclean else "§4.1.2/D1")

    def _replicas_on(self, s: ClusterState, brokers, include_deleting: bool = False) -> dict[int, list]:
        out: dict[int, list] = {}
        for topic, t in s.topics.items():
            if topic in s.deleting and not include_deleting:
                continue
            for p, a in t.assignments.items():
                if (topic, p) not in s.partitions:
                    continue
                for r in a.rs:
                    if r in brokers:
                        out.setdefault(r, []).append((topic, p))
        return out

    # -- §5.2 broker failure -----------------------------------------------------------------
    def _broker_failure(self, ctx: Ctx, dead) -> None:
        """``onBrokerFailure`` (KC:635-693): elections first, then §4.6 removals (D10)."""
        s = ctx.s
        s.shutting_down -= set(dead)                                   # step 1
        self._online_partition_state_change(ctx)                       # steps 2-3
        ctx.offline_replicas(self._replicas_on(s, dead), "§5.2-4/§4.6", "dead broker order")   # step 4 (D8)
        deletion.halt_for_dead_brokers(ctx, dead)                      # step 5

    def _broker_startup(self, ctx: Ctx, new) -> None:
        """``onBrokerStartup`` (KC:572-604): offline elections, resume reassignments and deletions."""
        self._online_partition_state_change(ctx)                       # step 3
        reassignment.resume_reassignments(ctx, only_brokers=new)       # step 4
        deletion.resume_deletions(ctx)                                 # step 5

    def _on_BrokerStartup(self, ctx: Ctx, ev: BrokerStartup):
        s = ctx.s
        if ev.broker in s.registered:
            return self._on_BrokerBounce(ctx, BrokerBounce(ev.broker))
        z = ctx.zxid()
        s.registered[ev.broker] = z
        ctx.emit("broker", ev.broker, (True, z), "§1.3", zxid=z)
        if s.controller is not None:
            self._broker_startup(ctx, {ev.broker})
        return None

    def _on_BrokerBounce(self, ctx: Ctx, ev: BrokerBounce):
        """§5.4: one ``/brokers/ids`` change with a new czxid = failure then startup (2.2+ broker epochs)."""
        s = ctx.s
        b = ev.broker
        if b not in s.registered:
            return "BROKER_NOT_REGISTERED"
        if s.controller == b:      # the controller's own session ended: it is no longer controller
            return self._on_BrokerFailure(ctx, BrokerFailure((b,)))
        z = ctx.zxid()
        ctx.emit("broker", b, (False, None), "§1.3", zxid=z)
        z2 = ctx.zxid()
        ctx.emit("broker", b, (True, z2), "§1.3", zxid=z2)
        if s.controller is not None:
            s.shutting_down.discard(b)
            if s.at_least(GATE_FENCING):     # KC processBrokerChange: removeLiveBrokers, onBrokerFailure, ...
                del s.registered[b]
                self._broker_failure(ctx, {b})
            s.registered[b] = z2             # ... addLiveBrokers, onBrokerStartup
            self._broker_startup(ctx, {b})
        else:
            s.registered[b] = z2
        return None

    def _on_BrokerFailure(self, ctx: Ctx, ev: BrokerFailure):
        s = ctx.s
        dead = {b for b in ev.brokers if b in s.registered}
        if not dead:
            return "BROKER_NOT_REGISTERED"
        z = ctx.zxid()    # one closeSession/child change; ephemeral /controller goes with its session
        for b in sorted(dead):
            del s.registered[b]
            ctx.emit("broker", b, (False, None), "§1.3", zxid=z)
        if s.controller in dead:
            s.controller = None
            ctx.emit("controller", None, None, "§2.3", zxid=z)
            return None
        if s.controller is not None:
            self._broker_failure(ctx, dead)
        return None

    # -- §5.5 controlled shutdown ---------------------------------------------------------------
    def _on_ControlledShutdown(self, ctx: Ctx, ev: ControlledShutdown):
        """KC:1360-1410: leaders move (D5), followers leave the ISR (§4.6), RF > 1 only (D18)."""
        s = ctx.s
        b = ev.broker
        if s.controller is None:
            return "NOT_CONTROLLER"
        if b not in s.registered:
            return "BROKER_NOT_AVAILABLE"
        s.shutting_down.add(b)
        led, followed = [], []
        for topic, t in sorted(s.topics.items()):
            if topic in s.deleting:
                continue
            for p, a in sorted(t.assignments.items()):
                tp = (topic, p)
                st = s.partitions.get(tp)
                if st is None or b not in a.rs or len(a.rs) <= 1:
                    continue
                (led if st.leader == b else followed).append(tp)
        for tp in led:
            st = s.partitions[tp]
            e = controlled_shutdown_election(s.assignment(tp).rs, st.isr, st.recovery, s.registered, s.shutting_down)
            if e is not None:
                ctx.write_state(tp, e.leader, e.isr, e.recovery, RULE_SHUTDOWN)
        for tp in followed:
            ctx.remove_replica_from_isr(tp, b, "§5.5-3/§4.6")
        return None

    # -- §2 controller election and failover -------------------------------------------------------
    def _on_ControllerLost(self, ctx: Ctx, ev: ControllerLost):
        s = ctx.s
        if s.controller is None:
            return "NO_CONTROLLER"
        s.controller = None
        ctx.emit("controller", None, None, "§2.3")
        return None

    def _on_ControllerElected(self, ctx: Ctx, ev: ControllerElected):
        """§2.1 (winner = choice point) + §2.2 (epoch +1, D11) + §2.4 failover (D12)."""
        s = ctx.s
        if s.controller is not None:
            return "CONTROLLER_EXISTS"
        if ev.broker is None:
            if not s.registered:
                return "NO_BROKERS"
            winner = ctx.choose(sorted(s.registered), "controller race winner")
        else:
            if ev.broker not in s.registered:
                return "BROKER_NOT_REGISTERED"
            winner = ev.broker
        if s.controller_epoch_version < 0:               # §1.2: /controller_epoch created
            if s.at_least(GATE_FENCING):
                s.controller_epoch, s.controller_epoch_version = 0, 0
                ctx.emit("controller_epoch", None, (0, 0), "§1.2")
            else:
                s.controller_epoch, s.controller_epoch_version = 0, -1
        s.controller = winner
        s.controller_epoch += 1
        s.controller_epoch_version += 1
        z = ctx.zxid()
        ctx.emit("controller", None, winner, "§2.1", zxid=z)
        ctx.emit("controller_epoch", None, (s.controller_epoch, s.controller_epoch_version), "§2.2/D11",
                 zxid=z if s.at_least(GATE_FENCING) else None)    # 2.0/2.1: separate later write (§2.1.5)
        self._failover(ctx)
        return None

    def _failover(self, ctx: Ctx) -> None:
        """``onControllerFailover`` (§2.4 steps 4-10)."""
        s = ctx.s
        s.shutting_down.clear()                                          # step 4
        s.deletion_started.clear()
        if s.deleting and not s.config.delete_topic_enable:              # step 5
            deletion.queue_deletions(ctx, list(s.deleting))
        dead = {r for t in s.topics.values() for a in t.assignments.values() for r in a.rs
                if r not in s.registered}
        ctx.offline_replicas(self._replicas_on(s, dead, include_deleting=True),
                             "§2.4-7/D12", "failover dead replica order")   # step 7 (leader=-1 first, D12)
        self._online_partition_state_change(ctx)                         # step 8
        reassignment.resume_reassignments(ctx)                           # step 9 (A1 per resume)
        deletion.resume_deletions(ctx)                                   # step 10

    # -- §6 topics ---------------------------------------------------------------------------------
    def _on_CreateTopic(self, ctx: Ctx, ev: CreateTopic):
        s = ctx.s
        if ev.topic in s.topics:
            return "TOPIC_ALREADY_EXISTS"
        assignments = {int(p): Assignment(rs=tuple(rs)) for p, rs in ev.assignment}
        if not assignments or any(not a.rs or len(set(a.rs)) != len(a.rs) for a in assignments.values()):
            return "INVALID_REPLICA_ASSIGNMENT"
        tid = ev.topic_id
        if tid is None and s.at_least(GATE_TOPIC_ID):
            tid = f"{ev.topic}-id{s.next_zxid}"
        if not s.at_least(GATE_TOPIC_ID):
            tid = None
        s.topics[ev.topic] = TopicInfo(ev.topic, tid, assignments, ev.unclean, version=-1)
        ctx.write_topic(ev.topic, "§6.1")
        if s.controller is not None:
            self._online_partition_state_change(ctx, topics=[ev.topic])   # §6.1 controller step 3 (D3)
        return None

    def _on_DeleteTopic(self, ctx: Ctx, ev: DeleteTopic):
        s = ctx.s
        if ev.topic not in s.topics:
            return "UNKNOWN_TOPIC_OR_PARTITION"
        if ev.topic in s.deleting:
            return "TOPIC_ALREADY_MARKED_FOR_DELETION"
        s.deleting.add(ev.topic)
        ctx.emit("delete_topics", None, tuple(sorted(s.deleting)), "§6.2")
        if s.controller is not None:
            deletion.queue_deletions(ctx, [ev.topic])
        return None

    def _on_CompleteTopicDeletion(self, ctx: Ctx, ev: CompleteTopicDeletion):
        if not deletion.can_complete(ctx.s, ev.topic):
            return "DELETION_NOT_STARTED"
        deletion.complete_deletion(ctx, ev.topic)
        return None

    # -- §5.9 / §5.10 leader-initiated ISR change ---------------------------------------------
    def _on_AlterPartition(self, ctx: Ctx, ev: AlterPartition):
        s = ctx.s
        tp = (ev.topic, ev.partition)
        st = s.partitions.get(tp)
        if st is None or ev.topic in s.deleting:
            return "UNKNOWN_TOPIC_OR_PARTITION"
        if st.leader == NO_LEADER or st.leader not in s.registered:
            return "STALE_BROKER_EPOCH"          # the sender must be a registered leader
        isr = tuple(ev.isr)
        if st.leader not in isr or not isr or len(set(isr)) != len(isr):
            return "INVALID_REQUEST"
        if not set(isr) <= set(s.assignment(tp).rs):
            return "INVALID_REQUEST"
        if isr == st.isr and st.recovery == RECOVERED:
            return None                          # step 5: idempotent, no write
        if s.at_least(GATE_ALTER_PARTITION):
            if s.controller is None:
                return "NOT_CONTROLLER"
            if s.at_least(GATE_KIP841) and any(not s.is_live(r) for r in isr if r not in st.isr):
                return "INELIGIBLE_REPLICA"      # step 8 (KIP-841, 3.3+)
            ctx.write_state(tp, st.leader, isr, RECOVERED, "§5.9/H10", bump=False)
        else:   # §5.10 legacy: the leader writes itself, with the controller epoch it learned
            ctx.write_state(tp, st.leader, isr, RECOVERED, "§5.10/H10", bump=False,
                            controller_epoch=st.controller_epoch)
        if s.controller is not None:
            reassignment.maybe_complete(ctx, tp)  # step 10 / §7.2 trigger 3
        return None

    # -- §7 reassignment ------------------------------------------------------------------------
    def _on_Reassign(self, ctx: Ctx, ev: Reassign):
        s = ctx.s
        tp = (ev.topic, ev.partition)
        if ev.via == "api":
            if not s.at_least(GATE_KIP455):
                return "UNSUPPORTED_VERSION"
            return reassignment.api_reassign(ctx, tp, ev.target)
        if ev.via != "zk":
            raise ValueError(f"Reassign.via must be 'api' or 'zk', not {ev.via!r}")
        if ev.target is None:
            return "INVALID_REQUEST"                     # the znode cannot cancel
        z = dict(s.reassign_znode or {})
        z[tp] = tuple(ev.target)
        s.reassign_znode = z
        ctx.emit("reassign_partitions", None, dict(z), "§1.6")
        if s.controller is not None:
            reassignment.zk_reassign(ctx, {tp: tuple(ev.target)})
        return None

    # -- §4.3 / §4.7 elections on request ----------------------------------------------------------
    def _preferred(self, ctx: Ctx, tps) -> None:
        s = ctx.s
        live = s.live_set()
        for tp in sorted(tps):
            st = s.partitions.get(tp)
            if st is None or tp[0] in s.deleting:
                continue
            rs = s.assignment(tp).rs
            if st.leader == rs[0]:
                continue                                  # ELECTION_NOT_NEEDED
            e = preferred_election(rs, st.isr, st.recovery, live)
            if e is not None:
                ctx.write_state(tp, e.leader, e.isr, e.recovery, RULE_PREFERRED)

    def _on_ElectPreferred(self, ctx: Ctx, ev: ElectPreferred):
        s = ctx.s
        if s.controller is None:
            return "NOT_CONTROLLER"
        tps = ev.partitions if ev.partitions is not None else [
            (t, p) for t, ti in s.topics.items() for p in ti.assignments]
        self._preferred(ctx, tps)
        return None

    def _on_AutoRebalance(self, ctx: Ctx, ev: AutoRebalance):
        """§4.7 auto rule / D13: per preferred broker B, imbalance ratio > percentage/100 (strict)."""
        s = ctx.s
        if s.controller is None or not s.config.auto_leader_rebalance:
            return "NOT_CONTROLLER" if s.controller is None else None
        by_pref: dict[int, list] = {}
        for topic, t in s.topics.items():
            if topic in s.deleting:
                continue
            for p, a in t.assignments.items():
                if (topic, p) in s.partitions:
                    by_pref.setdefault(a.rs[0], []).append((topic, p))
        todo = []
        for b, tps in sorted(by_pref.items()):
            imbalanced = [tp for tp in tps if s.partitions[tp].leader != b]
            if len(imbalanced) * 100 > s.config.imbalance_percentage * len(tps) and s.is_live(b):
                todo.extend(imbalanced)
        self._preferred(ctx, todo)
        return None

    def _on_ElectUnclean(self, ctx: Ctx, ev: ElectUnclean):
        s = ctx.s
        if not s.at_least(GATE_KIP455):
            return "UNSUPPORTED_VERSION"
        if s.controller is None:
            return "NOT_CONTROLLER"
        wanted = {tp for tp in ev.partitions if tp in s.partitions and not ctx.leader_online(tp)}
        for topic in sorted({tp[0] for tp in wanted}):
            self._online_partition_state_change(ctx, topics=[topic], allow_unclean_for=wanted)
        return None

    def _on_SetUnclean(self, ctx: Ctx, ev: SetUnclean):
        """D19: enabling unclean election triggers the offline election immediately."""
        s = ctx.s
        if ev.topic is None:
            s.unclean_default = ev.enabled
        else:
            if ev.topic not in s.topics:
                return "UNKNOWN_TOPIC_OR_PARTITION"
            s.topics[ev.topic].unclean = ev.enabled
        if ev.enabled and s.controller is not None:
            self._online_partition_state_change(ctx, topics=None if ev.topic is None else [ev.topic])
        return None

    # -- exploration helpers ---------------------------------------------------------------------
    def enabled_events(self, s: ClusterState, brokers: Sequence[int]) -> list[Event]:
        """Events that make sense in ``s`` (used by random exploration / property tests).

        Leader-side ISR changes are offered as: remove any one follower, or add one live replica of
        RS (D9: one at a time)."""
        evs: list[Event] = []
        for b in brokers:
            if b in s.registered:
                evs.append(BrokerFailure((b,)))
                evs.append(BrokerBounce(b))
                if s.controller is not None and b not in s.shutting_down:
                    evs.append(ControlledShutdown(b))
            else:
                evs.append(BrokerStartup(b))
        reg = sorted(s.registered)
        if len(reg) >= 2:
            evs.append(BrokerFailure(tuple(reg[:2])))
        if s.controller is None:
            if s.registered:
                evs.append(ControllerElected(None))
        else:
            evs.append(ControllerLost())
            evs.append(AutoRebalance())
            evs.append(ElectPreferred(None))
        for tp, st in sorted(s.partitions.items()):
            if tp[0] in s.deleting:
                continue
            a = s.assignment(tp)
            if st.leader != NO_LEADER and st.leader in s.registered:
                for f in st.isr:
                    if f != st.leader:
                        evs.append(AlterPartition(tp[0], tp[1], tuple(i for i in st.isr if i != f)))
                for r in a.rs:
                    if r not in st.isr and s.is_live(r):
                        evs.append(AlterPartition(tp[0], tp[1], st.isr + (r,)))
            if s.at_least(GATE_KIP455):
                if a.reassigning:
                    evs.append(Reassign(tp[0], tp[1], None))
                else:
                    others = [b for b in brokers if b not in a.rs and s.is_live(b)]
                    if others:
                        evs.append(Reassign(tp[0], tp[1], (others[0],) + a.rs[1:]))
                    if len(a.rs) > 1:
                        evs.append(Reassign(tp[0], tp[1], a.rs[1:] + a.rs[:1]))
            elif tp not in s.legacy_reassign:
                others = [b for b in brokers if b not in a.rs and s.is_live(b)]
                if others:
                    evs.append(Reassign(tp[0], tp[1], (others[0],) + a.rs[1:], via="zk"))
            if st.leader == NO_LEADER and s.at_least(GATE_KIP455):
                evs.append(ElectUnclean((tp,)))
        for topic in sorted(s.topics):
            if topic not in s.deleting:
                evs.append(DeleteTopic(topic))
            elif deletion.can_complete(s, topic):
                evs.append(CompleteTopicDeletion(topic))
        evs.append(SetUnclean(None, not s.unclean_allowed("")))
        return evs
