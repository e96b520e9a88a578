"""Run records in a local directory or in S3-compatible object storage (``--runs-dir s3://bucket/prefix``).

A run is always recorded on the local disk first (:class:`harness.record.RunRecorder`, under a
staging directory for a remote runs dir, :func:`staging_dir`); a finished record is then
**published**: every file is uploaded under ``<prefix>/<run_id>/`` and, last, the manifest
``<prefix>/<run_id>/_record.json`` (each file's size and SHA-256). Readers list only records whose
manifest exists (:meth:`S3Store.list_records`), so a record is visible complete or not at all: an
upload that died half-way leaves objects no reader looks at, and publishing the same record again
overwrites them. The manifest's name starts with ``_``, so Hadoop's hidden-path filter keeps it out
of the Spark report's file listings.

Credentials come from the standard AWS chain (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``,
``AWS_PROFILE``, ``~/.aws/credentials``, ...); the endpoint from ``--s3-endpoint`` or
``AWS_ENDPOINT_URL`` (any S3-compatible store; path-style addressing). Transient errors
(connection errors, timeouts, 5xx, throttling) are retried a bounded number of times: by botocore's
``standard`` retry mode inside each request, and again around each whole file
(:func:`with_retries`); anything else is one :class:`~harness.errors.HarnessError` line.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import Callable, TypeVar

from harness.errors import EnvironmentFailure, HarnessError

MANIFEST = "_record.json"
MANIFEST_SCHEMA = 1
SCHEMES = ("s3://", "s3a://")
ENDPOINT_ENV = "AWS_ENDPOINT_URL"
ATTEMPTS = 4                       # whole-file attempts (each one already retried inside botocore)
BACKOFF_S = 0.5
# Reads that must end (``check s3://...``): a store that does not answer is given up within this many
# seconds, one line. Each attempt is bounded by the connect and read timeouts below, not retried inside
# botocore; attempts go on while one more fits before the deadline.
READ_DEADLINE_S = 15.0
BOUNDED_CONNECT_S, BOUNDED_READ_S = 3.0, 4.0
T = TypeVar("T")


def is_remote(runs_dir) -> bool:
    return isinstance(runs_dir, str) and runs_dir.startswith(SCHEMES)


def split_url(url: str) -> tuple[str, str]:
    """``s3://bucket/a/b/`` -> ``("bucket", "a/b")``; a usage error for anything else."""
    m = re.fullmatch(r"s3a?://([a-z0-9][a-z0-9.\-]{1,61}[a-z0-9])(?:/(.*))?", url or "")
    if not m:
        raise HarnessError(f"{url!r} is not an object-storage runs dir (expected s3://BUCKET[/PREFIX])")
    return m.group(1), (m.group(2) or "").strip("/")


def staging_dir(url: str) -> Path:
    """Where runs bound for ``url`` are recorded before they are published (one per bucket/prefix)."""
    bucket, prefix = split_url(url)
    base = Path(os.environ.get("KAFKA_CHAOS_STAGING") or Path(tempfile.gettempdir()) / "kafka-chaos-staging")
    return base / bucket / (prefix or "_root")


def local_runs_dir(runs_dir: str) -> str:
    """The local directory a command records into: ``runs_dir`` itself, or its staging directory."""
    return str(staging_dir(runs_dir)) if is_remote(runs_dir) else runs_dir


def _transient(e: BaseException) -> bool:
    from botocore.exceptions import ClientError, ConnectionError as BotoConnectionError, HTTPClientError

    if isinstance(e, (BotoConnectionError, HTTPClientError, ConnectionError, TimeoutError)):
        return True
    if isinstance(e, ClientError):
        err = e.response.get("Error", {})
        status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
        return status >= 500 or err.get("Code") in ("SlowDown", "Throttling", "RequestTimeout", "InternalError")
    return False


def with_retries(fn: Callable[[], T], what: str, attempts: int = ATTEMPTS, backoff_s: float = BACKOFF_S,
                 transient: Callable[[BaseException], bool] = _transient, sleep=time.sleep,
                 deadline_s: float | None = None, attempt_s: float = 0.0) -> T:
    """``fn()``, retried on transient errors up to ``attempts`` times in all (exponential backoff), and
    with ``deadline_s`` only while another attempt (at most ``attempt_s`` long) ends before it; the last
    error, or any other, becomes one HarnessError line."""
    start = time.monotonic()
    for i in range(attempts):
        try:
            return fn()
        except Exception as e:  # noqa: BLE001 - classified below
            wait = backoff_s * (2 ** i)
            in_time = deadline_s is None or time.monotonic() - start + wait + attempt_s <= deadline_s
            if i + 1 < attempts and transient(e) and in_time:
                sleep(wait)
                continue
            took = f" in {time.monotonic() - start:.1f} s" if deadline_s is not None else ""
            # a store not reached (connection refused, timeouts, 5xx) is the environment's fault (exit 5);
            # an answer that refuses the request (no such bucket, access denied) is the command's (exit 2)
            error = EnvironmentFailure if transient(e) else HarnessError
            raise error(f"object storage: {what}: {_describe(e)}"
                        + (f" (after {i + 1} attempts{took})" if transient(e) else "")) from None
    raise AssertionError("unreachable")


def _describe(e: BaseException) -> str:
    from botocore.exceptions import ClientError

    if isinstance(e, ClientError):
        err = e.response.get("Error", {})
        return f"{err.get('Code', '?')}: {err.get('Message') or e}"
    return str(e).splitlines()[0] if str(e) else type(e).__name__


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def record_files(local_dir: Path) -> list[str]:
    """The files of a record, relative, sorted; hidden ones (``.owner``, ``.reserve``, ...) left out."""
    out = []
    for p in sorted(local_dir.rglob("*")):
        rel = p.relative_to(local_dir)
        if p.is_file() and not any(part.startswith(".") for part in rel.parts) and rel.name != MANIFEST:
            out.append(rel.as_posix())
    return out


class S3Store:
    """One ``s3://bucket/prefix`` runs dir."""

    def __init__(self, url: str, endpoint: str | None = None, deadline_s: float | None = None):
        self.deadline_s = deadline_s         # bounded reads (READ_DEADLINE_S): each call ends within it
        self.url = url.rstrip("/")
        self.bucket, self.prefix = split_url(url)
        self.endpoint = endpoint or os.environ.get(ENDPOINT_ENV) or None
        try:
            import boto3
            from botocore.config import Config
        except ImportError as e:  # the [s3] extra
            raise HarnessError(f"--runs-dir {url}: boto3 is not installed ({e}); pip install 'kafka-chaos[s3]'") from None
        bounded = deadline_s is not None
        cfg = Config(retries={"total_max_attempts": 1} if bounded else {"max_attempts": 5, "mode": "standard"},
                     connect_timeout=BOUNDED_CONNECT_S if bounded else 10,
                     read_timeout=BOUNDED_READ_S if bounded else 60,
                     s3={"addressing_style": "path"})
        self.session = boto3.session.Session()
        self.client = self.session.client("s3", endpoint_url=self.endpoint, config=cfg)

    def _retry(self, fn: Callable[[], T], what: str) -> T:
        if self.deadline_s is None:
            return with_retries(fn, what)
        return with_retries(fn, what, deadline_s=self.deadline_s, attempt_s=BOUNDED_CONNECT_S + BOUNDED_READ_S)

    def key(self, *parts: str) -> str:
        return "/".join(p for p in (self.prefix, *parts) if p)

    def record_url(self, run_id: str) -> str:
        return f"s3://{self.bucket}/{self.key(run_id)}"

    def check(self) -> None:
        """A usage/environment error now (before any Docker work) unless the bucket answers."""
        if self.session.get_credentials() is None:
            raise HarnessError(f"--runs-dir {self.url}: no AWS credentials (set AWS_ACCESS_KEY_ID and "
                               "AWS_SECRET_ACCESS_KEY, AWS_PROFILE or ~/.aws/credentials)")
        try:
            self._retry(lambda: self.client.head_bucket(Bucket=self.bucket), f"bucket {self.bucket}")
        except HarnessError as e:
            where = f" at {self.endpoint}" if self.endpoint else ""
            raise type(e)(f"--runs-dir {self.url}{where}: {e}".replace("object storage: ", "")) from None

    # -- writing ----------------------------------------------------------------------------------
    def publish(self, local_dir: str | os.PathLike) -> str:
        """Upload one finished record, manifest last; its ``s3://`` URL."""
        local_dir = Path(local_dir)
        if not (local_dir / "verdict.json").exists():
            raise HarnessError(f"{local_dir}: not a finished run record (no verdict.json)")
        run_id = local_dir.name
        files = {}
        for rel in record_files(local_dir):
            path = local_dir / rel
            files[rel] = {"size": path.stat().st_size, "sha256": _sha256(path)}
            self._retry(lambda: self._put(path, self.key(run_id, rel)), f"upload {rel} of {run_id}")
        manifest = {"schema_version": MANIFEST_SCHEMA, "run_id": run_id, "files": files,
                    "published_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        body = (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()
        self._retry(lambda: self.client.put_object(Bucket=self.bucket, Key=self.key(run_id, MANIFEST), Body=body,
                                                    ContentType="application/json"), f"manifest of {run_id}")
        return self.record_url(run_id)

    def _put(self, path: Path, key: str) -> None:
        with open(path, "rb") as fh:      # one PUT per file (records are small); a retry re-opens it
            self.client.put_object(Bucket=self.bucket, Key=key, Body=fh)

    def _get(self, key: str, target: Path) -> None:
        body = self.client.get_object(Bucket=self.bucket, Key=key)["Body"]
        with open(target, "wb") as out:
            for chunk in iter(lambda: body.read(1 << 20), b""):
                out.write(chunk)

    # -- reading ----------------------------------------------------------------------------------
    def _keys(self) -> list[tuple[str, int]]:
        def listing():
            out = []
            pages = self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=self.key() + "/" if self.prefix else "")
            for page in pages:
                out.extend((o["Key"], o["Size"]) for o in page.get("Contents", []))
            return out
        return self._retry(listing, f"list {self.url}")

    def list_records(self) -> list[str]:
        """Run ids of the complete records (manifest present) directly under the prefix, sorted."""
        base = self.key() + "/" if self.prefix else ""
        ids = set()
        for k, _ in self._keys():
            rest = k[len(base):].split("/")
            if len(rest) == 2 and rest[1] == MANIFEST and not rest[0].startswith((".", "_")):
                ids.add(rest[0])
        return sorted(ids)

    def manifest(self, run_id: str) -> dict:
        body = self._retry(lambda: self.client.get_object(Bucket=self.bucket, Key=self.key(run_id, MANIFEST))
                            ["Body"].read(), f"manifest of {run_id}")
        return json.loads(body)

    def download(self, run_id: str, dest_root: str | os.PathLike) -> Path:
        """One complete record into ``dest_root/<run_id>`` (files checked against the manifest); replaced
        atomically when already there."""
        m = self.manifest(run_id)
        dest_root = Path(dest_root)
        dest_root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{run_id}-", dir=dest_root))
        try:
            for rel, facts in m.get("files", {}).items():
                target = tmp / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                self._retry(lambda: self._get(self.key(run_id, rel), target), f"download {rel} of {run_id}")
                if target.stat().st_size != facts.get("size") or _sha256(target) != facts.get("sha256"):
                    raise HarnessError(f"{self.record_url(run_id)}/{rel}: differs from its manifest")
            final = dest_root / run_id
            if final.exists():
                shutil.rmtree(final)
            os.replace(tmp, final)
            return final
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def download_all(self, dest_root: str | os.PathLike) -> list[Path]:
        return [self.download(r, dest_root) for r in self.list_records()]


def open_store(url: str, endpoint: str | None = None, deadline_s: float | None = None) -> S3Store:
    return S3Store(url, endpoint, deadline_s)


class Publisher:
    """What a command does with each finished record: nothing for a local runs dir; for ``s3://``, upload it
    and remove the staged copy (kept, and named in the error, when the upload failed)."""

    def __init__(self, runs_dir: str, endpoint: str | None = None, keep_staged: bool | None = None):
        self.runs_dir = runs_dir
        self.remote = is_remote(runs_dir)
        self.local = local_runs_dir(runs_dir)
        self.store = open_store(runs_dir, endpoint) if self.remote else None
        self.keep = (os.environ.get("KAFKA_CHAOS_KEEP_STAGED") == "1") if keep_staged is None else keep_staged
        self.failed: list[tuple[Path, str]] = []

    def check(self) -> None:
        if self.store:
            self.store.check()

    def publish(self, path) -> str:
        """The record's final location (its ``s3://`` URL, or the local path); never raises for an upload
        that failed: :attr:`failed` remembers it and :meth:`raise_failed` says it at the end."""
        if not self.store or path is None or not (Path(path) / "verdict.json").exists():
            return str(path)
        try:
            url = self.store.publish(path)
        except HarnessError as e:
            self.failed.append((Path(path), str(e)))
            return str(path)
        if not self.keep:
            shutil.rmtree(path, ignore_errors=True)
        return url

    def publish_new(self, before: set[str]) -> None:
        """Publish every finished record that appeared in the staging dir since ``before`` (child processes)."""
        for d in sorted(Path(self.local).iterdir()) if Path(self.local).is_dir() else []:
            if d.is_dir() and not d.name.startswith(".") and d.name not in before:
                self.publish(d)

    def raise_failed(self) -> None:
        if self.failed:
            first = self.failed[0]
            raise HarnessError(f"{len(self.failed)} run record(s) could not be published to {self.runs_dir} "
                               f"(kept locally, e.g. {first[0]}): {first[1]}")
