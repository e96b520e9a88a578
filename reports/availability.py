"""Availability derived from the events: leader recovery, ISR recovery, leaderless windows.

Definitions (all times in seconds of the run's monotonic clock):

* A fault's **window** runs from its ``fault.start`` to the next ``fault.start`` of the same run
  (or the end of the run).
* For each partition, the **prior state** is its last ``zk.partition_state`` at or before the
  fault started. **time_to_new_leader** of a partition is the first state in the window with a
  live leader (``leader >= 0``) that differs from the prior leader, or follows a leaderless
  state; for the fault it is the maximum over partitions whose leader changed (``None`` when no
  leader changed, e.g. a follower was killed). A partition created after the fault (no prior
  state, e.g. ``__consumer_offsets`` made when the consumer starts) is not a leader change.
* Partition states are ZooKeeper's transitions as :func:`reports.load.zk_ground_truth` gives them:
  the txn-log copy timed by ZooKeeper when the run has one, else the watcher's.
* The **full ISR size** of a partition is the largest ISR seen in the run. A partition's ISR
  **shrank** if the prior state or a state in the window has fewer members; **time_to_isr_restored**
  is the first later state in the window with a full ISR; for the fault it is the maximum over
  shrunk partitions, ``None`` if any of them did not recover in the window (``isr_unrestored``).
* An **unavailability window** is a run of ``leader = -1`` states of one partition, ending at the
  next state with a live leader (or the end of the run: ``open``); it is attributed to the last
  fault that started at or before it ("none" if no fault had started).

The derivation is pure Python per run (:func:`derive_run`), done once per record when it is
summarized (:mod:`reports.summary`); the summary row carries its ``faults`` and ``windows``, which
the report explodes into one row per fault and per window.
"""

from __future__ import annotations

from collections import defaultdict

from harness.record.events import FAULT_END, FAULT_START, ZK_PARTITION_STATE
from harness.record.windows import first_end_by_id
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

STRUCTURAL = (ZK_PARTITION_STATE, FAULT_START, FAULT_END)

FAULT_FIELDS = [("fault_id", T.LongType()), ("fault", T.StringType()), ("t_start", T.DoubleType()),
                ("t_end", T.DoubleType()), ("time_to_new_leader", T.DoubleType()),
                ("partitions_leader_changed", T.LongType()), ("leader_unrecovered", T.LongType()),
                ("time_to_isr_restored", T.DoubleType()), ("partitions_isr_shrunk", T.LongType()),
                ("isr_unrestored", T.LongType())]
WINDOW_FIELDS = [("topic", T.StringType()), ("partition", T.LongType()), ("start", T.DoubleType()),
                 ("end", T.DoubleType()), ("duration_s", T.DoubleType()), ("open", T.BooleanType()),
                 ("fault", T.StringType()), ("fault_id", T.LongType())]
DERIVED_SCHEMA = T.StructType([
    T.StructField("run_dir", T.StringType()),
    T.StructField("faults", T.ArrayType(T.StructType([T.StructField(n, t) for n, t in FAULT_FIELDS]))),
    T.StructField("windows", T.ArrayType(T.StructType([T.StructField(n, t) for n, t in WINDOW_FIELDS]))),
])
RUN_META = ["run_id", "suite", "scenario", "broker", "kafka_version", "broker_image"]


def _key(e: dict) -> tuple:
    return (e.get("t") or 0.0, e.get("seq") or 0)


def derive_run(events: list[dict], last_t: float | None = None) -> tuple[list[dict], list[dict]]:
    """(faults, windows) of one run from its partition-state and fault events (module doc)."""
    evs = sorted(events, key=_key)
    states: dict[tuple, list[dict]] = defaultdict(list)
    starts = []
    for e in evs:
        ty = e.get("type")
        if ty == ZK_PARTITION_STATE:
            if e.get("deleted") or e.get("leader") is None or e.get("topic") is None or e.get("partition") is None:
                continue
            states[(e["topic"], e["partition"])].append({"t": e["t"], "leader": e["leader"],
                                                         "isr": len(e.get("isr") or [])})
        elif ty == FAULT_START:
            starts.append(e)
    ends = {fid: e["t"] for fid, e in first_end_by_id(evs).items()}
    full = {tp: max(s["isr"] for s in ss) for tp, ss in states.items()}
    if last_t is None:
        last_t = evs[-1]["t"] if evs else 0.0

    faults = []
    for i, f in enumerate(starts):
        t0 = f["t"]
        nxt = starts[i + 1]["t"] if i + 1 < len(starts) else None
        fid = f.get("fault_id") if f.get("fault_id") is not None else f.get("seq")
        ttls, ttisrs = [], []
        leader_unrec = shrunk_n = isr_unrec = 0
        for tp, ss in states.items():
            prior = None
            after = []
            for s in ss:
                if s["t"] <= t0:
                    prior = s
                elif nxt is None or s["t"] < nxt:
                    after.append(s)
            if not after:
                continue
            seen_leaderless, new_t, went_leaderless = False, None, False
            for s in after:
                if s["leader"] < 0:
                    seen_leaderless = went_leaderless = True
                elif new_t is None and ((prior is not None and s["leader"] != prior["leader"]) or seen_leaderless):
                    new_t = s["t"]
            if new_t is not None:
                ttls.append(new_t - t0)
            elif went_leaderless:
                leader_unrec += 1
            if prior is not None and prior["isr"] < full[tp]:
                shrink_t = t0
            else:
                shrink_t = next((s["t"] for s in after if s["isr"] < full[tp]), None)
            if shrink_t is not None:
                shrunk_n += 1
                back = next((s["t"] for s in after if s["t"] > shrink_t and s["isr"] >= full[tp]), None)
                if back is None:
                    isr_unrec += 1
                else:
                    ttisrs.append(back - t0)
        faults.append({"fault_id": fid, "fault": f.get("fault") or "unknown", "t_start": t0,
                       "t_end": ends.get(f.get("fault_id")),
                       "time_to_new_leader": max(ttls) if ttls else None,
                       "partitions_leader_changed": len(ttls), "leader_unrecovered": leader_unrec,
                       "time_to_isr_restored": max(ttisrs) if ttisrs and not isr_unrec else None,
                       "partitions_isr_shrunk": shrunk_n, "isr_unrestored": isr_unrec})

    windows = []
    for (topic, part), ss in sorted(states.items()):
        prev = None
        for j, s in enumerate(ss):
            if s["leader"] < 0 and (prev is None or prev >= 0):
                end = next((x["t"] for x in ss[j + 1:] if x["leader"] >= 0), None)
                is_open = end is None
                if is_open:
                    end = max(last_t, s["t"])
                cause = None
                for f in starts:
                    if f["t"] <= s["t"]:
                        cause = f
                windows.append({"topic": topic, "partition": part, "start": s["t"], "end": end,
                                "duration_s": end - s["t"], "open": is_open,
                                "fault": cause.get("fault") if cause else "none",
                                "fault_id": cause.get("fault_id") if cause else None})
            prev = s["leader"]
    return faults, windows


def fault_recovery(derived: DataFrame, runs: DataFrame) -> DataFrame:
    """One row per fault with its recovery times (``derived``: ``run_dir``, ``faults``, ``windows``)."""
    return (derived.select("run_dir", F.explode("faults").alias("f")).select("run_dir", "f.*")
            .join(runs.select("run_dir", *RUN_META), "run_dir")
            .select(*RUN_META, *[n for n, _ in FAULT_FIELDS], "run_dir"))


def unavailability_windows(derived: DataFrame, runs: DataFrame) -> DataFrame:
    """One row per leaderless window of a partition."""
    return (derived.select("run_dir", F.explode("windows").alias("w")).select("run_dir", "w.*")
            .join(runs.select("run_dir", *RUN_META), "run_dir")
            .select(*RUN_META, *[n for n, _ in WINDOW_FIELDS], "run_dir"))
