"""What every Kafka request and response of the protocol client shares: the API keys, the request
header (v1, or v2 when flexible), the response header (v0 / v1), which versions of each API use the
flexible encoding, and Kafka's error names. Used by :mod:`.messages` (cluster-state reads),
:mod:`.admin_messages` (administrative requests) and :mod:`.client`.
"""

from __future__ import annotations

from harness.protocol.wire import Reader, Writer

API_METADATA = 3
API_FIND_COORDINATOR = 10
API_API_VERSIONS = 18
API_DESCRIBE_LOG_DIRS = 35
API_ALTER_PARTITION_REASSIGNMENTS = 45
API_LIST_PARTITION_REASSIGNMENTS = 46
API_DESCRIBE_QUORUM = 55
API_DESCRIBE_TOPIC_PARTITIONS = 75
API_DESCRIBE_SHARE_GROUP_OFFSETS = 90   # harness/protocol/share_messages.py

# Error codes the messages use (Kafka's org.apache.kafka.common.protocol.Errors).
_ERROR_NAMES = {
    0: "NONE", -1: "UNKNOWN_SERVER_ERROR", 3: "UNKNOWN_TOPIC_OR_PARTITION", 5: "LEADER_NOT_AVAILABLE",
    6: "NOT_LEADER_OR_FOLLOWER", 7: "REQUEST_TIMED_OUT", 8: "BROKER_NOT_AVAILABLE",
    9: "REPLICA_NOT_AVAILABLE", 14: "COORDINATOR_LOAD_IN_PROGRESS", 15: "COORDINATOR_NOT_AVAILABLE",
    16: "NOT_COORDINATOR", 29: "TOPIC_AUTHORIZATION_FAILED",
    31: "CLUSTER_AUTHORIZATION_FAILED", 33: "UNSUPPORTED_SASL_MECHANISM", 34: "ILLEGAL_SASL_STATE", 35: "UNSUPPORTED_VERSION", 39: "INVALID_REPLICA_ASSIGNMENT",
    41: "NOT_CONTROLLER", 42: "INVALID_REQUEST", 72: "LISTENER_NOT_FOUND", 74: "FENCED_LEADER_EPOCH",
    75: "UNKNOWN_LEADER_EPOCH", 58: "SASL_AUTHENTICATION_FAILED", 85: "NO_REASSIGNMENT_IN_PROGRESS", 100: "UNKNOWN_TOPIC_ID",
    30: "GROUP_AUTHORIZATION_FAILED", 69: "GROUP_ID_NOT_FOUND",
}


def error_name(code: int) -> str | None:
    """``None`` for 0 (no error), else Kafka's error name (``ERROR_<code>`` when not known here)."""
    if code == 0:
        return None
    return _ERROR_NAMES.get(code, f"ERROR_{code}")


def check_version(api: str, version: int, supported: tuple[int, int]) -> None:
    if not supported[0] <= version <= supported[1]:
        raise ValueError(f"{api} v{version} is not implemented (this client speaks v{supported[0]}–v{supported[1]})")


# -- headers -------------------------------------------------------------------------------------
def encode_request_header(w: Writer, api_key: int, api_version: int, correlation_id: int,
                          client_id: str | None, flexible: bool) -> None:
    """Request header v1 (non-flexible) or v2 (flexible); the client id keeps its int16 length."""
    w.int16(api_key).int16(api_version).int32(correlation_id).string(client_id, compact=False)
    if flexible:
        w.empty_tagged_fields()


def decode_response_header(r: Reader, flexible: bool) -> int:
    """Response header v0 / v1; returns the correlation id."""
    cid = r.int32()
    if flexible:
        r.tagged_fields()
    return cid


def response_header_flexible(api_key: int, api_version: int) -> bool:
    """Whether the response header is v1. ApiVersions responses always use header v0 (so a client
    that asked for a version the broker does not know can still read the error)."""
    if api_key == API_API_VERSIONS:
        return False
    return request_flexible(api_key, api_version)


def request_flexible(api_key: int, api_version: int) -> bool:
    return {1: api_version >= 12,   # Fetch (harness/protocol/fetch.py)
            API_METADATA: api_version >= 9, API_API_VERSIONS: api_version >= 3, 17: False, 36: api_version >= 2,
            API_DESCRIBE_QUORUM: True, API_LIST_PARTITION_REASSIGNMENTS: True,
            API_ALTER_PARTITION_REASSIGNMENTS: True, API_DESCRIBE_LOG_DIRS: api_version >= 2,
            API_DESCRIBE_TOPIC_PARTITIONS: True, API_FIND_COORDINATOR: api_version >= 3,
            API_DESCRIBE_SHARE_GROUP_OFFSETS: True}[api_key]
