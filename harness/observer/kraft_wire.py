"""The messages of the KRaft metadata log: Kafka's generated flexible-version encoding read with a
field-table interpreter (:func:`read_struct` over the schemas :data:`METADATA_RECORDS` and
:data:`CONTROL_RECORDS`), and :class:`MetaRecord`, one decoded log offset.

This is the reference decoding (every message, every version, unknown tags, exact problem texts);
:mod:`harness.observer.kraft_records` decodes the hot records faster and falls back to it.
"""

from __future__ import annotations

import base64
import struct
from dataclasses import dataclass, field


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
_FEATURE = [F("name", "string"), F("min_supported_version", "int16"), F("max_supported_version", "int16")]

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
    4: ("ConfigRecord", (F("resource_type", "int8"), F("resource_name", "string"), F("name", "string"),
                         F("value", "string")), 0),
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
    28: ("ClearElrRecord", (F("topic_name", "string"),), 0),
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
        F("kraft_version_feature", (F("min_supported_version", "int16"), F("max_supported_version", "int16")))]))),
}

COMPRESSION = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


@dataclass(slots=True)
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
