"""reference.kraft_features: finalized feature levels from fabricated metadata-log events."""
from reference.kraft_features import feature_level, features_from_metadata_log


def _f(name, level, offset=0):
    return {"type": "meta.feature", "name": name, "level": level, "offset": offset, "source": "metadata-log"}


def test_last_record_of_a_name_wins_and_other_events_are_ignored():
    events = [_f("metadata.version", 27), {"type": "meta.broker", "broker_id": 1},
              _f("transaction.version", 2), _f("transaction.version", 1, 9), _f("kraft.version", 1)]
    assert features_from_metadata_log(events) == {"metadata.version": 27, "transaction.version": 1,
                                                  "kraft.version": 1}


def test_level_zero_removes_the_feature():
    feats = features_from_metadata_log([_f("share.version", 1), _f("share.version", 0)])
    assert feats == {}
    assert feature_level(feats, "share.version") == 0


def test_raw_decoded_records_and_zookeeper_mode():
    raw = [{"record": "FeatureLevelRecord", "name": "group.version", "feature_level": 1}]
    assert features_from_metadata_log(raw) == {"group.version": 1}
    assert features_from_metadata_log([{"type": "produce", "offset": 3}]) == {}
