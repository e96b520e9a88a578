"""Names of the run record's event types and of its ``phase`` events (docs/run-record.md).

The one list of the strings ``events.jsonl`` uses for its ``type`` field (and the ``name`` of the
phases readers look for). Writers (runner, nemesis, observer, workload) and readers (checkers,
``reference/``, ``reports/``) use these names instead of spelling the strings again.
"""

from __future__ import annotations

# -- faults (the nemesis): one start, one heal and one end per applied fault ----------------------
FAULT_START = "fault.start"
FAULT_HEAL = "fault.heal"
FAULT_END = "fault.end"
FAULT_TYPES = (FAULT_START, FAULT_HEAL, FAULT_END)

# -- the run's own progress --------------------------------------------------------------------------
PHASE = "phase"
ACTION = "action"
EXPECT = "expect"
DOCKER_EVENT = "docker.event"

# -- clients (the workload) --------------------------------------------------------------------------
CLIENT = "client"
CLIENT_LIFE = "client.life"
CLIENT_CONFIG = "client.config"
CLIENT_ASSIGN = "client.assign"
GROUP_ASSIGN = "group.assign"
TXN = "txn"

# -- the observer: ZooKeeper, the admin API, the KRaft metadata log --------------------------------------
ZK_PREFIX = "zk."
ZK_PARTITION_STATE = "zk.partition_state"
ZK_GAP = "zk.gap"
ADMIN_METADATA = "admin.metadata"
# a share group's share-partition start offsets (harness/observer/share_sampler.py, docs/share-groups.md)
SHARE_SPSO = "share.spso"
SHARE_SPSO_SAMPLER = "share.spso_sampler"

# -- phase names (``{"type": "phase", "name": ...}``) ----------------------------------------------------
PHASE_RUN_END = "run.end"
PHASE_DRAIN_END = "drain.end"
PHASE_ABORTED = "aborted"
PHASE_ENVIRONMENT_ERROR = "environment.error"
PHASE_SCRIPT_FAILED = "script.failed"
PHASE_FAULTS_HEALED = "faults.healed"
# the runner skipped the full-ISR wait after healing: a cluster container no longer existed (harness/runner.py)
PHASE_PROGRESS_NOT_AWAITED = "progress.not_awaited"
PHASE_WORKLOAD_STOPPING = "workload.stopping"

