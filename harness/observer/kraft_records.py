"""Records of a magic-2 batch (``DefaultRecord``) into :class:`MetaRecord` s.

:func:`read_records` is the reference (a :class:`Reader` per record, the generic message decoder).
"""

from __future__ import annotations

from .kraft_wire import KraftLogError, MetaRecord, Reader, decode_control, decode_metadata_value


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
