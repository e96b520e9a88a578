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
    Also ``leader_change_s``: of the partitions whose leader (last observed before the fault) was
    a faulted broker, the longest time from the fault's start to the first observation of another
    live leader (``leader`` >= 0, not a faulted broker), and ``leaders_moved`` / ``leaders_kept``:
    how many such partitions got one in the window's run / did not. Observations: ZooKeeper's
    partition state (``zk.partition_state``), Metadata samples (``admin.metadata``) and the KRaft
    metadata log (``meta.partition``, placed in run time by its append time ``time_ms``); the
    earliest of them counts, so a sampled source bounds the precision by its interval.
``group_join_s``, ``first_read_s``, ``first_ack_s``, ``unavailable_s``, ``leader_change_s``
    the largest of each over the clients / windows (None when none has one).
``notes``
    one line per subscribing consumer that never got an assignment: the run says why it read nothing.
"""

from __future__ import annotations

from harness.record.events import CLIENT_ASSIGN, GROUP_ASSIGN
from harness.record.windows import fault_windows

ASSIGN_EVENTS = (GROUP_ASSIGN, CLIENT_ASSIGN)


def _r(x):
    return None if x is None else round(float(x), 3)


def _max(values):
    vs = [v for v in values if v is not None]
    return max(vs) if vs else None


def measure(events) -> dict:
    events = list(events)
    started: dict[str, float] = {}
    roles: dict[str, str] = {}
    subscribes: set[str] = set()
    first: dict[str, dict[str, float]] = {}      # process -> {"assign"|"read"|"ack": t}
    acks: dict = {}                               # partition -> [t of acknowledged writes]
    leaders: list = []                            # (t, tp, leader) observations, any source
    wall_offset = None                            # t - wall of the run (places meta.partition's time_ms)
    metas: list = []
    last_t = 0.0
    for e in events:
        t = e.get("t")
        if not isinstance(t, (int, float)):
            continue
        typ = e.get("type")
        if typ == "meta.partition":               # emitted after the run: its own time is time_ms
            if isinstance(e.get("time_ms"), int) and e.get("leader") is not None:
                metas.append((e["time_ms"] / 1000.0, (e.get("topic"), e.get("partition")), e["leader"]))
            continue
        last_t = max(last_t, t)
        if wall_offset is None and isinstance(e.get("wall"), (int, float)):
            wall_offset = t - e["wall"]
        if typ == "zk.partition_state":
            if e.get("leader") is not None and not e.get("deleted"):
                leaders.append((t, (e.get("topic"), e.get("partition")), e["leader"]))
        elif typ == "admin.metadata":
            for q in e.get("partitions") or []:
                if not q.get("error") and q.get("leader") is not None:
                    leaders.append((t, (q.get("topic"), q.get("partition")), q["leader"]))
        elif typ == "client":
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

    # fault_id -> [fault, target, start, end] of every applied fault (its end: the last fault.end of its id)
    windows: dict = {}
    faulted: dict = {}                            # fault_id -> broker ids it hit
    for fw in fault_windows(events, match="id", clock="t", positions="paired"):
        faulted[fw.fault_id] = {b for b in fw.start.get("broker_ids") or [] if isinstance(b, int)}
        if not fw.never_applied:
            windows[fw.fault_id] = [fw.fault, fw.start.get("target"), fw.start["t"],
                                    fw.ends[-1]["t"] if fw.ends else None]
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

    if metas and wall_offset is not None:
        leaders += [(tm + wall_offset, tp, ld) for tm, tp, ld in metas]
    leaders.sort(key=lambda x: x[0])
    out_windows = []
    for fid, (fault, target, start, end) in windows.items():
        stop = end if end is not None else last_t
        worst, worst_p = None, None
        for part, ts in acks.items():
            gap = _longest_gap(ts, start, stop, last_t)
            if gap is not None and (worst is None or gap > worst):
                worst, worst_p = gap, part
        change, moved, kept = _leader_change(leaders, faulted.get(fid) or set(), start)
        out_windows.append({"fault_id": fid, "fault": fault, "target": target, "start": _r(start), "end": _r(end),
                            "unavailable_s": _r(worst), "partition": worst_p, "leader_change_s": _r(change),
                            "leaders_moved": moved, "leaders_kept": kept})
    return {"clients": clients, "windows": out_windows,
            "group_join_s": _max(c["group_join_s"] for c in clients.values()),
            "first_read_s": _max(c["first_read_s"] for c in clients.values()),
            "first_ack_s": _max(c["first_ack_s"] for c in clients.values()),
            "unavailable_s": _max(w["unavailable_s"] for w in out_windows),
            "leader_change_s": _max(w["leader_change_s"] for w in out_windows),
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


def _leader_change(leaders: list, hit: set, start: float) -> tuple[float | None, int, int]:
    """(longest seconds from ``start`` to another live leader, partitions that got one, partitions that
    did not) over the partitions whose last leader observed at or before ``start`` is in ``hit``."""
    if not hit:
        return None, 0, 0
    before: dict = {}
    i = 0
    while i < len(leaders) and leaders[i][0] <= start:
        before[leaders[i][1]] = leaders[i][2]
        i += 1
    waiting = {tp for tp, ld in before.items() if ld in hit}
    if not waiting:
        return None, 0, 0
    moved: dict = {}
    for t, tp, ld in leaders[i:]:
        if tp in waiting and tp not in moved and ld >= 0 and ld not in hit:
            moved[tp] = t - start
            if len(moved) == len(waiting):
                break
    return (max(moved.values()) if moved else None), len(moved), len(waiting) - len(moved)
