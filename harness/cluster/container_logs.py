"""Every container's own log (stdout + stderr, with Docker's timestamps) saved into the run record.

When a run ends, before its cluster is removed, each container carrying the cluster's label (brokers,
ZooKeeper servers, dedicated controllers, a distribution file's service containers) has its log
written gzipped to ``RUN_DIR/logs/<container>.log.gz`` and listed in metadata.json ``container_logs``
(docs/run-record.md). A reader of a FAIL or an UNKNOWN finds the broker's side of the story next to
the events, and the HTML report and the certificate link to it.

A log longer than :data:`MAX_BYTES` keeps its last :data:`MAX_BYTES` (the end explains the verdict);
the entry says so. Saving is evidence, never a reason to fail a run: an error is recorded in the
entry and the run goes on.
"""

from __future__ import annotations

import gzip
import time
from typing import Callable

from harness import docker_util
from harness.cluster.cleanup import labelled_containers

MAX_BYTES = 16 * 1024 * 1024     # raw log kept per container (the end of it)
DIR = "logs"
REMOTE_TAIL_LINES = 20000        # a nodes file's node: the end of its service.log_file, read over SSH


def save_cluster(cluster, write: Callable[[str, bytes], None]) -> list[dict]:
    """:func:`save` for a cluster the harness started; for a nodes file's cluster (``--nodes``) the last
    :data:`REMOTE_TAIL_LINES` lines of each node's ``service.log_file``, read through its access."""
    if not getattr(cluster, "is_remote", False):
        return save(cluster.name, write)
    entries = []
    for n in cluster.nodes():
        try:
            raw = n.logs(REMOTE_TAIL_LINES).encode()
        except Exception as e:  # noqa: BLE001 - evidence is optional
            entries.append({"container": n.name, "error": f"{type(e).__name__}: {e}"[:300]})
            continue
        raw = raw[-MAX_BYTES:]
        path = f"{DIR}/{n.name}.log.gz"
        write(path, gzip.compress(raw, compresslevel=5, mtime=int(time.time())))
        entries.append({"container": n.name, "path": path, "bytes": len(raw), "truncated": False})
    return entries


def save(cluster_name: str, write: Callable[[str, bytes], None]) -> list[dict]:
    """Write each of ``cluster_name``'s containers' logs with ``write(relpath, data)``; the entries
    for metadata.json ``container_logs``: ``{"container", "path", "bytes", "truncated"}`` or
    ``{"container", "error"}``."""
    entries = []
    api = docker_util.client().api
    for c in sorted(labelled_containers(f"{docker_util.LABEL_CLUSTER}={cluster_name}"),
                    key=lambda c: (c.get("Names") or [c["Id"]])[0]):
        name = ((c.get("Names") or [c["Id"][:12]])[0]).lstrip("/")
        try:
            raw = api.logs(c["Id"], stdout=True, stderr=True, timestamps=True)
        except Exception as e:  # noqa: BLE001 - gone already, engine trouble: evidence is optional
            entries.append({"container": name, "error": f"{type(e).__name__}: {e}"[:300]})
            continue
        truncated = len(raw) > MAX_BYTES
        if truncated:
            raw = raw[-MAX_BYTES:]
        path = f"{DIR}/{name}.log.gz"
        write(path, gzip.compress(raw, compresslevel=5, mtime=int(time.time())))
        entries.append({"container": name, "path": path, "bytes": len(raw), "truncated": truncated})
    return entries
