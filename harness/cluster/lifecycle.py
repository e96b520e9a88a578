"""Nothing the harness makes outlives its owner: reaping what dead owners left, and cleanup that a
second Ctrl-C cannot cut short.

- :func:`reap` finds (and removes) the containers, networks and volumes labelled ``kafka-chaos=1``
  whose owner process died on this host, and in-progress run record directories ``.tmp-<id>`` whose
  owner died (harness/cluster/owner.py). Resources of a live owner, of another host, and ``cluster up``
  clusters (label ``kafka-chaos.persistent=1``, kept until ``cluster down``) are left alone unless
  ``everything`` is asked (``kafka-chaos cleanup`` without ``--dead-only``).
- :func:`reap_at_start` is what every ``kafka-chaos`` command runs first: silent and cheap when
  there is nothing to reap (one listing per kind), and it gives up at once when no Docker engine
  answers (a short timeout when one hangs).
- :class:`Shield` defers SIGINT/SIGTERM while cleanup runs: a later signal prints one line saying
  cleanup is finishing and is delivered (as KeyboardInterrupt) once cleanup is done. SIGKILL cannot
  be deferred: what a killed process leaves is reaped by the next command.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import socket
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable
from urllib.parse import quote

from harness import docker_util
from harness.cluster import owner as owners
from harness.docker_util import LABEL, LABEL_CLUSTER, LABEL_OWNER_HOST, LABEL_OWNER_PID, LABEL_OWNER_START, LABEL_PERSISTENT

START_TIMEOUT_S = 5.0     # the start-up reap's Docker timeout (an engine that hangs must not hang every command)


@dataclass
class Leftover:
    """One thing to remove: ``kind`` container | network | volume | record."""
    kind: str
    name: str
    owner: str           # "pid 123 on host (dead)", "persistent", ...
    remove: Callable[[], None]
    cluster: str | None = None     # the cluster a Docker object belongs to

    def line(self) -> str:
        return f"{self.kind:9} {self.name}  ({self.owner})"


# -- deciding ------------------------------------------------------------------------------------
def _owner_state(labels: dict) -> tuple[bool | None, str]:
    """(alive?, description) of a labelled object's owner; alive None: cannot be judged here."""
    pid, host = labels.get(LABEL_OWNER_PID), labels.get(LABEL_OWNER_HOST)
    if labels.get(LABEL_PERSISTENT) == "1":
        return None, f"cluster up, kept until `cluster down`; created by pid {pid}"
    alive = owners.owner_alive(pid, host, labels.get(LABEL_OWNER_START))
    state = {True: "alive", False: "dead", None: "another host" if host else "no owner label"}[alive]
    return alive, f"owner pid {pid} on {host}, {state}"


def _docker_leftovers(client, everything: bool, pids: set[int] | None) -> list[Leftover]:
    api = client.api
    out: list[Leftover] = []

    def take(labels: dict) -> tuple[bool, str]:
        alive, why = _owner_state(labels or {})
        if pids is not None and labels.get(LABEL_OWNER_PID) not in {str(p) for p in pids}:
            return False, why
        return (everything or alive is False), why

    def quiet(fn) -> Callable[[], None]:
        def run() -> None:
            import docker.errors  # lazy: docker-py, kept off the CLI's start-up
            try:
                fn()
            except docker.errors.NotFound:     # removed meanwhile (its owner's own cleanup, another reaper)
                pass
            except docker.errors.APIError as e:  # 409: another reaper is removing it right now
                if e.status_code != 409 or "in progress" not in str(e):
                    raise
        return run

    for c in api.containers(all=True, filters={"label": f"{LABEL}=1"}):
        ok, why = take(c.get("Labels") or {})
        if ok:
            out.append(Leftover("container", c["Names"][0].lstrip("/"), why,
                                quiet(lambda cid=c["Id"]: api.remove_container(cid, force=True, v=True)),
                                (c.get("Labels") or {}).get(LABEL_CLUSTER)))
    for n in api.networks(filters={"label": f"{LABEL}=1"}):
        ok, why = take(n.get("Labels") or {})
        if ok:
            out.append(Leftover("network", n["Name"], why, quiet(lambda nid=n["Id"]: api.remove_network(nid)),
                                (n.get("Labels") or {}).get(LABEL_CLUSTER)))
    for v in (api.volumes(filters={"label": f"{LABEL}=1"}) or {}).get("Volumes") or []:
        ok, why = take(v.get("Labels") or {})
        if ok:
            out.append(Leftover("volume", v["Name"], why,
                                quiet(lambda name=v["Name"]: api.remove_volume(name, force=True)),
                                (v.get("Labels") or {}).get(LABEL_CLUSTER)))
    return out


def _record_dirs(runs_dirs: Iterable[str | os.PathLike]) -> dict[Path, Path | None]:
    """In-progress record directories → their registry entry (None when found by scanning a runs dir).
    Registry entries whose directory is gone (published or removed) are dropped on the way."""
    found: dict[Path, Path | None] = {}
    reg = owners.registry_dir()
    try:
        entries = list(reg.glob("*.json"))
    except OSError:
        entries = []
    for entry in entries:
        try:
            d = Path(json.loads(entry.read_text(encoding="utf-8"))["dir"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if d.name.startswith(".tmp-") and d.is_dir():
            found[d] = entry
        else:
            try:
                entry.unlink()
            except OSError:
                pass
    for rd in runs_dirs:
        try:
            for d in Path(rd).glob(".tmp-*"):
                if d.is_dir():
                    found.setdefault(d.absolute(), None)
        except OSError:
            continue
    return found


def _record_leftovers(runs_dirs: Iterable[str | os.PathLike], pids: set[int] | None) -> list[Leftover]:
    out = []
    for d, entry in _record_dirs(runs_dirs).items():
        o = owners.read_owner(d)
        if o is None:
            continue      # no owner marker (written before markers existed): never removed automatically
        if pids is not None and str(o.get("pid")) not in {str(p) for p in pids}:
            continue
        if owners.owner_alive(o.get("pid"), o.get("host"), o.get("start")) is not False:
            continue

        def remove(d=d, entry=entry) -> None:
            shutil.rmtree(d, ignore_errors=True)
            if entry is not None:
                try:
                    entry.unlink()
                except OSError:
                    pass
        out.append(Leftover("record", str(d), f"owner pid {o.get('pid')} on {o.get('host')}, dead", remove))
    return out


# -- reaping -------------------------------------------------------------------------------------
def find(client=None, *, everything: bool = False, runs_dirs: Iterable[str | os.PathLike] = (),
         pids: Iterable[int] | None = None, docker: bool = True) -> list[Leftover]:
    """What :func:`reap` would remove (containers first, then networks, volumes, record directories).

    ``everything``: every labelled object, whoever owns it (record directories still only of dead
    owners: a live run is writing into its own). ``pids``: only what these owners left."""
    pids = set(pids) if pids is not None else None
    out: list[Leftover] = []
    if docker:
        out += _docker_leftovers(client or docker_util.client(), everything, pids)
    out += _record_leftovers(runs_dirs, pids)
    return out


def reap(client=None, *, everything: bool = False, runs_dirs: Iterable[str | os.PathLike] = (),
         pids: Iterable[int] | None = None, dry_run: bool = False, docker: bool = True) -> list[Leftover]:
    """Remove what :func:`find` finds (nothing with ``dry_run``); returns it. A Docker object that fails
    to go (the engine refused) is left for the next reap, the others still go."""
    found = find(client, everything=everything, runs_dirs=runs_dirs, pids=pids, docker=docker)
    if dry_run:
        return found
    done = []
    for item in found:
        try:
            item.remove()
            done.append(item)
        except Exception:  # noqa: BLE001 - e.g. a network still in use; the next reap tries again
            pass
    return done


def summary(items: list[Leftover]) -> str:
    """``2 containers, 1 network, 1 record`` (kinds present only)."""
    kinds = ["container", "network", "volume", "record"]
    counts = {k: sum(1 for i in items if i.kind == k) for k in kinds}
    return ", ".join(f"{n} {k}{'s' if n != 1 else ''}" for k, n in counts.items() if n)


class _SocketClient:
    """Listing calls of the Docker API straight over its unix socket (no docker-py import: most commands
    find nothing to reap, and importing docker-py costs more than the three requests); removals go
    through docker-py. ``api`` mirrors the part of docker-py's low-level client :func:`find` uses."""

    def __init__(self, path: str, timeout: float):
        self.path, self.timeout = path, timeout
        self.api = self

    def _get(self, url: str, raw: bool = False):
        class Conn(http.client.HTTPConnection):
            def connect(conn) -> None:  # noqa: N805
                conn.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                conn.sock.settimeout(self.timeout)
                conn.sock.connect(self.path)
        c = Conn("localhost", timeout=self.timeout)
        try:
            c.request("GET", url)
            r = c.getresponse()
            body = r.read()
            if r.status != 200:
                raise OSError(f"Docker API {url}: HTTP {r.status}")
            return body if raw else json.loads(body)
        finally:
            c.close()

    @staticmethod
    def _q(filters: dict) -> str:
        return quote(json.dumps({k: [v] for k, v in filters.items()}))

    def containers(self, all: bool = True, filters: dict | None = None):  # noqa: A002
        return self._get(f"/containers/json?all={int(all)}&filters={self._q(filters or {})}")

    def networks(self, filters: dict | None = None):
        return self._get(f"/networks?filters={self._q(filters or {})}")

    def volumes(self, filters: dict | None = None):
        return self._get(f"/volumes?filters={self._q(filters or {})}")

    def __getattr__(self, name: str):   # remove_container, remove_network, remove_volume
        return getattr(docker_util.client().api, name)


def _quick_client():
    """A client for :func:`find` with a short timeout, or None at once when no engine answers."""
    host = os.environ.get("DOCKER_HOST", "")
    if not host or host.startswith("unix://"):
        path = host[len("unix://"):] if host else "/var/run/docker.sock"
        if not os.path.exists(path):
            return None
        c = _SocketClient(path, START_TIMEOUT_S)
        try:
            c._get("/_ping", raw=True)
        except (OSError, ValueError):
            return None
        return c
    try:
        import docker  # lazy: docker-py, kept off the CLI's start-up
        c = docker.from_env(timeout=START_TIMEOUT_S)
        c.ping()
        return c
    except Exception:  # noqa: BLE001 - no engine: nothing to reap in it
        return None


def reap_at_start(runs_dirs: Iterable[str | os.PathLike] = ()) -> list[Leftover]:
    """Reap dead owners' leftovers before a command runs; one stderr line when something went.
    Never raises (a failing reap must not stop the command the user asked for)."""
    if os.environ.get("KAFKA_CHAOS_NO_REAP") == "1":
        return []
    try:
        quick = _quick_client()
        done = reap(quick, runs_dirs=runs_dirs, docker=quick is not None)
    except Exception:  # noqa: BLE001
        return []
    if done:
        pids = sorted({i.owner.split()[2] for i in done if i.owner.startswith("owner pid")})
        print(f"kafka-chaos: removed {summary(done)} left by dead kafka-chaos processes (pid {', '.join(pids)})",
              file=sys.stderr, flush=True)
    return done


# -- signals during cleanup ----------------------------------------------------------------------
_active = threading.local()


class Shield:
    """Defer SIGINT and SIGTERM between :meth:`start` and :meth:`stop` (also ``with Shield(...):``).

    Only in the main thread (where Python runs signal handlers) and only the outermost shield acts.
    A deferred signal raises KeyboardInterrupt from :meth:`stop` (``deliver=True``)."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, what: str = "cleanup"):
        self.what = what
        self.noted: list[int] = []
        self._saved: dict[int, object] | None = None

    def _note(self, signum, frame) -> None:
        self.noted.append(signum)
        name = signal.Signals(signum).name
        extra = "" if len(self.noted) < 3 else (
            " (SIGKILL would leave the containers to the next kafka-chaos command, which removes them)")
        print(f"kafka-chaos: {name} noted; {self.what} is finishing first, then this stops{extra}",
              file=sys.stderr, flush=True)

    def start(self) -> "Shield":
        if threading.current_thread() is not threading.main_thread() or getattr(_active, "on", False):
            return self
        try:
            self._saved = {s: signal.signal(s, self._note) for s in self.SIGNALS}
        except (ValueError, OSError):   # not the main interpreter / thread
            self._saved = None
            return self
        _active.on = True
        return self

    def stop(self, deliver: bool = True) -> None:
        if self._saved is None:
            return
        for s, h in self._saved.items():
            signal.signal(s, h if h is not None else signal.SIG_DFL)
        self._saved = None
        _active.on = False
        if self.noted and deliver:
            self.noted = []
            raise KeyboardInterrupt

    def __enter__(self) -> "Shield":
        return self.start()

    def __exit__(self, exc_type, exc, tb) -> None:
        # an exception already propagating carries the interruption on; a deferred signal is raised otherwise
        self.stop(deliver=exc_type is None)
