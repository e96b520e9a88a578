"""Fixtures shared by the tests under ``tests/``.

``spark_standalone`` (session): a factory for a real Spark standalone cluster on 127.0.0.1 — a master
and N workers (1 core, 1 GB each) started from the installed PySpark's own classes
(``<pyspark>/bin/spark-class org.apache.spark.deploy.master.Master`` / ``...deploy.worker.Worker``),
each in its own process group, with bounded waits for the master's election and every worker's
registration, and both process groups killed when the ``with`` block ends. Used by
``tests/reports/test_master_url.py`` (one worker) and the fleet test (two workers)::

    @pytest.fixture(scope="module")
    def master(spark_standalone, tmp_path_factory):
        with spark_standalone(tmp_path_factory.mktemp("spark"), workers=2) as url:
            yield url                      # spark://127.0.0.1:PORT
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

START_TIMEOUT_S = 300       # JVM start and registration on a loaded 2-core host


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_line(proc: subprocess.Popen, log: Path, line: str, what: str, count: int = 1) -> None:
    """Wait (bounded) until ``log`` holds ``line`` ``count`` times; fail early if the process exits."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if log.read_text(errors="replace").count(line) >= count:
            return
        if proc.poll() is not None:
            pytest.fail(f"{what} exited with {proc.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.5)
    pytest.fail(f"{what} not ready after {START_TIMEOUT_S} s:\n{log.read_text(errors='replace')[-3000:]}")


def _stop(procs: list[subprocess.Popen]) -> None:
    """SIGTERM each process group, SIGKILL what is left after 20 s."""
    for p in reversed(procs):
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
    for p in reversed(procs):
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout=10)


@contextlib.contextmanager
def _standalone(work: Path, workers: int = 1):
    pyspark = pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("java not installed (Spark needs Java 17)")
    home = Path(pyspark.__file__).resolve().parent
    spark_class = home / "bin" / "spark-class"
    if not spark_class.exists():
        pytest.skip(f"{spark_class} missing (a pyspark without its launch scripts)")
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_LOG_DIR": str(work / "logs"), "SPARK_NO_DAEMONIZE": "1"}
    procs: list[subprocess.Popen] = []
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"

    def launch(name: str, args: list[str], extra_env: dict | None = None):
        log = work / f"{name}.log"
        with open(log, "wb") as out:
            p = subprocess.Popen([str(spark_class), *args], stdout=out, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, env={**env, **(extra_env or {})}, cwd=work,
                                 start_new_session=True)
        procs.append(p)
        return p, log

    try:
        master, mlog = launch("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                         "--port", str(port), "--webui-port", str(_free_port())])
        _wait_for_line(master, mlog, "I have been elected leader", "Spark master")
        for i in range(1, workers + 1):
            w, wlog = launch(f"worker{i}", ["org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
                                            "--cores", "1", "--memory", "1g", "--webui-port", str(_free_port())],
                             {"SPARK_WORKER_DIR": str(work / f"worker{i}")})
            _wait_for_line(w, wlog, "Successfully registered with master", f"Spark worker {i}")
        _wait_for_line(master, mlog, "Registering worker", f"Spark master ({workers} workers)", count=workers)
        yield url
    finally:
        _stop(procs)


@pytest.fixture(scope="session")
def spark_standalone():
    """Factory: ``with spark_standalone(work_dir, workers=N) as url`` runs a Spark standalone master and
    N registered workers on 127.0.0.1 for the block (skips when Java or PySpark's scripts are missing)."""
    return _standalone
