"""Fixtures of the fleet tests: a real SeaweedFS S3 server and a Spark standalone cluster, both on 127.0.0.1.

``seaweedfs`` (session): the server, with its credentials and endpoint exported as the standard AWS
variables for the whole session (restored afterwards), so the harness, boto3 and s3a find them as
they would in CI. ``spark_cluster`` (module): a standalone master and two workers (1 core, 1 GB each)
(the ``spark_standalone`` fixture of ``tests/conftest.py``), killed at the module's end.
"""

from __future__ import annotations

import os
import time

import pytest

from seaweed import s3_server


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


@pytest.fixture(scope="module")
def spark_cluster(spark_standalone, tmp_path_factory):
    """``spark://127.0.0.1:PORT`` of a standalone master with two registered workers."""
    with spark_standalone(tmp_path_factory.mktemp("spark-cluster"), workers=2) as url:
        yield url
