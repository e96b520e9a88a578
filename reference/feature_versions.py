"""Which feature levels each Apache Kafka release line knows (pure data; docs/kraft.md "Feature levels").

This is what a broker *supports*, read from its jars, so that a scenario asking for a level is refused
before a cluster starts; what a run *finalized* is read from its metadata log
(:func:`harness.distributions.control_history.feature_levels`, the one definition of a run's levels).

Read on 2026-11-28 (3.9, 4.1, 4.4) and 2026-11-29 (4.0, 4.2, 4.3: the newest patch of each line Maven
Central serves, 4.0.2, 4.2.2 and 4.3.1; 4.1.2 and 4.4.0 read again the same way gave the rows already here)
from each release's ``kafka-server-common`` jar: the enum
``org.apache.kafka.server.common.Feature`` (``Features`` in 3.9; source
``server-common/src/main/java/org/apache/kafka/server/common/Feature.java``) gives each feature's
``minimumProduction``, ``latestProduction`` and ``latestTesting`` level, ``MetadataVersion`` the
``metadata.version`` levels (minimum for a KRaft format, ``LATEST_PRODUCTION``, the newest); and
``kafka-features feature-dependencies`` the dependencies (4.0.2 to 4.4.0: only
``eligible.leader.replicas.version=1`` needs ``metadata.version`` >= 23, 4.0-IV1). ``kafka-storage
format --feature NAME=LEVEL`` exists in each of 3.9.2, 4.1.2 and 4.4.0 (its ``--help``).

From 4.0 on the rows were printed by ``scripts/FeatureTable.java`` on each release's ``kafka-server-common`` and
``kafka-clients`` jars: ``Feature.PRODUCTION_FEATURES`` (``featureName``, ``minimumProduction``,
``latestProduction``, ``latestTesting``, each ``FeatureVersion.dependencies()``) and ``MetadataVersion``
(``MINIMUM_VERSION``, ``LATEST_PRODUCTION``, ``latestTesting()``); ``kafka-storage format --feature`` is in
each of 4.0.2, 4.2.2 and 4.3.1 (``kafka/tools/StorageTool$`` of ``kafka_2.13-<v>.jar`` holds ``--feature``).
4.0 has no ``share.version`` and no ``streams.version`` (absent from its ``Feature`` enum: share groups there
are early access behind broker configs); 4.2 and 4.3 make ``streams.version=1`` a production level.

A level above ``latestProduction`` is a testing level: the storage tool formats it only with
``unstable.feature.versions.enable=true`` in the node's configuration.
"""

from __future__ import annotations

from reference import versions

METADATA_VERSION = "metadata.version"
KRAFT_VERSION = "kraft.version"

# series -> feature -> (lowest level, latest production level, latest testing level)
# metadata.version: the lowest is the oldest release version the storage tool formats (3.9: 3.0-IV0 = 1;
# 4.x: 3.3-IV3 = 7); the other features' lowest is 0 (disabled: no FeatureLevelRecord is written)
KNOWN: dict[tuple[int, int], dict[str, tuple[int, int, int]]] = {
    (3, 9): {METADATA_VERSION: (1, 21, 23), KRAFT_VERSION: (0, 1, 1), "transaction.version": (0, 0, 2)},
    (4, 1): {METADATA_VERSION: (7, 27, 29), KRAFT_VERSION: (0, 1, 1), "transaction.version": (0, 2, 2),
             "group.version": (0, 1, 1), "eligible.leader.replicas.version": (0, 1, 1),
             "share.version": (0, 1, 1), "streams.version": (0, 0, 1)},
    (4, 0): {METADATA_VERSION: (7, 25, 26), KRAFT_VERSION: (0, 1, 1), "transaction.version": (0, 2, 2),
             "group.version": (0, 1, 1), "eligible.leader.replicas.version": (0, 1, 1)},
    (4, 2): {METADATA_VERSION: (7, 29, 30), KRAFT_VERSION: (0, 1, 1), "transaction.version": (0, 2, 2),
             "group.version": (0, 1, 1), "eligible.leader.replicas.version": (0, 1, 1),
             "share.version": (0, 1, 1), "streams.version": (0, 1, 1)},
    (4, 3): {METADATA_VERSION: (7, 30, 31), KRAFT_VERSION: (0, 1, 1), "transaction.version": (0, 2, 2),
             "group.version": (0, 1, 1), "eligible.leader.replicas.version": (0, 1, 1),
             "share.version": (0, 1, 1), "streams.version": (0, 1, 1)},
    (4, 4): {METADATA_VERSION: (7, 33, 34), KRAFT_VERSION: (0, 1, 1), "transaction.version": (0, 2, 2),
             "group.version": (0, 1, 1), "eligible.leader.replicas.version": (0, 1, 1),
             "share.version": (0, 2, 2), "streams.version": (0, 1, 1)},
}
# (feature, level) -> (feature it needs, lowest level of it); 4.x (kafka-features feature-dependencies)
DEPENDS: dict[tuple[str, int], tuple[str, int]] = {("eligible.leader.replicas.version", 1): (METADATA_VERSION, 23)}
# metadata.version level -> its release version, for messages and reports (MetadataVersion)
RELEASE_OF_MV = {7: "3.3-IV3", 14: "3.6-IV2", 21: "3.9-IV0", 23: "4.0-IV1", 25: "4.0-IV3", 27: "4.1-IV1",
                 29: "4.2-IV1", 30: "4.3-IV0", 33: "4.4-IV2"}

NAMES = tuple(sorted({f for known in KNOWN.values() for f in known}))
# the levels a scenario or a run's --feature may set: the features users meet during upgrades
MATRIX = (METADATA_VERSION, "transaction.version", "group.version", "eligible.leader.replicas.version",
          "share.version", KRAFT_VERSION)


def known(kafka_version: str | None) -> dict[str, tuple[int, int, int]] | None:
    """The features of ``kafka_version``'s release line (None: a line not read here, or no version)."""
    v = versions.parse_or_none(kafka_version)
    return KNOWN.get((v[0], v[1])) if v is not None and len(v) >= 2 else None


def problem(kafka_version: str | None, features: dict[str, int], unstable: bool = False) -> str | None:
    """Why Apache Kafka ``kafka_version`` cannot be formatted with ``features`` (None: it can), one line
    naming the first offending key. ``unstable``: the nodes set ``unstable.feature.versions.enable``."""
    if not features:
        return None
    table = known(kafka_version)
    if table is None:
        lines = ", ".join(f"{a}.{b}" for a, b in sorted(KNOWN))
        return (f"features: the feature levels of Kafka {kafka_version or '(unknown version)'} are not known here "
                f"(read for {lines}: reference/feature_versions.py)")
    for name, level in features.items():
        if name not in table:
            return f"features.{name}: Kafka {kafka_version} has no such feature; it has {', '.join(sorted(table))}"
        low, prod, test = table[name]
        top = test if unstable else prod
        if not low <= level <= top:
            extra = (f" ({test} with unstable.feature.versions.enable=true)" if test > prod and not unstable else "")
            return f"features.{name}={level}: Kafka {kafka_version} knows levels {low}..{top}{extra}"
        need = DEPENDS.get((name, level))
        if need and versions.parse(kafka_version)[0] >= 4:
            have = features.get(need[0], table[need[0]][1])
            if have < need[1]:
                return (f"features.{name}={level} needs {need[0]} >= {need[1]} "
                        f"({RELEASE_OF_MV.get(need[1], need[1])}); asked: {need[0]}={have}")
    return None

