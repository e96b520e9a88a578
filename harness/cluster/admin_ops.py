"""Administrative operations on a running cluster: partition reassignment and preferred-leader election.

Each function does one act, is bounded in time and raises :class:`AdminOpError` with a message
saying what failed. Scenario scripts wrap them in ``ctx.action(...)`` so they land in the run record
(``reassign``, ``cancel_reassign``, ``elect_preferred``, ``set_config``; docs/run-record.md).

Everything here runs on the host and talks to the brokers through the protocol — the harness's
protocol client (:mod:`harness.protocol`) and confluent-kafka's ``AdminClient`` — so no scenario needs
Kafka's tools inside the broker image (an image without a JVM has none). Kafka's own tools, run in a
broker container, live in :mod:`harness.cluster.admin_tool`, for the scenarios whose subject is the tool.

Reassignment, as in seed 003 and spec §7 — what ``kafka-reassign-partitions`` does, done from the host
(the client-side computations are :mod:`harness.cluster.reassign_plan`'s, each naming the tool's method):

* :func:`reassign_generate` — ``--generate``: Metadata, then the tool's rack-unaware assignment with a
  start index drawn from a given ``random.Random`` (the tool's is unseeded);
* :func:`reassign_execute` — ``--execute [--throttle]``: ListPartitionReassignments (refuses while one is
  in progress, as the tool does without ``--additional``), Metadata (the tool's "Unknown broker id"
  check), with a throttle IncrementalAlterConfigs of the topic-level
  ``leader/follower.replication.throttled.replicas`` and the broker-level
  ``leader/follower.replication.throttled.rate``, then AlterPartitionReassignments;
* :func:`reassign_verify` — ``--verify``: ListPartitionReassignments + Metadata → per partition
  ``complete`` / ``in_progress`` / ``mismatch``; once nothing is reassigning, the throttles are cleared
  (:func:`clear_all_throttles`), as the tool does;
* :func:`reassign_cancel` — ``--cancel``: AlterPartitionReassignments with null targets (2.6+, §7.8),
  then the throttles cleared;
* :func:`reassign_list` — ``--list``: ListPartitionReassignments.

APIs used (docs/broker-contract.md): Metadata (3), ListPartitionReassignments (46),
AlterPartitionReassignments (45), IncrementalAlterConfigs (44, throttles only), ElectLeaders (43).
ListPartitionReassignments and AlterPartitionReassignments go to the controller (:func:`_to_controller`:
a ZooKeeper-mode broker that is not the controller answers NOT_CONTROLLER; KRaft brokers forward).

Besides the tool's flow:

* **AlterPartitionReassignments alone** (:func:`alter_reassignments`): the controller's own validation
  (§7.3, §9.6) per partition, without the tool's DescribeCluster check of the broker ids.
* **The legacy znode** ``/admin/reassign_partitions`` (spec §1.6, §7.2 trigger 2), written with kazoo:
  :func:`write_reassign_znode`. Every ZooKeeper-mode controller reacts to it (0.8 – 3.9); unlike the
  API path it performs no liveness validation (§7.3).

Preferred election (spec §4.3): :func:`elect_preferred` through the Admin API (ElectLeaders,
confluent-kafka's ``AdminClient.elect_leaders``); the tool is :func:`harness.cluster.admin_tool.elect_preferred_tool`.

Replication throttles: :func:`set_replication_throttle` / :func:`clear_replication_throttle` change
the broker-level ``leader/follower.replication.throttled.rate`` the tool's ``--throttle`` sets.

Observation helpers for verifying these acts: :func:`topic_assignment` (replicas, adding and removing
replicas now: the topic znode, or Metadata + ListPartitionReassignments without ZooKeeper) and
:func:`zk_writes_since` (what ZooKeeper's transaction log recorded after a given zxid). ZooKeeper-only
helpers raise :class:`~harness.errors.NotSupported` on KRaft, naming the helper to use instead.
"""

from __future__ import annotations

import json
import random
import time

from confluent_kafka import ElectionType, KafkaException, TopicPartition
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
from kazoo.exceptions import NodeExistsError, NoNodeError

from reference import versions

from harness.cluster import reassign_plan as rp
from harness.errors import AdminOpError, NotSupported  # AdminOpError: raised here and by the control plane
from harness.observer.zk_history import read_zk_history
from harness.protocol import ProtocolClient, ProtocolError

REASSIGN_ZNODE = "/admin/reassign_partitions"
THROTTLE_KEYS = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")



# ---------------------------------------------------------------------------- versions and plans
def kafka_version(cluster) -> tuple[int, ...] | None:
    """The cluster's Apache Kafka version as a tuple (e.g. ``(3, 9, 2)``), None for a foreign image."""
    return versions.parse_or_none(getattr(getattr(cluster, "image", None), "kafka_version", None))



def require_version(cluster, at_least: tuple[int, ...], what: str) -> None:
    """Raise AdminOpError if the cluster's Kafka is known to be older than ``at_least``."""
    v = kafka_version(cluster)
    if v is not None and v < at_least:
        raise AdminOpError(f"{what} needs Kafka {'.'.join(map(str, at_least))} or later; "
                           f"the cluster runs {'.'.join(map(str, v))}")


def supports_reassign_znode(cluster) -> bool:
    """True when the controller watches ``/admin/reassign_partitions`` (ZooKeeper mode, before 4.0)."""
    if not _zookeeper_nodes(cluster):
        return False
    v = kafka_version(cluster)
    return v is None or v < (4,)


def _zookeeper_nodes(cluster) -> bool:
    """The cluster runs ZooKeeper nodes (a bare stand-in without the attribute counts as one)."""
    return bool(getattr(cluster, "zookeepers", True))


def require_zookeeper(cluster, helper: str, instead: str) -> None:
    """Raise :class:`NotSupported` naming ``helper`` and ``instead`` when the cluster has no ZooKeeper."""
    if not _zookeeper_nodes(cluster):
        dist = getattr(getattr(cluster, "distribution", None), "name", "?")
        raise NotSupported(f"admin_ops.{helper} needs ZooKeeper; this cluster ({dist}) has none: use {instead}")


def make_plan(targets: dict[tuple[str, int], list[int]]) -> dict:
    """``{(topic, partition): [replicas]}`` → the reassignment JSON document the tool and the znode use.

    Raises AdminOpError on an empty plan, an empty or duplicate replica list, or a negative broker id
    (the checks the controller makes, spec §7.3, made here so the error names the partition).
    """
    if not targets:
        raise AdminOpError("a reassignment plan needs at least one partition")
    parts = []
    for (topic, p), replicas in sorted(targets.items()):
        reps = [int(r) for r in replicas]
        if not topic or int(p) < 0:
            raise AdminOpError(f"bad partition {topic!r}-{p!r} in the reassignment plan")
        if not reps or len(set(reps)) != len(reps) or min(reps) < 0:
            raise AdminOpError(f"{topic}-{p}: replicas {reps} must be non-empty, distinct and >= 0")
        parts.append({"topic": topic, "partition": int(p), "replicas": reps})
    return {"version": 1, "partitions": parts}


def plan_targets(plan: dict) -> dict[tuple[str, int], list[int]]:
    """The inverse of :func:`make_plan`."""
    try:
        return {(e["topic"], int(e["partition"])): [int(r) for r in e["replicas"]] for e in plan["partitions"]}
    except (KeyError, TypeError, ValueError) as e:
        raise AdminOpError(f"not a reassignment plan ({type(e).__name__}: {e}): {plan!r:.200}") from None


def action_params(plan: dict, **extra) -> dict:
    """``action`` event params for a plan (docs/run-record.md: ``{"partitions": [{topic, partition, replicas}]}``)."""
    return {"partitions": [dict(e) for e in plan["partitions"]], **extra}


def by_name(d: dict) -> dict:
    """``{(topic, partition): v}`` → ``{"topic-partition": v}`` (JSON-friendly, for event details)."""
    return {(f"{k[0]}-{k[1]}" if isinstance(k, tuple) else k): v for k, v in d.items()}


def _registered(cluster) -> list[int]:
    try:
        return sorted(cluster.registered_brokers())
    except Exception:
        return list(cluster.broker_ids)


class ReassignmentRefused(AdminOpError):
    """The controller refused a partition's reassignment (``error``: Kafka's error name, e.g.
    INVALID_REPLICA_ASSIGNMENT): an answer of the broker, not a harness failure."""

    def __init__(self, tp: tuple[str, int], error: str, message: str | None):
        super().__init__(f"{tp[0]}-{tp[1]}: {error}" + (f" ({message})" if message else ""))
        self.tp, self.error, self.message = tp, error, message


def alter_reassignment(cluster, topic: str, partition: int, replicas: list[int] | None, timeout_s: float = 30.0) -> None:
    """One partition through :func:`alter_reassignments`; raises :class:`ReassignmentRefused` when the
    controller refuses it (so a ``ctx.action`` records the refusal as a failed action)."""
    err, msg = alter_reassignments(cluster, {(topic, partition): replicas}, timeout_s)[(topic, partition)]
    if err is not None:
        raise ReassignmentRefused((topic, partition), err, msg)


def alter_reassignments(cluster, targets: dict[tuple[str, int], list[int] | None],
                        timeout_s: float = 30.0) -> dict[tuple[str, int], tuple[str | None, str | None]]:
    """AlterPartitionReassignments through the protocol, without the tool's own checks:
    ``{(topic, partition): replicas}`` (``None`` cancels) → ``{(topic, partition): (error name or None,
    the controller's message)}``.

    Sent to the controller (:func:`_to_controller`). Per-partition refusals (e.g.
    INVALID_REPLICA_ASSIGNMENT, §7.3, §9.6) are returned; no answer at all, or a request-level error,
    raises AdminOpError."""
    if not targets:
        raise AdminOpError("alter_reassignments needs at least one partition")
    for (t, p), reps in targets.items():
        if reps is not None and (not reps or len(set(reps)) != len(reps)):
            raise AdminOpError(f"{t}-{p}: replicas {reps} must be non-empty and distinct (None cancels)")
    res = _to_controller(cluster, lambda c: c.alter_partition_reassignments(targets, timeout_ms=int(timeout_s * 1000)),
                         "AlterPartitionReassignments", timeout_s)
    missing = [k for k in targets if k not in res.partitions]
    if missing:
        raise AdminOpError(f"AlterPartitionReassignments answered without {missing}: {res.partitions}")
    return {k: res.partitions[k] for k in targets}


def _to_controller(cluster, ask, what: str, timeout_s: float):
    """``ask(ProtocolClient)`` of the registered brokers in turn until one answers without a
    request-level error. A ZooKeeper-mode broker that is not the controller answers NOT_CONTROLLER:
    then the controller its Metadata names is asked (KRaft brokers forward AlterPartitionReassignments
    and ListPartitionReassignments to the active controller themselves). While no broker answers (a
    broker restarting, a controller failover) the rounds repeat, as Kafka's AdminClient retries, until
    ``timeout_s``; then AdminOpError."""
    def once(c: ProtocolClient, b: int, wait: float):
        res = ask(c)
        if res.error == "NOT_CONTROLLER":
            ctl = c.metadata([]).controller_id
            if ctl in cluster.brokers and ctl != b:
                with ProtocolClient.at(cluster.brokers[ctl].endpoint, timeout=wait,
                                    security=getattr(cluster, "security", None)) as cc:
                    res = ask(cc)
        return res
    return _each_broker(cluster, once, what, timeout_s)


def _each_broker(cluster, once, what: str, timeout_s: float):
    """``once(client, broker id, connection timeout)`` of each registered broker in turn, in rounds until
    ``timeout_s``, until an answer without a request-level ``error``; AdminOpError naming the last errors."""
    deadline = time.monotonic() + timeout_s
    while True:
        errors: list[str] = []
        for b in _registered(cluster) or list(cluster.broker_ids):
            wait = max(1.0, min(10.0, deadline - time.monotonic()))
            try:
                with ProtocolClient.at(cluster.brokers[b].endpoint, timeout=wait,
                                    security=getattr(cluster, "security", None)) as c:
                    res = once(c, b, wait)
            except ProtocolError as e:
                errors.append(str(e))
                continue
            if getattr(res, "error", None) is not None:
                errors.append(f"broker {b}: {res.error}" + (f" ({res.error_message})" if res.error_message else ""))
                continue
            return res
        if time.monotonic() >= deadline:
            raise AdminOpError(f"{what}: no broker answered within {timeout_s:.0f} s: {'; '.join(errors)[:400]}")
        time.sleep(0.5)


# ---------------------------------------------------------------------------- reassignment from the host
def reassign_list(cluster, partitions: list[tuple[str, int]] | None = None,
                  timeout_s: float = 30.0) -> dict[tuple[str, int], tuple[list[int], list[int], list[int]]]:
    """ListPartitionReassignments (all, or of ``partitions``): ``{(topic, p): (replicas, adding, removing)}``
    of the reassignments in progress ({}: none; what ``--list`` prints)."""
    topics = None
    if partitions is not None:
        topics = {}
        for t, p in partitions:
            topics.setdefault(t, []).append(int(p))
    res = _to_controller(cluster, lambda c: c.list_partition_reassignments(topics), "ListPartitionReassignments",
                         timeout_s)
    return {(r.topic, r.partition): (list(r.replicas), list(r.adding_replicas), list(r.removing_replicas))
            for r in res.partitions}


def _metadata(cluster, topics: list[str], timeout_s: float) -> tuple[dict[tuple[str, int], list[int]], list[int]]:
    """(``{(topic, p): replicas}`` of ``topics`` as Metadata lists them, the broker ids Metadata lists) from
    the first broker that answers (:func:`_each_broker`); a topic it does not know has no entries."""
    md = _each_broker(cluster, lambda c, b, w: c.metadata(list(topics)), f"Metadata of {topics}", timeout_s)
    current = {(t.name, p.partition): list(p.replicas) for t in md.topics if t.error is None and t.name
               for p in t.partitions}
    return current, sorted(br.node_id for br in md.brokers)


def _alter_configs(cluster, resources: list, what: str, timeout_s: float) -> None:
    """IncrementalAlterConfigs, one resource per request (librdkafka allows one BROKER resource per request)."""
    admin = cluster.admin()
    for res in resources:
        try:
            for fut in admin.incremental_alter_configs([res], request_timeout=timeout_s).values():
                fut.result(timeout=timeout_s + 5)
        except Exception as e:
            raise AdminOpError(f"{what}: altering the configs of {res.restype.name.lower()} {res.name} failed: "
                               f"{type(e).__name__}: {e}") from None


def _topic_configs(topic: str, values: dict[str, str | None]):
    return ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET if v is not None else AlterConfigOpType.DELETE)
        for k, v in values.items()])


def clear_all_throttles(cluster, targets: dict[tuple[str, int], list[int]], timeout_s: float = 30.0) -> list[int]:
    """What the tool's ``--verify`` (once nothing is reassigning) and ``--cancel`` do unless told
    ``--preserve-throttles`` (``clearAllThrottles``): delete the broker-level throttle rates on every
    broker Metadata lists and every target replica, and the topic-level throttled replicas of the
    plan's topics. Returns the brokers cleared."""
    _, listed = _metadata(cluster, [], timeout_s)
    brokers = rp.throttle_clear_brokers(listed, targets)
    clear_replication_throttle(cluster, brokers, timeout_s)
    _alter_configs(cluster, [_topic_configs(t, dict.fromkeys(rp.THROTTLED_REPLICAS_KEYS))
                             for t in sorted({t for t, _ in targets})], "clearing the throttled replicas", timeout_s)
    return brokers


def reassign_execute(cluster, plan: dict, *, throttle: int | None = None, additional: bool = False,
                     check_brokers: bool = True, timeout_s: float = 30.0) -> list[tuple[str, int]]:
    """Start the plan's reassignments from the host, as ``kafka-reassign-partitions --execute`` does
    (asynchronous: returns the partitions once the controller accepted them).

    Like the tool (``executeAssignment``): refuses while another reassignment is in progress unless
    ``additional``; with ``check_brokers`` refuses a target broker the cluster's Metadata does not list
    ("Unknown broker id", the tool's ``verifyBrokerIds`` against DescribeCluster; without it only the
    controller's own validation applies, §7.3, §9.6); with ``throttle`` (B/s) first sets the
    topic-level throttled replicas of the moves and both broker-level rates on every broker involved
    (IncrementalAlterConfigs, :mod:`harness.cluster.reassign_plan`); then AlterPartitionReassignments. A
    refused partition raises :class:`ReassignmentRefused` (the first, by topic and partition)."""
    targets = plan_targets(plan)
    if throttle is not None and int(throttle) < 1:
        raise AdminOpError(f"throttle {throttle} B/s: must be positive")
    ongoing = reassign_list(cluster, timeout_s=timeout_s)
    if ongoing and not additional:
        raise AdminOpError("cannot execute: a reassignment is in progress ("
                           f"{', '.join(f'{t}-{p}' for t, p in sorted(ongoing))[:200]}); pass additional=True")
    current, listed = _metadata(cluster, sorted({t for t, _ in targets}), timeout_s)
    unknown = sorted({b for reps in targets.values() for b in reps} - set(listed))
    if check_brokers and unknown:
        raise AdminOpError(f"Unknown broker id {unknown[0]}: not among the brokers the cluster lists {listed}")
    missing = sorted(set(targets) - set(current))
    if missing:
        raise AdminOpError(f"unable to find partition(s) {', '.join(f'{t}-{p}' for t, p in missing)} in Metadata")
    if throttle is not None:
        moves = rp.move_map(ongoing, targets, current)
        leader, follower = rp.throttled_replicas(moves)
        _alter_configs(cluster, [_topic_configs(t, {rp.THROTTLED_REPLICAS_KEYS[0]: leader[t],
                                                    rp.THROTTLED_REPLICAS_KEYS[1]: follower[t]})
                                 for t in sorted(leader)], "setting the throttled replicas", timeout_s)
        set_replication_throttle(cluster, int(throttle), rp.reassigning_brokers(moves), timeout_s)
    answers = alter_reassignments(cluster, targets, timeout_s)
    refused = sorted((tp, e) for tp, e in answers.items() if e[0] is not None)
    if refused:
        tp, (err, msg) = refused[0]
        raise ReassignmentRefused(tp, err, msg)
    return sorted(targets)


def reassign_verify(cluster, plan: dict, *, clear_throttles: bool = True,
                    timeout_s: float = 30.0) -> dict[tuple[str, int], str]:
    """The state of every partition of the plan, as ``--verify`` reports it (ListPartitionReassignments
    + Metadata; :func:`harness.cluster.reassign_plan.verify_states`): ``in_progress``, ``complete`` or
    ``mismatch``. Like the tool, once no reassignment at all is in progress it clears the throttles
    (:func:`clear_all_throttles`) unless ``clear_throttles`` is False (``--preserve-throttles``)."""
    targets = plan_targets(plan)
    ongoing = reassign_list(cluster, timeout_s=timeout_s)
    current, _ = _metadata(cluster, sorted({t for t, _ in targets}), timeout_s)
    states = rp.verify_states(targets, ongoing, current)
    if not ongoing and clear_throttles:
        clear_all_throttles(cluster, targets, timeout_s)
    return states


def reassign_cancel(cluster, plan: dict, *, clear_throttles: bool = True,
                    timeout_s: float = 30.0) -> list[tuple[str, int]]:
    """Cancel the in-flight reassignments of the plan's partitions (AlterPartitionReassignments with null
    targets, spec §7.8, §9.6), then clear the throttles as ``--cancel`` does unless ``clear_throttles``
    is False. Returns the partitions cancelled; raises when none of them is being reassigned ("None of
    the specified partition reassignments are active") or the controller refuses one.

    Unlike the tool of 3.7 – 3.9 (whose Java port lost a negation, KAFKA-14595, and skips reassignments
    that only add replicas) every listed reassignment of the plan is cancelled."""
    targets = plan_targets(plan)
    active = sorted(reassign_list(cluster, list(targets), timeout_s=timeout_s).keys() & set(targets))
    if not active:
        raise AdminOpError("none of the specified partition reassignments are active: "
                           f"{', '.join(f'{t}-{p}' for t, p in sorted(targets))[:200]}")
    answers = alter_reassignments(cluster, {tp: None for tp in active}, timeout_s)
    refused = sorted((tp, e) for tp, e in answers.items() if e[0] is not None)
    if refused:
        tp, (err, msg) = refused[0]
        raise ReassignmentRefused(tp, err, msg)
    if clear_throttles:
        clear_all_throttles(cluster, targets, timeout_s)
    return active


def reassign_generate(cluster, topics: list[str], brokers: list[int], rng: random.Random | None = None,
                      timeout_s: float = 30.0) -> tuple[dict, dict]:
    """(current assignment, proposed assignment) as plans for moving ``topics`` onto ``brokers``, computed on
    the host (read-only: Metadata). As ``--generate``: only the brokers of ``brokers`` the cluster
    lists are used, in the given order; :func:`harness.cluster.reassign_plan.generate` says how the start index
    differs (drawn from ``rng``; pass one seeded with the run's seed)."""
    if not topics or not brokers:
        raise AdminOpError("reassign_generate needs at least one topic and one broker")
    if len(set(brokers)) != len(brokers) or len(set(topics)) != len(topics):
        raise AdminOpError(f"duplicate entries in topics {topics} or brokers {brokers}")
    # a topic created just before may not be in the answering broker's metadata cache yet (spec §8.1):
    # asked again, bounded by timeout_s, before it counts as absent
    deadline = time.monotonic() + timeout_s
    while True:
        current, listed = _metadata(cluster, list(topics), max(1.0, deadline - time.monotonic()))
        absent = sorted(set(topics) - {t for t, _ in current})
        if not absent:
            break
        if time.monotonic() >= deadline:
            raise AdminOpError(f"topic(s) {absent} not found (Metadata, for {timeout_s:.0f} s)")
        time.sleep(0.3)
    use = [b for b in brokers if b in listed]
    return make_plan(current), make_plan(rp.generate(current, use, rng))


# ---------------------------------------------------------------------------- reassignment: the znode
def write_reassign_znode(cluster, plan: dict, timeout_s: float = 15.0) -> None:
    """Create ``/admin/reassign_partitions`` with the plan (legacy path, spec §1.6). Fails if the node
    already exists: a ZooKeeper-initiated reassignment is still in progress."""
    require_zookeeper(cluster, "write_reassign_znode",
                      "admin_ops.reassign_execute (AlterPartitionReassignments)")
    if not supports_reassign_znode(cluster):
        raise AdminOpError("this Kafka version has no ZooKeeper controller watching /admin/reassign_partitions")
    plan_targets(plan)
    data = json.dumps(plan).encode()
    try:
        cluster.zk().create_async(REASSIGN_ZNODE, data, makepath=True).get(timeout=timeout_s)
    except NodeExistsError:
        raise AdminOpError(f"{REASSIGN_ZNODE} already exists: a reassignment through the znode is in "
                           "progress") from None
    except Exception as e:
        raise AdminOpError(f"could not create {REASSIGN_ZNODE}: {type(e).__name__}: {e}") from None


def reassign_znode(cluster) -> list[dict] | None:
    """The entries of ``/admin/reassign_partitions`` now, None when the node does not exist."""
    require_zookeeper(cluster, "reassign_znode",
                      "admin_ops.reassign_list or admin_ops.topic_assignment (ongoing reassignments)")
    try:
        data, _ = cluster.zk().get(REASSIGN_ZNODE)
    except NoNodeError:
        return None
    return (json.loads(data) if data else {}).get("partitions") or []


# ---------------------------------------------------------------------------- preferred election
def elect_preferred(cluster, partitions: list[tuple[str, int]], timeout_s: float = 30.0) -> dict[tuple[str, int], str | None]:
    """ElectLeaders(PREFERRED) through the Admin API → ``{(topic, partition): None | error name}``.

    Per-partition errors are returned, not raised (``ELECTION_NOT_NEEDED`` when ``replicas[0]`` already
    leads, ``PREFERRED_LEADER_NOT_AVAILABLE`` when it is not online and in the ISR, spec §4.3); a failed
    request raises AdminOpError.
    """
    if not partitions:
        raise AdminOpError("elect_preferred needs at least one partition")
    tps = [TopicPartition(t, int(p)) for t, p in partitions]
    admin = cluster.admin()
    try:
        # no request_timeout / operation_timeout: confluent-kafka 2.16's binding rejects both keyword
        # arguments (SystemError "more argument specifiers than keyword list entries"); the defaults
        # follow the admin client's socket.timeout.ms, and the wait below is bounded anyway
        fut = admin.elect_leaders(ElectionType.PREFERRED, tps)
        res = fut.result(timeout=timeout_s + 5)
    except KafkaException as e:
        raise AdminOpError(f"ElectLeaders(PREFERRED) failed: {e.args[0].name() if e.args else e}") from None
    except Exception as e:
        raise AdminOpError(f"ElectLeaders(PREFERRED) failed: {type(e).__name__}: {e}") from None
    out: dict[tuple[str, int], str | None] = {}
    for tp, err in res.items():
        if err is None:
            out[(tp.topic, tp.partition)] = None
        else:
            ke = err.args[0] if isinstance(err, KafkaException) and err.args else err
            out[(tp.topic, tp.partition)] = ke.name() if hasattr(ke, "name") else str(ke)
    return out


# ---------------------------------------------------------------------------- throttles
def _alter_broker_configs(cluster, brokers: list[int], entries, timeout_s: float) -> None:
    admin = cluster.admin()
    for b in brokers:   # librdkafka allows one BROKER resource per request
        res = ConfigResource(ResourceType.BROKER, str(b), incremental_configs=entries)
        try:
            for fut in admin.incremental_alter_configs([res], request_timeout=timeout_s).values():
                fut.result(timeout=timeout_s + 5)
        except Exception as e:
            raise AdminOpError(f"altering configs of broker {b} failed: {type(e).__name__}: {e}") from None


def set_replication_throttle(cluster, rate: int, brokers: list[int] | None = None, timeout_s: float = 30.0) -> None:
    """Set both replication throttle rates (B/s) on ``brokers`` (default: the registered ones)."""
    if rate < 1:
        raise AdminOpError(f"throttle rate must be positive, not {rate}")
    entries = [ConfigEntry(k, str(int(rate)), incremental_operation=AlterConfigOpType.SET) for k in THROTTLE_KEYS]
    _alter_broker_configs(cluster, brokers or _registered(cluster), entries, timeout_s)


def clear_replication_throttle(cluster, brokers: list[int] | None = None, timeout_s: float = 30.0) -> None:
    """Remove the broker-level throttle rates (replication runs unthrottled again)."""
    entries = [ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE) for k in THROTTLE_KEYS]
    _alter_broker_configs(cluster, brokers or _registered(cluster), entries, timeout_s)


# ---------------------------------------------------------------------------- observation helpers
def topic_assignment(cluster, topic: str) -> dict[int, tuple[list[int], list[int], list[int]]]:
    """``{partition: (replicas, adding_replicas, removing_replicas)}`` of ``topic`` now ({} if no
    topic), as the cluster's control plane holds it: the topic znode with ZooKeeper, Metadata and
    ListPartitionReassignments over the protocol otherwise (:meth:`ControlPlane.topic_assignment`)."""
    return cluster.control.topic_assignment(topic)


def last_zxid(cluster) -> int:
    """The zxid of the newest ZooKeeper transaction (a marker to pass to :func:`zk_writes_since`):
    a ``sync`` makes the server answer with its last processed zxid."""
    require_zookeeper(cluster, "last_zxid", "cluster.control.history_marker() and writes_since() (the "
                      "controller's writes in either mode) or cluster.protocol_metadata()")
    return cluster.control.history_marker()


def zk_writes_since(cluster, zxid: int, types: tuple[str, ...] = ("zk.topic", "zk.partition_state",
                                                                 "zk.broker", "zk.controller_epoch",
                                                                 "zk.reassign_partitions")) -> list[dict]:
    """The ``zk.*`` events ZooKeeper's own transaction log holds after ``zxid`` (ground truth, in zxid
    order), read from the ZooKeeper containers now. Raises AdminOpError if no log is readable."""
    require_zookeeper(cluster, "zk_writes_since", "admin_ops.topic_assignment or cluster.protocol_metadata() "
                      "(the metadata log of a KRaft cluster is not read)")
    hist = read_zk_history(cluster)
    if hist is None:
        raise AdminOpError("no ZooKeeper transaction log could be read")
    return sorted((e for e in hist.events if e.get("type") in types and e.get("zxid", 0) > zxid),
                  key=lambda e: e["zxid"])


def wait_for(what: str, predicate, timeout_s: float, interval_s: float = 0.5):
    """Poll ``predicate`` (bounded); return its first truthy value or raise AdminOpError naming ``what``."""
    deadline = time.monotonic() + timeout_s
    last_err = None
    while True:
        try:
            v = predicate()
            if v:
                return v
        except AdminOpError as e:
            last_err = e
        if time.monotonic() >= deadline:
            raise AdminOpError(f"{what}: not reached within {timeout_s:.0f} s"
                               + (f" (last error: {last_err})" if last_err else ""))
        time.sleep(interval_s)
