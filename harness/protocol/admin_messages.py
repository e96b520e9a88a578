"""The administrative Kafka requests of the protocol client, encoded and decoded by hand from the
message schemas in apache/kafka ``clients/src/main/resources/common/message/*.json`` (the headers are
in :mod:`.header`, the cluster-state reads in :mod:`.messages`):

* **ListPartitionReassignments** (key 46, v0, flexible): ongoing reassignments with their adding and
  removing replicas (spec §7.9, §9.6); confluent-kafka 2.16 has no such Admin call.
* **AlterPartitionReassignments** (key 45, v0, flexible): start, replace or cancel (null replicas)
  reassignments and read the controller's own validation per partition (spec §7.3, §9.6); the
  reassignment tool checks broker ids against DescribeCluster first, so a refusal by the controller
  itself is seen only through this request.
* **DescribeLogDirs** (key 35, v1–v4; v2+ flexible, v3 adds a top-level error, v4 the volume's total
  and usable bytes; read at the apache/kafka mirror's HEAD, ``DescribeLogDirsRequest.json`` /
  ``DescribeLogDirsResponse.json``): the replicas a broker holds, per log directory. A broker that
  deletes a replica first renames its directory ``<tp>.<id>-delete`` and drops it from its log manager,
  so the partition leaves this answer when ``ls`` of the data directory stops showing it; asking the
  broker needs no shell in its image. confluent-kafka 2.16 has no such Admin call.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.protocol.header import (API_ALTER_PARTITION_REASSIGNMENTS, API_DESCRIBE_LOG_DIRS, API_LIST_PARTITION_REASSIGNMENTS,
                                     check_version, encode_request_header, error_name)
from harness.protocol.wire import Reader, Writer

LIST_PARTITION_REASSIGNMENTS_VERSIONS = (0, 0)
ALTER_PARTITION_REASSIGNMENTS_VERSIONS = (0, 0)
DESCRIBE_LOG_DIRS_VERSIONS = (1, 4)      # v0 is deprecated and the same as v1


# -- ListPartitionReassignments ------------------------------------------------------------------
@dataclass
class OngoingReassignment:
    topic: str
    partition: int
    replicas: list[int]
    adding_replicas: list[int]
    removing_replicas: list[int]


@dataclass
class ReassignmentsResult:
    error: str | None
    error_message: str | None
    partitions: list[OngoingReassignment]
    throttle_time_ms: int = 0


def encode_list_partition_reassignments_request(version: int, correlation_id: int, client_id: str | None,
                                                topics: dict[str, list[int]] | None = None,
                                                timeout_ms: int = 10000) -> bytes:
    """``topics=None`` lists every ongoing reassignment; else only those of {topic: [partitions]}."""
    check_version("ListPartitionReassignments", version, LIST_PARTITION_REASSIGNMENTS_VERSIONS)
    w = Writer()
    encode_request_header(w, API_LIST_PARTITION_REASSIGNMENTS, version, correlation_id, client_id, flexible=True)

    def topic(ww: Writer, item: tuple[str, list[int]]) -> None:
        ww.string(item[0], compact=True).array(list(item[1]), lambda x, p: x.int32(p), compact=True)
        ww.empty_tagged_fields()

    w.int32(timeout_ms)
    w.array(None if topics is None else sorted(topics.items()), topic, compact=True)
    w.empty_tagged_fields()
    return w.bytes()


def decode_list_partition_reassignments_response(body: bytes, version: int) -> ReassignmentsResult:
    check_version("ListPartitionReassignments", version, LIST_PARTITION_REASSIGNMENTS_VERSIONS)
    r = Reader(body)
    throttle, err, msg = r.int32(), r.int16(), r.string(True)

    def int32s(rr: Reader) -> list[int]:
        return rr.array(lambda x: x.int32(), True) or []

    def topic(rr: Reader) -> list[OngoingReassignment]:
        name = rr.string(True) or ""

        def part(pr: Reader) -> OngoingReassignment:
            o = OngoingReassignment(name, pr.int32(), int32s(pr), int32s(pr), int32s(pr))
            pr.tagged_fields()
            return o

        parts = rr.array(part, True) or []
        rr.tagged_fields()
        return parts

    topics = r.array(topic, True) or []
    r.tagged_fields()
    r.expect_end(f"ListPartitionReassignments v{version} response")
    return ReassignmentsResult(error_name(err), msg, [o for t in topics for o in t], throttle)


# -- AlterPartitionReassignments -----------------------------------------------------------------
@dataclass
class AlterReassignmentsResult:
    error: str | None                        # the request's own error (e.g. NOT_CONTROLLER)
    error_message: str | None
    partitions: dict[tuple[str, int], tuple[str | None, str | None]]   # (topic, p) → (error, message)
    throttle_time_ms: int = 0


def encode_alter_partition_reassignments_request(version: int, correlation_id: int, client_id: str | None,
                                                 targets: dict[tuple[str, int], list[int] | None],
                                                 timeout_ms: int = 60000) -> bytes:
    """``targets``: ``{(topic, partition): replicas}``; ``None`` replicas cancel that partition's
    reassignment. Topics and partitions in sorted order."""
    check_version("AlterPartitionReassignments", version, ALTER_PARTITION_REASSIGNMENTS_VERSIONS)
    w = Writer()
    encode_request_header(w, API_ALTER_PARTITION_REASSIGNMENTS, version, correlation_id, client_id, flexible=True)
    by_topic: dict[str, list[tuple[int, list[int] | None]]] = {}
    for (t, p), reps in sorted(targets.items()):
        by_topic.setdefault(t, []).append((int(p), None if reps is None else [int(r) for r in reps]))

    def part(ww: Writer, item: tuple[int, list[int] | None]) -> None:
        ww.int32(item[0]).array(item[1], lambda x, r: x.int32(r), compact=True)
        ww.empty_tagged_fields()

    def topic(ww: Writer, item: tuple[str, list]) -> None:
        ww.string(item[0], compact=True).array(item[1], part, compact=True)
        ww.empty_tagged_fields()

    w.int32(timeout_ms)
    w.array(sorted(by_topic.items()), topic, compact=True)
    w.empty_tagged_fields()
    return w.bytes()


def decode_alter_partition_reassignments_response(body: bytes, version: int) -> AlterReassignmentsResult:
    check_version("AlterPartitionReassignments", version, ALTER_PARTITION_REASSIGNMENTS_VERSIONS)
    r = Reader(body)
    throttle, err, msg = r.int32(), r.int16(), r.string(True)

    def topic(rr: Reader) -> list[tuple[tuple[str, int], tuple[str | None, str | None]]]:
        name = rr.string(True) or ""

        def part(pr: Reader):
            idx, code, pmsg = pr.int32(), pr.int16(), pr.string(True)
            pr.tagged_fields()
            return (name, idx), (error_name(code), pmsg)

        parts = rr.array(part, True) or []
        rr.tagged_fields()
        return parts

    topics = r.array(topic, True) or []
    r.tagged_fields()
    r.expect_end(f"AlterPartitionReassignments v{version} response")
    return AlterReassignmentsResult(error_name(err), msg, dict(x for t in topics for x in t), throttle)


# -- DescribeLogDirs -----------------------------------------------------------------------------
@dataclass
class LogDir:
    path: str
    error: str | None
    partitions: dict[tuple[str, int], int]   # (topic, partition) -> size in bytes (current logs only)
    future: set[tuple[str, int]]             # replicas being moved into this directory


@dataclass
class LogDirsResult:
    error: str | None                        # v3+: the request's own error
    dirs: list[LogDir]
    throttle_time_ms: int = 0

    def hosted(self) -> set[tuple[str, int]]:
        """Every (topic, partition) with a current log in some directory of this broker."""
        return {tp for d in self.dirs for tp in d.partitions}


def encode_describe_log_dirs_request(version: int, correlation_id: int, client_id: str | None,
                                     topics: dict[str, list[int]] | None = None) -> bytes:
    """``topics=None`` describes every replica the broker holds; else only {topic: [partitions]}."""
    check_version("DescribeLogDirs", version, DESCRIBE_LOG_DIRS_VERSIONS)
    flexible = version >= 2
    w = Writer()
    encode_request_header(w, API_DESCRIBE_LOG_DIRS, version, correlation_id, client_id, flexible=flexible)

    def topic(ww: Writer, item: tuple[str, list[int]]) -> None:
        ww.string(item[0], compact=flexible).array(list(item[1]), lambda x, p: x.int32(p), compact=flexible)
        if flexible:
            ww.empty_tagged_fields()

    w.array(None if topics is None else sorted(topics.items()), topic, compact=flexible)
    if flexible:
        w.empty_tagged_fields()
    return w.bytes()


def decode_describe_log_dirs_response(body: bytes, version: int) -> LogDirsResult:
    check_version("DescribeLogDirs", version, DESCRIBE_LOG_DIRS_VERSIONS)
    flexible = version >= 2
    r = Reader(body)
    throttle = r.int32()
    err = r.int16() if version >= 3 else 0

    def result(rr: Reader) -> LogDir:
        code, path = rr.int16(), rr.string(flexible) or ""
        sizes: dict[tuple[str, int], int] = {}
        future: set[tuple[str, int]] = set()

        def topic(tr: Reader) -> None:
            name = tr.string(flexible) or ""

            def part(pr: Reader) -> None:
                idx, size, _lag, is_future = pr.int32(), pr.int64(), pr.int64(), pr.bool()
                (future.add((name, idx)) if is_future else sizes.__setitem__((name, idx), size))
                if flexible:
                    pr.tagged_fields()

            tr.array(part, flexible)
            if flexible:
                tr.tagged_fields()

        rr.array(topic, flexible)
        if version >= 4:
            rr.int64(), rr.int64()           # TotalBytes, UsableBytes
        if flexible:
            rr.tagged_fields()
        return LogDir(path, error_name(code), sizes, future)

    dirs = r.array(result, flexible) or []
    if flexible:
        r.tagged_fields()
    r.expect_end(f"DescribeLogDirs v{version} response")
    return LogDirsResult(error_name(err), dirs, throttle)
