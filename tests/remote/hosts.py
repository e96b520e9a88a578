"""SSH test hosts: containers of ``kafka-chaos/sshhost:<version>`` (harness/host_image.py) that stand in
for the machines a ``--nodes`` cluster runs on (docs/ssh-test-hosts.md). The harness reaches them only
through SSH and the Kafka listeners, as it would reach a user's VMs; only this module uses the Docker
API, as the people who provision those VMs would.

:func:`up` starts a host set named ``NAME``:

- a network ``kc-<NAME>`` and one container per host, ``kc-<NAME>-n<i>`` (ZooKeeper host
  ``kc-<NAME>-zk``), host name and network alias ``<NAME>-n<i>``, labelled like the harness's clusters
  (``kafka-chaos=1``, ``kafka-chaos.cluster=<NAME>``, the owner) plus ``kafka-chaos.sshhost=1``, so
  ``kafka-chaos cleanup`` finds them; ``NET_ADMIN`` (iptables, tc) and Docker's init as PID 1, never
  privileged; sshd (22) and the Kafka client listener (9092; ZooKeeper 2181) published on 127.0.0.1
  on ports Docker picks;
- a fresh ed25519 key pair for the user ``chaos`` and a fresh ed25519 host key per host, installed
  before the container starts, so ``known_hosts`` is written without asking the host;
- each host's ``/etc/kafka/server.properties``, the configuration the container adapter gives the same
  node (harness/distributions: apache-kraft 3 combined nodes, or apache-zk brokers and one ZooKeeper
  host), its EXTERNAL listener advertised as 127.0.0.1:<published port>; the storage formatted with
  ``kafka-storage`` as user ``kafka``; ``/etc/init.d/kafka start``; ready when every node answers
  Metadata with every broker and sshd sends its banner;
- with ``security`` (``--security SASL_SSL:SCRAM-SHA-512``, ``SSL``, ``SASL_PLAINTEXT:PLAIN``, ...): the
  EXTERNAL listeners secured as the container adapter secures them (harness/cluster/listener_security.py),
  the SCRAM user created at format time (KRaft) or in ZooKeeper before the brokers start, the CA in
  ``OUT/ca.pem`` and the credentials in the nodes file's ``[client]``;
- in ``OUT``: ``id_ed25519`` (+ ``.pub``), ``known_hosts``, ``nodes.toml`` (the ``--nodes`` file,
  harness/remote/nodes_file.py; mode 0600) and ``hosts.json`` (containers and ports);
- with ``network=True`` (``--network``): the hosts as machines on another network would be, reached at
  their own addresses on the hosts' network and nowhere else: the nodes file names each host by its IP
  (``host``, SSH on port 22, ``known_hosts`` for that IP) and its ``endpoint = "<IP>:9092"``, and the
  brokers advertise ``<IP>:9092``; nothing in the file is on 127.0.0.1 (PLAINTEXT only). This is how the
  harness's clients are shown to dial the endpoints a nodes file names (harness/protocol/endpoint.py).

Command line (wrap it in the cluster slot's lock when other clusters run)::

    python3 -m tests.remote.hosts up --name h1 --kafka 4.4.0 --out /tmp/h1-hosts   # prints the nodes file path
    python3 -m tests.remote.hosts up --name h1zk --kafka 3.9.2 --zookeeper --out /tmp/h1zk
    python3 -m tests.remote.hosts down --name h1

Hosts started from the command line are labelled persistent (kept until ``down`` or ``kafka-chaos
cleanup``); the pytest fixtures' hosts belong to the test process (reaped if it dies).
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import re
import socket
import sys
import tarfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from harness import docker_util, host_image, images
from harness.cluster.owner import this_owner
from harness.distributions.apache_kraft import ApacheKraft
from harness.distributions.apache_zk import ApacheZk
from harness.distributions.base import CONTROLLER_PORT, INTERNAL_PORT, NodePlan
from harness.distributions.node_settings import DEFAULT_BROKER_CONFIG, DEFAULT_ZK_CONFIG, ZK_CLIENT_PORT
from harness.docker_util import (LABEL, LABEL_CLUSTER, LABEL_OWNER_HOST, LABEL_OWNER_PID, LABEL_OWNER_START,
                                 LABEL_PERSISTENT, LABEL_SSHHOST)
from harness.errors import HarnessError
from harness.protocol.client import ProtocolClient, ProtocolError

KAFKA_GID = 1000              # the group of the user `kafka` in the image (harness/host_image.py)
EXTERNAL_PORT = 9092          # the client listener inside every host (published on 127.0.0.1)
READY_TIMEOUT_S = 240         # three JVMs starting on a loaded 2-core host
NAME_RE = re.compile(r"[a-z0-9][a-z0-9-]{0,24}")
USER = host_image.HARNESS_USER
KAFKA_SERVICE = {"start": "/etc/init.d/kafka start", "stop": "/etc/init.d/kafka stop", "status": "/etc/init.d/kafka status",
                 "pidfile": "/run/kafka/kafka.pid", "log_file": "/var/log/kafka/server.log",
                 "data_dir": "/var/lib/kafka/data", "metadata_log_dir": "/var/lib/kafka/data"}
ZK_SERVICE = {"start": "/etc/init.d/zookeeper start", "stop": "/etc/init.d/zookeeper stop",
              "status": "/etc/init.d/zookeeper status",
              "pidfile": "/run/kafka/zookeeper.pid", "log_file": "/var/log/kafka/zookeeper.log",
              "data_dir": "/var/lib/zookeeper"}


class HostsError(HarnessError):
    """The hosts could not be started (or the request is malformed); one line."""


@dataclass
class Host:
    node_id: int
    roles: list[str]          # broker, controller | zookeeper
    container: str
    alias: str                # host name and network alias
    address: str              # IP on the hosts' network (what iptables rules match)
    ssh_port: int             # on 127.0.0.1
    client_port: int          # Kafka EXTERNAL (ZooKeeper: its client port) on 127.0.0.1
    host_key: str             # "ssh-ed25519 AAAA..."

    @property
    def is_zookeeper(self) -> bool:
        return "zookeeper" in self.roles


@dataclass
class HostSet:
    name: str
    kafka_version: str
    mode: str                 # kraft | zookeeper
    out: Path
    hosts: list[Host]
    seconds: float            # up() wall time
    client: dict = field(default_factory=lambda: {"protocol": "PLAINTEXT"})   # the nodes file's [client] security keys
    network: bool = False     # the nodes file names the hosts' own addresses (module docstring), not 127.0.0.1

    @property
    def nodes_file(self) -> Path:
        return self.out / "nodes.toml"

    @property
    def key_file(self) -> Path:
        return self.out / "id_ed25519"

    @property
    def known_hosts(self) -> Path:
        return self.out / "known_hosts"

    @property
    def kafka_hosts(self) -> list[Host]:
        return [h for h in self.hosts if not h.is_zookeeper]

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(self.endpoint(h) for h in self.kafka_hosts)

    def endpoint(self, h: Host) -> str:
        """Where the harness's clients reach host ``h``'s client listener (what the nodes file names)."""
        return f"{h.address}:{EXTERNAL_PORT if not h.is_zookeeper else ZK_CLIENT_PORT}" if self.network \
            else f"127.0.0.1:{h.client_port}"

    def ssh_address(self, h: Host) -> tuple[str, int]:
        """Where the harness's SSH client reaches host ``h``."""
        return (h.address, 22) if self.network else ("127.0.0.1", h.ssh_port)

    def down(self) -> int:
        return down(self.name)


# -- keys and files ----------------------------------------------------------------------------------
def keypair(comment: str) -> tuple[bytes, str]:
    """A new ed25519 key: (OpenSSH private key file, ``ssh-ed25519 AAAA... comment``)."""
    from cryptography.hazmat.primitives import serialization as s
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    k = Ed25519PrivateKey.generate()
    private = k.private_bytes(s.Encoding.PEM, s.PrivateFormat.OpenSSH, s.NoEncryption())
    public = k.public_key().public_bytes(s.Encoding.OpenSSH, s.PublicFormat.OpenSSH).decode()
    return private, f"{public} {comment}"


def _tar(files: list[tuple]) -> bytes:
    """A tar of (path without leading '/', content, mode, uid[, gid]) (gid: uid's) for ``put_archive('/')``."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path, data, mode, uid, *gid in files:
            info = tarfile.TarInfo(path)
            info.size, info.mode, info.uid, info.gid, info.mtime = len(data), mode, uid, (gid or [uid])[0], int(time.time())
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def cluster_id() -> str:
    """A KRaft cluster id (22 characters of base64url) that does not start with '-' (a tool option)."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


def _toml_str(v: str) -> str:
    return json.dumps(v)  # a JSON string is a TOML basic string for the characters used here


def nodes_toml(hs: HostSet, key: str = "id_ed25519", known_hosts: str = "known_hosts") -> str:
    """The ``--nodes`` file of ``hs`` (schema: harness/remote/nodes_file.py, docs/remote.md)."""
    lines = [f"# SSH test hosts {hs.name}: written by tests/remote/hosts.py ({hs.mode}, Kafka {hs.kafka_version})",
             f"name = {_toml_str(hs.name)}", f"kafka_version = {_toml_str(hs.kafka_version)}",
             "owner_confirmed = true   # test hosts started for this purpose", 'interface = "eth0"', "",
             "[ports]", f"internal = {INTERNAL_PORT}",
             f"client = {EXTERNAL_PORT}   # the brokers' client listener inside each host: what a `client` link cut matches"]
    lines += [f"controller = {CONTROLLER_PORT}"] if hs.mode == "kraft" else [f"zookeeper = {ZK_CLIENT_PORT}"]
    lines += ["", "[client]", f"bootstrap_servers = {_toml_str(hs.bootstrap_servers)}"]
    lines += [f"{k} = {_toml_str(v)}" for k, v in hs.client.items()]
    lines += ["", "[ssh]", f"user = {_toml_str(USER)}", f"key_file = {_toml_str(key)}",
              f"known_hosts = {_toml_str(known_hosts)}", "sudo = true", "connect_timeout_s = 5", "", "[service]"]
    lines += [f"{k} = {_toml_str(v)}" for k, v in KAFKA_SERVICE.items()
              if hs.mode == "kraft" or k != "metadata_log_dir"]   # ZooKeeper mode: no metadata log
    for h in hs.hosts:
        ssh_host, ssh_port = hs.ssh_address(h)
        lines += ["", "[[node]]", f"id = {h.node_id}", f"roles = {json.dumps(h.roles)}", f"host = {_toml_str(ssh_host)}",
                  f"address = {_toml_str(h.address)}   # {h.alias}", f"endpoint = {_toml_str(hs.endpoint(h))}",
                  f"ssh = {{ port = {ssh_port} }}"]
        if h.is_zookeeper:
            lines.append("service = { " + ", ".join(f"{k} = {_toml_str(v)}" for k, v in ZK_SERVICE.items()) + " }")
    return "\n".join(lines) + "\n"


def network_nodes_file(hs: HostSet, out: Path) -> Path:
    """A second nodes file for the running hosts ``hs`` in ``out`` that names each host by its IP on the
    hosts' network (SSH on 22 with a ``known_hosts`` for those IPs, ``endpoint = "<IP>:9092"``), nothing
    on 127.0.0.1. The brokers still advertise what ``hs`` was started with (librdkafka follows that);
    what the harness dials itself (SSH, the protocol client) goes to the IPs."""
    from dataclasses import replace
    net = replace(hs, network=True)
    out.mkdir(parents=True, exist_ok=True)
    (out / "known_hosts").write_text("".join(f"{h.address} {h.host_key}\n" for h in hs.hosts))
    path = out / "nodes.toml"
    path.write_text(nodes_toml(net, key=str(hs.key_file), known_hosts=str(out / "known_hosts")))
    os.chmod(path, 0o600)
    return path


def host_leftovers(path: str | Path) -> list[str]:
    """What any harness left on the hosts of nodes file ``path``, read over SSH as the harness reads them: a
    ``KC_`` iptables chain, a service process that is not running (stopped, paused). [] when clean."""
    from harness import distributions
    from harness.cluster.remote_cluster import accesses     # lazy: paramiko
    f = distributions.resolve(nodes=str(path)).nodes
    out = []
    accs = accesses(f)
    try:
        for name, acc in accs.items():
            st = acc.status()
            if st != "running":
                out.append(f"{name}: {st}")
            _, text = acc._run("iptables -w 5 -S 2>/dev/null | grep -E -- '-N KC_' || true")
            out += [f"{name}: {ln.strip()}" for ln in text.decode().splitlines() if ln.strip()]
    finally:
        for a in accs.values():
            a.close()
    return out


# -- Docker ------------------------------------------------------------------------------------------
def _labels(name: str, persistent: bool) -> dict[str, str]:
    me = this_owner()
    return {LABEL: "1", LABEL_CLUSTER: name, LABEL_SSHHOST: "1", LABEL_OWNER_PID: me["pid"],
            LABEL_OWNER_HOST: me["host"], LABEL_OWNER_START: me["start"], LABEL_PERSISTENT: "1" if persistent else "0"}


def _exec(container, cmd: list[str], what: str, user: str = "root") -> str:
    rc, out = container.exec_run(cmd, user=user)
    text = out.decode(errors="replace").strip()
    if rc != 0:
        raise HostsError(f"{container.name}: {what} failed (exit {rc}): {text.splitlines()[-1] if text else ''}")
    return text


def _start_container(client, image: str, name: str, alias: str, net: str, labels: dict, client_port: int,
                     host_private: bytes, host_public: str, user_public: str):
    c = client.containers.create(
        image, name=name, hostname=alias, detach=True, init=True, cap_add=["NET_ADMIN"], labels=labels,
        network=net, networking_config={net: client.api.create_endpoint_config(aliases=[alias])},
        ports={"22/tcp": ("127.0.0.1", None), f"{client_port}/tcp": ("127.0.0.1", None)},
        mem_limit="1g", pids_limit=1024)
    c.put_archive("/", _tar([("etc/ssh/ssh_host_ed25519_key", host_private, 0o600, 0),
                             ("etc/ssh/ssh_host_ed25519_key.pub", (host_public + "\n").encode(), 0o644, 0),
                             (f"etc/ssh/authorized_keys/{USER}", (user_public + "\n").encode(), 0o644, 0)]))
    c.start()
    c.reload()
    ports = c.attrs["NetworkSettings"]["Ports"]
    ip = c.attrs["NetworkSettings"]["Networks"][net]["IPAddress"]
    return c, int(ports["22/tcp"][0]["HostPort"]), int(ports[f"{client_port}/tcp"][0]["HostPort"]), ip


@dataclass
class _NodeLike:      # harness.distributions.base.NodeLike
    node_id: int
    alias: str
    host_port: int
    role: str = "broker"


def _kafka_configs(mode: str, hosts: list[Host], zk_alias: str, ls=None, network: bool = False) -> dict[int, str]:
    """Each Kafka host's server.properties: what the container adapter's distribution gives the same node,
    with the EXTERNAL listener on port 9092 inside the host (advertised as 127.0.0.1:<published port>;
    ``network``: as <the host's IP>:9092)."""
    dist = ApacheKraft() if mode == "kraft" else ApacheZk()
    common = dist.common_config(DEFAULT_BROKER_CONFIG, len(hosts), {})
    nodes = [_NodeLike(h.node_id, h.alias, h.client_port) for h in hosts]
    out = {}
    for n in nodes:
        cfg = dist.node_config(common, n, nodes, zookeeper_connect=f"{zk_alias}:{ZK_CLIENT_PORT}")
        cfg["listeners"] = cfg["listeners"].replace(f"EXTERNAL://0.0.0.0:{n.host_port}", f"EXTERNAL://0.0.0.0:{EXTERNAL_PORT}")
        if network:
            ip = next(h.address for h in hosts if h.node_id == n.node_id)
            cfg["advertised.listeners"] = cfg["advertised.listeners"].replace(
                f"EXTERNAL://127.0.0.1:{n.host_port}", f"EXTERNAL://{ip}:{EXTERNAL_PORT}")
        if ls is not None:    # the EXTERNAL listener secured as the container adapter does it
            cfg = ls.apply(NodePlan("kraft", {"KC_CONFIG": ""}, cfg), n).config
        out[n.node_id] = "".join(f"{k}={v}\n" for k, v in cfg.items())
    return out


def parse_security(spec: str | None):
    """``--security PROTOCOL[:MECHANISM]`` as a Security (None: PLAINTEXT); a bad one is one line."""
    if not spec or spec.strip().upper() == "PLAINTEXT":
        return None
    try:
        from harness.cluster.security import Security
        import harness.cluster.listener_security  # noqa: F401  (what _listener_security needs)
    except ImportError:
        raise HostsError("--security needs the harness's TLS and SASL listener support "
                         "(harness/cluster/listener_security.py), which this checkout lacks") from None
    return Security.parse(spec, "--security")


def _listener_security(asked, name: str, out: Path):
    """(ListenerSecurity or None, the nodes file's [client] security keys) for ``asked`` (a Security from
    :func:`parse_security`): the EXTERNAL listeners secured the way the container adapter secures them
    (harness/cluster/listener_security.py: a CA made now, one server certificate per host, inline PEM;
    PLAIN in the listener's JAAS; SCRAM users created by :func:`up`); the CA clients trust is ``OUT/ca.pem``."""
    if asked is None:
        return None, {"protocol": "PLAINTEXT"}
    from harness.cluster import certs
    from harness.cluster.listener_security import ListenerSecurity
    ls = ListenerSecurity.prepare(asked, name)
    if ls.ca is not None:
        (out / "ca.pem").write_text(ls.ca.cert_pem)
        certs.remove_tls_dir(name)          # the harness's own copy: the hosts keep theirs in OUT
        ls.security = ls.security.with_credentials(ca_file=str(out / "ca.pem"))
    sec = ls.security
    client = {"protocol": sec.protocol}
    for k in ("mechanism", "username", "password", "ca_file"):
        if getattr(sec, k):
            client[k] = getattr(sec, k)
    return ls, client


def _scram_user_zookeeper(c, sec, deadline: float) -> None:
    """ZooKeeper mode: the SCRAM credential written into ZooKeeper before any broker starts (Kafka's
    ConfigCommand with --zookeeper, on the ZooKeeper host)."""
    cmd = ["kafka-run-class", "kafka.admin.ConfigCommand", "--zookeeper", f"localhost:{ZK_CLIENT_PORT}", "--alter",
           "--add-config", f"{sec.mechanism}=[iterations=4096,password={sec.password}]",
           "--entity-type", "users", "--entity-name", sec.username]
    while True:
        rc, out = c.exec_run(cmd)
        if rc == 0:
            return
        if time.monotonic() > deadline:
            raise HostsError(f"{c.name}: creating the SCRAM user failed: "
                             f"{(out.decode(errors='replace').strip().splitlines() or ['?'])[-1][:200]}")
        time.sleep(1)


def _zk_config() -> str:
    cfg = dict(DEFAULT_ZK_CONFIG)
    cfg.pop("quorumListenOnAllIPs", None)   # standalone: one server
    return "".join(f"{k}={v}\n" for k, v in cfg.items())


def _ssh_banner(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.settimeout(2)
            return s.recv(64).startswith(b"SSH-2.0-")
    except OSError:
        return False


def _brokers_seen(port: int, client_config: dict | None = None) -> int:
    """How many brokers node ``port``'s Metadata names (0: no answer). A secured listener is asked by
    librdkafka with the clients' settings (the nodes file's [client])."""
    if client_config:
        from confluent_kafka.admin import AdminClient   # lazy: librdkafka, only for secured listeners
        try:
            admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}", "socket.timeout.ms": 3000,
                                 "log_level": 0, **client_config})
            return len(admin.list_topics(timeout=3).brokers)
        except Exception:  # KafkaException of any kind: not (yet) answering
            return 0
    try:
        with ProtocolClient("127.0.0.1", port, timeout=3) as pc:
            return len(pc.metadata([]).brokers)
    except (ProtocolError, OSError):
        return 0


def _wait_ready(containers: dict, hs: HostSet, deadline: float, client_config: dict | None = None) -> None:
    """Until every Kafka host answers Metadata naming every broker and every sshd sends its banner."""
    want = len(hs.kafka_hosts)
    waiting = {h.container: h for h in hs.hosts}
    while True:
        for h in list(waiting.values()):
            ok = _ssh_banner(h.ssh_port) and (h.is_zookeeper or _brokers_seen(h.client_port, client_config) == want)
            if ok:
                del waiting[h.container]
        if not waiting:
            return
        if time.monotonic() > deadline:
            h = next(iter(waiting.values()))
            log = KAFKA_SERVICE["log_file"] if not h.is_zookeeper else ZK_SERVICE["log_file"]
            _, tail = containers[h.container].exec_run(["tail", "-n", "8", log])
            raise HostsError(f"host {h.container} not ready in {READY_TIMEOUT_S} s (Metadata on 127.0.0.1:"
                             f"{h.client_port} with {want} brokers, sshd on {h.ssh_port}); end of {log}: "
                             + " | ".join(tail.decode(errors="replace").strip().splitlines()[-3:]))
        time.sleep(0.5)


def up(name: str, out: Path, kafka_version: str = "4.4.0", zookeeper: bool = False, brokers: int = 3,
       persistent: bool = False, security: str | None = None, network: bool = False) -> HostSet:
    """Start the host set ``name`` (see the module docstring); on any failure nothing is left running."""
    t0 = time.monotonic()
    if not NAME_RE.fullmatch(name or ""):
        raise HostsError(f"host set name {name!r}: use [a-z0-9][a-z0-9-]{{0,24}}")
    if not 1 <= brokers <= 9:
        raise HostsError(f"brokers: 1 to 9, not {brokers}")
    version = images.resolve_version(kafka_version)
    mode = "zookeeper" if zookeeper else "kraft"
    if zookeeper and images.is_kraft_only(version):
        raise HostsError(f"Kafka {version} has no ZooKeeper mode; use 3.x (e.g. 3.9.2) with --zookeeper")
    if not zookeeper and (brokers < 3 and brokers != 1):
        raise HostsError("KRaft host sets have 1 or at least 3 nodes (3 combined nodes form the quorum)")
    asked = parse_security(security)
    if network and asked is not None:
        raise HostsError("--network hosts are PLAINTEXT only (their certificates would need the hosts' IPs)")
    client = docker_util.client()
    net_name = f"kc-{name}"
    if client.networks.list(names=[net_name]) or client.containers.list(all=True, filters={"label": f"{LABEL_CLUSTER}={name}"}):
        raise HostsError(f"host set {name} exists (network {net_name}); `python3 -m tests.remote.hosts down --name {name}`")
    image = host_image.build(version).tag
    out = Path(out).absolute()
    out.mkdir(parents=True, exist_ok=True)
    labels = _labels(name, persistent)
    ls, client_keys = _listener_security(asked, name, out)
    private, public = keypair(f"kafka-chaos-test-{name}")
    (out / "id_ed25519").write_bytes(private)
    os.chmod(out / "id_ed25519", 0o600)
    (out / "id_ed25519.pub").write_text(public + "\n")
    try:
        client.networks.create(net_name, driver="bridge", labels=labels)
        specs = [(f"kc-{name}-zk", f"{name}-zk", 1, ["zookeeper"], ZK_CLIENT_PORT)] if zookeeper else []
        for i in range(1, brokers + 1):   # KRaft: the first 3 nodes are the quorum (ApacheKraft.voter_ids)
            roles = ["broker"] if zookeeper or i > 3 else ["broker", "controller"]
            specs.append((f"kc-{name}-n{i}", f"{name}-n{i}", i, roles, EXTERNAL_PORT))

        def start(spec):
            cname, alias, nid, roles, port = spec
            hpriv, hpub = keypair(f"root@{alias}")
            c, ssh_port, client_port, ip = _start_container(client, image, cname, alias, net_name, labels, port,
                                                            hpriv, hpub, public)
            return c, Host(nid, roles, cname, alias, ip, ssh_port, client_port, hpub.rsplit(" ", 1)[0])

        with ThreadPoolExecutor(max_workers=4) as pool:
            started = list(pool.map(start, specs))
        containers = {h.container: c for c, h in started}
        hs = HostSet(name, version, mode, out, [h for _, h in started], 0.0, client_keys, network)
        (out / "known_hosts").write_text("".join(
            (f"{h.address} " if network else f"[127.0.0.1]:{h.ssh_port} ") + f"{h.host_key}\n" for h in hs.hosts))
        configs = _kafka_configs(mode, hs.kafka_hosts, f"{name}-zk", ls, network)
        scram = ls.security if ls is not None and ls.security.scram else None
        cid = cluster_id()

        def configure(h: Host) -> None:
            c = containers[h.container]
            if h.is_zookeeper:
                c.put_archive("/", _tar([("etc/kafka/zookeeper.properties", _zk_config().encode(), 0o644, 0)]))
                _exec(c, ["sed", "-i", "s/^START_AT_BOOT=no/START_AT_BOOT=yes/", "/etc/default/zookeeper"], "boot setting")
                _exec(c, ["/etc/init.d/zookeeper", "start"], "/etc/init.d/zookeeper start")
                if scram:
                    _scram_user_zookeeper(c, scram, time.monotonic() + 90)
                return
            # root:kafka 0640, as a package installs it: with --security it holds a private key and passwords
            c.put_archive("/", _tar([("etc/kafka/server.properties", configs[h.node_id].encode(), 0o640, 0, KAFKA_GID)]))
            if mode == "kraft":
                # SCRAM: the credential goes into the metadata log's bootstrap records (KIP-900)
                add = ["--add-scram", f"{scram.mechanism}=[name={scram.username},password={scram.password}]"] if scram else []
                _exec(c, ["kafka-storage", "format", "-t", cid, "-c", "/etc/kafka/server.properties", *add],
                      "kafka-storage format", user="kafka")
            _exec(c, ["sed", "-i", "s/^START_AT_BOOT=no/START_AT_BOOT=yes/", "/etc/default/kafka"], "boot setting")
            _exec(c, ["/etc/init.d/kafka", "start"], "/etc/init.d/kafka start")

        zk = [h for h in hs.hosts if h.is_zookeeper]
        for h in zk:           # ZooKeeper first: a broker's start waits for it anyway
            configure(h)
        with ThreadPoolExecutor(max_workers=4) as pool:
            list(pool.map(configure, hs.kafka_hosts))
        client_config = ls.security.client_config() if ls is not None else None
        _wait_ready(containers, hs, time.monotonic() + READY_TIMEOUT_S, client_config)
        hs.seconds = round(time.monotonic() - t0, 1)
        hs.nodes_file.write_text(nodes_toml(hs))
        os.chmod(hs.nodes_file, 0o600)       # with SASL it holds the password
        (out / "hosts.json").write_text(json.dumps({**asdict(hs), "out": str(out)}, indent=2) + "\n")
        return hs
    except BaseException:
        down(name)
        raise


def down(name: str) -> int:
    """Remove the containers and the network of host set ``name``; returns the containers removed."""
    from harness.cluster.cleanup import remove_cluster
    client = docker_util.client()
    others = [c.name for c in client.containers.list(all=True, filters={"label": f"{LABEL_CLUSTER}={name}"})
              if c.labels.get(LABEL_SSHHOST) != "1"]
    if others:
        raise HostsError(f"cluster {name} is not an SSH host set (containers {', '.join(others)}); not removed")
    return remove_cluster(name, settle=False)


# -- command line ------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m tests.remote.hosts", description="start or remove SSH test hosts")
    sub = p.add_subparsers(dest="cmd", required=True)
    u = sub.add_parser("up", help="start hosts and write OUT/nodes.toml")
    u.add_argument("--name", required=True)
    u.add_argument("--kafka", default="4.4.0", metavar="VERSION")
    u.add_argument("--out", required=True, type=Path, help="directory for the key, known_hosts and nodes.toml")
    u.add_argument("--zookeeper", action="store_true", help="ZooKeeper mode (3.x): one more host running ZooKeeper")
    u.add_argument("--brokers", type=int, default=3)
    u.add_argument("--security", metavar="PROTOCOL[:MECHANISM]", help="the client listener's security, as "
                   "`kafka-chaos run --security` (e.g. SASL_SSL:SCRAM-SHA-512; default PLAINTEXT)")
    u.add_argument("--network", action="store_true", help="the nodes file names the hosts' IPs on their network "
                   "(SSH on 22, Kafka on 9092, advertised there), nothing on 127.0.0.1")
    d = sub.add_parser("down", help="remove the hosts and their network")
    d.add_argument("--name", required=True)
    args = p.parse_args(argv)
    try:
        if args.cmd == "up":
            hs = up(args.name, args.out, args.kafka, args.zookeeper, args.brokers, persistent=True,
                    security=args.security, network=args.network)
            print(f"{hs.nodes_file}  ({len(hs.hosts)} hosts, {hs.mode}, Kafka {hs.kafka_version}, "
                  f"up in {hs.seconds} s; bootstrap {hs.bootstrap_servers})")
        else:
            print(f"removed {down(args.name)} containers of host set {args.name}")
        return 0
    except (HarnessError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; nothing left running", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
