"""Test-side writer of ZooKeeper txn-log files, for synthetic edge cases the real server does not
produce on demand (closeSession without body, no digests, torn tails, corruption, V0 creates).

Written from the jute layouts in ``zookeeper.jute`` and ``FileTxnLog``; it encodes the dataclasses
of :mod:`harness.observer.txnlog` (ACLs are written as the open ``world:anyone`` ACL).
"""

from __future__ import annotations

import struct
import zlib

from harness.observer.txnlog import (CheckVersionTxn, CloseSessionTxn, CreateSessionTxn, CreateTxn,
                                     DeleteTxn, ErrorTxn, MultiTxn, OpCode, SetDataTxn, Txn)


def _i(v: int) -> bytes:
    return struct.pack(">i", v)


def _q(v: int) -> bytes:
    return struct.pack(">q", v)


def _buf(b: bytes | None) -> bytes:
    return _i(-1) if b is None else _i(len(b)) + b


def _str(s: str) -> bytes:
    return _buf(s.encode())


_ACL = _i(1) + _i(31) + _str("world") + _str("anyone")


def encode_body(type_: int, body, v0: bool = False) -> bytes:
    if isinstance(body, CreateTxn):
        if type_ == OpCode.createTTL:
            return _str(body.path) + _buf(body.data) + _ACL + _i(body.parent_cversion) + _q(body.ttl or 0)
        if type_ == OpCode.createContainer:
            return _str(body.path) + _buf(body.data) + _ACL + _i(body.parent_cversion)
        out = _str(body.path) + _buf(body.data) + _ACL + bytes([1 if body.ephemeral else 0])
        return out if v0 else out + _i(body.parent_cversion)
    if isinstance(body, DeleteTxn):
        return _str(body.path)
    if isinstance(body, SetDataTxn):
        return _str(body.path) + _buf(body.data) + _i(body.version)
    if isinstance(body, CheckVersionTxn):
        return _str(body.path) + _i(body.version)
    if isinstance(body, ErrorTxn):
        return _i(body.err)
    if isinstance(body, CreateSessionTxn):
        return _i(body.timeout_ms)
    if isinstance(body, CloseSessionTxn):
        return b"" if body.paths is None else _i(len(body.paths)) + b"".join(_str(p) for p in body.paths)
    if isinstance(body, MultiTxn):
        return _i(len(body.subs)) + b"".join(_i(s.type) + _buf(encode_body(s.type, s.body)) for s in body.subs)
    if body is None:
        return b""
    raise TypeError(f"cannot encode {body!r}")


def encode_txn(t: Txn, digest: bool = True, v0: bool = False) -> bytes:
    hdr = _q(t.client_id) + _i(t.cxid) + _q(t.zxid) + _q(t.time_ms) + _i(t.type)
    out = hdr + encode_body(t.type, t.body, v0=v0)
    if digest and t.type != OpCode.error:
        d = t.digest or (2, 0x1234)
        out += _i(d[0]) + _q(d[1])
    return out


def record(txn_bytes: bytes) -> bytes:
    return _q(zlib.adler32(txn_bytes)) + _buf(txn_bytes) + b"B"


def log_file(txns: list[Txn], digest: bool = True, padding: int = 64, dbid: int = 0) -> bytes:
    out = b"ZKLG" + _i(2) + _q(dbid)
    for t in txns:
        out += record(encode_txn(t, digest=digest))
    return out + b"\0" * padding
