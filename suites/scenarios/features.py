"""Feature upgrades change only the features asked for (KAFKA-18979, KAFKA-21426).

Two known upgrade bugs of the 4.x line raised ``kraft.version`` nobody asked for: KAFKA-18979 (kraft.version
raised without being asked) and KAFKA-21426 (``kafka-features upgrade --release-version`` turns a static
quorum, kraft.version 0, dynamic). This family runs Kafka's own ``kafka-features`` tool on a static quorum
(``apache-kraft``, formatted with ``controller.quorum.voters``: kraft.version 0) and judges the metadata log:
rule Q7 (reference/kraft_voters.py) FAILs a feature record whose level no ``action`` of the run asked for.

What a release-version upgrade asks for: every feature ``kafka-features version-mapping --release-version R``
lists for R, except ``kraft.version`` -- a quorum becomes dynamic only by an explicit
``--feature kraft.version=1`` (KIP-853's upgrade path); the action records that set as ``params.features``.

On 4.4.0 this scenario FAILs (2026-11-28): the upgrade wrote KRaftVersionRecord 1 and a VotersRecord on the
static quorum (KAFKA-21426 reproduced; 4.4.0's ``version-mapping --release-version 4.4-IV2`` lists
``kraft.version=1``, so the tool asks the controller for it). Tagged ``chaos``, not ``conformance``, so that
a known Kafka bug does not hide the conformance suite's other results; run it by name.
"""

from __future__ import annotations

import re

from harness.cluster import quorum_ops
from harness.scenario.scenario import RunContext, Scenario, TopicSpec

from .common import T

KRAFT_VERSION = "kraft.version"
DOWNGRADED = "transaction.version"


def _release_version_upgrade(ctx: RunContext) -> None:
    cl = ctx.cluster
    before = quorum_ops.finalized_features(cl)
    text = quorum_ops.features_tool(cl, ["version-mapping"])[1]
    mapping = quorum_ops.parse_mapping(text)
    rv = _release_name(text)
    # a real change for the upgrade to make: transaction.version one level down first (asked for)
    if isinstance(before.get(DOWNGRADED), int) and before[DOWNGRADED] >= 2:
        low = before[DOWNGRADED] - 1
        ctx.action("feature_downgrade", lambda: quorum_ops.features_tool(cl, ["downgrade", "--feature",
                                                                              f"{DOWNGRADED}={low}"]),
                   features={DOWNGRADED: low})
        ctx.wait_until(f"{DOWNGRADED} finalized at {low}",
                       lambda: quorum_ops.finalized_features(cl).get(DOWNGRADED) == low, 30, interval_s=1.0)
    asked = {k: v for k, v in mapping.items() if k != KRAFT_VERSION}
    ctx.action("feature_upgrade", lambda: quorum_ops.features_tool(cl, ["upgrade", "--release-version", rv]),
               release_version=rv, features=asked)
    ctx.wait_until(f"{DOWNGRADED} back at the release's level {mapping.get(DOWNGRADED)}",
                   lambda: quorum_ops.finalized_features(cl).get(DOWNGRADED) == mapping.get(DOWNGRADED), 30,
                   interval_s=1.0)
    after = quorum_ops.finalized_features(cl)
    ctx.expect(f"kraft.version unchanged by `kafka-features upgrade --release-version {rv}` on a static quorum "
               f"(KAFKA-21426): {before.get(KRAFT_VERSION)} -> {after.get(KRAFT_VERSION)}",
               after.get(KRAFT_VERSION) == before.get(KRAFT_VERSION), {"before": before, "after": after})


def _release_name(mapping_text: str) -> str:
    """The release version the mapping names for metadata.version (``metadata.version=33 (4.4-IV2)``)."""
    m = re.search(r"metadata\.version=\d+\s*\(([^)]+)\)", mapping_text)
    if not m:
        raise ValueError(f"kafka-features version-mapping printed no metadata.version: {mapping_text[-200:]}")
    return m.group(1)


SCENARIOS: list[Scenario] = [
    Scenario("features.release_version_upgrade", "on a static quorum (kraft.version 0): transaction.version one "
             "level down, then `kafka-features upgrade --release-version` (the newest): only the features of the "
             "release mapping change, never kraft.version (KAFKA-21426, KAFKA-18979; rule Q7 on the metadata log)",
             _release_version_upgrade, tags=("chaos",), brokers=3, topics=[TopicSpec(T, 3, 3)], kraft=True,
             needs_roles=("controller",), max_duration_s=180, reads_controller_log=True, min_version="4.0"),
]
