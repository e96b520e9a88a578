"""How a cluster's control plane is seen: which brokers are registered, who is the controller, what a
broker's epoch is, when the cluster is ready and what "registered anew" means after a start.

One class per mode, chosen by the distribution adapter (:meth:`harness.distributions.Distribution.control_plane`):

:class:`ZkControlPlane`
    ZooKeeper mode: a kazoo client on the published ZooKeeper ports; registrations are the ephemeral
    ``/brokers/ids/<id>`` znodes (their czxid is the broker epoch), the controller is ``/controller``.
:class:`ProtocolControlPlane`
    KRaft and generic brokers: the same questions answered over the Kafka protocol (Metadata,
    DescribeQuorum); there is no ZooKeeper to ask.

:class:`harness.cluster.cluster.Cluster` keeps its public methods (``zk()``, ``registered_brokers()``,
``active_controller()``, ``wait_ready()``, ``broker_epoch()``, ...) and delegates them here.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import logging
import time
import uuid

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from harness.distributions import control_history
from harness.errors import AdminOpError, ClusterError, HarnessError, NeverServes, NotSupported
from harness.observer.kraft_history import metadata_marker, read_kraft_history
from harness.observer.zk_history import read_zk_history
from harness.protocol import ProtocolClient, ProtocolError


def new_cluster_id() -> str:
    """A KRaft cluster id: a random UUID in URL-safe base64 without padding (22 characters), never
    starting with '-' (Kafka's ``Uuid.randomUuid`` avoids those too: they read like options)."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


# a foreign broker listing node ids it was not given for this long is not starting: it never will
FOREIGN_IDS_GRACE_S = 10.0


class ControlPlane:
    """What every mode answers; ``cluster`` is the :class:`harness.cluster.cluster.Cluster` it observes."""

    def __init__(self, cluster):
        self.cluster = cluster

    # ---- starting the cluster
    def zookeeper_count(self, requested: int) -> int:
        """How many ZooKeeper servers the cluster starts when its spec asks for ``requested``: what its
        distribution's node groups say (:meth:`harness.distributions.Distribution.node_groups`)."""
        spec = dataclasses.replace(self.cluster.spec, zookeepers=requested)
        return sum(len(g.ids) for g in self.cluster.distribution.node_groups(spec) if g.role == "zookeeper")

    def new_cluster_id(self) -> str | None:
        """The cluster id the nodes are formatted with (None: the cluster makes its own)."""
        return None

    # ---- observation
    def zk(self):
        raise HarnessError(f"cluster {self.cluster.name} runs {self.cluster.distribution.name}: it has no ZooKeeper; "
                           "observe it through the protocol (cluster.quorum(), cluster.protocol_metadata())")

    def close(self) -> None:
        """Release what observing needed (idempotent)."""

    def registered_brokers(self) -> set[int]:
        raise NotImplementedError

    def active_controller(self) -> int | None:
        raise NotImplementedError

    def broker_epoch(self, broker_id: int) -> int | None:
        raise NotImplementedError

    def topic_assignment(self, topic: str) -> dict[int, tuple[list[int], list[int], list[int]]]:
        """``{partition: (replicas, adding_replicas, removing_replicas)}`` of ``topic`` now ({}: no such topic)."""
        raise NotImplementedError

    # ---- the controller's writes (harness/distributions/control_history.py)
    def history_marker(self) -> int:
        """The newest write's ``seq`` now: pass it to :meth:`writes_since` to get what follows."""
        raise self._no_history("history_marker")

    def writes_since(self, marker: int) -> list[dict]:
        """Every controller write after ``marker``, read from the control plane's own log now, in
        :mod:`harness.distributions.control_history`'s form; AdminOpError when no log is readable."""
        raise self._no_history("writes_since")

    def _no_history(self, helper: str) -> NotSupported:
        return NotSupported(f"{helper}: {self.cluster.distribution.name} keeps no controller log the harness can "
                            "read; check the states the protocol shows (ctx.view.partition_state) instead")

    def session_timeout_s(self) -> float:
        return int(self.cluster.broker_config.get("zookeeper.session.timeout.ms", "18000")) / 1000.0

    # ---- readiness and restarts
    starting_errors: tuple[type[BaseException], ...] = (HarnessError,)   # what "still starting" raises

    def wait_ready(self, want: set[int], timeout_s: float) -> None:
        """Until :meth:`not_ready` has nothing left to wait for (bounded by ``timeout_s``); a node that
        stopped running ends the wait at once."""
        cl = self.cluster
        deadline = time.monotonic() + timeout_s
        last = "not checked"
        while time.monotonic() < deadline:
            cl._check_running(self.nodes_to_check(want))
            try:
                last = self.not_ready(want)
                if last is None:
                    return
            except NeverServes:
                raise
            except self.starting_errors as e:
                last = self.still_starting(e)
            time.sleep(0.5)
        raise ClusterError(f"cluster {cl.name} not ready after {timeout_s:.0f} s ({last})")

    def still_starting(self, e: BaseException) -> str:
        """How an error of a node still starting is told in the "not ready" message."""
        return str(e)

    def nodes_to_check(self, want: set[int]) -> list:
        """The nodes that must be running while ``want`` becomes ready."""
        return [self.cluster.brokers[b] for b in sorted(want)]

    def not_ready(self, want: set[int]) -> str | None:
        """What readiness of ``want`` still waits for (None: ready)."""
        raise NotImplementedError

    def wait_node_ready(self, node, timeout_s: float) -> None:
        """After a node that is no broker (a dedicated controller) was started: until it serves again."""
        raise HarnessError(f"{node.name}: {self.cluster.distribution.name} cannot tell when a {node.role} node serves")

    def await_old_registration_gone(self, broker_id: int) -> None:
        """Before starting a broker that is not running: wait until its old registration is gone."""

    def before_start(self, broker_id: int, wait: bool):
        """Called before a broker's container starts; returns what :meth:`await_registered_anew` compares with."""
        return None

    def await_registered_anew(self, broker_id: int, before, deadline: float, timeout_s: float) -> None:
        """After a broker's container started: wait (until ``deadline``, monotonic) until it registered
        anew; the cluster then waits for it to be ready."""


class ZkControlPlane(ControlPlane):
    """ZooKeeper mode: registrations, controller and broker epochs read from ZooKeeper."""

    def __init__(self, cluster):
        super().__init__(cluster)
        self._zk = None

    def zk(self):
        """A started kazoo client on the published ZooKeeper ports (shared; closed by :meth:`close`).

        kazoo retries a lost connection only a few times, then stays closed; after a ZooKeeper
        outage the next call opens a fresh client.
        """
        if self._zk is not None and not self._zk.connected:
            self.close()
        if self._zk is None:
            logging.getLogger("kazoo.client").setLevel(logging.ERROR)  # reconnect chatter during faults
            zk = KazooClient(hosts=self.cluster.zookeeper_connect, timeout=10.0, connection_retry={"max_tries": 3})
            try:
                zk.start(timeout=15)
            except Exception:
                zk.stop()
                zk.close()
                raise
            self._zk = zk
        return self._zk

    def close(self) -> None:
        if self._zk is not None:
            try:
                self._zk.stop()
                self._zk.close()
            except Exception:
                pass
            self._zk = None

    def registered_brokers(self) -> set[int]:
        """Children of /brokers/ids."""
        try:
            return {int(c) for c in self.zk().get_children("/brokers/ids")}
        except NoNodeError:
            return set()

    def active_controller(self) -> int | None:
        """``/controller``'s broker id; None when there is none."""
        try:
            data, _ = self.zk().get("/controller")
        except NoNodeError:
            return None
        return json.loads(data)["brokerid"]

    def history_marker(self) -> int:
        """The zxid of the newest ZooKeeper transaction: a ``sync`` makes the server answer with its
        last processed zxid."""
        zk = self.zk()
        zk.sync("/")
        return int(zk.last_zxid or 0)

    def writes_since(self, marker: int) -> list[dict]:
        """From ZooKeeper's own transaction log, copied out of the ZooKeeper containers now (a
        tenth of a second per node with the 1 MB padding of node_settings.DEFAULT_ZK_CONFIG; read once per check)."""
        hist = read_zk_history(self.cluster)
        if hist is None:
            raise AdminOpError("no ZooKeeper transaction log could be read")
        return control_history.from_zk_events(hist.events, marker)

    def topic_assignment(self, topic: str) -> dict[int, tuple[list[int], list[int], list[int]]]:
        """The topic znode now: ``{partition: (replicas, adding_replicas, removing_replicas)}``."""
        try:
            data, _ = self.zk().get(f"/brokers/topics/{topic}")
        except NoNodeError:
            return {}
        doc = json.loads(data)
        adding, removing = doc.get("adding_replicas") or {}, doc.get("removing_replicas") or {}
        return {int(p): (list(rs), list(adding.get(p, [])), list(removing.get(p, [])))
                for p, rs in (doc.get("partitions") or {}).items()}

    def broker_epoch(self, broker_id: int) -> int | None:
        """czxid of /brokers/ids/<id> (the broker epoch), None when not registered."""
        st = self.zk().exists(f"/brokers/ids/{broker_id}")
        return st.czxid if st else None

    starting_errors = (Exception,)      # ZooKeeper or brokers still starting (zk() reopens a dead client)

    def still_starting(self, e: BaseException) -> str:
        return f"{type(e).__name__}: {e}"

    def nodes_to_check(self, want: set[int]) -> list:
        return [n for n in self.cluster.nodes() if n.role == "zookeeper" or n.node_id in want]

    def not_ready(self, want: set[int]) -> str | None:
        """Every broker in ``want`` registered in ZooKeeper, visible in metadata, its startup finished."""
        cl = self.cluster
        reg = self.registered_brokers()
        if not want <= reg:
            return f"registered in ZooKeeper: {sorted(reg)}, waiting for {sorted(want - reg)}"
        seen = set(cl.admin().list_topics(timeout=5).brokers)
        if not want <= seen:
            return f"visible in metadata: {sorted(seen)}, waiting for {sorted(want - seen)}"
        starting = [b for b in sorted(want) if not cl.brokers[b].started()]
        if starting:
            return f"startup not finished on brokers {starting}"
        return None

    def await_old_registration_gone(self, broker_id: int) -> None:
        """Wait (bounded by the session timeout + 10 s) until the previous ephemeral
        ``/brokers/ids/<id>`` of a broker that is not running is gone.

        A broker killed a moment ago keeps that node until its ZooKeeper session expires; started
        before then, it finds the node owned by another session, fails with ``NodeExistsException``
        and exits (``KafkaZkClient.registerBroker``). A supervisor would restart it; waiting for the
        expiry makes the start succeed the first time. ZooKeeper unreachable: return and let the
        start report what it finds."""
        if self.cluster.brokers[broker_id].status() in ("running", "paused"):
            return
        deadline = time.monotonic() + self.session_timeout_s() + 10.0
        while time.monotonic() < deadline:
            try:
                if self.broker_epoch(broker_id) is None:
                    return
            except Exception:  # noqa: BLE001 - ZooKeeper unreachable right now
                return
            time.sleep(0.2)

    def before_start(self, broker_id: int, wait: bool):
        """The broker epoch before the start (None without ``wait``), after the old registration is gone."""
        self.await_old_registration_gone(broker_id)
        return self.broker_epoch(broker_id) if wait else None

    def await_registered_anew(self, broker_id: int, before, deadline: float, timeout_s: float) -> None:
        """Until /brokers/ids/<id> exists with a broker epoch other than ``before``."""
        while True:
            epoch = self.broker_epoch(broker_id)
            if epoch is not None and epoch != before:
                return
            if time.monotonic() > deadline:
                raise ClusterError(f"broker {broker_id} did not register again within {timeout_s:.0f} s")
            self.cluster._check_running([self.cluster.brokers[broker_id]])
            time.sleep(0.2)


class ProtocolControlPlane(ControlPlane):
    """KRaft and generic brokers: everything asked through the Kafka protocol; ``zk()`` raises."""

    def new_cluster_id(self) -> str | None:
        return new_cluster_id()

    def registered_brokers(self) -> set[int]:
        """The brokers a Metadata response lists (KRaft: registered and not fenced)."""
        return {b.node_id for b in self.cluster.protocol_metadata([]).brokers}

    def active_controller(self) -> int | None:
        """The metadata quorum's leader (DescribeQuorum); None when it has none."""
        q = self.cluster.quorum()
        return q.leader_id if q.error is None and q.leader_id >= 0 else None

    def topic_assignment(self, topic: str, timeout_s: float = 10.0):
        """The same from the protocol: the replicas from Metadata (the full replica set, as the znode
        holds it during a reassignment) and the adding / removing replicas from
        ListPartitionReassignments (forwarded to the active controller). Each broker in turn until one
        lists ``topic`` (a broker's metadata may lag the controller's a moment); {} when every broker
        that answers says it does not exist."""
        cluster = self.cluster
        info, errors = None, []
        for ep in [cluster.brokers[b].endpoint for b in cluster.broker_ids]:
            try:
                with ProtocolClient.at(ep, timeout=timeout_s, security=getattr(cluster, "security", None)) as c:
                    t = next((t for t in c.metadata([topic]).topics if t.name == topic), None)
                    if t is not None and t.error is None:
                        info = t
                        res = c.list_partition_reassignments({topic: sorted(p.partition for p in t.partitions)})
                        break
                    errors.append(f"{ep}: {t.error if t else 'not listed'}")
            except ProtocolError as e:
                info = None
                errors.append(str(e))
        if info is None:
            if errors and all(e.endswith(("UNKNOWN_TOPIC_OR_PARTITION", "not listed")) for e in errors):
                return {}
            raise AdminOpError(f"topic_assignment({topic!r}): no broker answered: {'; '.join(errors)[:400]}")
        if res.error is not None:
            raise AdminOpError(f"topic_assignment({topic!r}): ListPartitionReassignments answered {res.error}"
                               + (f" ({res.error_message})" if res.error_message else ""))
        ongoing = {r.partition: r for r in res.partitions if r.topic == topic}
        out = {}
        for p in sorted(info.partitions, key=lambda p: p.partition):
            r = ongoing.get(p.partition)
            out[p.partition] = ((list(r.replicas), list(r.adding_replicas), list(r.removing_replicas)) if r
                                else (list(p.replicas), [], []))
        return out

    def broker_epoch(self, broker_id: int) -> int | None:
        """The epoch of ``broker_id``'s current registration (None when it has none): not exposed by
        client APIs without ZooKeeper, so read from the metadata log (the offset of its
        RegisterBrokerRecord); raises what :meth:`zk` raises when the distribution keeps none."""
        if not self.cluster.distribution.metadata_log:
            self.zk()
        return self.broker_epochs().get(broker_id)

    def broker_epochs(self) -> dict[int, int]:
        """Broker id -> the epoch of its current registration, from the registrations in the metadata log."""
        out: dict[int, int] = {}
        for w in self.writes_since(-1):
            if w["kind"] == "broker":
                if w["registered"]:
                    out[w["broker_id"]] = w["broker_epoch"]
                else:
                    out.pop(w["broker_id"], None)
        return out

    def history_marker(self) -> int:
        """The offset of the newest record in the metadata log now."""
        if not self.cluster.distribution.metadata_log:
            raise self._no_history("history_marker")
        newest = metadata_marker(self.cluster)
        return -1 if newest is None else newest

    def writes_since(self, marker: int) -> list[dict]:
        """From the ``__cluster_metadata`` log, copied out of the nodes now (harness/observer/kraft_history.py)."""
        if not self.cluster.distribution.metadata_log:
            raise self._no_history("writes_since")
        hist = read_kraft_history(self.cluster)
        if hist is None:
            dist = self.cluster.distribution
            if not dist.metadata_log_required:
                raise NotSupported(f"writes_since: no node of this {dist.name} cluster keeps a KRaft metadata log "
                                   "(__cluster_metadata-0 under the first of log.dirs) the harness can read: the "
                                   "scenario checks the controller's writes, which this broker does not expose")
            raise AdminOpError("no node's metadata log could be read")
        return control_history.from_metadata_events(hist.events, marker)

    def _check_foreign_ids(self, b: int, want: set[int], seen: set[int]) -> None:
        """A foreign image (``generic``) whose broker keeps answering Metadata with node ids it was not given
        (e.g. [111] for nodes 1, 2, 3: it ignores node.id) for :data:`FOREIGN_IDS_GRACE_S` never becomes
        ready: raise NeverServes at once, naming the ids and the distribution-file key that describes them,
        instead of waiting out the start timeout (120 s per scenario). Apache Kafka never lists an id it
        was not configured with, so this is checked for foreign distributions only."""
        extra = seen - want
        if not extra or not getattr(self.cluster.distribution, "foreign", False):
            getattr(self, "_foreign_since", {}).pop(b, None)
            return
        since = self.__dict__.setdefault("_foreign_since", {})
        first = since.setdefault(b, time.monotonic())
        if time.monotonic() - first >= FOREIGN_IDS_GRACE_S:
            node = self.cluster.brokers[b]
            prefix = getattr(self.cluster.distribution, "env_prefix", "KAFKA_")
            raise NeverServes(
                f"{node.name} answers Metadata listing node ids {sorted(seen)}, not the ids the harness gave the "
                f"cluster ({sorted(want)}, as {prefix}NODE_ID): the image does not take node.id from its "
                f"environment; describe it with a distribution file: node_ids = {sorted(seen)} "
                f"(docs/broker-contract.md, docs/examples/kfake.toml)")

    def wait_node_ready(self, node, timeout_s: float) -> None:
        """A dedicated controller: until it finished its startup, the quorum has a leader again and the
        node leads it or caught up with the leader's log since this wait began (DescribeQuorum through
        the brokers; without the catch-up time, DescribeQuorum v0, a log end offset is enough)."""
        deadline = time.monotonic() + timeout_s
        since_ms = int(time.time() * 1000) - 1000      # the containers share the host's clock
        last = "not checked"
        while time.monotonic() < deadline:
            self.cluster._check_running([node])
            try:
                q = self.cluster.quorum()
                me = next((v for v in q.voters if v.replica_id == node.node_id), None)
                if not node.started():
                    last = "startup not finished"
                elif q.error is not None or q.leader_id < 0:
                    last = f"the metadata quorum has no leader ({q.error or 'leader -1'})"
                elif me is None:
                    last = f"not a voter of the quorum ({sorted(v.replica_id for v in q.voters)})"
                elif q.leader_id == node.node_id or me.last_caught_up_timestamp >= since_ms or (
                        me.last_caught_up_timestamp < 0 and me.log_end_offset >= 0):
                    return
                else:
                    last = f"not caught up with the leader {q.leader_id} (log end {me.log_end_offset})"
            except ProtocolError as e:
                last = str(e)
            time.sleep(0.5)
        raise ClusterError(f"{node.name} not serving {timeout_s:.0f} s after its start ({last})")

    def not_ready(self, want: set[int]) -> str | None:
        """Each broker in ``want`` answers Metadata listing all of them, the quorum has a leader
        (DescribeQuorum) and each finished its startup; asked through the Kafka protocol."""
        cl = self.cluster
        for b in sorted(want):
            with ProtocolClient.at(cl.brokers[b].endpoint, timeout=5.0, security=getattr(cl, "security", None)) as c:
                seen = {x.node_id for x in c.metadata([]).brokers}
            self._check_foreign_ids(b, want, seen)
            if not want <= seen:
                return f"broker {b} lists {sorted(seen)} in metadata, waiting for {sorted(want - seen)}"
        q = cl.quorum()
        if q.error is not None or q.leader_id < 0:
            return f"the metadata quorum has no leader ({q.error or 'leader -1'})"
        starting = [b for b in sorted(want) if not cl.brokers[b].started()]
        if starting:
            return f"startup not finished on brokers {starting}"
        return None
