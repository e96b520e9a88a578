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

A copy on the hosts: with a ``mirror`` (harness/cluster/remote_cluster.py gives one), every line about a
node is also appended to a file on that node's host (the harness user's state dir there,
``~/.local/state/kafka-chaos/remote/<name>.jsonl``) right after the local line and before the change:
another harness machine pointed at the same nodes file reads those copies (:meth:`adopt`), so what a
harness that died on one machine left is found and undone from another. The local file stays the
authority: a copy that cannot be written does not stop the run (the change goes to the same host, which
then is most likely unreachable too).
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
HOST_STATE_DIR = "~/.local/state/kafka-chaos/remote"     # the copies on the hosts (the SSH user's home)


def pending_of(entries: list[dict]) -> list[dict]:
    """The ``did`` lines of ``entries`` with no ``undone`` line (oldest first)."""
    undone = {e.get("id") for e in entries if e.get("op") == "undone"}
    return [e for e in entries if e.get("op") == "did" and e.get("id") not in undone and e.get("kind") in KINDS
            and isinstance(e.get("node"), str) and isinstance(e.get("undo"), str)]


def parse_lines(text: str) -> list[dict]:
    """JSON lines; a line cut by a crash (or not an object) is skipped."""
    out = []
    for ln in text.splitlines():
        try:
            e = json.loads(ln)
        except ValueError:
            continue
        if isinstance(e, dict):
            out.append(e)
    return out


def state_dir() -> Path:
    base = os.environ.get("KAFKA_CHAOS_STATE")
    root = Path(base).expanduser() if base else Path.home() / ".local" / "state" / "kafka-chaos"
    return root / "remote"


class Journal:
    """The journal of one nodes file (``name``: the file's ``name`` key). ``owner``: this process as an
    owner ({"pid", "host", "start"}); ``alive(pid, host, start)``: True / False / None (cannot tell) —
    harness/cluster/owner.py's, passed in by the cluster layer."""

    def __init__(self, name: str, owner: dict, alive: Callable, path: Path | None = None,
                 mirror: Callable[[str, dict], None] | None = None):
        self.name = name
        self.owner = owner
        self.alive = alive
        self.path = Path(path) if path else state_dir() / f"{name}.jsonl"
        self.mirror = mirror          # mirror(node, line): append the line to the node's host copy

    def _mirror(self, node: str, entry: dict) -> None:
        if self.mirror is not None:
            try:
                self.mirror(node, entry)
            except Exception:  # noqa: BLE001 - the copy is for other machines; the local line is the authority
                pass

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
        entry = {"op": "did", "id": eid, "node": node, "kind": kind, "undo": undo, "t": time.time(),
                 "owner": self.owner, **detail}
        self._append(entry)
        self._mirror(node, entry)
        return eid

    def done(self, eid: str) -> None:
        entry = {"op": "undone", "id": eid, "t": time.time()}
        self._append(entry)
        node = next((e["node"] for e in self.read() if e.get("op") == "did" and e.get("id") == eid), None)
        if node is not None:
            self._mirror(node, entry)

    def adopt(self, lines: list[dict]) -> list[dict]:
        """Take in the pending changes of a host's copy (:func:`pending_of` of its lines) that this journal
        does not know (another machine's harness made them, or this machine's state was lost), so that
        :meth:`undo` treats them as its own lines; returns those adopted. Their owners ran elsewhere:
        ``alive`` cannot judge them (None), so only ``which="all"`` (``cleanup --nodes``) undoes them."""
        known = {e.get("id") for e in self.read()}
        new = [e for e in pending_of(lines) if e.get("id") not in known]
        for e in new:
            self._append(e)
        return new

    def read(self) -> list[dict]:
        try:
            return parse_lines(self.path.read_text(encoding="utf-8"))   # a cut line: never made
        except FileNotFoundError:
            return []

    def pending(self, node: str | None = None, kind: str | None = None) -> list[dict]:
        """The changes not undone yet (oldest first), of ``node`` / ``kind`` when given."""
        return [e for e in pending_of(self.read())
                if (node is None or e["node"] == node) and (kind is None or e["kind"] == kind)]

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
