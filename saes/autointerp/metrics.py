"""Per-feature metrics of a scorer's log-odds: AUROC, balanced accuracy, the paired
difference from the shuffled-explanation control with its bootstrap interval and its
permutation p-value, and the comparison of two groups of features.

- :func:`difference_p_value`: the paired permutation test of "the explanation's AUROC
  exceeds the shuffled one's" (``scipy.stats.permutation_test``, ``permutation_type=
  "samples"``): under the null the two explanations are exchangeable on each text, so each
  text's two scores are swapped at random. Exact when ``2**n`` texts fit the resamples.
- :func:`compare_groups`: the SAE's features against the random-weight SAE's, by the
  Mann–Whitney U test (``scipy.stats.mannwhitneyu``) on their per-feature differences.
  The two groups are independent samples (no feature of a random SAE corresponds to a
  feature of the trained one), so a paired test would pair them arbitrarily.

AUROC is the Mann–Whitney statistic from ranks (``scipy.stats.rankdata``, ties at half),
equal to scikit-learn's ``roc_auc_score`` (checked in the tests); it is written here so a
bootstrap resample holding one class gives NaN (dropped by
:func:`~interp.stats.intervals.bootstrap_ci`) rather than an exception.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from jaxtyping import Float
from scipy import stats as sps
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


def auroc_batch(labels: np.ndarray, scores: Float[np.ndarray, "*batch n"]) -> np.ndarray:
    """:func:`auroc` of each row of ``scores`` (the labels shared; both classes present)."""
    y = np.asarray(labels, dtype=bool)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    ranks = rankdata(np.asarray(scores, dtype=np.float64), axis=-1)
    return (ranks[..., y].sum(-1) - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def difference_p_value(labels: Sequence[int], true: Sequence[float],
                       shuffled: Sequence[float], *, n_resamples: int, seed: int) -> float:
    """One-sided p-value of ``auroc(true) − auroc(shuffled) > 0`` by the paired
    permutation test (see the module doc); NaN when either class is empty."""
    y = np.asarray(labels, dtype=bool)
    if y.all() or not y.any():
        return float("nan")

    def stat(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
        a, b = np.moveaxis(a, axis, -1), np.moveaxis(b, axis, -1)
        return auroc_batch(y, a) - auroc_batch(y, b)

    res = sps.permutation_test((np.asarray(true, dtype=np.float64),
                            np.asarray(shuffled, dtype=np.float64)), stat,
                           permutation_type="samples", vectorized=True,
                           n_resamples=n_resamples, alternative="greater",
                           rng=np.random.default_rng(seed))
    return float(res.pvalue)


def compare_groups(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """``(mean(a) − mean(b), two-sided Mann–Whitney p)`` of two independent groups' finite
    values; NaN when either has none."""
    x = np.asarray([v for v in a if np.isfinite(v)], dtype=np.float64)
    z = np.asarray([v for v in b if np.isfinite(v)], dtype=np.float64)
    if x.size == 0 or z.size == 0:
        return float("nan"), float("nan")
    p = float(sps.mannwhitneyu(x, z, alternative="two-sided").pvalue)
    return float(x.mean() - z.mean()), p


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


__all__ = ["auroc", "auroc_batch", "balanced_accuracy", "compare_groups", "difference_p_value",
           "mean_ci", "paired_difference"]
