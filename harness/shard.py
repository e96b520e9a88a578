"""Deterministic, balanced slices of a suite, so that N CI jobs cover it once (``run --shard i/N``).

Every job computes the same assignment from the same inputs: the scenario names and their expected
durations (seconds). Scenarios are dealt longest first to the shard with the least work so far (ties:
the lower shard number; equal durations: by name), which keeps the shards' total times within a
fraction of the longest scenario of each other. Durations come from ``suites/durations.json`` (median
wall time per scenario, cluster start to verdict, measured on a 2-core host) or from run records
(:func:`durations_from_records`); a scenario without one counts as the median of the known ones.
"""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

from harness.errors import HarnessError

DURATIONS_FILE = Path(__file__).resolve().parent.parent / "suites" / "durations.json"
DEFAULT_SECONDS = 30.0


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/4"`` → ``(2, 4)``: shard 2 of 4, numbered from 1."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not m:
        raise HarnessError(f"--shard {text!r}: use I/N, e.g. 1/4 (shard I of N, counted from 1)")
    i, n = int(m.group(1)), int(m.group(2))
    if n < 1 or not 1 <= i <= n:
        raise HarnessError(f"--shard {text}: I must be between 1 and N, and N at least 1")
    return i, n


def known_durations(path: Path = DURATIONS_FILE) -> dict[str, float]:
    """The shipped table of expected seconds per scenario (empty when absent)."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, json.JSONDecodeError) as e:
        raise HarnessError(f"{path}: not a durations table ({e})") from None
    table = data.get("seconds", data) if isinstance(data, dict) else {}
    return {str(k): float(v) for k, v in table.items() if isinstance(v, (int, float)) and v > 0}


def durations_from_records(records) -> dict[str, float]:
    """Median ``stats.seconds`` per scenario over run records (objects with ``metadata`` and ``verdict``)."""
    seen: dict[str, list[float]] = {}
    for r in records:
        s = (r.verdict.get("stats") or {}).get("seconds")
        if isinstance(s, (int, float)) and s > 0:
            seen.setdefault(r.metadata.get("scenario"), []).append(float(s))
    return {k: statistics.median(v) for k, v in seen.items() if k}


def assign(names: list[str], n: int, durations: dict[str, float] | None = None) -> list[list[str]]:
    """The N shards of ``names`` (each scenario in exactly one), balanced by expected duration."""
    if n < 1:
        raise ValueError("n must be at least 1")
    durations = durations or {}
    known = [durations[x] for x in names if x in durations]
    fallback = statistics.median(known) if known else DEFAULT_SECONDS
    cost = {x: durations.get(x, fallback) for x in names}
    shards: list[list[str]] = [[] for _ in range(n)]
    load = [0.0] * n
    for name in sorted(dict.fromkeys(names), key=lambda x: (-cost[x], x)):
        k = min(range(n), key=lambda j: (load[j], j))
        shards[k].append(name)
        load[k] += cost[name]
    order = {x: i for i, x in enumerate(names)}
    return [sorted(s, key=order.__getitem__) for s in shards]   # each shard keeps the suite's order


def longest_first(names: list[str], durations: dict[str, float] | None = None) -> list[int]:
    """The indexes of ``names`` in the order to start them on a pool of workers: longest expected
    duration first (ties and unknown durations keep the given order), so that no long scenario
    starts last while the other workers idle. Unknown names count as the median of the known ones."""
    durations = known_durations() if durations is None else durations
    known = [durations[x] for x in names if x in durations]
    fallback = statistics.median(known) if known else DEFAULT_SECONDS
    return sorted(range(len(names)), key=lambda i: (-durations.get(names[i], fallback), i))


def select(names: list[str], shard: str, durations: dict[str, float] | None = None) -> list[str]:
    """The scenarios of shard ``"i/N"``."""
    i, n = parse_shard(shard)
    return assign(names, n, known_durations() if durations is None else durations)[i - 1]
