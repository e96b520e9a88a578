"""Conformance profiles and version gates (spec §8.1, §10.3).

* ``apache-zk-<major>.<minor>``: hard invariants H1-H19 **and** the Apache determinism rules
  D1-D20, with the behaviour of that Apache Kafka version (gates 2.2/2.4/2.7/2.8/3.2/3.3/3.7).
* ``compatible``: hard invariants only, for other Kafka-compatible brokers. Version gates that
  decide whether a hard invariant is enforced at all (e.g. KIP-841 for H19 on ISR additions)
  use the given Kafka version, or the newest ZK-mode behaviour when none is known.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

Version = tuple[int, int]

LATEST_ZK: Version = (3, 9)   # last Apache release with a ZooKeeper-mode controller (§10.3: 4.0 removes it)
OLDEST_ZK: Version = (2, 0)   # oldest behaviour described by the spec

# Version gates (spec §10.3).
GATE_FENCING: Version = (2, 2)        # atomic /controller + epoch multi-op, zombie fencing (KAFKA-6082), broker epochs
GATE_KIP455: Version = (2, 4)         # adding/removing replicas, API reassignment, cancel, ElectLeaders(UNCLEAN)
GATE_ALTER_PARTITION: Version = (2, 7)  # AlterIsr/AlterPartition replaces direct leader ISR writes
GATE_TOPIC_ID: Version = (2, 8)       # topic_id in the topic znode
GATE_RECOVERY: Version = (3, 2)       # leader_recovery_state (KIP-704)
GATE_KIP841: Version = (3, 3)         # AlterPartition rejects non-live ISR members
GATE_STRICT_MIN_ISR: Version = (3, 7)  # HW does not advance under min ISR (KAFKA-15583)


def parse_version(text: str) -> Version:
    """``"3.9"``, ``"3.9.0"``, ``"2.8.1-rc0"`` -> ``(3, 9)``. Raises ValueError on anything else."""
    m = re.match(r"^\s*(\d+)\.(\d+)", str(text))
    if not m:
        raise ValueError(f"cannot parse Kafka version {text!r}: expected '<major>.<minor>[...]'")
    return int(m.group(1)), int(m.group(2))


@dataclass(frozen=True)
class Profile:
    """What the checker enforces. ``determinism`` switches the D-rules on (Apache profiles)."""

    name: str
    version: Version
    determinism: bool

    def at_least(self, gate: Version) -> bool:
        return self.version >= gate

    @property
    def is_apache(self) -> bool:
        return self.determinism


def apache(version: str | Version) -> Profile:
    v = parse_version(version) if isinstance(version, str) else tuple(version)
    if v >= (4, 0):
        raise ValueError(f"apache-zk profile requested for Kafka {v[0]}.{v[1]}: ZooKeeper mode was removed in 4.0 "
                         "(spec §10.3); use the 'compatible' profile")
    if v < OLDEST_ZK:
        raise ValueError(f"Kafka {v[0]}.{v[1]} predates the spec's baseline 2.0")
    return Profile(name=f"apache-zk-{v[0]}.{v[1]}", version=v, determinism=True)


def compatible(version: str | Version | None = None) -> Profile:
    if version is None:
        v = LATEST_ZK
    else:
        v = parse_version(version) if isinstance(version, str) else tuple(version)
    return Profile(name="compatible", version=v, determinism=False)


def profile_for(kafka_version: str | None, name: str | None) -> Profile:
    """Resolve a profile from run metadata.

    ``name`` wins when given: ``"compatible"``, ``"apache-zk-3.9"`` or plain ``"apache-zk"`` (then the
    version comes from ``kafka_version``). Without a name, a known Apache version selects
    ``apache-zk-<version>`` and an unknown one (foreign image) selects ``compatible``.
    """
    if name is None or name == "":
        return apache(kafka_version) if kafka_version else compatible()
    if name == "compatible":
        return compatible(kafka_version) if kafka_version else compatible()
    if name == "apache-zk":
        if not kafka_version:
            raise ValueError("profile 'apache-zk' needs a kafka_version (or use 'apache-zk-<major>.<minor>')")
        return apache(kafka_version)
    m = re.fullmatch(r"apache-zk-(\d+\.\d+)(?:\.\d+)?", name)
    if m:
        return apache(m.group(1))
    raise ValueError(f"unknown conformance profile {name!r}: expected 'compatible', 'apache-zk' or "
                     "'apache-zk-<major>.<minor>' (e.g. 'apache-zk-3.9')")
