"""Coverage: did the run exercise what it claims? Pure: events and metadata in, a dict out.

:func:`check_coverage` measures, per fault window (``fault.start`` to ``fault.end`` of each
``fault_id``), the writes invoked / acknowledged / failed / unsure and the records read; per client,
the intervals it was alive (``client.life`` events, or for records without them its send events);
and the longest time without an acknowledged write. It then judges the scenario's *needs*
(:data:`DEFAULT_NEEDS`, a scenario's ``coverage`` field overrides them): a run that falls short is
``UNKNOWN`` with shortfalls naming the client, its error and the window it left uncovered; never a
FAIL (a dead client says nothing about the broker). Client fatal errors that point at the broker are
not judged here but by the durability checker (:data:`FATAL_ERRORS`, ``producer_fatal``).
docs/checkers.md, "Coverage and client health".
"""

from __future__ import annotations

from harness.checkers.measured import measure
from harness.record.events import (CLIENT, CLIENT_CONFIG, CLIENT_LIFE, PHASE, PHASE_FAULTS_HEALED,
                                   PHASE_WORKLOAD_STOPPING, TXN)

TXN_POLL = "txn.poll"                      # harness/workload/txn.py: a consumer's read
TXN_CRASH = "txn.crash"                    # harness/workload/txn.py: a crashed client replaced (crash fault)
from harness.record.verdicts import PASS, UNKNOWN
from harness.record.windows import client_windows, fault_windows

DEFAULT_NEEDS = {
    # every producer alive from the first fault to the last heal (fault.end) plus settle_s, capped at
    # the moment the harness asked the clients to stop
    "producers_alive": True,
    "consumers_alive": False,
    "settle_s": 5.0,
    # acknowledged writes needed on every partition of the workload after the last heal (0: none)
    "acked_after_heal": 1,
    # transactional workloads: transactions committed in the whole run (0: no need)
    "committed_txns": 0,
    # a client dead for less than this inside the needed window (a fatal error and its re-creation)
    # is not a shortfall
    "gap_tolerance_s": 2.0,
    # records without client.life events: a producer silent (no send invoked) for longer is not alive
    "send_gap_s": 5.0,
}


# librdkafka fatal errors of an idempotent producer, and whom they point at (docs/checkers.md, "Which
# client errors are findings"; sources: librdkafka src/rdkafka_request.c
# rd_kafka_handle_idempotent_Produce_error, src/rdkafka_msgset_writer.c, Kafka's ProducerAppendInfo).
# "broker" (after the producer had acknowledged writes): the broker lost or contradicted producer
# state it had acknowledged -> a durability finding; "client": librdkafka's own consistency checks,
# configuration or authorisation -> a coverage shortfall (UNKNOWN workload).
FATAL_ERRORS: dict[str, tuple[str, str]] = {
    "OUT_OF_ORDER_SEQUENCE_NUMBER": (
        "broker", "the partition leader rejected the head-of-line batch as out of sequence although the "
                  "producer's earlier batches were acknowledged: the broker lost (or never replicated) "
                  "producer state it had acknowledged"),
    "UNKNOWN_PRODUCER_ID": (
        "broker", "the partition leader no longer knows the producer id while acknowledged batches of it "
                  "are still in the log (no retention or DeleteRecords in a run): producer state lost"),
    "_INCONSISTENT": (
        "client", "librdkafka's own consistency check: a retried batch could not be rebuilt with the same "
                  "message ids ('Unable to reconstruct MessageSet', rdkafka_msgset_writer.c), or a request "
                  "succeeded where librdkafka expected an error (rdkafka_request.c)"),
    "_GAPLESS_GUARANTEE": ("client", "enable.gapless.guarantee: a batch failed permanently"),
    "_FENCED": ("client", "a newer instance with the same transactional.id fenced this one"),
    "PRODUCER_FENCED": ("client", "a newer producer instance fenced this one"),
    "INVALID_PRODUCER_EPOCH": ("client", "the producer's epoch is older than the broker's"),
    "CLUSTER_AUTHORIZATION_FAILED": ("client", "not authorised for the idempotent write (IdempotentWrite)"),
    "TRANSACTIONAL_ID_AUTHORIZATION_FAILED": ("client", "not authorised for the transactional id"),
    "INVALID_TRANSACTION_TIMEOUT": ("client", "transaction.timeout.ms rejected by the broker"),
}


def fatal_points_at(error: str | None, acked_before: int) -> str:
    """``"broker"`` or ``"client"`` for a producer's fatal error name (``acked_before``: writes of that
    producer acknowledged before the error). Unknown errors point at the client."""
    side = FATAL_ERRORS.get(str(error or ""), ("client", ""))[0]
    return "broker" if side == "broker" and acked_before > 0 else "client"


def _needs(needs: dict | None) -> dict:
    out = dict(DEFAULT_NEEDS)
    for k, v in (needs or {}).items():
        if k not in DEFAULT_NEEDS:
            raise ValueError(f"unknown coverage need {k!r}; known: {sorted(DEFAULT_NEEDS)}")
        out[k] = v
    return out


def _r(x):
    return None if x is None else round(float(x), 3)


def _fmt(t) -> str:
    return "end of run" if t is None else f"{t:.1f} s"


class _Client:
    __slots__ = ("name", "role", "life", "alive", "errors", "sends", "first_send", "last_send", "acked")

    def __init__(self, name: str, role: str):
        self.name, self.role = name, role
        self.life: list[tuple[float, str, str | None]] = []
        self.alive: list[list] = []
        self.errors: list[dict] = []
        self.sends: list[float] = []
        self.first_send = self.last_send = None
        self.acked = 0


def check_coverage(events, metadata: dict, needs: dict | None = None) -> dict:
    """Judge a run record's coverage (format: docs/run-record.md, "Additions (client health and
    coverage)"). ``needs`` overrides :data:`DEFAULT_NEEDS` (a scenario's ``coverage`` field; by default
    metadata ``coverage_needs``)."""
    if needs is None:             # the scenario's needs as the runner stored them (re-judged records too)
        needs = (metadata or {}).get("coverage_needs")
    need = _needs(needs)
    wl = (metadata or {}).get("workload") or {}
    topic = wl.get("topic")
    parts = wl.get("partitions")
    parts = list(range(parts)) if isinstance(parts, int) else [int(p) for p in parts or []]

    clients: dict[str, _Client] = {}
    open_w: list[dict] = []                # the windows open at the event being read
    acks: list[float] = []
    acked_after: dict = {}                 # partition -> acks after the last heal (filled in a 2nd pass)
    stop_asked = healed_at = None
    last_t = 0.0
    txns = {"committed": 0, "aborted": 0, "unsure": 0, "min_partitions": None}
    replaced: dict = {}                    # replacement process -> (crashed process, when): one slot

    def client(name, role):
        c = clients.get(name)
        if c is None:
            c = clients[name] = _Client(name, role)
        elif role and c.role != role and c.role == "unknown":
            c.role = role
        return c

    evs = list(events)
    # fault_id -> window dict (in start order); its end is the last fault.end of its id
    paired = fault_windows(evs, match="id")
    windows: dict = {}
    opens: dict = {}
    closes: dict = {}
    for fw in paired:
        w = {"fault_id": fw.fault_id, "fault": fw.fault, "target": fw.start.get("target"),
             "start": fw.start.get("t"), "end": fw.ends[-1].get("t") if fw.ends else None,
             "writes": {"invoke": 0, "ok": 0, "fail": 0, "info": 0}, "reads": 0,
             "txns": {"begun": 0, "committed": 0, "aborted": 0, "unsure": 0}, "txn_reads": 0}
        windows[w["fault_id"]] = w
        opens[fw.start_at] = w
        if fw.end_at is not None:
            closes[fw.end_at] = w
    skipped = {fw.fault_id for fw in paired if fw.never_applied}
    for i, e in enumerate(evs):
        if i in opens:
            open_w.append(opens[i])
        elif i in closes:
            open_w.remove(closes[i])
        typ = e.get("type")
        t = e.get("t")
        if isinstance(t, (int, float)):
            last_t = max(last_t, t)
        if typ == CLIENT:
            f, phase = e.get("f"), e.get("phase")
            if f == "send":
                c = client(e.get("process"), "producer")
                if phase == "invoke":
                    c.sends.append(t)
                    c.first_send = t if c.first_send is None else c.first_send
                    c.last_send = t
                elif phase == "ok":
                    c.acked += 1
                    acks.append(t)
                for w in open_w:
                    w["writes"][phase] = w["writes"].get(phase, 0) + 1
            elif f == "poll" and phase == "ok":
                for w in open_w:
                    w["reads"] += 1
        elif typ == TXN and e.get("phase") == "invoke":
            for w in open_w:
                w["txns"]["begun"] += 1
        elif typ == TXN and e.get("phase") in ("ok", "fail", "info"):
            ok, outcome = e.get("phase") == "ok", e.get("outcome")
            key = "committed" if ok and outcome == "commit" else "unsure" if e.get("phase") == "info" else "aborted"
            txns[key] += 1
            n_reads = sum(1 for o in e.get("ops") or () if o.get("f") in ("poll", "read"))
            for w in open_w:
                w["txns"][key] += 1
                w["txn_reads"] += n_reads
            if key == "committed":
                n = len({(o.get("topic"), o.get("partition")) for o in e.get("ops") or () if o.get("f") == "send"})
                txns["min_partitions"] = n if txns["min_partitions"] is None else min(txns["min_partitions"], n)
        elif typ == TXN_POLL:            # a read_committed consumer's read of transactional data
            for w in open_w:
                w["txn_reads"] += 1
        elif typ == CLIENT_LIFE:
            c = client(e.get("process"), e.get("role") or "unknown")
            c.life.append((t, e.get("state"), e.get("error")))
        elif typ == CLIENT_CONFIG:
            client(e.get("process"), e.get("role") or "producer")
        elif typ == TXN_CRASH and e.get("replacement"):   # the nemesis's crash: a new process takes the slot
            replaced[e["replacement"]] = (e.get("process"), t)
        elif typ == PHASE:
            name = e.get("name")
            if name == PHASE_WORKLOAD_STOPPING and stop_asked is None:
                stop_asked = t
            elif name == PHASE_FAULTS_HEALED and healed_at is None:
                healed_at = t

    applied = [w for fid, w in windows.items() if fid not in skipped]
    first_fault = min((w["start"] for w in applied), default=None)
    last_heal = max(((w["end"] if w["end"] is not None else last_t) for w in applied), default=None)
    if stop_asked is None:           # older records: the runner stops the clients right after heal_all
        stop_asked = healed_at
    need_from = first_fault
    need_to = None
    if last_heal is not None:
        need_to = last_heal + float(need["settle_s"])
        if stop_asked is not None and stop_asked >= last_heal:
            need_to = min(need_to, stop_asked)

    # alive intervals and errors per client
    for c in clients.values():
        if c.life:
            alive, deaths = client_windows(c.life)
            c.alive += alive
            c.errors += [{"t": _r(t), "state": state, "error": err} for t, state, err in deaths]
        elif c.sends:                # judged from its send events (records without client.life)
            gap = float(need["send_gap_s"])
            cur = [c.sends[0], c.sends[0]]
            c.alive.append(cur)
            for t in c.sends[1:]:
                if t - cur[1] > gap:
                    cur = [t, t]
                    c.alive.append(cur)
                else:
                    cur[1] = t
            if stop_asked is not None and cur[1] >= stop_asked - gap:
                cur[1] = None        # sending until the harness asked it to stop: alive to the end
            if c.sends and c.last_send is not None and (stop_asked is None or c.last_send < stop_asked - gap):
                c.errors.append({"t": _r(c.last_send), "state": "silent",
                                 "error": "no send invoked after this (record without client.life events)"})

    # a crashed client and the process that replaced it (crash fault, txn.crash) are one Jepsen slot: its
    # alive intervals are the chain's, the replacement alive from the moment it was created
    for new, (old, t) in sorted(replaced.items(), key=lambda kv: kv[1][1] or 0.0):
        root = old
        while root in replaced:
            root = replaced[root][0]
        c, r = clients.get(new), clients.get(root)
        if c is None or r is None:
            continue
        starts = [a for a, _ in c.alive if a is not None]
        r.alive += [[t, min(starts) if starts else t]] + c.alive   # initialising from t on
        r.errors += c.errors
        c.role = "replaced"           # judged through its slot's first process
    shortfalls: list[str] = []
    if need_from is not None and need_to is not None and need_to > need_from:
        tol = float(need["gap_tolerance_s"])
        roles = (["producer"] if need["producers_alive"] else []) + (["consumer"] if need["consumers_alive"] else [])
        for c in sorted(clients.values(), key=lambda c: c.name):
            if c.role not in roles or (c.role == "producer" and not c.sends and not c.life):
                continue
            for a, b in _uncovered(c.alive, need_from, need_to):
                if b - a <= tol:
                    continue
                hit = [w for w in applied if w["start"] <= b and (w["end"] if w["end"] is not None else last_t) >= a]
                err = next((x for x in reversed(c.errors) if x["t"] is not None and x["t"] <= a + tol), None) \
                    or (c.errors[0] if c.errors else None)
                why = f"{err['state']} at {err['t']:.1f} s: {err['error']}" if err else "never started"
                names = ", ".join(f"#{w['fault_id']} {w['fault']} {w['target']} ({_fmt(w['start'])}-"
                                  f"{_fmt(w['end'])})" for w in hit) or "the settle time after the last heal"
                shortfalls.append(f"{c.role} {c.name} was not alive {a:.1f}-{b:.1f} s ({why}); the run needs it "
                                  f"from the first fault ({need_from:.1f} s) to the last heal + "
                                  f"{float(need['settle_s']):g} s ({need_to:.1f} s): uncovered {names}")

    want = int(need["acked_after_heal"] or 0)
    if want > 0 and last_heal is not None and parts:
        for e in evs:
            if e.get("type") == "client" and e.get("f") == "send" and e.get("phase") == "ok" \
                    and e.get("t", 0) > last_heal and (topic is None or e.get("topic") == topic):
                p = e.get("partition")
                acked_after[p] = acked_after.get(p, 0) + 1
        short = [p for p in parts if acked_after.get(p, 0) < want]
        if short:
            shortfalls.append(f"partition(s) {', '.join(f'{topic}/{p}' for p in short)} got fewer than {want} "
                              f"acknowledged write(s) after the last heal ({last_heal:.1f} s)")

    want = int(need["committed_txns"] or 0)
    if want > 0 and txns["committed"] < want:
        shortfalls.append(f"{txns['committed']} transactions committed; the run needs at least {want}")

    if any(txns[k] for k in ("committed", "aborted", "unsure")):
        # a transactional run: every producer stalled through a fault window (no transaction begun
        # or ended in it) says nothing about the broker under that fault -> UNKNOWN, as for a plain run
        for w in windows.values():
            end = w["end"] if w["end"] is not None else last_t
            if w["fault_id"] in skipped or end - w["start"] <= float(need["send_gap_s"]):
                continue
            t = w["txns"]
            if t["begun"] == 0 and t["committed"] + t["aborted"] + t["unsure"] == 0:
                shortfalls.append(f"no transaction begun or ended during #{w['fault_id']} {w['fault']} "
                                  f"{w['target']} ({_fmt(w['start'])}-{_fmt(end)}): every transactional "
                                  f"producer stalled through the fault")

    acks.sort()
    gap = max((b - a for a, b in zip(acks, acks[1:])), default=0.0)
    if acks and need_to is not None and need_to > acks[-1]:
        gap = max(gap, need_to - acks[-1])
    if acks and need_from is not None and acks[0] > need_from:
        gap = max(gap, acks[0] - need_from)
    out_windows = []
    for w in windows.values():
        if w["fault_id"] in skipped:
            continue
        out_windows.append({**w, "start": _r(w["start"]), "end": _r(w["end"])})
    verdict = UNKNOWN if shortfalls else PASS
    if shortfalls:
        reason = "; ".join(shortfalls)
    elif first_fault is None:
        reason = "no fault was applied: nothing to cover"
    else:
        reason = "every needed client was alive through the faults and every partition was written after the last heal"
    measured = measure(evs)
    if measured["notes"]:
        reason += "; note: " + "; ".join(measured["notes"])
    return {
        "verdict": verdict, "reason": reason, "shortfalls": shortfalls,
        "needed": [_r(need_from), _r(need_to)],
        "windows": out_windows,
        "clients": {c.name: {"role": c.role, "alive": [[_r(a), _r(b)] for a, b in c.alive],
                             "errors": c.errors, "acked": c.acked}
                    for c in sorted(clients.values(), key=lambda c: c.name) if c.role != "unknown" or c.life},
        "acked_after_heal": {str(p): acked_after.get(p, 0) for p in parts} if last_heal is not None else {},
        "longest_ack_gap_s": round(gap, 3),
        "measured": measured,
        **({"transactions": txns} if any(v for k, v in txns.items() if k != "min_partitions") else {}),
    }


def _uncovered(alive: list[list], lo: float, hi: float) -> list[tuple[float, float]]:
    """Parts of [lo, hi] no alive interval covers (an interval's open end reaches the end of the run)."""
    out = []
    cur = lo
    for a, b in sorted(alive, key=lambda x: x[0]):
        b = float("inf") if b is None else b
        if b < cur:
            continue
        if a > cur:
            out.append((cur, min(a, hi)))
        cur = max(cur, b)
        if cur >= hi:
            break
    if cur < hi:
        out.append((cur, hi))
    return [(a, b) for a, b in out if b > a]
