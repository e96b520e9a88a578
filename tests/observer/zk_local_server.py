"""Start and stop a throwaway standalone ZooKeeper on 127.0.0.1 for tests and fixture generation.

The jars come from ``KAFKA_CHAOS_ZK_CLASSPATH`` (a Java classpath, e.g. ``/tmp/zkjars/*`` filled by
``mvn dependency:copy-dependencies`` on ``org.apache.zookeeper:zookeeper:3.8.4``). Only the client
port is opened, bound to loopback; the admin server is disabled.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

ENV = "KAFKA_CHAOS_ZK_CLASSPATH"


def classpath() -> str | None:
    return os.environ.get(ENV) or None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalZooKeeper:
    """``with LocalZooKeeper(cp) as zk: zk.connect`` -> "127.0.0.1:<port>"; ``zk.data_dir``."""

    def __init__(self, cp: str, data_dir: str | None = None, tick_ms: int = 200,
                 snap_count: int = 100000, prealloc_kb: int = 4):
        self.cp = cp
        self.own_dir = data_dir is None
        self.data_dir = Path(data_dir or tempfile.mkdtemp(prefix="kc-zk-"))
        self.tick_ms, self.snap_count, self.prealloc_kb = tick_ms, snap_count, prealloc_kb
        self.port = _free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def connect(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log_dir(self) -> Path:
        return self.data_dir / "version-2"

    def start(self) -> "LocalZooKeeper":
        self.data_dir.mkdir(parents=True, exist_ok=True)
        cfg = self.data_dir / "zoo.cfg"
        cfg.write_text(
            f"tickTime={self.tick_ms}\ndataDir={self.data_dir}\nclientPort={self.port}\n"
            "clientPortAddress=127.0.0.1\nadmin.enableServer=false\nmaxClientCnxns=100\n"
            f"snapCount={self.snap_count}\n4lw.commands.whitelist=\n")
        self._out = open(self.data_dir / "server.out", "wb")
        self.proc = subprocess.Popen(
            ["java", f"-Dzookeeper.preAllocSize={self.prealloc_kb}", "-Xmx256m", "-cp", self.cp,
             "org.apache.zookeeper.server.ZooKeeperServerMain", str(cfg)],
            stdout=self._out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"ZooKeeper exited with {self.proc.returncode}; see "
                                   f"{self.data_dir / 'server.out'}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("ZooKeeper did not open its client port within 30 s")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None
        if getattr(self, "_out", None):
            self._out.close()
            self._out = None

    def cleanup(self) -> None:
        self.stop()
        if self.own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> "LocalZooKeeper":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.cleanup()
