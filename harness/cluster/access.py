"""How the harness reaches one node: one small interface (:class:`NodeAccess`) and its container
implementation (:class:`ContainerAccess`, the Docker API).

A :class:`harness.cluster.node.Node` keeps the node's identity (role, node id, alias, ports, name) and
delegates every process and file operation to ``node.access``: kill / stop / start / pause / unpause,
a command as root, reading a file or a directory listing (read-only), the logs, whether the process
finished its startup. Faults (harness/nemesis/) and the observers act only through it, so a node the
harness does not start — a host reached over SSH (``--nodes FILE``: :class:`harness.remote.ssh.SshAccess`)
— takes the same faults and gives the same ground truth as a container the harness started.

:meth:`NodeAccess.describe` says which commands an operation WOULD issue, without connecting
(``run --plan`` prints them per node).
"""

from __future__ import annotations

import io
import shlex
import tarfile
from datetime import datetime

from harness import docker_util
from harness.errors import ClusterError

# the operations describe() knows (the faults' vocabulary of host changes)
OPERATIONS = ("kill", "stop", "start", "pause", "unpause", "iptables", "netem")


class NodeAccess:
    """One node's process and files, reached somehow. Subclasses implement every method."""

    kind = "?"          # "container" | "ssh"

    def where(self) -> str:
        """Where the node is, for messages and the plan: ``container kc-x-b1``, ``ssh kafka@10.0.0.5:22``."""
        raise NotImplementedError

    def status(self) -> str:
        """``running`` | ``paused`` | ``exited`` | ``missing`` | ``unreachable``."""
        raise NotImplementedError

    def kill(self, signal: str = "SIGKILL") -> None:
        raise NotImplementedError

    def stop(self, timeout: int = 60) -> None:
        """Clean stop (SIGTERM or the node's own stop command; a broker runs controlled shutdown)."""
        raise NotImplementedError

    def start(self) -> None:
        raise NotImplementedError

    def pause(self) -> None:
        raise NotImplementedError

    def unpause(self) -> None:
        raise NotImplementedError

    def exec(self, cmd: list[str] | str, check: bool = False) -> tuple[int, str]:
        """Run ``cmd`` privileged (root in a container, sudo where configured over SSH): ``(rc, output)``."""
        raise NotImplementedError

    def read_file(self, path: str) -> bytes:
        raise NotImplementedError

    def list_dir(self, path: str) -> list[str]:
        raise NotImplementedError

    def logs(self, tail: int = 50) -> str:
        raise NotImplementedError

    def started_since_start(self, line: str) -> bool:
        """The process is running and logged ``line`` since it last started ("" = running is enough)."""
        raise NotImplementedError

    def describe(self, op: str, **kw) -> list[str]:
        """The commands ``op`` (one of :data:`OPERATIONS`) would issue on this node, without
        connecting. ``iptables`` and ``netem`` take ``script=`` (the shell script a fault runs)."""
        raise NotImplementedError

    def close(self) -> None:
        """Release connections (nothing to release by default)."""


def _cmd_text(cmd: list[str] | str) -> str:
    return cmd if isinstance(cmd, str) else " ".join(shlex.quote(c) for c in cmd)


class ContainerAccess(NodeAccess):
    """A container the harness started, through the Docker API (``docker exec`` as root, never privileged)."""

    kind = "container"

    def __init__(self, container_name: str):
        self.name = container_name

    def where(self) -> str:
        return f"container {self.name}"

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

    def ip(self, network: str) -> str | None:
        nets = self.container.attrs["NetworkSettings"]["Networks"]
        return (nets.get(network) or {}).get("IPAddress") or None

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
            raise ClusterError(f"{self.name}: `{_cmd_text(cmd)}` failed: {out.strip()[:300]}")
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

    def started_since_start(self, line: str) -> bool:
        c = self.container
        if c.status != "running":
            return False
        if not line:
            return True
        since_s = c.attrs["State"].get("StartedAt", "")
        try:
            since = datetime.fromisoformat(since_s[:26].rstrip("Z") + "+00:00") if since_s else None
        except ValueError:
            since = None
        logs = c.logs(since=since) if since else c.logs(tail=2000)
        return line.encode() in logs

    def describe(self, op: str, **kw) -> list[str]:
        n = self.name
        if op == "kill":
            return [f"docker kill --signal {kw.get('signal', 'SIGKILL')} {n}"]
        if op == "stop":
            return [f"docker stop --time {kw.get('timeout', 60)} {n}"]
        if op in ("start", "pause", "unpause"):
            return [f"docker {op} {n}"]
        if op in ("iptables", "netem"):
            return [f"docker exec --user root {n} sh -c {shlex.quote(kw.get('script', '...'))}"]
        raise ValueError(f"unknown operation {op!r} (one of {', '.join(OPERATIONS)})")
