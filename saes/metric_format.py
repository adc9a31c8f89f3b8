"""How SAE metrics are written: 95% intervals and each metric's display format.

Shared by the results (tables, headlines), the figures and the reports, so that a number
reads the same everywhere.
"""

from __future__ import annotations

import math

from interp.display import MISSING, ci_text, format_number, percent, with_ci

#: A 95% interval (lo, hi); (NaN, NaN) when unknown.
CI = tuple[float, float]
NAN = math.nan
#: The metrics given as fractions (shown as percentages).
FRACTIONS = frozenset({"dead_fraction", "dense_fraction"})


def ci_known(ci: CI) -> bool:
    """Whether both ends of the interval are known."""
    return math.isfinite(ci[0]) and math.isfinite(ci[1])


def format_metric(metric: str, value: float | None) -> str:
    """A metric in its display format: fractions as %, L0 to 0.1, MSE to 4 decimals."""
    if value is None or not math.isfinite(value):
        return MISSING
    if metric in FRACTIONS:
        return percent(value)
    return format_number(float(value), {"l0": 1, "mse": 4}.get(metric, 3))


def format_ci(metric: str, ci: CI) -> str:
    """``"[22.9, 24.0]"``: a 95% interval in ``metric``'s format (``—`` unless known)."""
    return ci_text(ci[0], ci[1], fmt=lambda x: format_metric(metric, x))


def format_with_ci(metric: str, value: float, ci: CI) -> str:
    """``"23.5 [22.9, 24.0]"``: the value, and its CI when both are known."""
    return with_ci(value, ci[0], ci[1], fmt=lambda x: format_metric(metric, x))


__all__ = ["CI", "FRACTIONS", "NAN", "ci_known", "format_ci", "format_metric", "format_with_ci"]
