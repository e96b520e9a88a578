"""The second broker that is not Apache Kafka, on real containers: Kroxylicious (Maven Central) in front
of a 3-node Apache Kafka 4.1.2 KRaft cluster (kafka-chaos/kroxylicious:4.1.2, built offline by
`kafka-chaos images build-kroxylicious`; docs/examples/kroxylicious.toml). The preflight passes with the
node ids Kafka reports, every node advertised at its proxy's published address; advertising the
cluster-network name instead is INCOMPATIBLE with one line.

Marked nightly as well as docker: building the image takes about a minute (Maven) and a 3-node start
35-80 s on the shared 2-core machine (two JVMs per container), too long for every CI run."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import distributions
from harness import docker_util
from harness.foreign_images import build_kroxylicious
from harness.certify.preflight import preflight

pytestmark = [pytest.mark.docker, pytest.mark.nightly]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "kroxylicious.toml"


@pytest.fixture(scope="module")
def kroxylicious_image(docker_engine):
    return build_kroxylicious().tag        # cached by the hash of brokers/kroxylicious and the Kafka image


def none_left(tag: str) -> bool:
    return not docker_util.client().containers.list(all=True, filters={"ancestor": tag})


def test_the_kroxylicious_example_passes_the_preflight(kroxylicious_image):
    r = preflight(distributions.resolve(file=EXAMPLE))
    assert r.ok, r.line
    assert r.node_ids == [1, 2, 3]
    ports = sorted(int(a.split(":")[1]) for a in r.advertised.values())
    assert all(a.startswith("127.0.0.1:") for a in r.advertised.values()), r.advertised
    assert ports == [ports[0], ports[0] + 1, ports[0] + 2]          # ports = "contiguous"
    assert {43, 45, 46, 55} <= set(r.api_keys)                      # the proxy passes Kafka's admin APIs on
    assert r.seconds - r.facts["ready_s"] <= 60, r                  # the checks after readiness
    assert none_left(kroxylicious_image)


def test_a_proxy_advertising_the_cluster_network_name_is_incompatible(kroxylicious_image, tmp_path):
    f = tmp_path / "kroxylicious-alias.toml"
    f.write_text(EXAMPLE.read_text().replace('KC_ADVERTISED_HOST = "{advertised_host}"',
                                             'KC_ADVERTISED_HOST = "{alias}"'))
    r = preflight(distributions.resolve(file=f))
    assert not r.ok
    assert r.line.startswith("Metadata (asked on node 1) advertises node 1 at broker1:"), r.line
    assert r.line.endswith("advertise {advertised_host}:{port} in the distribution file"), r.line
    assert none_left(kroxylicious_image)
