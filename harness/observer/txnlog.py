"""Reader for ZooKeeper's own transaction log (``<dataDir>/version-2/log.<zxid hex>``), pure Python.

This is the ground truth of the observer: every state change ZooKeeper applied is one record
in these files, in zxid order, so unlike watches nothing can be missed.

File layout (``FileTxnLog``)::

    FileHeader { int magic = "ZKLG"; int version = 2; long dbid }
    repeated:  long adler32(txnBytes); buffer txnBytes; byte 'B'
    zero padding (pre-allocated space) after the last record

``txnBytes`` = ``TxnHeader { long clientId; int cxid; long zxid; long time; int type }``, then the body
for ``type`` (``zookeeper.jute``), then optionally ``TxnDigest { int version; long treeDigest }``
(ZooKeeper >= 3.6 with digests enabled). A ``closeSession`` body (``CloseSessionTxn``, the paths of
the session's ephemeral nodes) exists only in 3.6+ with ``zookeeper.closeSessionTxn.enabled``.

:func:`read_txnlog_file` / :func:`read_txnlog_dir` give :class:`Txn` objects;
:class:`harness.observer.txn_events.TxnEventBuilder` turns them into run-record ``zk.*`` events.
"""

from __future__ import annotations

import os
import re
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from harness.observer.jute import JuteError, JuteReader

TXNLOG_MAGIC = struct.unpack(">i", b"ZKLG")[0]
SUPPORTED_VERSIONS = (2,)


class OpCode:
    """ZooKeeper ``ZooDefs.OpCode`` values that can appear in a transaction log."""
    create = 1
    delete = 2
    setData = 5
    setACL = 7
    check = 13
    multi = 14
    create2 = 15
    reconfig = 16
    createContainer = 19
    deleteContainer = 20
    createTTL = 21
    createSession = -10
    closeSession = -11
    error = -1

    NAMES = {1: "create", 2: "delete", 5: "setData", 7: "setACL", 13: "check", 14: "multi",
             15: "create2", 16: "reconfig", 19: "createContainer", 20: "deleteContainer",
             21: "createTTL", -10: "createSession", -11: "closeSession", -1: "error"}


class TxnLogError(ValueError):
    """A transaction-log file that is not a ZooKeeper txn log, or is corrupt in its middle."""


# -- transaction bodies ---------------------------------------------------------------------
@dataclass
class CreateTxn:
    """create / create2 / createContainer / createTTL. ``ephemeral`` only for plain creates."""
    path: str
    data: bytes | None
    ephemeral: bool = False
    parent_cversion: int = -1
    ttl: int | None = None
    container: bool = False


@dataclass
class DeleteTxn:
    path: str


@dataclass
class SetDataTxn:
    """``version`` is the znode's data version *after* this write."""
    path: str
    data: bytes | None
    version: int


@dataclass
class CheckVersionTxn:
    path: str
    version: int


@dataclass
class SetACLTxn:
    path: str
    version: int


@dataclass
class CreateSessionTxn:
    timeout_ms: int


@dataclass
class CloseSessionTxn:
    """``paths`` = ephemeral nodes deleted with the session; None when the log does not say."""
    paths: list[str] | None


@dataclass
class ErrorTxn:
    err: int


@dataclass
class SubTxn:
    type: int
    body: object


@dataclass
class MultiTxn:
    """All sub-transactions share the zxid. ``failed``: a sub-txn is an error, so none applied."""
    subs: list[SubTxn]

    @property
    def failed(self) -> bool:
        return any(s.type == OpCode.error for s in self.subs)


@dataclass
class Txn:
    """One transaction-log record."""
    client_id: int      # session id of the client that issued it (the session owner for closeSession)
    cxid: int
    zxid: int
    time_ms: int        # leader's wall clock when the txn was prepared
    type: int
    body: object        # one of the *Txn classes above, or None (e.g. closeSession before 3.6)
    digest: tuple[int, int] | None = None

    @property
    def type_name(self) -> str:
        return OpCode.NAMES.get(self.type, str(self.type))


@dataclass
class TxnLogFile:
    """The decoded content of one ``log.<zxid>`` file."""
    path: str
    version: int
    dbid: int
    name_zxid: int | None           # the zxid in the file name (first zxid the file may contain)
    txns: list[Txn] = field(default_factory=list)
    torn_tail: str | None = None    # description of a partially written last record, if any


@dataclass
class TxnLog:
    """All log files of one data dir, merged in zxid order."""
    files: list[TxnLogFile]
    txns: list[Txn]
    zxid_gaps: list[tuple[int, int]]    # (last zxid before, first zxid after) where zxids skip

    @property
    def first_zxid(self) -> int | None:
        return self.txns[0].zxid if self.txns else None

    @property
    def last_zxid(self) -> int | None:
        return self.txns[-1].zxid if self.txns else None

    @property
    def starts_at_beginning(self) -> bool:
        """True when the log begins with the first transaction ZooKeeper ever wrote (counter 1).

        When False, everything before :attr:`first_zxid` is unknown (purged logs or a snapshot).
        """
        return bool(self.txns) and (self.txns[0].zxid & 0xFFFFFFFF) == 1


# -- decoding ---------------------------------------------------------------------------------
def _create(r: JuteReader) -> CreateTxn:
    path = r.ustring("path")
    data = r.buffer("data")
    r.vector(JuteReader.acl, "acl")
    ephemeral = r.boolean("ephemeral")
    parent_cversion = r.int("parentCVersion")
    return CreateTxn(path, data, ephemeral, parent_cversion)


def _create_v0(r: JuteReader) -> CreateTxn:
    path = r.ustring("path")
    data = r.buffer("data")
    r.vector(JuteReader.acl, "acl")
    return CreateTxn(path, data, r.boolean("ephemeral"), -1)


def _create_ttl(r: JuteReader) -> CreateTxn:
    path = r.ustring("path")
    data = r.buffer("data")
    r.vector(JuteReader.acl, "acl")
    pcv = r.int("parentCVersion")
    return CreateTxn(path, data, False, pcv, ttl=r.long("ttl"))


def _create_container(r: JuteReader) -> CreateTxn:
    path = r.ustring("path")
    data = r.buffer("data")
    r.vector(JuteReader.acl, "acl")
    return CreateTxn(path, data, False, r.int("parentCVersion"), container=True)


def _set_data(r: JuteReader) -> SetDataTxn:
    path = r.ustring("path")
    data = r.buffer("data")
    return SetDataTxn(path, data, r.int("version"))


def _set_acl(r: JuteReader) -> SetACLTxn:
    path = r.ustring("path")
    r.vector(JuteReader.acl, "acl")
    return SetACLTxn(path, r.int("version"))


def _check(r: JuteReader) -> CheckVersionTxn:
    path = r.ustring("path")
    return CheckVersionTxn(path, r.int("version"))


_BODY = {
    OpCode.create: _create,
    OpCode.create2: _create,
    OpCode.createTTL: _create_ttl,
    OpCode.createContainer: _create_container,
    OpCode.delete: lambda r: DeleteTxn(r.ustring("path")),
    OpCode.deleteContainer: lambda r: DeleteTxn(r.ustring("path")),
    OpCode.setData: _set_data,
    OpCode.reconfig: _set_data,
    OpCode.setACL: _set_acl,
    OpCode.check: _check,
    OpCode.error: lambda r: ErrorTxn(r.int("err")),
    OpCode.createSession: lambda r: CreateSessionTxn(r.int("timeOut")),
}


def _sub_txn(r: JuteReader) -> SubTxn:
    type_ = r.int("multi sub-txn type")
    data = r.buffer("multi sub-txn data") or b""
    fn = _BODY.get(type_)
    if fn is None or type_ in (OpCode.createSession, OpCode.multi):
        raise JuteError(f"op type {type_} cannot appear inside a multi")
    sr = JuteReader(data)
    return SubTxn(type_, fn(sr))


def _try_digest(r: JuteReader) -> tuple[int, int] | None:
    if r.remaining() >= 12:
        return (r.int("digest version"), r.long("treeDigest"))
    return None


def decode_txn(txn_bytes: bytes) -> Txn:
    """Decode one record's ``txnBytes`` (header, body, optional digest), like ``SerializeUtils``."""
    r = JuteReader(txn_bytes)
    client_id = r.long("clientId")
    cxid = r.int("cxid")
    zxid = r.long("zxid")
    time_ms = r.long("time")
    type_ = r.int("type")
    body_start = r.pos
    body: object
    if type_ == OpCode.closeSession:
        # With digests on, a pre-3.6 / disabled closeSession is header + 12 digest bytes; try the
        # 3.6+ body first and accept it only if exactly a digest (or nothing) follows it.
        body = None
        try:
            paths = r.vector(lambda rr: rr.ustring("path"), "paths2Delete")
            if r.remaining() in (0, 12):
                body = CloseSessionTxn(paths)
            else:
                raise JuteError("trailing bytes")
        except JuteError:
            r.pos = body_start
            body = CloseSessionTxn(None)
    elif type_ == OpCode.multi:
        body = MultiTxn(r.vector(_sub_txn, "multi txns") or [])
    elif type_ in _BODY:
        try:
            body = _BODY[type_](r)
        except JuteError:
            if type_ != OpCode.create:
                raise
            r.pos = body_start          # a CreateTxnV0 (no parentCVersion)
            body = _create_v0(r)
    else:
        raise JuteError(f"unsupported txn type {type_} at zxid {zxid:#x}")
    digest = _try_digest(r)
    return Txn(client_id, cxid, zxid, time_ms, type_, body, digest)


_LOG_NAME = re.compile(r"^log\.([0-9a-fA-F]+)$")


def zxid_from_name(name: str) -> int | None:
    m = _LOG_NAME.match(os.path.basename(name))
    return int(m.group(1), 16) if m else None


def parse_txnlog_bytes(buf: bytes, path: str = "<bytes>") -> TxnLogFile:
    """Decode a whole txn-log file. A torn last record (crash, or read while being written) is
    reported in ``torn_tail`` and dropped; damage followed by more data raises :class:`TxnLogError`."""
    if len(buf) < 16:
        raise TxnLogError(f"{path}: {len(buf)} bytes, too short for a ZooKeeper txn-log header")
    r = JuteReader(buf)
    magic, version, dbid = r.int(), r.int(), r.long()
    if magic != TXNLOG_MAGIC:
        raise TxnLogError(f"{path}: bad magic {magic:#010x}, not a ZooKeeper txn log (expected 'ZKLG')")
    if version not in SUPPORTED_VERSIONS:
        raise TxnLogError(f"{path}: txn-log format version {version} not supported (expected 2)")
    out = TxnLogFile(path, version, dbid, zxid_from_name(path))

    def rest_is_zero(pos: int) -> bool:
        return not buf[pos:].strip(b"\0")

    while True:
        start = r.pos
        if r.remaining() < 12:
            if not rest_is_zero(start):
                out.torn_tail = f"{r.remaining()} stray bytes at offset {start}"
            break
        crc = r.long()
        length = r.int()
        if length == 0 and crc == 0:
            if not rest_is_zero(start):
                raise TxnLogError(f"{path}: zero record at offset {start} followed by non-zero data")
            break           # pre-allocated zero padding: end of log
        if length < 0 or length + 1 > r.remaining():
            if rest_is_zero(start + 12) or length + 1 > r.remaining():
                out.torn_tail = f"record at offset {start} declares {length} bytes, file ends first"
                break
            raise TxnLogError(f"{path}: bad record length {length} at offset {start}")
        txn_bytes = buf[r.pos:r.pos + length]
        r.pos += length
        eor = r.byte()
        bad = None
        if eor != 0x42:
            bad = f"record at offset {start} not terminated by 'B' (got {eor:#04x})"
        elif zlib.adler32(txn_bytes) != (crc & 0xFFFFFFFF):
            bad = f"record at offset {start} fails its Adler-32 checksum"
        if bad:
            if rest_is_zero(r.pos):
                out.torn_tail = bad
                break
            raise TxnLogError(f"{path}: {bad}")
        try:
            out.txns.append(decode_txn(txn_bytes))
        except JuteError as e:
            raise TxnLogError(f"{path}: record at offset {start}: {e}") from None
    return out


def read_txnlog_file(path: str | os.PathLike) -> TxnLogFile:
    with open(path, "rb") as fh:
        return parse_txnlog_bytes(fh.read(), str(path))


def merge_txnlog_files(files: Iterable[TxnLogFile]) -> TxnLog:
    """Merge decoded files (any order) into one zxid-ordered log; duplicate zxids are dropped and
    discontinuities reported (zxids advance by 1 within a ZooKeeper epoch; a new epoch restarts the
    32-bit counter at 1)."""
    files = sorted(files, key=lambda f: (f.name_zxid if f.name_zxid is not None
                                         else (f.txns[0].zxid if f.txns else 0)))
    seen: dict[int, Txn] = {}
    for f in files:
        for t in f.txns:
            seen.setdefault(t.zxid, t)
    txns = [seen[z] for z in sorted(seen)]
    gaps = []
    for a, b in zip(txns, txns[1:]):
        same_epoch = (a.zxid >> 32) == (b.zxid >> 32)
        if (same_epoch and b.zxid != a.zxid + 1) or (not same_epoch and (b.zxid & 0xFFFFFFFF) != 1):
            gaps.append((a.zxid, b.zxid))
    return TxnLog(files, txns, gaps)


def read_txnlog_dir(path: str | os.PathLike) -> TxnLog:
    """Read every ``log.*`` file in a ZooKeeper data dir, its ``version-2`` subdir, or a plain dir."""
    p = Path(path)
    if (p / "version-2").is_dir():
        p = p / "version-2"
    if not p.is_dir():
        raise TxnLogError(f"{p}: not a directory")
    names = [n for n in os.listdir(p) if zxid_from_name(n) is not None]
    if not names:
        raise TxnLogError(f"{p}: no ZooKeeper txn-log files (log.<zxid hex>) found")
    return merge_txnlog_files(read_txnlog_file(p / n) for n in names)


def read_txnlog_blobs(blobs: dict[str, bytes]) -> TxnLog:
    """Same as :func:`read_txnlog_dir` for files fetched as bytes (e.g. from a container):
    ``{"log.1": b"...", ...}``; names that are not ``log.<hex>`` are ignored."""
    files = [parse_txnlog_bytes(b, n) for n, b in blobs.items() if zxid_from_name(n) is not None]
    if not files:
        raise TxnLogError("no ZooKeeper txn-log files (log.<zxid hex>) among " + ", ".join(sorted(blobs)))
    return merge_txnlog_files(files)
