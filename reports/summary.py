"""One run record (its three files) -> one summary row, in one pass, in plain Python.

The summary row is everything the report needs from a record except the per-run timelines:
the parsed ``metadata.json`` + ``verdict.json`` (:func:`reports.parse.parse_run`, each decoded once), the event
aggregates (lines, sends, acknowledged writes, faults, partition states, longest gap between two
acknowledgements), the availability derivation of the record's partition states and faults
(:func:`reports.availability.derive_run`, on ZooKeeper's ground truth), and why the record is
skipped, if it is. The report builds its tables from these rows, whether they were just computed
from the records (:func:`reports.compact.summarize_all`) or read from the compacted Parquet table
(:mod:`reports.compact`), so both give the same output.

``events.jsonl`` is read by the one record reader, :func:`harness.record.read.read_record` (the rules
``check`` and the runner apply: every event's type and fields typed per its schema, ``seq`` increasing,
``t`` / ``wall`` not going back, bounded sizes and depth): a record that does not pass is skipped with
its reason (file, line and field), never counted as a run. The outcome columns come from
:mod:`reports.outcome` (re-derived from the events, or stored and verified). Counts follow SQL's
three-valued logic as the Spark job did (a missing ``f``/``phase``/``source`` makes a comparison
unknown, not false).
"""

from __future__ import annotations

from pathlib import Path

from harness.record.events import CLIENT, FAULT_START, ZK_PARTITION_STATE
from harness.record.read import RecordError, read_record
from harness.record.truth import TXNLOG, ground_truth
from reports import outcome
from reports.availability import FAULT_FIELDS, STRUCTURAL, WINDOW_FIELDS, derive_run
from reports.parse import FIELDS, FieldError, fill_verdict, parse_run_objects

FILES = ("metadata.json", "verdict.json", "events.jsonl")

# Event aggregate columns, in the order of the ``runs`` table.
AGG_FIELDS = ("n_events", "bad_lines", "last_t", "sends", "acknowledged_writes", "send_failed", "send_unknown",
              "consumed", "faults", "event_fault_kinds", "partition_states", "max_ack_gap_s")
SUMMARY_FIELDS = (*FIELDS, "has_events", *AGG_FIELDS, "derived_faults", "derived_windows", *outcome.OUTCOME_FIELDS,
                  "sig")


def aggregate(evs: list[dict]) -> dict:
    """The per-run event aggregates the Spark job computed (``sum(cast(cond as long))`` over the
    run's lines, null when every condition was null, as in SQL), for good lines."""
    if not evs:
        return dict.fromkeys(AGG_FIELDS)
    sends = acked = failed = unknown = consumed = faults = ps_txn = ps_other = 0
    seen_send = seen_cons = seen_txn = False
    kinds: set[str] = set()
    ack_ts: list[float] = []
    last_t = float(evs[0]["t"])
    for e in evs:
        ty, t = e["type"], e["t"]
        if t > last_t:
            last_t = float(t)
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
        gap = float(max(b - a for a, b in zip(ack_ts, ack_ts[1:])))

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


def _relative(run_dir: str, message: str) -> str:
    """A reader's message without the record's own path (the skipped list names the record)."""
    return message.replace(str(Path(run_dir)) + "/", "")


def summarize(run_dir: str, files: dict[str, bytes | None], sig: str | None = None,
              trust_stored: bool = False) -> tuple:
    """The summary row of one record (a tuple in :data:`SUMMARY_FIELDS` order). ``files`` maps each
    present file name to its bytes. ``trust_stored``: :func:`reports.outcome.judge`. Never raises."""
    parsed, meta, verdict = parse_run_objects(run_dir, files)
    row = dict(zip(FIELDS, parsed))
    raw = files.get("events.jsonl")
    reasons = [row["skip_reason"]] if row["skip_reason"] else []
    agg = dict.fromkeys(AGG_FIELDS)
    faults: list = []
    windows: list = []
    judged = dict.fromkeys(outcome.OUTCOME_FIELDS)
    if raw is None:
        reasons.append("events.jsonl: missing")
    elif not reasons:
        try:
            rec = read_record(run_dir, files, (meta, verdict))
            good = rec.events
            agg = aggregate(good)
            fs, ws = derive_run(structural_truth(good), agg["last_t"]) if good else ([], [])
            faults = [tuple(f[n] for n, _ in FAULT_FIELDS) for f in fs]
            windows = [tuple(w[n] for n, _ in WINDOW_FIELDS) for w in ws]
            row = outcome.judge(row, rec, files, trust_stored, fill_verdict)
            judged = {k: row.pop(k) for k in outcome.OUTCOME_FIELDS}
        except (RecordError, FieldError) as e:
            reasons.append(_relative(run_dir, str(e)))
        except Exception as e:  # noqa: BLE001 - a shape no rule above foresaw: skip the record, name it
            reasons.append(f"events.jsonl: cannot be read ({e.__class__.__name__}: {str(e)[:80]})")
    if reasons:
        row = dict.fromkeys(FIELDS)
        row["run_dir"], row["skip_reason"] = run_dir, "; ".join(reasons)
        agg = dict.fromkeys(AGG_FIELDS)
        faults, windows = [], []
        judged = dict.fromkeys(outcome.OUTCOME_FIELDS)
    row.update(agg)
    row.update(judged)
    row.update(has_events=raw is not None, derived_faults=faults, derived_windows=windows, sig=sig)
    return tuple(row[f] for f in SUMMARY_FIELDS)
