"""``run --plan`` / ``certify --plan`` (harness/commands/plan.py): the plan says what would run, where, with
which faults and commands, and touches nothing.

"Touches nothing" is shown from the outside: each plan runs in a child process whose Docker endpoint does
not exist (a Docker call would fail the command: exit 2), whose HOME, $KAFKA_CHAOS_CACHE (the Kafka version
list, the jars), $KAFKA_CHAOS_STATE and working directory (./runs, ./certificates) are fresh temporary
directories that must still be empty afterwards; with the real Docker engine, its event stream over the
plan's lifetime must name nothing of the plan's cluster prefix.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from types import SimpleNamespace
from pathlib import Path

import pytest

from harness.errors import HarnessError

REPO = Path(__file__).resolve().parent.parent
NO_DOCKER = "unix:///nonexistent/kafka-chaos-plan-test.sock"


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.fixture
def sandbox(tmp_path):
    """Empty HOME, cache, state and working directories for one child process."""
    root = tmp_path / "sandbox"
    dirs = {k: root / k for k in ("home", "cache", "state", "cwd")}
    for d in dirs.values():
        d.mkdir(parents=True)
    return root, dirs


def plan(sandbox, *args: str, docker_host: str = NO_DOCKER, prefix: str | None = None):
    root, d = sandbox
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KAFKA_CHAOS_", "DOCKER_"))}
    env.update(DOCKER_HOST=docker_host, HOME=str(d["home"]), KAFKA_CHAOS_CACHE=str(d["cache"]),
               KAFKA_CHAOS_STATE=str(d["state"]), PYTHONPATH=str(REPO), PYTHONDONTWRITEBYTECODE="1",
               XDG_CACHE_HOME=str(d["cache"]), XDG_STATE_HOME=str(d["state"]))
    if prefix:
        env["KAFKA_CHAOS_CLUSTER_PREFIX"] = prefix
    res = subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True,
                         timeout=120, env=env, cwd=d["cwd"])
    assert _files(root) == ["cache", "cwd", "home", "state"], f"the plan wrote files: {_files(root)}"
    return res


def ok(res) -> str:
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr, res.stderr
    return res.stdout


def one_error_line(res) -> str:
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    assert "Traceback" not in res.stderr, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "error:" in lines[0], res.stderr
    return lines[0]


# -- what the plan says -------------------------------------------------------------------------------
def test_run_smoke_plan_defaults_to_kraft_on_the_newest_4x(sandbox):
    """No distribution, no version, nothing cached, no Maven Central asked: KRaft on the offline default 4.x."""
    from harness import images
    out = ok(plan(sandbox, "run", "smoke", "--plan"))
    assert f"kafka-chaos/kafka:{images.FALLBACK_DEFAULT_VERSION}" in out and images.FALLBACK_DEFAULT_VERSION.startswith("4.")
    assert "distribution  apache-kraft" in out and "profile kraft-4." in out and "runs a controller" in out
    assert "zk1" not in out
    head, _, rest = out.partition("not applicable:")
    assert "controller_failover.delete_controller_znode: it acts on ZooKeeper itself" in rest


def test_run_smoke_plan(sandbox):
    out = ok(plan(sandbox, "run", "smoke", "--plan", "--distribution", "apache-zk"))
    for name in ("broker_failover.kill_leader", "controller_failover.kill_controller",
                 "controller_failover.delete_controller_znode", "isr.pause_follower"):
        assert name in out
    assert "kafka-chaos/kafka:3.9." in out and "apache-zk" in out and "PLAINTEXT" in out
    assert "container kc-r<run>-zk1" in out and "container kc-r<run>-b3" in out
    assert "127.0.0.1:<free port>" in out
    assert "docker kill --signal SIGKILL kc-r<run>-b1" in out         # kill_leader / kill_controller
    assert "docker start kc-r<run>-b1" in out                         # their heal
    assert "docker pause kc-r<run>-b1" in out and "docker unpause kc-r<run>-b1" in out
    assert "deletes /controller (no node command)" in out
    assert "old = at_fault['leader']" in out                          # how the script picks its target
    assert "expected duration: 4 run(s)" in out


def test_kraft_conformance_plan(sandbox):
    out = ok(plan(sandbox, "run", "conformance", "--plan", "--distribution", "apache-kraft",
                  "--kafka-version", "4.4.0"))
    assert "kafka-chaos/kafka:4.4.0" in out and "profile kraft-4.4" in out
    assert "runs a controller" in out
    assert "quorum.kill_leader" in out and "kill quorum-leader" in out
    head, _, rest = out.partition("not applicable:")
    assert "zookeeper.kill_leader: it acts on ZooKeeper itself" in rest
    assert "zookeeper.kill_leader" not in head        # listed only as not applicable
    # quorum.cut_from_brokers: the active controller's CONTROLLER listener (9094) cut from broker 4 only
    cut = out[out.index("quorum.cut_from_brokers"):]
    cut = cut[:cut.index("\n[")]
    assert "iptables -w 5 -A KAFKA_CHAOS_IN -s BROKER4_IP/32 -p tcp --dport 9094" in cut
    assert "BROKER2_IP" not in cut and "BROKER3_IP" not in cut
    assert "iptables -w 5 -D KAFKA_CHAOS_IN -s BROKER4_IP/32 -p tcp --dport 9094" in cut   # its heal


def test_certify_plan(sandbox):
    out = ok(plan(sandbox, "certify", "--plan", "--kafka-version", "3.9.2"))
    assert "plan of `kafka-chaos certify`" in out
    assert "certify needs --profile; the default is shown" in out
    assert "capabilities:" in out and "broker_failover      broker_failover.kill_leader" in out
    assert "quorum.kill_leader: needs controller nodes" in out
    assert "transactions.zombie_fenced: not a conformance scenario" in out


def test_certify_plan_says_a_required_capability_cannot_apply(sandbox):
    out = ok(plan(sandbox, "certify", "--plan", "--kafka-version", "3.9.2", "--profile", "apache-zk-3.9",
                  "--require", "quorum"))
    assert "would stop    INCOMPATIBLE before any run (exit 3): required capability quorum" in out


def test_plan_json_is_the_same_plan(sandbox):
    data = json.loads(ok(plan(sandbox, "run", "smoke", "--plan", "--json", "--parallel", "2", "--seed", "5",
                              "--distribution", "apache-zk")))
    assert data["plan"] == "run" and data["target"] == "smoke" and data["seed"] == 5
    assert data["broker"]["distribution"] == "apache-zk" and data["security"] == {"protocol": "PLAINTEXT"}
    s = {e["name"]: e for e in data["scenarios"]}
    assert list(s) == ["broker_failover.kill_leader", "controller_failover.kill_controller",
                       "controller_failover.delete_controller_znode", "isr.pause_follower"]
    kill = s["broker_failover.kill_leader"]["faults"][0]
    assert (kill["fault"], kill["target"]) == ("kill", "broker:{old}")
    assert kill["commands"]["apply"][0]["commands"] == ["docker kill --signal SIGKILL kc-r<run>-b1"]
    assert kill["commands"]["example"] is True
    nodes = s["isr.pause_follower"]["cluster"]["nodes"]
    assert [(n["role"], n["name"]) for n in nodes] == [("zookeeper", "kc-r<run>-zk1"), ("broker", "kc-r<run>-b1"),
                                                        ("broker", "kc-r<run>-b2"), ("broker", "kc-r<run>-b3")]
    d = data["duration"]
    assert d["runs"] == 4 and d["parallel"] == 2
    total = sum(e["estimate_s"] for e in data["scenarios"])
    assert d["serial_s"] == round(total) and max(e["estimate_s"] for e in data["scenarios"]) <= d["parallel_s"] < total


def test_scheduled_faults_are_the_runs_schedule(sandbox):
    """A seeded fault mix: the plan lists exactly the schedule the run generates from that seed."""
    from suites.catalog import scenarios_for
    from harness.distributions import resolve
    from harness.scenario.schedule import generate_schedule
    data = json.loads(ok(plan(sandbox, "run", "nightly.short", "--plan", "--json", "--seed", "7",
                              "--distribution", "apache-zk")))
    s = scenarios_for("nightly.short")[0]
    want = generate_schedule(7, s.fault_mix, resolve("apache-zk").roles)
    got = data["scenarios"][0]["faults"]
    assert [(f["fault"], f["target"]) for f in got] == [(i.fault, i.target) for i in want.items]
    assert all(f"at {i.at:g} s" in f["when"] for f, i in zip(got, want.items))


def test_scenario_file_plan(sandbox):
    out = ok(plan(sandbox, "run", str(REPO / "docs/examples/scenarios/network.toml"), "--plan"))
    assert "network.file_isolate_leader" in out
    assert "fault 1: isolate leader(chaos,0) — the leader of partition 0 of topic chaos" in out
    assert "at 5 s, healed 25 s later  [steps[0]]" in out
    assert "-m comment --comment kafka-chaos:1:isolate -j DROP" in out


def test_distribution_file_plan_names_its_preflight(sandbox):
    out = ok(plan(sandbox, "run", "conformance", "--plan", "--distribution-file", str(REPO / "docs/examples/tansu.toml")))
    assert "preflight     a cluster of the distribution file's broker checks its contract first" in out
    assert "storage.kill_store" in out and "docker kill --signal SIGKILL kc-r<run>-store1" in out


# -- bad input: one line, exit 2, nothing touched -----------------------------------------------------
def test_unknown_suite(sandbox):
    assert "no suite or scenario named 'smokey'" in one_error_line(plan(sandbox, "run", "smokey", "--plan"))


def test_bad_scenario_file(sandbox, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x.y"\n[[steps]]\nat = 1\nfault = "explode"\ntarget = "broker:1"\n')
    line = one_error_line(plan(sandbox, "run", str(bad), "--plan"))
    assert "bad.toml:4: steps[0].fault" in line


def test_certify_plan_unknown_capability(sandbox):
    assert "unknown capability 'quorom'" in one_error_line(plan(sandbox, "certify", "--plan", "--capability", "quorom"))


def test_json_needs_plan(sandbox):
    # `run --json` without --plan is the verdicts as JSON (harness/commands/run_summary.py); certify's needs --plan
    assert "--json is for --plan" in one_error_line(plan(sandbox, "certify", "--profile", "apache-zk-3.9", "--json"))


def test_plan_cannot_replay(sandbox):
    assert "--plan cannot be combined with --replay" in one_error_line(
        plan(sandbox, "run", "--replay", "runs/x", "--plan"))


def test_no_applicable_scenario_plan_then_error(sandbox):
    res = plan(sandbox, "run", "smoke", "--plan", "--distribution-file", str(REPO / "docs/examples/kfake.toml"))
    assert "no scenario of 'smoke' applies" in one_error_line(res)
    assert "not applicable:" in res.stdout and "the distribution runs 1 (layout single-node)" in res.stdout


# -- certify on hosts the harness did not start: the owner says so ------------------------------------
def test_certify_requires_the_owner_on_foreign_hosts():
    from harness.certify.command import require_owner
    from harness.distributions.base import Distribution

    class Hosts(Distribution):
        name = "nodes:staging"
        foreign_hosts = True

    with pytest.raises(HarnessError, match="--i-own-this-cluster"):
        require_owner(Hosts(), confirmed=False)
    require_owner(Hosts(), confirmed=True)
    confirmed = Hosts()
    confirmed.owner_confirmed = True
    require_owner(confirmed, confirmed=False)
    require_owner(Distribution(), confirmed=False)         # a cluster the harness starts: nothing to confirm


# -- a real nodes file (--nodes): its hosts and their SSH commands, nothing connected ------------------------
NODES_TOML = """
name = "staging"
kafka_version = "4.4.0"
[ports]
client = 9092
[client]
bootstrap_servers = "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3"
[ssh]
user = "chaos"
key_file = "id_ed25519"
known_hosts = "known_hosts"
sudo = true
[service]
start = "/etc/init.d/kafka start"
stop = "/etc/init.d/kafka stop"
status = "/etc/init.d/kafka status"
pidfile = "/run/kafka/kafka.pid"
log_file = "/var/log/kafka/server.log"
data_dir = "/var/lib/kafka/data"
metadata_log_dir = "/var/lib/kafka/data"
""" + "".join(f"""
[[node]]
id = {i}
roles = ["broker", "controller"]
host = "127.0.0.1"
address = "10.9.0.{i}"
endpoint = "127.0.0.1:{i}"
ssh = {{ port = {i} }}
""" for i in (1, 2, 3))


@pytest.fixture
def nodes_file(tmp_path):
    """A nodes file whose hosts are closed loopback ports: a plan that tried to connect would fail."""
    d = tmp_path / "nodes"
    d.mkdir()
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    (d / "id_ed25519").write_bytes(Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()))
    (d / "known_hosts").write_text("[127.0.0.1]:1 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SjR1x0+w\n")
    f = d / "nodes.toml"
    f.write_text(NODES_TOML)
    return f


def test_nodes_file_plan_lists_its_hosts_and_ssh_commands(sandbox, nodes_file):
    out = ok(plan(sandbox, "run", "smoke", "--plan", "--nodes", str(nodes_file)))
    assert "the hosts of the nodes file over SSH" in out
    for i in (1, 2, 3):
        assert f"staging-n{i}" in out and f"ssh chaos@127.0.0.1:{i}" in out
    assert "sudo -n kill -KILL $(cat /run/kafka/kafka.pid)" in out          # kill_leader's fault, on a host
    assert "sudo -n kill -STOP $(cat /run/kafka/kafka.pid)" in out          # pause_follower's
    assert "docker" not in out
    assert "delete_controller_znode" in out.split("not applicable:")[1]     # no ZooKeeper among the nodes


def test_certify_on_nodes_needs_the_owner_and_plans_without_it(sandbox, nodes_file):
    assert "--i-own-this-cluster" in one_error_line(plan(sandbox, "certify", "--nodes", str(nodes_file),
                                                               "--profile", "kraft-4.4"))
    out = ok(plan(sandbox, "certify", "--plan", "--nodes", str(nodes_file)))
    assert "--i-own-this-cluster" in out


# -- under strace: not one socket, connection, process, or file opened for writing -----------------------
@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
@pytest.mark.parametrize("args", [("run", "smoke", "--plan"),
                                  ("run", "conformance", "--plan", "--distribution", "apache-kraft", "--kafka-version",
                                   "4.4.0", "--json"),
                                  ("certify", "--plan")])
def test_plan_makes_no_syscall_that_touches_anything(sandbox, args):
    _no_touching_syscalls(sandbox, args)


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_nodes_plan_makes_no_syscall_that_touches_anything(sandbox, nodes_file):
    _no_touching_syscalls(sandbox, ("run", "smoke", "--plan", "--nodes", str(nodes_file)))


def _no_touching_syscalls(sandbox, args):
    root, d = sandbox
    trace = root.parent / "strace.txt"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KAFKA_CHAOS_", "DOCKER_"))}
    env.update(HOME=str(d["home"]), KAFKA_CHAOS_CACHE=str(d["cache"]), PYTHONPATH=str(REPO), PYTHONDONTWRITEBYTECODE="1")
    res = subprocess.run(["strace", "-f", "-qq", "-o", str(trace), "-e",
                          "trace=socket,connect,execve,openat,mkdir,mkdirat,rename,renameat,unlink,unlinkat",
                          sys.executable, "-m", "harness.cli", *args],
                         capture_output=True, text=True, timeout=300, env=env, cwd=d["cwd"])
    assert res.returncode == 0, res.stderr
    calls = [ln for ln in trace.read_text().splitlines() if "ENOENT" not in ln]
    assert not [c for c in calls if "socket(" in c or "connect(" in c], "the plan opened a socket"
    assert len([c for c in calls if "execve(" in c]) == 1, "the plan started a process"
    assert not [c for c in calls if "openat(" in c and ("O_WRONLY" in c or "O_RDWR" in c or "O_CREAT" in c)], \
        "the plan opened a file for writing"
    assert not [c for c in calls if re.search(r"\b(mkdir|mkdirat|rename|renameat|unlink|unlinkat)\(", c)], \
        "the plan changed the file system"


# -- with the real engine: no container or network of the plan appears ----------------------------------
def _docker_ok() -> bool:
    return shutil.which("docker") is not None and subprocess.run(
        ["docker", "info"], capture_output=True, timeout=30).returncode == 0


@pytest.mark.docker
def test_plan_creates_nothing_in_docker(sandbox):
    if not _docker_ok():
        pytest.skip("no Docker engine")
    prefix = "h4plan" + uuid.uuid4().hex[:6]
    since = time.time() - 1
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    ok(plan(sandbox, "run", "smoke", "--plan", docker_host=host, prefix=prefix))
    ok(plan(sandbox, "certify", "--plan", "--kafka-version", "3.9.2", docker_host=host, prefix=prefix))
    events = subprocess.run(["docker", "events", "--since", f"{since:.0f}", "--until", f"{time.time() + 1:.0f}",
                             "--format", "{{json .}}"], capture_output=True, text=True, timeout=60)
    assert events.returncode == 0, events.stderr
    assert prefix not in events.stdout
    names = subprocess.run(["docker", "ps", "-a", "--format", "{{.Names}}"], capture_output=True, text=True).stdout \
        + subprocess.run(["docker", "network", "ls", "--format", "{{.Name}}"], capture_output=True, text=True).stdout
    assert prefix not in names


# -- the pieces, in process ------------------------------------------------------------------------------
def test_faults_read_from_python_scripts():
    """kind from the factory's closure, params from **params, loops and branches said, the script's own
    choice of target kept as its text with the line that makes it."""
    from suites.catalog import scenarios_for
    from harness.scenario.script_faults import stated_faults

    def faults(name):
        how, fs = stated_faults(scenarios_for(name)[0])
        assert how == "script"
        return fs
    kill, = faults("broker_failover.stop_leader")
    assert (kill.kind, kill.target, kill.resolved) == ("stop", "broker:{old}", False)
    assert "old = at_fault['leader']" in kill.note and kill.source.startswith("broker_failover.py:")
    cut, = faults("isr.partition_follower")
    assert (cut.kind, cut.params) == ("link_cut", {"links": ["replication"]})
    rolling, = faults("restart.rolling")
    assert rolling.kind == "restart" and rolling.repeated
    assert [(f.kind, f.target, f.conditional) for f in faults("network.isolate_controller")] == [
        ("isolate", "broker:{c0}", True), ("isolate", "controller", True)]
    assert [(f.kind, f.target, f.params) for f in faults("quorum.cut_from_brokers")] == [
        ("link_cut", "quorum-leader", {"links": ["controller"], "peers": "broker:4"})]
    assert stated_faults(scenarios_for("topics.create_delete")[0]) == ("none", [])


def test_a_nodes_cluster_slots_in():
    """An adapter of hosts (``--nodes``, harness/distributions/remote.py) gives ``plan_nodes()``: the plan
    lists those hosts and asks each node's own access for its commands (here a stand-in for the SSH access
    with its ``describe``), never containers."""
    from suites.catalog import scenarios_for
    from harness import images
    from harness.commands.plan import build
    from harness.distributions.apache_kraft import ApacheKraft
    from harness.request import Broker

    class Ssh:
        kind = "ssh"

        def __init__(self, host):
            self.host = host

        def where(self):
            return f"ssh harness@{self.host}:22"

        def describe(self, op, **kw):
            return [f"ssh harness@{self.host} sudo -n {op} {' '.join(f'{k}={v}' for k, v in kw.items())}".rstrip()]

    class Hosts(ApacheKraft):
        name = "nodes:staging"
        foreign_hosts = True
        nodes_file = "staging.toml"

        def plan_nodes(self):
            return [SimpleNamespace(role="broker", node_id=i, name=f"kafka-{i}", alias=f"broker{i}", host_port=9092,
                                    endpoint=f"10.0.0.{i}:9092", address=f"10.0.0.{i}", access=Ssh(f"10.0.0.{i}"))
                    for i in (1, 2, 3)]

    dist = Hosts()
    broker = Broker(images.ImageInfo("(none)", None, "4.4.0", "nodes"), dist)
    s = scenarios_for("broker_failover.kill_leader")[0]
    p = build("run", s.name, broker, "", [broker.request(s)], [])
    assert p["where"]["kind"] == "nodes" and "staging.toml" in p["where"]["text"]
    nodes = p["scenarios"][0]["cluster"]["nodes"]
    assert [(n["name"], n["where"], n["port"]) for n in nodes] == [
        (f"kafka-{i}", f"ssh harness@10.0.0.{i}:22", f"10.0.0.{i}:9092") for i in (1, 2, 3)]
    kill = p["scenarios"][0]["faults"][0]["commands"]
    assert kill["apply"] == [{"node": "broker1", "where": "ssh harness@10.0.0.1:22",
                              "commands": ["ssh harness@10.0.0.1 sudo -n kill signal=SIGKILL"]}]
    assert kill["heal"][0]["commands"] == ["ssh harness@10.0.0.1 sudo -n start"]
    # a network fault's rules match the hosts' own addresses
    iso = build("run", "x", broker, "", [broker.request(scenarios_for("network.isolate_controller")[0])], [])
    script = iso["scenarios"][0]["faults"][1]["commands"]["apply"][0]["commands"][0]
    assert "-s 10.0.0.2/32" in script and "docker" not in script
