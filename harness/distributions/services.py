"""Service containers of a distribution file (``[[service]]``, docs/broker-contract.md "Services"): the
containers a broker needs besides its own nodes — a ZooKeeper ensemble, a database or an object store
the broker stores into — started before the brokers on the run's own Docker network.

Each service becomes one :class:`harness.distributions.NodeGroup` (``NodeGroup.service`` = its name), so
it is started, labelled, logged into the run record, found again by ``Cluster.attach`` and removed like
every other node of the cluster (harness/cluster/node_groups.py); nothing here talks to Docker.

Roles (``role``):

``zookeeper``
    Apache Kafka's ZooKeeper: the brokers register under ``/brokers/ids``, the controller is
    ``/controller``, the transaction log is under ``<txn_log_dir>/version-2`` (key ``txn_log_dir``,
    default ``/var/lib/zookeeper``: ZooKeeper's ``dataLogDir``, or its ``dataDir``). Its nodes are the
    cluster's ZooKeeper servers (``Cluster.zookeepers``): the run is observed through ZooKeeper, the
    ZooKeeper faults and targets (``zk_kill``, ``zookeeper-leader``, ``zk:<id>``) apply, and the file
    is judged by the ZooKeeper-mode controller model. At most one service has this role.
``store`` (default)
    Anything else the harness only starts, stops and cuts: its nodes have role ``service`` and are named
    by the fault target ``service:<name>`` / ``service:<name>:<id>``.

Templates: a broker's ``command`` / ``env`` may use ``{service.<name>.connect}`` (``host:port`` of each
of the service's nodes on the cluster network, comma separated), ``{service.<name>.hosts}``,
``{service.<name>.host}`` (the first node) and ``{service.<name>.port}``; a service's own templates use
those too, and :data:`SERVICE_PLACEHOLDERS`.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass, field

ROLES = ("zookeeper", "store")
SERVICE_KEYS = {"name", "role", "image", "command", "env", "ready_log_line", "count", "port", "description",
                "txn_log_dir"}
ZOOKEEPER_TXN_LOG_DIR = "/var/lib/zookeeper"   # the Apache image's dataDir (harness/distributions/node_settings.py)
# what a service's own command / env may use besides {service.<name>.<attr>}
SERVICE_PLACEHOLDERS = ("id", "ids", "count", "alias", "port", "name", "node_ids", "broker_hosts", "internal_port",
                        "cluster_id")
SERVICE_ATTRS = ("connect", "hosts", "host", "port")
RESERVED_NAMES = ("b", "broker", "c", "controller")   # the container / host name prefixes of the Kafka nodes
ZOOKEEPER_PORT = 2181
MAX_COUNT = 5
# host ports with ClusterSpec.port_base: the zookeeper service where apache-zk's ensemble is (BASE+100),
# the others from BASE+300, ten apart
ZOOKEEPER_PORT_OFFSET = 100
STORE_PORT_OFFSET = 300


class ServiceError(ValueError):
    """A malformed ``[[service]]`` entry: ``key`` (e.g. ``service[0].port``) and what is wrong."""

    def __init__(self, key: str, what: str):
        super().__init__(f"{key}: {what}")
        self.key, self.what = key, what


@dataclass(frozen=True)
class ServiceSpec:
    """One checked ``[[service]]`` entry."""
    name: str                           # container kc-<cluster>-<name><id>, host name <name><id>
    role: str                           # zookeeper | store
    image: str | None                   # None: the brokers' image (the file's, or --broker-image)
    command: tuple[str, ...] | None     # None: the image's own command
    env: dict[str, str] = field(default_factory=dict)
    ready_log_line: str = ""
    count: int | None = None            # None: zookeeper: the ensemble size the scenario asks; store: 1
    port: int = ZOOKEEPER_PORT          # the port inside the container published on 127.0.0.1
    description: str = ""
    # zookeeper: where the server writes its transaction log (its dataLogDir, or dataDir when that is
    # unset); the harness reads <txn_log_dir>/version-2/log.* after the run (harness/observer/zk_history.py)
    txn_log_dir: str = ZOOKEEPER_TXN_LOG_DIR

    @property
    def node_role(self) -> str:
        """``Node.role`` of its nodes: ``zookeeper``, or ``service`` for a store."""
        return "zookeeper" if self.role == "zookeeper" else "service"

    def nodes(self, zookeepers: int = 1) -> int:
        """How many nodes it runs when the cluster asks for a ZooKeeper ensemble of ``zookeepers``."""
        if self.count is not None:
            return self.count
        return zookeepers if self.role == "zookeeper" else 1


def _fields(key: str, text) -> list[str]:
    if not isinstance(text, str):
        raise ServiceError(key, f"expected a string, got {type(text).__name__}")
    try:
        return [f for _, f, _, _ in string.Formatter().parse(text) if f is not None]
    except ValueError as e:
        raise ServiceError(key, f"not a valid template ({e}); write a literal brace as {{{{ or }}}}") from None


def check_template(key: str, text, plain: tuple[str, ...], services: tuple[str, ...]) -> str:
    """``text`` if every placeholder in it is one of ``plain`` or ``service.<one of services>.<attr>``."""
    for f in _fields(key, text):
        if f in plain:
            continue
        m = re.fullmatch(r"service\.([^.]+)\.([^.]+)", f)
        if m and m.group(1) not in services:
            known = ", ".join(services) or "none is declared"
            raise ServiceError(key, f"{{{f}}} names no declared [[service]] ({known})")
        if m and m.group(2) not in SERVICE_ATTRS:
            raise ServiceError(key, f"{{{f}}}: a service's placeholders are "
                                    f"{', '.join('{service.' + m.group(1) + '.' + a + '}' for a in SERVICE_ATTRS)}")
        if not m:
            names = [f"{{{p}}}" for p in plain] + ["{service.<name>.connect|hosts|host|port}"]
            raise ServiceError(key, f"unknown placeholder {{{f}}}; use {', '.join(names)}")
    return text


def parse_command(key: str, raw, check) -> tuple[str, ...] | None:
    """A ``command`` value (a list of templates, or one string split on blanks), each checked by
    ``check(key, template)``; None when absent. Shared by the brokers' and the services' commands."""
    if raw is None:
        return None
    if isinstance(raw, str):
        raw = raw.split()
    if not isinstance(raw, list) or not raw:
        raise ServiceError(key, "expected a non-empty list of strings (or one string)")
    return tuple(check(f"{key}[{i}]", c) for i, c in enumerate(raw))


def parse_env(key: str, raw, check) -> dict[str, str]:
    """An ``env`` table of NAME = template (numbers become strings), each checked by ``check(key, template)``."""
    if not isinstance(raw, dict):
        raise ServiceError(key, "expected a table of NAME = \"template\"")
    out = {}
    for k, v in raw.items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k):
            raise ServiceError(f"{key}.{k}", "not a valid environment variable name")
        out[k] = check(f"{key}.{k}", str(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v)
    return out


def parse_services(raw) -> tuple[ServiceSpec, ...]:
    """Check the document's ``service`` value (a TOML array of tables); ServiceError names the key."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(s, dict) for s in raw):
        raise ServiceError("service", "expected [[service]] tables")
    names = []
    for i, s in enumerate(raw):
        name = s.get("name")
        if not isinstance(name, str) or not re.fullmatch(r"[a-z]([a-z-]{0,18}[a-z])?", name):
            raise ServiceError(f"service[{i}].name", f"{name!r}: lower-case letters and inner '-' (max 20, no digits: "
                                                    "the node id follows it in the host name)")
        if name in RESERVED_NAMES:
            raise ServiceError(f"service[{i}].name", f"{name!r} is the host name prefix of the Kafka nodes")
        if name in names:
            raise ServiceError(f"service[{i}].name", f"{name!r}: another [[service]] has this name")
        names.append(name)
    out = []
    for i, s in enumerate(raw):
        key = f"service.{s['name']}"
        unknown = sorted(set(s) - SERVICE_KEYS)
        if unknown:
            raise ServiceError(f"{key}.{unknown[0]}", f"unknown key; known keys: {', '.join(sorted(SERVICE_KEYS))}")
        role = s.get("role", "store")
        if role not in ROLES:
            raise ServiceError(f"{key}.role", f"{role!r}: choose one of {', '.join(ROLES)} (store: a container the "
                                              "harness only starts, stops and cuts)")
        image = s.get("image")
        if image is not None and (not isinstance(image, str) or not image.strip()):
            raise ServiceError(f"{key}.image", "expected a non-empty string (omit it for the file's image)")
        count = s.get("count")
        if count is not None and (not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= MAX_COUNT):
            raise ServiceError(f"{key}.count", f"{count!r}: expected an integer between 1 and {MAX_COUNT}")
        port = s.get("port", ZOOKEEPER_PORT if role == "zookeeper" else None)
        if port is None:
            raise ServiceError(f"{key}.port", "missing: the port the service listens on inside its container "
                                              "(published on 127.0.0.1 for the harness)")
        if not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535:
            raise ServiceError(f"{key}.port", f"{port!r}: expected a port number")
        line = s.get("ready_log_line", "")
        if not isinstance(line, str):
            raise ServiceError(f"{key}.ready_log_line", "expected a string")
        txn_dir = s.get("txn_log_dir", ZOOKEEPER_TXN_LOG_DIR)
        if "txn_log_dir" in s and role != "zookeeper":
            raise ServiceError(f"{key}.txn_log_dir", "only a service of role zookeeper has a transaction log "
                                                     "the harness reads")
        if not isinstance(txn_dir, str) or not txn_dir.startswith("/") or txn_dir.rstrip("/") == "":
            raise ServiceError(f"{key}.txn_log_dir", f"{txn_dir!r}: expected an absolute directory inside the "
                                                     "container (ZooKeeper's dataLogDir, or its dataDir)")
        def check(k, text, svcs=tuple(names)):
            return check_template(k, text, SERVICE_PLACEHOLDERS, svcs)
        command = parse_command(f"{key}.command", s.get("command"), check)
        env = parse_env(f"{key}.env", s.get("env", {}), check)
        out.append(ServiceSpec(name=s["name"], role=role, image=image.strip() if image else None, command=command,
                               env=env, ready_log_line=line, count=count, port=port,
                               description=str(s.get("description", "")), txn_log_dir=txn_dir.rstrip("/")))
    zk = [s.name for s in out if s.role == "zookeeper"]
    if len(zk) > 1:
        raise ServiceError(f"service.{zk[1]}.role", f"zookeeper: service {zk[0]!r} has this role already; "
                                                    "a cluster has one ZooKeeper ensemble")
    return tuple(out)


# -- at run time ------------------------------------------------------------------------------------
class _Flat(string.Formatter):
    """``{service.zk.connect}`` looked up as one name (str.format would read attributes)."""

    def get_field(self, field_name, args, kwargs):
        return kwargs[field_name], field_name


def render(template: str, values: dict[str, str]) -> str:
    return _Flat().vformat(template, (), values)


def service_values(services: tuple[ServiceSpec, ...], zookeepers: int) -> dict[str, str]:
    """``service.<name>.<attr>`` of every service, for a cluster asking for ``zookeepers`` ZooKeeper servers."""
    out = {}
    for s in services:
        hosts = [f"{s.name}{i}" for i in range(1, s.nodes(zookeepers) + 1)]
        out.update({f"service.{s.name}.connect": ",".join(f"{h}:{s.port}" for h in hosts),
                    f"service.{s.name}.hosts": ",".join(hosts), f"service.{s.name}.host": hosts[0],
                    f"service.{s.name}.port": str(s.port)})
    return out


def node_groups(services: tuple[ServiceSpec, ...], zookeepers: int):
    """The services as node groups (started in file order, before the brokers)."""
    from harness.distributions.base import NodeGroup   # lazy: the parser above needs none of the adapters
    groups, stores = [], 0
    for s in services:
        if s.role == "zookeeper":
            offset = ZOOKEEPER_PORT_OFFSET
        else:
            offset, stores = STORE_PORT_OFFSET + 10 * stores, stores + 1
        groups.append(NodeGroup(s.node_role, tuple(range(1, s.nodes(zookeepers) + 1)), s.name, s.name, s.port, offset,
                                service=s.name, image=s.image, ready_log_line=s.ready_log_line))
    return groups


def plan_values(service: ServiceSpec, node, members, kafka_nodes, cluster_id: str | None,
                internal_port: int) -> dict[str, str]:
    """A service node's own placeholders (:data:`SERVICE_PLACEHOLDERS`)."""
    return {"id": str(node.node_id), "ids": ",".join(str(m.node_id) for m in members), "count": str(len(members)),
            "alias": node.alias, "port": str(service.port), "name": service.name,
            "node_ids": ",".join(str(n.node_id) for n in kafka_nodes),
            "broker_hosts": ",".join(n.alias for n in kafka_nodes), "internal_port": str(internal_port),
            "cluster_id": cluster_id or ""}


__all__ = ["ROLES", "SERVICE_PLACEHOLDERS", "ServiceError", "ServiceSpec", "check_template", "node_groups",
           "parse_services", "plan_values", "render", "service_values"]
