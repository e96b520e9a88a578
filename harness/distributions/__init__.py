"""Distribution adapters: what differs between Kafka-compatible brokers when the harness starts one
node — which images it accepts, the node's configuration, how the container is started and
configured, which log line ends startup, whether the cluster has ZooKeeper and how its control plane
is observed (:meth:`Distribution.control_plane`, harness/cluster/control_plane.py).

Adapters (``ClusterSpec.distribution``):

``apache-zk`` (default)
    Apache Kafka in ZooKeeper mode from an image built by :mod:`harness.images` (2.x–3.9). The
    image's entrypoint runs ``broker`` with the properties in ``$KC_CONFIG``.
``apache-kraft``
    Apache Kafka in KRaft mode from the same images (3.3+; 4.x has only this mode). The first
    ``min(3, brokers)`` nodes (1 when fewer than 3) are combined ``broker,controller`` nodes and
    form the static quorum (``controller.quorum.voters``); the others are brokers only. The
    CONTROLLER listener (port 9094) exists on the Docker network only. The entrypoint's ``kraft``
    mode formats the storage with ``$KC_CLUSTER_ID`` (idempotent) and runs ``kafka.Kafka``.
``apache-kraft-dedicated`` (:mod:`harness.distributions.dedicated`)
    KRaft with a dedicated quorum: ``ClusterSpec.controllers`` controller-only nodes (ids 101, ...)
    besides the broker-only nodes 1..N.
``generic``
    A user-supplied image, configured by environment variables the way the official
    ``apache/kafka`` image is: every property ``a.b_c-d`` becomes ``KAFKA_A_B__C___D`` (prefix
    configurable), plus ``CLUSTER_ID``. The image's own entrypoint and command run. It gets the same
    KRaft configuration as ``apache-kraft``; readiness is judged by the protocol only (no log line).
    Properties are checked to read back unchanged through the official image's decoding
    (``kafka.docker.KafkaDockerWrapper``); docs/examples/official-style-image is such an image.

The nodes a cluster runs besides its brokers (a ZooKeeper ensemble, dedicated controllers) are the
adapter's :class:`NodeGroup` s (:meth:`Distribution.node_groups`, started by harness/cluster/node_groups.py).

Every broker has ``INTERNAL://broker<ID>:9093`` (inter-broker) and ``EXTERNAL://127.0.0.1:<P>``
published on 127.0.0.1:P, exactly as in ZooKeeper mode, so clients and faults see the same
addresses whatever the distribution.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field
from typing import Protocol

from reference import versions
from reference.profiles import profile_for

from harness.cluster.control_plane import ControlPlane, ProtocolControlPlane, ZkControlPlane, new_cluster_id
from harness.errors import HarnessError
from harness.cluster.node_settings import DEFAULT_ZK_CONFIG, ZK_CLIENT_PORT

INTERNAL_PORT = 9093
CONTROLLER_PORT = 9094
LABEL_DISTRIBUTION = "kafka-chaos.distribution"      # on containers (images carry the same key)
DEFAULT = "apache-zk"

# Settings that only mean something with ZooKeeper; left out of KRaft configs.
_ZK_ONLY_PREFIXES = ("zookeeper.",)
# KRaft timings: Kafka's own defaults (heartbeat every 2 s, a silent broker is fenced after 9 s;
# controller-spec §9.3). Shorter sessions made a loaded 2-core host fence live brokers ("controller
# event queue overloaded. Timed out heartbeat"). Override through ClusterSpec.broker_config.
KRAFT_DEFAULTS: dict[str, str] = {
    "broker.heartbeat.interval.ms": "2000",
    "broker.session.timeout.ms": "9000",
}


class NodeLike(Protocol):
    node_id: int
    alias: str
    host_port: int      # a node may also have ``role`` (broker, zookeeper, controller); broker when absent


def role_of(node: NodeLike) -> str:
    return getattr(node, "role", "broker")


@dataclass(frozen=True)
class NodeGroup:
    """Nodes of one role a distribution runs besides its brokers (:meth:`Distribution.node_groups`):
    a ZooKeeper ensemble, a dedicated KRaft controller quorum. The cluster starts them before the
    brokers, in this order, as containers ``kc-<cluster>-<prefix><id>`` reachable as ``<alias><id>``
    on the cluster network, with ``container_port`` published on 127.0.0.1 (harness/cluster/node_groups.py)."""
    role: str                       # the node's role (Node.role, the container's role label)
    ids: tuple[int, ...]
    prefix: str                     # container name: kc-<cluster>-<prefix><id>
    alias: str                      # network alias and host name: <alias><id>
    container_port: int             # the port inside the container published on a host port
    port_offset: int                # with ClusterSpec.port_base: host ports BASE+offset, BASE+offset+1, ...
    # a distribution file's service (harness/distributions/services.py): its name (the nodes' ``service``,
    # the container's service label), its own image (None: the cluster's) and the log line that ends its
    # startup (None: the distribution's started_line; the cluster waits for it before starting the brokers)
    service: str | None = None
    image: str | None = None
    ready_log_line: str | None = None

    @property
    def key(self) -> str:
        """What the cluster files the group's nodes under (``Cluster.aux_nodes``): the service name, else the role."""
        return self.service or self.role


@dataclass
class NodePlan:
    """How to run one node: container command (None = the image's default), environment, and the
    full server properties (kept for the record and for ``Cluster.attach``)."""
    command: str | None
    env: dict[str, str]
    config: dict[str, str]
    labels: dict[str, str] = field(default_factory=dict)


def properties_text(config: dict[str, str]) -> str:
    return "\n".join(f"{k}={v}" for k, v in config.items())


class Distribution:
    """Base adapter; subclasses say how one node of their kind is started."""

    name = ""
    # the kinds of node a cluster of this distribution runs besides brokers ("zookeeper": a ZooKeeper
    # ensemble; "controller": a KRaft quorum); scenarios and certify capabilities name the roles they
    # need (Scenario.not_applicable, harness.certify.capabilities.Capability.needs_role) instead of asking for a mode
    roles: tuple[str, ...] = ("broker", "controller")
    # which reference model describes this distribution's controller: "zk" (controller-spec §1-§8) or
    # "kraft" (§9); the profile a run is judged with follows from it (:meth:`profile`)
    controller_model = "kraft"
    observation = "protocol"      # how a run sees the control plane: harness/observer/source.py
    # the node keeps Apache Kafka's KRaft metadata log (__cluster_metadata-0) where the harness can read it
    # after the run (harness/observer/kraft_history.py); ``metadata_log_required`` False: look for it, and a
    # broker without one is told so (NotSupported) instead of failing the run as the environment
    metadata_log = False
    metadata_log_required = True
    # a broker that is not built here (generic, distribution files): no kafka-chaos JVM options, the
    # hardening limits of a foreign image (harness/node_settings.container_limits)
    foreign = False
    image: str | None = None      # the image a cluster runs when none is asked for (None: the Kafka image)
    layout = "replicated"         # docs/broker-contract.md "Layouts"
    # the brokers' host ports are consecutive in node id order (a proxy that maps node ids to ports from
    # one first port, e.g. Kroxylicious's portIdentifiesNode; distribution file key ``ports``)
    contiguous_ports = False
    # every broker node id is served by one process in one container (a distribution file's layout
    # single-node): a fault cannot reach one node id alone (Scenario.not_applicable, Nemesis.apply)
    one_process = False
    declared_capabilities: tuple[str, ...] | None = None    # None: every capability may apply
    # where a ZooKeeper node keeps its transaction log files (log.<zxid>): read after the run
    zk_txn_log_dir = "/var/lib/zookeeper/version-2"

    def broker_ids(self, requested: int) -> list[int]:
        """The node ids of the broker containers a cluster asking for ``requested`` brokers runs."""
        return list(range(1, requested + 1))

    def control_plane(self, cluster) -> ControlPlane:
        """How ``cluster`` (a :class:`harness.cluster.cluster.Cluster` of this distribution) is observed:
        registrations, controller, broker epochs, readiness (:mod:`harness.cluster.control_plane`)."""
        return ProtocolControlPlane(cluster)

    def node_groups(self, spec) -> list[NodeGroup]:
        """The nodes a cluster of ``spec`` (a :class:`harness.cluster.cluster.ClusterSpec`) runs besides the
        brokers (none: only brokers)."""
        return []

    def zookeeper_count(self, requested: int) -> int:
        """How many ZooKeeper servers a cluster asking for an ensemble of ``requested`` runs (0: none; a
        distribution file may fix the number: harness/distributions/services.py)."""
        return requested if "zookeeper" in self.roles else 0

    def aux_plan(self, group: NodeGroup, node: NodeLike, members: list[NodeLike], common: dict[str, str],
                 kafka_nodes: list[NodeLike], cluster_id: str | None = None,
                 extra_env: dict[str, str] | None = None) -> NodePlan:
        """How one node of ``group`` starts (``members``: the group's nodes; ``kafka_nodes``: every Kafka
        node, brokers and controllers; ``common``: :meth:`common_config`)."""
        raise HarnessError(f"distribution {self.name} runs no {group.role} nodes")

    def check_image(self, image) -> None:
        """Raise :class:`HarnessError` when ``image`` (an ``images.ImageInfo``) cannot run this way."""

    def common_config(self, defaults: dict[str, str], brokers: int, overrides: dict) -> dict[str, str]:
        """Properties shared by every node: the harness defaults, replication factors fitted to the
        cluster size, then the user's overrides (overrides win)."""
        rf = str(min(3, brokers))
        cfg = dict(defaults)
        cfg.update({"offsets.topic.replication.factor": rf, "transaction.state.log.replication.factor": rf,
                    "transaction.state.log.min.isr": "1", "default.replication.factor": rf})
        cfg.update({k: str(v) for k, v in overrides.items()})
        return cfg

    def node_config(self, common: dict[str, str], node: NodeLike, nodes: list[NodeLike],
                    zookeeper_connect: str = "") -> dict[str, str]:
        raise NotImplementedError

    def plan(self, common: dict[str, str], node: NodeLike, nodes: list[NodeLike], zookeeper_connect: str = "",
             cluster_id: str | None = None, extra_env: dict[str, str] | None = None) -> NodePlan:
        raise NotImplementedError

    def started_line(self, node_id: int) -> str:
        """The log line that ends a node's startup; "" when only the protocol tells (generic)."""
        return ""

    def describe(self) -> dict:
        return {"name": self.name, "roles": list(self.roles), "controller_model": self.controller_model}

    def default_profile(self, kafka_version: str | None) -> str:
        """The reference profile a run judges with when none is asked for: the Apache controller of
        this model and release series, or ``compatible`` when the version is unknown."""
        if not kafka_version:
            return "compatible"
        family = "apache-zk" if self.controller_model == "zk" else "kraft"
        return f"{family}-{versions.series_name(kafka_version)}"

    def profile(self, name: str | None, kafka_version: str | None, same_series: bool = True):
        """The reference profile ``name`` (None: :meth:`default_profile`) for a broker of this
        distribution running ``kafka_version``; HarnessError saying why when it cannot judge it (a
        profile of the other controller model; with ``same_series``, as certify asks, an Apache
        profile of another release series — a run may judge a broker by an older series' rules)."""
        try:
            prof = profile_for(kafka_version, name or self.default_profile(kafka_version),
                               kraft_run=self.controller_model == "kraft")
        except ValueError as e:
            raise HarnessError(str(e)) from None
        if prof.is_apache:
            if prof.mode != self.controller_model:
                what = {"zk": "the ZooKeeper-mode controller", "kraft": "the KRaft controller"}
                raise HarnessError(f"profile {prof.name} describes {what[prof.mode]}, but distribution "
                                   f"{self.name} runs {what[self.controller_model]}; use "
                                   f"{'--profile compatible' if prof.mode == 'zk' else 'an apache-zk-<major>.<minor> profile or compatible'}")
            if same_series and kafka_version and versions.series(kafka_version) != tuple(prof.version):
                family = prof.name.rsplit("-", 1)[0]
                series = versions.series_name(kafka_version)
                raise HarnessError(
                    f"profile {prof.name} certifies Apache Kafka {prof.version[0]}.{prof.version[1]}.x, but the "
                    f"broker is Kafka {kafka_version}; use --profile {family}-{series} or --profile compatible")
        return prof


def _listeners(node: NodeLike, controller: bool) -> dict[str, str]:
    listeners = f"INTERNAL://0.0.0.0:{INTERNAL_PORT},EXTERNAL://0.0.0.0:{node.host_port}"
    proto = "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT"
    if controller:
        listeners += f",CONTROLLER://0.0.0.0:{CONTROLLER_PORT}"
    return {
        "listeners": listeners,
        "advertised.listeners": f"INTERNAL://{node.alias}:{INTERNAL_PORT},EXTERNAL://127.0.0.1:{node.host_port}",
        "listener.security.protocol.map": proto + ",CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "INTERNAL",
    }


def controller_listeners() -> dict[str, str]:
    """A controller-only node: the CONTROLLER listener alone (Kafka refuses any other, and any
    advertised listener, with ``process.roles=controller``)."""
    return {"listeners": f"CONTROLLER://0.0.0.0:{CONTROLLER_PORT}",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT"}


class ApacheZk(Distribution):
    """Apache Kafka brokers registered in ZooKeeper (what ``harness/cluster/cluster.py`` always did)."""

    name = "apache-zk"
    roles = ("broker", "zookeeper")
    controller_model = "zk"
    observation = "zookeeper"

    def control_plane(self, cluster) -> ControlPlane:
        return ZkControlPlane(cluster)

    def node_groups(self, spec) -> list[NodeGroup]:
        """The ZooKeeper ensemble: ``spec.zookeepers`` servers ``kc-<name>-zk<N>`` (alias ``zk<N>``)."""
        return [NodeGroup("zookeeper", tuple(range(1, spec.zookeepers + 1)), "zk", "zk", ZK_CLIENT_PORT, 100)]

    def aux_plan(self, group, node, members, common, kafka_nodes, cluster_id=None, extra_env=None):
        cfg = dict(DEFAULT_ZK_CONFIG)
        if len(members) > 1:
            for other in members:
                cfg[f"server.{other.node_id}"] = f"{other.alias}:2888:3888"
        return NodePlan("zookeeper", {"KC_CONFIG": properties_text(cfg), "KC_ZK_MYID": str(node.node_id)}, cfg)

    def check_image(self, image) -> None:
        # 4.x images are labelled apache-kraft: say why they cannot run here before the generic refusal
        if image.kafka_version and versions.at_least(image.kafka_version, (4,)):
            raise HarnessError(f"Kafka {image.kafka_version} has no ZooKeeper mode; use --distribution apache-kraft")
        if image.distribution != "apache-zk":
            raise HarnessError(f"image {image.tag} is not a kafka-chaos Apache Kafka image; "
                               "run a foreign image with distribution 'generic'")

    def node_config(self, common, node, nodes, zookeeper_connect=""):
        cfg = dict(common)
        cfg.update({
            "broker.id": str(node.node_id),
            "listeners": f"INTERNAL://0.0.0.0:{INTERNAL_PORT},EXTERNAL://0.0.0.0:{node.host_port}",
            "advertised.listeners": f"INTERNAL://{node.alias}:{INTERNAL_PORT},EXTERNAL://127.0.0.1:{node.host_port}",
            "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
            "inter.broker.listener.name": "INTERNAL",
            "zookeeper.connect": zookeeper_connect,
        })
        return cfg

    def plan(self, common, node, nodes, zookeeper_connect="", cluster_id=None, extra_env=None):
        cfg = self.node_config(common, node, nodes, zookeeper_connect)
        return NodePlan("broker", {"KC_CONFIG": properties_text(cfg), **(extra_env or {})}, cfg)

    def started_line(self, node_id: int) -> str:
        return f"[KafkaServer id={node_id}] started"


class ApacheKraft(Distribution):
    """Apache Kafka in KRaft mode: combined broker+controller nodes forming the quorum."""

    name = "apache-kraft"
    metadata_log = True
    min_version = (3, 3)

    def check_image(self, image) -> None:
        if image.distribution not in ("apache-zk", "apache-kraft") or not image.kafka_version:
            raise HarnessError(f"image {image.tag} is not a kafka-chaos Apache Kafka image; "
                               "run a foreign image with distribution 'generic'")
        if versions.older_than(image.kafka_version, self.min_version):
            raise HarnessError(f"Kafka {image.kafka_version} has no production KRaft mode; use 3.3 or newer")

    @staticmethod
    def voter_ids(nodes: list[NodeLike]) -> list[int]:
        """The quorum: the first 3 nodes (by id), or only the first when there are fewer than 3."""
        ids = sorted(n.node_id for n in nodes)
        return ids[:3] if len(ids) >= 3 else ids[:1]

    def process_roles(self, node: NodeLike, voters: list[int]) -> str:
        """``process.roles`` of ``node``: combined on the voters, broker elsewhere."""
        return "broker,controller" if node.node_id in voters else "broker"

    def common_config(self, defaults, brokers, overrides):
        base = {k: v for k, v in defaults.items() if not k.startswith(_ZK_ONLY_PREFIXES)}
        base.update(KRAFT_DEFAULTS)
        return super().common_config(base, brokers, overrides)

    def node_config(self, common, node, nodes, zookeeper_connect=""):
        voters = self.voter_ids(nodes)
        by_id = {n.node_id: n for n in nodes}
        roles = self.process_roles(node, voters)
        cfg = dict(common)
        if roles == "controller":
            cfg.update(controller_listeners())
        else:
            cfg.update(_listeners(node, controller="controller" in roles))
        cfg.update({
            "node.id": str(node.node_id),
            "process.roles": roles,
            "controller.quorum.voters": ",".join(f"{v}@{by_id[v].alias}:{CONTROLLER_PORT}" for v in voters),
            "controller.listener.names": "CONTROLLER",
        })
        return cfg

    def plan(self, common, node, nodes, zookeeper_connect="", cluster_id=None, extra_env=None):
        if not cluster_id:
            raise HarnessError("a KRaft node needs a cluster id")
        cfg = self.node_config(common, node, nodes)
        env = {"KC_CONFIG": properties_text(cfg), "KC_CLUSTER_ID": cluster_id, **(extra_env or {})}
        return NodePlan("kraft", env, cfg)

    def started_line(self, node_id: int) -> str:
        return f"[KafkaRaftServer nodeId={node_id}] Kafka Server started"


def property_env_name(prop: str, prefix: str = "KAFKA_") -> str:
    """``log.dirs`` → ``KAFKA_LOG_DIRS``; '_' → '__' and '-' → '___' first (apache/kafka image rules)."""
    if not re.fullmatch(r"[A-Za-z0-9._-]+", prop):
        raise HarnessError(f"property {prop!r} cannot be passed as an environment variable")
    return prefix + prop.replace("_", "__").replace("-", "___").replace(".", "_").upper()


# Variables the official image's ``kafka.docker.KafkaDockerWrapper`` never writes to server.properties
# (JVM and log4j options: ``kafka.docker.Constants.ExcludeServerPropsEnv``, Kafka 3.7-3.9).
WRAPPER_EXCLUDED_ENV = frozenset({
    "KAFKA_VERSION", "KAFKA_HEAP_OPTS", "KAFKA_LOG4J_OPTS", "KAFKA_OPTS", "KAFKA_JMX_OPTS",
    "KAFKA_JVM_PERFORMANCE_OPTS", "KAFKA_GC_LOG_OPTS", "KAFKA_LOG4J_ROOT_LOGLEVEL", "KAFKA_LOG4J_LOGGERS",
    "KAFKA_TOOLS_LOG4J_LOGLEVEL", "KAFKA_JMX_HOSTNAME"})


def env_property_name(env: str, prefix: str = "KAFKA_") -> str | None:
    """The property the official image reads from variable ``env`` (None: not a broker property).

    This is ``KafkaDockerWrapper.getServerConfigsFromEnv``'s decoding, quirks included: *every*
    occurrence of the prefix is removed (so ``kafka.metrics.reporters`` cannot be set this way),
    then lower case, '_' → '.', '...' → '-', '..' → '_'.
    """
    if not env.startswith(prefix) or env in WRAPPER_EXCLUDED_ENV:
        return None
    return env.replace(prefix, "").lower().replace("_", ".").replace("...", "-").replace("..", "_")


class Generic(ApacheKraft):
    """Any image configured by environment variables; KRaft layout, readiness by protocol only."""

    name = "generic"
    foreign = True
    # an image built on Apache Kafka keeps the metadata log where the harness puts log.dirs; a vendor's
    # broker may keep none, and scenarios that read the controller's writes then say so (NotSupported)
    metadata_log = True
    metadata_log_required = False

    def __init__(self, env_prefix: str = "KAFKA_", cluster_id_env: str = "CLUSTER_ID"):
        if not re.fullmatch(r"[A-Z][A-Z0-9_]*", env_prefix):
            raise HarnessError(f"environment prefix {env_prefix!r}: use upper-case letters, digits and '_'")
        self.env_prefix, self.cluster_id_env = env_prefix, cluster_id_env

    def check_image(self, image) -> None:
        return None         # anything local; whether it answers is judged by readiness

    def plan(self, common, node, nodes, zookeeper_connect="", cluster_id=None, extra_env=None):
        cfg = self.node_config(common, node, nodes)
        env = {}
        for k, v in cfg.items():
            name = property_env_name(k, self.env_prefix)
            back = env_property_name(name, self.env_prefix)
            if back != k:
                raise HarnessError(f"property {k!r} cannot be passed to an image configured like apache/kafka: "
                                   f"{name} reads back as {back!r}")
            if "\n" in v or "\r" in v:
                raise HarnessError(f"property {k!r}: a value passed as an environment variable cannot span lines")
            env[name] = v
        env[self.cluster_id_env] = cluster_id or new_cluster_id()
        env.update(extra_env or {})
        return NodePlan(None, env, cfg)

    def started_line(self, node_id: int) -> str:
        return ""


_ADAPTERS = {"apache-zk": ApacheZk, "apache-kraft": ApacheKraft, "generic": Generic}
# Adapters in modules of their own (each names its class ``ADAPTER``), imported when first asked for: a
# new distribution is a module and a line here; the runner, the CLI and the scenarios take it from NAMES.
_MODULES = {"apache-kraft-dedicated": "harness.distributions.dedicated"}
NAMES = tuple(_ADAPTERS) + tuple(_MODULES)
# one line per adapter for the --distribution help of every command
CHOICES_HELP = ("apache-zk (default: ZooKeeper mode, observed through ZooKeeper), apache-kraft (KRaft: combined "
                "broker+controller nodes, observed through the Kafka protocol), apache-kraft-dedicated (KRaft "
                "with a dedicated quorum: controller-only nodes besides the brokers) or generic (a foreign image "
                "configured by KAFKA_* variables, KRaft)")


def get(name: str | None) -> Distribution:
    """The adapter called ``name`` (None: the default, ``apache-zk``)."""
    key = name or DEFAULT
    if key.startswith("file:"):         # a distribution file (harness/distributions/file.py)
        from harness.distributions.file import FileDistribution  # lazy: it imports this module
        return FileDistribution(key[len("file:"):])
    if key in _MODULES:
        return importlib.import_module(_MODULES[key]).ADAPTER()
    if key not in _ADAPTERS:
        raise HarnessError(f"unknown distribution {name!r}: choose one of {', '.join(NAMES)}")
    return _ADAPTERS[key]()
