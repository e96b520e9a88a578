"""Kafka's own admin tools, run inside a broker container: the *tool path*.

Only a scenario whose subject is the tool itself uses this module (e.g. "the tool refuses a
reassignment onto an unknown broker id": ``kafka-reassign-partitions`` checks the ids against
DescribeCluster before the controller is asked); everything else administers the cluster from the
host through the protocol (:mod:`harness.cluster.admin_ops`). A foreign image may have no JVM and no tools:
:func:`unavailable` says so, and the part of a scenario that needs the tool is then NOT-APPLICABLE
with that reason (docs/broker-contract.md).

The tools are started through the image's ``kafka-run-class`` (or Apache's
``bin/kafka-run-class.sh``, or ``java`` over ``/opt/kafka/libs``, in images not built here):
:func:`reassign_generate` (``--generate``), :func:`reassign_execute` (``--execute``, optional
``--throttle``), :func:`reassign_verify` (``--verify``), :func:`reassign_cancel` (``--cancel``, 2.6+),
:func:`reassign_list` (``--list``, 2.6+) and :func:`elect_preferred_tool` (``kafka-leader-election``).
The reassignment tool's class is ``kafka.admin.ReassignPartitionsCommand`` up to 3.6 and
``org.apache.kafka.tools.reassign.ReassignPartitionsCommand`` from 3.7. Each call is bounded by a
``timeout`` inside the container and raises :class:`AdminOpError` saying what failed.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass

from harness.cluster.admin_ops import _registered, kafka_version, plan_targets, require_version
from harness.errors import AdminOpError

RUN_CLASS = "/opt/kafka-chaos/kafka-run-class"
# How a tool's class is started in a broker container: the harness image's launcher; else the
# launcher of Apache's distribution layout (the official apache/kafka image has it); else plain java
# over the jars in /opt/kafka/libs (an image that has only the jars).
_LAUNCH = ('if [ -x {rc} ]; then exec {rc} "$@"; '
           'elif [ -x /opt/kafka/bin/kafka-run-class.sh ]; then exec /opt/kafka/bin/kafka-run-class.sh "$@"; '
           'else exec java -cp "/opt/kafka/libs/*" "$@"; fi').format(rc=RUN_CLASS)
INTERNAL_PORT = 9093
# a tool is a short-lived JVM: the C1 compiler alone and the serial collector start it about 40 %
# faster (measured 3.8 s → 2.1 s for ``--help`` in the 3.9.2 image), which matters on a loaded host
TOOL_JVM_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

_TOOL_CLASSES = {
    # tool: (class up to 3.6, class from 3.7 on)
    "reassign": ("kafka.admin.ReassignPartitionsCommand",
                 "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"),
    "elect": ("kafka.admin.LeaderElectionCommand", "org.apache.kafka.tools.LeaderElectionCommand"),
    # kafka-share-groups (share groups exist from 4.0 only): the SPSO reset of suites/test_share_negative_controls.py
    "share-groups": ("org.apache.kafka.tools.consumer.group.ShareGroupCommand",
                     "org.apache.kafka.tools.consumer.group.ShareGroupCommand"),
}


# a probe for the launcher _LAUNCH would use (exit 0: one of them is there)
_PROBE = ('[ -x {rc} ] || [ -x /opt/kafka/bin/kafka-run-class.sh ] || '
          '{{ command -v java >/dev/null && ls /opt/kafka/libs/*.jar >/dev/null 2>&1; }}').format(rc=RUN_CLASS)
NO_TOOL_REASON = ("the broker image has no Kafka admin tools (no {rc}, no /opt/kafka/bin/kafka-run-class.sh, "
                  "no java with /opt/kafka/libs): the part whose subject is Kafka's own tool cannot run").format(rc=RUN_CLASS)


def unavailable(cluster) -> str | None:
    """Why Kafka's tools cannot run in this cluster's broker containers (None when they can).

    Images the harness builds (the Apache adapters' ``kafka-chaos/kafka:*``) always have them; for a
    foreign image (``generic``, a distribution file) a running broker container is probed once (an
    ``exec`` of ``sh``) and the answer kept on the cluster object."""
    if not cluster.distribution.foreign:
        return None
    cached = getattr(cluster, "_kc_tool_unavailable", False)
    if cached is not False:
        return cached
    node = next((n for n in cluster.brokers.values() if n.status() == "running"), None)
    if node is None:
        return "no running broker container to look for Kafka's tools in"
    code, _ = node.exec(["sh", "-c", _PROBE])
    why = None if code == 0 else NO_TOOL_REASON
    try:
        cluster._kc_tool_unavailable = why
    except AttributeError:
        pass
    return why


def tool_class(cluster, tool: str) -> str:
    """The Java class of ``tool`` (``reassign`` or ``elect``) for the cluster's Kafka version."""
    if tool not in _TOOL_CLASSES:
        raise AdminOpError(f"unknown tool {tool!r}; known: {sorted(_TOOL_CLASSES)}")
    v = kafka_version(cluster)
    old, new = _TOOL_CLASSES[tool]
    return new if v is None or v >= (3, 7) else old


# ---------------------------------------------------------------------------- running a tool
@dataclass
class ToolResult:
    exit_code: int
    output: str
    broker: int         # the container it ran in


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



# ---------------------------------------------------------------------------- preferred election: the tool
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
