"""The HTML report bundles each shown run's container logs (RUN_DIR/logs/*.log.gz) into its own directory
(logs/<run_id>/) and links them relative to the report, so the directory works on its own."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

from reports.html import log_links


def _record(root: Path, *containers: str) -> Path:
    run = root / "runs" / "20261126T100000Z-isr.pause_follower-abc123"
    (run / "logs").mkdir(parents=True)
    for c in containers:
        (run / "logs" / f"{c}.log.gz").write_bytes(gzip.compress(b"[2026-11-26] started\n"))
    (run / "logs" / "notes.txt").write_text("not a container log")
    return run


def test_links_every_container_log_bundled_inside_the_report(tmp_path):
    run = _record(tmp_path, "kc-r1-kafka-2", "kc-r1-kafka-1", "kc-r1-zk-1")
    out = tmp_path / "report"
    out.mkdir()
    html = log_links(str(run), out)
    links = re.findall(r'<a class="logs" href="([^"]+)">([^<]+)</a>', html)
    assert [name for _, name in links] == ["kc-r1-kafka-1", "kc-r1-kafka-2", "kc-r1-zk-1"]
    for href, name in links:
        assert not href.startswith(("/", "..")) and "://" not in href, href
        target = (out / href).resolve()
        assert target.is_relative_to(out.resolve()), href          # resolves inside the report directory
        assert target.read_bytes() == (run / "logs" / f"{name}.log.gz").read_bytes()
    assert not (out / "logs" / run.name / "notes.txt").exists()    # only the container logs
    # the report directory moved elsewhere (an uploaded CI artifact): every link still resolves
    moved = tmp_path / "elsewhere" / "artifact"
    moved.parent.mkdir()
    out.rename(moved)
    import shutil
    shutil.rmtree(tmp_path / "runs")
    for href, name in links:
        assert gzip.decompress((moved / href).read_bytes()) == b"[2026-11-26] started\n"


def test_a_file_uri_run_dir_is_local_and_no_out_gives_absolute_uris(tmp_path):
    run = _record(tmp_path, "kc-r1-kafka-1")
    html = log_links("file:" + str(run), None)
    assert f'href="{(run / "logs" / "kc-r1-kafka-1.log.gz").as_uri()}"' in html


def test_no_links_for_remote_records_or_records_without_logs(tmp_path):
    assert log_links("s3a://bucket/prefix/20261126T100000Z-x-abc123", tmp_path) == ""
    bare = tmp_path / "runs" / "old-record"
    bare.mkdir(parents=True)
    assert log_links(str(bare), tmp_path) == ""
    assert log_links(None, tmp_path) == ""
