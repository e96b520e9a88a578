"""What every node's container starts with: the test-friendly Kafka and ZooKeeper configuration
defaults, the JVM options override and the hardening (capabilities, memory and pids limits).

:class:`harness.cluster.cluster.Cluster` builds each container from these; ``certify`` compares a scenario's
broker configuration with :data:`DEFAULT_BROKER_CONFIG`.
"""

from __future__ import annotations

import os
import re

from harness.errors import HarnessError

ZK_CLIENT_PORT = 2181

# Test-friendly defaults: failures are detected in seconds, not the production 18 s / 30 s.
DEFAULT_BROKER_CONFIG: dict[str, str] = {
    "zookeeper.session.timeout.ms": "6000",
    # only the broker's start waits this long for ZooKeeper (Kafka's ZooKeeperClient constructor; a
    # session re-initialized later retries without a bound): a 3-node ensemble starting beside two
    # clusters' JVMs once had no leader within 10 s (zookeeper.kill_leader, certify --parallel 2)
    "zookeeper.connection.timeout.ms": "30000",
    "replica.lag.time.max.ms": "5000",
    # how long a broker's request to the controller may stay unanswered (AlterPartition, controlled
    # shutdown; Kafka's NodeToControllerChannelManager takes it as the request timeout). Kafka's 30 s
    # default froze every ISR change of a leader whose AlterPartition had gone to a controller paused
    # past its session, for 30 s after the new controller was elected (docs/scenarios.md, "the acks
    # matrix"); 10 s keeps it a third of the default, as the session timeout is (6 s of 18 s)
    "controller.socket.timeout.ms": "10000",
    "controlled.shutdown.enable": "true",
    "controlled.shutdown.max.retries": "3",
    "controlled.shutdown.retry.backoff.ms": "1000",
    "unclean.leader.election.enable": "false",
    "min.insync.replicas": "1",
    "auto.leader.rebalance.enable": "false",
    "leader.imbalance.check.interval.seconds": "300",
    "auto.create.topics.enable": "false",
    "delete.topic.enable": "true",
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.num.partitions": "3",
    "group.initial.rebalance.delay.ms": "0",
    "num.network.threads": "2",
    "num.io.threads": "4",
    "num.replica.fetchers": "1",
    "background.threads": "4",
    "log.dirs": "/var/lib/kafka/data",
    "num.partitions": "1",
}

DEFAULT_ZK_CONFIG: dict[str, str] = {
    "tickTime": "500",          # min session timeout = 2 ticks = 1 s, max = 20 ticks = 10 s
    "initLimit": "20",
    "syncLimit": "10",
    "dataDir": "/var/lib/zookeeper",
    "clientPort": str(ZK_CLIENT_PORT),
    "maxClientCnxns": "0",
    "4lw.commands.whitelist": "*",
    "admin.enableServer": "false",
    "quorumListenOnAllIPs": "true",
    "autopurge.purgeInterval": "0",  # keep every transaction log: it is the observer's ground truth
    # transaction log files grow in steps of 1 MB (ZooKeeper's default 64 MB: zoo.cfg keys it does not
    # know become zookeeper.* system properties, here zookeeper.preAllocSize, in KB). The observer copies
    # the whole file out of the container after every run and for every ctx.writes_since: 0.51 s a
    # node with 64 MB of padding, 0.08 s with 1 MB (docs/observer.md)
    "preAllocSize": "1024",
}


# JVM options of every node of an image built here (entrypoint default: -XX:TieredStopAtLevel=1, the
# C1 JIT only; on a 2-core host C2 compilation in eight JVMs was the main CPU load). Set
# KAFKA_CHAOS_JVM_OPTS (empty for the JVM's own defaults) to replace it.
JVM_OPTS_ENV = "KAFKA_CHAOS_JVM_OPTS"

# Container limits (hardening; README "Cluster details"). Every container drops all capabilities but
# NET_ADMIN (iptables/tc faults run by `docker exec` as root inside it) and gets a memory and a pids limit sized for the images' JVMs: a Kafka node runs a 512 MB heap (plus ~300 MB
# off-heap, plus a 256 MB tool JVM that admin operations start in it), ZooKeeper a 256 MB heap.
# Each is overridable by its environment variable (docker sizes like 2g; "0" removes the limit).
LIMIT_ENV = {"kafka_memory": ("KAFKA_CHAOS_KAFKA_MEMORY", "1536m"),
             "zookeeper_memory": ("KAFKA_CHAOS_ZOOKEEPER_MEMORY", "768m"),
             "pids": ("KAFKA_CHAOS_PIDS_LIMIT", "1024")}
CAP_ADD = ["NET_ADMIN"]
# A foreign image (--distribution generic) may start as root and switch to its own user, which needs
# these too (the official apache/kafka image starts as its user already); KAFKA_CHAOS_CAP_ADD
# (comma-separated) replaces the list for every container.
GENERIC_CAP_ADD = ["NET_ADMIN", "CHOWN", "DAC_OVERRIDE", "FOWNER", "SETUID", "SETGID", "KILL"]
CAP_ADD_ENV = "KAFKA_CHAOS_CAP_ADD"


def container_limits(mode: str, generic: bool = False) -> dict:
    """docker-py keyword arguments hardening one node's container (``mode``: zookeeper or a Kafka node)."""
    mem_key = "zookeeper_memory" if mode == "zookeeper" else "kafka_memory"
    env, default = LIMIT_ENV[mem_key]
    mem = os.environ.get(env, default).strip()
    penv, pdefault = LIMIT_ENV["pids"]
    pids = os.environ.get(penv, pdefault).strip()
    if not re.fullmatch(r"\d+[bkmg]?", mem.lower()):
        raise HarnessError(f"{env}={mem!r}: expected a size like 1536m or 2g (0: no limit)")
    if not pids.isdigit():
        raise HarnessError(f"{penv}={pids!r}: expected a number of processes (0: no limit)")
    caps = os.environ.get(CAP_ADD_ENV)
    cap_add = [c.strip().upper() for c in caps.split(",") if c.strip()] if caps is not None else (
        GENERIC_CAP_ADD if generic else CAP_ADD)
    # no "no-new-privileges": with it, `docker exec --user root` in a container whose user is not root
    # gets no capabilities at all (iptables: "Permission denied (you must be root)")
    kw = {"cap_drop": ["ALL"], "cap_add": cap_add}
    if mem not in ("0", "0b", "0k", "0m", "0g"):
        kw["mem_limit"] = mem
        kw["memswap_limit"] = mem          # no swap beyond the limit
    if int(pids) > 0:
        kw["pids_limit"] = int(pids)
    return kw
