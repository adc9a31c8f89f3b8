"""Per-feature metrics of a scorer's log-odds: AUROC, balanced accuracy, and the paired
difference from the shuffled-explanation control with its bootstrap interval.

AUROC is the Mann–Whitney statistic from ranks (``scipy.stats.rankdata``, ties at half),
equal to scikit-learn's ``roc_auc_score`` (checked in the tests); it is written here so a
bootstrap resample holding one class gives NaN (dropped by
:func:`~interp.stats.intervals.bootstrap_ci`) rather than an exception.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.stats import rankdata

from interp.stats.intervals import bootstrap_ci


def auroc(labels: Sequence[int] | np.ndarray, scores: Sequence[float] | np.ndarray) -> float:
    """The probability that a random positive scores above a random negative (ties ½);
    NaN when either class is empty."""
    y = np.asarray(labels, dtype=bool)
    s = np.asarray(scores, dtype=np.float64)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    ranks = rankdata(s)
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def balanced_accuracy(labels: Sequence[int] | np.ndarray,
                      scores: Sequence[float] | np.ndarray, threshold: float = 0.0) -> float:
    """The mean of the true-positive and true-negative rates, predicting positive where the
    log-odds exceed ``threshold`` (0: the scorer's own yes over no)."""
    y = np.asarray(labels, dtype=bool)
    pred = np.asarray(scores, dtype=np.float64) > threshold
    if y.all() or not y.any():
        return float("nan")
    return float((pred[y].mean() + (~pred[~y]).mean()) / 2)


def paired_difference(labels: Sequence[int], true: Sequence[float], shuffled: Sequence[float],
                      *, n_boot: int, seed: int) -> tuple[float, float, float, list[float]]:
    """``(auroc_true, auroc_shuffled, difference, difference_ci95)``: the same texts under
    both explanations, resampled together (percentile bootstrap over texts)."""
    y = np.asarray(labels)
    a = np.asarray(true, dtype=np.float64)
    b = np.asarray(shuffled, dtype=np.float64)
    at, ab = auroc(y, a), auroc(y, b)
    ci = bootstrap_ci(lambda i: auroc(y[i], a[i]) - auroc(y[i], b[i]), len(y),
                      n_resamples=n_boot, seed=seed)
    return at, ab, at - ab, ci


def mean_ci(values: Sequence[float], *, n_boot: int, seed: int) -> tuple[float, list[float]]:
    """The mean of the finite ``values`` and its percentile bootstrap interval."""
    v = np.asarray([x for x in values if np.isfinite(x)], dtype=np.float64)
    if v.size == 0:
        return float("nan"), [float("nan"), float("nan")]
    return float(v.mean()), bootstrap_ci(lambda i: float(v[i].mean()), v.size,
                                         n_resamples=n_boot, seed=seed)


__all__ = ["auroc", "balanced_accuracy", "mean_ci", "paired_difference"]
