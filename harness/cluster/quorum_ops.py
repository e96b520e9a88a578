"""Voter changes of a dynamic KRaft quorum (KIP-853): add a controller, remove one, replace a wiped one.

Each runs Kafka's own ``kafka-metadata-quorum`` tool (``org.apache.kafka.tools.MetadataQuorumCommand``)
inside a controller container of the cluster, with ``--bootstrap-controller`` set to every controller's
CONTROLLER endpoint (the tool finds the quorum leader through them, so a call works whichever voter
leads or is down). The tool sends AddRaftVoter / RemoveRaftVoter to the leader, which answers once the
new VotersRecord committed (raft/.../internals/AddVoterHandler.java, RemoveVoterHandler.java, 4.4.0);
the leader refuses with REQUEST_TIMED_OUT while a previous voter change is uncommitted, so a caller that
retries is safe.

* :func:`add_controller` runs ``add-controller`` IN the controller to add (the tool reads the node's
  id, metadata directory id and CONTROLLER endpoint from its configuration and meta.properties);
* :func:`remove_controller` runs ``remove-controller --controller-id N --controller-directory-id D``
  (D: the voter's directory id as the voter set has it, :func:`voters`);
* :func:`voters` / :func:`observers` read ``describe --status`` (the voter set with directory ids);
* :func:`wipe_on_restart` makes a controller lose its data directory at its next start (the dynamic
  adapter's start script, harness/distributions/dynamic_quorum.py, formats it again as an observer with
  a new directory id): the replaced disk of KIP-853.

Needs the ``apache-kraft-dynamic`` distribution (``Distribution.roles`` has ``dynamic-quorum``); every
call is bounded and raises :class:`harness.errors.AdminOpError` with the tool's last lines.
"""

from __future__ import annotations

import json
import re
import shlex
import time

from harness.cluster.admin_tool import RUN_CLASS, TOOL_JVM_OPTS, _tail
from harness.distributions.base import CONTROLLER_PORT
from harness.distributions.dynamic_quorum import WIPE_MARKER
from harness.errors import AdminOpError

TOOL_CLASS = "org.apache.kafka.tools.MetadataQuorumCommand"
CONFIG = "/etc/kafka-chaos/server.properties"
# the tool's --command-config: the node's own configuration (add-controller reads the node id, its
# CONTROLLER endpoint and metadata directory from it) plus admin-client bounds, so that an attempt that
# asked a controller which has just died gives up in seconds and the next attempt (a new JVM, the
# leader looked up again) goes to the new leader; without them one attempt hung for the 60 s default
TOOL_CONFIG = "/tmp/kc-quorum-tool.properties"
TOOL_BOUNDS = {"request.timeout.ms": "8000", "default.api.timeout.ms": "20000"}


def _controllers(cluster) -> list:
    return list(getattr(cluster, "controllers", []) or [])


def _require_dynamic(cluster) -> None:
    if "dynamic-quorum" not in getattr(cluster.distribution, "roles", ()):
        raise AdminOpError(f"voter changes need a dynamic quorum (distribution apache-kraft-dynamic), not "
                           f"{cluster.distribution.name}")


def controller(cluster, node_id: int):
    for n in _controllers(cluster):
        if n.node_id == node_id:
            return n
    raise AdminOpError(f"no controller node {node_id} in cluster {cluster.name} "
                       f"(controllers: {[n.node_id for n in _controllers(cluster)]})")


def _bootstrap(cluster, avoid: tuple[int, ...] = ()) -> str:
    return ",".join(f"{n.alias}:{CONTROLLER_PORT}" for n in _controllers(cluster) if n.node_id not in avoid)


def run_quorum_tool(cluster, args: list[str], *, on: int | None = None, avoid: tuple[int, ...] = (),
                    timeout_s: float = 60.0, check: bool = True) -> tuple[int, str]:
    """Run ``kafka-metadata-quorum ARGS`` in controller ``on`` (None: the first running one not in ``avoid``)."""
    _require_dynamic(cluster)
    if on is not None:
        node = controller(cluster, on)
    else:
        node = next((n for n in _controllers(cluster) if n.node_id not in avoid and n.status() == "running"), None)
        if node is None:
            raise AdminOpError(f"no running controller to run kafka-metadata-quorum in (avoiding {list(avoid)})")
    bounds = "".join(f"{k}={v}\\n" for k, v in TOOL_BOUNDS.items())
    tool = ["env", f"JAVA_TOOL_OPTIONS={TOOL_JVM_OPTS}", "timeout", "-k", "5", str(int(timeout_s)),
            RUN_CLASS, TOOL_CLASS, "--bootstrap-controller", _bootstrap(cluster, avoid),
            "--command-config", TOOL_CONFIG, *args]
    cmd = ["sh", "-c", f"{{ cat {CONFIG}; printf '{bounds}'; }} > {TOOL_CONFIG} && exec \"$@\"", "quorum-tool", *tool]
    code, out = node.exec(cmd)
    if code in (124, 137):
        raise AdminOpError(f"kafka-metadata-quorum timed out after {timeout_s:.0f} s in {node.name}: "
                           f"{' '.join(args)}: {_tail(out)}")
    if check and code != 0:
        raise AdminOpError(f"kafka-metadata-quorum failed (exit {code}) in {node.name}: {' '.join(args)}: {_tail(out)}")
    return code, out


def _status_list(out: str, key: str) -> list[dict]:
    m = re.search(rf"^{key}:\s*(\[.*\])\s*$", out, re.M)
    if not m:
        raise AdminOpError(f"kafka-metadata-quorum describe --status printed no {key}: {_tail(out)}")
    return json.loads(m.group(1))


def status(cluster, avoid: tuple[int, ...] = (), timeout_s: float = 40.0) -> dict:
    """``describe --status``: leader id, epoch, high watermark, voters and observers ({id, directoryId, ...})."""
    _, out = run_quorum_tool(cluster, ["describe", "--status"], avoid=avoid, timeout_s=timeout_s)
    num = {k: int(v) for k, v in re.findall(r"^(LeaderId|LeaderEpoch|HighWatermark):\s*(-?\d+)", out, re.M)}
    return {"leader_id": num.get("LeaderId"), "leader_epoch": num.get("LeaderEpoch"),
            "high_watermark": num.get("HighWatermark"), "voters": _status_list(out, "CurrentVoters"),
            "observers": _status_list(out, "CurrentObservers")}


def voters(cluster, avoid: tuple[int, ...] = ()) -> dict[int, str]:
    """The voter set now: id -> directory id."""
    return {v["id"]: v.get("directoryId") for v in status(cluster, avoid)["voters"]}


def add_controller(cluster, node_id: int, timeout_s: float = 90.0, avoid: tuple[int, ...] = ()) -> str:
    """Make controller ``node_id`` (an observer) a voter; retried while the leader answers that a previous
    change is uncommitted, the new voter is lagging, or there is no leader (all REQUEST_TIMED_OUT /
    timeouts), until ``timeout_s``. Returns the tool's line."""
    return _retrying(cluster, ["add-controller"], timeout_s, on=node_id, avoid=avoid,
                     what=f"add controller {node_id}")


def remove_controller(cluster, node_id: int, directory_id: str | None = None, timeout_s: float = 90.0,
                      avoid: tuple[int, ...] = ()) -> str:
    """Remove voter ``node_id`` (``directory_id``: the one the voter set has; None: look it up now)."""
    if directory_id is None:
        directory_id = voters(cluster, avoid).get(node_id)
        if directory_id is None:
            raise AdminOpError(f"controller {node_id} is not a voter: nothing to remove")
    return _retrying(cluster, ["remove-controller", "--controller-id", str(node_id),
                               "--controller-directory-id", directory_id], timeout_s,
                     avoid=tuple(avoid) + (node_id,), what=f"remove controller {node_id}")


def _retrying(cluster, args, timeout_s, *, what, on=None, avoid=()) -> str:
    deadline = time.monotonic() + timeout_s
    last, tried = "", 0
    while True:
        left = deadline - time.monotonic()
        try:
            code, out = run_quorum_tool(cluster, args, on=on, avoid=avoid, timeout_s=max(10.0, min(40.0, left)),
                                        check=False)
        except AdminOpError as e:        # the attempt timed out: a new one looks the leader up again
            code, out = 124, str(e)
        if code == 0:
            return _tail(out)
        last = _tail(out)
        done = "DuplicateVoterException" in out or "VoterNotFoundException" in out
        if done and tried:
            # an earlier attempt that gave up waiting had reached the leader: its change is in
            return f"done by an earlier attempt ({last[-160:]})"
        tried += 1
        final = done or "UnsupportedVersionException" in out or "InvalidRequestException" in out
        if final or time.monotonic() + 2 >= deadline:
            raise AdminOpError(f"{what}: kafka-metadata-quorum failed (exit {code}): {last}")
        time.sleep(2)


def wipe_on_restart(cluster, node_id: int) -> None:
    """Controller ``node_id`` loses its whole data directory at its next start (before Kafka starts),
    as a node whose disk was replaced while it was down."""
    token = f"{time.time_ns()}"
    code, out = controller(cluster, node_id).exec(["sh", "-c", f"echo {token} > {shlex.quote(WIPE_MARKER)}"])
    if code != 0:
        raise AdminOpError(f"could not mark controller {node_id}'s data for wiping: {out.strip()[:200]}")


def cancel_wipe(cluster, node_id: int) -> None:
    """Undo :func:`wipe_on_restart` on a controller that is still running."""
    code, out = controller(cluster, node_id).exec(["sh", "-c", f"rm -f {shlex.quote(WIPE_MARKER)}"])
    if code != 0:
        raise AdminOpError(f"could not unmark controller {node_id}'s data: {out.strip()[:200]}")


def directory_id(cluster, node_id: int) -> str | None:
    """The metadata directory id in controller ``node_id``'s meta.properties (None: not formatted)."""
    code, out = controller(cluster, node_id).exec(["sh", "-c", "cat /var/lib/kafka/data/meta.properties"])
    m = re.search(r"^directory\.id=(\S+)", out, re.M) if code == 0 else None
    return m.group(1) if m else None


# -- feature levels (kafka-features), for the feature-upgrade check of KAFKA-18979 / KAFKA-21426 ------------
FEATURE_TOOL = "org.apache.kafka.tools.FeatureCommand"


def features_tool(cluster, args: list[str], timeout_s: float = 60.0, check: bool = True) -> tuple[int, str]:
    """``kafka-features ARGS`` in a running broker container, ``--bootstrap-server`` its internal listeners
    (``version-mapping`` needs no cluster and gets none)."""
    from harness.cluster.admin_tool import INTERNAL_PORT
    node = next((cluster.brokers[b] for b in cluster.broker_ids if cluster.brokers[b].status() == "running"), None)
    if node is None:
        raise AdminOpError("no running broker container to run kafka-features in")
    boot = [] if args[:1] == ["version-mapping"] else \
        ["--bootstrap-server", ",".join(f"{cluster.brokers[b].alias}:{INTERNAL_PORT}" for b in cluster.broker_ids)]
    cmd = ["env", f"JAVA_TOOL_OPTIONS={TOOL_JVM_OPTS}", "timeout", "-k", "5", str(int(timeout_s)),
           RUN_CLASS, FEATURE_TOOL, *boot, *args]
    code, out = node.exec(cmd)
    if check and code != 0:
        raise AdminOpError(f"kafka-features failed (exit {code}) in {node.name}: {' '.join(args)}: {_tail(out)}")
    return code, out


def finalized_features(cluster) -> dict[str, int | str]:
    """``kafka-features describe``: feature name -> finalized level (an int; metadata.version as the tool
    prints it, e.g. ``4.4-IV2``)."""
    _, out = features_tool(cluster, ["describe"])
    found = re.findall(r"Feature:\s*(\S+).*?FinalizedVersionLevel:\s*(\S+)", out)
    return {name: int(level) if level.lstrip("-").isdigit() else level for name, level in found}


def release_mapping(cluster, release: str | None = None) -> dict[str, int]:
    """``kafka-features version-mapping [--release-version R]``: the level of each feature in release R
    (None: the tool's default, the newest production release)."""
    _, out = features_tool(cluster, ["version-mapping", *(["--release-version", release] if release else [])])
    return parse_mapping(out)


def parse_mapping(out: str) -> dict[str, int]:
    """``name=level`` lines of ``kafka-features version-mapping`` (``metadata.version=33 (4.4-IV2)``)."""
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^([a-z][\w.]*)=(\d+)", out, re.M)}
