"""Conformance profiles and version gates (spec §8.1, §10.3).

* ``apache-zk-<major>.<minor>``: hard invariants H1-H19 **and** the Apache determinism rules
  D1-D20, with the behaviour of that Apache Kafka version (gates 2.2/2.4/2.7/2.8/3.2/3.3/3.7).
* ``compatible``: hard invariants only, for other Kafka-compatible brokers. Version gates that
  decide whether a hard invariant is enforced at all (e.g. KIP-841 for H19 on ISR additions)
  use the given Kafka version, or the newest ZK-mode behaviour when none is known.
* ``kraft-<major>.<minor>`` (alias ``apache-kraft-<major>.<minor>``): a KRaft-mode Apache Kafka run,
  judged from protocol observations by ``reference/kraft.py`` (spec §9, §8.1). ``Profile.mode`` is
  ``"kraft"`` for it, and for ``compatible`` when the run has no ZooKeeper (see :func:`profile_for`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from reference.versions import series as parse_version  # noqa: F401  ("3.9.2" -> (3, 9); ValueError otherwise)

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


@dataclass(frozen=True)
class Profile:
    """What the checker enforces. ``determinism`` switches the D-rules on (Apache profiles)."""

    name: str
    version: Version
    determinism: bool
    mode: str = "zk"        # "zk": ZooKeeper observations (checker.py); "kraft": protocol samples (kraft.py)

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


# ---------------------------------------------------------------------------- KRaft (spec §9)
OLDEST_KRAFT: Version = (3, 3)   # KRaft production-ready (spec §9 heading)
LATEST_KRAFT: Version = (4, 1)   # newest behaviour the spec describes (ELR default for new clusters, §9.5)


def kraft(version: str | Version) -> Profile:
    """``kraft-<major>.<minor>``: hard invariants and the KRaft determinism of that Apache version."""
    v = parse_version(version) if isinstance(version, str) else tuple(version)
    if v < OLDEST_KRAFT:
        raise ValueError(f"kraft profile requested for Kafka {v[0]}.{v[1]}: KRaft is production-ready from 3.3 "
                         "(spec §9); use an apache-zk profile")
    return Profile(name=f"kraft-{v[0]}.{v[1]}", version=v, determinism=True, mode="kraft")


def _kraft_profile_for(kafka_version: str | None, name: str | None) -> Profile:
    """Profile for a run without ZooKeeper (``distribution`` apache-kraft or ``zookeepers`` 0)."""
    if not name:
        return kraft(kafka_version) if kafka_version else Profile("compatible", LATEST_KRAFT, False, "kraft")
    if name == "compatible":
        v = parse_version(kafka_version) if kafka_version else LATEST_KRAFT
        return Profile("compatible", v, False, "kraft")
    if name in ("kraft", "apache-kraft"):
        if not kafka_version:
            raise ValueError(f"profile {name!r} needs a kafka_version (or use 'kraft-<major>.<minor>')")
        return kraft(kafka_version)
    m = re.fullmatch(r"(?:apache-)?kraft-(\d+\.\d+)(?:\.\d+)?", name)
    if m:
        return kraft(m.group(1))
    if name.startswith("apache-zk"):
        raise ValueError(f"profile {name!r} describes the ZooKeeper-mode controller, but this run has no "
                         "ZooKeeper; use 'kraft-<major>.<minor>' (e.g. 'kraft-3.9') or 'compatible'")
    raise ValueError(f"unknown conformance profile {name!r} for a KRaft run: expected 'compatible', 'kraft' or "
                     "'kraft-<major>.<minor>' (e.g. 'kraft-3.9')")


def profile_for(kafka_version: str | None, name: str | None, kraft_run: bool = False) -> Profile:
    """Resolve a profile from run metadata.

    ``name`` wins when given: ``"compatible"``, ``"apache-zk-3.9"`` or plain ``"apache-zk"`` (then the
    version comes from ``kafka_version``). Without a name, a known Apache version selects
    ``apache-zk-<version>`` and an unknown one (foreign image) selects ``compatible``.

    ``kraft-<major>.<minor>`` / ``apache-kraft-<major>.<minor>`` always select the KRaft profile. With
    ``kraft_run`` (the run had no ZooKeeper: the record's ``controller_model``, harness.record.facts) the default is
    ``kraft-<version>`` and ``compatible`` judges protocol observations; an ``apache-zk`` name is an error.
    """
    if kraft_run or (name and re.fullmatch(r"(?:apache-)?kraft(?:-.*)?", name)):
        return _kraft_profile_for(kafka_version, name)
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
    raise ValueError(f"unknown conformance profile {name!r}: expected 'compatible', 'apache-zk', "
                     "'apache-zk-<major>.<minor>' (e.g. 'apache-zk-3.9') or 'kraft-<major>.<minor>'")


# ---------------------------------------------------------------------------- progress bounds (spec §8.4)
ZK_SESSION_KEY = "zookeeper.session.timeout.ms"
LAG_KEY = "replica.lag.time.max.ms"
PROGRESS_GRACE_S = 30.0          # slack for a loaded host: controller event queue, failover, GC (§8.4 "generous")
REASSIGN_GRACE_S = 60.0          # plus the catch-up of the adding replicas (small test topics)
LEGACY_ISR_NOTIFY_S = 60.0       # §1.8: pre-2.7 ISR changes reach the controller within 5-60 s


@dataclass(frozen=True)
class ProgressBounds:
    """Time bounds of the ZooKeeper-mode progress rules (``reference/liveness.py``, spec §8.4), in s.

    * ``election_s`` (P1, and P3 once the target replicas are all in the ISR): the session timeout
      (``zookeeper.session.timeout.ms``, §1.3: 18 s from 2.5, 6 s before; after a ZooKeeper or
      controller outage the brokers' sessions and ``/controller`` may take that long to settle) plus
      ``PROGRESS_GRACE_S``. In Apache the election itself is one controller event (§5.2, §8.4 P1):
      0.1-1.3 s in the recorded runs of this harness. Before 2.7 the legacy ISR path adds up to
      60 s before the controller learns of an ISR change (§1.8), which P3 needs.
    * ``reassign_s`` (P3 with every target replica registered and no fault open): session timeout +
      ``replica.lag.time.max.ms`` (§5.7-5.8: followers catch up and join the ISR) + ``REASSIGN_GRACE_S``.
    """

    election_s: float
    reassign_s: float
    isr_notify_s: float = 0.0


def _ms(cfg: dict, key: str, default_s: float) -> float:
    try:
        return float(cfg[key]) / 1000.0 if cfg.get(key) is not None else default_s
    except (TypeError, ValueError):
        return default_s


def progress_bounds(profile: Profile, broker_config: dict | None) -> ProgressBounds:
    """Bounds for a run of ``profile`` with ``broker_config`` (metadata ``broker_config``, string values)."""
    cfg = broker_config or {}
    session = _ms(cfg, ZK_SESSION_KEY, 18.0 if profile.at_least((2, 5)) else 6.0)
    lag = _ms(cfg, LAG_KEY, 30.0 if profile.at_least((2, 5)) else 10.0)
    notify = 0.0 if profile.at_least(GATE_ALTER_PARTITION) else LEGACY_ISR_NOTIFY_S
    return ProgressBounds(election_s=session + PROGRESS_GRACE_S,
                          reassign_s=session + lag + REASSIGN_GRACE_S + notify, isr_notify_s=notify)
