"""The ``remote`` distribution: a cluster the harness does not start, named by a nodes file
(``--nodes FILE``, docs/remote.md; the file: harness/remote/nodes_file.py).

Its roles and controller model come from the file: KRaft when it names controllers (observed through the
Kafka protocol, ground truth the KRaft metadata log copied read-only from the nodes after the run),
ZooKeeper mode when it names a ZooKeeper ensemble. The cluster connects to the nodes instead of creating
containers (harness/cluster/remote_cluster.py); faults and observers reach them over SSH
(harness/remote/ssh.py). Its node ids are the file's, fixed: a scenario that needs more brokers than
the file names does not apply. The record names it ``remote:<absolute path of the file>``, which
:func:`harness.distributions.resolve` loads again (``run --replay``).
"""

from __future__ import annotations

from harness.distributions.base import COMBINED, DEDICATED_CONTROLLERS, REPLICATED, Distribution, role_of
from harness.distributions.control_plane import ProtocolControlPlane, ZkControlPlane
from types import SimpleNamespace

from harness.remote import nodes_file

PREFIX = "remote:"


class RemoteDistribution(Distribution):
    """The nodes of a nodes file, as a distribution adapter."""

    foreign = False
    metadata_log_required = True
    # the nodes run the user's configuration: a scenario that sets broker configuration does not apply
    # (applying it would change someone else's cluster; judging without it would judge the wrong thing)
    fixed_config = True
    foreign_hosts = True        # hosts the harness did not start: certify needs the owner's word (--i-own-this-cluster)

    def __init__(self, path: str):
        self.nodes = nodes_file.load(path)          # one line and exit 2 for any mistake in the file
        f = self.nodes
        self.name = PREFIX + str(f.path)
        self.roles = f.roles
        self.controller_model = f.controller_model
        self.observation = "zookeeper" if self.controller_model == "zk" else "protocol"
        self.metadata_log = self.controller_model == "kraft"
        brokers = {n.id for n in f.with_role("broker")}
        controllers = {n.id for n in f.with_role("controller")}
        if self.controller_model == "zk":
            self.layout = REPLICATED
        else:
            self.layout = COMBINED if controllers <= brokers else DEDICATED_CONTROLLERS
        # ZooKeeper keeps its transaction log in <dataDir>/version-2 (a zookeeper node's service.data_dir)
        self.zk_txn_log_dir = next((n.service.data_dir.rstrip("/") + "/version-2" for n in f.with_role("zookeeper")
                                    if n.service.data_dir), self.zk_txn_log_dir)

    @property
    def owner_confirmed(self) -> bool:
        return bool(self.nodes.owner_confirmed)

    @property
    def kafka_version(self) -> str | None:
        return self.nodes.kafka_version

    @property
    def cluster_name(self) -> str:
        return self.nodes.name

    def plan_nodes(self) -> list:
        """The nodes of the file as ``run --plan`` shows them, each with its SSH access (which connects to
        nothing until asked to act; its ``describe()`` renders the commands an operation would issue)."""
        from harness.remote.ssh import SshAccess      # lazy: paramiko
        out = []
        for rn in self.nodes.nodes:
            role = "zookeeper" if "zookeeper" in rn.roles else "broker" if "broker" in rn.roles else "controller"
            name = f"{self.nodes.name}-{'zk' if role == 'zookeeper' else 'n'}{rn.id}"
            port = rn.endpoint.port if rn.endpoint else rn.controller_port
            out.append(SimpleNamespace(role=role, node_id=rn.id, name=name, alias=name, host_port=port,
                                       endpoint=str(rn.endpoint) if rn.endpoint else "",
                                       client_port=rn.client_port or port, address=rn.address,
                                       access=SshAccess(rn, self.nodes.interface, None, "plan", name)))
        return out

    @property
    def path(self) -> str:
        return str(self.nodes.path)

    def cli_args(self) -> list[str]:
        return ["--nodes", self.path]

    def describe(self) -> dict:
        return {**super().describe(), "nodes_file": self.path, "cluster": self.nodes.name}

    def broker_ids(self, requested: int) -> list[int]:
        return sorted(n.id for n in self.nodes.with_role("broker"))

    def zookeeper_count(self, requested: int) -> int:
        return len(self.nodes.with_role("zookeeper"))

    def voter_ids(self, nodes) -> list[int]:
        ids = {n.id for n in self.nodes.with_role("controller")}
        return sorted(n.node_id for n in nodes if n.node_id in ids and role_of(n) in ("broker", "controller"))

    def control_plane(self, cluster):
        return ZkControlPlane(cluster) if self.controller_model == "zk" else ProtocolControlPlane(cluster)

    def started_line(self, node_id: int) -> str:
        n = next((n for n in self.nodes.nodes if n.id == node_id and "zookeeper" not in n.roles), None)
        return n.service.started_line if n is not None else ""

    def fits(self, kafka_version: str | None) -> None:
        """The nodes run what they run: nothing to refuse before connecting."""

    def check_image(self, image) -> None:
        """No image: the nodes' software is the user's."""

    def common_config(self, defaults, brokers, overrides):
        """Nothing is configured by the harness; what the run records is where the metadata log is."""
        d = next((n.service.metadata_log_dir or n.service.data_dir for n in self.nodes.nodes
                  if n.service.metadata_log_dir or n.service.data_dir), None)
        return {"metadata.log.dir": d} if d else {}
