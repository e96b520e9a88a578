"""The observation source of a run: how the harness sees a cluster's control plane, per distribution.

A source gives the run three things and nothing else: a live **view** (who leads what, who is the
controller) that the scenario and the nemesis resolve roles with, **samples** written into the record
while the run lasts, and, after the run, the **ground-truth history** when the distribution has one.
The runner asks the distribution adapter which source it uses (``Distribution.observation``) and never
branches on the mode itself.

- ``zookeeper`` (Apache Kafka in ZooKeeper mode): the live ZooKeeper watcher is the view; Admin-API
  samples; after the run ZooKeeper's transaction log is read and reconciled with the watch (every
  partition-state version, gaps named).
- ``protocol`` (KRaft and brokers that are not Apache Kafka): the Kafka protocol is the live window
  (Metadata, DescribeQuorum): a protocol view and protocol samples. After the run, when the adapter
  says the nodes keep Apache Kafka's KRaft metadata log (``Distribution.metadata_log``), that log is
  read and its ``meta.*`` history (``source: "metadata_log"``) added to the record.
"""

from __future__ import annotations

from harness.observer.admin_sampler import AdminSampler
from harness.observer.kraft_events import emit_history
from harness.observer.kraft_history import read_kraft_history
from harness.observer.protocol_sampler import ProtocolSampler
from harness.observer.protocol_view import ProtocolView
from harness.observer.reconcile import emit_reconciled, reconcile
from harness.observer.zk_history import read_zk_history
from harness.observer.zk_watcher import ZkWatcher


class ObservationSource:
    """Base: start it once the cluster is up, stop it when the run ends (idempotent, never raises),
    then ``finish`` after the run (the cluster still exists) for the ground-truth history."""

    view = None

    def start(self, cluster, rec, topics: list[str], duration_s: float):
        """Start observing ``cluster`` into ``rec``; returns the live view."""
        raise NotImplementedError

    def stop(self) -> None:
        """Stop the samplers and watchers (what is recorded stays)."""

    def finish(self, cluster, rec) -> None:
        """After the run: add the ground-truth history to the record, when there is one."""


def _stop_quietly(*things) -> None:
    for t in things:
        if t is None:
            continue
        try:
            t.stop()
        except Exception:  # noqa: BLE001 - stopping is best effort: the record is closed by the runner
            pass


class ZooKeeperSource(ObservationSource):
    """ZooKeeper watch + Admin-API samples; after the run, the txn log reconciled with the watch."""

    def __init__(self) -> None:
        self.watcher = self.sampler = None

    def start(self, cluster, rec, topics, duration_s):
        self.view = self.watcher = ZkWatcher(cluster.zookeeper_connect, emit=rec.emit).start()
        self.sampler = AdminSampler(cluster.bootstrap_servers, emit=rec.emit, interval=1.0,
                                    duration=duration_s + 180, topics=topics,
                                    client_config=cluster.security.client_config()).start()
        return self.view

    def stop(self) -> None:
        _stop_quietly(self.sampler, self.watcher)

    def finish(self, cluster, rec) -> None:
        if self.watcher is None or not cluster.started:
            return
        hist = read_zk_history(cluster)
        if hist is not None:
            r = reconcile(list(self.watcher.events), hist)
            emit_reconciled(rec.emit, r)
            rec.update_metadata(observer=r.report())


class ProtocolSource(ObservationSource):
    """No ZooKeeper: the protocol view (leader epochs, the quorum) and protocol samples."""

    def __init__(self) -> None:
        self.sampler = None

    def start(self, cluster, rec, topics, duration_s):
        self.view = ProtocolView(cluster)
        self.sampler = ProtocolSampler.for_cluster(cluster, emit=rec.emit, interval=0.5,
                                                   duration=duration_s + 300, topics=topics).start()
        return self.view

    def stop(self) -> None:
        _stop_quietly(self.sampler)

    def finish(self, cluster, rec) -> None:
        """Apache KRaft: the metadata log's history into the record, its counts into the metadata."""
        if self.view is None or not cluster.started or not cluster.distribution.metadata_log:
            return
        hist = read_kraft_history(cluster)
        if hist is None:
            rec.update_metadata(observer={"source": "metadata_log", "readable": False})
            return
        emit_history(rec.emit, hist)
        for name, blob in sorted(hist.segments.items()):   # the evidence: re-decodable, e.g. by kafka-dump-log
            rec.write_artifact(f"{METADATA_LOG_DIR}/{name}", blob)
        rec.update_metadata(observer={"readable": True, **hist.summary(),
                                      "segments": [f"{METADATA_LOG_DIR}/{n}" for n in sorted(hist.segments)]})


METADATA_LOG_DIR = "metadata_log"    # in the run record: the segments the meta.* events were read from
SOURCES = {"zookeeper": ZooKeeperSource, "protocol": ProtocolSource}


def for_distribution(dist) -> ObservationSource:
    """A fresh source of the kind the distribution adapter names."""
    return SOURCES[dist.observation]()
