"""The KRaft metadata log, read from the cluster's Kafka containers during or after a run: the ground
truth of every decision of the controller (docs/observer.md, "KRaft metadata log").

Every node replicates ``__cluster_metadata-0`` (voters as quorum members, broker-only nodes as
observers) under ``metadata.log.dir`` (default: the first of ``log.dirs``); in the dedicated layout
(``apache-kraft-dedicated``) the voters are the controller-only nodes, read first. The segments are copied out
with ``docker cp`` semantics (:meth:`harness.cluster.cluster.Node.read_file`), which also works on a stopped or
killed container. A node's log may lack the tail that was not yet replicated to it, and the leader's
may end with records not yet committed; the most complete readable history is kept.
"""

from __future__ import annotations

import sys

from harness.observer.kraft_events import KraftHistory, history_from_metadata_log
from harness.observer.kraft_metadata import offset_from_name, parse_segment_bytes, read_metadata_blobs

METADATA_PARTITION = "__cluster_metadata-0"


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def metadata_log_dir(config: dict[str, str]) -> str:
    """The directory of ``__cluster_metadata-0`` for a node configured with ``config``."""
    base = config.get("metadata.log.dir") or (config.get("log.dirs") or config.get("log.dir")
                                              or "/tmp/kafka-logs").split(",")[0]
    return f"{base.rstrip('/')}/{METADATA_PARTITION}"


def _nodes_voters_first(cluster) -> list:
    """Every Kafka node (the brokers and any controller-only nodes of a dedicated quorum), the quorum's
    voters first: their logs are the most complete."""
    nodes = [cluster.brokers[b] for b in sorted(cluster.brokers)] + list(getattr(cluster, "controllers", []))
    voters = _voter_ids(cluster, nodes)
    return [n for n in nodes if n.node_id in voters] + [n for n in nodes if n.node_id not in voters]


def _voter_ids(cluster, nodes) -> set[int]:
    return set(cluster.distribution.voter_ids(nodes))


def _segment_names(node, d: str) -> list[str]:
    return [n for n in node.list_dir(d) if offset_from_name(n) is not None]


def read_node_history(cluster, node) -> KraftHistory | None:
    """One node's metadata-log history (None when it has no segment); raises when unreadable."""
    d = metadata_log_dir(cluster.broker_config)
    names = _segment_names(node, d)
    if not names:
        return None
    blobs = {n: node.read_file(f"{d}/{n}") for n in names}
    hist = history_from_metadata_log(read_metadata_blobs(blobs))
    hist.node = node.name
    hist.segments = blobs
    return hist


def read_kraft_history(cluster) -> KraftHistory | None:
    """The most complete metadata-log history among the quorum's voters (the controllers), or, when no
    voter's log is readable and complete, among every node (None when no node's log is readable). The
    voters' logs are the ground truth: an observer (a broker-only node) only copies the leader's, and
    reading it later would only add the no-op records written meanwhile. A node whose log cannot be
    read gets a one-line note on stderr."""
    best = None
    nodes = _nodes_voters_first(cluster)
    n_voters = len(_voter_ids(cluster, nodes))
    for i, node in enumerate(nodes):
        if i == n_voters and best is not None and best[1].complete:
            break                       # a voter's complete log: the observers add nothing
        try:
            hist = read_node_history(cluster, node)
        except Exception as e:  # noqa: BLE001 - a node's log may be unreadable after a fault; try the others
            _say(f"  (metadata log of {node.name} unreadable: {e})")
            continue
        if hist is None:
            continue
        key = (hist.complete, hist.last_offset if hist.last_offset is not None else -1, len(hist.events))
        if best is None or key > best[0]:
            best = (key, hist)
    return best[1] if best else None


def metadata_marker(cluster) -> int | None:
    """The newest offset in the metadata log now (the highest over the readable nodes; only their last
    segment is decoded): events with a greater ``offset`` were written after this call."""
    d = metadata_log_dir(cluster.broker_config)
    newest = None
    for node in _nodes_voters_first(cluster):
        try:
            names = _segment_names(node, d)
            for n in sorted(names, key=offset_from_name, reverse=True):   # the last non-empty segment
                seg = parse_segment_bytes(node.read_file(f"{d}/{n}"), n)
                if seg.batches:
                    last = seg.batches[-1].last_offset
                    newest = last if newest is None else max(newest, last)
                    break
        except Exception as e:  # noqa: BLE001 - as in read_kraft_history
            _say(f"  (metadata log of {node.name} unreadable: {e})")
    return newest


def events_since(hist: KraftHistory, marker: int | None) -> list[dict]:
    """The history's events written after ``marker`` (:func:`metadata_marker`; None: all of them)."""
    return [e for e in hist.events if marker is None or e["offset"] > marker]
