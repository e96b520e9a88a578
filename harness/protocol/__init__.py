"""A minimal Kafka protocol client for what confluent-kafka 2.16 does not expose: partition leader
epochs (Metadata v7+), the KRaft quorum (DescribeQuorum), ongoing reassignments
(ListPartitionReassignments), eligible leader replicas (DescribeTopicPartitions) and group and
transaction coordinators (FindCoordinator). See :mod:`.messages` and :mod:`.client`.
"""

from harness.protocol.admin_messages import OngoingReassignment, ReassignmentsResult
from harness.protocol.client import ProtocolClient, ProtocolError, UnsupportedApi, first_answer
from harness.protocol.endpoint import Endpoint
from harness.protocol.header import error_name
from harness.protocol.messages import (ApiVersionsResult, BrokerInfo, CoordinatorInfo, MetadataResult, PartitionInfo, QuorumInfo,
                                       ReplicaState, TopicInfo, TopicPartitionsResult)
from harness.protocol.wire import DecodeError

__all__ = ["Endpoint", "ProtocolClient", "ProtocolError", "UnsupportedApi", "first_answer", "ApiVersionsResult",
           "BrokerInfo", "CoordinatorInfo", "MetadataResult", "OngoingReassignment", "PartitionInfo", "QuorumInfo", "ReassignmentsResult",
           "ReplicaState", "TopicInfo", "TopicPartitionsResult",
           "error_name", "DecodeError"]
