"""11. Randomized chaos: a seeded random schedule of mixed faults over a longer workload.

The schedule comes from the run's seed and the fault mix below (harness.schedule.generate_schedule),
is stored in metadata.json and can be re-run exactly with ``kafka-chaos run --replay RUN_DIR``.
Length: ``kafka-chaos run nightly --length SECONDS`` (default 300 s of faults). Faults never
overlap; each heal is followed by a quiet interval. Every fault kind here keeps a majority of the
ISR able to recover, so the run must end with every acknowledged write readable (acks=all, min ISR 2,
idempotent producer) and every controller decision allowed by the model.

One mix serves every distribution (harness.schedule.for_roles): faults and targets that need a part the
cluster lacks are left out before the seed draws, so a ZooKeeper-mode run draws the ZooKeeper faults
(``zk_*``, ``delete_controller_znode``, ``random-zk``) and a KRaft run the quorum targets
(``quorum-leader``, ``quorum-follower``: the active controller and a voter, docs/faults.md), and a
ZooKeeper-mode schedule for a seed is the same as before the quorum targets were listed.
"""

from __future__ import annotations

from harness.scenario import Scenario, TopicSpec

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

SCENARIOS: list[Scenario] = [
    Scenario("nightly.mixed", "seeded random schedule of mixed broker, network, ZooKeeper (KRaft: quorum) and "
             "controller faults (--length s, replayable)", None, tags=("nightly",), zookeepers=3, kraft=True,
             broker_config=_CONFIG,
             topics=[TopicSpec(T, 3, 3)], workload=_WORKLOAD, fault_mix=MIXED,
             max_duration_s=MIXED["length"] + 120),
    Scenario("nightly.short", "45 s seeded random schedule (kill, pause, /controller deletion; KRaft: kill the "
             "quorum leader); replayable", None, tags=("chaos",), kraft=True, broker_config=_CONFIG, topics=[TopicSpec(T, 3, 3)], workload=_WORKLOAD,
             fault_mix=SHORT, max_duration_s=SHORT["length"] + 120),
]
