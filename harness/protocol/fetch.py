"""Fetch (key 1, v4–v11) and the record batches it returns, decoded down to what a transaction check needs.

A read of a partition's log **as written**: read_uncommitted, so every data batch (committed, aborted or
still open) and every control batch (the transaction markers) comes back with its header fields, which no
client library exposes: ``producerId``, ``producerEpoch``, the transactional and control bits of
``attributes``, and for a control batch its marker type (``ControlRecordType``: 0 ABORT, 1 COMMIT) and the
coordinator epoch. Used by :mod:`harness.workload.batch_log` to read back what the Java transactional
client wrote (docs/transactions.md, "Transactions v2").

Layouts read from apache/kafka ``clients/src/main/resources/common/message/FetchRequest.json`` /
``FetchResponse.json`` (v4 adds the isolation level, the last stable offset and the aborted transactions,
v5 the log start offset, v7 fetch sessions, v9 the current leader epoch, v11 the rack id and the
preferred read replica; v12+ are flexible and v13+ name topics by id: not used) and
``clients/src/main/java/org/apache/kafka/common/record/DefaultRecordBatch.java`` / ``DefaultRecord.java`` /
``EndTransactionMarker.java`` (the batch header, the record layout and the marker's key and value). Kafka
4.0 removed Fetch v0–v3 (KIP-896), so v4 is the floor everywhere this module is used.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

from harness.protocol.header import check_version, encode_request_header, error_name
from harness.protocol.wire import DecodeError, Reader, Writer

API_FETCH = 1
FETCH_VERSIONS = (4, 11)
READ_UNCOMMITTED, READ_COMMITTED = 0, 1
MARKER_TYPES = {0: "abort", 1: "commit"}        # ControlRecordType.ABORT / COMMIT
BATCH_HEADER = 61                               # DefaultRecordBatch.RECORD_BATCH_OVERHEAD
_HEADER = struct.Struct(">qiibIhiqqqhii")
COMPRESSION = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


@dataclass
class RecordBatch:
    base_offset: int
    last_offset: int
    leader_epoch: int                 # partitionLeaderEpoch
    producer_id: int
    producer_epoch: int
    base_sequence: int
    transactional: bool
    control: bool
    compression: str
    count: int
    base_timestamp: int
    marker: str | None = None         # control batches: "commit" / "abort" (ControlRecordType), else None
    coordinator_epoch: int | None = None
    values: list[str | None] | None = None   # data batches: the records' values (None: compressed, not decoded)
    keys: list[str | None] | None = None


@dataclass
class FetchedPartition:
    partition: int
    error: str | None
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    aborted: list[tuple[int, int]] | None     # (producer id, first offset) of aborted transactions (read_committed)
    batches: list[RecordBatch] = field(default_factory=list)
    torn_tail: bool = False                   # the response ended inside a batch (max bytes): read on from there


# -- request / response ---------------------------------------------------------------------------
def encode_fetch_request(version: int, correlation_id: int, client_id: str | None, topic: str,
                         partitions: dict[int, int], *, isolation: int = READ_UNCOMMITTED,
                         max_wait_ms: int = 0, max_bytes: int = 8 << 20, partition_max_bytes: int = 1 << 20) -> bytes:
    """One topic, ``partitions`` = {partition: fetch offset}; a consumer's fetch (replica id -1)."""
    check_version("Fetch", version, FETCH_VERSIONS)
    w = Writer()
    encode_request_header(w, API_FETCH, version, correlation_id, client_id, False)
    w.int32(-1).int32(max_wait_ms).int32(1).int32(max_bytes).int8(isolation)
    if version >= 7:
        w.int32(0).int32(-1)                    # no fetch session (FINAL_EPOCH: a full fetch, no session kept)

    def part(ww: Writer, po: tuple[int, int]) -> None:
        ww.int32(po[0])
        if version >= 9:
            ww.int32(-1)                        # CurrentLeaderEpoch: not checked
        ww.int64(po[1])
        if version >= 5:
            ww.int64(-1)                        # LogStartOffset: only followers send it
        ww.int32(partition_max_bytes)

    w.array([topic], lambda ww, t: (ww.string(t, compact=False),
                                    ww.array(sorted(partitions.items()), part, compact=False)), compact=False)
    if version >= 7:
        w.array([], lambda ww, t: None, compact=False)
    if version >= 11:
        w.string("", compact=False)
    return w.bytes()


def decode_fetch_response(body: bytes, version: int, topic: str) -> dict[int, FetchedPartition]:
    """The partitions of ``topic`` in the response body, their batches decoded (:func:`parse_batches`)."""
    check_version("Fetch", version, FETCH_VERSIONS)
    r = Reader(body)
    r.int32()                                   # ThrottleTimeMs
    if version >= 7:
        err = r.int16()
        r.int32()                               # SessionId
        if err:
            raise DecodeError(f"Fetch failed as a whole: {error_name(err)}")
    out: dict[int, FetchedPartition] = {}

    def aborted(rr: Reader) -> tuple[int, int]:
        return rr.int64(), rr.int64()

    def part(rr: Reader) -> FetchedPartition:
        p, err, hw, lso = rr.int32(), rr.int16(), rr.int64(), rr.int64()
        lss = rr.int64() if version >= 5 else -1
        ab = rr.array(aborted, compact=False)
        if version >= 11:
            rr.int32()                          # PreferredReadReplica
        n = rr.int32()
        raw = rr._take(n, "records") if n > 0 else b""
        fp = FetchedPartition(p, error_name(err), hw, lso, lss, ab)
        fp.batches, fp.torn_tail = parse_batches(raw)
        return fp

    def top(rr: Reader) -> None:
        name = rr.string(compact=False)
        for fp in rr.array(part, compact=False) or []:
            if name == topic:
                out[fp.partition] = fp

    r.array(top, compact=False)
    r.expect_end(f"Fetch v{version} response")
    return out


def fetch(client, topic: str, partitions: dict[int, int], *, isolation: int = READ_UNCOMMITTED,
          max_wait_ms: int = 0) -> dict[int, FetchedPartition]:
    """One Fetch through a :class:`harness.protocol.ProtocolClient` connected to the partitions' leader."""
    v = client.api_versions().max_version(API_FETCH, FETCH_VERSIONS)
    if v is None:
        from harness.protocol.client import UnsupportedApi
        raise UnsupportedApi(f"{client.host}:{client.port}: the broker does not speak Fetch v{FETCH_VERSIONS[0]}-"
                             f"v{FETCH_VERSIONS[1]}")
    body = client.roundtrip(API_FETCH, v, lambda cid: encode_fetch_request(
        v, cid, client.client_id, topic, partitions, isolation=isolation, max_wait_ms=max_wait_ms), f"Fetch v{v}")
    return client._decode(lambda b, vv: decode_fetch_response(b, vv, topic), body, v, "Fetch")


# -- record batches ----------------------------------------------------------------------------------
def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    """A zigzag varint (DefaultRecord's lengths and deltas) at ``pos``: (value, next position)."""
    shift = raw = 0
    while True:
        if pos >= len(buf):
            raise DecodeError("record ends inside a varint")
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if not b & 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
        if shift > 63:
            raise DecodeError("varint longer than 10 bytes")


def _bytes(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    n, pos = _varint(buf, pos)
    if n < 0:
        return None, pos
    if pos + n > len(buf):
        raise DecodeError("record field runs past its batch")
    return buf[pos:pos + n], pos + n


def parse_records(data: bytes, count: int) -> list[tuple[bytes | None, bytes | None]]:
    """``count`` DefaultRecords: their (key, value)."""
    out, pos = [], 0
    for _ in range(count):
        length, pos = _varint(data, pos)
        end = pos + length
        pos += 1                                  # attributes
        _, pos = _varint(data, pos)               # timestampDelta
        _, pos = _varint(data, pos)               # offsetDelta
        key, pos = _bytes(data, pos)
        value, pos = _bytes(data, pos)
        out.append((key, value))
        pos = end                                 # headers: not needed
    return out


def _text(b: bytes | None) -> str | None:
    return None if b is None else b.decode("utf-8", errors="replace")


def parse_batches(buf: bytes) -> tuple[list[RecordBatch], bool]:
    """Every whole magic-2 batch in ``buf`` (a Fetch response's records, or a segment file) and whether it
    ended inside a batch (a fetch cut at its byte limit). CRCs are not checked: the broker checked them."""
    out: list[RecordBatch] = []
    pos, n = 0, len(buf)
    while pos < n:
        if n - pos < BATCH_HEADER:
            return out, True
        (base, length, lepoch, magic, _crc, attrs, last_delta, base_ts, _max_ts, pid, pepoch, seq,
         count) = _HEADER.unpack_from(buf, pos)
        end = pos + 12 + length
        if end > n:
            return out, True
        if magic != 2:
            raise DecodeError(f"batch at offset {base} has magic {magic}; this reader decodes magic 2 only")
        codec = COMPRESSION.get(attrs & 0x07, f"codec {attrs & 0x07}")
        b = RecordBatch(base, base + last_delta, lepoch, pid, pepoch, seq, bool(attrs & 0x10), bool(attrs & 0x20),
                        codec, count, base_ts)
        data = None
        if codec == "none":
            data = buf[pos + BATCH_HEADER:end]
        elif codec == "gzip":
            data = zlib.decompress(buf[pos + BATCH_HEADER:end], 16 + zlib.MAX_WBITS)
        if data is not None:
            recs = parse_records(data, count)
            if b.control:
                key, value = recs[0] if recs else (None, None)
                if key is not None and len(key) >= 4:
                    b.marker = MARKER_TYPES.get(struct.unpack_from(">h", key, 2)[0], "unknown")
                if value is not None and len(value) >= 6:
                    b.coordinator_epoch = struct.unpack_from(">i", value, 2)[0]
            else:
                b.values = [_text(v) for _, v in recs]
                b.keys = [_text(k) for k, _ in recs]
        out.append(b)
        pos = end
    return out, False
