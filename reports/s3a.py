"""The report job reading run records from object storage (``RUNS_PATH`` = ``s3://bucket/prefix``).

Spark reads them through Hadoop's ``s3a`` connector: ``hadoop-aws`` of the very Hadoop version inside
the installed PySpark (``pyspark/jars/hadoop-client-api-<V>.jar``) and the AWS SDK bundle that
version was built with, fetched once from Maven Central into ``~/.cache/kafka-chaos/spark-jars``
(checked against Maven's ``.sha1``) and passed as ``spark.jars`` (the driver and every executor);
later runs are offline. Path-style access; the endpoint is ``AWS_ENDPOINT_URL`` (or the
``--s3-endpoint`` of the report); credentials are resolved on the driver by the standard AWS chain
(environment, ``AWS_PROFILE``, ``~/.aws/credentials``) and handed to s3a in the job's Hadoop
configuration.

Only complete records are read: the records whose manifest ``_record.json`` exists
(:meth:`harness.record.storage.S3Store.list_records`); a record still being uploaded is invisible, as an
in-progress ``.tmp-*`` directory is locally.
"""

from __future__ import annotations

import hashlib
import os
import re
import urllib.request
from pathlib import Path

from harness.record.storage import ENDPOINT_ENV, is_remote, open_store

CACHE = Path(os.environ.get("KAFKA_CHAOS_SPARK_JARS") or Path.home() / ".cache" / "kafka-chaos" / "spark-jars")
MAVEN = os.environ.get("KAFKA_CHAOS_MAVEN", "https://repo1.maven.org/maven2")
# Hadoop version -> the (group path, artifact, version) of each jar its hadoop-aws needs at run time
# beside it: the AWS SDK it was built with (hadoop-project-<V>.pom: aws-java-sdk-v2.version, or
# aws-java-sdk.version before 3.4) and, from 3.5, the S3 analytics accelerator (hadoop-aws-3.5.0.pom
# has it at compile scope; amazon-s3-analyticsaccelerator-s3.version). pyspark 4.1+ carries Hadoop 3.4.x
# or 3.5.0 (4.3.0: hadoop-client-api-3.5.0.jar).
SDK_BUNDLES = {
    "3.5.0": (("software/amazon/awssdk", "bundle", "2.35.4"),
              ("software/amazon/s3/analyticsaccelerator", "analyticsaccelerator-s3", "1.3.1")),
    "3.4.1": (("software/amazon/awssdk", "bundle", "2.24.6"),),
    "3.4.0": (("software/amazon/awssdk", "bundle", "2.23.19"),),
    "3.3.6": (("com/amazonaws", "aws-java-sdk-bundle", "1.12.367"),),
    "3.3.4": (("com/amazonaws", "aws-java-sdk-bundle", "1.12.262"),),
}


class S3aError(Exception):
    """The s3a connector cannot be set up (no jars and no network, an unknown Hadoop version)."""


def hadoop_version() -> str:
    import pyspark

    jars = Path(pyspark.__file__).resolve().parent / "jars"
    for j in sorted(jars.glob("hadoop-client-api-*.jar")):
        m = re.fullmatch(r"hadoop-client-api-(\d+\.\d+\.\d+)\.jar", j.name)
        if m:
            return m.group(1)
    raise S3aError(f"no hadoop-client-api-<version>.jar under {jars}: cannot tell the Hadoop version")


def _fetch(group: str, artifact: str, version: str, cache: Path) -> Path:
    """``cache/<artifact>-<version>.jar``, downloaded once (verified by its .sha1)."""
    target = cache / f"{artifact}-{version}.jar"
    if target.exists():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    url = f"{MAVEN}/{group}/{artifact}/{version}/{artifact}-{version}.jar"
    part = cache / f".{target.name}.{os.getpid()}.part"
    try:
        with urllib.request.urlopen(url + ".sha1", timeout=60) as r:
            want = r.read().decode().split()[0].strip()
        h = hashlib.sha1()
        with urllib.request.urlopen(url, timeout=60) as r, open(part, "wb") as out:
            for chunk in iter(lambda: r.read(1 << 20), b""):
                h.update(chunk)
                out.write(chunk)
        if h.hexdigest() != want:
            raise S3aError(f"{url}: SHA-1 {h.hexdigest()} differs from Maven's {want}")
        os.replace(part, target)
        return target
    except OSError as e:
        raise S3aError(f"cannot fetch {url} into {cache} (needed once for s3a): {e}") from None
    finally:
        part.unlink(missing_ok=True)


def ensure_jars(cache: Path = CACHE) -> list[Path]:
    """hadoop-aws and its AWS SDK bundle for the installed PySpark's Hadoop (cached)."""
    hv = hadoop_version()
    if hv not in SDK_BUNDLES:
        raise S3aError(f"Hadoop {hv} (inside pyspark): no known AWS SDK bundle for its hadoop-aws; "
                       f"known: {', '.join(SDK_BUNDLES)}")
    return [_fetch("org/apache/hadoop", "hadoop-aws", hv, cache), *(_fetch(*j, cache) for j in SDK_BUNDLES[hv])]


def to_s3a(url: str) -> str:
    return "s3a://" + url.split("://", 1)[1]


def spark_conf(endpoint: str | None = None) -> dict:
    """Spark settings for reading ``s3a://`` with the standard AWS credentials and endpoint."""
    import boto3

    conf = {"spark.jars": ",".join(str(p) for p in ensure_jars()),
            "spark.hadoop.fs.s3a.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
            "spark.hadoop.fs.s3a.path.style.access": "true",
            "spark.hadoop.fs.s3a.attempts.maximum": "5",
            "spark.hadoop.fs.s3a.retry.limit": "5"}
    endpoint = endpoint or os.environ.get(ENDPOINT_ENV)
    if endpoint:
        conf["spark.hadoop.fs.s3a.endpoint"] = endpoint
        conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] = str(endpoint.startswith("https:")).lower()
    session = boto3.session.Session()
    conf["spark.hadoop.fs.s3a.endpoint.region"] = session.region_name or os.environ.get("AWS_REGION") or "us-east-1"
    creds = session.get_credentials()
    if creds is not None:
        c = creds.get_frozen_credentials()
        conf["spark.hadoop.fs.s3a.access.key"] = c.access_key
        conf["spark.hadoop.fs.s3a.secret.key"] = c.secret_key
        if c.token:
            conf["spark.hadoop.fs.s3a.session.token"] = c.token
            conf["spark.hadoop.fs.s3a.aws.credentials.provider"] = \
                "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
        else:
            conf["spark.hadoop.fs.s3a.aws.credentials.provider"] = \
                "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
    return conf


def record_paths(url: str, endpoint: str | None = None) -> list[str]:
    """``s3a://`` URLs of the complete records under ``url`` (manifest present), sorted."""
    store = open_store(url, endpoint)
    return [to_s3a(store.record_url(r)) for r in store.list_records()]


__all__ = ["S3aError", "ensure_jars", "hadoop_version", "is_remote", "record_paths", "spark_conf", "to_s3a"]
