"""Kafka versions: the one parser and comparison every layer uses (pure; imports nothing of the project).

A version is a tuple of ints, as many as the text gives: ``"3.9.2"`` -> ``(3, 9, 2)``, ``"3.9"`` ->
``(3, 9)``. A suffix is ignored: ``"2.8.1-rc0"`` -> ``(2, 8, 1)``, ``"3.7.1-SNAPSHOT"`` -> ``(3, 7, 1)``,
and a KRaft metadata version ``"3.6-IV0"`` -> ``(3, 6)``. Comparisons pad the shorter side with zeros,
so ``"3.6-IV0"`` is at least ``(3, 6, 0)``.
"""

from __future__ import annotations

import re
from typing import Iterable, Union

Version = tuple[int, ...]
VersionLike = Union[str, Iterable[int]]

_LEADING = re.compile(r"^\s*(\d+)((?:\.\d+)+)")


def parse(text: VersionLike) -> Version:
    """The numeric parts of ``text`` (at least ``<major>.<minor>``); a tuple or list is taken as it is.
    Raises ValueError on anything else."""
    if not isinstance(text, str):
        try:
            v = tuple(int(x) for x in text)
        except (TypeError, ValueError):
            raise ValueError(f"cannot parse Kafka version {text!r}: expected '<major>.<minor>[...]'") from None
        if not v:
            raise ValueError(f"cannot parse Kafka version {text!r}: expected '<major>.<minor>[...]'")
        return v
    m = _LEADING.match(text)
    if not m:
        raise ValueError(f"cannot parse Kafka version {text!r}: expected '<major>.<minor>[...]'")
    return (int(m.group(1)),) + tuple(int(x) for x in m.group(2)[1:].split("."))


def parse_or_none(text: VersionLike | None) -> Version | None:
    """Like :func:`parse`, but None for a missing (None, empty) or unparsable version (a foreign image)."""
    if text is None or text == "":
        return None
    try:
        return parse(text)
    except ValueError:
        return None


def series(text: VersionLike) -> tuple[int, int]:
    """``<major>.<minor>`` of a version: ``"3.9.2"`` -> ``(3, 9)``. Raises ValueError like :func:`parse`."""
    v = parse(text)
    if len(v) < 2:
        raise ValueError(f"cannot parse Kafka version {text!r}: expected '<major>.<minor>[...]'")
    return v[0], v[1]


def series_name(text: str) -> str:
    """The ``<major>.<minor>`` prefix of a version string, as profile and image names use it:
    ``"3.9.2"`` -> ``"3.9"`` (lenient: whatever the text's first two dot-separated parts are)."""
    return ".".join(str(text).split(".")[:2])


def compare(a: VersionLike, b: VersionLike) -> int:
    """-1, 0 or 1 as ``a`` is older than, the same as, or newer than ``b`` (shorter side padded with zeros)."""
    x, y = parse(a), parse(b)
    n = max(len(x), len(y))
    x, y = x + (0,) * (n - len(x)), y + (0,) * (n - len(y))
    return (x > y) - (x < y)


def at_least(version: VersionLike, gate: VersionLike) -> bool:
    """True when ``version`` is ``gate`` or newer: ``at_least("3.9.2", (3, 7))``."""
    return compare(version, gate) >= 0


def older_than(version: VersionLike, gate: VersionLike) -> bool:
    """True when ``version`` comes before ``gate``: ``older_than("2.8.2", "3.0")``."""
    return compare(version, gate) < 0


def to_str(version: VersionLike) -> str:
    """``(3, 9, 2)`` -> ``"3.9.2"``."""
    return ".".join(map(str, parse(version)))
