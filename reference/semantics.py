"""What a scenario may expect of the controller, per controller model: the few facts where the
ZooKeeper-mode controller (controller-spec §1-§8) and the KRaft controller (§9) differ in a way a
scenario's own expectations see. A scenario writes one flow and asks these (``ctx.semantics``,
chosen by the distribution adapter's ``controller_model``) instead of branching on the mode; the
conformance checkers (reference/checker.py, reference/kraft.py) judge the whole record on top.
"""

from __future__ import annotations

from dataclasses import dataclass

from reference import versions
from reference.kraft_log import ELR_FEATURE, MV_NO_BUMP_ON_SHRINK


MV_FEATURE = "metadata.version"


def _distinct(xs):
    out = []
    for x in xs:
        if x not in out:
            out.append(x)
    return out


@dataclass(frozen=True)
class Semantics:
    model: str
    # §6.2 step 2 / P4 (ZK): deletion waits while a broker holding a replica is down; §9.7 (KRaft): it does not
    deletion_waits_for_replicas: bool
    # §6.2 step 4 (ZK): each partition is written leaderless (leader -1) before its removal; §9.7: one RemoveTopicRecord
    deletion_writes_leaderless: bool
    # §2.2 D11 (ZK): the controller epoch rises by exactly 1 per election; §9.1 (KRaft): the Raft epoch
    # rises by at least 1 (a vote that elects nobody also takes an epoch)
    controller_epoch_exact: bool
    # §4.10 / §9.2: a leader-side ISR change (AlterPartition) keeps the leader epoch in both models
    registration_epoch: str          # what the broker epoch is: "czxid" (§5.1) or "offset" (§9.3)
    # §2.4 steps 7-9, §2.5 / D12 (ZK): a new controller rewrites partition states by itself (leader -1
    # then an election where the dead controller led; A1 on every reassignment in progress); §9.9
    # (KRaft): the new quorum leader replays the metadata log and rewrites nothing. (Its heartbeat
    # tracking starts at its activation, ClusterControlManager.activate → BrokerHeartbeatManager.register,
    # so a broker whose heartbeats reach it only after broker.session.timeout.ms is fenced as any silent
    # broker: seen on 4.1.2, a broker-only node fenced for 0.9 s after the quorum leader was killed.)
    failover_rewrites_partitions: bool
    # what AlterPartitionReassignments requires of a broker it adds: ZK §7.3 "live" (registered in
    # /brokers/ids: KafkaController.validateReplicas, INVALID_REPLICA_ASSIGNMENT "not alive"); KRaft §9.6
    # "registered": ReplicationControlManager.validateManualPartitionAssignment checks only
    # clusterControl.brokerRegistrations(), so a fenced broker (killed, still registered) is accepted
    # and one never registered is refused with INVALID_REPLICA_ASSIGNMENT ("no such broker is registered")
    reassignment_target_needs: str
    # whether a killed broker keeps its registration while it is down: ZK no (§1.3: /brokers/ids/<id> is
    # ephemeral, gone with its ZooKeeper session); KRaft yes (§9.3: it is fenced after
    # broker.session.timeout.ms and stays registered until it registers anew or is unregistered;
    # ClusterControlManager keeps brokerRegistrations, ReplicationControlManager.handleBrokerFenced)
    killed_broker_registered: bool
    cite: str                        # the spec sections this model's expectations come from
    # A broker cut from the control plane (ZK: ZooKeeper; KRaft: the active controller) past its session:
    # ZK §5.2 / §5.1: its session expires, the ephemeral /brokers/ids/N is deleted (the controller takes it as
    # dead) and it registers again with a new znode, i.e. a new broker epoch (czxid), once it reaches ZooKeeper.
    # KRaft §9.3: its heartbeats stop reaching the controller, which fences it after broker.session.timeout.ms
    # (BrokerHeartbeatManager; ReplicationControlManager.handleBrokerFenced moves its leaderships and shrinks
    # the ISRs) and unfences it when a heartbeat arrives again caught up with its RegisterBrokerRecord's
    # offset (BrokerHeartbeatManager.calculateNextBrokerState FENCED -> UNFENCED): the registration and its
    # broker epoch are kept. The broker side never re-registers for a failed heartbeat: a timed-out or
    # failed BrokerHeartbeat is only retried with backoff (core/.../BrokerLifecycleManager.scala
    # BrokerHeartbeatResponseEvent -> scheduleNextCommunicationAfterFailure).
    control_plane_loss_reregisters: bool
    # Where a broker's requests to the controller travel (AlterPartition, §5.9 / §9.4), and the
    # controller's to the brokers. ZK: over the inter-broker listener to the controller broker (its
    # LeaderAndIsr / UpdateMetadata come back the same way), so a controller cut from the other brokers
    # only (its ZooKeeper session kept) receives no AlterPartition and no ISR changes (§5.9). KRaft: over
    # the CONTROLLER listener (controller.listener.names; the broker's NodeToControllerChannelManager asks
    # RaftControllerNodeProvider for the quorum leader's CONTROLLER endpoint), and brokers learn the result by
    # fetching the metadata log there too: cutting the replication (inter-broker) links leaves it intact.
    controller_channel_is_inter_broker: bool

    def reassignment_start(self, ors: list[int], target: list[int]) -> tuple[list[int], list[int], list[int]]:
        """(replicas, adding, removing) the assignment shows once a reassignment of a partition from
        ``ors`` to ``target`` started: ZK §7.1 ``reassignTo`` = target ++ (ORS − target) in ORS order;
        KRaft §9.6 = target ++ sorted(ORS − target)."""
        rest = [r for r in ors if r not in target]
        rs = _distinct(target + (sorted(rest) if self.model == "kraft" else rest))
        return rs, [r for r in rs if r not in ors], [r for r in rs if r not in target]

    def reassignment_bumps(self, ors: list[int], target: list[int]) -> tuple[int, str]:
        """How many times a completed reassignment from ``ors`` to ``target`` bumps the leader epoch,
        with why: ZK §7.5 one for the start (A1, when a replica is added), one for B3 and one per
        removed ISR member; KRaft §9.2 none at the start, one when the completion removes a replica."""
        removed = [r for r in ors if r not in target]
        if self.model == "kraft":
            return int(bool(removed)), "§9.2: the completion sets the leader once when it removes a replica"
        moving = bool(set(target) - set(ors))
        return int(moving) + 1 + len(removed), "§7.5: one bump per A1, B3 and removed ISR member"

    def reassignment_start_bumps(self, ors: list[int], target: list[int]) -> tuple[int, str]:
        """Leader-epoch bumps when a reassignment starts: ZK one (A1) when it adds a replica (§7.5);
        KRaft none (§9.2, §9.6). A cancel then sets the leader once more in both (§7.8 B3, §9.6)."""
        if self.model == "kraft":
            return 0, "none at the start, §9.2, §9.6"
        return int(bool(set(target) - set(ors))), "A1 at the start, §7.5"

    def reassignment_resume_bumps(self, startups: int) -> tuple[int, str]:
        """Leader-epoch bumps of an in-flight reassignment when ``startups`` brokers of its target start
        while it waits: ZK resumes it at each startup with A1 (+1 each, §5.3, §7.7); KRaft does not resume
        anything: a broker's registration and unfencing elect only leaderless partitions
        (ReplicationControlManager.handleBrokerUnfenced), and the adding replica joins the ISR by the
        leader's AlterPartition, the completion checked inside that change (PartitionChangeBuilder.build →
        completeReassignmentIfNeeded; §9.6, §9.9 "LE bump on reassignment start / resume: no")."""
        if self.model == "kraft":
            return 0, "no resume at a broker's startup (§9.6, §9.9)"
        return startups, f"A1 at {startups} target broker startup(s) (§7.7)"

    def reassignment_completes(self, replicas: list[int], adding: list[int], removing: list[int],
                               isr: list[int], kafka_version: str | None) -> tuple[bool | None, list[int], str]:
        """Whether a reassignment showing RS=``replicas``, AR=``adding``, RR=``removing`` completes with the
        ISR ``isr``, the ISR it completes with, and why. ``None``: the version is unknown (a foreign
        image), and either outcome is Apache behaviour of some release.

        ZooKeeper mode (§7.4, §7.6): once the whole target (RS − RR) is in the ISR; the ISR loses RR (B4).
        KRaft until 4.2 (§9.6; ``PartitionReassignmentReplicas.maybeCompleteReassignment``): the ISR
        without RR and the target without RR are not empty and the target is all in that ISR. KRaft from
        4.3 (KAFKA-19975, apache/kafka#21114; read from the 4.3.0 and 4.4.0 jars, 4.2.0 still has the
        old test): every *adding* replica in that ISR is enough, unless fewer are added than removed
        (the target is smaller), when the whole target must be in it as before. A target replica that
        was already a replica and is out of the ISR (a dead broker) no longer holds it back."""
        target = [r for r in replicas if r not in removing]
        new_isr = [r for r in isr if r not in removing]
        if self.model != "kraft":
            return set(target) <= set(isr), new_isr, "§7.4/§7.6: the whole target in the ISR"
        old_rule = bool(target) and bool(new_isr) and set(target) <= set(new_isr)
        new_rule = (bool(target) and bool(new_isr) and set(adding) <= set(new_isr)
                    and (len(adding) >= len(removing) or set(target) <= set(new_isr)))
        if kafka_version is None:
            return (old_rule if old_rule == new_rule else None), new_isr, \
                "§9.6: the whole target in the ISR until 4.2, the adding replicas from 4.3 (version unknown)"
        if versions.at_least(kafka_version, "4.3"):
            return new_rule, new_isr, ("§9.6 from 4.3 (KAFKA-19975): every adding replica in the ISR"
                                       + ("" if len(adding) >= len(removing) else ", and the whole smaller target"))
        return old_rule, new_isr, "§9.6 until 4.2: the whole target in the ISR"

    def reassignment_accepts_target(self, registered: bool, alive: bool) -> bool:
        """Whether the controller accepts (AlterPartitionReassignments) a target adding a broker that is
        ``registered`` (KRaft: has a registration, fenced or not; ZK: listed in /brokers/ids) and ``alive``
        (ZK: registered; KRaft: registered and unfenced). Refused: INVALID_REPLICA_ASSIGNMENT in both."""
        return alive if self.reassignment_target_needs == "live" else registered

    @property
    def cite_target_check(self) -> str:
        return ("§9.6: ReplicationControlManager.validateManualPartitionAssignment wants a registration only"
                if self.model == "kraft" else "§7.3: KafkaController.validateReplicas wants adding replicas live")

    def reassignment_leader(self, old: int, target: list[int]) -> int | None:
        """The leader a completed reassignment must end with: the old one when it is in the target
        (§7.4 B3, §9.4); otherwise ZK elects the first target replica (all are in the ISR by then,
        §4.2) and KRaft any target replica (None: the scenario accepts any)."""
        if old in target:
            return old
        return target[0] if self.model == "zk" else None

    # ---- leaderless partitions and returning replicas (unclean.*, preferred_election.controlled_shutdown)
    # ``features``: the cluster's finalized feature levels (harness.distributions.control_history.feature_levels of the
    # controller's writes: the FeatureLevelRecords of the KRaft metadata log; {} in ZooKeeper mode)

    def elr_enabled(self, features: dict[str, int]) -> bool:
        """Whether the controller keeps eligible leader replicas (§9.5, KIP-966): never in ZooKeeper mode;
        in KRaft when ``eligible.leader.replicas.version`` >= 1 (``ReplicationControlManager.isElrEnabled``:
        the feature on and ``metadata.version`` >= 4.0-IV0, which the feature requires; Kafka 4.1 turns it
        on for new clusters, 3.9 has no such feature: its ``eligible.leader.replicas.enable`` is off and
        3.9-IV0 below ``isElrSupported``)."""
        return self.model == "kraft" and int(features.get(ELR_FEATURE, 0)) >= 1

    def controller_isr_shrink_bumps(self, features: dict[str, int]) -> bool:
        """Whether the controller bumps the leader epoch when it removes a follower from the ISR without
        moving leadership (a controlled shutdown, a fencing): ZooKeeper mode always (§4.6, §5.5: the
        controller's LeaderAndIsr write is LE + 1); KRaft only with ``metadata.version`` < 3.6-IV0
        (feature level 12; ``PartitionChangeBuilder.triggerLeaderEpochBumpForIsrShrinkIfNeeded``,
        ``MetadataVersion.isLeaderEpochBumpRequiredOnIsrShrink``, KAFKA-15021; §9.2)."""
        if self.model != "kraft":
            return True
        mv = features.get(MV_FEATURE)
        return mv is not None and int(mv) < MV_NO_BUMP_ON_SHRINK

    def leaderless_state(self, last: int, features: dict[str, int]) -> dict:
        """``{"leader", "isr", "elr"}`` once the last ISR member ``last`` of a partition died and no unclean
        election took place. ZooKeeper mode (§4.8 case 1, §4.9) and KRaft without ELR: leader -1 with
        ``last`` kept in the ISR (``PartitionChangeBuilder.build`` only writes an empty ISR with
        ``eligibleLeaderReplicasEnabled``). KRaft with ELR (§9.5): the ISR empties and ``last`` moves to the
        ELR (``maybePopulateTargetElr``: below min ISR, the old ISR minus the target ISR)."""
        if self.elr_enabled(features):
            return {"leader": -1, "isr": [], "elr": [last]}
        return {"leader": -1, "isr": [last], "elr": []}

    def last_isr_member_return(self, features: dict[str, int]) -> tuple[bool, str]:
        """How the partition of :meth:`leaderless_state` gets ``last`` back as leader when it restarts after
        a hard kill: (``recovering``, why). ``recovering`` False: a clean election from the ISR (§4.9, §5.3;
        KRaft ``electAnyLeader`` on unfencing), the leader recovery state unchanged. True (KRaft with ELR):
        the restarted broker registers without a clean-shutdown epoch, so the controller takes it out of
        the ELR (``ClusterControlManager.registerBroker`` -> ``ReplicationControlManager.handleBrokerShutdown``
        unclean, KIP-966) and, when it is unfenced, elects it as the last known leader
        (``PartitionChangeBuilder.canElectLastKnownLeader``, only once it is acceptable since 4.1.0,
        KAFKA-19522); that election counts as unclean: ISR = [it], leader recovery state RECOVERING."""
        if self.elr_enabled(features):
            return True, ("§9.5: removed from the ELR by its unclean restart, elected as the last known leader "
                          "(an unclean election: RECOVERING)")
        return False, "§4.9/§5.3: a clean election from the ISR [last]"

    @staticmethod
    def unclean_marks_recovering(kafka_version: str | None) -> bool:
        """Whether an unclean election writes leader recovery state RECOVERING, which the new leader turns
        into RECOVERED once it recovered (KIP-704, §4.1.3): from 3.2 (IBP / ``metadata.version`` 3.2-IV0,
        ``isLeaderRecoverySupported``) in both models; an unknown version is taken as recent."""
        return kafka_version is None or versions.at_least(kafka_version, "3.2")

    @property
    def cite_start(self) -> str:
        return "§9.6" if self.model == "kraft" else "§7.1 U1"

    @property
    def controller_epoch_rule(self) -> str:
        return ("controller epoch is old + 1 (§2.2, D11)" if self.controller_epoch_exact
                else "the Raft epoch of the quorum rose (§9.1)")

    @property
    def control_plane_loss_rule(self) -> str:
        """How a broker cut from the control plane past its session shows in the view (it leaves
        ``live_brokers``), in this model's words."""
        return ("its ZooKeeper session expired: /brokers/ids/N removed (§1.3, §5.2)" if self.model == "zk"
                else "the active controller fenced it: no longer listed (broker.session.timeout.ms, §9.3)")

    @property
    def control_plane_return_rule(self) -> str:
        """What a broker cut from the control plane does once it reaches it again."""
        return ("registered again with a new broker epoch (§5.1)" if self.control_plane_loss_reregisters
                else "unfenced with its registration kept: listed again, the same broker epoch (§9.3, "
                     "BrokerHeartbeatManager.calculateNextBrokerState)")

    def controller_epoch_ok(self, before: int, after: int | None) -> bool:
        if after is None:
            return False
        return after == before + 1 if self.controller_epoch_exact else after > before


ZK = Semantics("zk", deletion_waits_for_replicas=True, deletion_writes_leaderless=True,
               controller_epoch_exact=True, registration_epoch="czxid", failover_rewrites_partitions=True,
               reassignment_target_needs="live", killed_broker_registered=False, cite="§1-§8",
               control_plane_loss_reregisters=True, controller_channel_is_inter_broker=True)
KRAFT = Semantics("kraft", deletion_waits_for_replicas=False, deletion_writes_leaderless=False,
                  controller_epoch_exact=False, registration_epoch="offset", failover_rewrites_partitions=False,
                  reassignment_target_needs="registered", killed_broker_registered=True, cite="§9",
                  control_plane_loss_reregisters=False, controller_channel_is_inter_broker=False)
_BY_MODEL = {"zk": ZK, "kraft": KRAFT}


def for_model(model: str) -> Semantics:
    """The semantics of controller model ``model`` ("zk" or "kraft": ``Distribution.controller_model``)."""
    try:
        return _BY_MODEL[model]
    except KeyError:
        raise ValueError(f"unknown controller model {model!r}: expected one of {', '.join(_BY_MODEL)}") from None
