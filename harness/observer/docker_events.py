"""Docker's own account of the cluster's containers, recorded as ``docker.event`` events.

The verdict needs to tell a fault the harness injected from one it did not (a container removed,
stopped or paused from outside, the OOM killer): the nemesis records every fault it applies with its
window, and this watcher records what Docker saw happen to each container of the cluster. A stop or
removal outside every fault window of that container is an environment failure
(:func:`harness.checkers.verdict.environment_failures`).

One thread streams the engine's events for the cluster's label; :meth:`DockerEventWatcher.stop` asks
the engine once more for everything up to now (``since`` / ``until``), so an event still in flight
when the run ends is not lost.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from harness.docker_util import LABEL_CLUSTER, LABEL_NODE_ID, LABEL_ROLE

ACTIONS = ("kill", "die", "stop", "start", "restart", "pause", "unpause", "destroy", "oom")

Emit = Callable[..., object]


class DockerEventWatcher:
    """Records container events of cluster ``cluster_name`` as ``docker.event``:
    ``{"container", "role", "node_id", "action", "wall_docker", "exit_code", "signal"}``.

    ``wall_docker`` is Docker's own time of the event (Unix seconds, from ``timeNano``); ``wall`` is when
    the harness recorded it."""

    def __init__(self, docker_client, cluster_name: str, emit: Emit):
        self.client = docker_client
        self.cluster_name = cluster_name
        self.emit = emit
        self._since = time.time() - 1.0
        self._seen: set[tuple] = set()
        self._lock = threading.Lock()
        self._stream = None
        self._thread: threading.Thread | None = None
        self.error: str | None = None

    def _filters(self) -> dict:
        return {"type": "container", "label": f"{LABEL_CLUSTER}={self.cluster_name}", "event": list(ACTIONS)}

    def start(self) -> "DockerEventWatcher":
        self._stream = self.client.events(since=int(self._since), filters=self._filters(), decode=True)
        self._thread = threading.Thread(target=self._run, name=f"docker-events-{self.cluster_name}", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            for ev in self._stream:
                self._record(ev)
        except Exception as e:  # noqa: BLE001 - closing the stream ends the loop with an error too
            if self._stream is not None and not getattr(self._stream, "_closed", False):
                self.error = f"{type(e).__name__}: {e}"

    def _record(self, ev: dict) -> None:
        action = (ev.get("Action") or ev.get("status") or "").split(":")[0]
        if action not in ACTIONS:
            return
        attrs = (ev.get("Actor") or {}).get("Attributes") or {}
        key = (ev.get("id"), action, ev.get("timeNano"))
        with self._lock:
            if key in self._seen:
                return
            self._seen.add(key)
        node_id = attrs.get(LABEL_NODE_ID)
        self.emit("docker.event", container=attrs.get("name"), role=attrs.get(LABEL_ROLE),
                  node_id=int(node_id) if node_id and node_id.isdigit() else None, action=action,
                  wall_docker=round(int(ev.get("timeNano") or 0) / 1e9, 6) or ev.get("time"),
                  exit_code=_int(attrs.get("exitCode")), signal=_int(attrs.get("signal")))

    def stop(self) -> None:
        """Stop streaming; first fetch (bounded) whatever the stream has not delivered yet."""
        try:
            for ev in self.client.events(since=int(self._since), until=f"{time.time():.6f}",
                                         filters=self._filters(), decode=True):
                self._record(ev)
        except Exception as e:  # noqa: BLE001 - the record says the account may be partial
            self.error = self.error or f"{type(e).__name__}: {e}"
        stream, self._stream = self._stream, None
        if stream is not None:
            try:
                stream._closed = True
                stream.close()
            except Exception:  # noqa: BLE001
                pass
        if self._thread is not None:
            self._thread.join(timeout=5)


def _int(v) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None
