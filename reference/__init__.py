"""Reference model of the ZooKeeper-mode Apache Kafka controller and a conformance checker.

Everything here is pure Python: no I/O, no clock, no randomness (time and choices come in as
event data). The behaviour follows ``shared/reference/controller-spec.md``; every rule in the
code names the spec section (``§x.y``), hard invariant (``H1``..``H19``) or Apache determinism
rule (``D1``..``D20``) it implements. Where to find a rule:

* ``elections.py``   -- §4.1-§4.6 election strategies and the controller-side ISR removal
* ``model.py``       -- §2, §5, §10: the controller event loop (broker/controller events)
* ``model_events.py`` -- §10.2: the model's input events (one dataclass each)
* ``reassignment.py``-- §7: KIP-455 and legacy (pre-2.4) reassignment
* ``deletion.py``    -- §6.2: topic deletion
* ``invariants.py``  -- §8.2: single-state and transition hard invariants
* ``checker.py``     -- §8: conformance checking of observed run-record events
* ``records.py``     -- the checker's slotted per-write records (observed state, write context)
* ``events.py``      -- adapter from run-record ``zk.*`` events to typed observations
* ``profiles.py``    -- ``apache-zk-<version>`` / ``kraft-<version>`` / ``compatible`` profiles, version gates
* ``kraft.py``       -- §8.1, §9: KRaft runs judged from protocol samples (``check_protocol_conformance``)
* ``kraft_rules.py`` / ``kraft_samples.py`` / ``kraft_liveness.py`` -- the KRaft rule table, protocol
  samples as records, faults as the KRaft checker's liveness signal
"""

import importlib

# The package's names load on first use (PEP 562), so ``from reference import versions`` from the
# harness's start-up path does not pull in the model and checkers.
_EXPORTS = {
    "Profile": "profiles", "profile_for": "profiles",
    "Assignment": "state", "ClusterState": "state", "LeaderAndIsr": "state", "ModelConfig": "state",
    "ControllerModel": "model", "Outcome": "model",
    "ConformanceResult": "result", "Divergence": "result", "check_conformance": "conformance",
    "check_protocol_conformance": "kraft",
}


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f"reference.{_EXPORTS[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'reference' has no attribute {name!r}")


__all__ = [
    "Assignment", "ClusterState", "ConformanceResult", "ControllerModel", "Divergence",
    "LeaderAndIsr", "ModelConfig", "Outcome", "Profile", "check_conformance", "check_protocol_conformance",
    "profile_for",
]
