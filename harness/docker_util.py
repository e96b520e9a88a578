"""Access to the Docker engine, with one clear error when it is unreachable."""

from __future__ import annotations

import contextlib
import functools
import os
import subprocess
import threading

from harness.errors import DockerUnavailable

LABEL = "kafka-chaos"                 # every object the harness creates carries LABEL=1
LABEL_CLUSTER = "kafka-chaos.cluster"  # the cluster name
LABEL_ROLE = "kafka-chaos.role"        # broker | zookeeper | controller | service
LABEL_NODE_ID = "kafka-chaos.node-id"  # broker id or ZooKeeper myid
LABEL_SERVICE = "kafka-chaos.service"  # a distribution file's service container: the service's name
LABEL_NODE_PORTS = "kafka-chaos.node-ports"  # one process serving several node ids: "id:host port,..."
LABEL_OWNER_PID = "kafka-chaos.owner-pid"
LABEL_OWNER_HOST = "kafka-chaos.owner-host"
LABEL_OWNER_START = "kafka-chaos.owner-start"  # the owner's start time (/proc/PID/stat): tells a reused pid apart
LABEL_PERSISTENT = "kafka-chaos.persistent"  # "1" for `cluster up` clusters (no owner process)
LABEL_SSHHOST = "kafka-chaos.sshhost"  # "1" on SSH test hosts (tests/remote/hosts.py), not a cluster the harness runs

ENSURE_HINT = "start one with `sudo scripts/ensure-docker.sh` (installs Debian's docker.io and starts dockerd) or set DOCKER_HOST"


def _unreachable(why: str) -> DockerUnavailable:
    where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    return DockerUnavailable(f"Docker engine unreachable at {where} ({why}); {ENSURE_HINT}")


@functools.lru_cache(maxsize=1)
def client():
    """A docker-py client whose engine answered a ping; raises DockerUnavailable otherwise."""
    import docker  # imported lazily so pure modules never need it
    try:
        c = docker.from_env(timeout=120)
        c.ping()
        return c
    except Exception as e:  # docker raises several unrelated types here
        raise _unreachable(type(e).__name__) from None


def cli_engine_answers() -> None:
    """:func:`client`'s check through the ``docker`` CLI, for code that runs before docker-py is installed
    (harness/images_prepare.py); raises DockerUnavailable with the same message."""
    try:
        res = subprocess.run(["docker", "version", "--format", "{{.Server.Version}}"], capture_output=True,
                             text=True, timeout=60)
        if res.returncode == 0:
            return
        why = (res.stderr.strip().splitlines() or ["no answer"])[-1]
    except (OSError, subprocess.TimeoutExpired) as e:
        why = f"{type(e).__name__}: {e}"
    raise _unreachable(why[:200])


def engine_version() -> str | None:
    try:
        return client().version().get("Version")
    except DockerUnavailable:
        return None


_RYUK_LOCK = threading.Lock()


@contextlib.contextmanager
def without_ryuk():
    """testcontainers' Ryuk reaper off while the harness starts its own containers, and the user's setting
    back after: Ryuk is an image no registry gives us here, and our clusters are reaped by owner labels
    (harness/cluster/lifecycle.py). Scoped, not ``TESTCONTAINERS_RYUK_DISABLED`` in the environment, so a
    user's other testcontainers tests in the same pytest session keep their Ryuk (issue 43)."""
    from testcontainers.core.config import testcontainers_config as tc  # lazy: as DockerContainer
    with _RYUK_LOCK:
        before = tc._ryuk_disabled
        tc.ryuk_disabled = True
        try:
            yield
        finally:
            tc._ryuk_disabled = before
