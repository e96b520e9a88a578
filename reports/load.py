"""The report's inputs: one summary row per run record, then the usable runs, skipped and duplicates.

* Each record is summarized once (:mod:`reports.summary`: metadata.json, verdict.json and the
  events.jsonl aggregates and availability derivation in one pass), either right now for every
  record (:func:`reports.compact.summarize_all`) or through the compacted table kept beside the
  records, updated with only new or changed records (:func:`reports.compact.update`);
* in-progress ``.tmp-*`` directories (and any name starting with ``.`` or ``_``, e.g. the table
  itself in ``_summaries``) are not records, as Hadoop's hidden-path filter has it;
* the per-run timelines read the events of the few runs shown with ``spark.read.json`` and
  :data:`EVENT_SCHEMA` (:func:`timeline_events`).

A run directory is any directory holding one of the three files. Each one ends up either in
``runs`` (usable) or in ``skipped`` with a reason naming the file and the field; nothing is dropped
silently. A record read twice (a symlinked run directory, a copied record: the same ``run_id``) is
counted once, the first path in sort order; the others are listed in ``duplicates``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.storagelevel import StorageLevel

from harness.record.events import ZK_PREFIX
from harness.record.truth import TXNLOG
from reports import compact
from reports.parse import FIELDS
from reports.outcome import OUTCOME_FIELDS
from reports.summary import AGG_FIELDS

AGG_FIELDS_NO_BAD = [f for f in AGG_FIELDS if f not in ("bad_lines", "event_fault_kinds")]

EVENT_SCHEMA = T.StructType([
    T.StructField("seq", T.LongType()),
    T.StructField("t", T.DoubleType()),
    T.StructField("type", T.StringType()),
    T.StructField("name", T.StringType()),
    T.StructField("fault_id", T.LongType()),
    T.StructField("fault", T.StringType()),
    T.StructField("target", T.StringType()),
    T.StructField("broker_ids", T.ArrayType(T.LongType())),
    T.StructField("ok", T.BooleanType()),
    T.StructField("topic", T.StringType()),
    T.StructField("partition", T.LongType()),
    T.StructField("leader", T.LongType()),
    T.StructField("leader_epoch", T.LongType()),
    T.StructField("isr", T.ArrayType(T.LongType())),
    T.StructField("deleted", T.BooleanType()),
    T.StructField("broker_id", T.LongType()),
    T.StructField("process", T.StringType()),
    T.StructField("role", T.StringType()),           # client.life (and docker.event)
    T.StructField("state", T.StringType()),          # client.life: started, fatal, recreated, stopped, ...
    T.StructField("error", T.StringType()),          # any JSON value, kept as its text
    T.StructField("f", T.StringType()),
    T.StructField("phase", T.StringType()),
    T.StructField("source", T.StringType()),
    T.StructField("wall", T.DoubleType()),
    T.StructField("zk_time", T.DoubleType()),
    T.StructField("_corrupt_record", T.StringType()),
])


class ReportInputError(Exception):
    """The runs path cannot be read at all (missing, unreadable): a usage/environment error."""


@dataclass
class Loaded:
    runs: DataFrame          # one row per usable run (parsed metadata + verdict + event aggregates)
    derived: DataFrame       # per usable run: ``faults`` and ``windows`` (reports.availability.derive_run)
    skipped: list[dict]      # [{"path", "reason"}] for every unusable run directory
    duplicates: list[dict] = field(default_factory=list)  # [{"path", "run_id", "kept"}] read twice, counted once
    table: dict | None = None    # what the compacted table's update did (reports.compact.update), if one is kept
    _cached: list = field(default_factory=list)

    def unpersist(self) -> None:
        for df in self._cached:
            df.unpersist()


def display_path(uri: str) -> str:
    """``file:/x/y`` -> ``/x/y``; other schemes are kept."""
    return uri[len("file:"):] if uri.startswith("file:/") else uri


def _dir(col):
    return F.regexp_extract(col, r"^(.*)/[^/]+$", 1)


def read_events(spark: SparkSession, paths: list[str]) -> DataFrame:
    """The lines of the given events.jsonl files with ``run_dir`` and a ``bad`` flag per line."""
    ev = (spark.read.schema(EVENT_SCHEMA).option("mode", "PERMISSIVE")
          .option("columnNameOfCorruptRecord", "_corrupt_record").json(paths))
    return (ev.withColumn("run_dir", _dir(F.col("_metadata.file_path")))
            .withColumn("bad", F.col("_corrupt_record").isNotNull() | F.col("type").isNull() | F.col("t").isNull())
            .drop("_corrupt_record"))


def zk_ground_truth(events: DataFrame) -> DataFrame:
    """One copy of each ZooKeeper transition per run, timed when ZooKeeper made it: the rule of
    :mod:`harness.record.truth` (:func:`~harness.record.truth.ground_truth` with ``retime``) over a DataFrame.

    A real run record holds the live watcher's ``zk.*`` events (``source: "watch"``, ``t`` = when
    the harness noticed) and, when ZooKeeper's transaction log was read after the run, the complete
    history again (``source: "txnlog"``), all emitted at the end of the run, so their ``t`` is the
    end of the run. For a run with txn-log events only those are kept (the ground truth, as the
    conformance checker does) and their ``t`` becomes ZooKeeper's own time of the change on the
    run's clock: ``zk_time - (wall - t)``. Runs without them keep their watcher (or source-less)
    events unchanged. Non-``zk.*`` events are untouched.
    """
    is_zk = F.coalesce(F.col("type").startswith(ZK_PREFIX), F.lit(False))
    from_txn = F.coalesce(F.col("source") == TXNLOG, F.lit(False))
    txn_runs = events.filter(is_zk & from_txn).select("run_dir").distinct().withColumn("_txn", F.lit(True))
    ev = events.join(F.broadcast(txn_runs), "run_dir", "left")
    has_txn = F.coalesce(F.col("_txn"), F.lit(False))
    keep = ~is_zk | (has_txn & from_txn) | (~has_txn & ~from_txn)    # truth.keep(from_txn, has_txn)
    zk_t = F.col("zk_time") - (F.col("wall") - F.col("t"))              # truth.change_time
    t = F.when(is_zk & from_txn & F.col("zk_time").isNotNull() & F.col("wall").isNotNull(), zk_t).otherwise(F.col("t"))
    return ev.filter(keep).withColumn("t", t).drop("_txn")


RUN_COLUMNS = [*[f for f in FIELDS if f not in ("skip_reason", "schedule_fault_kinds")], *AGG_FIELDS_NO_BAD,
               "fault_kinds", "path", *OUTCOME_FIELDS]


def load(spark: SparkSession, path: str, summaries: str | None = None, trust_stored: bool = False) -> Loaded:
    """Read every run record under ``path``; raise :class:`ReportInputError` if it cannot be read.

    With ``summaries`` (a directory; local ``path`` only) the compacted table there is brought up to
    date first (only new or changed records are read) and the report reads the table; otherwise the
    records are summarized in one pass and nothing is kept. ``trust_stored``: :mod:`reports.outcome`."""
    stats = None
    try:
        if summaries:
            stats = compact.update(spark, path, summaries, trust_stored)
            rows = compact.read_table(spark, summaries)
        else:
            rows = compact.summarize_all(spark, path, trust_stored)
    except Exception as e:  # AnalysisException: path does not exist, unsupported scheme, ...
        msg = str(e).splitlines()[0] if str(e) else e.__class__.__name__
        raise ReportInputError(f"cannot read run records under {path}: {msg}") from None
    loaded = from_summaries(rows)
    loaded.table = stats
    return loaded


def from_summaries(rows: DataFrame) -> Loaded:
    """The report's inputs from summary rows (:data:`reports.compact.SUMMARY_SCHEMA`), however made."""
    rows = rows.persist(StorageLevel.MEMORY_AND_DISK)
    skipped, seen = [], set()
    for r in (rows.filter(F.col("skip_reason").isNotNull()).select("run_dir", "skip_reason")
              .orderBy("run_dir").toLocalIterator()):
        path = display_path(r.run_dir)
        real = os.path.realpath(path) if path.startswith("/") else path   # a symlinked directory once
        if real not in seen:
            seen.add(real)
            skipped.append({"path": path, "reason": r.skip_reason})

    kinds = F.array_sort(F.array_distinct(F.concat(F.coalesce("schedule_fault_kinds", F.array()),
                                                   F.coalesce("event_fault_kinds", F.array()))))
    first = F.min("run_dir").over(Window.partitionBy("run_id"))
    usable = rows.filter(F.col("skip_reason").isNull()).withColumn("_kept", first)
    duplicates = [{"path": display_path(r.run_dir), "run_id": r.run_id, "kept": display_path(r._kept)}
                  for r in usable.filter(F.col("_kept") != F.col("run_dir"))
                  .select("run_dir", "run_id", "_kept").orderBy("run_dir").toLocalIterator()]
    kept = (usable.filter(F.col("_kept") == F.col("run_dir"))
            .withColumn("fault_kinds", F.when(F.size(kinds) > 0, kinds).otherwise(F.array(F.lit("none"))))
            .withColumn("path", F.regexp_replace("run_dir", r"^file:", ""))
            .persist(StorageLevel.MEMORY_AND_DISK))
    runs = kept.select(*RUN_COLUMNS)
    derived = kept.select("run_dir", F.col("derived_faults").alias("faults"),
                          F.col("derived_windows").alias("windows"))
    return Loaded(runs=runs, derived=derived, skipped=skipped, duplicates=duplicates, _cached=[kept, rows])


def timeline_events(spark: SparkSession, run_dirs: list[str]) -> DataFrame:
    """The good events of the given runs (for the timelines), on ZooKeeper's ground truth."""
    if not run_dirs:
        return spark.createDataFrame([], EVENT_SCHEMA).withColumn("run_dir", F.lit(None).cast("string"))
    ev = read_events(spark, [d.rstrip("/") + "/events.jsonl" for d in run_dirs])
    return zk_ground_truth(ev.filter(~F.col("bad")).drop("bad"))
