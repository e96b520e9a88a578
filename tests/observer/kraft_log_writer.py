"""Build KRaft metadata log bytes by hand, as Kafka writes them (DefaultRecordBatch / DefaultRecord,
ApiMessageAndVersion frames, flexible-version messages): for the cases a real cluster does not produce
on demand (torn tails, other codecs, unknown api keys, aborted transactions)."""

from __future__ import annotations

import base64
import gzip
import struct

from harness.observer.kraft_metadata import crc32c


def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def varint(n: int) -> bytes:
    return uvarint((n << 1) ^ (n >> 63))


def compact_ints(xs) -> bytes:
    if xs is None:
        return uvarint(0)
    return uvarint(len(xs) + 1) + b"".join(struct.pack(">i", x) for x in xs)


def compact_string(s: str | None) -> bytes:
    if s is None:
        return uvarint(0)
    b = s.encode()
    return uvarint(len(b) + 1) + b


def uuid_bytes(u: str) -> bytes:
    return base64.urlsafe_b64decode(u + "==")


def tagged(fields: dict[int, bytes]) -> bytes:
    out = uvarint(len(fields))
    for tag in sorted(fields):
        out += uvarint(tag) + uvarint(len(fields[tag])) + fields[tag]
    return out


def frame(api_key: int, version: int, body: bytes) -> bytes:
    """``AbstractApiMessageSerde.write``: frame version 1, apiKey, version, message."""
    return uvarint(1) + uvarint(api_key) + uvarint(version) + body


def topic_record(name: str, tid: str) -> bytes:
    return frame(2, 0, compact_string(name) + uuid_bytes(tid) + tagged({}))


def partition_record(tid: str, p: int, replicas, isr, leader: int, leader_epoch=0, partition_epoch=0) -> bytes:
    # version 0: no Directories; the tagged section is empty (leaderRecoveryState 0 is the default)
    body = (struct.pack(">i", p) + uuid_bytes(tid) + compact_ints(replicas) + compact_ints(isr)
            + compact_ints([]) + compact_ints([]) + struct.pack(">iii", leader, leader_epoch, partition_epoch)
            + tagged({}))
    return frame(3, 0, body)


def partition_change(tid: str, p: int, version: int = 2, isr=None, leader: int | None = None, lrs: int | None = None,
                     elr=None, last_known_elr=None, extra_tags: dict[int, bytes] | None = None) -> bytes:
    tags: dict[int, bytes] = dict(extra_tags or {})
    if isr is not None:
        tags[0] = compact_ints(isr)
    if leader is not None:
        tags[1] = struct.pack(">i", leader)
    if lrs is not None:
        tags[5] = struct.pack(">b", lrs)
    if elr is not None:
        tags[6] = compact_ints(elr)
    if last_known_elr is not None:
        tags[7] = compact_ints(last_known_elr)
    return frame(5, version, struct.pack(">i", p) + uuid_bytes(tid) + tagged(tags))


def noop() -> bytes:
    return frame(20, 0, tagged({}))


def begin_txn(name: str) -> bytes:
    return frame(23, 0, tagged({0: compact_string(name)}))


def end_txn() -> bytes:
    return frame(24, 0, tagged({}))


def abort_txn(reason: str) -> bytes:
    return frame(25, 0, tagged({0: compact_string(reason)}))


def record(offset_delta: int, value: bytes | None, key: bytes | None = None, ts_delta: int = 0) -> bytes:
    body = (b"\0" + varint(ts_delta) + varint(offset_delta)
            + (varint(-1) if key is None else varint(len(key)) + key)
            + (varint(-1) if value is None else varint(len(value)) + value) + varint(0))
    return varint(len(body)) + body


def batch(base_offset: int, values: list[bytes], epoch: int = 1, ts: int = 1_700_000_000_000, codec: int = 0,
          control: bool = False, keys: list[bytes | None] | None = None) -> bytes:
    """One magic-2 batch; ``codec`` 1 gzips the records, any other value is only written into the attributes."""
    recs = b"".join(record(i, v, (keys or [None] * len(values))[i]) for i, v in enumerate(values))
    if codec == 1:
        recs = gzip.compress(recs)
    attrs = codec | (0x20 if control else 0)
    after_crc = (struct.pack(">hiqqqhii", attrs, len(values) - 1, ts, ts, -1, -1, -1, len(values)) + recs)
    crc = crc32c(after_crc)
    length = 4 + 1 + 4 + len(after_crc)
    return struct.pack(">qiib", base_offset, length, epoch, 2) + struct.pack(">I", crc) + after_crc


def leader_change(base_offset: int, leader: int, voters=(1, 2, 3), epoch: int = 1) -> bytes:
    vs = uvarint(len(voters) + 1) + b"".join(struct.pack(">i", v) + tagged({}) for v in voters)
    value = struct.pack(">hi", 0, leader) + vs + vs + tagged({})
    return batch(base_offset, [value], epoch=epoch, control=True, keys=[struct.pack(">hh", 0, 2)])
