"""One run record (its three files) -> one summary row, in one pass, in plain Python.

The summary row is everything the report needs from a record except the per-run timelines:
the parsed ``metadata.json`` + ``verdict.json`` (:func:`reports.parse.parse_run`), the event
aggregates (lines, sends, acknowledged writes, faults, partition states, longest gap between two
acknowledgements), the availability derivation of the record's partition states and faults
(:func:`reports.availability.derive_run`, on ZooKeeper's ground truth), and why the record is
skipped, if it is. The report builds its tables from these rows, whether they were just computed
from the records (:func:`reports.compact.summarize_all`) or read from the compacted Parquet table
(:mod:`reports.compact`), so both give the same output.

``events.jsonl`` lines are read as Spark's JSON reader reads them with
:data:`reports.load.EVENT_SCHEMA` (the timelines still use that reader): blank lines are no
events; a line that is not a JSON object, or whose field has another JSON type than the schema's
(a string for a number, a fraction or a number beyond 64 bits for an integer, a non-boolean for a
flag, a non-list for ``isr``/``broker_ids``), or that has no ``type`` or no ``t``, is malformed and
the record is skipped (``events.jsonl: N malformed line(s)``). String fields keep any other JSON
value as its compact text. Counts follow SQL's three-valued logic as the Spark job did (a missing
``f``/``phase``/``source`` makes a comparison unknown, not false).
"""

from __future__ import annotations

import json
from typing import Any

from harness.record.events import CLIENT, FAULT_START, ZK_PARTITION_STATE
from harness.record.truth import TXNLOG, ground_truth
from reports.availability import FAULT_FIELDS, STRUCTURAL, WINDOW_FIELDS, derive_run
from reports.parse import FIELDS, parse_run

FILES = ("metadata.json", "verdict.json", "events.jsonl")
LONG_MIN, LONG_MAX = -(2 ** 63), 2 ** 63 - 1

_LONG_FIELDS = frozenset(("seq", "fault_id", "partition", "leader", "leader_epoch", "broker_id"))
_DOUBLE_FIELDS = frozenset(("t", "wall", "zk_time"))
_BOOL_FIELDS = frozenset(("ok", "deleted"))
_LONG_ARRAYS = frozenset(("isr", "broker_ids"))
# String fields take any JSON value (as its text); only these are compared by the summary.
_STRING_FIELDS = frozenset(("type", "fault", "topic", "f", "phase", "source"))

# Event aggregate columns, in the order of the ``runs`` table.
AGG_FIELDS = ("n_events", "bad_lines", "last_t", "sends", "acknowledged_writes", "send_failed", "send_unknown",
              "consumed", "faults", "event_fault_kinds", "partition_states", "max_ack_gap_s")
SUMMARY_FIELDS = (*FIELDS, "has_events", *AGG_FIELDS, "derived_faults", "derived_windows", "sig")


_NON_STRING = _LONG_FIELDS | _DOUBLE_FIELDS | _BOOL_FIELDS | _LONG_ARRAYS


def _is_long(v: Any) -> bool:
    return type(v) is int and LONG_MIN <= v <= LONG_MAX


def _text(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, separators=(",", ":"))


def _typed(obj: Any) -> dict | None:
    """``obj`` (a parsed line) typed as the schema types it, or None if the line is malformed."""
    if type(obj) is not dict:
        return None
    for k in _NON_STRING.intersection(obj):
        v = obj[k]
        if v is None:
            continue
        if k in _DOUBLE_FIELDS:
            if type(v) is int:
                obj[k] = float(v)
            elif type(v) is not float:
                return None
        elif k in _LONG_FIELDS:
            if type(v) is not int or not LONG_MIN <= v <= LONG_MAX:
                return None
        elif k in _BOOL_FIELDS:
            if type(v) is not bool:
                return None
        elif type(v) is not list or not all(x is None or _is_long(x) for x in v):
            return None
    for k in _STRING_FIELDS.intersection(obj):
        v = obj[k]
        if v is not None and type(v) is not str:
            obj[k] = _text(v)
    if obj.get("type") is None or obj.get("t") is None:
        return None
    return obj


def event(line: bytes | str) -> dict | None:
    """One events.jsonl line as Spark's reader types it, or None if it is malformed (module doc)."""
    try:
        return _typed(json.loads(line))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None


def events(raw: bytes) -> tuple[list[dict], int]:
    """(good events, malformed line count) of an events.jsonl file. The whole file is parsed at
    once when every line is one JSON object (the usual case), else line by line."""
    try:
        lines = [ln for ln in raw.decode("utf-8").splitlines() if ln.strip()]
    except UnicodeDecodeError:
        lines = None
    if lines is not None:
        try:
            objs = json.loads("[" + ",".join(lines) + "]")
        except (ValueError, RecursionError):
            objs = None
        if objs is not None and len(objs) == len(lines):
            good = [_typed(o) for o in objs]
            if None not in good:
                return good, 0
    good, bad = [], 0
    for ln in raw.splitlines():
        if not ln.strip():
            continue
        e = event(ln)
        if e is None:
            bad += 1
        else:
            good.append(e)
    return good, bad


def aggregate(evs: list[dict]) -> dict:
    """The per-run event aggregates the Spark job computed (``sum(cast(cond as long))`` over the
    run's lines, null when every condition was null, as in SQL), for good lines."""
    if not evs:
        return dict.fromkeys(AGG_FIELDS)
    sends = acked = failed = unknown = consumed = faults = ps_txn = ps_other = 0
    seen_send = seen_cons = seen_txn = False
    kinds: set[str] = set()
    ack_ts: list[float] = []
    last_t = evs[0]["t"]
    for e in evs:
        ty, t = e["type"], e["t"]
        if t > last_t:
            last_t = t
        if ty == CLIENT:
            f, phase = e.get("f"), e.get("phase")
            if f == "send":
                if phase is not None:
                    seen_send = True
                    if phase == "invoke":
                        sends += 1
                    elif phase == "ok":
                        acked += 1
                        ack_ts.append(t)
                    elif phase == "fail":
                        failed += 1
                    elif phase == "info":
                        unknown += 1
            elif f is not None:
                seen_send = True
            # (f in (poll, drain)) AND (phase = ok): false as soon as either side is false
            in_f = None if f is None else f in ("poll", "drain")
            is_ok = None if phase is None else phase == "ok"
            if in_f is False or is_ok is False:
                seen_cons = True
            elif in_f is not None and is_ok is not None:
                seen_cons = True
                consumed += 1
            seen_txn = True
            continue
        seen_send = seen_cons = True
        if ty == FAULT_START:
            faults += 1
            if e.get("fault") is not None:
                kinds.add(e["fault"])
            seen_txn = True
        elif ty == ZK_PARTITION_STATE:
            src = e.get("source")
            if src is not None:
                seen_txn = True
                ps_txn += src == TXNLOG
            ps_other += src != TXNLOG
        else:
            seen_txn = True
    gap = None
    if len(ack_ts) > 1:
        ack_ts.sort()
        gap = max(b - a for a, b in zip(ack_ts, ack_ts[1:]))

    def sql(n: int, seen: bool) -> int | None:
        return n if seen else None
    return {"n_events": len(evs), "bad_lines": 0, "last_t": last_t, "sends": sql(sends, seen_send),
            "acknowledged_writes": sql(acked, seen_send), "send_failed": sql(failed, seen_send),
            "send_unknown": sql(unknown, seen_send), "consumed": sql(consumed, seen_cons), "faults": faults,
            "event_fault_kinds": sorted(kinds),
            "partition_states": ps_txn if seen_txn and ps_txn > 0 else ps_other, "max_ack_gap_s": gap}


def structural_truth(events: list[dict]) -> list[dict]:
    """The partition-state and fault events on ZooKeeper's ground truth (:mod:`harness.record.truth`):
    with txn-log copies only those, each at ZooKeeper's time of the change on the run's clock."""
    return ground_truth(events, types=STRUCTURAL, retime=True)


def summarize(run_dir: str, files: dict[str, bytes | None], sig: str | None = None) -> tuple:
    """The summary row of one record (a tuple in :data:`SUMMARY_FIELDS` order). ``files`` maps each
    present file name to its bytes. Never raises."""
    row = dict(zip(FIELDS, parse_run(run_dir, files)))
    raw = files.get("events.jsonl")
    reasons = [row["skip_reason"]] if row["skip_reason"] else []
    agg = dict.fromkeys(AGG_FIELDS)
    faults: list = []
    windows: list = []
    if raw is None:
        reasons.append("events.jsonl: missing")
    else:
        good, bad = events(raw)
        if bad:
            reasons.append(f"events.jsonl: {bad} malformed line(s)")
            agg["n_events"], agg["bad_lines"] = len(good) + bad, bad
        elif not reasons:
            agg = aggregate(good)
            fs, ws = derive_run(structural_truth(good), agg["last_t"]) if good else ([], [])
            faults = [tuple(f[n] for n, _ in FAULT_FIELDS) for f in fs]
            windows = [tuple(w[n] for n, _ in WINDOW_FIELDS) for w in ws]
    if reasons:
        row = dict.fromkeys(FIELDS)
        row["run_dir"], row["skip_reason"] = run_dir, "; ".join(reasons)
    row.update(agg)
    row.update(has_events=raw is not None, derived_faults=faults, derived_windows=windows, sig=sig)
    return tuple(row[f] for f in SUMMARY_FIELDS)
