"""Fixtures of the fleet tests: a real SeaweedFS S3 server and a Spark standalone cluster, both on 127.0.0.1.

``seaweedfs`` (session): the server, with its credentials and endpoint exported as the standard AWS
variables for the whole session (restored afterwards), so the harness, boto3 and s3a find them as
they would in CI. ``spark_cluster`` (module): a standalone master and two workers (1 core, 1 GB each)
from the installed PySpark's own classes, in their own process groups, killed in the finalizer.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from seaweed import free_port, s3_server

START_TIMEOUT_S = 300


@pytest.fixture(scope="session")
def seaweedfs(tmp_path_factory):
    server = s3_server(tmp_path_factory.mktemp("s3server"))
    t0 = time.monotonic()
    server.start()
    print(f"{type(server).__name__} up at {server.endpoint} in {time.monotonic() - t0:.1f} s")
    saved = {k: os.environ.get(k) for k in server.env()}
    os.environ.update(server.env())
    yield server
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    server.stop()


def _wait_for_line(proc, log: Path, line: str, what: str, count: int = 1) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if log.read_text(errors="replace").count(line) >= count:
            return
        if proc.poll() is not None:
            pytest.fail(f"{what} exited with {proc.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.5)
    pytest.fail(f"{what} not ready after {START_TIMEOUT_S} s:\n{log.read_text(errors='replace')[-3000:]}")


def _stop(procs) -> None:
    for p in reversed(procs):
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    for p in reversed(procs):
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(timeout=10)


@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory, request):
    """``spark://127.0.0.1:PORT`` of a standalone master with two registered workers."""
    pyspark = pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.fail("java not installed (Spark needs Java 17)", pytrace=False)
    home = Path(pyspark.__file__).resolve().parent
    spark_class = home / "bin" / "spark-class"
    work = tmp_path_factory.mktemp("spark-cluster")
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_LOG_DIR": str(work / "logs"), "SPARK_NO_DAEMONIZE": "1"}
    procs: list[subprocess.Popen] = []
    request.addfinalizer(lambda: _stop(procs))
    port = free_port()
    url = f"spark://127.0.0.1:{port}"

    def launch(name: str, args: list[str], extra_env: dict | None = None):
        log = work / f"{name}.log"
        with open(log, "wb") as out:
            p = subprocess.Popen([str(spark_class), *args], stdout=out, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, env={**env, **(extra_env or {})}, cwd=work,
                                 start_new_session=True)
        procs.append(p)
        return p, log

    master, mlog = launch("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                     "--port", str(port), "--webui-port", str(free_port())])
    _wait_for_line(master, mlog, "I have been elected leader", "Spark master")
    for i in (1, 2):
        w, wlog = launch(f"worker{i}", ["org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
                                        "--cores", "1", "--memory", "1g", "--webui-port", str(free_port())],
                         {"SPARK_WORKER_DIR": str(work / f"worker{i}")})
        _wait_for_line(w, wlog, "Successfully registered with master", f"Spark worker {i}")
    _wait_for_line(master, mlog, "Registering worker", "Spark master (2 workers)", count=2)
    return url
