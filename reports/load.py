"""Discover and read every run record under a path with Spark.

* ``metadata.json`` / ``verdict.json``: read as binary files and parsed per run directory on
  the executors (:func:`reports.parse.parse_run`);
* ``events.jsonl``: read with ``spark.read.json`` and an explicit schema (never collected to the
  driver), malformed lines caught in ``_corrupt_record``;
* in-progress ``.tmp-*`` directories are ignored by Hadoop's hidden-path filter, as the record
  format requires.

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

from reports.parse import PARSED_SCHEMA, parse_run

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
    events: DataFrame        # events of usable runs, persisted, with ``run_dir``
    skipped: list[dict]      # [{"path", "reason"}] for every unusable run directory
    duplicates: list[dict] = field(default_factory=list)  # [{"path", "run_id", "kept"}] read twice, counted once


def display_path(uri: str) -> str:
    """``file:/x/y`` -> ``/x/y``; other schemes are kept."""
    return uri[len("file:"):] if uri.startswith("file:/") else uri


def _files(spark: SparkSession, path: str, glob: str) -> DataFrame:
    return (spark.read.format("binaryFile").option("pathGlobFilter", glob)
            .option("recursiveFileLookup", "true").load(path))


def _dir(col):
    return F.regexp_extract(col, r"^(.*)/[^/]+$", 1)


def _parse_partition(rows):
    for run_dir, files in rows:
        yield parse_run(run_dir, dict(files))


def read_events(spark: SparkSession, path: str) -> DataFrame:
    """All events.jsonl lines under ``path`` with ``run_dir`` and a ``bad`` flag per line."""
    ev = (spark.read.schema(EVENT_SCHEMA).option("mode", "PERMISSIVE")
          .option("columnNameOfCorruptRecord", "_corrupt_record")
          .option("pathGlobFilter", "events.jsonl").option("recursiveFileLookup", "true").json(path))
    return (ev.withColumn("run_dir", _dir(F.col("_metadata.file_path")))
            .withColumn("bad", F.col("_corrupt_record").isNotNull() | F.col("type").isNull() | F.col("t").isNull())
            .drop("_corrupt_record"))


def event_aggregates(events: DataFrame) -> DataFrame:
    """Per-run counts from the events: lines, malformed lines, client operations, faults, ack gaps."""
    send = (F.col("type") == "client") & (F.col("f") == "send")
    agg = events.groupBy("run_dir").agg(
        F.count(F.lit(1)).alias("n_events"),
        F.sum(F.col("bad").cast("long")).alias("bad_lines"),
        F.max("t").alias("last_t"),
        F.sum((send & (F.col("phase") == "invoke")).cast("long")).alias("sends"),
        F.sum((send & (F.col("phase") == "ok")).cast("long")).alias("acknowledged_writes"),
        F.sum((send & (F.col("phase") == "fail")).cast("long")).alias("send_failed"),
        F.sum((send & (F.col("phase") == "info")).cast("long")).alias("send_unknown"),
        F.sum(((F.col("type") == "client") & F.col("f").isin("poll", "drain") & (F.col("phase") == "ok"))
              .cast("long")).alias("consumed"),
        F.sum((F.col("type") == "fault.start").cast("long")).alias("faults"),
        F.array_sort(F.collect_set(F.when(F.col("type") == "fault.start", F.col("fault")))).alias("event_fault_kinds"),
        F.sum(((F.col("type") == "zk.partition_state") & (F.col("source") == "txnlog")).cast("long"))
        .alias("_ps_txnlog"),
        F.sum(((F.col("type") == "zk.partition_state") & ~F.coalesce(F.col("source") == "txnlog", F.lit(False)))
              .cast("long")).alias("_ps_other"),
    )
    # The same states are recorded twice when the txn log was read (zk_ground_truth): count one copy.
    agg = (agg.withColumn("partition_states", F.when(F.col("_ps_txnlog") > 0, F.col("_ps_txnlog"))
                          .otherwise(F.col("_ps_other"))).drop("_ps_txnlog", "_ps_other"))
    acked = events.filter(send & (F.col("phase") == "ok")).select("run_dir", "t", "seq")
    w = Window.partitionBy("run_dir").orderBy("t", "seq")
    gaps = (acked.withColumn("gap", F.col("t") - F.lag("t").over(w))
            .groupBy("run_dir").agg(F.max("gap").alias("max_ack_gap_s")))
    return agg.join(gaps, "run_dir", "left")


def zk_ground_truth(events: DataFrame) -> DataFrame:
    """One copy of each ZooKeeper transition per run, timed when ZooKeeper made it.

    A real run record holds the live watcher's ``zk.*`` events (``source: "watch"``, ``t`` = when
    the harness noticed) and, when ZooKeeper's transaction log was read after the run, the complete
    history again (``source: "txnlog"``), all emitted at the end of the run, so their ``t`` is the
    end of the run. For a run with txn-log events only those are kept (the ground truth, as the
    conformance checker does) and their ``t`` becomes ZooKeeper's own time of the change on the
    run's clock: ``zk_time - (wall - t)``. Runs without them keep their watcher (or source-less)
    events unchanged. Non-``zk.*`` events are untouched.
    """
    is_zk = F.coalesce(F.col("type").startswith("zk."), F.lit(False))
    from_txn = F.coalesce(F.col("source") == "txnlog", F.lit(False))
    txn_runs = events.filter(is_zk & from_txn).select("run_dir").distinct().withColumn("_txn", F.lit(True))
    ev = events.join(F.broadcast(txn_runs), "run_dir", "left")
    has_txn = F.coalesce(F.col("_txn"), F.lit(False))
    keep = ~is_zk | (has_txn & from_txn) | (~has_txn & ~from_txn)
    zk_t = F.col("zk_time") - (F.col("wall") - F.col("t"))
    t = F.when(is_zk & from_txn & F.col("zk_time").isNotNull() & F.col("wall").isNotNull(), zk_t).otherwise(F.col("t"))
    return ev.filter(keep).withColumn("t", t).drop("_txn")


def load(spark: SparkSession, path: str) -> Loaded:
    """Read every run record under ``path``; raise :class:`ReportInputError` if it cannot be read."""
    try:
        files = _files(spark, path, "{metadata.json,verdict.json}").select("path", "content")
        ev_files = _files(spark, path, "events.jsonl").select(_dir(F.col("path")).alias("run_dir"))
        ev_files = ev_files.withColumn("has_events", F.lit(True))
    except Exception as e:  # AnalysisException: path does not exist, unsupported scheme, ...
        msg = str(e).splitlines()[0] if str(e) else e.__class__.__name__
        raise ReportInputError(f"cannot read run records under {path}: {msg}") from None

    pairs = files.rdd.map(lambda r: (r.path.rsplit("/", 1)[0], (r.path.rsplit("/", 1)[1], bytes(r.content))))
    parsed_rdd = pairs.groupByKey().mapPartitions(_parse_partition)
    parsed = spark.createDataFrame(parsed_rdd, PARSED_SCHEMA)

    events_all = read_events(spark, path).persist(StorageLevel.MEMORY_AND_DISK)
    ev_agg = event_aggregates(events_all)

    combined = (parsed.join(ev_files, "run_dir", "full_outer").join(ev_agg, "run_dir", "left"))
    reason = F.concat_ws("; ", F.array_compact(F.array(
        F.when(F.col("run_id").isNull() & F.col("skip_reason").isNull(), F.lit("metadata.json: missing; "
                                                                              "verdict.json: missing")),
        F.col("skip_reason"),
        F.when(F.col("has_events").isNull(), F.lit("events.jsonl: missing")),
        F.when(F.col("bad_lines") > 0, F.concat(F.lit("events.jsonl: "), F.col("bad_lines").cast("string"),
                                                F.lit(" malformed line(s)"))),
    )))
    combined = combined.withColumn("skip_reason", F.when(reason != "", reason))
    combined = combined.persist(StorageLevel.MEMORY_AND_DISK)

    skipped, seen = [], set()
    for r in (combined.filter(F.col("skip_reason").isNotNull()).select("run_dir", "skip_reason")
              .orderBy("run_dir").collect()):
        path = display_path(r.run_dir)
        real = os.path.realpath(path) if path.startswith("/") else path   # a symlinked directory once
        if real not in seen:
            seen.add(real)
            skipped.append({"path": path, "reason": r.skip_reason})

    kinds = F.array_sort(F.array_distinct(F.concat(F.coalesce("schedule_fault_kinds", F.array()),
                                                   F.coalesce("event_fault_kinds", F.array()))))
    first = F.first("run_dir").over(Window.partitionBy("run_id").orderBy("run_dir")
                                    .rowsBetween(Window.unboundedPreceding, Window.currentRow))
    usable = (combined.filter(F.col("skip_reason").isNull()).withColumn("_kept", first)
              .persist(StorageLevel.MEMORY_AND_DISK))
    duplicates = [{"path": display_path(r.run_dir), "run_id": r.run_id, "kept": display_path(r._kept)}
                  for r in usable.filter(F.col("_kept") != F.col("run_dir"))
                  .select("run_dir", "run_id", "_kept").orderBy("run_dir").collect()]
    runs = (usable.filter(F.col("_kept") == F.col("run_dir"))
            .withColumn("fault_kinds", F.when(F.size(kinds) > 0, kinds).otherwise(F.array(F.lit("none"))))
            .withColumn("path", F.regexp_replace("run_dir", r"^file:", ""))
            .drop("skip_reason", "has_events", "bad_lines", "schedule_fault_kinds", "event_fault_kinds", "_kept"))
    runs = runs.persist(StorageLevel.MEMORY_AND_DISK)

    events = zk_ground_truth(events_all.filter(~F.col("bad"))
                             .join(F.broadcast(runs.select("run_dir")), "run_dir", "left_semi")
                             .drop("bad"))
    return Loaded(runs=runs, events=events, skipped=skipped, duplicates=duplicates)
