"""Run records in object storage, against a real S3-compatible server (SeaweedFS on 127.0.0.1, never a mock).

* every listener of the server is on loopback;
* a published record is listed, downloads byte-identical, and ``check s3://...`` judges it as the
  local record is judged;
* a record whose upload stopped before its manifest is invisible to every reader (list, check, report
  input), and publishing it again completes it;
* credentials come from the standard AWS variables: wrong ones are one error line before any Docker
  work; an endpoint nobody answers is retried a bounded number of times, then one line, and the
  record stays staged locally.
"""

from __future__ import annotations

import filecmp
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.record.storage import MANIFEST, Publisher, S3Store, record_files
from seaweed import free_port

pytestmark = pytest.mark.s3

ROOT = Path(__file__).resolve().parents[2]
SYNTHETIC = ROOT / "tests" / "fixtures" / "runs" / "synthetic"
GOOD = sorted(d for d in SYNTHETIC.iterdir() if (d / "verdict.json").exists() and (d / "metadata.json").exists()
              and (d / "events.jsonl").exists() and not d.name.startswith("."))[:4]


def _cli(*args, env=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout, env={**os.environ, **(env or {})})


@pytest.fixture
def bucket(seaweedfs, request):
    name = f"t{int(time.time() * 1000) % 10**9}-{request.node.name[:20].lower().replace('_', '-')}".strip("-")
    return seaweedfs.make_bucket(name)


def test_every_listener_is_on_loopback(seaweedfs):
    ls = seaweedfs.listeners()
    assert len(ls) >= seaweedfs.min_listeners, ls         # SeaweedFS: master, volume, filer, s3 and their gRPC ports
    assert all(addr == "127.0.0.1" for addr, _ in ls), ls


def test_published_record_round_trips_and_check_reads_it(seaweedfs, bucket, tmp_path):
    store = S3Store(f"s3://{bucket}/nightly/host-a")
    urls = [store.publish(d) for d in GOOD]
    assert store.list_records() == sorted(d.name for d in GOOD)
    assert urls[0] == f"s3://{bucket}/nightly/host-a/{GOOD[0].name}"
    got = store.download_all(tmp_path / "dl")
    for d, g in zip(GOOD, got):
        assert record_files(d) == record_files(g)
        assert all(filecmp.cmp(d / f, g / f, shallow=False) for f in record_files(d))
    remote = _cli("check", f"s3://{bucket}/nightly/host-a")
    local = _cli("check", *map(str, GOOD))
    assert remote.returncode == local.returncode
    strip = lambda out: [" ".join(line.split()[:2]) for line in out.splitlines()]   # noqa: E731 - state + verdict
    assert strip(remote.stdout) == strip(local.stdout)
    assert f"s3://{bucket}/nightly/host-a/{GOOD[0].name}" in remote.stdout
    one = _cli("check", urls[1])                                  # the URL of one record
    assert one.returncode == _cli("check", str(GOOD[1])).returncode and urls[1] in one.stdout


def test_a_record_without_its_manifest_is_invisible_until_published_again(seaweedfs, bucket):
    store = S3Store(f"s3://{bucket}/p")
    store.publish(GOOD[0])
    half = GOOD[1]
    c = seaweedfs.client()
    for rel in record_files(half):                      # an upload that died before the manifest
        c.upload_file(str(half / rel), bucket, f"p/{half.name}/{rel}")
    assert store.list_records() == [GOOD[0].name]
    from reports.s3a import record_paths
    assert record_paths(f"s3://{bucket}/p") == [f"s3a://{bucket}/p/{GOOD[0].name}"]
    r = _cli("check", f"s3://{bucket}/p")
    assert GOOD[0].name in r.stdout and half.name not in r.stdout + r.stderr
    store.publish(half)                                  # publishing again completes it
    assert store.list_records() == sorted([GOOD[0].name, half.name])
    keys = [o["Key"] for o in c.list_objects_v2(Bucket=bucket, Prefix=f"p/{half.name}/")["Contents"]]
    assert f"p/{half.name}/{MANIFEST}" in keys


def test_publisher_stages_locally_then_uploads_and_removes_the_staged_copy(seaweedfs, bucket, tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKA_CHAOS_STAGING", str(tmp_path / "staging"))
    pub = Publisher(f"s3://{bucket}/ci/job-1")
    assert Path(pub.local) == tmp_path / "staging" / bucket / "ci/job-1"
    staged = Path(pub.local) / GOOD[2].name
    shutil.copytree(GOOD[2], staged)
    assert pub.publish(staged) == f"s3://{bucket}/ci/job-1/{GOOD[2].name}"
    assert not staged.exists() and not pub.failed
    assert S3Store(f"s3://{bucket}/ci/job-1").list_records() == [GOOD[2].name]


def test_wrong_credentials_are_one_line_before_any_docker_work(seaweedfs, bucket):
    if not seaweedfs.checks_credentials:
        pytest.skip(f"{type(seaweedfs).__name__} accepts any credentials")
    r = _cli("run", "smoke", "--runs-dir", f"s3://{bucket}/x", env={"AWS_SECRET_ACCESS_KEY": "wrong",
                                                                   "DOCKER_HOST": "unix:///nonexistent"})
    assert r.returncode == 2, r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith(f"kafka-chaos: error: --runs-dir s3://{bucket}/x at {seaweedfs.endpoint}: bucket {bucket}:")
    missing = _cli("run", "smoke", "--runs-dir", "s3://no-such-bucket-here/x",
                   env={"DOCKER_HOST": "unix:///nonexistent"})
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1
    assert "no-such-bucket-here" in missing.stderr


def test_an_endpoint_nobody_answers_is_retried_a_bounded_number_of_times(seaweedfs, tmp_path, monkeypatch):
    dead = f"http://127.0.0.1:{free_port()}"            # connection refused: a transient error
    monkeypatch.setenv("KAFKA_CHAOS_STAGING", str(tmp_path / "staging"))
    pub = Publisher("s3://somebucket/p", endpoint=dead)
    staged = Path(pub.local) / GOOD[0].name
    shutil.copytree(GOOD[0], staged)
    t0 = time.monotonic()
    assert pub.publish(staged) == str(staged)            # not published: kept, and remembered
    assert time.monotonic() - t0 < 120
    assert staged.exists() and len(pub.failed) == 1
    assert "after 4 attempts" in pub.failed[0][1]
    with pytest.raises(HarnessError, match=r"1 run record\(s\) could not be published to s3://somebucket/p"):
        pub.raise_failed()
