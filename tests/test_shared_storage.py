"""Layout shared-storage (docs/broker-contract.md "Layout shared-storage"): the file's checks, which
scenarios apply there and elsewhere, and the preflight's identity rule for stateless brokers that may
all report the same node id (docs/examples/tansu.toml)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import distributions
from harness.certify.capabilities import Subject, plan
from harness.distributions.file import DistributionFileError, FileDistribution, load
from harness.foreign_images import seaweedfs_dockerfile, tansu_dockerfile
from harness.certify.preflight import Incompatible, check_identity, reported_ids
from harness.protocol.messages import BrokerInfo
from suites.catalog import SCENARIOS

TANSU = Path(__file__).resolve().parents[1] / "docs" / "examples" / "tansu.toml"
BY = {s.name: s for s in SCENARIOS}
STORAGE = ["storage.pause_store", "storage.kill_store", "storage.partition_store"]


def test_the_tansu_file_is_shared_storage_over_a_store_service():
    spec = load(TANSU)
    assert (spec.layout, spec.node_ids, [s.name for s in spec.services]) == ("shared-storage", (1, 2, 3), ["store"])
    d = FileDistribution(TANSU)
    assert not d.one_process and d.broker_ids(3) == [1, 2, 3]

    class N:
        def __init__(self, i):
            self.node_id, self.alias, self.host_port = i, f"broker{i}", 24000 + i
    nodes = [N(1), N(2), N(3)]
    p = d.plan({}, nodes[1], nodes, cluster_id="CID")
    assert p.command[p.command.index("--advertised-listener-url") + 1] == "tcp://127.0.0.1:24002"
    assert p.command[p.command.index("--cluster-id") + 1] == "CID"
    assert p.env["AWS_ENDPOINT"] == "http://store1:8333"


def test_shared_storage_needs_a_store_service(tmp_path):
    p = tmp_path / "v.toml"
    p.write_text("name = 'v'\nimage = 'x'\nlayout = 'shared-storage'\nnode_ids = [1, 2]\n")
    with pytest.raises(DistributionFileError) as e:
        load(p)
    assert str(e.value).startswith(f"distribution file {p}: layout: shared-storage: stateless brokers keep their "
                                   "data in a store; declare it as a [[service]]")
    p.write_text("name = 'v'\nimage = 'x'\nlayout = 'shared'\n")
    with pytest.raises(DistributionFileError, match="choose one of single-node, replicated, shared-storage"):
        load(p)


def test_only_the_storage_scenarios_apply_to_shared_storage():
    tansu = FileDistribution(TANSU)
    for name in STORAGE:
        assert BY[name].not_applicable(None, tansu) is None, name
    why = ("written for brokers that own their partitions' replicas (leaders, followers, ISR among the node ids); "
           "layout shared-storage has stateless brokers over a store")
    for name in ("broker_failover.kill_leader", "restart.kill_all", "groups.member_kill", "network.minority_split",
                 "topics.create_delete"):
        assert BY[name].not_applicable(None, tansu) == why, name
    by = {cp.capability.name: cp for cp in plan(SCENARIOS, Subject("kafka-chaos/tansu:0.6.0", None, None,
                                                                    tansu))}
    assert [s.name for s in by["storage"].applicable] == STORAGE
    assert [c for c, cp in by.items() if cp.applicable] == ["storage"]
    assert by["restart"].na_reason == "no applicable scenario: " + why


@pytest.mark.parametrize("name", ["apache-kraft", "apache-zk", "apache-kraft-dedicated", "generic"])
def test_the_storage_scenarios_do_not_apply_elsewhere(name):
    d = distributions.resolve(name)
    for s in STORAGE:
        assert BY[s].not_applicable("4.1.2", d) == (f"needs layout shared-storage; this distribution's layout is "
                                                    f"{d.layout}"), (name, s)
    # nor to the built-in pytest suite (no distribution: the default adapter)
    assert BY[STORAGE[0]].not_applicable("3.9.2", distributions.resolve()) is not None


def test_the_storage_capability_is_not_applicable_on_apache_kafka():
    by = {cp.capability.name: cp for cp in plan(SCENARIOS, Subject("kafka-chaos/kafka:4.1.2", None, "4.1.2",
                                                                    distributions.resolve("apache-kraft")))}
    assert by["storage"].na_reason == ("no applicable scenario: needs layout shared-storage; this distribution's "
                                       "layout is combined")
    assert by["broker_failover"].applicable      # unchanged


def _b(nid, port, host="127.0.0.1"):
    return BrokerInfo(nid, host, port, None)


PUBLISHED = {1: 24001, 2: 24002, 3: 24003}


def test_stateless_brokers_may_all_report_the_same_node_id():
    tansu = FileDistribution(TANSU)
    listed = {n: [_b(111, p)] for n, p in PUBLISHED.items()}     # each broker: "I am 111, here"
    check_identity(tansu, PUBLISHED, listed)
    assert reported_ids(listed) == {"1": [111], "2": [111], "3": [111]}
    # the same answers are INCOMPATIBLE for a replicated file: the ids are the identity there
    rep = distributions.resolve("generic")
    with pytest.raises(Incompatible, match=r"Metadata lists node ids \[111\], the distribution declares 3 nodes"):
        check_identity(rep, PUBLISHED, listed)


def test_shared_storage_brokers_must_advertise_what_the_harness_publishes():
    tansu = FileDistribution(TANSU)
    with pytest.raises(Incompatible) as e:
        check_identity(tansu, PUBLISHED, {1: [_b(111, 24001)], 2: [_b(111, 9092, "broker2")], 3: [_b(111, 24003)]})
    assert str(e.value) == ("Metadata (asked on node 2) advertises node 111 at broker2:9092, which the harness does "
                            "not publish (it publishes 127.0.0.1:24001, 24002, 24003): advertise "
                            "{advertised_host}:{port} in the distribution file")
    with pytest.raises(Incompatible, match=r"lists node 7 twice, at 127.0.0.1:24001 and 127.0.0.1:24002"):
        check_identity(tansu, PUBLISHED, {1: [_b(7, 24001), _b(7, 24002)], 2: [_b(7, 24002)], 3: [_b(7, 24003)]})
    with pytest.raises(Incompatible, match=r"asked on node 3\) lists no broker"):
        check_identity(tansu, PUBLISHED, {1: [_b(1, 24001)], 2: [_b(2, 24002)], 3: []})


def test_the_images_are_built_from_the_local_base_image_only():
    for text in (tansu_dockerfile("h1"), seaweedfs_dockerfile("h2")):
        first = text.splitlines()[0]
        assert first == "FROM kafka-chaos/base:bookworm-jre17", first
        assert "USER 1000" in text and "kafka-chaos.input-hash=" in text
    assert 'CMD ["broker"]' in tansu_dockerfile("h") and "kafka-chaos.broker-version=0.6.0" in tansu_dockerfile("h")
