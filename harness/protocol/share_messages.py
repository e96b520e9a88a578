"""The share-group requests of the protocol client (KIP-932), encoded and decoded by hand from the
message schemas in kafka-clients-4.4.0.jar ``common/message/DescribeShareGroupOffsetsRequest.json`` /
``...Response.json``:

* **DescribeShareGroupOffsets** (key 90, v0–v1, flexible from v0; v1 adds ``Lag``, KIP-1226): the
  share-partition start offset (SPSO) and the leader epoch of each share-partition of a share group.
  The group coordinator answers (the Java admin client sends it to the broker FindCoordinator names for
  the group id, key type 0); it reads the *persisted* state from the share coordinator
  (``GroupCoordinatorService.describeShareGroupOffsets`` -> ``readShareGroupStateSummary`` ->
  ``Persister.readSummary``, kafka-group-coordinator-4.4.0.jar), so the SPSO it gives is the one in
  ``__share_group_state``, never ahead of the partition leader's in-memory one. A topic the coordinator
  does not know comes back with start offset -1; a share-partition without state likewise.
  confluent-kafka 2.16 has no such Admin call.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.protocol.header import API_DESCRIBE_SHARE_GROUP_OFFSETS, check_version, encode_request_header, error_name
from harness.protocol.wire import Reader, Writer

DESCRIBE_SHARE_GROUP_OFFSETS_VERSIONS = (0, 1)


@dataclass
class ShareOffset:
    topic: str
    topic_id: bytes
    partition: int
    start_offset: int            # the share-partition start offset; -1: no state
    leader_epoch: int
    lag: int | None              # v1+: the share-partition lag (-1: unknown); None before v1
    error: str | None
    error_message: str | None


@dataclass
class ShareGroupOffsets:
    group: str
    error: str | None
    error_message: str | None
    partitions: list[ShareOffset] = field(default_factory=list)
    throttle_time_ms: int = 0


def encode_describe_share_group_offsets_request(version: int, correlation_id: int, client_id: str | None,
                                                group: str, topics: dict[str, list[int]] | None) -> bytes:
    """One group; ``topics`` {topic: [partitions]} (None: every topic-partition of the group)."""
    check_version("DescribeShareGroupOffsets", version, DESCRIBE_SHARE_GROUP_OFFSETS_VERSIONS)
    w = Writer()
    encode_request_header(w, API_DESCRIBE_SHARE_GROUP_OFFSETS, version, correlation_id, client_id, flexible=True)

    def topic(ww: Writer, item: tuple[str, list[int]]) -> None:
        ww.string(item[0], compact=True).array(list(item[1]), lambda x, p: x.int32(p), compact=True)
        ww.empty_tagged_fields()

    def grp(ww: Writer, g: str) -> None:
        ww.string(g, compact=True).array(None if topics is None else sorted(topics.items()), topic, compact=True)
        ww.empty_tagged_fields()

    w.array([group], grp, compact=True)
    w.empty_tagged_fields()
    return w.bytes()


def decode_describe_share_group_offsets_response(body: bytes, version: int) -> list[ShareGroupOffsets]:
    check_version("DescribeShareGroupOffsets", version, DESCRIBE_SHARE_GROUP_OFFSETS_VERSIONS)
    r = Reader(body)
    throttle = r.int32()

    def grp(gr: Reader) -> ShareGroupOffsets:
        gid = gr.string(True) or ""
        parts: list[ShareOffset] = []

        def topic(tr: Reader) -> None:
            name, tid = tr.string(True) or "", tr.uuid()

            def part(pr: Reader) -> None:
                idx, start, epoch = pr.int32(), pr.int64(), pr.int32()
                lag = pr.int64() if version >= 1 else None
                code, msg = pr.int16(), pr.string(True)
                pr.tagged_fields()
                parts.append(ShareOffset(name, tid, idx, start, epoch, lag, error_name(code), msg))

            tr.array(part, True)
            tr.tagged_fields()

        gr.array(topic, True)
        code, msg = gr.int16(), gr.string(True)
        gr.tagged_fields()
        return ShareGroupOffsets(gid, error_name(code), msg, parts, throttle)

    groups = r.array(grp, True) or []
    r.tagged_fields()
    r.expect_end(f"DescribeShareGroupOffsets v{version} response")
    return groups
