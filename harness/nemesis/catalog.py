"""The fault catalog: every fault's name, kind, default target and accepted parameters.

Pure data (no Docker, no ZooKeeper): the schedule generator and loader validate against it, and
:mod:`harness.nemesis.faults` implements each entry. See docs/faults.md for what each fault does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.errors import ScenarioError

# Link classes a network fault can cut (docs/faults.md "Links").
LINKS = ("broker-broker", "broker-zk", "zk-zk", "client", "controller", "replication", "service")
PEER_LINKS = ("broker-broker", "broker-zk", "zk-zk", "service")
_LINK_ALIASES = {
    "broker-broker": "broker-broker", "inter-broker": "broker-broker",
    "broker-zk": "broker-zk", "zk-broker": "broker-zk",
    "zk-zk": "zk-zk", "quorum": "zk-zk",
    # any link with a distribution file's store service (role "service") at one end: the brokers' object
    # store or database (a zookeeper service's links are broker-zk / zk-zk)
    "service": "service", "broker-service": "service", "service-broker": "service", "store": "service",
    "client": "client", "client-broker": "client", "broker-client": "client", "client-zk": "client",
    # the KRaft CONTROLLER listener only (port 9094): a subset of broker-broker in combined mode
    "controller": "controller", "broker-controller": "controller", "controller-broker": "controller",
    # the inter-broker (INTERNAL) listener only (port 9093): all of broker-broker in ZooKeeper mode, the
    # KRaft CONTROLLER listener kept
    "replication": "replication", "inter-broker-listener": "replication",
}


class FaultSpecError(ScenarioError):
    """A fault name, target or parameter is malformed (bad input, not an environment failure)."""


NUM = (int, float)


@dataclass(frozen=True)
class FaultInfo:
    """What the nemesis needs to know about a fault before applying it.

    ``instant``: the fault is an event, not a state (its heal is a no-op or happens inside apply);
    schedules give it duration 0. ``params``: name -> accepted Python types (JSON values).
    ``roles``: which node roles the target may resolve to. ``needs_role``: a part of the cluster
    the fault acts through (None: any Kafka cluster has it), e.g. "zookeeper" for a ZooKeeper session.
    """
    name: str
    kind: str                       # process | network | degradation | zookeeper | controller
    default_target: str
    instant: bool = False
    roles: tuple[str, ...] = ("broker", "zookeeper", "controller", "service")
    params: dict[str, tuple] = field(default_factory=dict)
    doc: str = ""
    needs_role: str | None = None


_NET = {"links": (list, str), "clients": (bool,)}
_WAIT = {"wait": (bool,), "timeout_s": NUM}

CATALOG: dict[str, FaultInfo] = {f.name: f for f in [
    FaultInfo("kill", "process", "random-broker", params={"heal": (str,), **_WAIT},
              doc="SIGKILL the node; heal starts it again (heal='none' leaves it down)"),
    FaultInfo("stop", "process", "random-broker", params={"stop_timeout_s": NUM, "heal": (str,), **_WAIT},
              doc="SIGTERM (a broker runs controlled shutdown), SIGKILL after stop_timeout_s; heal starts it"),
    FaultInfo("start", "process", "random-broker", instant=True, params=dict(_WAIT),
              doc="start a stopped or killed node"),
    FaultInfo("restart", "process", "random-broker", instant=True,
              params={"stop_timeout_s": NUM, **_WAIT}, doc="clean stop then start"),
    FaultInfo("pause", "process", "random-broker", doc="freeze the container's cgroup; heal unpauses"),
    FaultInfo("isolate", "network", "random-broker", params={**_NET, "peers": (str,)},
              doc="cut each target node from every other node of the cluster"),
    FaultInfo("link_cut", "network", "random-broker", params={**_NET, "peers": (str,)},
              doc="cut only the selected link classes of the target nodes"),
    FaultInfo("partition", "network", "random-minority", params={**_NET, "groups": (list,)},
              doc="split the cluster: the target nodes on one side, every other node on the other"),
    FaultInfo("one_way", "network", "random-broker", params={**_NET, "direction": (str,), "peers": (str,)},
              doc="drop the target's packets in one direction only (out: it cannot speak, in: cannot hear)"),
    FaultInfo("bridge", "network", "random-broker", params={**_NET, "halves": (list,)},
              doc="two halves that cannot talk to each other, both connected to the target (bridge) node"),
    FaultInfo("netem", "degradation", "random-broker",
              params={"delay_ms": NUM, "jitter_ms": NUM, "loss_pct": NUM},
              doc="tc netem on eth0 (egress): latency, jitter, loss"),
    FaultInfo("loss", "degradation", "random-broker", params={"loss_pct": NUM, "direction": (str,)},
              doc="random packet loss with iptables statistic (works where netem is missing)"),
    FaultInfo("bandwidth", "degradation", "random-broker", params={"rate_kbit": NUM, "latency_ms": NUM},
              doc="tc tbf rate limit on eth0 (egress)"),
    FaultInfo("zk_kill", "zookeeper", "zookeeper-leader", roles=("zookeeper",), needs_role="zookeeper",
              params={"heal": (str,), **_WAIT},
              doc="SIGKILL a ZooKeeper node; heal starts it"),
    FaultInfo("zk_pause", "zookeeper", "zookeeper-leader", roles=("zookeeper",), needs_role="zookeeper",
              doc="freeze a ZooKeeper node; heal unpauses"),
    FaultInfo("zk_expire_session", "zookeeper", "random-broker", instant=True, roles=("broker",),
              needs_role="zookeeper",
              params={"grace_s": NUM, "wait": (bool,), "timeout_s": NUM},
              doc="cut broker<->ZooKeeper longer than zookeeper.session.timeout.ms until the broker's "
                  "registration vanishes, then restore the links"),
    FaultInfo("client_crash", "client", "random-producer", instant=True, roles=(),
              doc="end a workload client abruptly (no flush): target p0, c0, random-producer or random-consumer; "
                  "needs nemesis.workload"),
    FaultInfo("crash", "client", "random-producer", instant=True, roles=(),
              doc="crash a transactional client (workload kind txn) and start a new process with the same "
                  "transactional.id, which fences the old: target p0 or random-producer; needs nemesis.workload"),
    FaultInfo("delete_controller_znode", "controller", "controller", instant=True, roles=("broker",),
              needs_role="zookeeper",
              doc="delete /controller: every broker races to become controller"),
]}


def fault_info(name: str) -> FaultInfo:
    try:
        return CATALOG[name]
    except (KeyError, TypeError):
        raise FaultSpecError(f"unknown fault {name!r}; known: {', '.join(sorted(CATALOG))}") from None


def normalize_links(value, default: tuple[str, ...] = PEER_LINKS) -> tuple[str, ...]:
    """``links`` parameter -> canonical link names (a list, or a comma-separated string)."""
    if value is None:
        return tuple(default)
    if isinstance(value, str):
        value = [v for v in value.split(",") if v.strip()]
    if not isinstance(value, (list, tuple)) or not value:
        raise FaultSpecError(f"links: expected a non-empty list of {', '.join(LINKS)}, got {value!r}")
    out = []
    for v in value:
        canon = _LINK_ALIASES.get(str(v).strip().lower()) if isinstance(v, str) else None
        if canon is None:
            raise FaultSpecError(f"links: unknown link {v!r}; use {', '.join(LINKS)}")
        if canon not in out:
            out.append(canon)
    return tuple(out)


def validate_params(name: str, params) -> dict:
    """Check a fault's params against the catalog; returns a plain dict copy."""
    info = fault_info(name)
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise FaultSpecError(f"{name}: params must be an object, got {type(params).__name__}")
    for k, v in params.items():
        if k not in info.params:
            accepted = ", ".join(sorted(info.params)) or "none"
            raise FaultSpecError(f"{name}: unknown parameter {k!r} (accepted: {accepted})")
        types = info.params[k]
        if isinstance(v, bool) and bool not in types:
            raise FaultSpecError(f"{name}: parameter {k!r} must be {'/'.join(t.__name__ for t in types)}, got {v!r}")
        if not isinstance(v, types):
            raise FaultSpecError(f"{name}: parameter {k!r} must be {'/'.join(t.__name__ for t in types)}, got {v!r}")
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v < 0:
            raise FaultSpecError(f"{name}: parameter {k!r} must be >= 0, got {v!r}")
    if "links" in params:
        normalize_links(params["links"])
    if params.get("direction") is not None and params["direction"] not in ("in", "out", "both"):
        raise FaultSpecError(f"{name}: direction must be 'in', 'out' or 'both', got {params['direction']!r}")
    if params.get("heal") is not None and params["heal"] not in ("start", "none"):
        raise FaultSpecError(f"{name}: heal must be 'start' or 'none', got {params['heal']!r}")
    return dict(params)
