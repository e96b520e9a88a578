"""Measured facts of a run, from its client events: how long the broker took to do what clients wait on.

Pure: events in, a dict out (``coverage["measured"]`` in verdict.json; docs/checkers.md "Measured
facts"). Nothing here decides a verdict; the facts say what the run saw, so a certificate can report
them and a slow broker is told as slow instead of hidden behind a timeout:

``clients``
    per client, seconds from its ``client.life`` ``started`` to its first partition assignment
    (``group_join_s``: ``group.assign`` / ``client.assign``, consumers that subscribe), its first read
    (``first_read_s``) and its first acknowledged write (``first_ack_s``); None when it never happened.
``windows``
    per applied fault (``fault.start`` .. ``fault.end``), ``unavailable_s``: the longest time one
    partition went without an acknowledged write, over the gaps that overlap the window (from the
    partition's last acknowledgement before the gap to its first after; a partition never acknowledged
    again counts to the end of the run), and that ``partition``.
``group_join_s``, ``first_read_s``, ``first_ack_s``, ``unavailable_s``
    the largest of each over the clients / windows (None when none has one).
``notes``
    one line per subscribing consumer that never got an assignment: the run says why it read nothing.
"""

from __future__ import annotations

ASSIGN_EVENTS = ("group.assign", "client.assign")


def fault_never_applied(end: dict) -> bool:
    """Whether a ``fault.end`` says its fault was never applied (skipped, or its target not resolved): it
    opened no window."""
    err = str(end.get("error") or "")
    return end.get("ok") is False and (err.startswith("skipped") or err.startswith("cannot resolve"))


def _r(x):
    return None if x is None else round(float(x), 3)


def _max(values):
    vs = [v for v in values if v is not None]
    return max(vs) if vs else None


def measure(events) -> dict:
    started: dict[str, float] = {}
    roles: dict[str, str] = {}
    subscribes: set[str] = set()
    first: dict[str, dict[str, float]] = {}      # process -> {"assign"|"read"|"ack": t}
    acks: dict = {}                               # partition -> [t of acknowledged writes]
    windows: dict = {}                            # fault_id -> [fault, target, start, end]
    last_t = 0.0
    for e in events:
        t = e.get("t")
        if not isinstance(t, (int, float)):
            continue
        last_t = max(last_t, t)
        typ = e.get("type")
        if typ == "client":
            if e.get("phase") != "ok":
                continue
            f = e.get("f")
            if f == "send":
                first.setdefault(e.get("process"), {}).setdefault("ack", t)
                acks.setdefault(e.get("partition"), []).append(t)
            elif f == "poll":
                first.setdefault(e.get("process"), {}).setdefault("read", t)
        elif typ == "client.life":
            p = e.get("process")
            if e.get("state") == "started":
                started.setdefault(p, t)
            roles.setdefault(p, e.get("role") or "unknown")
        elif typ == "client.config":
            cfg = e.get("config") or {}
            roles.setdefault(e.get("process"), e.get("role") or "unknown")
            if e.get("role") == "consumer" and cfg.get("mode") == "subscribe":
                subscribes.add(e.get("process"))
        elif typ in ASSIGN_EVENTS:
            if e.get("partitions"):
                first.setdefault(e.get("process"), {}).setdefault("assign", t)
        elif typ == "fault.start":
            windows[e.get("fault_id")] = [e.get("fault"), e.get("target"), t, None]
        elif typ == "fault.end":
            w = windows.get(e.get("fault_id"))
            if w is not None:
                w[3] = t
                if fault_never_applied(e):
                    del windows[e.get("fault_id")]

    for ts in acks.values():
        ts.sort()          # clients emit from their own threads: nearly, not strictly, in time order
    clients = {}
    notes = []
    for p in sorted(set(started) | set(first), key=str):
        t0, got = started.get(p), first.get(p, {})

        def since(key, t0=t0, got=got):
            return _r(got[key] - t0) if t0 is not None and key in got else None
        clients[p] = {"role": roles.get(p, "unknown"), "group_join_s": since("assign"),
                      "first_read_s": since("read"), "first_ack_s": since("ack")}
        if p in subscribes and "assign" not in got and t0 is not None:
            notes.append(f"consumer {p} subscribed at {t0:.1f} s and got no partition assignment by the end of "
                         f"the run ({last_t:.1f} s): its group join (JoinGroup/SyncGroup) never completed")

    out_windows = []
    for fid, (fault, target, start, end) in windows.items():
        stop = end if end is not None else last_t
        worst, worst_p = None, None
        for part, ts in acks.items():
            gap = _longest_gap(ts, start, stop, last_t)
            if gap is not None and (worst is None or gap > worst):
                worst, worst_p = gap, part
        out_windows.append({"fault_id": fid, "fault": fault, "target": target, "start": _r(start), "end": _r(end),
                            "unavailable_s": _r(worst), "partition": worst_p})
    return {"clients": clients, "windows": out_windows,
            "group_join_s": _max(c["group_join_s"] for c in clients.values()),
            "first_read_s": _max(c["first_read_s"] for c in clients.values()),
            "first_ack_s": _max(c["first_ack_s"] for c in clients.values()),
            "unavailable_s": _max(w["unavailable_s"] for w in out_windows),
            "notes": notes}


def _longest_gap(ts: list[float], start: float, stop: float, last_t: float) -> float | None:
    """The longest interval between consecutive acknowledgements (``ts``, ascending as recorded) that
    overlaps [start, stop]; after the last one, the gap runs to the end of the run. None: no
    acknowledgement before ``stop`` (the partition was not being written then)."""
    if not ts or ts[0] > stop:
        return None
    best = 0.0
    prev = ts[0]
    for t in ts[1:]:
        if t >= start and prev <= stop:
            best = max(best, t - prev)
        if prev > stop:
            break
        prev = t
    if prev <= stop and ts[-1] == prev:
        best = max(best, last_t - prev)      # never acknowledged again after the window began
    return best
