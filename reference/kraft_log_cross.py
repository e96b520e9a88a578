"""The KRaft metadata log against the rest of the run record (used by reference/kraft_log.py):

* L9 (§8.1/§9.8, invariant): every partition state a broker answered in a protocol sample is a state the
  controller committed. A KRaft broker's Metadata answer is its metadata image (``KRaftMetadataCache``:
  replicas and ISR unfiltered for Metadata v1+, the leader replaced by -1 with LEADER_NOT_AVAILABLE when
  it has no live endpoint), and the image is the log applied in order, so ``(leader_epoch, leader, ISR,
  replicas)`` of an answer must equal the state after some ``meta.partition`` of that partition (leader
  not compared on LEADER_NOT_AVAILABLE / LISTENER_NOT_FOUND entries). Judged only when the record says
  the history is complete (metadata ``observer.complete``; absent in hand-built records) -- a log that
  lost its prefix to a snapshot cannot hold every state.
* L8 (§9.3/§8.4, progress, ``kraft-*`` only): a broker killed, paused or stopped (``stop``: from
  ``stop_timeout_s`` on) is fenced (or unregistered) in the log within ``broker.session.timeout.ms`` +
  grace of the fault (BHM: a broker without heartbeats for the session timeout is fenced), counted from
  the last quorum-leader change in that window (a new active controller starts every session afresh,
  BHM). Fault times are the events' ``wall`` (host Unix time); log times are ``time_ms`` (the batch's
  append time from the controller JVM in a container on the same host: one kernel clock). Judged only
  when the fault lasted past the deadline and a majority of the voters (``meta.leader_change``) was never
  under a down fault in that window; a shorter fault may end before the controller had to fence (a paused
  broker that resumes heartbeating), so it is not judged, but the fencing latency seen is recorded
  (``stats.metadata_log.fencing_latencies_s``: 8.6-11.5 s on 4.1.2 with a 9 s session -- the clocks agree).
* L12 (§8.1/§9.8, progress, ``kraft-*`` only): a broker does not serve a superseded partition state for
  longer than ``broker.session.timeout.ms`` + grace while the cluster is healthy. A broker's image follows
  the committed log continuously (the broker's metadata fetcher, ``BrokerMetadataPublisher``), so the state
  a sample shows is matched to the latest record leaving it in that state committed by the sample's time,
  and the next record that changed (leader, leader epoch, ISR, replicas) must not be older than the bound
  when the broker answered. Judged only when no fault of any kind (process, network, ZooKeeper-less quorum
  faults included) was active between that record and the answer: a broker cut off, paused or without
  a quorum legitimately serves what it last knew, and the protocol gives no staleness bound then. The
  largest staleness seen is recorded (``stats.metadata_log.max_served_staleness_s``).
"""

from __future__ import annotations

import bisect
import math

from harness.record.events import FAULT_END, FAULT_HEAL
from harness.record.windows import fault_windows
from reference.kraft_liveness import STOP_TIMEOUT_S, node_ids, params_restart
from reference.kraft_samples import LEADER_ERRORS, STATE_ERRORS

L8_FAULTS = ("kill", "pause", "stop")


def _tup(xs) -> tuple:
    return tuple(int(x) for x in (xs or ()))


def _sampled_states(events: list[dict]):
    """Every partition state a broker answered in a protocol sample: ``(sample event, (topic, partition),
    (leader, leader_epoch, isr, replicas), real_leader)``; ``real_leader`` False where the answer's error
    (LEADER_NOT_AVAILABLE, LISTENER_NOT_FOUND) means its leader field is not the leader."""
    for ev in events:
        if ev.get("type") != "admin.metadata" or ev.get("error") or ev.get("source") != "protocol":
            continue
        for p in ev.get("partitions") or []:
            if p.get("partition") is None or p.get("leader_epoch") is None or p.get("error") not in STATE_ERRORS:
                continue
            shown = (-1 if p.get("leader") is None else int(p["leader"]), int(p["leader_epoch"]),
                     _tup(p.get("isr")), _tup(p.get("replicas")))
            yield ev, (p.get("topic"), int(p["partition"])), shown, p.get("error") in LEADER_ERRORS


def _sample(ev: dict, k: tuple, shown: tuple) -> dict:
    """The subject of a finding on one sampled state (for ``report``)."""
    return {"topic": k[0], "partition": k[1], "seq": ev.get("seq"), "t": ev.get("t"),
            "answered_by": ev.get("answered_by"), "leader": shown[0], "leader_epoch": shown[1],
            "isr": list(shown[2]), "replicas": list(shown[3])}


def cross_check(events: list[dict], meta: list[dict], metadata: dict, report) -> dict:
    """L9: sampled partition states ⊆ committed states."""
    obs = metadata.get("observer")
    if isinstance(obs, dict) and obs.get("complete") is not True:
        return {"samples_cross_checked": 0, "cross_check": "not judged: the metadata log history is not complete"}
    full: dict[tuple, set] = {}
    shape: dict[tuple, set] = {}
    for e in meta:
        if e["type"] != "meta.partition" or e.get("topic") is None:
            continue
        k = (e["topic"], int(e["partition"]))
        st = (int(e["leader_epoch"]), _tup(e.get("isr")), _tup(e.get("replicas")))
        shape.setdefault(k, set()).add(st)
        full.setdefault(k, set()).add((int(e["leader"]),) + st)
    n = 0
    for ev, k, shown, real_leader in _sampled_states(events):
        leader, st = shown[0], shown[1:]
        n += 1
        if ((shown in full.get(k, ())) if real_leader else st in shape.get(k, ())):
            continue
        known = sorted(s for s in full.get(k, ()) if s[1] == st[0])
        report("L9", _sample(ev, k, shown), f"broker {ev.get('answered_by')} answered leader "
               f"{leader if real_leader else '-'} at leader epoch {st[0]}, ISR {list(st[1])}, replicas "
               f"{list(st[2])}: no record of the metadata log leaves the partition in that state (states at "
               f"that epoch in the log: {[(s[0], list(s[2]), list(s[3])) for s in known] or 'none'})",
               key=(leader if real_leader else None,) + st)
    return {"samples_cross_checked": n}


def _fault_windows(events: list[dict]) -> list[dict]:
    """Down faults as ``{fault, brokers, nodes, start, end}`` in wall seconds (``end`` inf: never healed;
    ``nodes``: every Kafka node it downs, dedicated controllers included, for the quorum's health).

    A down fault ends, whichever comes first in event order: at a later ``start`` / ``restart`` fault on
    one of its nodes, at its heal (``fault.heal`` or ``fault.end``; a fault whose heal restarts the node),
    at ``faults.healed``."""
    paired = fault_windows(events, closing=(FAULT_HEAL, FAULT_END), match="open", replace=False,
                           healed_phase=True, clock="wall", by_seq=True, positions="paired")
    ids = [[int(b) for b in node_ids(w.start)] for w in paired]     # brokers and dedicated controllers
    out: list[dict] = []
    for k, w in enumerate(paired):
        ev = w.start
        if ev.get("fault") not in L8_FAULTS or not ids[k]:
            continue
        params = ev.get("params") or {}
        wall = ev["wall"]
        ends = [(g.start_at, "start", g.start["wall"]) for j, g in enumerate(paired)
                if g.start_at > w.start_at and g.fault in ("start", "restart") and set(ids[j]) & set(ids[k])]
        if w.end is not None:
            ends.append((w.end_at, "heal", w.end["wall"]))
        ends += [(i, "phase", p["wall"]) for i, p in w.healed]
        end = math.inf
        for _, kind, t in sorted(ends):
            if kind == "heal":
                if params_restart(ev["fault"], params):
                    end = min(end, t)
            elif end == math.inf:
                end = t
        start = wall + float(params.get("stop_timeout_s", STOP_TIMEOUT_S)) if ev["fault"] == "stop" else wall
        out.append({"fault": ev["fault"], "brokers": [int(b) for b in ev.get("broker_ids") or []], "nodes": ids[k],
                    "start": start, "end": end, "params": params, "seq": ev.get("seq"), "t": ev.get("t")})
    return out


def fencing_deadlines(events: list[dict], meta: list[dict], session_s: float, grace_s: float, report) -> dict:
    """L8: every long enough down fault is followed by the broker's fencing in the log, in time."""
    bound = session_s + grace_s
    changes = sorted(e["time_ms"] / 1000.0 for e in meta if e["type"] == "meta.leader_change"
                     and isinstance(e.get("time_ms"), (int, float)))
    voters = next((set(e.get("voters") or []) for e in reversed(meta) if e["type"] == "meta.leader_change"), set())
    bstates = [e for e in meta if e["type"] == "meta.broker" and isinstance(e.get("time_ms"), (int, float))]
    windows = _fault_windows(events)
    stats = {"fencings_judged": 0, "fencings_not_judged": 0, "fencing_latencies_s": []}
    for f in windows:
        for b in f["brokers"]:
            deadline = f["start"] + bound
            for c in changes:                       # a new active controller restarts every session (BHM)
                if f["start"] <= c <= deadline:
                    deadline = max(deadline, c + bound)
            down = {x for g in windows if g["start"] <= deadline and g["end"] > f["start"] for x in g["nodes"]}
            mine = [e for e in bstates if int(e["broker_id"]) == b]
            before = [e for e in mine if e["time_ms"] / 1000.0 <= f["start"]]
            if not before or before[-1].get("fenced") is not False or not before[-1].get("registered"):
                stats["fencings_not_judged"] += 1   # not an unfenced broker when the fault began
                continue
            fenced = [e for e in mine[len(before):] if e["time_ms"] / 1000.0 <= min(f["end"], deadline) + 1.0
                      and (e.get("fenced") is not False or not e.get("registered"))]
            if fenced:                              # how long fencing took, judged or not (the clock check)
                lat = round(fenced[0]["time_ms"] / 1000.0 - f["start"], 3)
                stats["fencing_latencies_s"].append(lat)
            if f["end"] <= deadline or not voters or len(voters - down) < len(voters) // 2 + 1:
                stats["fencings_not_judged"] += 1   # healed before the deadline, or no quorum
                continue
            stats["fencings_judged"] += 1
            if fenced and fenced[0]["time_ms"] / 1000.0 <= deadline:
                continue
            until = "the end of the run" if f["end"] == math.inf else f"wall {f['end']:.1f}"
            report("L8", {"broker_id": b, "seq": f["seq"], "t": f["t"]},
                   f"broker {b} was down ({f['fault']}) from wall {f['start']:.1f} until {until}, but the metadata log does not fence it by {deadline:.1f} (session timeout {session_s:g}s + "
                   f"{grace_s:g}s, counted from the last quorum-leader change)", key=(b, f["start"]))
    return stats


def _any_fault_windows(events: list[dict]) -> list[tuple[float, float]]:
    """Every fault as ``(start, end)`` in wall seconds, from fault.start to fault.end (inf: never ended;
    a ``faults.healed`` phase ends them all)."""
    out = []
    for w in fault_windows(events, match="open", replace=False, healed_phase=True, clock="wall", by_seq=True,
                           positions="paired"):
        ends = [(i, False, p["wall"]) for i, p in w.healed]
        if w.end is not None:
            ends.append((w.end_at, True, w.end["wall"]))
        end = math.inf
        for _, is_end, t in sorted(ends):
            end = t if is_end else min(end, t)
        out.append((w.start["wall"], end))
    return out


def served_staleness(events: list[dict], meta: list[dict], session_s: float, grace_s: float, report) -> dict:
    """L12: no broker serves a superseded state past ``session_s + grace_s`` while no fault is active."""
    bound = session_s + grace_s
    hist: dict[tuple, list[tuple[float, tuple]]] = {}
    for e in meta:
        if e["type"] != "meta.partition" or e.get("topic") is None or not isinstance(e.get("time_ms"), (int, float)):
            continue
        st = (int(e["leader"]), int(e["leader_epoch"]), _tup(e.get("isr")), _tup(e.get("replicas")))
        h = hist.setdefault((e["topic"], int(e["partition"])), [])
        if not h or h[-1][1] != st:
            h.append((e["time_ms"] / 1000.0, st))
    times = {k: [t for t, _ in h] for k, h in hist.items()}
    faults = _any_fault_windows(events)
    stats = {"staleness_judged": 0, "max_served_staleness_s": 0.0}
    for ev, k, shown, real_leader in _sampled_states(events):
        w, h = ev.get("wall"), hist.get(k)
        if not isinstance(w, (int, float)) or not h:
            continue
        i = bisect.bisect_right(times[k], w) - 1           # the newest state committed by then
        while i >= 0 and not (h[i][1] == shown or (not real_leader and h[i][1][1:] == shown[1:])):
            i -= 1
        if i < 0 or i + 1 >= len(h) or h[i + 1][0] > w:
            continue                                    # current (or not in the log: L9's)
        since = h[i + 1][0]
        if any(a <= w and b >= since for a, b in faults):
            continue                                    # a fault in between: no bound applies
        stale = w - since
        stats["staleness_judged"] += 1
        stats["max_served_staleness_s"] = max(stats["max_served_staleness_s"], round(stale, 3))
        if stale > bound:
            nxt = h[i + 1][1]
            report("L12", _sample(ev, k, shown), f"broker {ev.get('answered_by')} served leader epoch {shown[1]}, "
                   f"ISR {list(shown[2])} {stale:.1f}s after the metadata log replaced it (leader {nxt[0]}, leader "
                   f"epoch {nxt[1]}, ISR {list(nxt[2])}) with no fault active (bound: session timeout "
                   f"{session_s:g}s + {grace_s:g}s)", key=(ev.get("answered_by"), shown[1], shown[2]))
    return stats
