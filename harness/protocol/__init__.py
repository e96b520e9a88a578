"""A minimal Kafka protocol client for what confluent-kafka 2.16 does not expose: partition leader
epochs (Metadata v7+) and the KRaft quorum (DescribeQuorum). See :mod:`.messages` and :mod:`.client`.
"""

from .client import ProtocolClient, ProtocolError, UnsupportedApi, first_answer
from .messages import (ApiVersionsResult, BrokerInfo, MetadataResult, PartitionInfo, QuorumInfo,
                       ReplicaState, TopicInfo, error_name)
from .wire import DecodeError

__all__ = ["ProtocolClient", "ProtocolError", "UnsupportedApi", "first_answer", "ApiVersionsResult",
           "BrokerInfo", "MetadataResult", "PartitionInfo", "QuorumInfo", "ReplicaState", "TopicInfo",
           "error_name", "DecodeError"]
