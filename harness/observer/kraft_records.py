"""Records of a magic-2 batch (``DefaultRecord``) into :class:`MetaRecord` s.

:func:`read_records` is the reference (a :class:`Reader` per record, the generic message decoder);
:func:`fast_records` gives the same records several times faster, or gives up (:class:`Slow`).
"""

from __future__ import annotations

import base64
import struct

from harness.observer.kraft_wire import METADATA_RECORDS, KraftLogError, MetaRecord, Reader, decode_control, decode_metadata_value


def read_records(r: Reader, count: int, base_offset: int, base_ts: int, epoch: int, control: bool) -> list[MetaRecord]:
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


# -- the fast path ---------------------------------------------------------------------------------
# Offsets into the batch's bytes instead of slices and Readers, one-byte varints inline, and a decoder
# for PartitionChangeRecord (most of a busy controller's log) written out. Anything it does not handle,
# and anything that does not add up exactly, raises Slow: the caller then decodes the whole batch again
# with read_records, so errors and problem texts stay the reference's own.
class Slow(Exception):
    """The fast path gives up on this batch."""


_I8 = struct.Struct(">b").unpack_from
_I32 = struct.Struct(">i").unpack_from
_I32_UUID = struct.Struct(">i16s").unpack_from
_INTS = [struct.Struct(f">{n}i").unpack_from for n in range(65)]
_UUIDS: dict[bytes, str] = {}
_INT32S, _INT32, _INT8 = 0, 1, 2
_PCR_TAGS_V0 = {0: ("isr", _INT32S), 1: ("leader", _INT32), 2: ("replicas", _INT32S),
                3: ("removing_replicas", _INT32S), 4: ("adding_replicas", _INT32S),
                5: ("leader_recovery_state", _INT8)}
# by version (clamped to the table's highest); tag 8 (directories, []uuid) is left to the reference
_PCR_TAGS = {0: _PCR_TAGS_V0, 1: _PCR_TAGS_V0,
             2: {**_PCR_TAGS_V0, 6: ("eligible_leader_replicas", _INT32S), 7: ("last_known_elr", _INT32S)}}
_PCR_MAX = METADATA_RECORDS[5][2]


def uuid_str(raw: bytes) -> str:
    """``Reader.uuid`` of 16 bytes, remembered (a log names few topics, many times)."""
    s = _UUIDS.get(raw)
    if s is None:
        if len(_UUIDS) >= 100_000:
            _UUIDS.clear()
        s = _UUIDS[raw] = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    return s


def _uvarint(b, p: int, max_bytes: int) -> tuple[int, int]:
    value = shift = 0
    for _ in range(max_bytes):
        x = b[p]
        p += 1
        value |= (x & 0x7F) << shift
        if not x & 0x80:
            return value, p
        shift += 7
    raise Slow


def _varint(b, p: int, max_bytes: int = 5) -> tuple[int, int]:
    v, p = _uvarint(b, p, max_bytes)
    return (v >> 1) ^ -(v & 1), p


def partition_change(b, p: int, e: int, version: int) -> dict:
    """The fields of a PartitionChangeRecord body in ``b[p:e]``, as ``read_struct`` gives them."""
    tags = _PCR_TAGS[min(version, _PCR_MAX)]
    pid, raw = _I32_UUID(b, p)
    out = {"partition_id": pid, "topic_id": uuid_str(raw)}
    p += 20
    n = b[p]
    p += 1
    if n >= 0x80:
        raise Slow
    for _ in range(n):
        tag, size = b[p], b[p + 1]
        known = tags.get(tag)
        if known is None or size >= 0x80:
            raise Slow
        p += 2
        q = p + size
        name, kind = known
        if kind == _INT32S:
            c = b[p] - 1
            if c < 0:
                v = None
            elif c < 64:
                v = list(_INTS[c](b, p + 1))
            else:
                raise Slow
            p += 1 + 4 * c if c > 0 else 1
        elif kind == _INT32:
            v = _I32(b, p)[0]
            p += 4
        else:
            v = _I8(b, p)[0]
            p += 1
        if p != q:
            raise Slow
        out[name] = v
    if p != e:
        raise Slow
    return out


def fast_records(b, p: int, e: int, count: int, base_offset: int, base_ts: int, epoch: int,
                 control: bool) -> list[MetaRecord]:
    """``read_records`` over ``b[p:e]`` or :class:`Slow` (also IndexError / struct.error: give up)."""
    out = []
    append, meta, pcr, generic = out.append, MetaRecord, partition_change, decode_metadata_value
    for _ in range(count):
        x = b[p]
        if x < 0x80:
            size, p = (x >> 1) ^ -(x & 1), p + 1
        else:
            size, p = _varint(b, p)
        q = p + size
        if size < 0 or q > e:
            raise Slow
        x = b[p + 1]                                    # after the attributes byte
        if x < 0x80:
            ts, p = (x >> 1) ^ -(x & 1), p + 2
        else:
            ts, p = _varint(b, p + 1, 10)
        x = b[p]
        if x < 0x80:
            delta, p = (x >> 1) ^ -(x & 1), p + 1
        else:
            delta, p = _varint(b, p)
        x = b[p]
        if x < 0x80:
            klen, p = (x >> 1) ^ -(x & 1), p + 1
        else:
            klen, p = _varint(b, p)
        kp = p
        if klen > 0:
            p += klen
        x = b[p]
        if x < 0x80:
            vlen, p = (x >> 1) ^ -(x & 1), p + 1
        else:
            vlen, p = _varint(b, p)
        vp = ve = p
        if vlen > 0:
            p = ve = p + vlen
        if b[p] != 0 or p + 1 != q:                     # headers: KRaft writes none
            raise Slow
        p = q
        if control:
            name, ctype, fields, problem = decode_control(b[kp:kp + klen] if klen >= 0 else None,
                                                          b[vp:vp + vlen] if vlen >= 0 else None)
            append(meta(base_offset + delta, base_ts + ts, epoch, True, name, ctype, 0, fields, problem))
        elif vlen < 0:
            append(meta(base_offset + delta, base_ts + ts, epoch, False, "unknown", None, None, {},
                        "record without a value"))
        elif vlen > 3 and b[vp] == 1 and b[vp + 1] == 5 and b[vp + 2] < 0x80:
            version = b[vp + 2]
            try:
                fields = pcr(b, vp + 3, ve, version)
            except (Slow, IndexError, struct.error):
                name, api_key, version, fields, problem = generic(b[vp:ve])
                append(meta(base_offset + delta, base_ts + ts, epoch, False, name, api_key, version, fields,
                            problem))
            else:
                append(meta(base_offset + delta, base_ts + ts, epoch, False, "PartitionChangeRecord", 5,
                            version, fields, None))
        else:
            name, api_key, version, fields, problem = generic(b[vp:ve])
            append(meta(base_offset + delta, base_ts + ts, epoch, False, name, api_key, version, fields,
                        problem))
    return out
