"""Turn ZooKeeper transactions (:mod:`harness.observer.txnlog`) into run-record ``zk.*`` events.

Replays the log's effect on the Kafka znodes of controller-spec §1 and emits one event per change,
with ``zxid``, ``source: "txnlog"`` and ``zk_time`` (the txn header's wall time, seconds). It
tracks, per session, the ephemeral nodes it created, so that a ``closeSession`` (clean close or
session expiry) yields the deregistrations (``zk.broker registered=false``,
``zk.controller broker_id=null``) at the closeSession's zxid, even when the log does not list the
deleted paths (ZooKeeper < 3.6 or ``closeSessionTxn`` disabled).

Failed multi-ops and error txns change nothing and yield nothing. Events of one multi share its
zxid and keep the sub-transaction order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.observer import kafka_znodes as kz
from harness.observer.txnlog import (CloseSessionTxn, CreateTxn, DeleteTxn, MultiTxn, OpCode,
                                     SetDataTxn, Txn, TxnLog)

SOURCE = "txnlog"


@dataclass
class _Node:
    czxid: int
    version: int
    owner: int          # ephemeral owner session id, 0 for persistent
    last: dict | None = None


@dataclass
class TxnHistory:
    """The zk.* history found in a transaction log, and what is known about its completeness."""
    events: list[dict]
    first_zxid: int | None
    last_zxid: int | None
    starts_at_beginning: bool           # False: history before first_zxid is unknown
    zxid_gaps: list[tuple[int, int]]    # discontinuities inside the log (missing log files)
    torn_tails: list[str]               # partially written last records that were dropped
    problems: list[str] = field(default_factory=list)   # znodes whose content did not decode

    @property
    def complete(self) -> bool:
        return self.starts_at_beginning and not self.zxid_gaps


class TxnEventBuilder:
    """Stateful replay of transactions; feed them in zxid order with :meth:`feed`."""

    def __init__(self, chroot: str = ""):
        self.chroot = chroot
        self.nodes: dict[str, _Node] = {}                 # chroot-relative path -> node info
        self.sessions: dict[int, set[str]] = {}           # session id -> ephemeral abs paths
        self.delete_topics: set[str] = set()
        self.events: list[dict] = []
        self.problems: list[str] = []

    # -- entry point ------------------------------------------------------------------------
    def feed(self, txn: Txn) -> list[dict]:
        n0 = len(self.events)
        body = txn.body
        if txn.type == OpCode.multi and isinstance(body, MultiTxn):
            if not body.failed:
                for sub in body.subs:
                    self._apply(txn, sub.type, sub.body)
        elif txn.type == OpCode.closeSession:
            self._close_session(txn, body if isinstance(body, CloseSessionTxn) else CloseSessionTxn(None))
        elif txn.type != OpCode.error:
            self._apply(txn, txn.type, body)
        return self.events[n0:]

    # -- operations -------------------------------------------------------------------------
    def _apply(self, txn: Txn, type_: int, body) -> None:
        if isinstance(body, CreateTxn):
            owner = txn.client_id if body.ephemeral else 0
            self._create(txn, body.path, body.data, owner)
        elif isinstance(body, DeleteTxn):
            self._delete(txn, body.path)
        elif isinstance(body, SetDataTxn) and type_ == OpCode.setData:
            self._set(txn, body.path, body.data, body.version)

    def _close_session(self, txn: Txn, body: CloseSessionTxn) -> None:
        tracked = self.sessions.pop(txn.client_id, set())
        paths = body.paths if body.paths is not None else tracked
        for path in sorted(paths):
            self._delete(txn, path)

    def _emit(self, txn: Txn, type_: str, fields: dict) -> None:
        ev = {"type": type_, "zxid": txn.zxid, "source": SOURCE, "zk_time": txn.time_ms / 1000.0}
        ev.update(fields)
        self.events.append(ev)

    def _decode(self, txn: Txn, fn, *args):
        try:
            return fn(*args)
        except kz.ZnodeFormatError as e:
            self.problems.append(f"zxid {txn.zxid:#x}: {e}")
            return None

    def _create(self, txn: Txn, abspath: str, data: bytes | None, owner: int) -> None:
        if owner:
            self.sessions.setdefault(owner, set()).add(abspath)
        path = kz.strip_chroot(abspath, self.chroot)
        if path is None:
            return
        node = self.nodes[path] = _Node(czxid=txn.zxid, version=0, owner=owner)
        self._changed(txn, path, node, data, created=True)

    def _set(self, txn: Txn, abspath: str, data: bytes | None, version: int) -> None:
        path = kz.strip_chroot(abspath, self.chroot)
        if path is None:
            return
        node = self.nodes.get(path)
        if node is None:        # created before the log starts
            node = self.nodes[path] = _Node(czxid=-1, version=version, owner=0)
        node.version = version
        self._changed(txn, path, node, data, created=False)

    def _changed(self, txn: Txn, path: str, node: _Node, data: bytes | None, created: bool) -> None:
        zp = kz.classify(path)
        if zp is None:
            return
        f = None
        if zp.kind == "controller":
            f = self._decode(txn, kz.controller_fields, path, data)
            self._emit_if(txn, "zk.controller", f)
        elif zp.kind == "controller_epoch":
            f = self._decode(txn, kz.controller_epoch_fields, path, data, node.version)
            self._emit_if(txn, "zk.controller_epoch", f)
        elif zp.kind == "broker":
            if created:
                self._emit(txn, "zk.broker", kz.broker_fields(zp.broker_id, True, txn.zxid))
        elif zp.kind == "topic":
            f = self._decode(txn, kz.topic_fields, path, zp.topic, data, node.version)
            self._emit_if(txn, "zk.topic", f)
        elif zp.kind == "partition_state":
            f = self._decode(txn, kz.partition_state_fields, path, zp.topic, zp.partition, data,
                             node.version)
            self._emit_if(txn, "zk.partition_state", f)
        elif zp.kind == "reassign":
            f = self._decode(txn, kz.reassign_fields, path, data)
            self._emit_if(txn, "zk.reassign_partitions", f)
        elif zp.kind == "delete_topics":
            if created:
                self.delete_topics = set()
                self._emit(txn, "zk.delete_topics", {"topics": []})
        elif zp.kind == "delete_topics_child" and created:
            self.delete_topics.add(zp.topic)
            self._emit(txn, "zk.delete_topics", {"topics": sorted(self.delete_topics)})
        if f is not None:
            node.last = f

    def _emit_if(self, txn: Txn, type_: str, fields: dict | None) -> None:
        if fields is not None:
            self._emit(txn, type_, fields)

    def _delete(self, txn: Txn, abspath: str) -> None:
        path = kz.strip_chroot(abspath, self.chroot)
        node = self.nodes.pop(path, None) if path is not None else None
        if node is not None and node.owner:
            self.sessions.get(node.owner, set()).discard(abspath)
        else:   # ephemeral created before the log started: drop it from any session
            for paths in self.sessions.values():
                paths.discard(abspath)
        if path is None:
            return
        zp = kz.classify(path)
        if zp is None:
            return
        version = node.version if node else None
        if zp.kind == "controller":
            self._emit(txn, "zk.controller", {"broker_id": None})
        elif zp.kind == "broker":
            czxid = node.czxid if node and node.czxid >= 0 else None
            self._emit(txn, "zk.broker", kz.broker_fields(zp.broker_id, False, czxid))
        elif zp.kind == "topic":
            self._emit(txn, "zk.topic", kz.topic_deleted_fields(zp.topic, node.last if node else None,
                                                                version))
        elif zp.kind == "partition_state":
            self._emit(txn, "zk.partition_state", kz.partition_state_deleted_fields(
                zp.topic, zp.partition, node.last if node else None, version))
        elif zp.kind == "reassign":
            self._emit(txn, "zk.reassign_partitions", {"partitions": None})
        elif zp.kind == "delete_topics_child":
            self.delete_topics.discard(zp.topic)
            self._emit(txn, "zk.delete_topics", {"topics": sorted(self.delete_topics)})


def history_from_txnlog(log: TxnLog, chroot: str = "") -> TxnHistory:
    """All zk.* events of a merged transaction log, with its completeness facts."""
    b = TxnEventBuilder(chroot)
    for t in log.txns:
        b.feed(t)
    return TxnHistory(
        events=b.events,
        first_zxid=log.first_zxid,
        last_zxid=log.last_zxid,
        starts_at_beginning=log.starts_at_beginning,
        zxid_gaps=list(log.zxid_gaps),
        torn_tails=[f"{f.path}: {f.torn_tail}" for f in log.files if f.torn_tail],
        problems=b.problems,
    )
