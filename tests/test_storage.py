"""harness/record/storage.py without a server: URLs, staging directories, the bounded retry of transient errors."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from harness.errors import HarnessError
from harness.record.storage import is_remote, local_runs_dir, record_files, split_url, staging_dir, with_retries


@pytest.mark.parametrize("url,expected", [("s3://bucket", ("bucket", "")), ("s3://bucket/", ("bucket", "")),
                                          ("s3://my.bucket/a/b/", ("my.bucket", "a/b")),
                                          ("s3a://b-1/x", ("b-1", "x"))])
def test_split_url(url, expected):
    assert split_url(url) == expected


@pytest.mark.parametrize("bad", ["s3://", "s3://B/x", "s3://a/x", "http://bucket/x", "bucket/x"])
def test_malformed_url_is_a_usage_error(bad):
    with pytest.raises(HarnessError, match="not an object-storage runs dir"):
        split_url(bad)


def test_local_runs_dir_is_itself_and_remote_is_staged(tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKA_CHAOS_STAGING", str(tmp_path))
    assert not is_remote("runs") and local_runs_dir("runs") == "runs"
    assert is_remote("s3://b/p") and local_runs_dir("s3://bkt/ci/a") == str(tmp_path / "bkt" / "ci/a")
    assert staging_dir("s3://bkt") == tmp_path / "bkt" / "_root"


def test_record_files_leave_hidden_files_out(tmp_path):
    for rel in ["metadata.json", "verdict.json", "events.jsonl", ".owner", "artifacts/x.log", ".cache/y"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    assert record_files(tmp_path) == ["artifacts/x.log", "events.jsonl", "metadata.json", "verdict.json"]


def _flaky(errors):
    calls = []

    def fn():
        calls.append(1)
        if errors:
            raise errors.pop(0)
        return "done"
    return fn, calls


def test_transient_errors_are_retried_then_succeed():
    fn, calls = _flaky([EndpointConnectionError(endpoint_url="http://x"),
                        ClientError({"Error": {"Code": "SlowDown"}, "ResponseMetadata": {"HTTPStatusCode": 503}}, "Put")])
    slept = []
    assert with_retries(fn, "upload", sleep=slept.append) == "done"
    assert len(calls) == 3 and slept == [0.5, 1.0]


def test_retries_are_bounded():
    fn, calls = _flaky([EndpointConnectionError(endpoint_url="http://x")] * 10)
    with pytest.raises(HarnessError, match=r"object storage: upload: .* \(after 4 attempts\)"):
        with_retries(fn, "upload", sleep=lambda s: None)
    assert len(calls) == 4


def test_a_permanent_error_is_not_retried():
    fn, calls = _flaky([ClientError({"Error": {"Code": "AccessDenied", "Message": "no"},
                                     "ResponseMetadata": {"HTTPStatusCode": 403}}, "Put")])
    with pytest.raises(HarnessError, match="AccessDenied: no"):
        with_retries(fn, "upload", sleep=lambda s: None)
    assert len(calls) == 1
