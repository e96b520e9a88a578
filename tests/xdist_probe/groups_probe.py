"""Run only by tests/test_xdist_groups.py (its name does not match test_*.py): one test per kind."""
import os
import time

import pytest


def _worker(name):
    # each test notes the xdist worker it ran on, for the outer test to read
    out = os.environ["KC_XDIST_PROBE_OUT"]
    with open(os.path.join(out, name), "w") as f:
        f.write(os.environ.get("PYTEST_XDIST_WORKER", "none"))
    time.sleep(0.5)


@pytest.mark.docker
@pytest.mark.parametrize("i", range(3))
def test_cluster(i):
    _worker(f"cluster{i}")


@pytest.mark.spark
@pytest.mark.parametrize("i", range(3))
def test_spark(i):
    _worker(f"spark{i}")


@pytest.mark.docker
@pytest.mark.spark
def test_cluster_and_spark():
    _worker("cluster-and-spark")


@pytest.mark.parametrize("i", range(4))
def test_pure(i):
    _worker(f"pure{i}")
