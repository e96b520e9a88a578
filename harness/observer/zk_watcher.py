"""Live ZooKeeper watcher (kazoo): records every observed change of Kafka's controller-relevant
znodes as ``zk.*`` events (``source: "watch"``) and keeps a current view for the nemesis.

Watched (controller-spec §1): ``/controller``, ``/controller_epoch``, children of ``/brokers/ids``
(and each child's czxid = broker epoch), children of ``/brokers/topics`` and each topic znode,
the ``state`` znode of every partition listed in a topic znode, ``/admin/reassign_partitions`` and
the children of ``/admin/delete_topics``. The watcher is passive: it never writes to ZooKeeper.

ZooKeeper watches are one-shot, so writes that happen between a notification and the re-read are
never seen. The watcher records each znode's data version (``Stat.version``) and emits ``zk.gap``
with the versions it skipped; :mod:`harness.observer.reconcile` fills them from the transaction log.

Zxids: data events carry ``Stat.mzxid`` (exact). Deletions carry the parent's ``pzxid`` read just
after noticing the deletion, which is an upper bound of the deleting transaction's zxid (exact unless
another child of the same parent changed in between).

All callbacks run on kazoo's single callback thread, so they are processed one at a time, in
notification order. After a session loss every watch is re-armed and everything re-read.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import KazooException, NoNodeError

from harness.observer import kafka_znodes as kz

log = logging.getLogger(__name__)

SOURCE = "watch"
Emit = Callable[..., dict]


class _DataWatch:
    """Re-armed data watch on one path; ``on_change(data, stat)`` (both None when absent)."""

    def __init__(self, owner: "ZkWatcher", path: str, on_change):
        self.owner, self.path, self.on_change = owner, path, on_change
        self.stopped = False

    def arm(self, event=None) -> None:
        if self.stopped or self.owner._closing:
            return
        zk = self.owner.client
        try:
            try:
                data, stat = zk.get(self.path, watch=self._fire)
            except NoNodeError:
                stat = zk.exists(self.path, watch=self._fire)
                if stat is not None:            # created in between: read it
                    return self.arm(event)
                data = None
            self.on_change(data, stat)
        except KazooException as e:             # connection trouble: resync() re-arms later
            log.debug("watch on %s not armed: %r", self.path, e)

    def _fire(self, event) -> None:
        if event.type != "NONE":
            self.arm(event)


class _ChildrenWatch:
    """Re-armed children watch; ``on_change(children, stat)``; waits for the parent to exist."""

    def __init__(self, owner: "ZkWatcher", path: str, on_change):
        self.owner, self.path, self.on_change = owner, path, on_change
        self.stopped = False

    def arm(self, event=None) -> None:
        if self.stopped or self.owner._closing:
            return
        zk = self.owner.client
        try:
            try:
                children, stat = zk.get_children(self.path, watch=self._fire, include_data=True)
            except NoNodeError:
                if zk.exists(self.path, watch=self._fire_exists) is not None:
                    return self.arm(event)
                children, stat = [], None
            self.on_change(sorted(children), stat)
        except KazooException as e:
            log.debug("children watch on %s not armed: %r", self.path, e)

    def _fire(self, event) -> None:
        if event.type != "NONE":
            self.arm(event)

    def _fire_exists(self, event) -> None:
        if event.type == "CREATED":
            self.arm(event)


class ZkWatcher:
    """Watch a Kafka cluster's ZooKeeper and record transitions.

    ``emit`` has the signature of :meth:`harness.record.RunRecorder.emit`; every emitted event is
    also kept in :attr:`events` (as returned by ``emit``) for reconciliation.

    ``hosts`` is a ZooKeeper connect string, optionally with the Kafka chroot
    (``127.0.0.1:2181/kafka``).
    """

    def __init__(self, hosts: str, emit: Emit | None = None, timeout: float = 10.0,
                 client: KazooClient | None = None):
        self.hosts = hosts
        self._emit_fn = emit
        self.client = client or KazooClient(hosts=hosts, timeout=timeout, read_only=False)
        self._own_client = client is None
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._closing = False
        self._lost = False
        self.events: list[dict] = []
        self.gaps: list[dict] = []
        self.problems: list[str] = []                      # znodes that did not decode
        # current view
        self._controller: int | None = None
        self._controller_epoch: int | None = None
        self._brokers: dict[int, int] = {}                 # broker id -> czxid (broker epoch)
        self._topics: dict[str, dict] = {}                 # topic -> zk.topic fields
        self._states: dict[tuple[str, int], dict] = {}     # (topic, p) -> zk.partition_state fields
        self._reassign: list | None = None
        self._delete_topics: list[str] = []
        # bookkeeping
        self._seen: dict[str, tuple[int, int]] = {}        # path -> (czxid, version) last observed
        self._watches: dict[str, object] = {}              # path -> watch object

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> "ZkWatcher":
        if self._own_client:
            self.client.start()
        self.client.add_listener(self._on_state)
        self._watch(_DataWatch, kz.CONTROLLER, self._on_controller)
        self._watch(_DataWatch, kz.CONTROLLER_EPOCH, self._on_controller_epoch)
        self._watch(_ChildrenWatch, kz.BROKER_IDS, self._on_brokers)
        self._watch(_ChildrenWatch, kz.TOPICS, self._on_topics)
        self._watch(_DataWatch, kz.REASSIGN, self._on_reassign)
        self._watch(_ChildrenWatch, kz.DELETE_TOPICS, self._on_delete_topics)
        return self

    def stop(self) -> None:
        self._closing = True
        try:
            self.client.remove_listener(self._on_state)
        except Exception:       # noqa: BLE001 - listener already gone
            pass
        if self._own_client:
            self.client.stop()
            self.client.close()

    def __enter__(self) -> "ZkWatcher":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _on_state(self, state) -> None:
        if state == KazooState.LOST:
            self._lost = True
        elif state == KazooState.CONNECTED and self._lost:
            self._lost = False
            self.client.handler.spawn(self.resync)

    def resync(self) -> None:
        """Re-read everything and re-arm every watch (after a session loss)."""
        with self._lock:
            watches = list(self._watches.values())
        for w in watches:
            w.arm()

    def _watch(self, cls, path: str, fn) -> None:
        with self._lock:
            if path in self._watches:
                return
            w = self._watches[path] = cls(self, path, fn)
        w.arm()

    # -- emission ------------------------------------------------------------------------------
    def _emit(self, type_: str, **fields) -> None:
        fields["source"] = SOURCE
        if self._emit_fn is not None:
            ev = self._emit_fn(type_, **fields) or dict(fields, type=type_)
        else:
            ev = dict(fields, type=type_, wall=round(time.time(), 6))
        with self._changed:
            self.events.append(ev)
            if type_ == "zk.gap":
                self.gaps.append(ev)
            self._changed.notify_all()

    def _track_version(self, path: str, stat) -> None:
        """Record the observed version; emit zk.gap for skipped versions of the same incarnation."""
        prev = self._seen.get(path)
        self._seen[path] = (stat.czxid, stat.version)
        if prev is None:
            return
        if prev[0] == stat.czxid and stat.version > prev[1] + 1:
            self._emit("zk.gap", path=path, missing_versions=list(range(prev[1] + 1, stat.version)),
                       zxid=stat.mzxid)
        elif prev[0] != stat.czxid and stat.version > 0:
            self._emit("zk.gap", path=path, missing_versions=list(range(0, stat.version)),
                       zxid=stat.mzxid)

    def _is_new(self, path: str, stat) -> bool:
        prev = self._seen.get(path)
        return prev is None or prev != (stat.czxid, stat.version)

    def _deletion_zxid(self, path: str) -> int | None:
        parent = path.rsplit("/", 1)[0] or "/"
        try:
            st = self.client.exists(parent)
        except KazooException:
            return None
        return st.pzxid if st else None

    def _decode(self, fn, *args):
        try:
            return fn(*args)
        except kz.ZnodeFormatError as e:
            log.warning("%s", e)
            with self._lock:
                self.problems.append(str(e))
            return None

    # -- handlers ------------------------------------------------------------------------------
    def _on_deletable(self, path: str, data, stat, event: str, decode, attr: str, field: str) -> None:
        """A data znode that can disappear (``/controller``, ``/admin/reassign_partitions``): keep the
        view's ``attr`` = the decoded ``field`` (None once deleted) and emit ``event`` for each change."""
        if stat is None:
            if path in self._seen:
                self._seen.pop(path)
                with self._lock:
                    setattr(self, attr, None)
                self._emit(event, **{field: None}, zxid=self._deletion_zxid(path))
            return
        if not self._is_new(path, stat):
            return
        self._seen[path] = (stat.czxid, stat.version)
        f = self._decode(decode, path, data)
        if f is None:
            return
        with self._lock:
            setattr(self, attr, f[field])
        self._emit(event, zxid=stat.mzxid, zk_time=stat.mtime / 1000.0, **f)

    def _on_controller(self, data, stat) -> None:
        self._on_deletable(kz.CONTROLLER, data, stat, "zk.controller", kz.controller_fields,
                           "_controller", "broker_id")

    def _on_controller_epoch(self, data, stat) -> None:
        path = kz.CONTROLLER_EPOCH
        if stat is None or not self._is_new(path, stat):
            return
        self._track_version(path, stat)
        f = self._decode(kz.controller_epoch_fields, path, data, stat.version)
        if f is None:
            return
        with self._lock:
            self._controller_epoch = f["epoch"]
        self._emit("zk.controller_epoch", zxid=stat.mzxid, zk_time=stat.mtime / 1000.0, **f)

    def _on_brokers(self, children, stat) -> None:
        now: dict[int, object] = {}
        for c in children:
            if not c.isdigit():
                continue
            try:
                st = self.client.exists(f"{kz.BROKER_IDS}/{c}")
            except KazooException:
                st = None
            if st is not None:
                now[int(c)] = st
        pzxid = stat.pzxid if stat is not None else None
        with self._lock:
            before = dict(self._brokers)
        for bid, czxid in sorted(before.items()):
            st = now.get(bid)
            if st is None or st.czxid != czxid:
                # gone, or re-registered between two reads (the new czxid bounds the deletion)
                with self._lock:
                    self._brokers.pop(bid, None)
                self._emit("zk.broker", zxid=pzxid if st is None else st.czxid,
                           **kz.broker_fields(bid, False, czxid))
        for bid, st in sorted(now.items()):
            if before.get(bid) != st.czxid:
                with self._lock:
                    self._brokers[bid] = st.czxid
                self._emit("zk.broker", zxid=st.czxid, zk_time=st.ctime / 1000.0,
                           **kz.broker_fields(bid, True, st.czxid))

    def _on_topics(self, children, stat) -> None:
        for t in children:
            self._watch(_DataWatch, f"{kz.TOPICS}/{t}", lambda d, s, t=t: self._on_topic(t, d, s))

    def _on_topic(self, topic: str, data, stat) -> None:
        path = f"{kz.TOPICS}/{topic}"
        if stat is None:
            if path in self._seen:
                self._seen.pop(path)
                with self._lock:
                    last = self._topics.pop(topic, None)
                self._emit("zk.topic", zxid=self._deletion_zxid(path),
                           **kz.topic_deleted_fields(topic, last, None if last is None else last["version"]))
            return
        if not self._is_new(path, stat):
            return
        self._track_version(path, stat)
        f = self._decode(kz.topic_fields, path, topic, data, stat.version)
        if f is None:
            return
        with self._lock:
            self._topics[topic] = f
        self._emit("zk.topic", zxid=stat.mzxid, zk_time=stat.mtime / 1000.0, **f)
        for p in f["partitions"]:
            sp = kz.state_path(topic, int(p))
            self._watch(_DataWatch, sp, lambda d, s, t=topic, p=int(p): self._on_state_znode(t, p, d, s))

    def _on_state_znode(self, topic: str, p: int, data, stat) -> None:
        path = kz.state_path(topic, p)
        if stat is None:
            if path in self._seen:
                self._seen.pop(path)
                with self._lock:
                    last = self._states.pop((topic, p), None)
                if last is not None:
                    last = {k: v for k, v in last.items() if k != "zxid"}  # the deletion has its own zxid
                self._emit("zk.partition_state", zxid=self._deletion_zxid(path),
                           **kz.partition_state_deleted_fields(topic, p, last, None if last is None
                                                               else last["version"]))
            return
        if not self._is_new(path, stat):
            return
        self._track_version(path, stat)
        f = self._decode(kz.partition_state_fields, path, topic, p, data, stat.version)
        if f is None:
            return
        with self._lock:
            self._states[(topic, p)] = dict(f, zxid=stat.mzxid)
        self._emit("zk.partition_state", zxid=stat.mzxid, zk_time=stat.mtime / 1000.0, **f)

    def _on_reassign(self, data, stat) -> None:
        self._on_deletable(kz.REASSIGN, data, stat, "zk.reassign_partitions", kz.reassign_fields,
                           "_reassign", "partitions")

    def _on_delete_topics(self, children, stat) -> None:
        if stat is None:
            return
        key = (stat.czxid, stat.cversion)
        if self._seen.get(kz.DELETE_TOPICS) == key:
            return
        self._seen[kz.DELETE_TOPICS] = key
        with self._lock:
            self._delete_topics = list(children)
        self._emit("zk.delete_topics", topics=list(children), zxid=stat.pzxid)

    # -- current view (for the nemesis) --------------------------------------------------------
    def _fresh(self, fn, default):
        """Read ZooKeeper directly, within 2 s; fall back to the watched view when it cannot."""
        try:
            return fn()
        except (KazooException, Exception) as e:     # noqa: BLE001 - ZooKeeper paused/killed
            log.debug("fresh read failed (%r); using the watched view", e)
            return default

    def controller_id(self, fresh: bool = False) -> int | None:
        """The broker id in ``/controller`` (None when absent). ``fresh`` reads ZooKeeper now."""
        with self._lock:
            cached = self._controller
        if not fresh:
            return cached

        def read():
            try:
                data, _ = self.client.get_async(kz.CONTROLLER).get(timeout=2.0)
            except NoNodeError:
                return None
            return kz.controller_fields(kz.CONTROLLER, data)["broker_id"]
        return self._fresh(read, cached)

    def controller_epoch(self) -> int | None:
        with self._lock:
            return self._controller_epoch

    def live_brokers(self, fresh: bool = False) -> list[int]:
        """Ids registered under ``/brokers/ids``, sorted."""
        with self._lock:
            cached = sorted(self._brokers)
        if not fresh:
            return cached
        return self._fresh(lambda: sorted(int(c) for c in self.client.get_children_async(
            kz.BROKER_IDS).get(timeout=2.0) if c.isdigit()), cached)

    def broker_epochs(self) -> dict[int, int]:
        """Broker id -> broker epoch (czxid of its registration)."""
        with self._lock:
            return dict(self._brokers)

    def topic_id(self, topic: str) -> str | None:
        """The ``topic_id`` of ``/brokers/topics/<topic>`` read now (2.8+; §6.1 step 3), None when
        the topic (or its id) does not exist."""
        path = f"{kz.TOPICS}/{topic}"
        try:
            data, st = self.client.get_async(path).get(timeout=2.0)
        except NoNodeError:
            return None
        return kz.topic_fields(path, topic, data, st.version)["topic_id"]

    def topics(self) -> list[str]:
        with self._lock:
            return sorted(self._topics)

    def partitions(self, topic: str) -> list[int]:
        with self._lock:
            t = self._topics.get(topic)
            return sorted(int(p) for p in t["partitions"]) if t else []

    def partition_state(self, topic: str, partition: int, fresh: bool = False) -> dict | None:
        """``{"leader", "leader_epoch", "isr", "controller_epoch", "leader_recovery_state",
        "version", "zxid", ...}`` of the partition's state znode, or None if it has none."""
        with self._lock:
            cached = dict(self._states[(topic, partition)]) if (topic, partition) in self._states else None
        if not fresh:
            return cached

        def read():
            path = kz.state_path(topic, partition)
            try:
                data, st = self.client.get_async(path).get(timeout=2.0)
            except NoNodeError:
                return None
            return dict(kz.partition_state_fields(path, topic, partition, data, st.version), zxid=st.mzxid)
        return self._fresh(read, cached)

    def leader(self, topic: str, partition: int, fresh: bool = False) -> int | None:
        st = self.partition_state(topic, partition, fresh=fresh)
        return None if st is None or st["leader"] < 0 else st["leader"]

    def isr(self, topic: str, partition: int, fresh: bool = False) -> list[int]:
        st = self.partition_state(topic, partition, fresh=fresh)
        return list(st["isr"]) if st else []

    def replicas(self, topic: str, partition: int) -> list[int]:
        """The full ordered replica list of the partition from the topic znode ([] if unknown)."""
        with self._lock:
            t = self._topics.get(topic)
            return list(t["partitions"].get(str(partition), [])) if t else []

    def followers(self, topic: str, partition: int, fresh: bool = False) -> list[int]:
        """Replicas other than the current leader, in assignment order."""
        lead = self.leader(topic, partition, fresh=fresh)
        return [r for r in self.replicas(topic, partition) if r != lead]

    def reassignments(self) -> list | None:
        with self._lock:
            return None if self._reassign is None else list(self._reassign)

    def delete_topics(self) -> list[str]:
        """Topics currently queued for deletion (children of ``/admin/delete_topics``)."""
        with self._lock:
            return list(self._delete_topics)

    def wait_until(self, predicate: Callable[["ZkWatcher"], bool], timeout: float) -> bool:
        """Block until ``predicate(self)`` holds (checked after every change) or ``timeout`` passes."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not predicate(self):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(min(left, 0.5))
        return True
