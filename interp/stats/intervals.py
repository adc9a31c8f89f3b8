"""Confidence intervals, on statsmodels and scipy.

Every rate, mean and ratio that a tool reports goes through here, so that one
definition serves probes, lenses, SAEs and the evaluations alike.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Hashable, Sequence

import numpy as np
from scipy import stats as sps
from statsmodels.stats.proportion import proportion_confint

#: The two-sided 95% normal quantile.
Z95 = float(sps.norm.ppf(0.975))


def wilson(k: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval (95% by default) of ``k`` successes out of ``n`` (statsmodels).

    ``k`` may be fractional (ties counted as half). The ends are exact: 0 when ``k = 0``
    and 1 when ``k = n``, with no float residue. NaN for ``n = 0``.
    """
    if n <= 0:
        return (math.nan, math.nan)
    alpha = 2.0 * float(sps.norm.sf(z))
    ends = np.asarray(proportion_confint(k, n, alpha=alpha, method="wilson"), dtype=np.float64)
    lo = 0.0 if k <= 0 else max(0.0, float(ends[0]))
    hi = 1.0 if k >= n else min(1.0, float(ends[1]))
    return (lo, hi)


def wilson_ci(k: float, n: int, z: float = Z95) -> list[float | None]:
    """:func:`wilson` as a JSON pair (``[None, None]`` for ``n = 0``)."""
    if n <= 0:
        return [None, None]
    return list(wilson(k, n, z))


def mean_ci(values: Sequence[float] | np.ndarray, z: float = Z95) -> tuple[float, float, float]:
    """Mean and its normal-approximation 95% interval ``mean ± z·s/√n`` (NaN ends for n < 2)."""
    v = np.asarray(values, dtype=np.float64)
    n = v.size
    if n == 0:
        return (math.nan, math.nan, math.nan)
    mean = float(v.mean())
    if n < 2:
        return (mean, math.nan, math.nan)
    half = z * float(v.std(ddof=1)) / math.sqrt(n)
    return (mean, mean - half, mean + half)


def mean_t_ci(values: Sequence[float] | np.ndarray,
              confidence: float = 0.95) -> tuple[float, float, float]:
    """Mean and its Student-t interval ``mean ± t·s/√n`` (NaN ends for n < 2).

    For a handful of seeds: with 3 values the 95% multiplier is t(2) = 4.30, not 1.96.
    """
    from scipy import stats

    v = np.asarray(values, dtype=np.float64)
    v = v[~np.isnan(v)]
    if v.size < 2:
        return mean_ci(v)  # no interval: (mean, NaN, NaN), or all NaN when empty
    return mean_ci(v, z=float(stats.t.ppf(0.5 + confidence / 2, v.size - 1)))


def bootstrap_ci(
    statistic: Callable[[np.ndarray], float] | Callable[[np.ndarray], np.ndarray],
    n: int,
    *,
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    vectorized: bool = False,
) -> list[float]:
    """Percentile bootstrap interval of ``statistic(idx)`` over resamples of ``n`` units.

    ``statistic`` receives an index array (units drawn with replacement) and returns
    one number, so any statistic of paired or grouped data (ratios of sums over
    windows, say) can be resampled by its units. With ``vectorized`` it receives every
    resample at once, ``[resamples, n]``, and returns one number per row (the same
    resamples, one call instead of one per resample). Draws whose statistic is not
    finite are dropped. Built on ``scipy.stats.bootstrap``.
    """
    if n <= 0:
        return [math.nan, math.nan]
    if n == 1:  # one unit: every resample is that unit
        one = np.zeros((1, 1) if vectorized else 1, dtype=np.int64)
        value = float(np.asarray(statistic(one)).reshape(-1)[0])
        return [value, value] if math.isfinite(value) else [math.nan, math.nan]

    def stat(idx: np.ndarray, axis: int = -1) -> np.ndarray:
        idx = np.asarray(idx, dtype=np.int64)
        if vectorized:
            rows = np.moveaxis(idx, axis, -1)
            return np.asarray(statistic(rows.reshape(-1, rows.shape[-1]))).reshape(
                rows.shape[:-1])
        if idx.ndim == 1:
            return np.asarray(statistic(idx))
        return np.apply_along_axis(lambda row: statistic(row), axis, idx)

    with warnings.catch_warnings():
        # a degenerate distribution (every resample equal, as for a perfect AUROC) makes
        # scipy warn about the BCa interval, which the percentile method does not compute
        warnings.simplefilter("ignore", sps.DegenerateDataWarning)
        res = sps.bootstrap(
            (np.arange(n),),
            stat,
            n_resamples=n_resamples,
            method="percentile",
            confidence_level=confidence,
            vectorized=True,
            rng=np.random.default_rng(seed),
        )
    dist = np.asarray(res.bootstrap_distribution, dtype=np.float64)
    dist = dist[np.isfinite(dist)]
    if dist.size == 0:
        return [math.nan, math.nan]
    tail = (1 - confidence) / 2 * 100
    return [float(np.percentile(dist, tail)), float(np.percentile(dist, 100 - tail))]


def resampled_means(idx: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The mean of ``x``'s rows over each resample of ``idx`` (``[resamples, n]`` indices
    into ``x``'s ``n`` rows): ``[resamples, ...]``, as counts × ``x`` (no
    ``[resamples, n, ...]`` copy)."""
    r, n = idx.shape
    counts = np.zeros((r, x.shape[0]))
    np.add.at(counts, (np.repeat(np.arange(r), n), idx.reshape(-1)), 1.0)
    return (counts @ x.reshape(x.shape[0], -1)).reshape(r, *x.shape[1:]) / n


def cluster_bootstrap_ci(
    statistic: Callable[[np.ndarray], float],
    clusters: Sequence[Hashable],
    *,
    n_resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> list[float]:
    """Percentile bootstrap interval of ``statistic(idx)`` resampling whole clusters.

    ``clusters[i]`` names unit ``i``'s cluster (a template, a word type). Each resample
    draws as many clusters as there are, with replacement, and ``statistic`` receives the
    indices of every unit of the drawn clusters (a cluster drawn twice gives its units
    twice), so units of one cluster are never treated as independent. With ``G`` clusters
    the bootstrap has at most ``C(2G − 1, G)`` distinct resamples (10 for G = 3): report
    ``G`` beside the interval. Built on :func:`bootstrap_ci`.
    """
    keys = list(dict.fromkeys(clusters))
    members = {k: [] for k in keys}
    for i, c in enumerate(clusters):
        members[c].append(i)
    units = [np.asarray(members[k], dtype=np.int64) for k in keys]

    def over_clusters(idx: np.ndarray) -> float:
        return statistic(np.concatenate([units[int(j)] for j in idx]))

    return bootstrap_ci(over_clusters, len(units), n_resamples=n_resamples, seed=seed,
                        confidence=confidence)


def pearson_ci(
    xs: Sequence[float], ys: Sequence[float], confidence: float = 0.95
) -> tuple[float | None, list[float | None]]:
    """Pearson's r and its Fisher-z interval (scipy); ``None`` with < 4 points or no spread."""
    x, y = np.asarray(xs, dtype=np.float64), np.asarray(ys, dtype=np.float64)
    if x.size != y.size:
        raise ValueError(f"pearson: {x.size} x values but {y.size} y values")
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None, [None, None]
    res = sps.pearsonr(x, y)
    r = float(np.clip(np.asarray(res[0], dtype=np.float64), -1.0, 1.0))
    if x.size < 4:
        return r, [None, None]
    ci = res.confidence_interval(confidence_level=confidence)
    return r, [float(ci.low), float(ci.high)]
