"""Have the group coordinator set up before a scenario's workload and faults start.

A consumer with a ``group.id`` (librdkafka asks for its coordinator even in assign mode) makes Apache
Kafka create ``__consumer_offsets`` on its first FindCoordinator. A fault that lands while the brokers
handle that creation tests the creation, not what the scenario means to test: 3.9.2 once failed
``acks.a1_minisr1`` when its pause of broker 2 hit the LeaderAndIsr creating ``__consumer_offsets-1``
(docs/scenarios.md). So before the workload starts the runner asks for a coordinator (FindCoordinator of
a group no one uses) and waits, bounded, until every partition
of the group topic the brokers list has its full ISR. A broker that keeps groups elsewhere (no such
topic in Metadata, e.g. kfake) is ready as soon as a coordinator answers.

Soft: nothing here fails a run. What was reached is recorded as the phase ``groups.ready``
(``coordinator``, ``full_isr``, ``waited_s``).
"""

from __future__ import annotations

import time

GROUP_TOPIC = "__consumer_offsets"
PROBE_GROUP = "kafka-chaos-coordinator-probe"


def _coordinator(cluster, timeout_s: float) -> bool:
    """Whether a broker names a coordinator for the probe group (FindCoordinator, through the project's
    protocol client: librdkafka's DescribeConsumerGroups can abort the whole process when a connection
    drops under it, confluentinc/librdkafka#4605, seen here once on a Kroxylicious cluster)."""
    try:
        _port, info = cluster.coordinator(PROBE_GROUP, "group", timeout_s=max(1.0, timeout_s))
    except Exception:       # no broker answers yet
        return False
    return info.error is None      # COORDINATOR_NOT_AVAILABLE while the group topic is created


def _group_topic_full(admin, timeout_s: float) -> bool | None:
    """True: every partition of the group topic has its full ISR; False: not yet; None: the brokers list
    no such topic (groups kept elsewhere)."""
    md = admin.list_topics(GROUP_TOPIC, timeout=max(1.0, timeout_s))
    t = md.topics.get(GROUP_TOPIC)
    if t is None or t.error is not None or not t.partitions:
        return None
    return all(p.leader >= 0 and set(p.isrs) == set(p.replicas) for p in t.partitions.values())


def settle(cluster, timeout_s: float = 30.0) -> dict:
    """Ask for a group coordinator and wait (bounded by ``timeout_s``) for the group topic's full ISR;
    returns ``{"coordinator": bool, "full_isr": bool | None, "waited_s": float}``."""
    admin = cluster.admin()
    t0 = time.monotonic()
    deadline = t0 + timeout_s
    found = full = None
    while time.monotonic() < deadline:
        left = deadline - time.monotonic()
        found = found or _coordinator(cluster, min(5.0, left))
        if found:
            try:
                full = _group_topic_full(admin, min(5.0, max(1.0, deadline - time.monotonic())))
            except Exception:
                full = False
            if full is not False:
                break
        time.sleep(0.2)
    return {"coordinator": bool(found), "full_isr": full, "waited_s": round(time.monotonic() - t0, 3)}
