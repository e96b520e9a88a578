"""One node of a cluster: a broker's, a ZooKeeper server's or a controller's container and the process-level
operations faults use (kill, stop, start, pause, ``docker exec`` as root, reading files, logs, and
whether a broker finished its startup).

:class:`harness.cluster.cluster.Cluster` creates the containers and holds its nodes; a :class:`Node` only
names its container and acts on it through the Docker API.
"""

from __future__ import annotations

import io
import tarfile
from datetime import datetime

from harness import docker_util
from harness.errors import ClusterError
from harness.distributions.node_settings import ZK_CLIENT_PORT


class Node:
    """One container (a broker, a ZooKeeper server, a controller, a service) with the process-level operations faults use."""

    def __init__(self, cluster_name: str, role: str, node_id: int, container_name: str, alias: str,
                 host_port: int, started_line: str | None = None, client_port: int | None = None,
                 service: str | None = None):
        self.cluster_name = cluster_name
        # broker | zookeeper | controller (a dedicated KRaft controller) | service (a distribution file's
        # service container the harness knows no more about, e.g. a broker's object store)
        self.role = role
        self.service = service  # the distribution file's service this node belongs to (None: not a service)
        self.node_id = node_id
        self.name = container_name
        self.alias = alias
        self.host_port = host_port
        # the port inside the container published on host_port: a broker listens on host_port itself
        self.client_port = client_port if client_port is not None else (
            ZK_CLIENT_PORT if role == "zookeeper" else host_port)
        # the log line that ends startup (distribution-specific); "" = none, running is enough
        self.started_line = f"[KafkaServer id={node_id}] started" if started_line is None else started_line

    def __repr__(self) -> str:
        return f"Node({self.name})"

    @property
    def container(self):
        return docker_util.client().containers.get(self.name)

    def status(self) -> str:
        """Docker status: running, paused, exited, ..."""
        import docker.errors  # lazy: docker-py, kept off the CLI's start-up
        try:
            return self.container.status
        except docker.errors.NotFound:
            return "missing"

    def ip(self) -> str | None:
        nets = self.container.attrs["NetworkSettings"]["Networks"]
        net = nets.get(f"kc-{self.cluster_name}")
        return (net or {}).get("IPAddress") or None

    def kill(self, signal: str = "SIGKILL") -> None:
        self.container.kill(signal=signal)

    def stop(self, timeout: int = 60) -> None:
        """Clean stop: SIGTERM (a broker runs controlled shutdown), SIGKILL after ``timeout`` s."""
        self.container.stop(timeout=timeout)

    def start(self) -> None:
        self.container.start()

    def pause(self) -> None:
        self.container.pause()

    def unpause(self) -> None:
        if self.status() == "paused":
            self.container.unpause()

    def exec(self, cmd: list[str] | str, check: bool = False) -> tuple[int, str]:
        """Run ``cmd`` in the container as root (whatever user the image runs as: faults need
        iptables and tc, which only root may use; the container itself is never privileged)."""
        res = self.container.exec_run(cmd, demux=False, user="root")
        out = (res.output or b"").decode(errors="replace")
        if check and res.exit_code != 0:
            raise ClusterError(f"{self.name}: `{cmd if isinstance(cmd, str) else ' '.join(cmd)}` failed: {out.strip()[:300]}")
        return res.exit_code, out

    def read_file(self, path: str) -> bytes:
        """Read one file from the container (works while it is stopped)."""
        stream, _ = self.container.get_archive(path)
        buf = io.BytesIO(b"".join(stream))
        with tarfile.open(fileobj=buf) as tar:
            member = tar.next()
            if member is None or not member.isfile():
                raise ClusterError(f"{self.name}:{path} is not a regular file")
            return tar.extractfile(member).read()

    def list_dir(self, path: str) -> list[str]:
        """Names of the entries of a directory in the container (works while it is stopped)."""
        stream, _ = self.container.get_archive(path)
        buf = io.BytesIO(b"".join(stream))
        base = path.rstrip("/").rsplit("/", 1)[-1]
        names = []
        with tarfile.open(fileobj=buf) as tar:
            for m in tar.getmembers():
                parts = m.name.split("/")
                if len(parts) == 2 and parts[0] == base:
                    names.append(parts[1])
        return sorted(names)

    def logs(self, tail: int = 50) -> str:
        return self.container.logs(tail=tail).decode(errors="replace")

    def started(self) -> bool:
        """A broker: it logged ``[KafkaServer id=N] started`` (ZooKeeper mode; the distribution's
        :attr:`started_line` in general) since its container last started.

        Registration in ZooKeeper comes before the end of ``KafkaServer.startup()``; a broker that
        loses its session before startup completed exits ("fatal exception during startup"), so a
        broker counts as ready only after this line.
        """
        c = self.container
        if c.status != "running":
            return False
        since_s = c.attrs["State"].get("StartedAt", "")
        try:
            since = datetime.fromisoformat(since_s[:26].rstrip("Z") + "+00:00") if since_s else None
        except ValueError:
            since = None
        if not self.started_line:
            return True
        logs = c.logs(since=since) if since else c.logs(tail=2000)
        return self.started_line.encode() in logs
