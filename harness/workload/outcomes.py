"""Which librdkafka produce errors are definite failures and which leave the outcome unknown.

A send is recorded ``fail`` only when the record is certainly **not** in the log; everything
else is ``info`` (Jepsen's indeterminate result), because a checker that trusts a wrong
``fail`` reports phantom anomalies, while an ``info`` merely costs precision.

The subtle part is retries. The delivery report carries the *last* attempt's error, but an
earlier attempt may have been appended without the producer learning of it (request timed
out, connection dropped, NOT_ENOUGH_REPLICAS_AFTER_APPEND). Kafka checks
``min.insync.replicas`` *before* duplicate-sequence detection, so even an idempotent retry can
get NOT_ENOUGH_REPLICAS for a batch an earlier attempt already wrote. librdkafka knows the
persistence status (``rd_kafka_message_status``) but confluent-kafka-python does not expose
it. Hence a broker rejection is definite only when the message had exactly one attempt:
``retries=0`` without idempotence (idempotence implies retries until ``delivery.timeout.ms``,
so with it every broker error, including a retriable error that exhausted the delivery
timeout, is ``info``).
"""

from __future__ import annotations

from confluent_kafka import KafkaError

FAIL = "fail"
INFO = "info"


def _codes(*names: str) -> frozenset[int]:
    return frozenset(getattr(KafkaError, n) for n in names if hasattr(KafkaError, n))


# Broker errors returned before anything is appended (Partition.appendRecordsToLeader,
# ReplicaManager validation). NOT_ENOUGH_REPLICAS_AFTER_APPEND and REQUEST_TIMED_OUT are
# deliberately absent: the data may be in the log.
REJECTED_BEFORE_APPEND = _codes(
    "NOT_ENOUGH_REPLICAS", "NOT_LEADER_FOR_PARTITION", "NOT_LEADER_OR_FOLLOWER", "UNKNOWN_TOPIC_OR_PART",
    "MSG_SIZE_TOO_LARGE", "RECORD_LIST_TOO_LARGE", "INVALID_REQUIRED_ACKS", "TOPIC_AUTHORIZATION_FAILED",
    "CLUSTER_AUTHORIZATION_FAILED", "INVALID_RECORD", "INVALID_TIMESTAMP", "CORRUPT_MESSAGE", "INVALID_MSG",
    "TOPIC_EXCEPTION", "UNSUPPORTED_FOR_MESSAGE_FORMAT", "INVALID_TOPIC_EXCEPTION", "POLICY_VIOLATION",
)

# Local errors for messages that never left the client, valid only if they never had an
# earlier attempt (a retried message waits in the same queue).
NEVER_SENT_IF_FIRST_ATTEMPT = _codes(
    "_QUEUE_FULL", "_MSG_SIZE_TOO_LARGE", "_UNKNOWN_PARTITION", "_UNKNOWN_TOPIC", "_PURGE_QUEUE",
    "_TIMED_OUT_QUEUE", "_INVALID_ARG",
)


def single_attempt(retries: int | None, idempotent: bool) -> bool:
    """True if librdkafka will send each message at most once with this configuration."""
    return not idempotent and retries is not None and int(retries) == 0


def classify_delivery_error(err: KafkaError, one_attempt: bool) -> str:
    """``fail`` or ``info`` for an error in a delivery report."""
    code = err.code()
    if one_attempt and (code in REJECTED_BEFORE_APPEND or code in NEVER_SENT_IF_FIRST_ATTEMPT):
        return FAIL
    return INFO


def error_name(err: KafkaError | None) -> str | None:
    """The symbolic name recorded in events, e.g. ``NOT_ENOUGH_REPLICAS`` or ``_MSG_TIMED_OUT``."""
    if err is None:
        return None
    try:
        return err.name()
    except Exception:  # pragma: no cover - defensive: name() exists for every KafkaError
        return str(err.code())


def msg_leader_epoch(msg) -> int | None:
    """``msg.leader_epoch()`` where the client exposes it (confluent-kafka >= 2.1), else None."""
    try:
        return msg.leader_epoch()
    except (AttributeError, RuntimeError):
        return None


def count_error(errors: dict[str, int], err: KafkaError) -> None:
    """Count a consumer's error by name in ``errors``; an end-of-partition notice is not an error."""
    if err.code() != KafkaError._PARTITION_EOF:
        n = error_name(err)
        errors[n] = errors.get(n, 0) + 1
