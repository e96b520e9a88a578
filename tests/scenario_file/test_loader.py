"""Scenario files (harness.scenario.file): a valid file gives a real Scenario; every schema error is one
line naming the file, the line and the key, and is a HarnessError (exit code 2). Pure: no cluster."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.scenario.scenario import Scenario
from harness.scenario.file import ScenarioFileError, find_line, load, load_file

BASE = textwrap.dedent("""\
    name = "broker_failover.file_kill_leader"
    description = "kill the leader of chaos-0"

    [cluster]
    brokers = 3
    config = { "min.insync.replicas" = 2 }

    [[topics]]
    name = "chaos"
    partitions = 3
    replication_factor = 3

    [workload]
    acks = "all"
    rate = 200

    [[steps]]
    id = "kill"
    at = 5
    fault = "kill"
    target = "leader(chaos,0)"
    duration = 15

    [[expect]]
    that = "leader_elected"
    after = "kill"
    within = 10

    [[expect]]
    that = "isr_full"
    within = 60

    [[expect]]
    that = "no_acked_write_lost"
    """)


def write(tmp_path, text: str, name: str = "s.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def error(tmp_path, text: str) -> ScenarioFileError:
    p = write(tmp_path, text)
    with pytest.raises(ScenarioFileError) as ei:
        load(p)
    msg = str(ei.value)
    assert "\n" not in msg and msg.startswith(f"{p}:"), msg
    assert isinstance(ei.value, HarnessError) and ei.value.exit_code == 2
    return ei.value


def test_a_valid_file_is_a_scenario(tmp_path):
    s = load(write(tmp_path, BASE))
    assert isinstance(s, Scenario) and callable(s.script)
    assert s.name == "broker_failover.file_kill_leader" and s.family == "broker_failover"
    assert s.brokers == 3 and s.broker_config == {"min.insync.replicas": "2"}
    assert [(t.name, t.partitions, t.replication_factor) for t in s.topics] == [("chaos", 3, 3)]
    assert s.workload == {"acks": "all", "rate": 200, "topic": "chaos", "partitions": 3}
    assert s.checks == ("durability", "expectations")
    assert s.kraft and s.needs_roles == ()          # written for both control planes by default
    assert s.max_duration_s >= 180


def test_defaults_and_run_defaults(tmp_path):
    sf = load_file(write(tmp_path, 'name = "topics.x"\n[cluster]\ndistribution = "apache-kraft"\n'
                                   'kafka_version = "4.1.2"\n', "my-file.toml"))
    s = sf.scenario
    assert (sf.distribution, sf.kafka_version) == ("apache-kraft", "4.1.2")
    assert s.topics[0].name == "chaos" and s.workload["topic"] == "chaos"
    assert s.checks == ("conformance", "durability", "expectations")
    assert load(write(tmp_path, "", "my-file.toml")).name == "file.my_file"


@pytest.mark.parametrize("old,new,line,key,says", [
    ('fault = "kill"', 'fault = "kil"', 20, "steps[0].fault", "allowed: bandwidth"),
    ('target = "leader(chaos,0)"', 'target = "leader(chaos,9)"', 21, "steps[0].target", "no such partition"),
    ('target = "leader(chaos,0)"', 'target = "leader-of(chaos)"', 21, "steps[0].target", "leader(<topic>,<partition>)"),
    ('rate = 200', 'rate = "fast"', 15, "workload.rate", "expected float"),
    ('rate = 200', 'rtae = 200', 15, "workload.rtae", "allowed:"),
    ('brokers = 3', 'brokers = "3"', 5, "cluster.brokers", "expected an integer"),
    ('"min.insync.replicas" = 2', '"min.insync.replicas" = [2]', 6, 'cluster.config."min.insync.replicas"',
     "expected a string, number or boolean"),
    ('within = 10', 'within = -1', 27, "expect[0].within", ">= 0.1"),
    ('after = "kill"', 'after = "kil"', 26, "expect[0].after", "allowed: faults, kill"),
    ('that = "isr_full"', 'that = "isr_fll"', 30, "expect[1].that", "allowed: leader_elected"),
    ('duration = 15', 'duration = 15\ncolour = "red"', 23, "steps[0].colour", "allowed: id, at, after"),
    ('acks = "all"', 'acks = "most"', 14, "workload.acks", "allowed: 0, 1"),
    ('fault = "kill"', 'fault = "zk_kill"', 20, "steps[0].fault", 'modes = ["zookeeper"]'),
    ('target = "leader(chaos,0)"', 'target = "quorum-leader"', 21, "steps[0].target", 'modes = ["kraft"]'),
    ('replication_factor = 3', 'replication_factor = 4', 11, "topics[0].replication_factor", "1..3"),
])
def test_errors_name_file_line_and_key(tmp_path, old, new, line, key, says):
    assert old in BASE
    e = error(tmp_path, BASE.replace(old, new, 1))
    assert (e.line, e.key) == (line, key), str(e)
    assert says in str(e) and f":{line}: {key}: " in str(e)


def test_unknown_top_level_key_and_table(tmp_path):
    e = error(tmp_path, BASE + "\n[nemesis]\nx = 1\n")
    assert e.key == "nemesis" and e.line == BASE.count("\n") + 2 and "allowed: name, description" in str(e)
    e = error(tmp_path, "colour = 1\n" + BASE)
    assert (e.line, e.key) == (1, "colour")


def test_toml_syntax_error_has_a_line(tmp_path):
    e = error(tmp_path, BASE.replace("rate = 200", "rate = = 200"))
    assert e.line == 15 and "not valid TOML" in str(e)


def test_missing_file(tmp_path):
    with pytest.raises(ScenarioFileError, match="cannot read"):
        load(tmp_path / "none.toml")


def test_steps_and_random_exclude_each_other(tmp_path):
    e = error(tmp_path, BASE + '\n[random]\nlength = 30\nfaults = { kill = 1 }\n')
    assert e.key == "random"


def test_random_mix(tmp_path):
    s = load(write(tmp_path, 'name = "nightly.file"\n[random]\nlength = 60\ninterval = [5, 10]\n'
                             'faults = { kill = 1, pause = { weight = 2, targets = ["leader(chaos,0)"] } }\n'))
    assert s.script is None and s.fault_mix["length"] == 60 and s.max_duration_s >= 180
    e = error(tmp_path, 'name = "nightly.file"\n[random]\nlength = 60\nfaults = { kil = 1 }\n')
    assert e.key == "random.faults.kil" and e.line == 4
    s = load(write(tmp_path, 'name = "nightly.file"\n[random]\nlength = 30\nfaults = { kill = 1 }\n'
                             '[[expect]]\nthat = "isr_full"\nwithin = 60\n'))
    assert callable(s.script)


def test_anchored_expectation_needs_a_step(tmp_path):
    e = error(tmp_path, 'name = "a.b"\n[[expect]]\nthat = "leader_elected"\n')
    assert e.key == "expect[0].after" and "needs after" in str(e)


def test_after_must_name_an_earlier_step(tmp_path):
    e = error(tmp_path, 'name = "a.b"\n[[steps]]\nat = 1\nafter = "later"\nfault = "kill"\n'
                        '[[steps]]\nid = "later"\naction = "wait"\n')
    assert (e.key, e.line) == ("steps[0].after", 4)


def test_modes(tmp_path):
    s = load(write(tmp_path, 'name = "zookeeper.x"\n[cluster]\nmodes = ["zookeeper"]\n'
                             '[[steps]]\nfault = "zk_kill"\ntarget = "zookeeper-leader"\nduration = 5\n'))
    assert not s.kraft and s.needs_roles == ("zookeeper",)
    s = load(write(tmp_path, 'name = "quorum.x"\n[cluster]\nmodes = ["kraft"]\n'
                             '[[steps]]\nfault = "kill"\ntarget = "quorum-leader"\nduration = 5\n'))
    assert s.kraft and s.needs_roles == ("controller",)
    e = error(tmp_path, 'name = "a.b"\n[cluster]\nmodes = ["raft"]\n')
    assert e.key == "cluster.modes[0]" and e.line == 3


def test_workload_kinds(tmp_path):
    s = load(write(tmp_path, 'name = "transactions.x"\n[workload]\nkind = "txn"\nrate = 20.0\nabort_ratio = 0.2\n'
                             '[[expect]]\nthat = "transactions"\n'))
    assert s.workload["kind"] == "txn" and s.checks == ("transactions", "expectations")
    # txn's own `consumers` (read_committed consumers), not plain's alias of assign_consumers (issue 42)
    s = load(write(tmp_path, 'name = "a.b"\n[cluster]\ndistribution = "apache-kraft"\nkafka_version = "4.4.0"\n'
                             '[workload]\nkind = "txn"\nconsumers = 2\n'))
    assert s.workload["consumers"] == 2
    # a refused key is not in the allowed list the message gives
    e = error(tmp_path, 'name = "a.b"\n[workload]\nkind = "txn"\ngroup_consumers = 2\n')
    assert e.key == "workload.group_consumers"
    allowed = str(e).split("allowed:")[1]
    assert "group_consumers" not in allowed and "consumers" in allowed
    assert load(write(tmp_path, 'name = "a.b"\nworkload = false\n')).workload is None


def test_checker_expectation_needs_its_check(tmp_path):
    e = error(tmp_path, 'name = "a.b"\nchecks = ["conformance"]\n[[expect]]\nthat = "no_acked_write_lost"\n')
    assert e.key == "checks" and e.line == 2


def test_actions(tmp_path):
    text = textwrap.dedent("""\
        name = "reassignment.x"
        [cluster]
        brokers = 4
        [[topics]]
        name = "chaos"
        partitions = 3
        [[topics]]
        name = "bulk"
        assignment = { "0" = [1, 2, 3] }
        [[steps]]
        action = "preload"
        topic = "bulk"
        mb = 4
        [[steps]]
        id = "move"
        action = "reassign"
        topic = "bulk"
        partition = 0
        replicas = [1, 3, 4]
        throttle = 1000
        [[steps]]
        after = "move"
        at = 2
        fault = "kill"
        target = "broker:1"
        duration = 10
        [[expect]]
        that = "reassignment_completes"
        within = 120
        """)
    s = load(write(tmp_path, text))
    assert s.brokers == 4 and s.topics[1].assignment == {0: [1, 2, 3]}
    e = error(tmp_path, text.replace("throttle = 1000", "throttle = 10"))
    assert (e.key, e.line) == ("steps[1].throttle", 20)
    e = error(tmp_path, text.replace('topic = "bulk"\nmb', 'topic = "bulky"\nmb'))
    assert (e.key, e.line) == ("steps[0].topic", 12)
    e = error(tmp_path, text.replace('action = "preload"', 'action = "preheat"'))
    assert (e.key, e.line) == ("steps[0].action", 11)


def test_find_line_walks_tables_and_arrays():
    text = '[a]\nx = 1\n[[s]]\ny = 1\n[[s]]\ny = 2\nz = { q = 3 }\n[a.b]\n"k.k" = 1\n'
    assert find_line(text, ("a", "x")) == 2
    assert find_line(text, ("s", 1, "y")) == 6
    assert find_line(text, ("s", 1, "z", "q")) == 7
    assert find_line(text, ("a", "b", "k.k")) == 9
    assert find_line(text, ("s", 1)) == 5
    assert find_line(text, ("nothing",)) == 0


EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "docs" / "examples" / "scenarios").glob("*.toml"))


def test_there_is_an_example_per_family():
    families = {load(p).family for p in EXAMPLES}
    assert {"acks", "broker_failover", "controller_failover", "isr", "network", "preferred_election", "quorum",
            "reassignment", "restart", "topics", "unclean", "zookeeper", "transactions", "groups",
            "nightly"} <= families
    assert {"kafkatest", "jepsen"} <= families          # the two cases from other tools' tests


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_loads(path):
    s = load(path)
    assert isinstance(s, Scenario) and (s.script is not None or s.fault_mix is not None)
    assert s.name.split(".", 1)[1].startswith("file_"), s.name   # never the name of a Python scenario
    text = path.read_text()
    assert text.startswith("#"), "each example says what it is in a leading comment"


def test_run_refuses_a_bad_file_with_one_line(tmp_path):
    p = write(tmp_path, BASE.replace('fault = "kill"', 'fault = "explode"'))
    r = subprocess.run([sys.executable, "-m", "harness.cli", "run", str(p), "--runs-dir", str(tmp_path / "runs")],
                       cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip() == (f"kafka-chaos: error: {p}:20: steps[0].fault: 'explode' is not allowed; allowed: "
                                "bandwidth, bridge, client_crash, crash, delete_controller_znode, isolate, kill, link_cut, loss, "
                                "netem, one_way, partition, pause, restart, start, stop, zk_expire_session, zk_kill, "
                                "zk_pause")


def test_a_workload_kind_without_expectations_gets_its_own_data_checks(tmp_path):
    from harness.scenario.file import load
    base = ('name = "x.kind"\n[cluster]\nbrokers = 3\n[[topics]]\nname = "t"\npartitions = 2\n'
            'replication_factor = 3\n[workload]\nkind = "{kind}"\n')
    want = {"txn": ("conformance", "transactions", "expectations"),
            "group": ("conformance", "durability", "groups", "expectations")}
    for kind, checks in want.items():
        f = tmp_path / f"{kind}.toml"
        f.write_text(base.format(kind=kind))
        assert load(f).checks == checks
    f = tmp_path / "plain.toml"
    f.write_text(base.replace('[workload]\nkind = "{kind}"\n', ""))
    assert load(f).checks == ("conformance", "durability", "expectations")
