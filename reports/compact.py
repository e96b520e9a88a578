"""Run records -> summary rows, and the compacted Parquet table of them kept beside the records.

* :func:`scan` lists the run directories under a local RUNS_DIR (as Spark lists them: names
  starting with ``.`` or ``_`` are hidden, symlinked directories are followed, except a link back
  to an enclosing directory) with a signature of each record (size and mtime of its files);
* :func:`summarize_all` reads them in one streaming pass on the driver (no Spark job per file, no
  Python worker) into a DataFrame of :data:`SUMMARY_SCHEMA`; other paths (``s3a://``, ``hdfs://``)
  are read by Spark as binary files and summarized on the executors by the same function;
* :func:`update` keeps ``RUNS_DIR/_summaries/`` (Parquet, one directory per batch: ``batch=N``):
  only records not yet in it (new path, or a changed signature) are summarized and appended as a
  new batch, written as one file; a removed or changed record, or more than :data:`MAX_BATCHES` batches, rewrites the
  table into one generation. ``manifest.json`` (written last, atomically) names the committed
  generation and batches and each record's signature; rows of uncommitted batches are ignored.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from harness import __version__
from reports.availability import DERIVED_SCHEMA
from reports.outcome import OUTCOME_FIELDS
from reports.parse import PARSED_SCHEMA
from reports.summary import FILES, summarize

MANIFEST = "manifest.json"
MANIFEST_VERSION = 3     # 1: batches partitioned by date and broker (a file per day and version in every batch);
                         # 2: no outcome columns (verdicts taken from verdict.json)
MAX_BATCHES = 16
ROWS_PER_FILE = 50_000   # a rewritten generation: about this many rows per Parquet file
_L, _D = T.LongType(), T.DoubleType()
SUMMARY_SCHEMA = T.StructType([
    *PARSED_SCHEMA.fields,
    T.StructField("has_events", T.BooleanType()),
    *[T.StructField(n, t) for n, t in (
        ("n_events", _L), ("bad_lines", _L), ("last_t", _D), ("sends", _L), ("acknowledged_writes", _L),
        ("send_failed", _L), ("send_unknown", _L), ("consumed", _L), ("faults", _L),
        ("event_fault_kinds", T.ArrayType(T.StringType())), ("partition_states", _L), ("max_ack_gap_s", _D))],
    T.StructField("derived_faults", DERIVED_SCHEMA["faults"].dataType),
    T.StructField("derived_windows", DERIVED_SCHEMA["windows"].dataType),
    *[T.StructField(n, T.StringType()) for n in OUTCOME_FIELDS],
    T.StructField("sig", T.StringType()),
])
TABLE_SCHEMA = T.StructType([*SUMMARY_SCHEMA.fields, T.StructField("batch", T.LongType())])


def is_local(path: str) -> bool:
    return path.startswith("file:") or ":" not in path.split("/", 1)[0]


def local_path(path: str) -> str:
    return os.path.abspath(path[len("file:"):] if path.startswith("file:") else path)


def scan(root: str) -> dict[str, tuple[dict[str, str], str]]:
    """``{run_dir URI: ({file name: path}, signature)}`` for every run directory under ``root``."""
    out: dict[str, tuple[dict[str, str], str]] = {}
    root = local_path(root)
    stack = [(root, os.path.realpath(root), frozenset())]
    while stack:
        d, real, ancestors = stack.pop()
        files, sig = {}, []
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            if e.name.startswith((".", "_")):
                continue
            if e.name in FILES and e.is_file():
                st = e.stat()
                files[e.name] = e.path
                sig.append(f"{e.name[0]}{st.st_size}:{st.st_mtime_ns}")
            elif e.is_dir():
                sub_real = os.path.realpath(e.path) if e.is_symlink() else os.path.join(real, e.name)
                if sub_real not in ancestors and sub_real != real:   # a symlink loop is followed once
                    stack.append((e.path, sub_real, ancestors | {real}))
        if files:
            out["file:" + d] = (files, ",".join(sorted(sig)))
    return out


def _read(paths: dict[str, str]) -> dict[str, bytes]:
    got = {}
    for name, p in paths.items():
        try:
            with open(p, "rb") as fh:
                got[name] = fh.read()
        except OSError:
            pass      # vanished or unreadable: the file is missing, the skip reason says so
    return got


def rows_frame(spark: SparkSession, rows: list[tuple]) -> DataFrame:
    return spark.createDataFrame(rows, SUMMARY_SCHEMA, verifySchema=False)


def summarize_local(listing: dict[str, tuple[dict[str, str], str]], run_dirs=None,
                    trust_stored: bool = False) -> list[tuple]:
    """Summary rows of the listed records (all, or ``run_dirs``), read one after the other."""
    keys = sorted(listing if run_dirs is None else run_dirs)
    return [summarize(d, _read(listing[d][0]), listing[d][1], trust_stored) for d in keys]


PARALLEL_MIN = 200       # fewer new records than this are summarized on the driver (a Spark job costs ~1 s)


def summarize_listed(spark: SparkSession, listing: dict, run_dirs=None, trust_stored: bool = False) -> DataFrame:
    """Summary rows of the listed local records as a DataFrame. With a ``local`` master and at least
    :data:`PARALLEL_MIN` records they are read and judged in a Spark job, ``mapPartitions`` over the
    record paths (every core: re-deriving the outcomes is the costly part, ~2 ms a record); with a
    cluster master (whose executors may not see this machine's files) or few records, on the driver."""
    keys = sorted(listing if run_dirs is None else run_dirs)
    if len(keys) < PARALLEL_MIN or not spark.sparkContext.master.startswith("local"):
        return rows_frame(spark, summarize_local(listing, keys, trust_stored))
    items = [(d, listing[d][0], listing[d][1]) for d in keys]
    slices = max(1, min(len(items) // 100, spark.sparkContext.defaultParallelism * 4))

    def part(it):
        for d, paths, sig in it:
            yield summarize(d, _read(paths), sig, trust_stored)
    return spark.createDataFrame(spark.sparkContext.parallelize(items, slices).mapPartitions(part), SUMMARY_SCHEMA,
                                 verifySchema=False)


def _summarize_files(rows, trust_stored: bool = False):
    for run_dir, files in rows:
        yield summarize(run_dir, {name: content for name, content in files}, None, trust_stored)


def summarize_remote(spark: SparkSession, path: str, trust_stored: bool = False) -> DataFrame:
    """Summary rows of every record under a path Spark reads (s3a://, hdfs://), on the executors."""
    files = (spark.read.format("binaryFile").option("pathGlobFilter", "{metadata.json,verdict.json,events.jsonl}")
             .option("recursiveFileLookup", "true").load(path).select("path", "content"))
    pairs = files.rdd.map(lambda r: (r.path.rsplit("/", 1)[0], (r.path.rsplit("/", 1)[1], bytes(r.content))))
    return spark.createDataFrame(pairs.groupByKey().mapPartitions(lambda it: _summarize_files(it, trust_stored)),
                                 SUMMARY_SCHEMA)


def summarize_all(spark: SparkSession, path: str, trust_stored: bool = False) -> DataFrame:
    """Summary rows of every record under ``path`` (no table kept); a list: those record directories
    (an s3:// RUNS_PATH's complete records as s3a:// URLs, reports/s3a.py)."""
    if isinstance(path, (list, tuple)):
        return summarize_remote(spark, list(path), trust_stored)
    if is_local(path):
        return summarize_listed(spark, scan(path), None, trust_stored)
    return summarize_remote(spark, path, trust_stored)


# -- the compacted table -------------------------------------------------------------------------
def _raw_manifest(table_dir: Path) -> dict | None:
    try:
        m = json.loads((table_dir / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    return m if isinstance(m, dict) else None


def judged_by(trust_stored: bool) -> dict:
    """How a table's outcome columns were made: a table made another way (other checkers, or stored
    verdicts trusted where the report now re-derives them) is rebuilt, never mixed."""
    return {"harness_version": __version__, "trust_stored": bool(trust_stored)}


def _manifest(table_dir: Path, trust_stored: bool | None = None) -> dict | None:
    m = _raw_manifest(table_dir)
    if m is None or m.get("version") != MANIFEST_VERSION:
        return None
    return m if trust_stored is None or m.get("judged_by") == judged_by(trust_stored) else None


def _write_manifest(table_dir: Path, m: dict) -> None:
    tmp = table_dir / f".{MANIFEST}.{uuid.uuid4().hex}"
    tmp.write_text(json.dumps(m, separators=(",", ":")))
    os.replace(tmp, table_dir / MANIFEST)


def _write(df: DataFrame, target: Path, batch: int, mode: str, files: int = 1) -> None:
    """``df`` as batch ``batch`` of the generation ``target`` (``target/batch=N/``), in ``files`` files.

    Not partitioned by day or broker: a batch of a thousand records spans a hundred (day, version)
    pairs, and a Parquet file per pair made an append cost ~70 ms per file (13–19 s for 1,000
    records, against ~0.5 s for one file); the table is small enough to be read whole."""
    df = df.withColumn("batch", F.lit(batch).cast("long"))
    df = df.coalesce(1) if files <= 1 else df.repartition(files)
    df.write.mode(mode).partitionBy("batch").parquet(target.as_uri())


def read_table(spark: SparkSession, table_dir: str | Path) -> DataFrame:
    """The committed rows of a compacted table (columns of :data:`SUMMARY_SCHEMA`)."""
    table_dir = Path(table_dir)
    m = _manifest(table_dir)
    if m is None:
        raise FileNotFoundError(f"{table_dir}: no compacted table ({MANIFEST} missing or unreadable)")
    df = spark.read.schema(TABLE_SCHEMA).parquet((table_dir / m["generation"]).as_uri())
    return df.filter(F.col("batch").isin(m["batches"])).select(*SUMMARY_SCHEMA.names)


def update(spark: SparkSession, runs_path: str, table_dir: str | Path | None = None,
           trust_stored: bool = False) -> dict:
    """Bring the compacted table of ``runs_path`` (a local directory) up to date; returns what it did:
    ``{"records", "added", "removed", "rewritten", "seconds", "table"}``."""
    t0 = time.time()
    table_dir = Path(table_dir or Path(local_path(runs_path)) / "_summaries")
    table_dir.mkdir(parents=True, exist_ok=True)
    listing = scan(runs_path)
    m = _manifest(table_dir, trust_stored)
    known: dict[str, str] = m["records"] if m else {}
    new = sorted(d for d, (_, sig) in listing.items() if known.get(d) != sig)
    gone = sorted(d for d in known if d not in listing or known[d] != listing[d][1])
    rewrite = m is None or bool(gone) or len(m["batches"]) >= MAX_BATCHES
    if new or rewrite:
        batch = max(m["batches"], default=-1) + 1 if m else 0
        fresh = summarize_listed(spark, listing, new, trust_stored)
        old_gen = None
        if rewrite:
            gen = f"gen-{uuid.uuid4().hex[:12]}"
            if m is not None:
                old_gen = m["generation"]
                keep = read_table(spark, table_dir)
                if gone:
                    drop = spark.createDataFrame([(d,) for d in gone], "run_dir string")
                    keep = keep.join(F.broadcast(drop), "run_dir", "left_anti")
                fresh = keep.select(*SUMMARY_SCHEMA.names).unionByName(fresh)
            else:
                old = _raw_manifest(table_dir)      # a table of an older layout: rebuilt, then removed
                old_gen = old.get("generation") if old is not None else None
                if not (isinstance(old_gen, str) and old_gen.startswith("gen-") and "/" not in old_gen):
                    old_gen = None
            _write(fresh, table_dir / gen, batch, "overwrite", files=-(-len(listing) // ROWS_PER_FILE))
            batches = [batch]
        else:
            gen = m["generation"]
            _write(fresh, table_dir / gen, batch, "append")
            batches = [*m["batches"], batch]
        _write_manifest(table_dir, {"version": MANIFEST_VERSION, "generation": gen, "batches": batches,
                                    "judged_by": judged_by(trust_stored),
                                    "updated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                    "records": {d: sig for d, (_, sig) in sorted(listing.items())}})
        if old_gen and old_gen != gen:
            shutil.rmtree(table_dir / old_gen, ignore_errors=True)
    return {"records": len(listing), "added": len(new), "removed": sum(1 for d in gone if d not in listing),
            "rewritten": rewrite, "seconds": round(time.time() - t0, 3), "table": str(table_dir)}
