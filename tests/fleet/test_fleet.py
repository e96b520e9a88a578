"""The fleet, end to end on one host: two CI "jobs" run the two shards of the smoke suite on real clusters
and publish their records to a real S3-compatible server (SeaweedFS on 127.0.0.1); the report runs on a
Spark standalone cluster (a master and two workers on 127.0.0.1) reading ``s3a://`` and must give the
same tables and gate decision as a local report over the same records downloaded.

Long (two shards of the smoke suite on Docker, then two Spark jobs): marked ``fleet`` and left out of
``./run.sh test``; run it with
``python -m pytest -p no:cacheprovider -m fleet tests/fleet/test_fleet.py -s`` (on a host whose cluster
slots are shared: ``KAFKA_CHAOS_SLOT_RUN=/work/slots/slot-run``, which wraps each shard; docs/fleet.md).
Each step's time is printed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.shard import select
from harness.record.storage import S3Store
from suites.catalog import scenarios_for

pytestmark = [pytest.mark.fleet, pytest.mark.docker, pytest.mark.spark, pytest.mark.s3]

ROOT = Path(__file__).resolve().parents[2]
SHARD_TIMEOUT_S = 3600
# On a shared host each shard's clusters wait for a cluster slot: KAFKA_CHAOS_SLOT_RUN=/work/slots/slot-run
# wraps each shard (only), so the S3 server and the Spark cluster do not hold one.
SLOT_RUN = os.environ.get("KAFKA_CHAOS_SLOT_RUN", "").split() or None
REPORT_TIMEOUT_S = 1800


def _cli(*args, timeout, wrap: list[str] | None = None):
    t0 = time.monotonic()
    r = subprocess.run([*(wrap or []), sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True,
                       cwd=ROOT, timeout=timeout, env=dict(os.environ))
    return r, time.monotonic() - t0


def _summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


PATH_COLUMNS = {"run_dir", "path"}           # where a record was read from: s3a://... vs the download folder


def _tables(out: Path) -> dict[str, list]:
    """Every Parquet table of a report as sorted rows, without the columns naming where records were read."""
    from reports.spark import build_session

    spark = build_session("local[1]", app_name="fleet-compare")
    tables = {}
    for t in sorted(p for p in (out / "tables").iterdir() if p.is_dir()):
        df = spark.read.parquet(t.as_uri())
        df = df.select(*[c for c in df.columns if c not in PATH_COLUMNS])
        tables[t.name] = sorted(repr(sorted(r.asDict(recursive=True).items())) for r in df.collect())
    return tables


def test_two_shards_to_s3_then_a_cluster_report_equals_the_local_one(seaweedfs, spark_cluster, tmp_path):
    bucket = seaweedfs.make_bucket(f"fleet-{int(time.time())}")
    url = f"s3://{bucket}/smoke/nightly-1"
    smoke = [s.name for s in scenarios_for("smoke")]
    figures = {}
    for i in (1, 2):                                       # two CI jobs, one after the other on this host
        r, secs = _cli("run", "smoke", "--shard", f"{i}/2", "--parallel", "1", "--runs-dir", url,
                       timeout=SHARD_TIMEOUT_S, wrap=SLOT_RUN)
        figures[f"shard {i}/2"] = secs
        assert r.returncode in (0, 1), r.stderr[-3000:]    # 0/1: every run decided (1: a broker-observable FAIL)
        assert f"run records under {url}/" in r.stderr
    store = S3Store(url)
    ids = store.list_records()
    meta = {}
    dl = tmp_path / "downloaded"
    for d in store.download_all(dl):
        meta[d.name] = json.loads((d / "metadata.json").read_text())
    ran = sorted(m["scenario"] for m in meta.values())
    assert ran == sorted(smoke), ran                        # each smoke scenario exactly once across the shards
    for i in (1, 2):
        assert set(select(smoke, f"{i}/2")) <= set(ran)

    remote, t_remote = _cli("report", url, "-o", str(tmp_path / "cluster"), "--master", spark_cluster,
                            timeout=REPORT_TIMEOUT_S)
    local, t_local = _cli("report", str(dl), "-o", str(tmp_path / "local"), timeout=REPORT_TIMEOUT_S)
    figures.update({"report on the cluster (s3a)": t_remote, "report local[*] (downloaded)": t_local})
    assert remote.returncode in (0, 1), remote.stderr[-3000:]
    assert remote.returncode == local.returncode, (remote.stdout, local.stdout)
    s_remote, s_local = _summary(tmp_path / "cluster"), _summary(tmp_path / "local")
    assert s_remote["spark"]["master"] == spark_cluster and s_local["spark"]["master"].startswith("local")
    assert s_remote["runs_path"] == url
    assert s_remote["totals"] == s_local["totals"] and s_remote["totals"]["runs"] == len(ids) == len(smoke)
    assert s_remote["gate"] == s_local["gate"]
    assert s_remote["tables"] == s_local["tables"]                 # row counts of every table
    assert _tables(tmp_path / "cluster") == _tables(tmp_path / "local")   # and every row of every Parquet table
    assert s_remote["skipped_records"] == s_local["skipped_records"] == []
    assert [ln for ln in remote.stdout.splitlines() if ln.startswith(("report:", "gate:"))] == \
           [ln for ln in local.stdout.splitlines() if ln.startswith(("report:", "gate:"))]
    print("\n" + "\n".join(f"{k}: {v:.1f} s" for k, v in figures.items()))
    print(f"records: {len(ids)}; gate {'PASSED' if s_remote['gate']['passed'] else 'FAILED'}; "
          f"verdicts {sorted((m['scenario'], json.loads((dl / k / 'verdict.json').read_text())['verdict']) for k, m in meta.items())}")
