"""Distribution files (harness/distributions/file.py): loading, the errors that name file and key, the
templates, and what the capability plan makes of declared capabilities and advertised APIs."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import distributions
from harness.certify.capabilities import Subject, plan
from harness.distributions.capability_table import capability_names
from harness.distributions.file import DistributionFileError, FileDistribution, load
from suites.catalog import SCENARIOS

EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "kfake.toml"

GOOD = """
name = "vendor"
image = "vendor/broker:1"
layout = "replicated"
node_ids = [11, 12, 13]
command = ["serve", "--id={node_id}", "--listen=0.0.0.0:{port}"]
[env]
VENDOR_ADVERTISED = "{advertised_host}:{port}"
VENDOR_CLUSTER = "{cluster_id}"
VENDOR_PEERS = "{node_ids}"
"""


def write(tmp_path, text: str) -> Path:
    p = tmp_path / "vendor.toml"
    p.write_text(text)
    return p


def test_the_example_loads():
    spec = load(EXAMPLE, tuple(capability_names()))
    assert (spec.name, spec.layout, spec.node_ids, spec.image) == ("kfake", "single-node", (111,),
                                                                   "kafka-chaos/kfake:latest")


def test_templates_are_filled_per_node(tmp_path):
    d = FileDistribution(write(tmp_path, GOOD))
    assert d.broker_ids(3) == [11, 12, 13] and d.name == f"file:{tmp_path / 'vendor.toml'}"

    class N:
        def __init__(self, i, port):
            self.node_id, self.alias, self.host_port = i, f"broker{i}", port
    nodes = [N(11, 20011), N(12, 20012), N(13, 20013)]
    p = d.plan({}, nodes[1], nodes, cluster_id="CID")
    assert p.command == ["serve", "--id=12", "--listen=0.0.0.0:20012"]
    assert p.env == {"VENDOR_ADVERTISED": "127.0.0.1:20012", "VENDOR_CLUSTER": "CID", "VENDOR_PEERS": "11,12,13"}
    # the name round-trips through distributions.get (runner, child processes, run records)
    assert distributions.resolve(d.name).broker_ids(1) == [11, 12, 13]


@pytest.mark.parametrize("text,key,words", [
    ("image = 'x'", "name", "missing"),
    ("name = 'v'", "image", "missing"),
    ("name = 'v'\nimage = 'x'\nlayout = 'shared'", "layout", "single-node, replicated"),
    ("name = 'v'\nimage = 'x'\nnode_ids = [1, 1]", "node_ids", "listed twice"),
    ("name = 'v'\nimage = 'x'\nnode_ids = ['a']", "node_ids", "list of integers"),
    ("name = 'v'\nimage = 'x'\nnodes = 3\nnode_ids = [1, 2]", "nodes", "3 nodes but node_ids lists 2"),
    ("name = 'v'\nimage = 'x'\nlayout = 'single-node'\nnode_ids = [1, 2]\n[env]\nP = '{port}'", "env",
     "pass them with {ports}"),
    ("name = 'v'\nimage = 'x'\nnodes = 12", "nodes", "between 1 and 9"),
    ("name = 'v'\nimage = 'x'\n[env]\nA = '{nodeid}'", "env.A", "unknown placeholder {nodeid}"),
    ("name = 'v'\nimage = 'x'\ncommand = ['run', '{port']", "command[1]", "not a valid template"),
    ("name = 'v'\nimage = 'x'\ncapabilities = ['acks', 'flying']", "capabilities", "unknown capability 'flying'"),
    ("name = 'v'\nimage = 'x'\nimgae = 'y'", "imgae", "unknown key"),
    ("name = 'V V'\nimage = 'x'", "name", "lower-case"),
    ("name = 'v'\nimage = 'x'\nports = 'sequential'", "ports", "any, contiguous"),
    ("name = 'v'\nimage = 'x'\nmetadata_log = 'yes'", "metadata_log", "true or false"),
    ("name = 'v'\nimage = 'x'\nmetadata_log = true", "metadata_log", "log.dirs"),
    ("name = 'v'\nimage = 'x'\nnode_pool = 'yes'", "node_pool", "true or false"),
    ("name = 'v'\nimage = 'x'\nlayout = 'single-node'\nnode_pool = true", "node_pool", "no pool"),
])
def test_errors_name_the_file_and_the_key(tmp_path, text, key, words):
    p = write(tmp_path, text)
    with pytest.raises(DistributionFileError) as e:
        load(p, tuple(capability_names()))
    msg = str(e.value)
    assert msg.startswith(f"distribution file {p}: {key}: "), msg
    assert words in msg, msg


EXAMPLES = EXAMPLE.parent


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.toml")))
def test_every_example_file_loads(name):
    spec = load(EXAMPLES / name, tuple(capability_names()))
    assert spec.name and spec.image


def test_contiguous_ports_go_to_the_nodes_in_node_id_order(tmp_path):
    from harness.cluster.cluster import _pick_ports
    d = FileDistribution(write(tmp_path, GOOD.replace("node_ids = [11, 12, 13]", "node_ids = [13, 11, 12]\n"
                                                                                   "ports = 'contiguous'")))
    assert d.contiguous_ports and d.broker_ids(3) == [11, 12, 13]
    ports = _pick_ports(3, None, "broker", contiguous=True)
    assert ports == [ports[0], ports[0] + 1, ports[0] + 2]
    assert not FileDistribution(write(tmp_path, GOOD)).contiguous_ports
    assert not distributions.resolve("apache-kraft").contiguous_ports


def test_unreadable_and_invalid_toml(tmp_path):
    with pytest.raises(DistributionFileError, match="cannot read it"):
        load(tmp_path / "absent.toml")
    with pytest.raises(DistributionFileError, match="not valid TOML"):
        load(write(tmp_path, "name = "))


def test_the_option_resolves_the_file_adapter_and_its_image(tmp_path):
    path = str(write(tmp_path, GOOD))
    d = distributions.resolve(file=path)
    assert d.needs_preflight and d.image == "vendor/broker:1"
    assert d.cli_args() == ["--distribution-file", str(tmp_path / "vendor.toml"), "--preflight-passed"]
    with pytest.raises(Exception, match="cannot be combined"):
        distributions.resolve("apache-kraft", file=path)
    with pytest.raises(Exception, match="--layout does not apply to --distribution-file"):
        distributions.resolve(file=path, layout="combined")


def test_plan_missing_apis_and_undeclared_capabilities_are_not_applicable(tmp_path):
    p = write(tmp_path, GOOD + "\n")
    text = p.read_text().replace('layout = "replicated"', 'layout = "replicated"\ncapabilities = ["acks", "topics", '
                                 '"preferred_election", "quorum", "restart"]').replace("[11, 12, 13]", "[1, 2, 3, 4, 5]")
    p.write_text(text)
    subject = Subject("vendor/broker:1", None, None, distributions.resolve(f"file:{p}"))
    have = set(range(0, 43)) | {44, 45, 46}          # no ElectLeaders (43), no DescribeQuorum (55)
    by = {cp.capability.name: cp for cp in plan(SCENARIOS, subject, advertised_apis=have)}
    assert by["preferred_election"].na_reason == "the broker does not advertise ElectLeaders (43) in ApiVersions"
    assert by["quorum"].na_reason == "the broker does not advertise DescribeQuorum (55) in ApiVersions"
    assert by["network"].na_reason == "the distribution file does not declare this capability"
    assert by["acks"].applicable and not by["acks"].na_reason


def test_apache_plans_do_not_change_without_advertised_apis():
    subject = Subject("kafka-chaos/kafka:4.1.2", None, "4.1.2", distributions.resolve("apache-kraft"))
    a = {cp.capability.name: (cp.na_reason, [s.name for s in cp.applicable]) for cp in plan(SCENARIOS, subject)}
    b = {cp.capability.name: (cp.na_reason, [s.name for s in cp.applicable])
         for cp in plan(SCENARIOS, subject, advertised_apis=None)}
    assert a == b and not any(r for r, _ in a.values() if "advertise" in r)


def test_scenarios_needing_more_brokers_than_declared_are_not_applicable(tmp_path):
    one = FileDistribution(EXAMPLE)
    three = FileDistribution(write(tmp_path, GOOD))
    s = next(s for s in SCENARIOS if s.name == "acks.aall_minisr2")     # 4 brokers, replication factor 3
    assert s.not_applicable(None, one) == ("needs 4 brokers (replication factor 3); the distribution runs 1 "
                                           "(layout single-node)")
    assert s.not_applicable(None, three) == ("needs 4 brokers (replication factor 3); the distribution runs 3 "
                                             "(layout replicated)")
    s3 = next(s for s in SCENARIOS if s.name == "broker_failover.kill_leader")
    assert s3.not_applicable(None, three) is None
    # the Apache adapters run as many brokers as a scenario asks: unchanged
    assert s.not_applicable("4.1.2", distributions.resolve("apache-kraft")) is None


def test_a_node_pool_gives_each_scenario_the_first_ids_it_needs(tmp_path):
    """node_pool = true: node_ids is a pool; a cluster of N brokers runs the first N ids (the built-in
    adapters' 1..N), so scenarios needing 4 or 5 brokers apply while the pool has them."""
    pool = FileDistribution(write(tmp_path, GOOD.replace("node_ids = [11, 12, 13]",
                                                         "node_ids = [11, 12, 13, 14, 15]\nnode_pool = true")))
    assert pool.broker_ids(3) == [11, 12, 13] and pool.broker_ids(5) == [11, 12, 13, 14, 15]
    assert pool.broker_ids(7) == [11, 12, 13, 14, 15]          # more than the pool: every id, and ...
    four = next(s for s in SCENARIOS if s.name == "acks.aall_minisr2")      # 4 brokers, replication factor 3
    five = next(s for s in SCENARIOS if s.name == "unclean.all_isr_dead")
    assert four.not_applicable(None, pool) is None and five.brokers == 5 and five.not_applicable(None, pool) is None
    small = FileDistribution(write(tmp_path, GOOD.replace("node_ids = [11, 12, 13]",
                                                          "node_ids = [11, 12, 13, 14]\nnode_pool = true")))
    assert four.not_applicable(None, small) is None
    assert five.not_applicable(None, small).startswith("needs 5 brokers")   # ... NOT-APPLICABLE past it
    fixed = FileDistribution(write(tmp_path, GOOD.replace("node_ids = [11, 12, 13]", "node_ids = [11, 12, 13, 14, 15]")))
    assert fixed.broker_ids(3) == [11, 12, 13, 14, 15]          # without node_pool every declared id runs


EXAMPLE3 = EXAMPLE.with_name("kfake-3.toml")


class _N:
    def __init__(self, i, port, role="broker"):
        self.node_id, self.alias, self.host_port, self.role = i, f"broker{i}", port, role


def test_a_single_node_process_may_serve_several_node_ids():
    spec = load(EXAMPLE3, tuple(capability_names()))
    assert (spec.layout, spec.node_ids) == ("single-node", (1, 2, 3))
    d = FileDistribution(EXAMPLE3)
    assert d.one_process and d.broker_ids(3) == [1, 2, 3]
    nodes = [_N(1, 20001), _N(2, 20002), _N(3, 20003)]
    env = d.plan({}, nodes[0], nodes, cluster_id="CID").env
    assert (env["KFAKE_NODE_IDS"], env["KFAKE_PORTS"]) == ("1,2,3", "20001,20002,20003")
    # one node id: one process as before, and a replicated file is not one process
    assert FileDistribution(EXAMPLE).one_process and not distributions.resolve("apache-kraft").one_process


def test_scenarios_that_fault_one_node_do_not_apply_when_node_ids_share_a_process(tmp_path):
    three = FileDistribution(EXAMPLE3)
    by = {s.name: s for s in SCENARIOS}
    why = "node ids 1,2,3 share one process: the scenario faults one node alone"
    for name in ("broker_failover.kill_leader", "topics.delete_with_broker_down", "topics.recreate",
                 "isr.pause_follower", "network.client_only", "controller_failover.kill_controller",
                 "preferred_election.manual", "restart.rolling", "transactions.coordinator_kill"):
        assert by[name].not_applicable(None, three) == why, name
    # no fault, or client-side faults only: they apply (topics.create_delete would, but reads the controller log)
    for name in ("groups.member_kill",):
        assert by[name].not_applicable(None, three) is None, name
    assert not by["topics.create_delete"].faults_one_node
    # too few node ids stays the reason when it is one
    assert by["acks.aall_minisr2"].not_applicable(None, three) == (
        "needs 4 brokers (replication factor 3); the distribution runs 3 (layout single-node)")
    # one node id in one process: a fault on it is a whole-process fault, so the count decides as before
    one = FileDistribution(EXAMPLE)
    assert by["broker_failover.kill_leader"].not_applicable(None, one).startswith("needs 3 brokers")
    # the same node ids in separate containers (replicated): per-node faults apply
    rep = FileDistribution(write(tmp_path, GOOD))
    assert by["broker_failover.kill_leader"].not_applicable(None, rep) is None


def test_the_kfake_3_plan_names_the_shared_process():
    subject = Subject("kafka-chaos/kfake:latest", None, None, distributions.resolve(f"file:{EXAMPLE3}"))
    by = {cp.capability.name: cp for cp in plan(SCENARIOS, subject)}
    assert not by["topics"].applicable
    assert [s.name for s in by["consumer-groups"].applicable] == ["groups.member_kill"]
    # restart.kill_all kills the whole process (every node id): it applies; the other restarts do not
    assert [s.name for s in by["restart"].applicable] == ["restart.kill_all"]
    for cap in ("broker_failover", "isr", "network", "preferred_election"):
        assert by[cap].na_reason == ("no applicable scenario: node ids 1,2,3 share one process: the scenario "
                                     "faults one node alone"), cap


def test_scenarios_reading_the_controller_log_need_a_broker_that_keeps_one(tmp_path):
    by = {s.name: s for s in SCENARIOS}
    s = by["topics.create_delete"]              # no per-node fault, but it reads the controller's writes
    why = ("reads the controller's decided writes; the broker keeps no controller log the harness can read "
           "(no ZooKeeper, no KRaft metadata log)")
    assert s.not_applicable(None, FileDistribution(EXAMPLE3)) == why
    assert s.not_applicable(None, FileDistribution(write(tmp_path, GOOD))) == why
    # a file whose nodes keep a KRaft metadata log (Kroxylicious in front of Apache Kafka): it applies
    kept = write(tmp_path, GOOD + '[config]\n"log.dirs" = "/var/lib/kafka"\n').read_text().replace(
        'layout = "replicated"', 'layout = "replicated"\nmetadata_log = true')
    (tmp_path / "kept.toml").write_text(kept)
    assert s.not_applicable(None, FileDistribution(tmp_path / "kept.toml")) is None
    # the Apache adapters (and the generic image, which may keep one) are never told so
    for name in ("apache-zk", "apache-kraft", "apache-kraft-dedicated", "generic"):
        d = distributions.resolve(name)
        assert not any("controller log" in (x.not_applicable(None, d) or "") for x in SCENARIOS), name
