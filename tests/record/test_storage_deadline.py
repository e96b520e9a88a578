"""Bounded remote reads (issue 41): ``check s3://...`` against a store that does not answer ends within
15 s with one line (harness/record/storage.py READ_DEADLINE_S)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _silent_server() -> tuple[socket.socket, threading.Event]:
    """A TCP server that accepts connections and never answers."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    srv.settimeout(0.2)
    stop, held = threading.Event(), []

    def serve():
        while not stop.is_set():
            try:
                held.append(srv.accept()[0])
            except OSError:
                pass
        for c in held:
            c.close()
    threading.Thread(target=serve, daemon=True).start()
    return srv, stop


def test_check_of_a_store_that_does_not_answer_ends_within_15_s_with_one_line():
    srv, stop = _silent_server()
    try:
        env = {**os.environ, "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y", "AWS_DEFAULT_REGION": "us-east-1"}
        t0 = time.monotonic()
        r = subprocess.run([sys.executable, "-m", "harness.cli", "check", "s3://bucket1/runs", "--s3-endpoint",
                            f"http://127.0.0.1:{srv.getsockname()[1]}"], capture_output=True, text=True, cwd=ROOT,
                           env=env, timeout=60)
        took = time.monotonic() - t0
    finally:
        stop.set()
        srv.close()
    assert r.returncode == 2 and took < 15, (took, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kafka-chaos: error: object storage: list s3://bucket1/runs")
