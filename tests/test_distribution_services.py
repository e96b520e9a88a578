"""Service containers of distribution files (harness/distributions/services.py): loading errors that name
file and key, the placeholders of brokers and services, what a zookeeper service makes of the file, the
node groups the cluster starts, and the fault targets and network rules of services. No Docker."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace as NS

import pytest

from harness.certify.capabilities import capability_names
from harness.cluster.cluster import ClusterSpec
from harness.distributions.control_plane import ZkControlPlane
from harness.distributions.file import DistributionFileError, FileDistribution, FileControlPlane, load
from harness.nemesis import netrules as nr
from harness.nemesis.catalog import PEER_LINKS, normalize_links
from harness.nemesis.targets import TargetError, TargetUnresolved, parse_target, resolve
from suites.catalog import SCENARIOS

ZK_EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "apache-zk-3.9.toml"

STORE = """
name = "vendor"
image = "vendor/broker:1"
node_ids = [1, 2, 3]
command = ["serve", "--id={node_id}", "--store={service.objects.connect}", "--meta={service.meta.host}"]
[[service]]
name = "objects"
image = "vendor/objects:2"
port = 9000
count = 2
ready_log_line = "API: http"
command = ["server", "--peers={service.objects.hosts}", "--me={alias}:{port}", "--brokers={broker_hosts}"]
[service.env]
OBJECTS_ID = "{id}/{count}"
[[service]]
name = "meta"
port = 5432
"""


def write(tmp_path, text: str) -> Path:
    p = tmp_path / "vendor.toml"
    p.write_text(text)
    return p


def nodes(prefix: str, ids, port0: int = 20000):
    return [NS(node_id=i, alias=f"{prefix}{i}", host_port=port0 + i) for i in ids]


def test_store_services_become_node_groups_with_their_own_image_and_ready_line(tmp_path):
    d = FileDistribution(write(tmp_path, STORE))
    assert d.roles == ("broker",) and d.controller_model == "kraft" and d.observation == "protocol"
    groups = d.node_groups(ClusterSpec(zookeepers=3))
    assert [(g.role, g.key, g.ids, g.image, g.container_port, g.ready_log_line, g.port_offset) for g in groups] == [
        ("service", "objects", (1, 2), "vendor/objects:2", 9000, "API: http", 300),
        ("service", "meta", (1,), None, 5432, "", 310)]
    brokers = nodes("broker", (1, 2, 3))
    objs = nodes("objects", (1, 2))
    p = d.aux_plan(groups[0], objs[1], objs, {}, brokers, "CID")
    assert p.command == ["server", "--peers=objects1,objects2", "--me=objects2:9000", "--brokers=broker1,broker2,broker3"]
    assert p.env == {"OBJECTS_ID": "2/2"}
    b = d.plan({}, brokers[0], brokers, cluster_id="CID")
    assert b.command == ["serve", "--id=1", "--store=objects1:9000,objects2:9000", "--meta=meta1"]
    assert [s["name"] for s in d.describe()["services"]] == ["objects", "meta"]


def test_a_zookeeper_service_makes_a_zookeeper_mode_distribution():
    d = FileDistribution(ZK_EXAMPLE)
    assert d.roles == ("broker", "zookeeper") and d.controller_model == "zk" and d.observation == "zookeeper"
    assert isinstance(d.control_plane(NS()), ZkControlPlane)
    assert d.default_profile("3.9.2") == "compatible" and d.profile("apache-zk-3.9", "3.9.2").name == "apache-zk-3.9"
    # no count: as many ZooKeeper servers as the scenario asks, like apache-zk
    assert d.zookeeper_count(3) == 3 and d.zookeeper_count(1) == 1
    (g,) = d.node_groups(ClusterSpec(zookeepers=3))
    assert (g.role, g.ids, g.alias, g.container_port, g.port_offset) == ("zookeeper", (1, 2, 3), "zookeeper", 2181, 100)
    zks = nodes("zookeeper", (1, 2, 3))
    script = d.aux_plan(g, zks[1], zks, {}, nodes("broker", (1, 2, 3)), None).command[-1]
    assert "KC_ZK_MYID=2" in script and "clientPort=2181" in script and "echo 1,2,3" in script
    broker = d.plan({"zookeeper.session.timeout.ms": "6000"}, nodes("broker", (1,))[0], nodes("broker", (1, 2, 3)))
    assert "zookeeper.connect=zookeeper1:2181,zookeeper2:2181,zookeeper3:2181" in broker.command[-1]
    assert broker.env == {"KAFKA_ZOOKEEPER_SESSION_TIMEOUT_MS": "6000"}
    # the example keeps ZooKeeper's transaction log in a dataLogDir of its own: the observer reads it there
    assert "dataLogDir=/var/lib/zookeeper/txn" in script
    assert d.zk_txn_log_dir == "/var/lib/zookeeper/txn/version-2"


def test_the_transaction_log_directory_defaults_to_apaches_data_dir(tmp_path):
    text = ZK_EXAMPLE.read_text().replace('txn_log_dir = "/var/lib/zookeeper/txn"\n', "")
    assert FileDistribution(write(tmp_path, text)).zk_txn_log_dir == "/var/lib/zookeeper/version-2"


def test_without_a_zookeeper_service_readiness_stays_the_protocol(tmp_path):
    assert isinstance(FileDistribution(write(tmp_path, STORE)).control_plane(NS()), FileControlPlane)


def test_a_fixed_zookeeper_count_makes_larger_ensembles_not_applicable(tmp_path):
    text = ZK_EXAMPLE.read_text().replace('role = "zookeeper"\n', 'role = "zookeeper"\ncount = 1\n')
    d = FileDistribution(write(tmp_path, text))
    by_name = {s.name: s for s in SCENARIOS}
    assert by_name["zookeeper.kill_leader"].not_applicable("3.9.2", d) == \
        "needs a ZooKeeper ensemble of 3; the distribution runs 1"
    assert by_name["zookeeper.session_expiry"].not_applicable("3.9.2", d) is None
    assert by_name["zookeeper.kill_leader"].not_applicable("3.9.2", FileDistribution(ZK_EXAMPLE)) is None


BASE = "name = 'v'\nimage = 'x'\n"


@pytest.mark.parametrize("text,key,words", [
    ("service = 'zk'", "service", "[[service]] tables"),
    ("[[service]]\nport = 1", "service[0].name", "lower-case"),
    ("[[service]]\nname = 'zk1'\nport = 1", "service[0].name", "no digits"),
    ("[[service]]\nname = 'broker'\nport = 1", "service[0].name", "host name prefix of the Kafka nodes"),
    ("[[service]]\nname = 's'\nport = 1\n[[service]]\nname = 's'\nport = 2", "service[1].name", "another"),
    ("[[service]]\nname = 's'\nport = 1\nimgae = 'y'", "service.s.imgae", "unknown key"),
    ("[[service]]\nname = 's'\nport = 1\nrole = 'zookeper'", "service.s.role", "zookeeper, store"),
    ("[[service]]\nname = 's'", "service.s.port", "missing"),
    ("[[service]]\nname = 's'\nport = 70000", "service.s.port", "port number"),
    ("[[service]]\nname = 's'\nport = 1\ncount = 0", "service.s.count", "between 1 and 5"),
    ("[[service]]\nname = 's'\nport = 1\ncount = true", "service.s.count", "between 1 and 5"),
    ("[[service]]\nname = 's'\nport = 1\nimage = ''", "service.s.image", "non-empty"),
    ("[[service]]\nname = 's'\nport = 1\nready_log_line = 3", "service.s.ready_log_line", "a string"),
    ("[[service]]\nname = 's'\nport = 1\ntxn_log_dir = '/d'", "service.s.txn_log_dir", "only a service of role zookeeper"),
    ("[[service]]\nname = 'zk'\nrole = 'zookeeper'\ntxn_log_dir = 'data'", "service.zk.txn_log_dir", "absolute directory"),
    ("[[service]]\nname = 's'\nport = 1\ncommand = []", "service.s.command", "non-empty list"),
    ("[[service]]\nname = 's'\nport = 1\ncommand = ['{node_id}']", "service.s.command[0]", "unknown placeholder {node_id}"),
    ("[[service]]\nname = 's'\nport = 1\n[service.env]\nA = '{id'", "service.s.env.A", "not a valid template"),
    ("[[service]]\nname = 's'\nport = 1\n[service.env]\n'A-B' = 'x'", "service.s.env.A-B", "variable name"),
    ("[[service]]\nname = 'a'\nrole = 'zookeeper'\n[[service]]\nname = 'zk'\nrole = 'zookeeper'",
     "service.zk.role", "has this role already"),
    ("command = ['{service.zk.connect}']", "command[0]", "names no declared [[service]]"),
    ("[[service]]\nname = 's'\nport = 1\n[env]\nA = '{service.s.url}'", "env.A", "{service.s.connect}"),
    ("[[service]]\nname = 's'\nport = 1\ncommand = ['{service.t.host}']", "service.s.command[0]", "names no declared"),
])
def test_malformed_services_name_the_file_and_the_key(tmp_path, text, key, words):
    p = write(tmp_path, BASE + text)
    with pytest.raises(DistributionFileError) as e:
        load(p, tuple(capability_names()))
    msg = str(e.value)
    assert msg.startswith(f"distribution file {p}: {key}: "), msg
    assert words in msg and "\n" not in msg, msg


# -- faults on services ------------------------------------------------------------------------------
def test_service_targets_parse_and_resolve():
    assert [str(t) for t in parse_target("service:objects,service:objects:2")] == ["service:objects",
                                                                                   "service:objects:2"]
    with pytest.raises(TargetError):
        parse_target("service:Objects1")
    objs = [NS(node_id=i, service="objects", role="service", name=f"o{i}") for i in (1, 2)]
    zk = NS(node_id=1, service="zookeeper", role="zookeeper", name="z1")
    broker = NS(node_id=1, service=None, role="broker", name="b1")
    cluster = NS(name="t", nodes=lambda: [zk, broker] + objs)
    assert resolve("service:objects", cluster, None, None) == objs
    assert resolve("service:objects:2", cluster, None, None) == [objs[1]]
    assert resolve("service:zookeeper", cluster, None, None) == [zk]
    with pytest.raises(TargetUnresolved):
        resolve("service:objects:3", cluster, None, None)


S1 = nr.NetNode("c-s1", "objects1", "service", "10.0.0.9", 9000, "10.0.0.1")
B1 = nr.NetNode("c-b1", "broker1", "broker", "10.0.0.2", 20001, "10.0.0.1", internal_port=9093)
B2 = nr.NetNode("c-b2", "broker2", "broker", "10.0.0.3", 20002, "10.0.0.1", internal_port=9093)
S2 = nr.NetNode("c-s2", "meta1", "service", "10.0.0.8", 5432, "10.0.0.1")


def test_a_store_service_takes_no_rules_its_peers_cut_it():
    assert nr.link_kind(S1, B1) == "service" and "service" in PEER_LINKS
    assert normalize_links("broker-service") == ("service",)
    plan = nr.isolate_rules([S1], [S1, B1, B2, S2], PEER_LINKS + ("client",), "t")
    assert set(plan) == {"c-b1", "c-b2"}
    assert sorted(r[0] for r in plan["c-b1"]) == ["KAFKA_CHAOS_IN", "KAFKA_CHAOS_OUT"]
    assert all("10.0.0.9/32" in r[1] for r in plan["c-b1"])
    # one way, mirrored: the service cannot send = the brokers drop what comes from it
    out = nr.one_way_rules([S1], [B1], "out", PEER_LINKS, "t")
    assert list(out) == ["c-b1"] and [r[0] for r in out["c-b1"]] == ["KAFKA_CHAOS_IN"]
    part = nr.partition_rules([[S1], [B1, B2]], PEER_LINKS, "t")
    assert set(part) == {"c-b1", "c-b2"}
    # a broker's links to the store are the "service" class: not cut by broker-broker alone
    assert nr.isolate_rules([B1], [B1, B2, S1], ("broker-broker",), "t")["c-b1"] == \
        nr.isolate_rules([B1], [B1, B2], ("broker-broker",), "t")["c-b1"]


def test_heal_all_leaves_a_store_without_iptables_alone():
    from harness.nemesis.nemesis import _bare_store, _node_residue

    def no_sh(cmd):
        raise RuntimeError("exec failed: sh not found")
    bare = NS(role="service", name="c-s1", exec=no_sh, status=lambda: "running")
    tooled = NS(role="service", name="c-s2", exec=lambda cmd: (0, ""), status=lambda: "running")
    assert _bare_store(bare) and not _bare_store(tooled) and not _bare_store(NS(role="broker"))
    assert _node_residue(bare, True) == []
