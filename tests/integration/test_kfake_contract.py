"""A broker that is not Apache Kafka through a distribution file, on real containers: franz-go's
kfake (kafka-chaos/kfake:latest, built offline by `kafka-chaos images build-kfake`). The preflight
(harness/certify/preflight.py) decides in seconds: INCOMPATIBLE with one precise line when the file's node
ids do not match what the broker reports or a required API is missing, NOT-APPLICABLE capabilities
for the admin APIs it does not advertise, PASS for docs/examples/kfake.toml. One cluster at a time,
each removed before the next starts."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness import distributions
from harness.certify.capabilities import Subject, plan
from harness import docker_util
from harness.cluster.cluster import Cluster, ClusterSpec
from harness.nemesis.fault_base import FaultError
from harness.nemesis.nemesis import Nemesis
from harness.foreign_images import KFAKE_TAG, build_kfake
from harness.certify.preflight import EXIT_INCOMPATIBLE, preflight
from suites.catalog import SCENARIOS

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "kfake.toml"
EXAMPLE3 = ROOT / "docs" / "examples" / "kfake-3.toml"      # node ids 1, 2, 3 in one process
WRONG_IDS_LINE = ("Metadata lists node ids [111], the distribution declares 3 nodes: set node ids in the "
                  "distribution file or use layout single-node")


@pytest.fixture(scope="module")
def kfake_image(kc_docker):
    build_kfake()            # cached by the hash of brokers/kfake: instant once built
    return KFAKE_TAG


def no_kfake_left() -> bool:
    """No container of the kfake image is left (these tests run one cluster at a time)."""
    return not docker_util.client().containers.list(all=True, filters={"ancestor": KFAKE_TAG})


def kfake_file(tmp_path, *, layout="single-node", ids="node_ids = [111]", node_ids_env="{node_id}",
               hide="", host="{advertised_host}", ports="{port}", extra="") -> Path:
    p = tmp_path / "kfake-variant.toml"
    p.write_text(f"""
name = "kfake-variant"
image = "{KFAKE_TAG}"
layout = "{layout}"
{ids}
ready_log_line = "kfake-broker started"
[env]
KFAKE_NODE_IDS = "{node_ids_env}"
KFAKE_PORTS = "{ports}"
KFAKE_ADVERTISED_HOST = "{host}"
KFAKE_HIDE_APIS = "{hide}"
{extra}
""")
    return p


def certify(f, out) -> tuple[subprocess.CompletedProcess, float]:
    """``kafka-chaos certify`` of distribution file ``f`` (profile compatible): its result and seconds."""
    t0 = time.monotonic()
    res = subprocess.run([sys.executable, "-m", "harness.cli", "certify", "--distribution-file", str(f),
                          "--profile", "compatible", "--out", str(out)], cwd=ROOT, capture_output=True, text=True)
    return res, time.monotonic() - t0


def test_the_kfake_example_passes_the_preflight(kfake_image):
    r = preflight(distributions.resolve(file=EXAMPLE))
    assert r.ok, r.line
    assert r.node_ids == [111] and r.seconds <= 30, r
    assert {"ready_s", "produce_ack_s", "group_join_s", "first_fetch_s"} <= set(r.facts)
    assert 55 not in r.api_keys            # kfake has no DescribeQuorum
    assert no_kfake_left()


def test_wrong_node_ids_are_incompatible_within_a_minute_with_the_precise_line(kfake_image, tmp_path):
    # three containers, each a kfake reporting node id 111, declared as nodes 1..3
    f = kfake_file(tmp_path, layout="replicated", ids="nodes = 3", node_ids_env="111")
    res, took = certify(f, tmp_path / "cert")
    assert res.returncode == EXIT_INCOMPATIBLE, res.stderr[-2000:]
    assert res.stdout.strip() == f"INCOMPATIBLE {WRONG_IDS_LINE}", res.stdout
    assert took < 60, took
    assert "UNKNOWN" not in res.stderr and "retry" not in res.stderr
    assert (tmp_path / "cert" / "certificate.json").exists()
    assert no_kfake_left()


def test_a_missing_required_api_is_incompatible(kfake_image, tmp_path):
    r = preflight(distributions.resolve(file=kfake_file(tmp_path, hide='11')))
    assert not r.ok
    assert r.line == ("node 111 does not advertise JoinGroup (11) in ApiVersions; every scenario needs it"), r.line
    assert r.seconds < 60, r.seconds


def test_an_advertised_address_the_host_cannot_reach_is_incompatible(kfake_image, tmp_path):
    # the broker answers on its published port but tells clients to dial its cluster-network name
    f = kfake_file(tmp_path, host="{alias}")
    r = preflight(distributions.resolve(file=f))
    assert not r.ok
    port = r.line.rsplit("127.0.0.1:", 1)[-1].split(":")[0]
    assert r.line == (f"Metadata (asked on node 111) advertises node 111 at broker111:{port}, but the harness "
                      f"publishes it at 127.0.0.1:{port}: advertise {{advertised_host}}:{{port}} in the distribution "
                      "file"), r.line
    assert r.seconds < 60, r.seconds


def test_a_broker_that_logs_ready_but_listens_elsewhere_is_incompatible_within_a_minute(kfake_image, tmp_path):
    # kfake listens on 19999 inside its container; the harness publishes (and dials) {port}
    r = preflight(distributions.resolve(file=kfake_file(tmp_path, ports='19999')))
    assert not r.ok
    m = re.fullmatch(r"kc-\S+-b111 logged 'kfake-broker started' but did not answer the Kafka protocol on its "
                     r"published port 127\.0\.0\.1:(\d+) in the 30 s after \(.+\): the broker must listen on "
                     r"\{port\} \((\d+) here\) inside its container", r.line)
    assert m and m.group(1) == m.group(2), r.line
    assert r.seconds < 60, r.seconds
    assert no_kfake_left()


def test_a_broker_without_consumer_groups_is_incompatible(kfake_image, tmp_path):
    # every group API is advertised, but every JoinGroup fails (COORDINATOR_NOT_AVAILABLE)
    f = kfake_file(tmp_path, extra='KFAKE_NO_GROUPS = "true"')
    r = preflight(distributions.resolve(file=f))
    assert not r.ok
    assert r.line.startswith("no consumer group support: the group kc-preflight-"), r.line
    assert re.search(r"got no assignment \(JoinGroup/SyncGroup\) within \d+ s$", r.line), r.line
    assert r.seconds < 60, r.seconds
    assert "produce_ack_s" in r.facts and "group_join_s" not in r.facts     # produce worked, the group did not


def test_a_missing_admin_api_makes_its_capabilities_not_applicable(kfake_image, tmp_path):
    f = kfake_file(tmp_path, hide="43,45,46")
    r = preflight(distributions.resolve(file=f))
    assert r.ok, r.line
    by = {cp.capability.name: cp for cp in plan(SCENARIOS, Subject(KFAKE_TAG, None, None, distributions.resolve(file=f)),
                                                advertised_apis=r.api_keys)}
    assert by["preferred_election"].na_reason == "the broker does not advertise ElectLeaders (43) in ApiVersions"
    assert by["unclean"].na_reason == "the broker does not advertise ElectLeaders (43) in ApiVersions"
    assert by["reassignment"].na_reason == ("the broker does not advertise AlterPartitionReassignments (45), "
                                            "ListPartitionReassignments (46) in ApiVersions")
    assert by["quorum"].na_reason == "the broker does not advertise DescribeQuorum (55) in ApiVersions"
    assert "advertise" not in by["acks"].na_reason      # Produce and Fetch are there (one node: too few brokers)


def test_one_process_serving_three_node_ids_passes_the_preflight(kfake_image):
    r = preflight(distributions.resolve(file=EXAMPLE3))
    assert r.ok, r.line
    assert r.node_ids == [1, 2, 3] and r.seconds <= 30, r
    ports = {nid: int(addr.rsplit(":", 1)[1]) for nid, addr in r.advertised.items()}
    assert set(ports) == {"1", "2", "3"} and len(set(ports.values())) == 3, r.advertised
    assert all(a.startswith("127.0.0.1:") for a in r.advertised.values()), r.advertised
    assert no_kfake_left()


def test_three_node_ids_run_in_one_container_with_three_loopback_ports_and_take_no_one_node_fault(kfake_image):
    with Cluster(ClusterSpec(distribution=f"file:{EXAMPLE3}", startup_timeout_s=60)) as cl:
        assert cl.broker_ids == [1, 2, 3]
        containers = {cl.brokers[b].name for b in cl.broker_ids}
        assert containers == {f"kc-{cl.name}-b1"}
        c = docker_util.client().containers.get(f"kc-{cl.name}-b1")
        bound = {int(v[0]["HostPort"]): v[0]["HostIp"] for v in c.attrs["HostConfig"]["PortBindings"].values()}
        assert bound == {cl.brokers[b].host_port: "127.0.0.1" for b in cl.broker_ids}
        assert [n.name for n in cl.broker_containers()] == [f"kc-{cl.name}-b1"] and cl.sharing(cl.brokers[2]) == [1, 2, 3]
        # a fault on one of the ids is refused, not applied to the whole process
        with pytest.raises(FaultError, match="node ids 1,2,3 share one process"):
            Nemesis(cl, view=object()).apply("kill", "broker:2")
        assert c.reload() is None and c.status == "running"
        # found again from Docker alone (`cluster status`, other processes)
        again = Cluster.attach(cl.name)
        assert {b: again.brokers[b].host_port for b in again.broker_ids} == {
            b: cl.brokers[b].host_port for b in cl.broker_ids}
    assert no_kfake_left()


def test_declared_ids_the_one_process_does_not_report_are_incompatible_within_a_minute(kfake_image, tmp_path):
    # declared 1, 2, 3; the process serves 7, 8, 9 on the published ports
    f = kfake_file(tmp_path, ids="node_ids = [1, 2, 3]", node_ids_env="7,8,9", ports="{ports}")
    res, took = certify(f, tmp_path / "cert")
    assert res.returncode == EXIT_INCOMPATIBLE, res.stderr[-2000:]
    assert res.stdout.strip() == ("INCOMPATIBLE Metadata lists node ids [7, 8, 9], the distribution declares 3 "
                                  "nodes: set node_ids = [7, 8, 9] in the distribution file"), res.stdout
    assert took < 60, took
    assert no_kfake_left()


def test_node_ids_on_each_others_ports_are_incompatible(kfake_image, tmp_path):
    # the right ids, but the process serves node 3 on the port published for node 1 (and 1 on 3's)
    f = kfake_file(tmp_path, ids="node_ids = [1, 2, 3]", node_ids_env="3,2,1", ports="{ports}")
    r = preflight(distributions.resolve(file=f))
    assert not r.ok
    m = re.fullmatch(r"Metadata \(asked on node 1\) advertises node 1 at 127\.0\.0\.1:(\d+), but the harness "
                     r"publishes it at 127\.0\.0\.1:(\d+): advertise \{advertised_host\}:\{port\} in the "
                     r"distribution file", r.line)
    assert m and m.group(1) != m.group(2), r.line
    assert r.seconds < 60, r.seconds
    assert no_kfake_left()
