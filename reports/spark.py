"""Start and stop the Spark session used by the report job, with quiet logs.

``local[*]`` by default; any master URL for a cluster. The driver listens on 127.0.0.1 only
(``spark.driver.host`` and ``spark.driver.bindAddress``) unless a master elsewhere must reach it
(:func:`driver_on_loopback`). Logging goes through the bundled
``log4j2.properties`` (ERROR only: no startup banner, no "Setting default log level" line,
no progress bar), the UI is off, and the ``reports`` package is shipped to the executors.
"""

from __future__ import annotations

import os
import re
import socket
import sys
import tempfile
import zipfile
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
LOG4J = PACKAGE_DIR / "log4j2.properties"


MASTER_FORMS = "local, local[N], local[*], local[N,F], spark://HOST:PORT[,HOST:PORT], yarn, k8s://URL"
_MASTER_RE = re.compile(r"local(\[(\*|\d+)(,\d+)?\])?|local-cluster\[\d+,\d+,\d+\]"
                        r"|spark://[^\s/:,]+:\d+(,[^\s/:,]+:\d+)*|yarn|k8s://\S+")


def check_master(master: str) -> str | None:
    """Why ``master`` is not a Spark master URL (None if it is one); checked before starting a JVM,
    which would otherwise die with a Java stack trace and "Java gateway process exited"."""
    if _MASTER_RE.fullmatch(master or ""):
        return None
    return f"--master {master!r} is not a Spark master URL (expected {MASTER_FORMS})"


def unreachable_master(master: str, timeout_s: float = 10.0) -> str | None:
    """For ``spark://HOST:PORT[,HOST:PORT]``: why no listed master accepts a TCP connection (None if
    one does, or for other masters). Spark itself would retry for about a minute and then fail with
    an unhelpful "An error occurred while calling ... SparkSession"."""
    if not master.startswith("spark://"):
        return None

    errors = []
    for hostport in master[len("spark://"):].split(","):
        host, _, port = hostport.rpartition(":")
        try:
            with socket.create_connection((host, int(port)), timeout=timeout_s):
                return None
        except OSError as e:
            errors.append(f"{hostport}: {e.strerror or e}")
    return f"cannot reach the Spark master {master} ({'; '.join(errors)})"


LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1", "[::1]")


def driver_on_loopback(master: str) -> bool:
    """Whether the driver binds to 127.0.0.1: a ``local`` master, or a ``spark://`` master whose every
    host is this machine's loopback. Any other master URL (a remote cluster, yarn, k8s) needs a
    driver its executors can reach, so Spark decides."""
    if master.startswith("local"):
        return True
    if master.startswith("spark://"):
        hosts = [hp.rpartition(":")[0] for hp in master[len("spark://"):].split(",")]
        return all(h in LOOPBACK_HOSTS or h.startswith("127.") for h in hosts)
    return False


# lines the JVM writes on stderr whatever the log level: Spark 4's launcher always passes
# --add-modules=jdk.incubator.vector (org.apache.spark.launcher.JavaModuleOptions), and the JVM then says so
JVM_NOISE = ("WARNING: Using incubator modules: jdk.incubator.vector",)


def _quiet_gateway(options: dict) -> None:
    """Start Spark's JVM (the py4j gateway ``getOrCreate`` would start) with its stderr through a filter
    that drops the :data:`JVM_NOISE` lines and passes every other line on, so a report's stderr holds
    its progress lines and errors only. Nothing when a gateway is already there (an active session,
    ``PYSPARK_GATEWAY_PORT``)."""
    import threading
    from pyspark import SparkConf
    from pyspark.context import SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return
    read_fd, write_fd = os.pipe()

    def forward() -> None:
        with os.fdopen(read_fd, "rb") as r:
            for line in r:
                if line.decode("utf-8", "replace").rstrip("\r\n") not in JVM_NOISE:
                    try:
                        sys.stderr.buffer.write(line)
                        sys.stderr.flush()
                    except (OSError, ValueError, AttributeError):
                        pass

    threading.Thread(target=forward, name="spark-jvm-stderr", daemon=True).start()
    conf = SparkConf(loadDefaults=False)
    for k, v in options.items():
        conf.set(k, str(v))
    try:
        gateway = launch_gateway(conf, popen_kwargs={"stderr": write_fd})
    finally:
        os.close(write_fd)          # the JVM holds its own copy: the filter ends when the JVM does
    with SparkContext._lock:
        SparkContext._gateway, SparkContext._jvm = gateway, gateway.jvm


def build_session(master: str = "local[*]", app_name: str = "kafka-chaos-report", conf: dict | None = None):
    """A new (or the already active) SparkSession configured for small, quiet report jobs."""
    from pyspark.sql import SparkSession  # lazy: PySpark

    # Executors must run the same interpreter and be able to import ``reports``.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    root = str(PACKAGE_DIR.parent)
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in parts:
        os.environ["PYTHONPATH"] = os.pathsep.join([root, *parts])
    local = master.startswith("local")
    builder = (SparkSession.builder.master(master).appName(app_name)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               # C1 only (as the brokers run, docs/benchmarks.md "images"): a report job is short, so the
               # driver's JIT warm-up is most of its JVM time; 2026-11-29, idle 2-core host: the demo's report
               # of 4 records 35.0 s -> 28.1 s, benchmarks/report_scaling.py at 10000 records 24.9 s -> 25.0 s
               .config("spark.driver.extraJavaOptions",
                       f"-Dlog4j2.configurationFile={LOG4J.as_uri()} -XX:TieredStopAtLevel=1")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.adaptive.enabled", "true")
               .config("spark.sql.shuffle.partitions", "8" if local else "64")
               .config("spark.python.worker.reuse", "true")
               .config("spark.hadoop.mapreduce.fileoutputcommitter.algorithm.version", "2")
               .config("spark.sql.parquet.compression.codec", "snappy"))
    if local:
        # Many small files on a local disk: list them on the driver (no listing job with one task
        # per run directory) and pack many files into each read task.
        builder = (builder.config("spark.sql.sources.parallelPartitionDiscovery.threshold", "1000000")
                   .config("spark.sql.files.openCostInBytes", str(64 * 1024))
                   .config("spark.sql.files.maxPartitionBytes", str(64 * 1024 * 1024)))
        builder = builder.config("spark.driver.memory", os.environ.get("REPORT_DRIVER_MEMORY", "2g"))
    else:
        builder = builder.config("spark.sql.sources.parallelPartitionDiscovery.parallelism", "256")
    if driver_on_loopback(master):
        # The driver's RPC and block manager listen on loopback only: a local job talks to nobody else,
        # and a master on this machine reaches it there. A remote master's executors must reach the
        # driver from elsewhere: then Spark's own choice (SPARK_LOCAL_IP, spark.driver.host) applies.
        builder = builder.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
    for k, v in (conf or {}).items():
        builder = builder.config(k, v)
    try:
        _quiet_gateway(dict(getattr(builder, "_options", {})))
    except Exception:  # noqa: BLE001 - PySpark internals differ, or no Java: getOrCreate starts (or fails) as before
        pass
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if not local:
        ship_package(spark)
    return spark


def ship_package(spark) -> None:
    """Zip the ``reports`` package and add it to the executors' Python path (cluster masters)."""
    sc = spark.sparkContext
    if getattr(sc, "_kafka_chaos_reports_shipped", False):
        return
    tmp = Path(tempfile.mkdtemp(prefix="reports-pkg-"))
    zpath = tmp / "reports.zip"
    with zipfile.ZipFile(zpath, "w") as z:
        for f in PACKAGE_DIR.rglob("*.py"):
            z.write(f, f"reports/{f.relative_to(PACKAGE_DIR)}")
    sc.addPyFile(str(zpath))
    sc._kafka_chaos_reports_shipped = True
