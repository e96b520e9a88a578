"""The distribution adapter's base class and what every family shares: :class:`Distribution` (every
per-family field and method with its one default), :class:`NodeGroup`, :class:`NodePlan`, the listener
helpers, the layouts vocabulary and the ``apache/kafka`` environment-variable naming. The families are
modules beside this one (apache_zk, apache_kraft, dedicated, generic, file); the registry that turns a
command line into one adapter is the package (:func:`harness.distributions.resolve`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Protocol

from reference import versions
from reference.profiles import profile_for

from harness.distributions.control_plane import ControlPlane, ProtocolControlPlane
from harness.errors import HarnessError

INTERNAL_PORT = 9093
CONTROLLER_PORT = 9094
LABEL_DISTRIBUTION = "kafka-chaos.distribution"      # on containers (images carry the same key)
DEFAULT = "apache-kraft"         # the default distribution: KRaft (ZooKeeper mode: --distribution apache-zk)


# Layouts: how a distribution arranges its nodes (docs/broker-contract.md "Layouts", docs/kraft.md "Layouts");
# the one vocabulary of Distribution.layout, Scenario.layouts and a distribution file's ``layout`` key
REPLICATED = "replicated"                 # one container per broker node id, each owning its replicas
COMBINED = "combined"                     # KRaft: the quorum on combined broker+controller nodes
DEDICATED_CONTROLLERS = "dedicated-controllers"   # KRaft: a controller-only quorum beside the brokers
SINGLE_NODE = "single-node"               # every node id served by one process in one container
SHARED_STORAGE = "shared-storage"         # stateless brokers over a store
LAYOUTS = (REPLICATED, COMBINED, DEDICATED_CONTROLLERS, SINGLE_NODE, SHARED_STORAGE)

def version_key(kafka_version: str | None) -> tuple[int, int] | None:
    """``"3.9.2"`` -> (3, 9); None for an unknown or malformed version (``images.resolve_version`` says so)."""
    m = re.fullmatch(r"\s*(\d+)\.(\d+)(\.\d+)?\s*", kafka_version or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


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
    layout = REPLICATED           # one of LAYOUTS (docs/broker-contract.md "Layouts")
    # the brokers' host ports are consecutive in node id order (a proxy that maps node ids to ports from
    # one first port, e.g. Kroxylicious's portIdentifiesNode; distribution file key ``ports``)
    contiguous_ports = False
    # every broker node id is served by one process in one container (a distribution file's layout
    # single-node): a fault cannot reach one node id alone (Scenario.not_applicable, Nemesis.apply)
    one_process = False
    declared_capabilities: tuple[str, ...] | None = None    # None: every capability may apply
    # where a ZooKeeper node keeps its transaction log files (log.<zxid>): read after the run
    zk_txn_log_dir = "/var/lib/zookeeper/version-2"
    # the broker's contract is checked by a preflight cluster before any scenario runs (a distribution
    # file: harness/certify/preflight.py)
    needs_preflight = False
    # the nodes are hosts the harness did not start (a --nodes file): ``certify`` needs the owner's
    # confirmation (--i-own-this-cluster, or the file's ``owner_confirmed``: :attr:`owner_confirmed`)
    foreign_hosts = False
    owner_confirmed = False
    # the adapter formats the nodes' storage and sets feature levels there (``kafka-storage format --feature
    # NAME=LEVEL``: the Apache KRaft adapters); False: a cluster that asks for features is refused
    # (:meth:`features_problem`; docs/kraft.md "Feature levels")
    sets_features = False

    def cli_args(self) -> list[str]:
        """The arguments that give a child ``kafka-chaos run`` this same distribution."""
        return ["--distribution", self.name]

    def fits(self, kafka_version: str | None) -> None:
        """Raise :class:`HarnessError` when this distribution cannot run Apache Kafka ``kafka_version``
        (4.x in ZooKeeper mode, KRaft before 3.3); said before an image is built, in the same words as
        :meth:`check_image` (which covers any image). Unknown or malformed versions pass."""

    def features_problem(self, features: dict[str, int], kafka_version: str | None,
                         config: dict[str, str] | None = None) -> str | None:
        """Why a cluster of this distribution running ``kafka_version`` cannot be formatted with the feature
        levels ``features`` (None: it can, or none are asked), one line naming the key; ``config``: the
        nodes' configuration overrides (``unstable.feature.versions.enable`` allows testing levels)."""
        if not features:
            return None
        first = next(iter(features))
        return (f"features.{first}: distribution {self.name} cannot set feature levels (only the Apache KRaft "
                "adapters format the storage: apache-kraft, apache-kraft-dedicated, apache-kraft-dynamic)")

    def voter_ids(self, nodes: list[NodeLike]) -> list[int]:
        """The node ids of the KRaft quorum's voters among ``nodes`` (none known: not a quorum the harness set up)."""
        return []

    def broker_ids(self, requested: int) -> list[int]:
        """The node ids of the broker containers a cluster asking for ``requested`` brokers runs."""
        return list(range(1, requested + 1))

    def control_plane(self, cluster) -> ControlPlane:
        """How ``cluster`` (a :class:`harness.cluster.cluster.Cluster` of this distribution) is observed:
        registrations, controller, broker epochs, readiness (:mod:`harness.distributions.control_plane`)."""
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
        self.fits(image.kafka_version)

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


def listeners(node: NodeLike, controller: bool) -> dict[str, str]:
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


