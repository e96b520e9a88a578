"""Nodes files (``--nodes FILE``, harness/remote/nodes_file.py, docs/remote.md): a good file loads into the
cluster it describes; each bad file (or a host that cannot be reached) is one line naming the file, the
node and the key, exit 2, through the real CLI, and nothing is applied (no journal is written)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness import distributions
from harness.errors import HarnessError
from harness.remote import nodes_file

ROOT = Path(__file__).resolve().parents[1]

GOOD = """
name = "t1"
kafka_version = "4.4.0"
interface = "eth0"

[ports]
internal = 9093
controller = 9094
client = 9092

[client]
bootstrap_servers = "127.0.0.1:39092,127.0.0.1:39093,127.0.0.1:39094"
security_protocol = "PLAINTEXT"

[ssh]
user = "chaos"
key_file = "id_ed25519"
known_hosts = "known_hosts"
sudo = true
connect_timeout_s = 3

[service]
start = "/etc/init.d/kafka start"
stop = "/etc/init.d/kafka stop"
pidfile = "/run/kafka/kafka.pid"
log_file = "/var/log/kafka/server.log"
metadata_log_dir = "/var/lib/kafka/data"
{nodes}
"""

NODE = """
[[node]]
id = {id}
roles = {roles}
host = "{host}"
address = "10.0.0.{id}"
endpoint = "127.0.0.1:{port}"
ssh = {{ port = {ssh_port} }}
"""


def three(host="127.0.0.1", roles='["broker", "controller"]', ssh_base=22001) -> str:
    return "".join(NODE.format(id=i, roles=roles, host=host, port=39091 + i, ssh_port=ssh_base + i)
                   for i in (1, 2, 3))


@pytest.fixture
def hostdir(tmp_path):
    """A directory with a real ed25519 key and a known_hosts line."""
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "id_ed25519")], check=True)
    pub = (tmp_path / "id_ed25519.pub").read_text().split()
    (tmp_path / "known_hosts").write_text(f"[127.0.0.1]:22002 {pub[0]} {pub[1]}\n")
    return tmp_path


def write(d: Path, text: str) -> Path:
    p = d / "nodes.toml"
    p.write_text(text)
    return p


def test_a_good_file_is_the_cluster_it_describes(hostdir):
    f = nodes_file.load(write(hostdir, GOOD.format(nodes=three())))
    assert f.name == "t1" and f.kafka_version == "4.4.0" and f.controller_model == "kraft"
    assert [n.id for n in f.nodes] == [1, 2, 3] and f.roles == ("broker", "controller")
    assert f.nodes[1].ssh.port == 22003 and f.nodes[0].ssh.key_file == hostdir / "id_ed25519"
    assert f.nodes[0].endpoint == ("127.0.0.1", 39092) and f.nodes[0].address == "10.0.0.1"
    assert f.client == {"security_protocol": "PLAINTEXT"}       # bootstrap_servers is the cluster's, not security
    dist = distributions.resolve(nodes=str(f.path))
    assert dist.name == f"remote:{f.path}" and dist.controller_model == "kraft" and dist.layout == "combined"
    assert dist.broker_ids(5) == [1, 2, 3] and dist.cli_args() == ["--nodes", str(f.path)]
    assert dist.common_config({}, 3, {}) == {"metadata.log.dir": "/var/lib/kafka/data"}


def test_zookeeper_roles_make_a_zookeeper_mode_cluster(hostdir):
    zk = ('\n[[node]]\nid = 1\nroles = ["zookeeper"]\nhost = "127.0.0.1"\nendpoint = "127.0.0.1:2181"\n'
          'ssh = { port = 22010 }\n')
    f = nodes_file.load(write(hostdir, GOOD.format(nodes=three(roles='["broker"]') + zk)))
    dist = distributions.resolve(nodes=str(f.path))
    assert dist.controller_model == "zk" and dist.observation == "zookeeper" and "zookeeper" in dist.roles
    assert dist.zookeeper_count(3) == 1


def _bad_files(d: Path) -> dict[str, tuple[str, str]]:
    """name -> (file text, what the one error line must name)."""
    good = GOOD.format(nodes=three())
    return {
        "unknown top key": (good.replace('interface = "eth0"', 'interfaces = "eth0"'), "interfaces: unknown key"),
        "unknown node key": (good.replace('address = "10.0.0.2"', 'adress = "10.0.0.2"'), "node 2: adress: unknown key"),
        "missing key file": (good.replace('key_file = "id_ed25519"', 'key_file = "nope"'), "ssh.key_file: no such file"),
        "not a key": (good.replace('key_file = "id_ed25519"', 'key_file = "known_hosts"'), "not a private key"),
        "bad known_hosts": (good.replace('known_hosts = "known_hosts"', 'known_hosts = "id_ed25519.pub.bad"'),
                            "ssh.known_hosts"),
        "unknown role": (good.replace('roles = ["broker", "controller"]', 'roles = ["broker", "coordinator"]', 1),
                         "node 1: roles: unknown role 'coordinator'"),
        "duplicate id": (good.replace("id = 3", "id = 2"), "duplicate kafka node id 2"),
        "bad port": (good.replace("endpoint = \"127.0.0.1:39094\"", "endpoint = \"127.0.0.1:70000\""),
                     "node 3: endpoint: must be a port"),
        "same ssh address": (good.replace("port = 22003", "port = 22002"), "is also node 1's SSH address"),
        "kraft and zookeeper": (good + '\n[[node]]\nid = 9\nroles = ["zookeeper"]\nhost = "h"\nendpoint = "h:2181"\n',
                                "both controller and zookeeper"),
        "no broker": (GOOD.format(nodes=three(roles='["controller"]')), "no node has the role broker"),
        "no service start": (good.replace('start = "/etc/init.d/kafka start"\n', ""), "service.start: missing"),
        "relative pidfile": (good.replace('pidfile = "/run/kafka/kafka.pid"', 'pidfile = "kafka.pid"'),
                             "service.pidfile: must be an absolute path"),
        "bad name": (good.replace('name = "t1"', 'name = "T 1"'), "name: missing or not"),
        "not toml": ("name = [", "not valid TOML"),
        # endpoints on 127.0.0.1 for nodes at 10.0.0.x are forwarded ports: their port is not the one the
        # brokers bind, which a `client` link cut must match
        "forwarded without client port": (good.replace("client = 9092\n", ""),
                                          "node 1: endpoint: 127.0.0.1:39092 is a forwarded port"),
        "client port is the internal one": (good.replace("client = 9092", "client = 9093"),
                                            "ports: client: 9093 is also the internal listener's port"),
    }


def test_every_bad_file_is_one_line_naming_the_key(hostdir):
    (hostdir / "id_ed25519.pub.bad").write_text("this is not a known_hosts line\n")
    for what, (text, expect) in _bad_files(hostdir).items():
        path = write(hostdir, text)
        with pytest.raises(HarnessError) as ei:
            nodes_file.load(path)
        msg = str(ei.value)
        assert "\n" not in msg and str(path) in msg and expect in msg, (what, msg)


def _cli(args: list[str], state: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, KAFKA_CHAOS_STATE=str(state), PYTHONPATH=str(ROOT), KAFKA_CHAOS_QUIET="1")
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True,
                          env=env, cwd=state, timeout=120)


def _one_line_exit_2(r: subprocess.CompletedProcess, expect: str, code: int = 2) -> None:
    # a suite's scenarios that do not apply are noted ("skipped X: why") before the error
    lines = [ln for ln in r.stderr.splitlines() if ln.strip() and not ln.startswith("skipped ")]
    assert r.returncode == code, (r.returncode, r.stderr)
    assert len(lines) == 1 and expect in lines[0], r.stderr


@pytest.mark.parametrize("what", ["missing key file", "unknown role", "duplicate id", "bad known_hosts"])
def test_bad_files_through_the_cli_apply_nothing(hostdir, tmp_path_factory, what):
    state = tmp_path_factory.mktemp("state")
    (hostdir / "id_ed25519.pub.bad").write_text("this is not a known_hosts line\n")
    text, expect = _bad_files(hostdir)[what]
    path = write(hostdir, text)
    r = _cli(["run", "smoke", "--nodes", str(path), "--runs-dir", str(state / "runs")], state)
    _one_line_exit_2(r, expect)
    assert not (state / "remote").exists() and not any((state / "runs").glob("*")) if (state / "runs").exists() else True


def test_no_such_host_and_a_refused_port_are_one_line_naming_the_host(hostdir, tmp_path_factory):
    state = tmp_path_factory.mktemp("state")
    for host, expect in (("no-such-host.invalid", "ssh chaos@no-such-host.invalid:22002: unreachable"),
                         ("127.0.0.1", "ssh chaos@127.0.0.1:1: unreachable")):
        path = write(hostdir, GOOD.format(nodes=three(host=host, ssh_base=22001 if host != "127.0.0.1" else 0)))
        r = _cli(["run", "smoke", "--nodes", str(path), "--runs-dir", str(state / "runs")], state)
        _one_line_exit_2(r, expect.split(": unreachable")[0], code=5)     # a host not reached: environment
        assert "unreachable" in r.stderr or "SSH failed" in r.stderr, r.stderr
        assert not (state / "remote").exists()


def test_a_role_the_cluster_does_not_have_is_one_line(hostdir, tmp_path_factory):
    """A ZooKeeper-mode scenario on a KRaft nodes file: no scenario applies, before any host is reached."""
    state = tmp_path_factory.mktemp("state")
    path = write(hostdir, GOOD.format(nodes=three(host="no-such-host.invalid")))
    r = _cli(["run", "zookeeper.kill_leader", "--nodes", str(path), "--runs-dir", str(state / "runs")], state)
    _one_line_exit_2(r, "no scenario of 'zookeeper.kill_leader' applies to remote:t1")


def test_nodes_conflicts_with_other_adapters_and_images(hostdir, tmp_path_factory):
    state = tmp_path_factory.mktemp("state")
    path = write(hostdir, GOOD.format(nodes=three()))
    r = _cli(["run", "smoke", "--nodes", str(path), "--distribution", "apache-kraft"], state)
    _one_line_exit_2(r, "--nodes cannot be combined with --distribution")
    r = _cli(["run", "smoke", "--nodes", str(path), "--kafka-version", "4.4.0"], state)
    _one_line_exit_2(r, "do not apply to --nodes")
    r = _cli(["run", "smoke", "--nodes", str(path), "--parallel", "2"], state)
    _one_line_exit_2(r, "--parallel does not apply to --nodes")
    r = _cli(["run", "smoke", "--nodes", str(path), "--config", "min.insync.replicas=2"], state)
    _one_line_exit_2(r, "--config does not apply to --nodes")
    r = _cli(["run", "acks.a0_minisr1", "--nodes", str(path)], state)     # the scenario sets broker configuration
    _one_line_exit_2(r, "no scenario of 'acks.a0_minisr1' applies")
    assert "sets broker configuration (min.insync.replicas=1)" in r.stderr
    r = _cli(["certify", "--nodes", str(path), "--profile", "compatible", "--out", str(state / "c")], state)
    _one_line_exit_2(r, "--i-own-this-cluster")


def test_describe_says_the_commands_without_connecting(hostdir):
    from harness.cluster.access import ContainerAccess
    from harness.cluster.remote_cluster import accesses
    from harness.nemesis import netrules
    f = nodes_file.load(write(hostdir, GOOD.format(nodes=three(host="no-such-host.invalid"))))
    acc = accesses(f, run_tag="ab12cd34")["t1-n2"]
    assert acc.describe("kill") == ["ssh chaos@no-such-host.invalid:22003: sudo -n kill -KILL $(cat /run/kafka/kafka.pid)"]
    assert acc.describe("pause")[0].endswith("kill -STOP $(cat /run/kafka/kafka.pid)")
    assert acc.describe("stop") == ["ssh chaos@no-such-host.invalid:22003: sudo -n /etc/init.d/kafka stop"]
    script = netrules.apply_script([(netrules.CHAIN_IN, ("-s", "10.0.0.1/32", "-j", "DROP"))])
    lines = acc.describe("iptables", script=script)
    assert any("-N KC_ab12cd34_IN" in ln for ln in lines) and not any("KAFKA_CHAOS" in ln for ln in lines)
    assert acc._client is None                                   # nothing was connected to
    assert ContainerAccess("kc-x-b1").describe("pause") == ["docker pause kc-x-b1"]


def test_an_endpoint_is_forwarded_only_when_loopback_stands_for_another_address(hostdir):
    """Which endpoints need ``[ports] client`` (harness/remote/nodes_file.forwarded)."""
    from harness.protocol.endpoint import Endpoint
    assert nodes_file.forwarded(Endpoint("127.0.0.1", 32768), "10.213.0.2")       # a published port
    assert not nodes_file.forwarded(Endpoint("10.0.0.5", 9092), "10.0.0.5")        # the broker itself
    assert not nodes_file.forwarded(Endpoint("kafka1.example", 9092), "10.0.0.5")  # a name: checked on the host
    assert not nodes_file.forwarded(Endpoint("127.0.0.1", 9092), "127.0.0.1")      # all on this machine
    # without [ports] client, a direct endpoint's port is the client port; with it, that port
    text = GOOD.format(nodes=three()).replace("client = 9092\n", "").replace('endpoint = "127.0.0.1:', 'endpoint = "10.0.0.9:')
    f = nodes_file.load(write(hostdir, text))
    assert [n.client_port for n in f.nodes] == [39092, 39093, 39094]
    f = nodes_file.load(write(hostdir, GOOD.format(nodes=three())))
    assert [n.client_port for n in f.nodes] == [9092, 9092, 9092] and f.nodes[0].endpoint == Endpoint("127.0.0.1", 39092)
