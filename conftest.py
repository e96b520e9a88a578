"""Shared pytest options and fixtures.

Options: --kafka-version, --broker-image, --brokers, --zookeepers (the defaults every cluster fixture uses).

Tests that need Docker are marked ``docker`` (scenario suites carry ``smoke``/``conformance``/``chaos``/``nightly``,
which imply it). When no Docker engine answers they **fail** with the reason, unless
``KAFKA_CHAOS_SKIP_DOCKER=1`` is set explicitly, which skips them with that reason.
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
os.environ.setdefault("KAFKA_CHAOS_QUIET", "1")

DOCKER_MARKERS = ("docker", "smoke", "conformance", "chaos", "nightly")


def pytest_addoption(parser):
    g = parser.getgroup("kafka-chaos")
    g.addoption("--kafka-version", default=os.environ.get("KAFKA_CHAOS_KAFKA_VERSION"),
                help="Kafka version of the broker image (default: latest 3.9.x)")
    g.addoption("--broker-image", default=os.environ.get("KAFKA_CHAOS_BROKER_IMAGE"),
                help="run against this local image instead of kafka-chaos/kafka:<version>")
    g.addoption("--brokers", type=int, default=3, help="brokers per cluster (default 3)")
    g.addoption("--zookeepers", type=int, default=1, choices=[1, 3, 5], help="ZooKeeper nodes (default 1)")
    g.addoption("--runs-dir", default=os.environ.get("KAFKA_CHAOS_RUNS_DIR", "runs"),
                help="where scenario suites write their run records (default ./runs)")


def _needs_docker(item) -> bool:
    return any(item.get_closest_marker(m) for m in DOCKER_MARKERS)


@pytest.fixture(scope="session")
def docker_engine():
    """The Docker client; fails (or skips when KAFKA_CHAOS_SKIP_DOCKER=1) when no engine answers."""
    from harness import docker_util
    from harness.errors import DockerUnavailable
    try:
        return docker_util.client()
    except DockerUnavailable as e:
        if os.environ.get("KAFKA_CHAOS_SKIP_DOCKER") == "1":
            pytest.skip(f"KAFKA_CHAOS_SKIP_DOCKER=1 and {e}")
        pytest.fail(str(e), pytrace=False)


@pytest.fixture(scope="session")
def broker_image(request, docker_engine):
    """The image every cluster fixture runs (built on first use when it is the default Apache image)."""
    from harness import images
    image = request.config.getoption("--broker-image")
    if image:
        return images.inspect(image)
    return images.image_for(request.config.getoption("--kafka-version"), build_missing=True)


@pytest.fixture
def cluster_factory(request, broker_image):
    """``cluster_factory(brokers=3, zookeepers=1, broker_config={...})`` → a started Cluster.

    Every cluster made here is removed at teardown, and the teardown checks nothing of it remains.
    """
    from harness.cleanup import list_clusters
    from harness.cluster import Cluster, ClusterSpec

    made: list[Cluster] = []

    def make(brokers: int | None = None, zookeepers: int | None = None, broker_config: dict | None = None,
             **kw) -> Cluster:
        spec = ClusterSpec(brokers=brokers or request.config.getoption("--brokers"),
                           zookeepers=zookeepers or request.config.getoption("--zookeepers"),
                           image=broker_image.tag, broker_config=broker_config or {}, **kw)
        cl = Cluster(spec)
        made.append(cl)
        return cl.start()

    yield make
    for cl in made:
        cl.remove()
    remaining = [cl.name for cl in made if cl.name in list_clusters()]
    assert not remaining, f"clusters left behind: {remaining}"


@pytest.fixture
def cluster(cluster_factory):
    """A default cluster (options --brokers/--zookeepers) for one test."""
    return cluster_factory()


def pytest_collection_modifyitems(config, items):
    for item in items:
        if _needs_docker(item) and "docker_engine" not in getattr(item, "fixturenames", []):
            item.fixturenames.insert(0, "docker_engine")
