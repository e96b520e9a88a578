"""Bounded remote reads (issue 41): ``check s3://...`` against a store that does not answer ends with one
line (harness/record/storage.py READ_DEADLINE_S) instead of hanging. How long it takes is not asserted
here (a loaded CI machine stretches it); the subprocess timeout only catches a hang."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
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


def test_check_of_a_store_that_does_not_answer_ends_with_one_line():
    srv, stop = _silent_server()
    try:
        env = {**os.environ, "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y", "AWS_DEFAULT_REGION": "us-east-1"}
        r = subprocess.run([sys.executable, "-m", "harness.cli", "check", "s3://bucket1/runs", "--s3-endpoint",
                            f"http://127.0.0.1:{srv.getsockname()[1]}"], capture_output=True, text=True, cwd=ROOT,
                           env=env, timeout=60)
    finally:
        stop.set()
        srv.close()
    assert r.returncode == 5, r.stderr      # environment (docs/cli.md "Exit codes")
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kafka-chaos: error: object storage: list s3://bucket1/runs")
