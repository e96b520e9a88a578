"""Listing and removing the harness's Docker objects by label: one cluster's containers, network and
volumes (``remove_cluster``), the clusters of dead owners (``reap_orphans``, harness/cluster/lifecycle.py),
everything labelled ``kafka-chaos=1`` (``cleanup_all``) and what is left of it (``leftovers``).

Every container, network and volume the harness creates carries ``kafka-chaos=1`` plus its cluster
name (harness/docker_util.py); nothing without that label is ever touched.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from harness.cluster import certs
from harness import docker_util
from harness.docker_util import LABEL, LABEL_CLUSTER
from harness.cluster.lifecycle import reap


def labelled_containers(label: str) -> list[dict]:
    """Containers with ``label`` as summary dicts (Id, Names, Labels, State) from one API call.

    Unlike ``containers.list()`` this does not inspect each container, so it cannot race with a
    concurrent removal.
    """
    return docker_util.client().api.containers(all=True, filters={"label": label})


def list_clusters() -> dict[str, list[str]]:
    """Cluster name → container names, for everything carrying the harness label."""
    out: dict[str, list[str]] = {}
    for c in labelled_containers(f"{LABEL}=1"):
        out.setdefault(c["Labels"].get(LABEL_CLUSTER, "?"), []).append(c["Names"][0].lstrip("/"))
    return out


def _remove_labelled(label: str) -> dict[str, int]:
    """Force-remove every container (with its anonymous volumes), network and volume carrying ``label``."""
    import docker.errors  # lazy: docker-py, kept off the CLI's start-up
    client = docker_util.client()

    def attempt(remove) -> int:
        """1 when ``remove()`` removed it, 0 when someone else did or is doing it."""
        try:
            remove()
            return 1
        except docker.errors.NotFound:  # removed meanwhile (another cleanup, auto-remove)
            return 0
        except docker.errors.APIError as e:   # 409: another process is removing it right now
            if e.status_code != 409 or "in progress" not in str(e):
                raise
            return 0

    def remove_container(c: dict) -> int:
        return attempt(lambda: client.api.remove_container(c["Id"], force=True, v=True))

    containers = labelled_containers(label)
    if len(containers) > 1:
        # all at once: one after another, a 4-node cluster took 1.1 s to remove (each a kill and a
        # removal in the engine), and a parallel run's next scenario waits for it
        with ThreadPoolExecutor(max_workers=min(8, len(containers)), thread_name_prefix="remove") as pool:
            removed = sum(pool.map(remove_container, containers))
    else:
        removed = sum(map(remove_container, containers))
    return {"containers": removed,
            "networks": sum(attempt(net.remove) for net in client.networks.list(filters={"label": label})),
            "volumes": sum(attempt(lambda v=vol: v.remove(force=True))
                           for vol in client.volumes.list(filters={"label": label}))}


def remove_cluster(name: str, settle: bool = True) -> int:
    """Force-remove the containers, volumes and network of one cluster; returns containers removed.

    Looks again (up to 3 passes) while any is left. With ``settle`` it first waits 0.3 s each time: a
    container whose create request was sent just before an interruption appears only once the engine
    finished creating it. A cluster whose start completed has no create in flight (``settle=False``:
    the 0.3 s were spent after every run)."""
    label = f"{LABEL_CLUSTER}={name}"
    removed = 0
    client = docker_util.client()
    for attempt in range(3):
        removed += _remove_labelled(label)["containers"]
        if attempt == 2:
            break
        if settle:
            time.sleep(0.3)
        if not (labelled_containers(label) or client.networks.list(filters={"label": label})):
            break
    certs.remove_tls_dir(name)              # a secured cluster's CA file goes with it (harness/cluster/certs.py)
    return removed


def reap_orphans() -> list[str]:
    """Remove the containers, networks and volumes whose owner process on this host is gone (never a
    live owner's, another host's or a `cluster up` cluster's: harness/cluster/lifecycle.py); returns the names of
    the clusters they belonged to."""
    names = sorted({i.cluster for i in reap(docker_util.client()) if i.cluster})
    for name in names:
        certs.remove_tls_dir(name)          # a secured cluster's CA file (harness/cluster/certs.py)
    return names


def cleanup_all() -> dict[str, int]:
    """Remove everything carrying the harness label: containers, networks, volumes (and the clusters'
    CA files: harness/cluster/certs.py)."""
    out = _remove_labelled(f"{LABEL}=1")
    certs.remove_all_tls_dirs()
    return out


def leftovers() -> dict[str, list[str]]:
    """Names of labelled containers, networks and volumes still present."""
    client = docker_util.client()
    return {
        "containers": [c["Names"][0].lstrip("/") for c in labelled_containers(f"{LABEL}=1")],
        "networks": [n.name for n in client.networks.list(filters={"label": f"{LABEL}=1"})],
        "volumes": [v.name for v in client.volumes.list(filters={"label": f"{LABEL}=1"})],
    }
