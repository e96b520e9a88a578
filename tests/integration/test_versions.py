"""The version matrix: 2.8.2 and a 3.x in between build offline and run a working cluster."""

from __future__ import annotations

import pytest

from harness import images
from harness.cluster.cluster import Cluster, ClusterSpec

pytestmark = pytest.mark.docker

MATRIX = ["2.8.2", "3.5"]


@pytest.mark.parametrize("series", MATRIX)
def test_version_builds_and_serves(series, kc_docker):
    built = images.build(series)
    assert built.tag == f"kafka-chaos/kafka:{built.version}"
    assert built.version.startswith(series)
    with Cluster(ClusterSpec(brokers=2, zookeepers=1, image=built.tag, distribution="apache-zk")) as cl:
        cl.create_topic("matrix", partitions=2, replication_factor=2)
        md = cl.admin().list_topics(topic="matrix", timeout=10).topics["matrix"]
        assert all(sorted(p.isrs) == [1, 2] for p in md.partitions.values())
        # the broker really is that version: its jar is on the classpath
        rc, out = cl.brokers[1].exec(["sh", "-c", "ls /opt/kafka/libs | grep '^kafka_2.13-'"])
        assert out.strip() == f"kafka_2.13-{built.version}.jar"


def test_second_build_is_cached(kc_docker):
    first = images.build(None)
    again = images.build(None)
    assert again.cached and again.image_id == first.image_id
