"""``check_conformance``: a run record in, the verdict of its controller checks out. Picks the
checker for the run's mode: the ZooKeeper-mode checker (``checker.py``, from the txn-log history) or
the protocol checker (``kraft.py``, from protocol samples)."""

from __future__ import annotations

from reference.checker import Checker
from reference.kraft import check_protocol_conformance
from harness.record.facts import KRAFT
from harness.record.read import upgrade
from reference.profiles import Profile, profile_for
from reference.result import ConformanceResult

__all__ = ["check_conformance"]


def check_conformance(events: list[dict], metadata: dict | None = None,
                      profile: str | Profile | None = None) -> ConformanceResult:
    """Check a run's observed controller behaviour against ``profile`` (spec §8).

    ``profile``: a :class:`Profile`, a profile name (``"apache-zk-3.9"``, ``"compatible"``,
    ``"kraft-3.9"``), or None to use ``metadata["profile"]`` / ``metadata["kafka_version"]``.

    KRaft hook: a ``kraft-*`` profile, or any profile on a run without ZooKeeper (metadata
    ``controller_model: "kraft"``; :func:`harness.record.facts.controller_model` for older records), is judged from protocol samples by
    :func:`reference.kraft.check_protocol_conformance` (same result shape). An ``apache-zk-*``
    profile on such a run is a ``ValueError``.
    """
    metadata, events = upgrade(metadata or {}, list(events))     # an older record in the current shape
    kraft_run = metadata["controller_model"] == KRAFT
    if not isinstance(profile, Profile):
        profile = profile_for(metadata.get("kafka_version"), profile or metadata.get("profile"), kraft_run)
    elif kraft_run and profile.mode == "zk" and profile.determinism:
        raise ValueError(f"profile {profile.name} describes the ZooKeeper-mode controller, but this run has no "
                         "ZooKeeper; use a kraft-<major>.<minor> profile or compatible")
    if profile.mode == "kraft" or kraft_run:
        return check_protocol_conformance(events, metadata, profile)
    return Checker(profile, metadata).run(events)
