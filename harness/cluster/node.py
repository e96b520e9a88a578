"""One node of a cluster: a broker, a ZooKeeper server or a controller, with the process-level
operations faults use (kill, stop, start, pause, a command as root, reading files, logs, and whether
a broker finished its startup).

:class:`harness.cluster.cluster.Cluster` creates the containers (or connects to a nodes file's hosts)
and holds its nodes; a :class:`Node` keeps the node's identity and delegates every operation to
``node.access`` (harness/cluster/access.py: a container through the Docker API, or a host over SSH).
"""

from __future__ import annotations

from harness.cluster.access import ContainerAccess, NodeAccess
from harness.distributions.node_settings import ZK_CLIENT_PORT
from harness.protocol.endpoint import LOOPBACK, Endpoint


class Node:
    """One container (a broker, a ZooKeeper server, a controller, a service) with the process-level operations faults use."""

    def __init__(self, cluster_name: str, role: str, node_id: int, container_name: str, alias: str,
                 host_port: int, started_line: str | None = None, client_port: int | None = None,
                 service: str | None = None, access: NodeAccess | None = None, address: str | None = None,
                 host: str = LOOPBACK):
        self.cluster_name = cluster_name
        # broker | zookeeper | controller (a dedicated KRaft controller) | service (a distribution file's
        # service container the harness knows no more about, e.g. a broker's object store)
        self.role = role
        self.service = service  # the distribution file's service this node belongs to (None: not a service)
        self.node_id = node_id
        self.name = container_name
        self.alias = alias
        # where the harness's clients reach it (harness/protocol/endpoint.py): 127.0.0.1:<published port> for a
        # container the harness started, the nodes file's ``endpoint`` for a host it did not
        self.endpoint = Endpoint(host, int(host_port))
        # the port inside the container published on host_port: a broker listens on host_port itself
        self.client_port = client_port if client_port is not None else (
            ZK_CLIENT_PORT if role == "zookeeper" else host_port)
        # the log line that ends startup (distribution-specific); "" = none, running is enough
        self.started_line = f"[KafkaServer id={node_id}] started" if started_line is None else started_line
        # how the harness reaches it (harness/cluster/access.py): the container of that name by default
        self.access: NodeAccess = access if access is not None else ContainerAccess(container_name)
        # the address the other nodes reach it at, when known without asking Docker (a nodes file's host)
        self.address = address

    def __repr__(self) -> str:
        return f"Node({self.name})"

    @property
    def host_port(self) -> int:
        """The port of :attr:`endpoint` (a container's: published on 127.0.0.1)."""
        return self.endpoint.port

    @property
    def container(self):
        """The Docker container (a node the harness started; AttributeError over SSH)."""
        return self.access.container

    def status(self) -> str:
        """running, paused, exited, missing (a container), unreachable (a host over SSH)."""
        return self.access.status()

    def ip(self) -> str | None:
        """The node's address on the cluster network (a host's: the nodes file's ``address``)."""
        if self.address is not None:
            return self.address
        return self.access.ip(f"kc-{self.cluster_name}")

    def kill(self, signal: str = "SIGKILL") -> None:
        self.access.kill(signal)

    def stop(self, timeout: int = 60) -> None:
        """Clean stop: SIGTERM (a broker runs controlled shutdown), SIGKILL after ``timeout`` s; a
        host: the node's own stop command."""
        self.access.stop(timeout)

    def start(self) -> None:
        self.access.start()

    def pause(self) -> None:
        self.access.pause()

    def unpause(self) -> None:
        self.access.unpause()

    def exec(self, cmd: list[str] | str, check: bool = False) -> tuple[int, str]:
        """Run ``cmd`` as root (a container: ``docker exec --user root``; a host: with sudo where the
        nodes file says so)."""
        return self.access.exec(cmd, check)

    def read_file(self, path: str) -> bytes:
        """Read one file (read-only; works while the node is stopped)."""
        return self.access.read_file(path)

    def list_dir(self, path: str) -> list[str]:
        """Names of the entries of a directory (read-only; works while the node is stopped)."""
        return self.access.list_dir(path)

    def logs(self, tail: int = 50) -> str:
        return self.access.logs(tail)

    def started(self) -> bool:
        """A broker: it logged ``[KafkaServer id=N] started`` (ZooKeeper mode; the distribution's
        :attr:`started_line` in general) since its process last started.

        Registration in ZooKeeper comes before the end of ``KafkaServer.startup()``; a broker that
        loses its session before startup completed exits ("fatal exception during startup"), so a
        broker counts as ready only after this line.
        """
        return self.access.started_since_start(self.started_line)
