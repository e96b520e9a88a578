"""ZooKeeper's own transaction log, read from the cluster's ZooKeeper containers at the end of a run: the
ground truth of every controller write (docs/observer.md)."""

from __future__ import annotations

import sys

from harness.observer.txn_events import history_from_txnlog
from harness.observer.txnlog import read_txnlog_blobs

ZK_LOG_DIR = "/var/lib/zookeeper/version-2"   # Apache's image; a distribution file may say otherwise


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def read_zk_history(cluster):
    """The most complete transaction-log history among the ZooKeeper nodes (None if unreadable)."""
    best = None
    log_dir = cluster.distribution.zk_txn_log_dir
    for zk in cluster.zookeepers:
        try:
            names = [n for n in zk.list_dir(log_dir) if n.startswith("log.")]
            if not names:
                continue
            hist = history_from_txnlog(read_txnlog_blobs({n: zk.read_file(f"{log_dir}/{n}") for n in names}))
        except Exception as e:  # a node's log may be unreadable after a fault; try the others
            _say(f"  (txn log of {zk.name} unreadable: {e})")
            continue
        key = (hist.complete, len(hist.events))
        if best is None or key > best[0]:
            best = (key, hist)
    return best[1] if best else None
