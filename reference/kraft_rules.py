"""The KRaft rule table (:data:`KRAFT_RULES`: id -> spec sections, kind, title) and the divergence
that reports one of them (:class:`KraftDivergence`).

The rules themselves are applied by the checker in reference/kraft.py (its docstring states each).
"""

from __future__ import annotations

from dataclasses import dataclass

from reference.result import Divergence

# id -> (spec sections, kind, title)
KRAFT_RULES: dict[str, tuple[str, str, str]] = {
    "H1": ("§8.2/§9.1", "invariant", "Raft epoch never decreases in one broker's answers; one quorum leader per "
           "epoch, so a quorum-leader change raises the epoch"),
    "K1": ("§9.1", "invariant", "the quorum leader is a voter"),
    "H3": ("§8.2/§9.2", "invariant", "leader epoch never decreases in one broker's answers (per topic incarnation)"),
    "H4": ("§8.2/§9.2", "invariant", "one leader per (partition, leader epoch) across all answers"),
    "H5": ("§8.2", "invariant", "leader is in the ISR"),
    "H6": ("§8.2/§9.6", "invariant", "leader is a replica"),
    "H7": ("§8.2/§9.3/§9.5", "invariant", "ISR never empty (the last member is kept, §9.3); with ELR only with "
           "leader -1"),
    "H8": ("§8.2/§9.4", "invariant", "ISR ⊆ replicas"),
    "H11": ("§8.2/§9.4/§9.5", "invariant", "a new leader comes from the previous ISR (or the ELR / last known "
            "leader) unless unclean election is permitted"),
    "H19": ("§8.2/§9.3", "invariant", "a broker that must have been fenced is neither elected nor added to an ISR"),
    "K2": ("§9.5", "invariant", "ELR ∩ ISR = ∅ and ELR ⊆ replicas"),
    "H15": ("§8.2/§9.6", "invariant", "reassignment shape in ListPartitionReassignments: AR ∩ RR = ∅, AR, RR ⊆ RS, "
            "ORS and TRS non-empty, AR ∪ RR non-empty"),
    "D15": ("§9.6/§8.3", "divergence", "KRaft reassignment encoding: RS = T ++ sorted(current − T), AR and RR sorted"),
    "D8": ("§9.3/§8.3", "divergence", "without ELR a leaderless partition keeps exactly its last ISR member"),
    "D7": ("§9.2/§8.3", "divergence", "KRaft leader-epoch bumps: MV ≥ 3.6 only on a leader change or a replica "
           "removal; MV < 3.6 also on every ISR shrink"),
    "K3": ("§9.3/§8.4", "progress", "a leader on a dead broker is replaced within session timeout + grace "
           "(every profile: a fenced leader must not stay leader in any KRaft-compatible broker)"),
    # on the controller's metadata log (meta.* events, reference/kraft_log.py): every committed record
    "L1": ("§8.2/§9.4", "invariant", "metadata log: after every record the leader is -1 or in the ISR and a "
           "replica (PartitionChangeBuilder.electLeader)"),
    "L2": ("§8.2/§9.3/§9.5", "invariant", "metadata log: ISR ⊆ replicas; the ISR is empty only with ELR enabled "
           "(PartitionChangeBuilder.build, ReplicationControlManager validateIsr)"),
    "L3": ("§9.6", "invariant", "metadata log: adding, removing ⊆ replicas, adding ∩ removing = ∅ "
           "(PartitionReassignmentReplicas)"),
    "L4": ("§9.5", "invariant", "metadata log: ELR ∩ ISR = ∅ (PartitionChangeBuilder.maybePopulateTargetElr)"),
    "L5": ("§8.2/§9.4/§9.5", "invariant", "metadata log: a new leader comes from the previous ISR (or the ELR, the "
           "last known leader, a completing reassignment's new ISR) unless unclean election is permitted "
           "(PartitionChangeBuilder.electAnyLeader)"),
    "L6": ("§9.3/§9.4", "invariant", "metadata log: a leader is elected only while registered, unfenced and not "
           "in controlled shutdown (ReplicationControlManager LeaderAcceptor / isActive)"),
    "L7": ("§9.3/§8.2", "invariant", "metadata log: a broker joins an ISR only while registered, unfenced and not "
           "in controlled shutdown (ReplicationControlManager ineligibleReplicasForIsr, KIP-841/903)"),
    "L8": ("§9.3/§8.4", "progress", "metadata log: a killed, paused or stopped broker is fenced within "
           "broker.session.timeout.ms + grace (BrokerHeartbeatManager; kraft-* only)"),
    "L9": ("§8.1/§9.8", "invariant", "every partition state a broker answered (leader epoch, leader, ISR, "
           "replicas) is a state the metadata log committed (KRaftMetadataCache serves the applied log)"),
    "L10": ("§9.2/§8.3", "divergence", "metadata log: a record re-sets the same leader (LE + 1) exactly when a "
            "replica is removed or, MV < 3.6-IV0, the ISR shrinks (PartitionChangeBuilder.triggerLeaderEpochBump*)"),
    "L12": ("§8.1/§9.8", "progress", "a broker serves no partition state the metadata log superseded more than "
            "broker.session.timeout.ms + grace earlier while no fault is active (the broker's image follows the "
            "committed log; kraft-* only)"),
    "L11": ("§9.5", "divergence", "metadata log, ELR enabled: an ISR below min ISR keeps the previous ISR / ELR "
            "members outside it in the ELR and no other; an ISR at min ISR or an unclean election clears it "
            "(PartitionChangeBuilder.maybePopulateTargetElr / maybeUpdateRecordElr, KIP-966)"),
    # the dynamic quorum (KIP-853) on the metadata log's VotersRecord / KRaftVersionRecord: reference/kraft_voters.py
    "Q1": ("§9.1", "invariant", "metadata log: consecutive VotersRecords differ by at most one voter (id, directory "
           "id) (VoterSet.addVoter / removeVoter via AddVoterHandler, RemoveVoterHandler)"),
    "Q2": ("§9.1", "invariant", "a VotersRecord is appended only after the previous one committed (the leader's "
           "answered high watermark; AddVoterHandler / RemoveVoterHandler: no uncommitted voter change)"),
    "Q3": ("§9.1", "invariant", "metadata log: a new quorum leader is a voter of the voter set in effect at its "
           "offset (KRaftControlRecordStateMachine.lastVoterSet)"),
    "Q4": ("§9.1/§8.4", "progress", "metadata log: a leader removed from the voter set hands over to a later "
           "epoch's leader within a bound (RemoveVoterHandler: resign once the removal commits)"),
    "Q5": ("§9.1", "invariant", "metadata log: a voter set is never empty"),
    "Q6": ("§9.1", "invariant", "metadata log: kraft.version never goes down; the voter set changes only with "
           "kraft.version >= 1 (KRaftVersion.isReconfigSupported)"),
    "Q7": ("§9.1", "invariant", "metadata log: a feature level (kraft.version included) changes only when an "
           "action of the run asked for it (KAFKA-18979, KAFKA-21426)"),
    "L13": ("§9.5", "invariant", "metadata log: a leader taken from the ELR (not in the previous ISR) is elected "
            "only when the target ISR is empty: the record's ISR is exactly [leader] and the leader leaves the ELR "
            "(PartitionChangeBuilder.isValidNewLeader / tryElection, KIP-966; 4.4.0)"),
    "L14": ("§9.5", "invariant", "metadata log, ELR enabled, 4.1+: a ConfigRecord of min.insync.replicas is "
            "followed in its batch by a ClearElrRecord for its topic (\"\" for a broker / cluster value) "
            "(ConfigurationControlManager.createClearElrRecordsAsNeeded; 4.4.0)"),
    "L15": ("§9.5", "invariant", "metadata log, ELR enabled, 4.1+: no ConfigRecord the controller refuses while ELR "
            "is enabled: a broker-level min.insync.replicas (set or deleted), or the cluster-wide one deleted "
            "(ConfigurationControlManager.isDisallowedBrokerMinIsrTransition / isDisallowedClusterMinIsrTransition; "
            "4.4.0)"),
    "L16": ("§9.5", "invariant", "metadata log, 4.1+: the batch enabling ELR leaves no broker-level "
            "min.insync.replicas and a cluster-wide one (ConfigurationControlManager.updateFeatures / "
            "maybeGenerateElrSafetyRecords; 4.4.0)"),
}


def kraft_rule_id(rule: str) -> str:
    """``"H11"`` -> ``"§8.2/§9.4/§9.5/H11"``."""
    return f"{KRAFT_RULES[rule][0]}/{rule}"


@dataclass
class KraftDivergence(Divergence):
    """A :class:`Divergence` whose id and kind come from :data:`KRAFT_RULES`; ``t`` = sample time."""

    t: float | None = None

    @property
    def rule_id(self) -> str:
        return kraft_rule_id(self.rule)

    @property
    def kind(self) -> str:
        return KRAFT_RULES[self.rule][1]

    def to_dict(self) -> dict:
        d = super().to_dict()
        d["t"] = self.t
        return d

    def __str__(self) -> str:
        return f"[{self.rule_id}] {self.subject} seq={self.seq} t={self.t}: {self.explanation}"
