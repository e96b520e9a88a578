"""Reader for the KRaft metadata log (``<metadata.log.dir>/__cluster_metadata-0/<base offset>.log``), pure Python.

This is the ground truth of a KRaft cluster's controller: every decision of the active controller is
a record appended to this Raft log, in offset order, so unlike polling nothing can be missed.

Segment file = a sequence of record batches, magic 2 (``DefaultRecordBatch``)::

    baseOffset int64, batchLength int32 (bytes after this field), partitionLeaderEpoch int32 (the Raft
    epoch of the leader that wrote it), magic int8 = 2, crc uint32 (CRC-32C of attributes..end),
    attributes int16 (bits 0-2 codec, 4 transactional, 5 control), lastOffsetDelta int32,
    baseTimestamp int64, maxTimestamp int64, producerId int64, producerEpoch int16, baseSequence int32,
    recordsCount int32, records (compressed as one stream when the codec is not NONE)

Record (``DefaultRecord``): length varint, attributes int8, timestampDelta varlong, offsetDelta varint,
key (varint length, -1 = null), value (same), headers count varint + headers (all varints zigzag).

A data record's value is an ``ApiMessageAndVersion`` (``AbstractApiMessageSerde``: frame version
unsigned varint = 1, apiKey unsigned varint, version unsigned varint, then the message in Kafka's
generated encoding — metadata records are flexible from version 0: compact strings and arrays, length
+ 1 as an unsigned varint, 0 = null, and a tagged-field section after every struct). A control
record's key is ``{int16 version, int16 type}`` (``ControlRecordType``) and its value the message at
version 0 (``ControlRecordUtils``). Field layouts: ``metadata/src/main/resources/common/metadata/*.json``
and ``clients/src/main/resources/common/message/{LeaderChangeMessage,SnapshotHeaderRecord,...}.json``.

:func:`parse_segment_bytes` / :func:`read_metadata_blobs` give :class:`MetadataLog` with one
:class:`MetaRecord` per log offset; :mod:`harness.observer.kraft_events` replays them into events.
"""

from __future__ import annotations

import base64
import re
import struct
import zlib
from dataclasses import dataclass, field
from typing import Iterable

from .crc32c import crc32c


class KraftLogError(ValueError):
    """Not a metadata log segment, a codec this reader does not have, or damage in the middle of a file."""


class _Short(KraftLogError):
    """The bytes end before the value does."""


# -- primitive reader ------------------------------------------------------------------------------
class Reader:
    """Big-endian fixed-width values, zigzag and unsigned varints, Kafka's compact types."""

    def __init__(self, buf: bytes, pos: int = 0, end: int | None = None):
        self.buf, self.pos, self.end = buf, pos, len(buf) if end is None else end

    def remaining(self) -> int:
        return self.end - self.pos

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > self.end:
            raise _Short(f"need {n} bytes at {self.pos}, {self.remaining()} left")
        b = self.buf[self.pos:self.pos + n]
        self.pos += n
        return b

    def _fixed(self, fmt: str, n: int):
        return struct.unpack(fmt, self.take(n))[0]

    def int8(self) -> int: return self._fixed(">b", 1)
    def int16(self) -> int: return self._fixed(">h", 2)
    def uint16(self) -> int: return self._fixed(">H", 2)
    def int32(self) -> int: return self._fixed(">i", 4)
    def uint32(self) -> int: return self._fixed(">I", 4)
    def int64(self) -> int: return self._fixed(">q", 8)
    def bool(self) -> bool: return self.int8() != 0

    def uvarint(self, max_bytes: int = 5) -> int:
        value = shift = 0
        for _ in range(max_bytes):
            b = self.take(1)[0]
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
        raise KraftLogError(f"varint longer than {max_bytes} bytes at {self.pos}")

    def varint(self) -> int:
        v = self.uvarint(5)
        return (v >> 1) ^ -(v & 1)

    def varlong(self) -> int:
        v = self.uvarint(10)
        return (v >> 1) ^ -(v & 1)

    def uuid(self) -> str:
        """Kafka's ``Uuid.toString``: URL-safe base64 of the 16 bytes, no padding."""
        return base64.urlsafe_b64encode(self.take(16)).decode().rstrip("=")

    def compact_string(self) -> str | None:
        n = self.uvarint() - 1
        return None if n < 0 else self.take(n).decode("utf-8")

    def compact_array(self, elem) -> list | None:
        n = self.uvarint() - 1
        return None if n < 0 else [elem(self) for _ in range(n)]


# -- generated-message schemas (flexible versions only: every metadata and KRaft control message) ----
@dataclass(frozen=True)
class F:
    """One field: ``kind`` is a primitive name, ``[]<primitive>`` or a tuple of fields (a struct) /
    ``[(fields...)]`` (an array of structs); ``since``: first version; ``tag``: tagged field number."""
    name: str
    kind: object
    since: int = 0
    tag: int | None = None


_PRIM = {"int8": Reader.int8, "int16": Reader.int16, "uint16": Reader.uint16, "int32": Reader.int32,
         "int64": Reader.int64, "bool": Reader.bool, "uuid": Reader.uuid, "string": Reader.compact_string}


def _read_kind(r: Reader, kind, version: int):
    if isinstance(kind, tuple):                                 # struct
        return read_struct(r, kind, version)
    if isinstance(kind, list):                                  # array of structs
        return r.compact_array(lambda rr: read_struct(rr, tuple(kind), version))
    if kind.startswith("[]"):
        return r.compact_array(_PRIM[kind[2:]])
    return _PRIM[kind](r)


def read_struct(r: Reader, fields: tuple, version: int) -> dict:
    """Untagged fields in order, then the tagged-field section (unknown tags skipped, counted)."""
    out: dict = {}
    for f in fields:
        if f.tag is None and version >= f.since:
            out[f.name] = _read_kind(r, f.kind, version)
    tagged = {f.tag: f for f in fields if f.tag is not None and version >= f.since}
    for _ in range(r.uvarint()):
        tag, size = r.uvarint(), r.uvarint()
        body = r.take(size)
        f = tagged.get(tag)
        if f is None:
            out.setdefault("_unknown_tags", []).append(tag)
            continue
        sub = Reader(body)
        out[f.name] = _read_kind(sub, f.kind, version)
        if sub.remaining():
            raise KraftLogError(f"tagged field {f.name}: {sub.remaining()} bytes left over")
    return out


_ENDPOINT = [F("name", "string"), F("host", "string"), F("port", "uint16"), F("security_protocol", "int16")]
_FEATURE = [F("name", "string"), F("min_supported", "int16"), F("max_supported", "int16")]

# apiKey -> (name, fields, highest version whose layout this table knows); None = named, not decoded
METADATA_RECORDS: dict[int, tuple[str, tuple | None, int]] = {
    0: ("RegisterBrokerRecord", (
        F("broker_id", "int32"), F("is_migrating_zk_broker", "bool", 2), F("incarnation_id", "uuid"),
        F("broker_epoch", "int64"), F("endpoints", _ENDPOINT), F("features", _FEATURE), F("rack", "string"),
        F("fenced", "bool"), F("in_controlled_shutdown", "bool", 1), F("log_dirs", "[]uuid", 3, tag=0)), 3),
    1: ("UnregisterBrokerRecord", (F("broker_id", "int32"), F("broker_epoch", "int64")), 0),
    2: ("TopicRecord", (F("name", "string"), F("topic_id", "uuid")), 0),
    3: ("PartitionRecord", (
        F("partition_id", "int32"), F("topic_id", "uuid"), F("replicas", "[]int32"), F("isr", "[]int32"),
        F("removing_replicas", "[]int32"), F("adding_replicas", "[]int32"), F("leader", "int32"),
        F("leader_recovery_state", "int8", tag=0), F("leader_epoch", "int32"), F("partition_epoch", "int32"),
        F("directories", "[]uuid", 1), F("eligible_leader_replicas", "[]int32", 2, tag=1),
        F("last_known_elr", "[]int32", 2, tag=2)), 2),
    4: ("ConfigRecord", None, 0),
    5: ("PartitionChangeRecord", (
        F("partition_id", "int32"), F("topic_id", "uuid"), F("isr", "[]int32", tag=0), F("leader", "int32", tag=1),
        F("replicas", "[]int32", tag=2), F("removing_replicas", "[]int32", tag=3),
        F("adding_replicas", "[]int32", tag=4), F("leader_recovery_state", "int8", tag=5),
        F("directories", "[]uuid", 1, tag=8), F("eligible_leader_replicas", "[]int32", 2, tag=6),
        F("last_known_elr", "[]int32", 2, tag=7)), 2),
    6: ("AccessControlRecord", None, 0),
    7: ("FenceBrokerRecord", (F("broker_id", "int32"), F("broker_epoch", "int64")), 0),
    8: ("UnfenceBrokerRecord", (F("broker_id", "int32"), F("broker_epoch", "int64")), 0),
    9: ("RemoveTopicRecord", (F("topic_id", "uuid"),), 0),
    10: ("DelegationTokenRecord", None, 0),
    11: ("UserScramCredentialRecord", None, 0),
    12: ("FeatureLevelRecord", (F("name", "string"), F("feature_level", "int16")), 0),
    14: ("ClientQuotaRecord", None, 0),
    15: ("ProducerIdsRecord", None, 0),
    17: ("BrokerRegistrationChangeRecord", (
        F("broker_id", "int32"), F("broker_epoch", "int64"), F("fenced", "int8", tag=0),
        F("in_controlled_shutdown", "int8", 1, tag=1), F("log_dirs", "[]uuid", 2, tag=2)), 2),
    18: ("AccessControlEntryRecord", None, 0),
    19: ("RemoveAccessControlEntryRecord", None, 0),
    20: ("NoOpRecord", (), 0),
    21: ("ZkMigrationStateRecord", None, 0),
    22: ("RemoveUserScramCredentialRecord", None, 0),
    23: ("BeginTransactionRecord", (F("name", "string", tag=0),), 0),
    24: ("EndTransactionRecord", (), 0),
    25: ("AbortTransactionRecord", (F("reason", "string", tag=0),), 0),
    26: ("RemoveDelegationTokenRecord", None, 0),
    27: ("RegisterControllerRecord", None, 0),
}

_VOTER_V0 = [F("voter_id", "int32")]
# ControlRecordType id -> (name, fields of the value at version 0)
CONTROL_RECORDS: dict[int, tuple[str, tuple | None]] = {
    0: ("AbortMarker", None),
    1: ("CommitMarker", None),
    2: ("LeaderChangeMessage", (F("version", "int16"), F("leader_id", "int32"), F("voters", _VOTER_V0),
                                F("granting_voters", _VOTER_V0))),
    3: ("SnapshotHeaderRecord", (F("version", "int16"), F("last_contained_log_timestamp", "int64"))),
    4: ("SnapshotFooterRecord", (F("version", "int16"),)),
    5: ("KRaftVersionRecord", (F("version", "int16"), F("kraft_version", "int16"))),
    6: ("VotersRecord", (F("version", "int16"), F("voters", [
        F("voter_id", "int32"), F("voter_directory_id", "uuid"),
        F("endpoints", [F("name", "string"), F("host", "string"), F("port", "uint16")]),
        F("kraft_version_feature", (F("min_supported", "int16"), F("max_supported", "int16")))]))),
}

COMPRESSION = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


@dataclass
class MetaRecord:
    """One log offset: a metadata record (``control`` False) or a Raft control record.

    ``type`` is the record's name (``"unknown"`` for an api key this reader does not know); ``fields``
    the decoded message (empty when the type is only named); ``problem`` says why it was not decoded."""
    offset: int
    time_ms: int
    raft_epoch: int
    control: bool
    type: str
    api_key: int | None
    version: int | None
    fields: dict = field(default_factory=dict)
    problem: str | None = None


def decode_metadata_value(value: bytes) -> tuple[str, int, int, dict, str | None]:
    """``(type, api_key, version, fields, problem)`` of an ``ApiMessageAndVersion`` frame."""
    r = Reader(value)
    frame = r.uvarint()
    if frame != 1:
        raise KraftLogError(f"metadata record frame version {frame} (only 1 exists)")
    api_key, version = r.uvarint(), r.uvarint()
    known = METADATA_RECORDS.get(api_key)
    if known is None:
        return "unknown", api_key, version, {}, None
    name, fields, max_version = known
    if fields is None:
        return name, api_key, version, {}, None
    try:
        out = read_struct(r, fields, min(version, max_version))
        if r.remaining():
            raise KraftLogError(f"{r.remaining()} bytes left over")
    except KraftLogError as e:
        return name, api_key, version, {}, f"{name} v{version} did not decode: {e}"
    return name, api_key, version, out, None


def decode_control(key: bytes | None, value: bytes | None) -> tuple[str, int | None, dict, str | None]:
    """``(type, control_type, fields, problem)`` of a control record."""
    if key is None or len(key) < 4:
        return "unknown_control", None, {}, "control record without a 4-byte key"
    ctype = struct.unpack(">h", key[2:4])[0]
    name, fields = CONTROL_RECORDS.get(ctype, ("unknown_control", None))
    if fields is None or value is None:
        return name, ctype, {}, None
    try:
        return name, ctype, read_struct(Reader(value), fields, 0), None
    except KraftLogError as e:
        return name, ctype, {}, f"{name} did not decode: {e}"


# -- record batches --------------------------------------------------------------------------------
BATCH_HEADER = 61           # DefaultRecordBatch.RECORD_BATCH_OVERHEAD
_HEADER = struct.Struct(">qiibIhiqqqhii")


@dataclass
class Batch:
    base_offset: int
    last_offset: int
    raft_epoch: int             # partitionLeaderEpoch
    base_timestamp: int
    compression: str
    control: bool
    records: list[MetaRecord]
    position: int               # byte position in its file


def _records(r: Reader, count: int, base_offset: int, base_ts: int, epoch: int, control: bool) -> list[MetaRecord]:
    out = []
    for _ in range(count):
        size = r.varint()
        rr = Reader(r.buf, r.pos, r.pos + size)
        r.take(size)
        rr.int8()                                        # attributes (unused)
        ts = base_ts + rr.varlong()
        offset = base_offset + rr.varint()
        klen = rr.varint()
        key = rr.take(klen) if klen >= 0 else None
        vlen = rr.varint()
        value = rr.take(vlen) if vlen >= 0 else None
        for _ in range(rr.varint()):                     # headers: unused by KRaft
            rr.take(rr.varint())
            n = rr.varint()
            if n >= 0:
                rr.take(n)
        if rr.remaining():
            raise KraftLogError(f"record at offset {offset}: {rr.remaining()} bytes left over")
        if control:
            name, ctype, fields, problem = decode_control(key, value)
            out.append(MetaRecord(offset, ts, epoch, True, name, ctype, 0, fields, problem))
        elif value is None:
            out.append(MetaRecord(offset, ts, epoch, False, "unknown", None, None, {}, "record without a value"))
        else:
            name, api_key, version, fields, problem = decode_metadata_value(value)
            out.append(MetaRecord(offset, ts, epoch, False, name, api_key, version, fields, problem))
    return out


def _decode_batch(buf: bytes, pos: int) -> Batch:
    (base_offset, length, epoch, magic, crc, attrs, last_delta, base_ts, _max_ts, _pid, _pepoch, _seq,
     count) = _HEADER.unpack_from(buf, pos)
    end = pos + 12 + length
    if magic != 2:
        raise KraftLogError(f"batch at byte {pos} has magic {magic} (the metadata log uses 2)")
    if crc32c(buf[pos + 21:end]) != crc:
        raise KraftLogError(f"batch at byte {pos} fails its CRC-32C")
    codec = COMPRESSION.get(attrs & 0x07, f"codec {attrs & 0x07}")
    control = bool(attrs & 0x20)
    data = buf[pos + BATCH_HEADER:end]
    if codec == "gzip":
        data = zlib.decompress(data, 16 + zlib.MAX_WBITS)
    elif codec != "none":
        raise KraftLogError(f"batch at offset {base_offset} is compressed with {codec}; "
                            "this reader decodes only uncompressed and gzip batches")
    r = Reader(data)
    try:
        recs = _records(r, count, base_offset, base_ts, epoch, control)
    except _Short as e:
        raise KraftLogError(f"batch at offset {base_offset}: records end early ({e})") from None
    if r.remaining():
        raise KraftLogError(f"batch at offset {base_offset}: {r.remaining()} bytes after its records")
    return Batch(base_offset, base_offset + last_delta, epoch, base_ts, codec, control, recs, pos)


@dataclass
class SegmentFile:
    path: str
    name_offset: int | None         # the base offset in the file name
    batches: list[Batch] = field(default_factory=list)
    torn_tail: str | None = None    # a partially written last batch, dropped


_SEGMENT_NAME = re.compile(r"(?:^|/)(\d{20})\.log$")


def offset_from_name(name: str) -> int | None:
    m = _SEGMENT_NAME.search(name)
    return int(m.group(1)) if m else None


def parse_segment_bytes(buf: bytes, path: str = "<bytes>") -> SegmentFile:
    """Decode one segment. A torn last batch (crash, or the file read while being appended to) is
    dropped and described in ``torn_tail``; damage followed by more data raises :class:`KraftLogError`.
    Trailing zero bytes (a pre-allocated segment) end the data."""
    out = SegmentFile(path, offset_from_name(path))
    pos = 0
    while pos < len(buf):
        rest = len(buf) - pos
        if buf[pos] == 0 and not any(buf[pos:pos + 12]) and not buf[pos:].strip(b"\0"):
            break                       # a batch has a non-zero length: only padding starts with 12 zeros
        if rest < BATCH_HEADER:
            out.torn_tail = f"{rest} bytes at byte {pos}, shorter than a batch header"
            break
        length = struct.unpack_from(">i", buf, pos + 8)[0]
        end = pos + 12 + length
        if length < BATCH_HEADER - 12:
            raise KraftLogError(f"{path}: batch at byte {pos} declares length {length}")
        if end > len(buf):
            out.torn_tail = f"batch at byte {pos} declares {length} bytes, the file ends after {rest - 12}"
            break
        try:
            out.batches.append(_decode_batch(buf, pos))
        except KraftLogError as e:
            if "CRC" in str(e) and not buf[end:].strip(b"\0"):
                out.torn_tail = str(e)
                break
            raise KraftLogError(f"{path}: {e}") from None
        pos = end
    return out


@dataclass
class MetadataLog:
    """All segments of one node's ``__cluster_metadata-0``, in offset order."""
    files: list[SegmentFile]
    records: list[MetaRecord]
    offset_gaps: list[tuple[int, int]]      # (last offset before, first offset after)

    @property
    def first_offset(self) -> int | None:
        return self.records[0].offset if self.records else None

    @property
    def last_offset(self) -> int | None:
        return self.records[-1].offset if self.records else None

    @property
    def starts_at_beginning(self) -> bool:
        """The log still holds offset 0 (no prefix replaced by a snapshot and deleted)."""
        return bool(self.records) and self.records[0].offset == 0

    @property
    def torn_tails(self) -> list[str]:
        return [f"{f.path}: {f.torn_tail}" for f in self.files if f.torn_tail]


def merge_segments(files: Iterable[SegmentFile]) -> MetadataLog:
    """Segments (any order) into one log; an offset seen twice keeps its first decoding, and any
    skipped offset is reported (the Raft log has no holes: control records take offsets too)."""
    files = sorted(files, key=lambda f: f.name_offset if f.name_offset is not None else
                   (f.batches[0].base_offset if f.batches else 0))
    seen: dict[int, MetaRecord] = {}
    for f in files:
        for b in f.batches:
            for rec in b.records:
                seen.setdefault(rec.offset, rec)
    recs = [seen[o] for o in sorted(seen)]
    gaps = [(a.offset, b.offset) for a, b in zip(recs, recs[1:]) if b.offset != a.offset + 1]
    return MetadataLog(files, recs, gaps)


def read_metadata_blobs(blobs: dict[str, bytes]) -> MetadataLog:
    """Segments fetched as bytes, ``{"00000000000000000000.log": b"..."}``; other names are ignored."""
    files = [parse_segment_bytes(b, n) for n, b in blobs.items() if offset_from_name(n) is not None]
    if not files:
        raise KraftLogError("no metadata log segments (<20-digit offset>.log) among " + ", ".join(sorted(blobs)))
    return merge_segments(files)
