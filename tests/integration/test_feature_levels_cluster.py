"""Feature levels set at format time on a real 4.4.0 KRaft cluster (docs/kraft.md "Feature levels"): the
storage tool formats every node with ``--feature NAME=LEVEL``, and what the cluster finalized, asked of the
running cluster with Kafka's own ``kafka-features describe``, is what was asked; the metadata log read
through the one definition (``control_history.feature_levels``) says the same. One combined node:
``pytest tests/integration/test_feature_levels_cluster.py -n 0`` (~30 s when the image is built)."""

from __future__ import annotations

import pytest

from harness import images
from harness.cluster import quorum_ops
from harness.cluster.cluster import Cluster, ClusterSpec
from harness.distributions.control_history import feature_levels

pytestmark = pytest.mark.docker

VERSION = "4.4.0"
ASKED = {"transaction.version": 1, "group.version": 0, "eligible.leader.replicas.version": 0, "share.version": 1}


@pytest.fixture(scope="module")
def image(kc_docker):
    return images.inspect(images.build(VERSION).tag)


def test_cluster_finalizes_the_levels_it_was_formatted_with(image):
    cl = Cluster(ClusterSpec(brokers=1, distribution="apache-kraft", image=image.tag, features=dict(ASKED),
                             startup_timeout_s=180))
    try:
        cl.start()
        told = quorum_ops.finalized_features(cl)          # kafka-features describe, on the running cluster
        logged = feature_levels(cl.control.writes_since(-1))
    finally:
        cl.remove()
    for name, level in ASKED.items():
        assert told.get(name, 0) == level, (name, told)
        assert logged.get(name, 0) == level, (name, logged)   # level 0: no FeatureLevelRecord at all
    assert "group.version" not in logged and logged["metadata.version"] == 33      # the release's own default
    assert told["metadata.version"] == "4.4-IV2"
