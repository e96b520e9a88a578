"""Every change the harness makes on a host it does not own, recorded locally BEFORE it is made, so
that it can be undone whatever happens to the harness.

One JSON-lines file per nodes file (``$KAFKA_CHAOS_STATE/remote/<name>.jsonl``, default
``~/.local/state/kafka-chaos/remote/<name>.jsonl``). A change is a ``did`` line — the node, the kind
(``chains``: the run's iptables chains ``KC_<run>_IN/OUT`` and their hooks; ``paused``: a SIGSTOPped
process; ``stopped``: a killed or cleanly stopped service; ``qdisc``: a netem/tbf root qdisc), the shell
script that undoes it and the harness process that made it — written and fsynced before the command
runs on the host; an ``undone`` line follows once it is undone (a heal that unpaused or started the
node, the cluster's release, ``kafka-chaos cleanup --nodes FILE``).

What a pending line names is undone: by the run itself on heal and when it releases the cluster
(also after Ctrl-C / SIGTERM: the runner's cleanup runs under harness/cluster/lifecycle.Shield); by the
next command run against the same nodes file when its owner died (SIGKILL); by
``kafka-chaos cleanup --nodes FILE``. Undo scripts are idempotent (a chain already gone, a process
already running are not errors), so undoing twice is harmless. Only chains a line names are deleted.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import time
from pathlib import Path
from typing import Callable


KINDS = ("chains", "paused", "stopped", "qdisc")


def state_dir() -> Path:
    base = os.environ.get("KAFKA_CHAOS_STATE")
    root = Path(base).expanduser() if base else Path.home() / ".local" / "state" / "kafka-chaos"
    return root / "remote"


class Journal:
    """The journal of one nodes file (``name``: the file's ``name`` key). ``owner``: this process as an
    owner ({"pid", "host", "start"}); ``alive(pid, host, start)``: True / False / None (cannot tell) —
    harness/cluster/owner.py's, passed in by the cluster layer."""

    def __init__(self, name: str, owner: dict, alive: Callable, path: Path | None = None):
        self.name = name
        self.owner = owner
        self.alive = alive
        self.path = Path(path) if path else state_dir() / f"{name}.jsonl"

    def _append(self, entry: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a+b") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            data = (json.dumps(entry, sort_keys=True) + "\n").encode()
            end = fh.seek(0, os.SEEK_END)
            if end:
                fh.seek(end - 1)
                if fh.read(1) != b"\n":        # a line cut by a crash: never glue a new line to it
                    data = b"\n" + data
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
            fcntl.flock(fh, fcntl.LOCK_UN)

    def record(self, node: str, kind: str, undo: str, **detail) -> str:
        """Note a change about to be made on ``node`` (written and fsynced on return); its id."""
        if kind not in KINDS:
            raise ValueError(f"unknown journal kind {kind!r}")
        eid = secrets.token_hex(6)
        self._append({"op": "did", "id": eid, "node": node, "kind": kind, "undo": undo, "t": time.time(),
                      "owner": self.owner, **detail})
        return eid

    def done(self, eid: str) -> None:
        self._append({"op": "undone", "id": eid, "t": time.time()})

    def read(self) -> list[dict]:
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        out = []
        for ln in lines:
            try:
                out.append(json.loads(ln))
            except ValueError:
                continue          # a line cut by a crash mid-write: its change was never made
        return out

    def pending(self, node: str | None = None, kind: str | None = None) -> list[dict]:
        """The changes not undone yet (oldest first), of ``node`` / ``kind`` when given."""
        entries = self.read()
        undone = {e["id"] for e in entries if e.get("op") == "undone"}
        return [e for e in entries if e.get("op") == "did" and e["id"] not in undone
                and (node is None or e["node"] == node) and (kind is None or e["kind"] == kind)]

    def done_all(self, node: str, kind: str) -> None:
        """Every pending ``kind`` change of ``node`` is undone (a heal unpaused / started it)."""
        for e in self.pending(node, kind):
            self.done(e["id"])

    def undo(self, run: Callable[[str, str], None], which: str = "dead") -> tuple[int, list[str]]:
        """Undo pending changes, newest first: ``run(node, script)`` runs a script on a node (raising
        on failure). ``which``: ``mine`` (this process's), ``dead`` (owners that died on this host),
        ``all`` but those of a live harness process. Returns (how many undone, error lines)."""
        me = self.owner
        n, errors = 0, []
        for e in reversed(self.pending()):
            o = e.get("owner") or {}
            mine = (o.get("pid"), o.get("host"), o.get("start")) == (me["pid"], me["host"], me["start"])
            alive = self.alive(o.get("pid"), o.get("host"), o.get("start"))
            if which == "mine" and not mine:
                continue
            if which == "dead" and alive is not False:
                continue
            if which == "all" and alive and not mine:
                continue
            try:
                run(e["node"], e["undo"])
            except Exception as ex:  # noqa: BLE001 - one host's failure must not stop the others' undo
                errors.append(f"{e['node']}: undoing {e['kind']} failed: {ex}")
                continue
            self.done(e["id"])
            n += 1
        self.compact()
        return n, errors

    def compact(self) -> None:
        """Drop the file once nothing in it is pending (under the lock: a concurrent record wins)."""
        if not self.path.exists():
            return
        with open(self.path, "a+", encoding="utf-8") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            if not self.pending():
                fh.truncate(0)
            fcntl.flock(fh, fcntl.LOCK_UN)
