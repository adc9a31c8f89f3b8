"""Statistics shared by every tool, on scipy and statsmodels.

- :mod:`interp.stats.rates`: :class:`Rate` (k of n with its 95% interval) and
  :class:`Correlation`, the value types every tool reports rates with, in one JSON layout;
- :mod:`interp.stats.intervals`: Wilson, mean, bootstrap (by unit or by cluster) and
  correlation intervals;
- :mod:`interp.stats.tests`: exact McNemar and the paired difference of proportions.

The names load on first use: the value types import nothing heavy, the intervals bring
scipy and statsmodels, which a command line that only parses its options should not load.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from interp.lazy import lazy_names

if TYPE_CHECKING:
    from interp.stats.intervals import (
        Z95,
        bootstrap_ci,
        cluster_bootstrap_ci,
        mean_ci,
        mean_t_ci,
        pearson_ci,
        wilson,
        wilson_ci,
    )
    from interp.stats.rates import Correlation, Rate
    from interp.stats.tests import mcnemar_exact, paired_difference_ci

_INTERVALS = "interp.stats.intervals"
__getattr__, __dir__ = lazy_names(__name__, {
    "Z95": _INTERVALS,
    "bootstrap_ci": _INTERVALS,
    "cluster_bootstrap_ci": _INTERVALS,
    "mean_ci": _INTERVALS,
    "mean_t_ci": _INTERVALS,
    "pearson_ci": _INTERVALS,
    "wilson": _INTERVALS,
    "wilson_ci": _INTERVALS,
    "mcnemar_exact": "interp.stats.tests",
    "paired_difference_ci": "interp.stats.tests",
    "Rate": "interp.stats.rates",
    "Correlation": "interp.stats.rates",
})

__all__ = [
    "Correlation",
    "Rate",
    "Z95",
    "bootstrap_ci",
    "cluster_bootstrap_ci",
    "mcnemar_exact",
    "mean_ci",
    "mean_t_ci",
    "paired_difference_ci",
    "pearson_ci",
    "wilson",
    "wilson_ci",
]
