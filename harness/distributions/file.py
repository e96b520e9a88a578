"""Distribution files: a broker that is not Apache Kafka described in TOML instead of Python
(docs/broker-contract.md; example docs/examples/kfake.toml).

A file is loaded and checked here (:func:`load`): every mistake is one :class:`DistributionFileError`
naming the file and the key. :class:`FileDistribution` is the adapter it becomes — a
:class:`harness.distributions.base.Distribution` like the built-in ones, named ``file:<absolute path>``
in run records (:func:`harness.distributions.resolve` loads it again from that name for ``--replay``);
child processes get ``--distribution-file`` (:meth:`FileDistribution.cli_args`). Readiness is "every node answers the Kafka
protocol" (:class:`FileControlPlane`), never "node ids 1..N are listed": which node ids the broker
reports is checked by the preflight (harness/certify/preflight.py), which says INCOMPATIBLE when they differ
from the declaration.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.distributions.capability_table import capability_names
from harness.distributions.control_plane import ProtocolControlPlane, ZkControlPlane, new_cluster_id
from harness.distributions import services as services_mod
from harness.distributions.base import (REPLICATED, SHARED_STORAGE, SINGLE_NODE, Distribution, NodePlan,
                                        property_env_name)
from harness.distributions.services import ServiceError, ServiceSpec, check_template, parse_command, parse_env
from harness.distributions.services import parse_services
from harness.distributions.services import render as render_template
from harness.errors import HarnessError, NeverServes
from harness.toml_file import TomlFileError, read_toml
from harness.protocol import ProtocolClient, ProtocolError

PREFIX = "file:"
LAYOUTS = (SINGLE_NODE, REPLICATED, SHARED_STORAGE)    # the layouts a file may declare (base.LAYOUTS)
PORTS = ("any", "contiguous")     # how the harness picks the nodes' published ports
# the placeholders a template may use (docs/broker-contract.md "Templates")
PLACEHOLDERS = ("node_id", "node_ids", "advertised_host", "port", "ports", "cluster_id", "alias", "internal_port")
ADVERTISED_HOST = "127.0.0.1"     # what every node advertises to clients: its port is published there
INTERNAL_PORT = 9093
SERVE_AFTER_READY_S = 30.0       # a node that logged its ready line must answer on its published port within this
_KNOWN_KEYS = {"name", "image", "layout", "nodes", "node_ids", "node_pool", "command", "env", "ready_log_line",
               "capabilities", "config", "config_env_prefix", "description", "ports", "metadata_log", "service"}


class DistributionFileError(HarnessError):
    """A distribution file that cannot be used; the message names the file and the key."""


@dataclass(frozen=True)
class DistributionSpec:
    """A loaded, checked distribution file."""
    path: Path
    name: str
    image: str
    layout: str
    node_ids: tuple[int, ...]          # the ids the broker reports: one container each (replicated), or all
                                       # in the one container of layout single-node; shared-storage:
                                       # the harness's names of the stateless brokers' containers
    command: tuple[str, ...] | None    # None: the image's own command
    env: dict[str, str] = field(default_factory=dict)
    ready_log_line: str = ""
    capabilities: tuple[str, ...] | None = None   # None: not restricted by the file
    config: dict[str, str] = field(default_factory=dict)
    config_env_prefix: str | None = None
    description: str = ""
    ports: str = "any"                 # "contiguous": consecutive host ports in node id order
    metadata_log: bool = False         # the nodes keep a KRaft __cluster_metadata-0 log under log.dirs
    services: tuple[ServiceSpec, ...] = ()   # [[service]]: containers started before the brokers
    node_pool: bool = False            # node_ids is a pool: a scenario's cluster runs the first ones it needs

    @property
    def zookeeper(self) -> ServiceSpec | None:
        """The service of role ``zookeeper`` (None: the brokers have no ZooKeeper)."""
        return next((s for s in self.services if s.role == "zookeeper"), None)


def _err(path: Path, key: str, what: str) -> DistributionFileError:
    e = DistributionFileError(f"distribution file {path}: {key}: {what}")
    e.key, e.what = key, what         # for `kafka-chaos validate`: FILE:LINE: KEY (harness/commands/validate.py)
    return e


def parse(path: Path, doc: dict, capability_names: tuple[str, ...] = ()) -> DistributionSpec:
    """Check a parsed TOML document (``capability_names``: the known capability ids, when checked)."""
    unknown = sorted(set(doc) - _KNOWN_KEYS)
    if unknown:
        raise _err(path, unknown[0], f"unknown key; known keys: {', '.join(sorted(_KNOWN_KEYS))}")
    for key in ("name", "image"):
        if key not in doc:
            raise _err(path, key, "missing (required)")
        if not isinstance(doc[key], str) or not doc[key].strip():
            raise _err(path, key, "expected a non-empty string")
    try:
        services = parse_services(doc.get("service"))
    except ServiceError as e:
        raise _err(path, e.key, e.what) from None
    names = tuple(sv.name for sv in services)
    name = doc["name"]
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]{0,40}", name):
        raise _err(path, "name", f"{name!r}: use lower-case letters, digits, '.', '_' and '-' (max 41)")
    layout = doc.get("layout", "replicated")
    if layout not in LAYOUTS:
        raise _err(path, "layout", f"{layout!r}: choose one of {', '.join(LAYOUTS)}")
    if "node_ids" in doc:
        ids = doc["node_ids"]
        if not isinstance(ids, list) or not ids or not all(isinstance(i, int) and not isinstance(i, bool)
                                                           for i in ids):
            raise _err(path, "node_ids", "expected a non-empty list of integers")
        if any(not 0 <= i <= 2**31 - 1 for i in ids):
            raise _err(path, "node_ids", "node ids are between 0 and 2147483647")
        if len(set(ids)) != len(ids):
            raise _err(path, "node_ids", f"{ids}: an id is listed twice")
        if "nodes" in doc and doc["nodes"] != len(ids):
            raise _err(path, "nodes", f"{doc['nodes']} nodes but node_ids lists {len(ids)}; give one of them")
        node_ids = tuple(ids)
    else:
        n = doc.get("nodes", 1 if layout == "single-node" else 3)
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 9:
            raise _err(path, "nodes", f"{n!r}: expected an integer between 1 and 9")
        node_ids = tuple(range(1, n + 1))
    if not 1 <= len(node_ids) <= 9:
        raise _err(path, "node_ids", "between 1 and 9 nodes")
    try:
        command = parse_command("command", doc.get("command"), lambda k, t: check_template(k, t, PLACEHOLDERS, names))
        env = parse_env("env", doc.get("env", {}), lambda k, t: check_template(k, t, PLACEHOLDERS, names))
    except ServiceError as e:
        raise _err(path, e.key, e.what) from None
    if layout == "single-node" and len(node_ids) > 1 and not any("{ports}" in t for t in (*(command or ()), *env.values())):
        raise _err(path, "env", f"layout single-node with {len(node_ids)} node ids: the one process listens on one "
                                f"port per node id; pass them with {{ports}} (comma separated, in the order of {{node_ids}}) "
                                f"in env or command")
    pool = doc.get("node_pool", False)
    if not isinstance(pool, bool):
        raise _err(path, "node_pool", f"{pool!r}: expected true or false")
    if pool and layout == "single-node":
        raise _err(path, "node_pool", "layout single-node runs one process serving every node id: it has no pool to "
                                      "take a scenario's nodes from")
    if layout == "shared-storage" and not any(sv.role == "store" for sv in services):
        raise _err(path, "layout", "shared-storage: stateless brokers keep their data in a store; declare it as a "
                                   "[[service]] (role \"store\") so the harness starts it and can fault it")
    caps = doc.get("capabilities")
    if caps is not None:
        if not isinstance(caps, list) or not all(isinstance(c, str) for c in caps):
            raise _err(path, "capabilities", "expected a list of capability names")
        for c in caps:
            if capability_names and c not in capability_names:
                raise _err(path, "capabilities", f"unknown capability {c!r}; known: {', '.join(capability_names)}")
        caps = tuple(caps)
    config = doc.get("config", {})
    if not isinstance(config, dict):
        raise _err(path, "config", "expected a table of broker properties")
    prefix = doc.get("config_env_prefix")
    if prefix is not None and (not isinstance(prefix, str) or not re.fullmatch(r"[A-Z][A-Z0-9_]*", prefix)):
        raise _err(path, "config_env_prefix", f"{prefix!r}: use upper-case letters, digits and '_'")
    ports = doc.get("ports", "any")
    if ports not in PORTS:
        raise _err(path, "ports", f"{ports!r}: choose one of {', '.join(PORTS)}")
    mlog = doc.get("metadata_log", False)
    if not isinstance(mlog, bool):
        raise _err(path, "metadata_log", f"{mlog!r}: expected true or false")
    if mlog and not str(config.get("log.dirs", "")).strip():
        raise _err(path, "metadata_log", "true needs config.\"log.dirs\": the directory whose "
                                         "__cluster_metadata-0 the harness reads")
    line = doc.get("ready_log_line", "")
    if not isinstance(line, str):
        raise _err(path, "ready_log_line", "expected a string")
    return DistributionSpec(path=path, name=name, image=doc["image"].strip(), layout=layout, node_ids=node_ids,
                            command=command, env=env, ready_log_line=line, capabilities=caps,
                            config={str(k): str(v) for k, v in config.items()}, config_env_prefix=prefix,
                            description=str(doc.get("description", "")), ports=ports,
                            metadata_log=mlog, services=services, node_pool=pool)


def load(path: str | Path, capability_names: tuple[str, ...] = ()) -> DistributionSpec:
    """Read and check one distribution file."""
    p = Path(path).expanduser().absolute()
    try:
        _text, doc = read_toml(p)
    except TomlFileError as e:
        what = e.what.replace("cannot read:", "cannot read it:", 1)
        raise DistributionFileError(f"distribution file {p}: {what}") from None
    return parse(p, doc, capability_names)


def render(template: str, **values) -> str:
    return render_template(template, values)


# -- the adapter ---------------------------------------------------------------------------------

class FileControlPlane(ProtocolControlPlane):
    """A broker described by a distribution file: readiness is each node answering ApiVersions and
    Metadata on its published port (whatever node ids it lists: the preflight judges those) and, when
    the file names one, its ready log line; the controller is DescribeQuorum's leader when the broker
    has that API, else the controller id Metadata reports."""

    def __init__(self, cluster):
        super().__init__(cluster)
        self._ready_unserved: dict[int, float] = {}   # node id -> when it was first seen ready but not serving

    def not_ready(self, want: set[int]) -> str | None:
        cl = self.cluster
        for b in sorted(want):
            node = cl.brokers[b]
            try:
                with ProtocolClient.at(node.endpoint, timeout=3.0, security=getattr(cl, "security", None)) as c:
                    c.api_versions()
                    c.metadata([])
            except ProtocolError as e:
                self._check_serves_after_ready(b, e)
                return f"{node.name} does not answer the Kafka protocol on {node.endpoint} yet ({e})"
            self._ready_unserved.pop(b, None)
            if not node.started():
                return f"{node.name} has not logged {cl.distribution.started_line(b)!r} yet"
        return None

    def _check_serves_after_ready(self, b: int, e: ProtocolError) -> None:
        """A node that logged its ready line (since its container last started) and still does not answer
        on its published port :data:`SERVE_AFTER_READY_S` later never will: raise NeverServes. Without a
        ready line in the file, the cluster's start timeout is the only bound."""
        node, line = self.cluster.brokers[b], self.cluster.distribution.started_line(b)
        if not line or not node.started():
            self._ready_unserved.pop(b, None)
            return
        first = self._ready_unserved.setdefault(b, time.monotonic())
        if time.monotonic() - first >= SERVE_AFTER_READY_S:
            raise NeverServes(f"{node.name} logged {line!r} but did not answer the Kafka protocol on its published "
                              f"port {node.endpoint} in the {SERVE_AFTER_READY_S:.0f} s after ({e}): "
                              f"the broker must listen on {{port}} ({node.client_port} here) inside its container")

    def active_controller(self) -> int | None:
        for ep in [self.cluster.brokers[b].endpoint for b in self.cluster.broker_ids]:
            try:
                with ProtocolClient.at(ep, timeout=5.0, security=getattr(self.cluster, "security", None)) as c:
                    if c.supports_describe_quorum():
                        q = c.describe_quorum()
                        return q.leader_id if q.error is None and q.leader_id >= 0 else None
                    cid = c.metadata([]).controller_id
                    return cid if cid is not None and cid >= 0 else None
            except ProtocolError:
                continue
        return None


class FileDistribution(Distribution):
    """The adapter of one distribution file (``name``: ``file:<absolute path>``).

    A file with a ``[[service]]`` of role ``zookeeper`` (harness/distributions/services.py) describes brokers
    that keep their control plane in ZooKeeper the way Apache Kafka's ZooKeeper mode does: it runs the
    ``zookeeper`` role, is observed through ZooKeeper (watch and transaction log), its readiness and
    restarts are ZooKeeper registrations (:class:`harness.distributions.control_plane.ZkControlPlane`) and it is judged
    by the ZooKeeper-mode controller model (profile ``compatible`` unless ``--profile`` names an
    ``apache-zk-<series>`` one)."""

    roles = ("broker",)
    controller_model = "kraft"       # judged by the protocol-observed rules; profile "compatible"
    observation = "protocol"
    metadata_log = False
    metadata_log_required = False
    foreign = True

    def __init__(self, path: str | Path):
        self.spec = load(path, tuple(capability_names()))
        self.name = PREFIX + str(self.spec.path)
        self.image = self.spec.image
        self.layout = self.spec.layout
        self.declared_capabilities = self.spec.capabilities
        self.contiguous_ports = self.spec.ports == "contiguous"
        # layout single-node: every declared node id is served by the one process of one container
        self.one_process = self.spec.layout == "single-node"
        # an Apache Kafka behind the broker (e.g. a proxy) keeps the KRaft metadata log the harness reads for
        # the controller's writes (harness/observer/kraft_history.py); unreadable: NotSupported
        self.metadata_log = self.spec.metadata_log
        self.services = self.spec.services
        if self.spec.zookeeper is not None:
            self.roles, self.controller_model, self.observation = ("broker", "zookeeper"), "zk", "zookeeper"
            self.zk_txn_log_dir = f"{self.spec.zookeeper.txn_log_dir}/version-2"
        self._zookeepers = 1     # the ensemble size the cluster asked for (node_groups)

    def control_plane(self, cluster):
        return ZkControlPlane(cluster) if self.spec.zookeeper is not None else FileControlPlane(cluster)

    def node_groups(self, spec) -> list:
        """The file's services, in file order (harness/distributions/services.py)."""
        self._zookeepers = spec.zookeepers
        return services_mod.node_groups(self.services, spec.zookeepers)

    def zookeeper_count(self, requested: int) -> int:
        zk = self.spec.zookeeper
        return zk.nodes(requested) if zk is not None else 0

    def aux_plan(self, group, node, members, common, kafka_nodes, cluster_id=None, extra_env=None):
        svc = next(s for s in self.services if s.name == group.service)
        values = {**services_mod.service_values(self.services, self._zookeepers),
                  **services_mod.plan_values(svc, node, members, kafka_nodes, cluster_id, INTERNAL_PORT)}
        env = {k: render(v, **values) for k, v in svc.env.items()}
        command = [render(c, **values) for c in svc.command] if svc.command else None
        return NodePlan(command, env, {})

    def broker_ids(self, requested: int) -> list[int]:
        """The node ids a cluster of ``requested`` brokers runs: every declared one, or with ``node_pool``
        the first ``requested`` of them (all when the pool is smaller: the scenario is then NOT-APPLICABLE,
        Scenario.not_applicable)."""
        # consecutive ports go to the nodes in node id order
        ids = sorted(self.spec.node_ids) if self.contiguous_ports else list(self.spec.node_ids)
        return ids[:max(1, requested)] if self.spec.node_pool else ids

    needs_preflight = True         # the file's contract is checked on a cluster before any scenario

    def cli_args(self) -> list[str]:
        """The file again, and that its preflight ran (a child does not start a cluster to check it again)."""
        return ["--distribution-file", str(self.spec.path), "--preflight-passed"]

    def check_image(self, image) -> None:
        return None

    def fits(self, kafka_version: str | None) -> None:
        return None

    def default_profile(self, kafka_version: str | None) -> str:
        return "compatible"

    def common_config(self, defaults, brokers, overrides):
        """What the broker is declared to run with: the file's ``config`` and the overrides (passed to
        the broker only through ``config_env_prefix``)."""
        cfg = dict(self.spec.config)
        cfg.update({k: str(v) for k, v in overrides.items()})
        return cfg

    def node_config(self, common, node, nodes, zookeeper_connect=""):
        return dict(common)

    def values(self, node, nodes, cluster_id: str | None) -> dict[str, str]:
        return {"node_id": str(node.node_id), "node_ids": ",".join(str(n.node_id) for n in nodes),
                "advertised_host": ADVERTISED_HOST, "port": str(node.host_port),
                "ports": ",".join(str(n.host_port) for n in nodes),     # in the order of {node_ids}
                "cluster_id": cluster_id or "", "alias": node.alias, "internal_port": str(INTERNAL_PORT),
                **services_mod.service_values(self.services, self._zookeepers)}

    def plan(self, common, node, nodes, zookeeper_connect="", cluster_id=None, extra_env=None):
        values = self.values(node, nodes, cluster_id)
        env = {k: render(v, **values) for k, v in self.spec.env.items()}
        if self.spec.config_env_prefix:
            for k, v in common.items():
                env[property_env_name(k, self.spec.config_env_prefix)] = v
        env.update(extra_env or {})
        command = [render(c, **values) for c in self.spec.command] if self.spec.command else None
        return NodePlan(command, env, self.node_config(common, node, nodes))

    def started_line(self, node_id: int) -> str:
        return self.spec.ready_log_line

    def describe(self) -> dict:
        return {**super().describe(), "file": str(self.spec.path), "vendor_name": self.spec.name,
                "layout": self.layout, "node_ids": list(self.spec.node_ids), "image": self.image,
                **({"services": [{"name": s.name, "role": s.role, "image": s.image or self.image}
                                 for s in self.services]} if self.services else {})}



__all__ = ["DistributionFileError", "DistributionSpec", "FileDistribution", "FileControlPlane", "load", "parse",
           "new_cluster_id"]
