"""Statistics shared by the evaluations: one Wilson interval for every rate."""

from __future__ import annotations

import math

#: The two-sided 95% normal quantile.
Z95 = 1.959963984540054


def wilson(k: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval (95% by default) of ``k`` successes out of ``n``.

    ``k`` may be fractional (ties counted as half). The ends are exact: 0 when ``k = 0``
    and 1 when ``k = n``, with no float residue. NaN for ``n = 0``.
    """
    if n <= 0:
        return (math.nan, math.nan)
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(max(0.0, p * (1 - p)) / n + z * z / (4 * n * n)) / den
    lo = 0.0 if k <= 0 else max(0.0, centre - half)
    hi = 1.0 if k >= n else min(1.0, centre + half)
    return (lo, hi)
