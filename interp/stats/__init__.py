"""Statistics shared by every tool, on scipy and statsmodels.

- :mod:`interp.stats.intervals`: Wilson, mean, bootstrap (by unit or by cluster) and
  correlation intervals;
- :mod:`interp.stats.tests`: exact McNemar and the paired difference of proportions.
"""

from __future__ import annotations

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
from interp.stats.tests import mcnemar_exact, paired_difference_ci

__all__ = [
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
