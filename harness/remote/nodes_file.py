"""The nodes file (``--nodes FILE``, docs/remote.md): a cluster the harness does not start, in TOML.

:func:`load` reads and checks it; every mistake is one :class:`NodesFileError` line naming the file, the
node and the key (an unknown key, a key file or known_hosts that is missing or unreadable, a role the
harness does not know, a cluster with both controllers and ZooKeeper, a duplicate id, a port out of
range, ...). Nothing is connected to here: reachability and host keys are checked when the cluster
connects (harness/cluster/remote_cluster.py), before any fault.

Relative paths in the file are relative to the file. Defaults for every node live in ``[ssh]`` and
``[service]``; a node overrides any of their keys in ``[node.ssh]`` / ``[node.service]``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import HarnessError
from harness.toml_file import TomlFileError, read_toml
from harness.protocol.endpoint import Endpoint, is_loopback, permit
from harness.protocol.endpoint import join as join_endpoints

ROLES = ("broker", "controller", "zookeeper")
_TOP_KEYS = {"name", "kafka_version", "owner_confirmed", "interface", "ports", "ssh", "service", "client", "node"}
# client: the port the brokers' client listener binds on the nodes (None: the endpoint's port; differs when
# the endpoint is a forwarded or published port); what `client` link cuts match on the node
_PORT_KEYS = {"internal": 9093, "controller": 9094, "zookeeper": 2181, "client": None}
_SSH_DEFAULTS = {"user": None, "port": 22, "key_file": None, "known_hosts": None, "sudo": True,
                 "connect_timeout_s": 10.0, "command_timeout_s": 60.0}
_SERVICE_DEFAULTS = {"start": None, "stop": None, "status": None, "pidfile": None, "process": None,
                     "log_file": None, "data_dir": None, "metadata_log_dir": None, "started_line": ""}
_NODE_KEYS = {"id", "roles", "host", "address", "endpoint", "ssh", "service"}
_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,30}")


class NodesFileError(HarnessError):
    """A nodes file that cannot be used; the message names the file, the node and the key."""


@dataclass(frozen=True)
class SshSettings:
    user: str
    port: int
    key_file: Path
    known_hosts: Path
    sudo: bool
    connect_timeout_s: float
    command_timeout_s: float


@dataclass(frozen=True)
class ServiceSettings:
    start: str
    stop: str
    status: str | None
    pidfile: str | None
    process: str | None
    log_file: str | None
    data_dir: str | None
    metadata_log_dir: str | None
    started_line: str


@dataclass(frozen=True)
class RemoteNode:
    id: int
    roles: tuple[str, ...]
    host: str                        # where SSH connects
    address: str                     # where the other nodes reach it (iptables rules match it)
    endpoint: Endpoint | None        # where the harness's clients reach it (host, port)
    internal_port: int               # the inter-broker listener's port
    controller_port: int             # the KRaft CONTROLLER listener's port
    client_port: int | None          # the port its client listener binds on the node (broker; zookeeper: 2181)
    ssh: SshSettings
    service: ServiceSettings

    @property
    def label(self) -> str:
        return f"node {self.id}"


@dataclass(frozen=True)
class NodesFile:
    path: Path
    name: str
    kafka_version: str | None
    owner_confirmed: bool
    interface: str
    bootstrap_servers: str
    client: dict                     # the [client] table but bootstrap_servers: harness/cluster/security.py
    nodes: tuple[RemoteNode, ...] = field(default_factory=tuple)

    def with_role(self, role: str) -> list[RemoteNode]:
        return [n for n in self.nodes if role in n.roles]

    @property
    def roles(self) -> tuple[str, ...]:
        return tuple(r for r in ROLES if self.with_role(r))

    @property
    def controller_model(self) -> str:
        """``zk`` when a ZooKeeper role exists, else ``kraft``."""
        return "zk" if self.with_role("zookeeper") else "kraft"


def _err(path: Path, where: str, key: str, what: str) -> NodesFileError:
    e = NodesFileError(f"nodes file {path}: {where + ': ' if where else ''}{key}: {what}")
    e.where, e.key, e.what = where, key, what   # for `kafka-chaos validate`: FILE:LINE: KEY (harness/commands/validate.py)
    return e


def _unknown(path: Path, where: str, table: dict, known) -> None:
    extra = sorted(set(table) - set(known))
    if extra:
        raise _err(path, where, extra[0], f"unknown key; known keys: {', '.join(sorted(known))}")


def _table(path: Path, where: str, key: str, v) -> dict:
    if not isinstance(v, dict):
        raise _err(path, where, key, "must be a table")
    return v


def _port(path: Path, where: str, key: str, v) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 65535:
        raise _err(path, where, key, f"must be a port number 1-65535, not {v!r}")
    return v


def _str(path: Path, where: str, key: str, v, empty_ok: bool = False) -> str:
    if not isinstance(v, str) or (not v.strip() and not empty_ok):
        raise _err(path, where, key, f"must be a non-empty string, not {v!r}")
    return v


def _abs(path: Path, where: str, key: str, v) -> str | None:
    if v is None:
        return None
    if not _str(path, where, key, v).startswith("/"):
        raise _err(path, where, key, f"must be an absolute path on the host, not {v!r}")
    return v


def _file(path: Path, where: str, key: str, v) -> Path:
    p = Path(_str(path, where, key, v)).expanduser()
    p = p if p.is_absolute() else path.parent / p
    if not p.is_file():
        raise _err(path, where, key, f"no such file {p}")
    try:
        p.read_bytes()
    except OSError as e:
        raise _err(path, where, key, f"cannot read {p}: {e.strerror}") from None
    return p


def _check_key(path: Path, where: str, p: Path) -> None:
    text = p.read_text(errors="replace")
    if "PRIVATE KEY" not in text:
        raise _err(path, where, "ssh.key_file", f"{p} is not a private key file (PEM / OpenSSH)")
    if "ENCRYPTED" in text:
        raise _err(path, where, "ssh.key_file", f"{p} is encrypted: use a key without a passphrase")


def _check_known_hosts(path: Path, where: str, p: Path) -> None:
    lines = [ln for ln in p.read_text(errors="replace").splitlines() if ln.strip() and not ln.startswith("#")]
    if not lines:
        raise _err(path, where, "ssh.known_hosts", f"{p} holds no host key")
    for i, ln in enumerate(lines, 1):
        parts = ln.split()
        if ln.startswith("@"):
            parts = parts[1:]
        if len(parts) < 3 or not re.fullmatch(r"(ssh|ecdsa|sk)-[\w@.-]+", parts[1]):
            raise _err(path, where, "ssh.known_hosts", f"{p}: line {i} is not an OpenSSH known_hosts line")


def _merged(path: Path, where: str, key: str, table, base: dict) -> dict:
    t = _table(path, where, key, table)
    _unknown(path, f"{where}: {key}" if where else key, t, base)
    return {**base, **t}


def _ssh_settings(path: Path, where: str, ssh: dict) -> SshSettings:
    for k in ("connect_timeout_s", "command_timeout_s"):
        v = ssh[k]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 3600:
            raise _err(path, where, f"ssh.{k}", f"must be a number of seconds in (0, 3600], not {v!r}")
    if not isinstance(ssh["sudo"], bool):
        raise _err(path, where, "ssh.sudo", f"must be true or false, not {ssh['sudo']!r}")
    for k in ("user", "key_file", "known_hosts"):
        if ssh[k] is None:
            raise _err(path, where, f"ssh.{k}", "missing")
    key = _file(path, where, "ssh.key_file", ssh["key_file"])
    _check_key(path, where, key)
    kh = _file(path, where, "ssh.known_hosts", ssh["known_hosts"])
    _check_known_hosts(path, where, kh)
    return SshSettings(_str(path, where, "ssh.user", ssh["user"]), _port(path, where, "ssh.port", ssh["port"]),
                       key, kh, ssh["sudo"], float(ssh["connect_timeout_s"]), float(ssh["command_timeout_s"]))


def _service_settings(path: Path, where: str, svc: dict) -> ServiceSettings:
    for k in ("start", "stop"):
        if svc[k] is None:
            raise _err(path, where, f"service.{k}", "missing (the command that "
                       f"{'starts' if k == 'start' else 'stops'} the node's service)")
    if svc["pidfile"] is None and svc["process"] is None:
        raise _err(path, where, "service.pidfile", "missing: name a pidfile or a `process` pattern (pgrep -f) so "
                   "kill and pause find the process")
    vals = {}
    for k, v in svc.items():
        if k in ("pidfile", "log_file", "data_dir", "metadata_log_dir"):
            vals[k] = _abs(path, where, f"service.{k}", v)
        else:
            vals[k] = None if v is None else _str(path, where, f"service.{k}", v, empty_ok=k == "started_line")
    return ServiceSettings(**vals)


def _endpoint(path: Path, where: str, v) -> Endpoint:
    host, sep, port = _str(path, where, "endpoint", v).rpartition(":")
    if not sep or not host or not port.isdigit():
        raise _err(path, where, "endpoint", f"must be HOST:PORT, not {v!r}")
    return Endpoint(host.strip("[]"), _port(path, where, "endpoint", int(port)))


def forwarded(endpoint: Endpoint, address: str) -> bool:
    """The endpoint is not the broker's own listener but a port forwarded to it (an SSH tunnel, a published
    container port): a loopback address, while the node's address (where the other nodes reach it) is not.
    Then its port says nothing of the port the broker binds on the node (``[ports] client``)."""
    return endpoint.is_loopback and not is_loopback(address)


def _node(path: Path, i: int, t, ssh: dict, svc: dict, ports: dict) -> RemoteNode:
    if not isinstance(t, dict):
        raise _err(path, f"node #{i}", "node", "must be a table")
    nid = t.get("id")
    where = f"node {nid}" if isinstance(nid, int) and not isinstance(nid, bool) else f"node #{i}"
    _unknown(path, where, t, _NODE_KEYS)
    if isinstance(nid, bool) or not isinstance(nid, int) or not 0 <= nid <= 2**31 - 1:
        raise _err(path, where, "id", f"must be a node id (an integer >= 0), not {nid!r}")
    roles = t.get("roles")
    if not isinstance(roles, list) or not roles or not all(isinstance(r, str) for r in roles):
        raise _err(path, where, "roles", f"must be a non-empty list of {', '.join(ROLES)}, not {roles!r}")
    bad = [r for r in roles if r not in ROLES]
    if bad:
        raise _err(path, where, "roles", f"unknown role {bad[0]!r}; roles: {', '.join(ROLES)}")
    if "zookeeper" in roles and len(roles) > 1:
        raise _err(path, where, "roles", "a zookeeper node has no other role")
    host = _str(path, where, "host", t.get("host"))
    address = _str(path, where, "address", t.get("address", host))
    ep = t.get("endpoint")
    if ep is None and ("broker" in roles or "zookeeper" in roles):
        raise _err(path, where, "endpoint", "missing (HOST:PORT where the harness's clients reach this node)")
    endpoint = _endpoint(path, where, ep) if ep is not None else None
    if "broker" in roles and endpoint is not None and ports["client"] is None and forwarded(endpoint, address):
        raise _err(path, where, "endpoint", f"{endpoint} is a forwarded port (a loopback address; the node's "
                   f"address is {address}) and [ports] client is not set: name the port the brokers' client "
                   "listener binds on the nodes ([ports] client = 9092); a `client` link cut matches it, and "
                   "without it network.client_only would cut the wrong port")
    client_port = ports["zookeeper"] if "zookeeper" in roles else (
        ports["client"] or (endpoint.port if endpoint else None))
    return RemoteNode(nid, tuple(roles), host, address, endpoint, ports["internal"], ports["controller"], client_port,
                      _ssh_settings(path, where, _merged(path, where, "ssh", t.get("ssh", {}), ssh)),
                      _service_settings(path, where, _merged(path, where, "service", t.get("service", {}), svc)))


def load(file: str | Path) -> NodesFile:
    """Read and check a nodes file (nothing is connected to)."""
    path = Path(file).expanduser().absolute()
    try:
        _text, doc = read_toml(path)
    except TomlFileError as e:
        what = "no such file" if e.missing else e.what.replace("cannot read:", "cannot read it:", 1)
        raise NodesFileError(f"nodes file {path}: {what}" + (f" (at line {e.line})" if e.line else "")) from None
    return parse(path, doc)


def parse(path: Path, doc: dict) -> NodesFile:
    """Check a parsed nodes file (``path``: the file, against which relative paths resolve)."""
    _unknown(path, "", doc, _TOP_KEYS)
    name = doc.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise _err(path, "", "name", f"missing or not [a-z0-9][a-z0-9-]{{0,30}}: {name!r}")
    kv = doc.get("kafka_version")
    if kv is not None and (not isinstance(kv, str) or not re.fullmatch(r"\d+\.\d+(\.\d+)?", kv)):
        raise _err(path, "", "kafka_version", f"must be a version such as \"4.4.0\", not {kv!r}")
    owner = doc.get("owner_confirmed", False)
    if not isinstance(owner, bool):
        raise _err(path, "", "owner_confirmed", f"must be true or false, not {owner!r}")
    iface = _str(path, "", "interface", doc.get("interface", "eth0"))
    if not re.fullmatch(r"[\w.-]{1,15}", iface):
        raise _err(path, "", "interface", f"not an interface name: {iface!r}")
    ports_t = _merged(path, "", "ports", doc.get("ports", {}), _PORT_KEYS)
    ports = {k: (None if v is None else _port(path, "ports", k, v)) for k, v in ports_t.items()}
    for k in ("internal", "controller"):
        if ports["client"] is not None and ports["client"] == ports[k]:
            raise _err(path, "ports", "client", f"{ports['client']} is also the {k} listener's port")
    client = dict(_table(path, "", "client", doc.get("client", {})))
    ssh = _merged(path, "", "ssh", doc.get("ssh", {}), _SSH_DEFAULTS)
    svc = _merged(path, "", "service", doc.get("service", {}), _SERVICE_DEFAULTS)
    raw_nodes = doc.get("node")
    if not isinstance(raw_nodes, list) or not raw_nodes:
        raise _err(path, "", "node", "no [[node]] tables: a nodes file names at least one node")
    nodes = [_node(path, i, t, ssh, svc, ports) for i, t in enumerate(raw_nodes, 1)]
    _check_cluster(path, nodes)
    boot = client.pop("bootstrap_servers", None)
    if boot is None:
        boot = join_endpoints(n.endpoint for n in nodes if "broker" in n.roles)
    for part in _str(path, "client", "bootstrap_servers", boot).split(","):
        h, sep, p = part.strip().rpartition(":")
        if not sep or not h or not p.isdigit() or not 1 <= int(p) <= 65535:
            raise _err(path, "client", "bootstrap_servers", f"{part.strip()!r} is not HOST:PORT")
    # the protocol client dials the nodes' endpoints (loopback and these hosts only: harness/protocol/endpoint.py)
    permit(n.endpoint.host for n in nodes if n.endpoint)
    return NodesFile(path, name, kv, owner, iface, boot, client, tuple(nodes))


def _check_cluster(path: Path, nodes: list[RemoteNode]) -> None:
    seen: set[tuple[str, int]] = set()
    for n in nodes:
        kind = "zookeeper" if "zookeeper" in n.roles else "kafka"
        if (kind, n.id) in seen:
            raise _err(path, n.label, "id", f"duplicate {kind} node id {n.id}")
        seen.add((kind, n.id))
    places: dict[tuple[str, int], str] = {}
    for n in nodes:
        where = (n.host, n.ssh.port)
        if where in places:
            raise _err(path, n.label, "ssh.port", f"{n.host}:{n.ssh.port} is also {places[where]}'s SSH address")
        places[where] = n.label
    if not any("broker" in n.roles for n in nodes):
        raise _err(path, "", "node", "no node has the role broker")
    has_zk = any("zookeeper" in n.roles for n in nodes)
    has_ctl = any("controller" in n.roles for n in nodes)
    if has_zk and has_ctl:
        raise _err(path, "", "roles", "both controller and zookeeper nodes: a cluster runs KRaft (controllers) "
                   "or ZooKeeper mode, not both")
    if not has_zk and not has_ctl:
        raise _err(path, "", "roles", "no controller and no zookeeper node: name the KRaft controllers "
                   "(role controller) or the ZooKeeper ensemble (role zookeeper)")
