"""reference/versions.py: the one parser and comparison of Kafka versions."""

import pytest

from reference import versions


@pytest.mark.parametrize("text, expected", [
    ("3.9.2", (3, 9, 2)),
    ("4.1.0", (4, 1, 0)),
    ("2.8.2", (2, 8, 2)),
    ("3.9", (3, 9)),
    ("3.6-IV0", (3, 6)),            # a KRaft metadata version
    ("3.7.1-SNAPSHOT", (3, 7, 1)),
    ("2.8.1-rc0", (2, 8, 1)),
    (" 3.9.0 ", (3, 9, 0)),
    ((3, 7), (3, 7)),
    ([4], (4,)),
])
def test_parse(text, expected):
    assert versions.parse(text) == expected


@pytest.mark.parametrize("bad", ["", "latest", "3", "v3.9", "abc.def", ".9.2", [], ["x"], None, 3.9])
def test_bad_input_is_one_clear_value_error(bad):
    with pytest.raises(ValueError, match="cannot parse Kafka version"):
        versions.parse(bad)


@pytest.mark.parametrize("text", [None, "", "latest", "foreign"])
def test_parse_or_none(text):
    assert versions.parse_or_none(text) is None


def test_series():
    assert versions.series("3.9.2") == (3, 9)
    assert versions.series("3.6-IV0") == (3, 6)
    assert versions.series("4.1.0") == (4, 1)
    with pytest.raises(ValueError):
        versions.series((4,))


def test_comparisons():
    assert versions.at_least("3.9.2", (3, 7))
    assert versions.at_least("4.1.0", (4,))
    assert versions.at_least("3.7", "3.7.0") and versions.at_least("3.7.0", "3.7")
    assert versions.at_least("3.6-IV0", (3, 6, 0))          # the shorter side is padded with zeros
    assert not versions.at_least("2.8.2", "3.0")
    assert versions.older_than("2.8.2", "3.0") and versions.older_than("3.9.2", "4.0")
    assert not versions.older_than("2.6", "2.6.0")
    assert versions.compare("3.10.0", "3.9.2") == 1          # numeric, not lexicographic
    assert versions.compare("3.9.2", "3.9.2") == 0
    assert versions.compare("2.8.2", "3.9.2") == -1
    assert sorted(["3.10.0", "3.9.2", "2.8.2", "4.1.0"], key=versions.parse) == ["2.8.2", "3.9.2", "3.10.0", "4.1.0"]
    with pytest.raises(ValueError):
        versions.at_least("latest", (3, 0))


def test_to_str():
    assert versions.to_str((3, 9, 2)) == "3.9.2" and versions.to_str("3.6-IV0") == "3.6"


def test_callers_share_the_helper():
    from harness.cluster import admin_ops
    from harness import images
    from harness.checkers.config import parse_version
    from reference.profiles import parse_version as profile_version

    assert parse_version("3.7.1-SNAPSHOT") == (3, 7, 1) and parse_version(None) is None
    assert profile_version("2.8.1-rc0") == (2, 8)
    assert images.is_kraft_only("4.1.0") and not images.is_kraft_only("3.9.2")

    class _Image:
        kafka_version = "3.9.2"

    class _Cluster:
        image = _Image()

    assert admin_ops.kafka_version(_Cluster()) == (3, 9, 2)
    _Image.kafka_version = None
    assert admin_ops.kafka_version(_Cluster()) is None


def test_series_name_is_the_first_two_parts_of_the_text():
    assert [versions.series_name(v) for v in ("3.9.2", "4.1", "2.8.2-rc1", "10.0.0")] == ["3.9", "4.1", "2.8", "10.0"]
