"""Statistics used by the report: Wilson score intervals and percentiles.

Wilson interval (95 %, z = 1.96) for k successes in n trials::

    centre = (p + z²/2n) / (1 + z²/n)
    half   = z * sqrt(p(1-p)/n + z²/4n²) / (1 + z²/n)

Percentiles are exact with linear interpolation between closest ranks (Spark's
``percentile``; numpy's default), e.g. p95 of [2, 3, 5] = 3 + 0.9 * (5 - 3) = 4.8.
"""

from __future__ import annotations

import math

Z = 1.96


def wilson(k: int, n: int, z: float = Z) -> tuple[float, float] | tuple[None, None]:
    """Wilson score interval for ``k`` of ``n``; ``(None, None)`` when n == 0."""
    if n <= 0:
        return None, None
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def percentile(values: list[float], q: float) -> float | None:
    """Linear-interpolation percentile (``q`` in [0, 1]) of ``values``; None if empty."""
    xs = sorted(v for v in values if v is not None)
    if not xs:
        return None
    pos = q * (len(xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)
