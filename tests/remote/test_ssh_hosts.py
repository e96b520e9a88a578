"""The SSH test hosts themselves (tests/remote/hosts.py, harness/host_image.py): real containers, real
sshd, real Kafka. What the ``--nodes`` tests rely on: the key logs in and nothing else does, the host
keys in known_hosts are the hosts' own, the cluster answers on the published ports, Kafka runs as a
service that a kill -9 does not take the host down with and that its script starts again."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import paramiko
import pytest

from harness import docker_util
from harness.cluster.cleanup import list_clusters
from harness.protocol.client import ProtocolClient, ProtocolError
from tests.remote import hosts

pytestmark = [pytest.mark.docker, pytest.mark.ssh]
ROOT = Path(__file__).resolve().parents[2]
WAIT_S = 120      # bounds of the waits below (a JVM restart on a loaded 2-core host)


def connect(hs: hosts.HostSet, h: hosts.Host, key: Path | None = None, known_hosts: Path | None = None) -> paramiko.SSHClient:
    """A paramiko connection as the harness user, host key checked against ``known_hosts`` (unknown: refused)."""
    c = paramiko.SSHClient()
    c.load_host_keys(str(known_hosts or hs.known_hosts))
    c.set_missing_host_key_policy(paramiko.RejectPolicy())
    c.connect("127.0.0.1", port=h.ssh_port, username=hosts.USER,
              pkey=paramiko.Ed25519Key.from_private_key_file(str(key or hs.key_file)),
              look_for_keys=False, allow_agent=False, timeout=5, banner_timeout=10, auth_timeout=10)
    return c


def run(c: paramiko.SSHClient, cmd: str) -> tuple[int, str]:
    _, out, err = c.exec_command(cmd, timeout=60)
    text = out.read().decode() + err.read().decode()
    return out.channel.recv_exit_status(), text.strip()


def brokers_seen(port: int) -> list[tuple[int, str, int]]:
    with ProtocolClient("127.0.0.1", port, timeout=5) as pc:
        return sorted((b.node_id, b.host, b.port) for b in pc.metadata([]).brokers)


def wait_until(what: str, check) -> None:
    deadline = time.monotonic() + WAIT_S
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"not within {WAIT_S} s: {what}")
        time.sleep(0.5)


def metadata_ok(port: int, want: int) -> bool:
    try:
        return len(brokers_seen(port)) == want
    except ProtocolError:
        return False


def test_every_node_answers_metadata_on_its_published_port(ssh_hosts):
    endpoints = sorted((h.node_id, "127.0.0.1", h.client_port) for h in ssh_hosts.hosts)
    for h in ssh_hosts.hosts:
        assert brokers_seen(h.client_port) == endpoints, f"node {h.node_id} on 127.0.0.1:{h.client_port}"


def test_ports_are_published_on_loopback_only_and_containers_are_not_privileged(ssh_hosts):
    client = docker_util.client()
    for h in ssh_hosts.hosts:
        attrs = client.containers.get(h.container).attrs
        bindings = [b for binds in attrs["HostConfig"]["PortBindings"].values() for b in binds]
        assert bindings and {b["HostIp"] for b in bindings} == {"127.0.0.1"}, h.container
        assert attrs["HostConfig"]["Privileged"] is False
        assert attrs["HostConfig"]["CapAdd"] == ["NET_ADMIN"]
        assert attrs["HostConfig"]["Init"] is True
    assert ssh_hosts.name in list_clusters(), "`kafka-chaos cleanup` would not find the hosts"


def test_nodes_file_names_every_host(ssh_hosts):
    doc = tomllib.loads(ssh_hosts.nodes_file.read_text())
    assert doc["name"] == ssh_hosts.name and doc["kafka_version"] == ssh_hosts.kafka_version
    assert doc["client"]["bootstrap_servers"] == ssh_hosts.bootstrap_servers
    # the port the client listener binds inside a host (its endpoint is a published port): a `client` cut
    # matches it; without it network.client_only cut nothing and FAILed
    assert doc["ports"]["client"] == hosts.EXTERNAL_PORT
    assert (ssh_hosts.nodes_file.parent / doc["ssh"]["key_file"]).read_bytes() == ssh_hosts.key_file.read_bytes()
    got = sorted((n["id"], tuple(n["roles"]), n["endpoint"], n["ssh"]["port"], n["address"]) for n in doc["node"])
    want = sorted((h.node_id, tuple(h.roles), f"127.0.0.1:{h.client_port}", h.ssh_port, h.address)
                  for h in ssh_hosts.hosts)
    assert got == want
    assert ssh_hosts.key_file.stat().st_mode & 0o077 == 0, "the private key must be readable by its owner only"


def test_nodes_file_loads_with_the_adapters_parser(ssh_hosts):
    """The --nodes adapter's own check of the file (skipped where the adapter is not part of the checkout)."""
    nodes_file = pytest.importorskip("harness.remote.nodes_file")
    nf = nodes_file.load(ssh_hosts.nodes_file)
    assert nf.name == ssh_hosts.name and nf.controller_model == "kraft"
    assert sorted((n.id, n.endpoint, n.ssh.port, n.address) for n in nf.nodes) == \
        sorted((h.node_id, ("127.0.0.1", h.client_port), h.ssh_port, h.address) for h in ssh_hosts.hosts)


def test_key_login_and_sudo(ssh_hosts):
    for h in ssh_hosts.hosts:
        with connect(ssh_hosts, h) as c:
            assert run(c, "id -un") == (0, hosts.USER)
            assert run(c, "sudo -n id -u") == (0, "0")
            rc, out = run(c, "sudo -n /etc/init.d/kafka status")
            assert rc == 0 and out.startswith("kafka is running"), out
            rc, out = run(c, "sudo -n iptables -S INPUT")
            assert rc == 0 and "-P INPUT ACCEPT" in out, out
            assert run(c, "stat -c %U:%G:%a /etc/kafka/server.properties") == (0, "root:kafka:640")
            assert run(c, "cat /etc/kafka/server.properties")[0] != 0, "the config is not world-readable"
            # the harness's addresses: this host's own address on the hosts' network is the nodes file's
            assert run(c, "hostname -i")[1].split()[0] == h.address


def test_wrong_key_is_refused(ssh_hosts, tmp_path):
    private, _ = hosts.keypair("not-authorized")
    (tmp_path / "other").write_bytes(private)
    with pytest.raises(paramiko.AuthenticationException):
        connect(ssh_hosts, ssh_hosts.hosts[0], key=tmp_path / "other")


def test_password_and_keyboard_interactive_logins_are_not_offered(ssh_hosts):
    t = paramiko.Transport(("127.0.0.1", ssh_hosts.hosts[0].ssh_port))
    try:
        t.start_client(timeout=10)
        with pytest.raises(paramiko.BadAuthenticationType) as e:
            t.auth_none(hosts.USER)
        assert e.value.allowed_types == ["publickey"]
    finally:
        t.close()


def test_wrong_or_missing_host_key_is_refused(ssh_hosts, tmp_path):
    h = ssh_hosts.hosts[0]
    _, other = hosts.keypair("someone-else")
    wrong = tmp_path / "wrong_known_hosts"
    wrong.write_text(f"[127.0.0.1]:{h.ssh_port} {other.rsplit(' ', 1)[0]}\n")
    with pytest.raises(paramiko.BadHostKeyException):
        connect(ssh_hosts, h, known_hosts=wrong)
    # another host's key for this port is just as wrong: every host has its own key
    swapped = tmp_path / "swapped_known_hosts"
    swapped.write_text(f"[127.0.0.1]:{h.ssh_port} {ssh_hosts.hosts[1].host_key}\n")
    with pytest.raises(paramiko.BadHostKeyException):
        connect(ssh_hosts, h, known_hosts=swapped)
    empty = tmp_path / "empty_known_hosts"
    empty.write_text("")
    with pytest.raises(paramiko.SSHException, match="not found in known_hosts"):
        connect(ssh_hosts, h, known_hosts=empty)


def test_kill_9_leaves_the_host_up_and_the_service_script_starts_kafka_again(ssh_hosts):
    h, want = ssh_hosts.hosts[-1], len(ssh_hosts.hosts)
    starts = "grep -c '^\\[kafka-chaos-service\\] kafka starting at' /var/log/kafka/server.log"
    with connect(ssh_hosts, h) as c:
        starts_before = int(run(c, starts)[1])
        rc, pid = run(c, "cat /run/kafka/kafka.pid")
        assert rc == 0 and pid.isdigit()
        assert run(c, f"sudo -n kill -9 {pid}")[0] == 0
        wait_until("the killed JVM is gone", lambda: run(c, f"sudo -n kill -0 {pid}")[0] != 0)
        rc, out = run(c, "sudo -n /etc/init.d/kafka status")
        assert rc == 1 and "stale pidfile" in out, (rc, out)
    assert docker_util.client().containers.get(h.container).status == "running"
    with connect(ssh_hosts, h) as c:          # a new connection: sshd survived
        assert run(c, "ps -o comm= -p 1")[1] == "docker-init"
        rc, out = run(c, "sudo -n /etc/init.d/kafka start")
        assert rc == 0 and out.startswith("kafka started"), out
        rc, new_pid = run(c, "cat /run/kafka/kafka.pid")
        assert rc == 0 and new_pid != pid
        assert run(c, f"ps -o user= -p {new_pid}")[1] == "kafka"
        assert int(run(c, starts)[1]) == starts_before + 1, "every start marks the service log"
    wait_until(f"node {h.node_id} answers Metadata with {want} brokers again", lambda: metadata_ok(h.client_port, want))


def test_stop_and_start_with_the_service_script(ssh_hosts):
    h, want = ssh_hosts.hosts[0], len(ssh_hosts.hosts)
    completed = "grep -c 'shut down completed' /var/log/kafka/server.log"
    with connect(ssh_hosts, h) as c:
        shutdowns_before = int(run(c, completed)[1])
        rc, out = run(c, "sudo -n /etc/init.d/kafka stop")
        assert rc == 0 and out == "kafka stopped", out
        rc, out = run(c, "sudo -n /etc/init.d/kafka status")
        assert rc == 3 and run(c, "test -e /run/kafka/kafka.pid")[0] == 1, out
        assert run(c, "sudo -n /etc/init.d/kafka stop") == (0, "kafka is not running")
        # a clean stop (SIGTERM): Kafka's own shutdown ran and logged to the service log
        assert int(run(c, completed)[1]) > shutdowns_before
        rc, out = run(c, "sudo -n /etc/init.d/kafka start")
        assert rc == 0, out
        assert run(c, "sudo -n /etc/init.d/kafka start")[1].startswith("kafka is already running")
    wait_until(f"node {h.node_id} answers Metadata with {want} brokers again", lambda: metadata_ok(h.client_port, want))


def admin_brokers(port: int, client: dict) -> list[tuple[int, str, int]]:
    """The brokers node ``port`` names, asked by librdkafka with the nodes file's [client] security."""
    from confluent_kafka.admin import AdminClient
    from harness.cluster.security import Security
    conf = {k: v for k, v in client.items() if k != "bootstrap_servers"}
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}", "log_level": 0,
                         **Security.from_mapping(conf, "[client]").client_config()})
    md = admin.list_topics(timeout=15)
    return sorted((b.id, b.host, b.port) for b in md.brokers.values())


def test_sasl_ssl_scram_hosts(ssh_hosts_factory):
    """--security: the client listener speaks TLS and SCRAM, with the CA and credentials of the nodes file."""
    pytest.importorskip("harness.cluster.listener_security")
    from confluent_kafka import KafkaException
    hs = ssh_hosts_factory("4.4.0", brokers=1, security="SASL_SSL:SCRAM-SHA-512")
    client = tomllib.loads(hs.nodes_file.read_text())["client"]
    assert {k: client[k] for k in ("protocol", "mechanism")} == {"protocol": "SASL_SSL", "mechanism": "SCRAM-SHA-512"}
    assert Path(client["ca_file"]).read_text().startswith("-----BEGIN CERTIFICATE-----")
    assert hs.nodes_file.stat().st_mode & 0o077 == 0, "the nodes file holds the password"
    h = hs.hosts[0]
    assert admin_brokers(h.client_port, client) == [(1, "127.0.0.1", h.client_port)]
    with pytest.raises(KafkaException):
        admin_brokers(h.client_port, {**client, "password": "wrong"})
    with pytest.raises(ProtocolError):     # a plaintext client gets no answer from a TLS listener
        brokers_seen(h.client_port)


def test_zookeeper_mode_hosts_with_scram(ssh_hosts_factory):
    """ZooKeeper mode (3.9.2): a ZooKeeper host and 3 brokers; with SASL (where the checkout has the
    listener security support; PLAINTEXT otherwise) the SCRAM user written into ZooKeeper before the
    brokers start."""
    try:
        import harness.cluster.listener_security  # noqa: F401
        security = "SASL_PLAINTEXT:SCRAM-SHA-256"
    except ImportError:
        security = None
    hs = ssh_hosts_factory("3.9.2", zookeeper=True, security=security)
    zk = [h for h in hs.hosts if h.is_zookeeper]
    assert len(zk) == 1 and len(hs.kafka_hosts) == 3
    endpoints = sorted((h.node_id, "127.0.0.1", h.client_port) for h in hs.kafka_hosts)
    doc = tomllib.loads(hs.nodes_file.read_text())
    for h in hs.kafka_hosts:
        got = admin_brokers(h.client_port, doc["client"]) if security else brokers_seen(h.client_port)
        assert got == endpoints
    with connect(hs, zk[0]) as c:
        rc, out = run(c, "sudo -n /etc/init.d/zookeeper status")
        assert rc == 0 and out.startswith("zookeeper is running"), out
        assert run(c, "echo ruok | nc -q 1 127.0.0.1 2181")[1] == "imok"
    with connect(hs, hs.kafka_hosts[0]) as c:     # a service script without its configuration refuses to start
        rc, out = run(c, "sudo -n /etc/init.d/zookeeper start")
        assert rc == 1 and "no readable configuration /etc/kafka/zookeeper.properties" in out, (rc, out)
        assert run(c, "sudo -n /etc/init.d/zookeeper status")[0] == 3
    zk_node = [n for n in doc["node"] if n["roles"] == ["zookeeper"]]
    assert len(zk_node) == 1 and zk_node[0]["service"]["pidfile"] == "/run/kafka/zookeeper.pid"
    assert zk_node[0]["endpoint"] == f"127.0.0.1:{zk[0].client_port}"
    assert "metadata_log_dir" not in doc["service"]


def kafka_chaos(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def test_up_refuses_an_existing_name_and_down_removes_everything(ssh_hosts_factory, tmp_path):
    hs = ssh_hosts_factory("4.4.0", brokers=1)
    with pytest.raises(hosts.HostsError, match="exists"):
        hosts.up(hs.name, tmp_path, "4.4.0", brokers=1)
    assert metadata_ok(hs.hosts[0].client_port, 1), "the refused start must leave the existing hosts alone"
    status = kafka_chaos("cluster", "status", "--name", hs.name)
    assert status.returncode == 0 and f"# {hs.name}: SSH test hosts" in status.stdout, status.stdout + status.stderr
    assert f"kc-{hs.name}-n1" in status.stdout
    assert hosts.down(hs.name) == 1
    client = docker_util.client()
    assert not client.containers.list(all=True, filters={"label": f"kafka-chaos.cluster={hs.name}"})
    assert not client.networks.list(names=[f"kc-{hs.name}"])


def test_hosts_of_a_dead_owner_are_removed_by_the_next_kafka_chaos_command(tmp_path):
    """Hosts a test process started belong to it: killed (SIGKILL, no teardown), its hosts are reaped by
    the next `kafka-chaos` command like its clusters would be."""
    name = f"{os.environ.get('KAFKA_CHAOS_SSH_HOSTS_PREFIX', 'ssh')}reap{os.getpid()}"
    script = ("import os, sys\nfrom pathlib import Path\nfrom tests.remote import hosts\n"
              f"hosts.up({name!r}, Path({str(tmp_path)!r}), '4.4.0', brokers=1)\n"
              "os.kill(os.getpid(), 9)\n")
    res = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == -9, res.stderr
    client = docker_util.client()
    assert client.containers.list(all=True, filters={"label": f"kafka-chaos.cluster={name}"}), "the hosts did not start"
    try:
        res = kafka_chaos("cleanup", "--dead-only")
        assert res.returncode == 0, res.stderr
        assert not client.containers.list(all=True, filters={"label": f"kafka-chaos.cluster={name}"})
        assert not client.networks.list(names=[f"kc-{name}"])
    finally:
        hosts.down(name)
