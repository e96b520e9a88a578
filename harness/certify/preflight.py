"""Preflight: before any scenario of ``certify`` / ``run`` with a distribution file, start the
cluster once (within :data:`START_TIMEOUT_S`: a 3-node JVM cluster takes 20-40 s to start on a
shared 2-core machine; a node that logged the file's ready line but whose published port stays silent
for :data:`harness.distributions.file.SERVE_AFTER_READY_S` after is INCOMPATIBLE at once) and check the broker contract (docs/broker-contract.md) in at most about 30 s
after it is ready:

1. every node answers **ApiVersions** on its published port and advertises the APIs every scenario
   needs (:data:`REQUIRED_APIS`);
2. **Metadata** from every node: the node ids the broker reports are the ids the distribution declares,
   and each declared node is advertised at the address the harness publishes for it
   (``127.0.0.1:<port>``) — identity by advertised address and reported node id, never by numbering;
3. a **produce / consume round trip** on a fresh topic, and a **consumer group join** (its time is
   measured and reported).

A mismatch is :data:`INCOMPATIBLE` with one precise line (exit code :data:`EXIT_INCOMPATIBLE`); a
broker that passes gives the APIs it advertises, from which capabilities that need an API it lacks
become NOT-APPLICABLE (:func:`harness.certify.capabilities.plan`, ``advertised_apis``). Docker or image
problems are harness errors (exit 2), never INCOMPATIBLE.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import asdict, dataclass, field

from harness.clientlog import with_logger
from harness.cluster.cluster import Cluster, ClusterSpec
from harness.errors import EXIT_INCOMPATIBLE, ClusterError, HarnessError, NeverServes  # noqa: F401 - EXIT_INCOMPATIBLE re-exported
from harness.protocol import ProtocolClient, ProtocolError
from harness.distributions.base import SHARED_STORAGE, SINGLE_NODE, Distribution
from harness.record.verdicts import INCOMPATIBLE

BUDGET_S = 30.0             # the contract checks, from the moment the cluster is ready
START_TIMEOUT_S = 120.0     # starting the cluster (every node answering the protocol)
# the consumer group gets at least this long from its subscription, whatever is left of BUDGET_S: a JVM
# broker on a loaded machine may spend most of the budget creating the topic and the offsets topic
# (apache-kraft-4.toml: "no group support ... within 18 s" once at load 50, group joined in 2 s the next time)
GROUP_WAIT_S = 30.0

# Kafka API keys by name (the ones the contract and the capabilities talk about)
API_KEYS = {"Produce": 0, "Fetch": 1, "ListOffsets": 2, "Metadata": 3, "OffsetCommit": 8, "OffsetFetch": 9,
            "FindCoordinator": 10, "JoinGroup": 11, "Heartbeat": 12, "LeaveGroup": 13, "SyncGroup": 14,
            "ApiVersions": 18, "CreateTopics": 19, "DeleteTopics": 20, "InitProducerId": 22,
            "DescribeConfigs": 32, "AlterConfigs": 33, "CreatePartitions": 37, "ElectLeaders": 43,
            "IncrementalAlterConfigs": 44, "AlterPartitionReassignments": 45, "ListPartitionReassignments": 46,
            "DescribeQuorum": 55, "DescribeCluster": 60, "DescribeTopicPartitions": 75}
API_NAMES = {v: k for k, v in API_KEYS.items()}
# what every scenario's workload and setup use: without one of these the broker cannot be tested at all
REQUIRED_APIS = ("Produce", "Fetch", "ListOffsets", "Metadata", "OffsetCommit", "OffsetFetch", "FindCoordinator",
                 "JoinGroup", "Heartbeat", "SyncGroup", "LeaveGroup", "ApiVersions", "CreateTopics")


class Incompatible(HarnessError):
    """The broker does not fit the contract or its distribution file; the message is the one line."""


@dataclass
class PreflightResult:
    verdict: str                                 # PASS or INCOMPATIBLE
    line: str                                    # the one line (the mismatch, or a summary)
    seconds: float
    node_ids: list[int] = field(default_factory=list)
    advertised: dict[str, str] = field(default_factory=dict)      # node id -> host:port from Metadata
    api_keys: list[int] = field(default_factory=list)             # advertised by every node
    facts: dict = field(default_factory=dict)    # measured: ready_s, produce_ack_s, group_join_s, first_fetch_s

    @property
    def ok(self) -> bool:
        return self.verdict == "PASS"

    def to_dict(self) -> dict:
        return asdict(self)


def check_controller(asked: int, controller_id: int, listed: list) -> None:
    """Metadata's controller id must be a listed broker (or -1: none): admin clients send CreateTopics,
    DeleteTopics and CreatePartitions there."""
    ids = sorted(b.node_id for b in listed)
    if controller_id >= 0 and controller_id not in ids:
        raise Incompatible(f"Metadata (asked on node {asked}) reports controller id {controller_id}, which is not among "
                           f"its brokers {ids}: admin requests (CreateTopics, DeleteTopics) would go nowhere")


def check_identity(dist, published: dict[int, int], listed: dict[int, list]) -> None:
    """The contract on identity: ``listed``: per declared node id, the brokers its Metadata answer lists;
    ``published``: declared node id -> host port. Raises :class:`Incompatible` with the mismatch."""
    if dist.layout == SHARED_STORAGE:
        return check_shared_identity(published, listed)
    declared = sorted(published)
    reported = sorted({b.node_id for bs in listed.values() for b in bs})
    if reported != declared:
        if len(declared) > 1 and len(reported) < len(declared) and dist.layout != SINGLE_NODE:
            hint = "set node ids in the distribution file or use layout single-node"
        else:
            hint = f"set node_ids = {reported} in the distribution file"
        what = (f"{len(declared)} nodes" if len(declared) > 1 else f"node id {declared[0]}")
        raise Incompatible(f"Metadata lists node ids {reported}, the distribution declares {what}: {hint}")
    for nid, port in published.items():
        for asked, bs in listed.items():
            b = next(b for b in bs if b.node_id == nid)
            if (b.host, b.port) != ("127.0.0.1", port):
                raise Incompatible(
                    f"Metadata (asked on node {asked}) advertises node {nid} at {b.host}:{b.port}, but the harness "
                    f"publishes it at 127.0.0.1:{port}: advertise {{advertised_host}}:{{port}} in the distribution file")


def check_shared_identity(published: dict[int, int], listed: dict[int, list]) -> None:
    """Identity in layout shared-storage (stateless brokers over a store): the declared node ids name the
    harness's containers; a broker may report any node id, the same one on every node (Tansu: each broker
    is node 111, the leader of every partition, in its own answer). What must hold is that a client dials
    only what the harness publishes: every broker a Metadata answer lists is at ``127.0.0.1:<the port of
    a declared node>``, and no answer lists one node id at two addresses."""
    ports = {port: nid for nid, port in published.items()}
    for asked, bs in sorted(listed.items()):
        if not bs:
            raise Incompatible(f"Metadata (asked on node {asked}) lists no broker")
        seen: dict[int, tuple] = {}
        for b in bs:
            if b.host != "127.0.0.1" or b.port not in ports:
                raise Incompatible(
                    f"Metadata (asked on node {asked}) advertises node {b.node_id} at {b.host}:{b.port}, which the "
                    f"harness does not publish (it publishes 127.0.0.1:{', '.join(str(p) for p in sorted(ports))}): "
                    f"advertise {{advertised_host}}:{{port}} in the distribution file")
            if seen.setdefault(b.node_id, (b.host, b.port)) != (b.host, b.port):
                h, p = seen[b.node_id]
                raise Incompatible(f"Metadata (asked on node {asked}) lists node {b.node_id} twice, at {h}:{p} and "
                                   f"{b.host}:{b.port}: a client cannot tell which to dial")


def reported_ids(listed: dict[int, list]) -> dict[str, list[int]]:
    """Per declared node (the one asked), the node ids its Metadata answer lists (a preflight fact)."""
    return {str(asked): sorted({b.node_id for b in bs}) for asked, bs in sorted(listed.items())}


def check_apis(per_node: dict[int, set[int]]) -> list[int]:
    """The APIs every node advertises; Incompatible when one lacks a required API."""
    common = set.intersection(*per_node.values()) if per_node else set()
    for nid, keys in sorted(per_node.items()):
        missing = [n for n in REQUIRED_APIS if API_KEYS[n] not in keys]
        if missing:
            raise Incompatible(f"node {nid} does not advertise {', '.join(f'{n} ({API_KEYS[n]})' for n in missing)} "
                               "in ApiVersions; every scenario needs "
                               + ("it" if len(missing) == 1 else "them"))
    return sorted(common)


def _round_trip(cl: Cluster, deadline: float, facts: dict) -> None:
    """Produce one record, consume it in a consumer group (measuring the join and the first fetch)."""
    from confluent_kafka import Consumer, KafkaException, Producer   # lazy: librdkafka
    from confluent_kafka.admin import NewTopic

    def left() -> float:
        return max(0.5, deadline - time.monotonic())

    topic = f"kc-preflight-{uuid.uuid4().hex[:8]}"
    rf = min(3, len(cl.brokers))
    try:
        cl.admin().create_topics([NewTopic(topic, 1, rf)], operation_timeout=min(10, left()))[topic].result(
            timeout=min(10, left()))
    except KafkaException as e:
        raise Incompatible(f"CreateTopics of {topic} (1 partition, replication factor {rf}) failed: {e.args[0]}") from None
    except Exception as e:   # noqa: BLE001 - a timeout from the future
        raise Incompatible(f"CreateTopics of {topic} did not answer within {left():.0f} s: {e}") from None
    p = Producer(with_logger({**cl.client_config(), "acks": "all",
                              "message.timeout.ms": int(min(10, left()) * 1000)}))
    errs: list = []
    t0 = time.monotonic()
    p.produce(topic, b"preflight", on_delivery=lambda err, msg: errs.append(err))
    p.flush(min(10, left()))
    if not errs or errs[0] is not None:
        raise Incompatible(f"producing one record to {topic} (acks=all) failed: {errs[0] if errs else 'no answer'}")
    facts["produce_ack_s"] = round(time.monotonic() - t0, 2)
    joined: list[float] = []
    c = Consumer(with_logger({**cl.client_config(), "group.id": topic,
                              "auto.offset.reset": "earliest", "enable.auto.commit": False,
                              "session.timeout.ms": 6000, "heartbeat.interval.ms": 1000}))
    t1 = time.monotonic()
    group_deadline = max(deadline, t1 + GROUP_WAIT_S)
    try:
        c.subscribe([topic], on_assign=lambda *_: joined.append(time.monotonic() - t1))
        got = None
        while time.monotonic() < group_deadline and got is None:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got = m
        if not joined:
            raise Incompatible(f"no consumer group support: the group {topic} got no assignment "
                               f"(JoinGroup/SyncGroup) within {time.monotonic() - t1:.0f} s")
        facts["group_join_s"] = round(joined[0], 2)
        if got is None:
            raise Incompatible(f"the record produced to {topic} was not fetched by its consumer group within "
                               f"{time.monotonic() - t1:.0f} s (joined after {joined[0]:.1f} s)")
        facts["first_fetch_s"] = round(time.monotonic() - t1, 2)
        if got.value() != b"preflight":
            raise Incompatible(f"{topic}: fetched {got.value()!r}, produced b'preflight'")
        c.commit(message=got, asynchronous=False)
    finally:
        c.close()
    try:
        cl.delete_topic(topic, timeout_s=min(5, left()))
    except Exception:   # noqa: BLE001 - not part of the contract checked here
        pass


def check_cluster(cl: Cluster, deadline: float, facts: dict) -> tuple[dict, list[int], list[int]]:
    """The contract checks on a started cluster: (advertised, api keys, node ids)."""
    dist = cl.distribution
    published = {b: cl.brokers[b].host_port for b in cl.broker_ids}
    per_node: dict[int, set[int]] = {}
    listed: dict[int, list] = {}
    controllers: dict[int, int] = {}
    for b, port in published.items():
        try:
            with ProtocolClient(port=port, timeout=min(5.0, max(0.5, deadline - time.monotonic())),
                                security=getattr(cl, "security", None)) as c:
                per_node[b] = set(c.api_versions().versions)
                md = c.metadata([])
                listed[b] = md.brokers
                controllers[b] = md.controller_id
        except ProtocolError as e:
            raise Incompatible(f"node {b} stopped answering the Kafka protocol on 127.0.0.1:{port}: {e}") from None
    keys = check_apis(per_node)
    check_identity(dist, published, listed)
    for b, cid in controllers.items():
        check_controller(b, cid, listed[b])
    if dist.layout == SHARED_STORAGE:
        # each node may report the same id: the address each node advertises, by declared node id
        facts["reported_node_ids"] = reported_ids(listed)
        advertised = {str(b): ", ".join(sorted({f"{x.host}:{x.port}" for x in listed[b]})) for b in sorted(listed)}
    else:
        advertised = {str(x.node_id): f"{x.host}:{x.port}" for x in next(iter(listed.values()))}
    _round_trip(cl, deadline, facts)
    return advertised, keys, sorted(published)


def preflight(distribution: Distribution, image: str | None = None, budget_s: float = BUDGET_S, say=None) -> PreflightResult:
    """Start the distribution's cluster once (``image`` overrides the file's), check the contract, remove it."""
    t0 = time.monotonic()
    facts: dict = {}
    start_s = max(budget_s, START_TIMEOUT_S)
    spec = ClusterSpec(image=image, distribution=distribution, startup_timeout_s=start_s)
    cl = Cluster(spec)
    try:
        try:
            cl.start()
        except NeverServes as e:
            # it logged its ready line, yet its published port stayed silent
            raise Incompatible(str(e).splitlines()[0]) from None
        except ClusterError as e:
            # the broker never answered the protocol on its published port, or its container stopped
            first = str(e).splitlines()[0]
            raise Incompatible(f"the broker did not serve the Kafka protocol on its published port within "
                               f"{start_s:.0f} s: {first[:300]}") from None
        facts["ready_s"] = round(time.monotonic() - t0, 2)
        deadline = time.monotonic() + budget_s
        advertised, keys, ids = check_cluster(cl, deadline, facts)
        res = PreflightResult("PASS", f"{len(ids)} node(s) {ids} fit the contract; group joined in "
                                      f"{facts.get('group_join_s')} s", 0.0, ids, advertised, keys, facts)
    except Incompatible as e:
        res = PreflightResult(INCOMPATIBLE, str(e), 0.0, facts=facts)
    finally:
        cl.remove()
    res.seconds = round(time.monotonic() - t0, 1)
    return res
