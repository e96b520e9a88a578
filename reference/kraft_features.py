"""Finalized feature levels from the KRaft metadata log (pure).

A KRaft cluster's finalized features (``metadata.version``, ``transaction.version``, ``group.version``,
``eligible.leader.replicas.version``, ``share.version``, ``kraft.version``, ``streams.version``) are written as
FeatureLevelRecords (metadata record type 12, ``metadata/src/main/resources/common/metadata/FeatureLevelRecord.json``
at tag 4.4.0: ``Name`` string, ``FeatureLevel`` int16). The replay rule is the controller's
(``metadata/.../controller/FeatureControlManager.java`` ``replay(FeatureLevelRecord)`` at 4.4.0): the last record
of a name sets its level; level 0 removes the feature (a feature never written is at level 0).

Input: the run record's decoded metadata-log events (``harness/observer/kraft_events.py`` emits
``{"type": "meta.feature", "name": ..., "level": ...}``); raw decoded records of the form
``{"record": "FeatureLevelRecord", "name": ..., "feature_level": ...}`` are accepted too. Other events are ignored,
so the whole event list can be passed. ZooKeeper mode has no such records: the result is {}.
"""
from __future__ import annotations

from collections.abc import Iterable

KNOWN_FEATURES = ("metadata.version", "kraft.version", "transaction.version", "group.version",
                  "eligible.leader.replicas.version", "share.version", "streams.version")


def _feature(rec: dict) -> tuple[str, int] | None:
    if rec.get("type") == "meta.feature" and rec.get("name"):
        return str(rec["name"]), int(rec.get("level") or 0)
    if rec.get("record") == "FeatureLevelRecord" and rec.get("name"):
        return str(rec["name"]), int(rec.get("feature_level") or 0)
    return None


def features_from_metadata_log(records: Iterable[dict]) -> dict[str, int]:
    """Feature name -> finalized level after ``records`` (in log order). Level 0 means absent, so a
    feature set back to 0 is dropped from the result."""
    out: dict[str, int] = {}
    for rec in records:
        f = _feature(rec)
        if f is None:
            continue
        name, level = f
        if level == 0:
            out.pop(name, None)
        else:
            out[name] = level
    return out


def feature_level(features: dict[str, int], name: str) -> int:
    """The level of ``name`` (0 when absent)."""
    return int(features.get(name, 0))
