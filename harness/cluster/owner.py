"""Who owns what the harness leaves on the host: a process (pid, host name, start time).

Every container, network and volume carries its owner in labels (harness/cluster/cluster.py), and every
in-progress run record directory ``RUNS/.tmp-<id>/`` holds a small ``.owner`` file
(:func:`mark_record_dir`). A registry entry per record directory (under ``$TMPDIR/kafka-chaos-records/``)
lets any later ``kafka-chaos`` command find the directories of owners that died (SIGKILL, a crash)
wherever their runs directory was; :mod:`harness.cluster.lifecycle` removes them.

An owner is *dead* when it ran on this host and no process with its pid and start time exists (the
start time tells a reused pid apart). Owners of another host are never judged. This module imports
nothing of the harness, so the run record code can use it.
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
from pathlib import Path

OWNER_FILE = ".owner"


def registry_dir() -> Path:
    return Path(os.environ.get("KAFKA_CHAOS_RECORD_REGISTRY", Path(tempfile.gettempdir()) / "kafka-chaos-records"))


def process_start(pid: int) -> str | None:
    """The start time of process ``pid`` (clock ticks after boot, /proc/PID/stat field 22), None when
    there is no such process or no /proc."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read().decode(errors="replace")
    except OSError:
        return None
    # the command name (field 2) is in parentheses and may hold spaces: split after its last ')'
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else None


def this_owner() -> dict[str, str]:
    """This process as an owner: {"pid", "host", "start"}."""
    pid = os.getpid()
    return {"pid": str(pid), "host": socket.gethostname(), "start": process_start(pid) or ""}


def owner_alive(pid: str | int | None, host: str | None, start: str | None = None) -> bool | None:
    """True when the owner lives, False when it ran on this host and is gone, None when it cannot be
    judged here (another host, or no pid): such resources are never reaped automatically."""
    if host != socket.gethostname() or pid is None or not str(pid).isdigit():
        return None
    pid = int(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass                      # it exists, owned by another user
    if start:
        now = process_start(pid)
        if now is not None and now != start:
            return False          # the pid was reused by a later process
    return True


def mark_record_dir(tmp_dir: Path) -> None:
    """Write ``.owner`` into an in-progress record directory and register it (best effort: a full
    disk or a read-only /tmp must not stop a run; an unmarked directory is only never reaped)."""
    owner = this_owner()
    try:
        (tmp_dir / OWNER_FILE).write_text(json.dumps(owner) + "\n", encoding="utf-8")
    except OSError:
        return
    try:
        reg = registry_dir()
        reg.mkdir(parents=True, exist_ok=True)
        entry = reg / f"{tmp_dir.name.removeprefix('.tmp-')}.json"
        entry.write_text(json.dumps({"dir": str(tmp_dir.absolute()), **owner}) + "\n", encoding="utf-8")
    except OSError:
        pass


def read_owner(tmp_dir: Path) -> dict | None:
    """The ``.owner`` of a record directory, None when it has none (or it is unreadable)."""
    try:
        d = json.loads((tmp_dir / OWNER_FILE).read_text(encoding="utf-8"))
        return d if isinstance(d, dict) else None
    except (OSError, ValueError):
        return None
