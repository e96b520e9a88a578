"""A real ZooKeeper ensemble and Kafka brokers in Docker containers (testcontainers).

Each cluster gets its own Docker network ``kc-<name>``; containers are named ``kc-<name>-zk<N>`` and
``kc-<name>-b<ID>`` and reachable inside the network as ``zk<N>`` and ``broker<ID>``.

Listeners: ``INTERNAL://broker<ID>:9093`` for inter-broker traffic (never published) and
``EXTERNAL://127.0.0.1:<P>``: the broker listens on port P inside the container and P is published
on 127.0.0.1:P on the host, so the advertised address is exactly what a host client dials (the
advertised-listener trap). ZooKeeper's client port is published on 127.0.0.1 too.

Everything carries the label ``kafka-chaos=1`` plus the cluster name; clusters whose owner process
died are reaped by :func:`harness.cluster.cleanup.reap_orphans` (called whenever a cluster starts) and by
``kafka-chaos cleanup``.

Here: the cluster's assembly (spec, network and containers, readiness, topics, attaching to a running
cluster). Picking host ports: harness/cluster/host_ports.py. One node's container and its process-level
operations: harness/cluster/node.py; what each container starts with (configuration defaults, hardening
limits): harness/distributions/node_settings.py; listing and removing clusters by label: harness/cluster/cleanup.py.
"""

from __future__ import annotations

import os
import re
import secrets
from pathlib import Path
import sys
import time
from dataclasses import dataclass, field
from typing import Iterable

from harness import distributions, images
from harness.distributions.base import Distribution
from harness import docker_util
from harness.docker_util import without_ryuk
from harness.cluster import node_groups, remote_cluster
from harness.cluster.listener_security import ListenerSecurity, check_kafka_version, from_env, public_config
from harness.cluster.security import PLAINTEXT, Security
from harness.cluster.cleanup import labelled_containers, reap_orphans, remove_cluster
from harness.cluster.topics import TopicAdmin
from harness.docker_util import (LABEL, LABEL_CLUSTER, LABEL_NODE_ID, LABEL_NODE_PORTS, LABEL_OWNER_HOST,
                          LABEL_OWNER_PID, LABEL_OWNER_START, LABEL_PERSISTENT, LABEL_ROLE, LABEL_SERVICE)
from harness.errors import ClusterError, HarnessError
from harness.cluster.lifecycle import Shield
from harness.cluster.node import Node
from harness.distributions.node_settings import DEFAULT_BROKER_CONFIG
from harness.cluster.host_ports import _pick_ports, _port_taken
from harness.cluster.owner import this_owner
from harness.protocol import Endpoint, ProtocolError, first_answer
from harness.protocol.endpoint import join as join_endpoints


def _log(msg: str) -> None:
    if os.environ.get("KAFKA_CHAOS_QUIET") != "1":
        print(f"[cluster] {msg}", file=sys.stderr, flush=True)


@dataclass
class ClusterSpec:
    brokers: int = 3
    zookeepers: int = 1
    kafka_version: str | None = None
    image: str | None = None            # any local image; overrides kafka_version
    broker_config: dict[str, str] = field(default_factory=dict)
    name: str | None = None
    persistent: bool = False            # `cluster up`: survives the creating process
    port_base: int | None = None        # fixed host ports: brokers port_base+id, ZooKeeper port_base+100+n
    startup_timeout_s: float = 120.0
    build_missing: bool = False
    # the adapter (harness/distributions/); a name (None: apache-kraft) is resolved once, by validate()
    distribution: Distribution | str | None = None
    node_env: dict[str, str] = field(default_factory=dict)  # extra environment for every Kafka node
    controllers: int = 3                # apache-kraft-dedicated: controller-only nodes besides the brokers
    # the client-facing listener's security (harness/cluster/security.py, docs/security.md); None: PLAINTEXT
    security: Security | None = None
    # feature levels the storage is formatted with (``kafka-storage format --feature NAME=LEVEL``; the Apache
    # KRaft adapters only: Distribution.features_problem); empty: the release's defaults (docs/kraft.md)
    features: dict[str, int] = field(default_factory=dict)

    def validate(self) -> None:
        if not 1 <= self.brokers <= 9:
            raise HarnessError(f"--brokers must be between 1 and 9, not {self.brokers}")
        if self.zookeepers not in (1, 3, 5):
            raise HarnessError(f"--zookeepers must be 1, 3 or 5, not {self.zookeepers}")
        if self.controllers not in (1, 3, 5):
            raise HarnessError(f"--controllers must be 1, 3 or 5, not {self.controllers}")
        if self.name is not None and not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,30}", self.name):
            raise HarnessError(f"cluster name {self.name!r}: use lower-case letters, digits and '-' (max 31)")
        if self.port_base is not None and not 1024 <= self.port_base <= 65000:
            raise HarnessError(f"--port-base must be between 1024 and 65000, not {self.port_base}")
        if not isinstance(self.distribution, Distribution):   # unknown names fail here, with the choices
            self.distribution = distributions.resolve(self.distribution)
        if self.security is not None and not self.security.plaintext and self.distribution.foreign:
            raise HarnessError(f"--security {self.security.spec()}: distribution {self.distribution.name} runs a broker "
                               "the harness does not configure; TLS and SASL listeners need apache-zk, apache-kraft "
                               "or apache-kraft-dedicated (docs/security.md)")
        if self.features:
            why = self.distribution.features_problem(self.features, self._version(), self.broker_config)
            if why:
                raise HarnessError(why)

    def _version(self) -> str | None:
        """The Kafka version the spec names (``kafka_version``, else a kafka-chaos image tag's)."""
        if self.kafka_version:
            return self.kafka_version
        tag = self.image or ""
        return tag.split(":", 1)[1] if tag.startswith(images.KAFKA_REPO + ":") else None


# -- the cluster --------------------------------------------------------------------------------
class Cluster(TopicAdmin):
    """A running (or attachable) cluster. Use as a context manager, or ``start()`` / ``remove()``."""

    def __init__(self, spec: ClusterSpec | None = None):
        self.spec = spec or ClusterSpec()
        self.spec.validate()
        self.name = self.spec.name or f"t{secrets.token_hex(3)}"
        self.network_name = f"kc-{self.name}"
        # the nodes besides the brokers, by group (NodeGroup.key: the role, or a distribution file's service
        # name): ZooKeeper servers, dedicated controllers, service containers (harness/cluster/node_groups.py)
        self.aux_nodes: dict[str, list[Node]] = {}
        self.brokers: dict[int, Node] = {}
        self.image: images.ImageInfo | None = None
        self.broker_config: dict[str, str] = {}
        self.started = False
        self._admin = None
        self.distribution: Distribution = self.spec.distribution
        self.control = self.distribution.control_plane(self)   # harness/distributions/control_plane.py
        self.cluster_id: str | None = None          # KRaft cluster id (None in ZooKeeper mode)
        # how clients reach the brokers (credentials and CA file filled in once started; docs/security.md)
        self.security: Security = self.spec.security or PLAINTEXT
        if self.is_remote and self.distribution.nodes.client:   # a nodes file's [client] table
            nf = self.distribution.nodes        # file paths in it are relative to the nodes file
            client = {k: (str(Path(nf.path).parent / v) if k.endswith("_file") and isinstance(v, str) and v
                          and not Path(v).is_absolute() else v) for k, v in nf.client.items()}
            self.security = Security.from_mapping(client, f"{nf.path} [client]")
        self._listener_security: ListenerSecurity | None = None

    # ---- nodes and addresses
    @property
    def zookeepers(self) -> list[Node]:
        """The ZooKeeper servers ([] without ZooKeeper): the apache-zk ensemble, or a distribution file's
        service of role ``zookeeper``."""
        return self._aux_of_role("zookeeper")

    @property
    def controllers(self) -> list[Node]:
        """The controller-only KRaft nodes ([] unless the quorum is dedicated: apache-kraft-dedicated)."""
        return self._aux_of_role("controller")

    @property
    def services(self) -> list[Node]:
        """A distribution file's service containers of no role the harness knows (``role`` "service",
        e.g. an object store); a ``zookeeper`` service's nodes are :attr:`zookeepers`."""
        return self._aux_of_role("service")

    def _aux_of_role(self, role: str) -> list[Node]:
        return [n for ns in self.aux_nodes.values() for n in ns if n.role == role]

    def kafka_nodes(self) -> list[Node]:
        """Every Kafka node: the brokers, then the controller-only nodes."""
        return [self.brokers[b] for b in self.broker_ids] + list(self.controllers)

    @property
    def broker_ids(self) -> list[int]:
        return sorted(self.brokers)

    @property
    def bootstrap_servers(self) -> str:
        if self.is_remote:
            return self.distribution.nodes.bootstrap_servers
        return join_endpoints(self.brokers[b].endpoint for b in self.broker_ids)

    def client_config(self) -> dict:
        """THE configuration every client of this cluster starts from (confluent-kafka keys): the bootstrap
        servers and the listener's security (:meth:`harness.cluster.security.Security.client_config`)."""
        return {"bootstrap.servers": self.bootstrap_servers, **self.security.client_config()}

    @property
    def zookeeper_connect(self) -> str:
        return join_endpoints(z.endpoint for z in self.zookeepers)

    @property
    def internal_zookeeper_connect(self) -> str:
        return ",".join(f"{z.alias}:{z.client_port}" for z in self.zookeepers)

    def nodes(self) -> list[Node]:
        """Every node: the ZooKeeper servers, the brokers, the controllers, then the services."""
        return list(self.zookeepers) + self.kafka_nodes() + self.services

    def node(self, name: str) -> Node:
        for n in self.nodes():
            if name in (n.name, n.alias):
                return n
        raise KeyError(name)

    # ---- lifecycle
    def _labels(self, role: str | None = None, node_id: int | None = None) -> dict[str, str]:
        me = this_owner()
        labels = {LABEL: "1", LABEL_CLUSTER: self.name, LABEL_OWNER_PID: me["pid"],
                  LABEL_OWNER_HOST: me["host"], LABEL_OWNER_START: me["start"],
                  LABEL_PERSISTENT: "1" if self.spec.persistent else "0"}
        if role:
            labels[LABEL_ROLE] = role
            labels[LABEL_NODE_ID] = str(node_id)
        return labels

    @property
    def is_remote(self) -> bool:
        """Nodes the harness does not start (``--nodes FILE``: harness/cluster/remote_cluster.py)."""
        return getattr(self.distribution, "nodes", None) is not None

    def start(self) -> "Cluster":
        """Start the cluster and wait until it is ready. Picked host ports taken by someone else
        before Docker could publish them are picked again (up to 3 attempts). A nodes file's cluster
        is connected to and checked instead (harness/cluster/remote_cluster.py)."""
        if self.is_remote:
            remote_cluster.connect(self)
            return self
        for attempt in range(3):
            try:
                return self._start_once()
            except Exception as e:
                if self.spec.port_base is not None or attempt == 2 or not _port_taken(e):
                    raise
                _log(f"{self.name}: a picked host port was taken meanwhile ({str(e)[:160]}); new ports, again")
        raise AssertionError("unreachable")

    def _start_once(self) -> "Cluster":
        from testcontainers.core.container import DockerContainer  # lazy: testcontainers loads docker-py (0.4 s)
        from testcontainers.core.network import Network  # lazy: as above
        t0 = time.monotonic()
        client = docker_util.client()
        reap_orphans()
        self.image = images.image_for(self.spec.kafka_version, self.spec.image or self.distribution.image,
                                      build_missing=self.spec.build_missing, mode=self.distribution.controller_model)
        self.distribution.check_image(self.image)
        check_kafka_version(self.security, self.image.kafka_version)
        if client.networks.list(names=[self.network_name]) or labelled_containers(f"{LABEL_CLUSTER}={self.name}"):
            raise HarnessError(f"a cluster named {self.name!r} already exists; `kafka-chaos cluster down --name {self.name}` first")
        groups = self.distribution.node_groups(self.spec)
        self.aux_nodes = {g.key: node_groups.make_nodes(
            self.name, g, _pick_ports(len(g.ids), self.spec.port_base + g.port_offset if self.spec.port_base else None,
                                      g.role), self.distribution.started_line) for g in groups}
        ids = self.distribution.broker_ids(self.spec.brokers)     # 1..N unless the distribution declares its own
        b_ports = _pick_ports(len(ids), self.spec.port_base + 1 if self.spec.port_base else None, "broker",
                             contiguous=self.distribution.contiguous_ports)
        self.brokers = self._broker_nodes(ids, b_ports)
        self.cluster_id = self.control.new_cluster_id() or self.cluster_id
        try:
            if not self.security.plaintext:
                self._listener_security = ListenerSecurity.prepare(self.security, self.name)
                self.security = self._listener_security.security
            net = Network(docker_network_kw={"labels": self._labels(), "driver": "bridge"})
            net.name = self.network_name
            net.create()
            _log(f"{self.name}: starting {self._layout()} ({self.image.tag}, {self.distribution.name})")
            self.broker_config = self._broker_config_common()
            for g in groups:
                members = self.aux_nodes[g.key]
                for node in members:
                    plan = self.distribution.aux_plan(g, node, members, self.broker_config, self.kafka_nodes(),
                                                      self.cluster_id, self.spec.node_env, **self._features_kw())
                    with without_ryuk():
                        self._container(DockerContainer, net, node, plan, g.image).start()
            # a distribution file's services with a ready line serve before the brokers start
            node_groups.wait_services(self, groups, t0 + self.spec.startup_timeout_s)
            for node in self.broker_containers():
                with without_ryuk():
                    self._container(DockerContainer, net, node, self._node_plan(node)).start()
            if self._listener_security is not None:    # the SCRAM user, before any client connects
                self._listener_security.create_users(self, t0 + self.spec.startup_timeout_s)
            self.started = True
            self.wait_ready(self.spec.startup_timeout_s)
        except BaseException:
            with Shield(f"removing cluster {self.name}"):   # a second Ctrl-C must not leave it behind
                self.remove()
            raise
        _log(f"{self.name}: ready in {time.monotonic() - t0:.1f} s")
        return self

    def _features_kw(self) -> dict:
        """The feature levels for a node plan, passed only when asked for (an adapter that cannot set them
        was refused by ClusterSpec.validate and takes no such argument)."""
        return {"features": dict(self.spec.features)} if self.spec.features else {}

    def _progress(self, msg: str) -> None:
        _log(msg)

    def _layout(self) -> str:
        """What the cluster runs: "1 ZooKeeper + 3 brokers", "0 ZooKeeper + 3 brokers + 3 controllers"."""
        return " + ".join([f"{len(self.zookeepers)} ZooKeeper", f"{len(self.brokers)} brokers"] + [
            f"{len(ns)} {key}{'' if ns[0].service else 's'}" for key, ns in self.aux_nodes.items()
            if ns and ns[0].role != "zookeeper"])

    def _broker_nodes(self, ids: list[int], ports: list[int]) -> dict[int, Node]:
        """The broker nodes, node id -> Node, ``ports[i]`` for ``ids[i]``. A one-process broker (a
        distribution file's layout single-node) serving several node ids runs one container, named
        after the first id, which all its nodes name (each with its own port)."""
        home = {b: (ids[0] if self.distribution.one_process else b) for b in ids}
        return {b: Node(self.name, "broker", b, f"kc-{self.name}-b{home[b]}", f"broker{home[b]}",
                        ports[i], self.distribution.started_line(b)) for i, b in enumerate(ids)}

    def broker_containers(self) -> list[Node]:
        """One broker node per container, in node id order: every broker, except that the node ids a
        one-process broker serves share its container (:meth:`sharing`), given by the first of them."""
        out: list[Node] = []
        for b in self.broker_ids:
            if all(n.name != self.brokers[b].name for n in out):
                out.append(self.brokers[b])
        return out

    def sharing(self, node: Node) -> list[int]:
        """The broker node ids served by ``node``'s container (one process), in order; [] when that
        container serves only ``node``."""
        ids = [b for b in self.broker_ids if self.brokers[b].name == node.name]
        return ids if len(ids) > 1 else []

    def _container(self, cls, net, node: Node, plan: distributions.NodePlan, image: str | None = None):
        """The container of one node (harness/cluster/node_groups.py); ``plan``: the distribution's command,
        environment and configuration for it; ``image``: a service's own (None: the cluster's). A
        one-process broker's container publishes the ports of every node id it serves."""
        labels = self._labels(node.role, node.node_id)
        if node.role != "zookeeper" or node.service:
            labels[distributions.LABEL_DISTRIBUTION] = self.distribution.name
        if node.service:
            labels[LABEL_SERVICE] = node.service
        shared = self.sharing(node) if node.role == "broker" else []
        if shared:
            labels[LABEL_NODE_PORTS] = ",".join(f"{b}:{self.brokers[b].host_port}" for b in shared)
        more = tuple(self.brokers[b].client_port for b in shared if b != node.node_id)
        return node_groups.container(cls, image or self.image.tag, net, node, plan, labels,
                                     generic=self.distribution.foreign, more_ports=more)

    def _broker_config_common(self) -> dict[str, str]:
        return self.distribution.common_config(DEFAULT_BROKER_CONFIG, len(self.brokers), self.spec.broker_config)

    def runs_controller(self, node: Node) -> bool:
        """Whether ``node`` runs a KRaft controller (a dedicated controller node, or a Kafka node whose
        ``process.roles`` names one): it has a CONTROLLER listener."""
        if node.role in ("zookeeper", "service"):
            return False
        if node.role == "controller":
            return True
        if self.is_remote:
            return node.node_id in self.distribution.voter_ids([node])
        return "controller" in self._node_plan(node).config.get("process.roles", "")

    def _node_plan(self, node: Node) -> distributions.NodePlan:
        plan = self.distribution.plan(self.broker_config, node, self.kafka_nodes(),
                                      self.internal_zookeeper_connect, self.cluster_id, self.spec.node_env,
                                      **self._features_kw())
        return self._listener_security.apply(plan, node) if self._listener_security is not None else plan

    # ---- the control plane (harness/distributions/control_plane.py: ZooKeeper or the Kafka protocol)
    def zk(self):
        """A started kazoo client on the published ZooKeeper ports (shared; closed by remove()); a
        HarnessError without ZooKeeper."""
        return self.control.zk()

    def registered_brokers(self) -> set[int]:
        """Broker ids registered in ZooKeeper right now (children of /brokers/ids); without ZooKeeper,
        the brokers a Metadata response lists (KRaft: registered and not fenced)."""
        return self.control.registered_brokers()

    def _check_running(self, nodes: Iterable[Node]) -> None:
        for n in nodes:
            st = n.status()
            if st not in ("running", "paused"):
                raise ClusterError(f"{n.name} is {st}; last log lines:\n{n.logs(15)}")

    def wait_ready(self, timeout_s: float = 120.0, brokers: Iterable[int] | None = None) -> None:
        """Wait (bounded) until every broker is registered in ZooKeeper, visible in metadata and has
        finished its startup. Without ZooKeeper: until each broker answers Metadata listing all of
        them, the quorum has a leader (DescribeQuorum) and each finished its startup."""
        self.control.wait_ready(set(self.broker_ids if brokers is None else brokers), timeout_s)

    # ---- the protocol (leader epochs, KRaft quorum)
    def _protocol_endpoints(self, last: Iterable[int] = ()) -> list[Endpoint]:
        """The brokers' endpoints, running brokers first; the brokers in ``last`` after the others."""
        later = set(last)
        nodes = [self.brokers[b] for b in self.broker_ids]
        return [n.endpoint for n in sorted(nodes, key=lambda n: (n.node_id in later, n.status() != "running"))]

    def protocol_metadata(self, topics: list[str] | None = None, timeout_s: float = 5.0, last: Iterable[int] = ()):
        """A Metadata response (v7+, with leader epochs) from the first broker that answers
        (:class:`harness.protocol.MetadataResult`), the brokers in ``last`` asked only after the
        others; raises ProtocolError when none does."""
        return first_answer(self._protocol_endpoints(last), lambda c: c.metadata(topics), timeout_s,
                            security=self.security)[1]

    def quorum(self, timeout_s: float = 5.0, last: Iterable[int] = ()):
        """The KRaft metadata quorum (DescribeQuorum through the first broker that answers, those in
        ``last`` after the others): :class:`harness.protocol.QuorumInfo` with ``leader_id``,
        ``leader_epoch``, ``voters``."""
        return first_answer(self._protocol_endpoints(last), lambda c: c.describe_quorum(), timeout_s,
                            security=self.security)[1]

    def coordinator(self, key: str, key_type: str = "group", timeout_s: float = 3.0, last: Iterable[int] = ()):
        """The coordinator of group ``key`` (``key_type`` "group") or of transactional id ``key``
        ("transaction") by FindCoordinator: the first error-free answer of the brokers asked in turn
        (running ones first, those in ``last`` after the others: a broker cut off from the cluster still
        names itself) as ``(endpoint asked, harness.protocol.CoordinatorInfo)``; when every broker
        that answers names an error (the state partition has no leader now), the last such answer.
        Raises ProtocolError when none answers."""
        found = None                 # the last error answer, or the first ProtocolError
        for ep in self._protocol_endpoints(last):
            try:
                got = first_answer([ep], lambda c: c.find_coordinator(key, key_type), timeout_s,
                                   security=getattr(self, "security", None))
            except ProtocolError as e:
                found = found or e
                continue
            if got[1].error is None:
                return got
            found = got
        if found is None:
            raise ProtocolError("no broker endpoint to ask")
        if isinstance(found, ProtocolError):
            raise found
        return found

    def active_controller(self) -> int | None:
        """The controller: ZooKeeper ``/controller`` in ZooKeeper mode, the quorum leader in KRaft."""
        return self.control.active_controller()

    # ---- single-node operations (faults build on these)
    def kill_broker(self, broker_id: int) -> None:
        self.brokers[broker_id].kill()

    def stop_broker(self, broker_id: int, timeout: int = 60) -> None:
        self.brokers[broker_id].stop(timeout=timeout)

    def broker_epoch(self, broker_id: int) -> int | None:
        """czxid of /brokers/ids/<id> (the broker epoch), None when not registered. ZooKeeper mode
        only: a KRaft broker epoch is not exposed by client APIs."""
        return self.control.broker_epoch(broker_id)

    def zk_session_timeout_s(self) -> float:
        return self.control.session_timeout_s()

    def await_old_registration_gone(self, broker_id: int) -> None:
        """ZooKeeper mode, before starting a broker that is not running: wait (bounded by the session
        timeout + 10 s) until its previous ephemeral ``/brokers/ids/<id>`` is gone (see
        :meth:`harness.distributions.control_plane.ZkControlPlane.await_old_registration_gone`)."""
        self.control.await_old_registration_gone(broker_id)

    def start_broker(self, broker_id: int, wait: bool = True, timeout_s: float = 60.0, started=None) -> None:
        """Start a stopped/killed broker; ``started()`` (if given) is called as soon as Docker started
        its container. With ``wait``, until it registered anew (a new broker epoch; without
        ZooKeeper: until it finished startup and is listed in metadata again)."""
        before = self.control.before_start(broker_id, wait)
        self.brokers[broker_id].start()
        if started is not None:
            started()
        if not wait:
            return
        deadline = time.monotonic() + timeout_s
        self.control.await_registered_anew(broker_id, before, deadline, timeout_s)
        self.wait_ready(max(5.0, deadline - time.monotonic()), brokers=[broker_id])

    # ---- teardown
    def remove(self) -> None:
        """Remove every container and the network of this cluster (idempotent). A nodes file's cluster:
        its services keep running; what the run changed on the hosts is undone (remote_cluster.release)."""
        if self.is_remote:
            for err in self.delete_created_topics():
                _log(f"{self.name}: could not delete topic {err}")
        self.control.close()
        self._admin = None
        if self.is_remote:
            remote_cluster.release(self)
            self.started = False
            return
        remove_cluster(self.name, settle=not self.started)   # a completed start has no create in flight
        self.started = False

    def __enter__(self) -> "Cluster":
        return self.start() if not self.started else self

    def __exit__(self, *exc) -> None:
        self.remove()

    def describe(self) -> dict:
        return {"name": self.name, "image": self.image.tag if self.image else None,
                "kafka_version": self.image.kafka_version if self.image else None,
                "distribution": self.distribution.name, "cluster_id": self.cluster_id,
                "brokers": len(self.brokers), "zookeepers": len(self.zookeepers),
                **({"controllers": len(self.controllers)} if self.controllers else {}),
                "bootstrap_servers": self.bootstrap_servers, "zookeeper_connect": self.zookeeper_connect,
                "security": self.security.describe(), "broker_config": self.broker_config}

    # ---- attach to an existing cluster (CLI status/down, other processes)
    @classmethod
    def attach(cls, name: str) -> "Cluster":
        client = docker_util.client()
        cs = client.containers.list(all=True, filters={"label": f"{LABEL_CLUSTER}={name}"})
        if not cs:
            raise HarnessError(f"no cluster named {name!r} (see `kafka-chaos cluster status`)")
        c0 = cs[0]
        spec = ClusterSpec(name=name, persistent=c0.labels.get(LABEL_PERSISTENT) == "1")
        spec.brokers = max(1, sum(1 for c in cs if c.labels.get(LABEL_ROLE) == "broker"))
        spec.zookeepers = sum(1 for c in cs if c.labels.get(LABEL_ROLE) == "zookeeper") or 1
        spec.controllers = sum(1 for c in cs if c.labels.get(LABEL_ROLE) == "controller") or 3
        spec.distribution = next((c.labels[distributions.LABEL_DISTRIBUTION] for c in cs
                                  if distributions.LABEL_DISTRIBUTION in c.labels), None)
        cl = cls(spec)
        groups = {g.key: g for g in cl.distribution.node_groups(spec)}
        for c in cs:
            role, nid = c.labels.get(LABEL_ROLE), int(c.labels.get(LABEL_NODE_ID, "0"))
            key = c.labels.get(LABEL_SERVICE) or role
            ports = c.attrs["HostConfig"].get("PortBindings") or {}
            host_port = next((int(b[0]["HostPort"]) for b in ports.values() if b), 0)
            if key in groups:
                cl.aux_nodes.setdefault(key, []).append(node_groups.attached_node(
                    name, groups[key], nid, c.name, host_port, cl.distribution.started_line))
            elif role == "broker":
                # a one-process broker: every node id its container serves, each on its own port
                shared = [x.split(":") for x in c.labels.get(LABEL_NODE_PORTS, "").split(",") if x]
                for sid, sport in shared or [(nid, host_port)]:
                    cl.brokers[int(sid)] = Node(name, role, int(sid), c.name, f"broker{nid}", int(sport),
                                                cl.distribution.started_line(int(sid)))
                env = dict(e.split("=", 1) for e in c.attrs["Config"].get("Env", []) if "=" in e)
                cl.broker_config = public_config(dict(l.split("=", 1) for l in env.get("KC_CONFIG", "").splitlines()
                                                      if "=" in l))
                cl.security = from_env(env, name) or cl.security
                cl.cluster_id = env.get("KC_CLUSTER_ID") or env.get("CLUSTER_ID") or cl.cluster_id
        for ns in cl.aux_nodes.values():
            ns.sort(key=lambda n: n.node_id)
        try:
            cl.image = images.inspect(c0.image.tags[0] if c0.image.tags else c0.image.id)
        except HarnessError:
            cl.image = None
        cl.started = True
        return cl


