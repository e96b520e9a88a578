"""Administrative operations on a running cluster: partition reassignment and preferred-leader election.

Each function does one act, is bounded in time and raises :class:`AdminOpError` with a message
saying what failed. Scenario scripts wrap them in ``ctx.action(...)`` so they land in the run record
(``reassign``, ``cancel_reassign``, ``elect_preferred``, ``set_config``; docs/run-record.md).

Reassignment, as in seed 003 and spec §7:

* **Kafka's own tool** (``kafka-reassign-partitions``), run inside a broker container through the
  image's ``kafka-run-class`` (or Apache's ``bin/kafka-run-class.sh``, or ``java`` over
  ``/opt/kafka/libs``, in images not built here): :func:`reassign_generate` (``--generate``), :func:`reassign_execute`
  (``--execute``, optional ``--throttle``), :func:`reassign_verify` (``--verify``),
  :func:`reassign_cancel` (``--cancel``, 2.6+) and :func:`reassign_list` (``--list``, 2.6+). The
  tool's class is ``kafka.admin.ReassignPartitionsCommand`` up to 3.6 and
  ``org.apache.kafka.tools.reassign.ReassignPartitionsCommand`` from 3.7.
* **AlterPartitionReassignments directly** (:func:`alter_reassignments`, the harness's protocol client):
  the controller's own validation (§7.3, §9.6) per partition, which the tool hides behind its
  DescribeCluster check of the broker ids ("Unknown broker id").
* **The legacy znode** ``/admin/reassign_partitions`` (spec §1.6, §7.2 trigger 2), written with kazoo:
  :func:`write_reassign_znode`. Every ZooKeeper-mode controller reacts to it (0.8 – 3.9); unlike the
  API path it performs no liveness validation (§7.3).

Preferred election (spec §4.3): :func:`elect_preferred` through the Admin API (ElectLeaders,
confluent-kafka's ``AdminClient.elect_leaders``), or :func:`elect_preferred_tool`
(``kafka-leader-election``, ``LeaderElectionCommand``).

Replication throttles: :func:`set_replication_throttle` / :func:`clear_replication_throttle` change
the broker-level ``leader/follower.replication.throttled.rate`` the tool's ``--throttle`` sets.

Observation helpers for verifying these acts: :func:`topic_assignment` (replicas, adding and removing
replicas now: the topic znode, or Metadata + ListPartitionReassignments without ZooKeeper) and
:func:`zk_writes_since` (what ZooKeeper's transaction log recorded after a given zxid). ZooKeeper-only
helpers raise :class:`~harness.errors.NotSupported` on KRaft, naming the helper to use instead.
"""

from __future__ import annotations

import json
import shlex
import time
from dataclasses import dataclass

from confluent_kafka import ElectionType, KafkaException, TopicPartition
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
from kazoo.exceptions import NodeExistsError, NoNodeError

from reference import versions

from .errors import AdminOpError, NotSupported  # AdminOpError: raised here and by the control plane
from .observer.zk_history import read_zk_history
from .protocol import ProtocolClient, ProtocolError

RUN_CLASS = "/opt/kafka-chaos/kafka-run-class"
# How a tool's class is started in a broker container: the harness image's launcher; else the
# launcher of Apache's distribution layout (the official apache/kafka image has it); else plain java
# over the jars in /opt/kafka/libs (an image that has only the jars).
_LAUNCH = ('if [ -x {rc} ]; then exec {rc} "$@"; '
           'elif [ -x /opt/kafka/bin/kafka-run-class.sh ]; then exec /opt/kafka/bin/kafka-run-class.sh "$@"; '
           'else exec java -cp "/opt/kafka/libs/*" "$@"; fi').format(rc=RUN_CLASS)
REASSIGN_ZNODE = "/admin/reassign_partitions"
THROTTLE_KEYS = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
INTERNAL_PORT = 9093
# a tool is a short-lived JVM: the C1 compiler alone and the serial collector start it about 40 %
# faster (measured 3.8 s → 2.1 s for ``--help`` in the 3.9.2 image), which matters on a loaded host
TOOL_JVM_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

_TOOL_CLASSES = {
    # tool: (class up to 3.6, class from 3.7 on)
    "reassign": ("kafka.admin.ReassignPartitionsCommand",
                 "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"),
    "elect": ("kafka.admin.LeaderElectionCommand", "org.apache.kafka.tools.LeaderElectionCommand"),
}


# ---------------------------------------------------------------------------- versions and plans
def kafka_version(cluster) -> tuple[int, ...] | None:
    """The cluster's Apache Kafka version as a tuple (e.g. ``(3, 9, 2)``), None for a foreign image."""
    return versions.parse_or_none(getattr(getattr(cluster, "image", None), "kafka_version", None))


def tool_class(cluster, tool: str) -> str:
    """The Java class of ``tool`` (``reassign`` or ``elect``) for the cluster's Kafka version."""
    if tool not in _TOOL_CLASSES:
        raise AdminOpError(f"unknown tool {tool!r}; known: {sorted(_TOOL_CLASSES)}")
    v = kafka_version(cluster)
    old, new = _TOOL_CLASSES[tool]
    return new if v is None or v >= (3, 7) else old


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


# ---------------------------------------------------------------------------- running a tool
@dataclass
class ToolResult:
    exit_code: int
    output: str
    broker: int         # the container it ran in


def _registered(cluster) -> list[int]:
    try:
        return sorted(cluster.registered_brokers())
    except Exception:
        return list(cluster.broker_ids)


def run_tool(cluster, tool: str, args: list[str], *, timeout_s: float = 90.0, avoid: tuple[int, ...] = (),
             check: bool = True) -> ToolResult:
    """Run a Kafka admin tool inside a running broker container (not one of ``avoid``), with
    ``--bootstrap-server`` set to the internal listeners of the registered brokers.

    Bounded by ``timeout`` inside the container. ``check``: raise AdminOpError on a non-zero exit.
    """
    live = _registered(cluster)
    hosts = [b for b in live if b not in avoid] or live
    node = next((cluster.brokers[b] for b in hosts if cluster.brokers[b].status() == "running"), None)
    if node is None:
        raise AdminOpError(f"no running broker container to run the {tool} tool in (registered: {live})")
    bootstrap = ",".join(f"{cluster.brokers[b].alias}:{INTERNAL_PORT}" for b in (live or cluster.broker_ids))
    cmd = ["env", f"JAVA_TOOL_OPTIONS={TOOL_JVM_OPTS}", "timeout", "-k", "5", str(int(timeout_s)),
           "sh", "-c", _LAUNCH, "kafka-tool", tool_class(cluster, tool), "--bootstrap-server", bootstrap, *args]
    code, out = node.exec(cmd)
    if code in (124, 137):
        raise AdminOpError(f"{tool} tool timed out after {timeout_s:.0f} s in {node.name}: "
                           f"{' '.join(args)}; output: {out.strip()[-300:]}")
    if check and code != 0:
        raise AdminOpError(f"{tool} tool failed (exit {code}) in {node.name}: {' '.join(args)}: "
                           f"{_tail(out)}")
    return ToolResult(code, out, node.node_id)


def _tail(out: str, n: int = 400) -> str:
    lines = [ln for ln in out.strip().splitlines() if ln.strip() and not ln.startswith("\tat ")]
    return " | ".join(lines)[-n:]


def _put_file(cluster, broker: int, path: str, text: str) -> None:
    code, out = cluster.brokers[broker].exec(["sh", "-c", f"cat > {shlex.quote(path)} <<'KC_EOF'\n{text}\nKC_EOF"])
    if code != 0:
        raise AdminOpError(f"could not write {path} in broker {broker}'s container: {out.strip()[:200]}")


def _run_with_file(cluster, tool: str, path: str, doc: dict, args: list[str], **kw) -> ToolResult:
    """Write ``doc`` as JSON to ``path`` in every running registered broker container, then run the tool
    (the tool may land in any of them)."""
    text = json.dumps(doc)
    for b in _registered(cluster):
        if b not in kw.get("avoid", ()) and cluster.brokers[b].status() == "running":
            _put_file(cluster, b, path, text)
    return run_tool(cluster, tool, args, **kw)


def _json_after(out: str, heading: str) -> dict:
    lines = out.splitlines()
    for i, ln in enumerate(lines):
        if ln.strip().startswith(heading):
            for nxt in lines[i + 1:]:
                if nxt.strip().startswith("{"):
                    try:
                        return json.loads(nxt)
                    except json.JSONDecodeError as e:
                        raise AdminOpError(f"tool printed unreadable JSON after {heading!r}: {e}") from None
    raise AdminOpError(f"tool output has no JSON after {heading!r}: {_tail(out)}")


# ---------------------------------------------------------------------------- reassignment: the tool
def reassign_generate(cluster, topics: list[str], brokers: list[int], timeout_s: float = 90.0) -> tuple[dict, dict]:
    """``--generate``: (current assignment, proposed assignment) for moving ``topics`` onto ``brokers``."""
    if not topics or not brokers:
        raise AdminOpError("reassign_generate needs at least one topic and one broker")
    doc = {"version": 1, "topics": [{"topic": t} for t in topics]}
    res = _run_with_file(cluster, "reassign", "/tmp/kc-topics-to-move.json", doc,
                         ["--generate", "--topics-to-move-json-file", "/tmp/kc-topics-to-move.json",
                          "--broker-list", ",".join(str(b) for b in brokers)], timeout_s=timeout_s)
    return (_json_after(res.output, "Current partition replica assignment"),
            _json_after(res.output, "Proposed partition reassignment configuration"))


def reassign_execute(cluster, plan: dict, *, throttle: int | None = None, additional: bool = False,
                     timeout_s: float = 90.0, avoid: tuple[int, ...] = ()) -> str:
    """``--execute`` the plan (asynchronous: returns once the controller accepted it); ``throttle`` in B/s.

    A rejection (e.g. a target broker that is not alive, spec §7.3) raises AdminOpError.
    """
    plan_targets(plan)
    args = ["--execute", "--reassignment-json-file", "/tmp/kc-reassign.json"]
    if throttle is not None:
        if throttle < 1000:
            raise AdminOpError(f"throttle {throttle} B/s: the tool wants at least 1000 B/s")
        args += ["--throttle", str(int(throttle))]
    if additional:
        require_version(cluster, (2, 6), "--additional")
        args.append("--additional")
    res = _run_with_file(cluster, "reassign", "/tmp/kc-reassign.json", plan, args, timeout_s=timeout_s, avoid=avoid)
    if "Successfully started" not in res.output:
        raise AdminOpError(f"reassignment not started: {_tail(res.output)}")
    return res.output


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

    Asks the registered brokers in turn; a ZooKeeper-mode broker that is not the controller answers
    NOT_CONTROLLER, then the controller its Metadata names is asked (KRaft brokers forward the request
    to the active controller). Per-partition refusals (e.g. INVALID_REPLICA_ASSIGNMENT, §7.3, §9.6) are
    returned; no answer at all, or a request-level error, raises AdminOpError."""
    if not targets:
        raise AdminOpError("alter_reassignments needs at least one partition")
    for (t, p), reps in targets.items():
        if reps is not None and (not reps or len(set(reps)) != len(reps)):
            raise AdminOpError(f"{t}-{p}: replicas {reps} must be non-empty and distinct (None cancels)")
    errors: list[str] = []
    ids = _registered(cluster) or list(cluster.broker_ids)
    for b in ids:
        try:
            with ProtocolClient("127.0.0.1", cluster.brokers[b].host_port, timeout=timeout_s) as c:
                res = c.alter_partition_reassignments(targets, timeout_ms=int(timeout_s * 1000))
                if res.error == "NOT_CONTROLLER":
                    ctl = c.metadata([]).controller_id
                    if ctl in cluster.brokers and ctl != b:
                        with ProtocolClient("127.0.0.1", cluster.brokers[ctl].host_port, timeout=timeout_s) as cc:
                            res = cc.alter_partition_reassignments(targets, timeout_ms=int(timeout_s * 1000))
        except ProtocolError as e:
            errors.append(str(e))
            continue
        if res.error is not None:
            errors.append(f"broker {b}: {res.error}" + (f" ({res.error_message})" if res.error_message else ""))
            continue
        missing = [k for k in targets if k not in res.partitions]
        if missing:
            raise AdminOpError(f"AlterPartitionReassignments answered without {missing}: {res.partitions}")
        return {k: res.partitions[k] for k in targets}
    raise AdminOpError(f"AlterPartitionReassignments: no broker accepted the request: {'; '.join(errors)[:400]}")


def parse_verify(out: str) -> dict[tuple[str, int], str]:
    """``--verify`` output → ``{(topic, partition): "complete" | "in_progress" | "mismatch"}``."""
    states: dict[tuple[str, int], str] = {}
    for ln in out.splitlines():
        ln = ln.strip()
        for prefix, state in (("Reassignment of partition ", None), ("There is no active reassignment of partition ", "mismatch")):
            if not ln.startswith(prefix):
                continue
            rest = ln[len(prefix):]
            tp = rest.split(" ", 1)[0].rstrip(",")
            topic, _, p = tp.rpartition("-")
            if not topic or not p.isdigit():
                continue
            if state is None:
                if "still in progress" in rest:
                    state = "in_progress"
                elif "is complete" in rest:          # "is complete." (≤ 3.6) / "is completed." (3.7+)
                    state = "complete"
                elif "failed" in rest:
                    state = "failed"
                else:
                    continue
            states[(topic, int(p))] = state
    return states


def reassign_verify(cluster, plan: dict, timeout_s: float = 90.0) -> dict[tuple[str, int], str]:
    """``--verify``: the state of every partition of the plan (see :func:`parse_verify`). Once all are
    complete the tool also clears the throttles it set."""
    want = set(plan_targets(plan))
    res = _run_with_file(cluster, "reassign", "/tmp/kc-reassign.json", plan,
                         ["--verify", "--reassignment-json-file", "/tmp/kc-reassign.json"], timeout_s=timeout_s)
    states = parse_verify(res.output)
    missing = want - set(states)
    if missing:
        raise AdminOpError(f"--verify said nothing about {sorted(missing)}: {_tail(res.output)}")
    return {tp: states[tp] for tp in sorted(want)}


def reassign_cancel(cluster, plan: dict, timeout_s: float = 90.0) -> str:
    """``--cancel`` the in-flight reassignments of the plan's partitions (Kafka 2.6+; spec §7.8).

    The tool of 3.7 – 3.9 (Java port, KAFKA-14595) lost a negation and skips reassignments that only
    add replicas (no removing replicas): it then prints "None of the specified partition
    reassignments are active" and this function raises. Cancel moves, not pure additions, there.
    """
    require_version(cluster, (2, 6), "kafka-reassign-partitions --cancel")
    plan_targets(plan)
    res = _run_with_file(cluster, "reassign", "/tmp/kc-reassign.json", plan,
                         ["--cancel", "--reassignment-json-file", "/tmp/kc-reassign.json"], timeout_s=timeout_s)
    if "Successfully cancelled" not in res.output:
        raise AdminOpError(f"cancel not confirmed by the tool: {_tail(res.output)}")
    return res.output


def reassign_list(cluster, timeout_s: float = 90.0) -> str:
    """``--list``: the tool's listing of active reassignments (ListPartitionReassignments, 2.6+)."""
    require_version(cluster, (2, 6), "kafka-reassign-partitions --list")
    return run_tool(cluster, "reassign", ["--list"], timeout_s=timeout_s).output


# ---------------------------------------------------------------------------- reassignment: the znode
def write_reassign_znode(cluster, plan: dict, timeout_s: float = 15.0) -> None:
    """Create ``/admin/reassign_partitions`` with the plan (legacy path, spec §1.6). Fails if the node
    already exists: a ZooKeeper-initiated reassignment is still in progress."""
    require_zookeeper(cluster, "write_reassign_znode",
                      "admin_ops.reassign_execute (the tool, AlterPartitionReassignments)")
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


def elect_preferred_tool(cluster, partitions: list[tuple[str, int]], timeout_s: float = 90.0) -> str:
    """``kafka-leader-election --election-type preferred`` for the partitions (2.4+); returns the output."""
    require_version(cluster, (2, 4), "kafka-leader-election")
    if not partitions:
        raise AdminOpError("elect_preferred_tool needs at least one partition")
    doc = {"partitions": [{"topic": t, "partition": int(p)} for t, p in partitions]}
    res = _run_with_file(cluster, "elect", "/tmp/kc-elect.json", doc,
                         ["--election-type", "preferred", "--path-to-json-file", "/tmp/kc-elect.json"],
                         timeout_s=timeout_s, check=False)
    if res.exit_code != 0 and "Valid replica already elected" not in res.output:
        raise AdminOpError(f"leader election tool failed (exit {res.exit_code}): {_tail(res.output)}")
    return res.output


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
