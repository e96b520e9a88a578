"""11. Randomized chaos: a seeded random schedule of mixed faults over a longer workload.

The schedule comes from the run's seed and the fault mix below (harness.scenario.schedule.generate_schedule),
is stored in metadata.json and can be re-run exactly with ``kafka-chaos run --replay RUN_DIR``.
Length: ``kafka-chaos run nightly --length SECONDS`` (default 300 s of faults). Faults never
overlap; each heal is followed by a quiet interval. Every fault kind here keeps a majority of the
ISR able to recover, so the run must end with every acknowledged write readable (acks=all, min ISR 2,
idempotent producer) and every controller decision allowed by the model.

One mix serves every distribution (harness.scenario.schedule.for_roles): faults and targets that need a part the
cluster lacks are left out before the seed draws, so a ZooKeeper-mode run draws the ZooKeeper faults
(``zk_*``, ``delete_controller_znode``, ``random-zk``) and a KRaft run the quorum targets
(``quorum-leader``, ``quorum-follower``: the active controller and a voter, docs/faults.md), and a
ZooKeeper-mode schedule for a seed is the same as before the quorum targets were listed.
"""

from __future__ import annotations

from harness.scenario.scenario import Scenario, TopicSpec

from .common import T

_WORKLOAD = {"topic": T, "partitions": 3, "acks": "all", "enable_idempotence": True}
_CONFIG = {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"}

MIXED = {
    "length": 300, "interval": [6, 12], "duration": [5, 15],
    "faults": {
        "kill": {"weight": 2, "targets": ["random-broker", "controller", f"leader({T},0)", "quorum-follower"]},
        "stop": {"weight": 1, "targets": ["random-broker", f"leader({T},1)"]},
        "pause": {"weight": 2, "targets": ["random-broker", f"follower({T},2)", "controller", "quorum-leader"]},
        "isolate": {"weight": 1, "targets": ["random-broker", "controller", "quorum-leader"]},
        "partition": {"weight": 1, "targets": ["random-minority"]},
        "link_cut": {"weight": 1, "targets": [f"leader({T},0)"], "params": {"links": ["client"]}},
        "loss": {"weight": 1, "targets": ["random-broker"], "params": {"loss_pct": 20}},
        "zk_expire_session": {"weight": 1, "targets": ["random-broker"]},
        "delete_controller_znode": {"weight": 1},
        "zk_kill": {"weight": 1, "targets": ["random-zk"], "duration": [5, 10]},
    },
}

# a short mix of the most common faults, for CI and for trying the replay path quickly; ZooKeeper mode
# deletes /controller, KRaft kills the quorum leader
SHORT = {
    "length": 45, "interval": [4, 6], "duration": [6, 8],
    "faults": {"kill": {"weight": 1, "targets": ["random-broker", "quorum-leader"]},
               "pause": {"weight": 1, "targets": [f"follower({T},0)"]},
               "delete_controller_znode": {"weight": 1}},
}

# transactions and consumer groups under a seeded mix aimed at their coordinators (docs/transactions.md):
# the transaction coordinator of the workload's transactional id, the group coordinator of its group
_TXN_ID, _GROUP = "kc-tx-txn", "kc-g-grp"
TXN_MIX = {
    "length": 240, "interval": [8, 14], "duration": [6, 14],
    "faults": {
        "kill": {"weight": 2, "targets": [f"txn-coordinator({_TXN_ID})", "leader(txn,0)", "quorum-leader"]},
        "pause": {"weight": 2, "targets": [f"txn-coordinator({_TXN_ID})", "random-broker"]},
        "partition": {"weight": 1, "targets": [f"txn-coordinator({_TXN_ID})"]},
        "zk_expire_session": {"weight": 1, "targets": ["random-broker"]},
    },
}
GROUP_MIX = {
    "length": 240, "interval": [8, 14], "duration": [6, 14],
    "faults": {
        "kill": {"weight": 2, "targets": [f"group-coordinator({_GROUP})", "random-broker"]},
        "pause": {"weight": 2, "targets": [f"group-coordinator({_GROUP})", "random-broker"]},
        "isolate": {"weight": 1, "targets": [f"group-coordinator({_GROUP})"]},
    },
}
_TXN_TOPIC = [TopicSpec("txn", 4, 3, config={"min.insync.replicas": "2"})]
_GRP_TOPIC = [TopicSpec("grp", 6, 3, config={"min.insync.replicas": "2"})]

SCENARIOS: list[Scenario] = [
    Scenario("nightly.mixed", "seeded random schedule of mixed broker, network, ZooKeeper (KRaft: quorum) and "
             "controller faults (--length s, replayable)", None, tags=("nightly",), zookeepers=3, kraft=True,
             broker_config=_CONFIG,
             topics=[TopicSpec(T, 3, 3)], workload=_WORKLOAD, fault_mix=MIXED,
             max_duration_s=MIXED["length"] + 120),
    Scenario("nightly.short", "45 s seeded random schedule (kill, pause, /controller deletion; KRaft: kill the "
             "quorum leader); replayable", None, tags=("chaos",), kraft=True, broker_config=_CONFIG, topics=[TopicSpec(T, 3, 3)], workload=_WORKLOAD,
             fault_mix=SHORT, max_duration_s=SHORT["length"] + 120),
    Scenario("nightly.transactions", "seeded random schedule against a transactional workload: the transaction "
             "coordinator (txn-coordinator target) and a data leader killed, paused, partitioned (--length s, "
             "replayable)", None, tags=("nightly",), kraft=True, topics=_TXN_TOPIC,
             workload={"kind": "txn", "topic": "txn", "partitions": 4, "rate": 20.0, "abort_ratio": 0.2},
             checks=("conformance", "transactions", "expectations"),
             coverage={"acked_after_heal": 0, "producers_alive": False}, min_version="2.5",
             fault_mix=TXN_MIX, max_duration_s=TXN_MIX["length"] + 120),
    Scenario("nightly.groups", "seeded random schedule against a consumer group: the group coordinator "
             "(group-coordinator target) and random brokers killed, paused, isolated (--length s, replayable)",
             None, tags=("nightly",), kraft=True, topics=_GRP_TOPIC,
             workload={"kind": "group", "topic": "grp", "partitions": 6, "rate": 100.0, "members": 4},
             checks=("conformance", "durability", "groups", "expectations"),
             fault_mix=GROUP_MIX, max_duration_s=GROUP_MIX["length"] + 120),
]
