"""The pure parts of a partition reassignment done from the host (:mod:`harness.cluster.admin_ops`): what Kafka's
``kafka-reassign-partitions`` computes on the client side, re-done here so that no scenario needs
the tool inside the broker image. Nothing here talks to a cluster.

Each function names the method of Apache Kafka's ``ReassignPartitionsCommand``
(``tools/src/main/java/org/apache/kafka/tools/reassign/ReassignPartitionsCommand.java``, trunk
1eb7644 of 2024-10; the Scala ``kafka.admin.ReassignPartitionsCommand`` of 2.6 – 3.6 computes the
same) or of ``AdminUtils`` (``server-common/.../org/apache/kafka/admin/AdminUtils.java``) it follows:

* :func:`move_map` — ``calculateProposedMoveMap``: per partition the *sources* (its replicas now; for
  one already being reassigned, its replicas minus the adding ones) and the *destinations* (the target
  minus the sources);
* :func:`throttled_replicas` — ``calculateLeaderThrottles`` / ``calculateFollowerThrottles``: the
  topic-level ``leader.replication.throttled.replicas`` (``partition:source``) and
  ``follower.replication.throttled.replicas`` (``partition:destination``), each a sorted set of strings
  joined by ``,`` (Java's ``TreeSet<String>``: ``"10:1"`` sorts before ``"2:1"``);
* :func:`reassigning_brokers` — ``calculateReassigningBrokers``: the brokers whose broker-level
  ``leader/follower.replication.throttled.rate`` ``--throttle`` sets;
* :func:`verify_states` — ``findPartitionReassignmentStates``: ``in_progress`` while the partition is
  listed by ListPartitionReassignments, else ``complete`` when its replicas are the target and
  ``mismatch`` when they are not ("There is no active reassignment of partition ..., but replica set
  is ... rather than ...");
* :func:`throttle_clear_brokers` — ``clearAllThrottles``: every broker the cluster lists plus every
  target replica;
* :func:`assign_replicas` — ``AdminUtils.assignReplicasToBrokersRackUnaware``, which ``--generate``
  uses (the harness's brokers carry no rack). The tool draws ``startIndex`` and ``nextReplicaShift``
  from an unseeded ``Random``; here they are parameters, and :func:`generate` draws them from the
  ``random.Random`` it is given (a scenario passes one seeded with the run's seed, so a replay proposes
  the same plan). Any other difference would be a bug.
"""

from __future__ import annotations

import random as _random

from harness.errors import AdminOpError

TP = tuple[str, int]
THROTTLED_REPLICAS_KEYS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")


def move_map(ongoing: dict[TP, tuple[list[int], list[int], list[int]]], targets: dict[TP, list[int]],
             current: dict[TP, list[int]]) -> dict[TP, tuple[set[int], set[int]]]:
    """``{(topic, p): (sources, destinations)}`` for every ongoing reassignment and every target.

    ``ongoing``: ListPartitionReassignments now (``(replicas, adding, removing)``); ``current``: the
    replicas Metadata lists for the targets' partitions. A target partition in neither raises."""
    moves: dict[TP, tuple[set[int], set[int]]] = {}
    for tp, (replicas, adding, _removing) in ongoing.items():
        moves[tp] = (set(replicas) - set(adding), set(adding))
    for tp, target in targets.items():
        if tp in moves:
            sources = moves[tp][0]
        elif tp in current:
            sources = set(current[tp])
        else:
            raise AdminOpError(f"trying to reassign {tp[0]}-{tp[1]}, which has no replicas (not in Metadata)")
        moves[tp] = (sources, set(target) - sources)
    return moves


def throttled_replicas(moves: dict[TP, tuple[set[int], set[int]]]) -> tuple[dict[str, str], dict[str, str]]:
    """(``{topic: leader.replication.throttled.replicas}``, ``{topic: follower...}``) for :func:`move_map`'s moves."""
    leader: dict[str, set[str]] = {}
    follower: dict[str, set[str]] = {}
    for (topic, p), (sources, destinations) in moves.items():
        leader.setdefault(topic, set()).update(f"{p}:{s}" for s in sources)
        follower.setdefault(topic, set()).update(f"{p}:{d}" for d in destinations if d not in sources)
    return ({t: ",".join(sorted(v)) for t, v in leader.items()},
            {t: ",".join(sorted(v)) for t, v in follower.items()})


def reassigning_brokers(moves: dict[TP, tuple[set[int], set[int]]]) -> list[int]:
    """Every source and destination broker of the moves, sorted."""
    return sorted({b for s, d in moves.values() for b in s | d})


def verify_states(targets: dict[TP, list[int]], ongoing: dict[TP, tuple[list[int], list[int], list[int]]],
                  current: dict[TP, list[int]]) -> dict[TP, str]:
    """``{(topic, p): "in_progress" | "complete" | "mismatch"}`` (the states ``--verify`` prints; a
    partition Metadata does not list has no replicas: ``mismatch``)."""
    out = {}
    for tp, target in sorted(targets.items()):
        if tp in ongoing:
            out[tp] = "in_progress"
        else:
            out[tp] = "complete" if list(current.get(tp, [])) == list(target) else "mismatch"
    return out


def throttle_clear_brokers(listed: list[int], targets: dict[TP, list[int]]) -> list[int]:
    """The brokers whose broker-level throttle rates ``--verify`` / ``--cancel`` clear."""
    return sorted(set(listed) | {b for reps in targets.values() for b in reps})


def _replica_index(first: int, shift: int, j: int, n: int) -> int:
    return (first + 1 + (shift + j) % (n - 1)) % n


def assign_replicas(n_partitions: int, rf: int, brokers: list[int], start_index: int, shift: int,
                    start_partition: int = 0) -> dict[int, list[int]]:
    """``AdminUtils.assignReplicasToBrokersRackUnaware`` with a fixed ``startIndex`` and ``nextReplicaShift``."""
    n = len(brokers)
    if n_partitions <= 0:
        raise AdminOpError("number of partitions must be larger than 0")
    if rf <= 0:
        raise AdminOpError("replication factor must be larger than 0")
    if rf > n:
        raise AdminOpError(f"replication factor {rf} larger than the brokers to assign to ({n}: {brokers})")
    out: dict[int, list[int]] = {}
    p = max(0, start_partition)
    for _ in range(n_partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start_index) % n
        out[p] = [brokers[first]] + [brokers[_replica_index(first, shift, j, n)] for j in range(rf - 1)]
        p += 1
    return out


def generate(current: dict[TP, list[int]], brokers: list[int],
             rng: _random.Random | None = None) -> dict[TP, list[int]]:
    """``--generate``'s proposal for the topics of ``current`` (``{(topic, p): replicas}``, every
    partition of each topic) over ``brokers`` (those the cluster lists, in the given order): per topic
    :func:`assign_replicas` with the replication factor of its partition 0 and a ``startIndex`` and
    ``nextReplicaShift`` drawn from ``rng`` (each in ``[0, len(brokers))``, as the tool draws them)."""
    if not brokers:
        raise AdminOpError("no broker to assign replicas to")
    rng = rng if rng is not None else _random.Random()
    by_topic: dict[str, dict[int, list[int]]] = {}
    for (t, p), reps in current.items():
        by_topic.setdefault(t, {})[p] = reps
    out: dict[TP, list[int]] = {}
    for t in sorted(by_topic):
        parts = by_topic[t]
        rf = len(parts[min(parts)])
        start, shift = rng.randrange(len(brokers)), rng.randrange(len(brokers))
        for p, reps in assign_replicas(len(parts), rf, list(brokers), start, shift).items():
            out[(t, p)] = reps
    return out
