"""The capability table: each certified capability and the scenario families that are its evidence.
It imports nothing of the distributions, so that loading a distribution file (which checks its
``capabilities`` key against these names, harness/distributions/file.py) needs no planning code;
the plan over it is :mod:`harness.certify.capabilities`.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.errors import HarnessError

NO_SCENARIO = "no scenario in this harness version"


# -- the capability table ------------------------------------------------------------------------
@dataclass(frozen=True)
class Capability:
    """One certified capability: the scenario families that are its evidence."""

    name: str                      # the --capability id
    title: str                     # what a person reads on the certificate
    families: tuple[str, ...]      # suites/scenarios/<family>.py modules whose scenarios are evidence
    needs_role: str | None = None  # NOT-APPLICABLE when the distribution runs no such node (Distribution.roles)
    # Kafka APIs (name, key) the capability's scenarios need; when the broker's ApiVersions are known (the
    # preflight of a distribution file: harness/certify/preflight.py) one it does not advertise makes it NOT-APPLICABLE
    needs_apis: tuple[tuple[str, int], ...] = ()


# The one table. Families that do not exist yet are mapped all the same: their capability shows
# NOT-APPLICABLE ("no scenario in this harness version") until someone adds the module.
CAPABILITIES: tuple[Capability, ...] = (
    Capability("acks", "Produce/consume semantics, acks and min.insync.replicas", ("acks",),
               needs_apis=(("Produce", 0), ("Fetch", 1))),
    Capability("broker_failover", "Leader failover", ("broker_failover",)),
    Capability("controller_failover", "Controller failover", ("controller_failover",)),
    Capability("isr", "ISR shrink and expand", ("isr",)),
    Capability("topics", "Topic lifecycle (create, delete)", ("topics",),
               needs_apis=(("CreateTopics", 19), ("DeleteTopics", 20))),
    Capability("restart", "Broker restart", ("restart",)),
    Capability("reassignment", "Partition reassignment", ("reassignment",),
               needs_apis=(("AlterPartitionReassignments", 45), ("ListPartitionReassignments", 46),
                           ("IncrementalAlterConfigs", 44),       # 44: the throttle, set from the host
                           ("DescribeLogDirs", 35))),             # 35: a removed replica is deleted
    Capability("preferred_election", "Preferred leader election and controlled shutdown", ("preferred_election",),
               needs_apis=(("ElectLeaders", 43),)),
    Capability("zookeeper", "ZooKeeper faults", ("zookeeper",), needs_role="zookeeper"),
    Capability("quorum", "KRaft controller quorum faults", ("quorum",), needs_role="controller",
               needs_apis=(("DescribeQuorum", 55),)),
    Capability("network", "Network partitions", ("network",)),
    # layout shared-storage: the store a distribution file declares as a [[service]] (docs/broker-contract.md)
    Capability("storage", "Shared storage: the store paused, killed or cut from the brokers", ("storage",)),
    Capability("unclean", "Unclean leader election", ("unclean",), needs_apis=(("ElectLeaders", 43),)),
    Capability("transactions", "Transactions: atomic visibility, fencing, coordinator failover", ("transactions",),
               needs_apis=(("FindCoordinator", 10), ("InitProducerId", 22), ("AddPartitionsToTxn", 24),
                           ("EndTxn", 26))),
    Capability("consumer-groups", "Consumer groups: committed offsets and rebalances under faults", ("groups",),
               needs_apis=(("FindCoordinator", 10), ("OffsetCommit", 8), ("OffsetFetch", 9))),
    # KIP-853: voter changes need a quorum formatted dynamic (kraft.version 1, apache-kraft-dynamic, Kafka 4.x)
    Capability("dynamic-quorum", "Dynamic KRaft quorum: controllers added and removed under faults (KIP-853)",
               ("dynamic_quorum",), needs_role="dynamic-quorum",
               needs_apis=(("DescribeQuorum", 55), ("AddRaftVoter", 80), ("RemoveRaftVoter", 81))),
    # KIP-932: KRaft only, Kafka 4.2+ (the scenarios' min_version; share.version 1 by default from 4.2-IV0)
    Capability("share-groups", "Share groups (KIP-932): acquisition locks, acknowledgements, redelivery under faults",
               ("share",), needs_role="controller",
               needs_apis=(("ShareGroupHeartbeat", 76), ("ShareFetch", 78), ("ShareAcknowledge", 79))),
)

# what a profile selects: conformance scenarios (nightly soak / random mixes are not certificate evidence)
SELECT_TAG = "conformance"


def capability_names() -> list[str]:
    return [c.name for c in CAPABILITIES]


def capability(name: str) -> Capability:
    for c in CAPABILITIES:
        if c.name == name:
            return c
    raise HarnessError(f"unknown capability {name!r}; known: {', '.join(capability_names())}")
