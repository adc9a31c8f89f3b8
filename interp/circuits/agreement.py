"""How well attribution patching recovers exact patching.

Over every component of a family: Spearman's rank correlation between the two
methods' mean effects, and the recall of the exact top-k components (ranked by
``|effect - baseline|``) among the approximation's top-k. Each comes with a
percentile-bootstrap interval over pairs: the pairs are resampled and both methods'
means recomputed on the same resample.
"""

from __future__ import annotations

import numpy as np
from jaxtyping import Float
from scipy import stats as sps
from torch import Tensor

from interp.circuits.results import Agreement, Effects, SplitHalf
from interp.stats.intervals import bootstrap_ci, resampled_means


def spearman_rows(x: Float[np.ndarray, "r n"], y: Float[np.ndarray, "r n"]
                  ) -> Float[np.ndarray, " r"]:
    """Spearman's rho of each row of ``x`` with the same row of ``y``: the Pearson
    correlation of their ranks, ties given their average rank (``scipy.stats.rankdata``),
    as ``scipy.stats.spearmanr`` defines it (equal to it within 1e-12, tested); NaN where
    either row is constant. One call for every bootstrap resample: spearmanr's one call
    per resample was 93% of a graph's check on the tiny models."""
    rx = sps.rankdata(x, axis=-1)
    ry = sps.rankdata(y, axis=-1)
    rx = rx - rx.mean(-1, keepdims=True)
    ry = ry - ry.mean(-1, keepdims=True)
    den = np.sqrt((rx * rx).sum(-1) * (ry * ry).sum(-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (rx * ry).sum(-1) / den
    return np.where(den > 0, np.clip(rho, -1.0, 1.0), np.nan)


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rho of two vectors (:func:`spearman_rows`); NaN when either is constant."""
    return float(spearman_rows(np.asarray(x)[None], np.asarray(y)[None])[0])


def spearman_of_means_ci(x: Float[np.ndarray, "pairs k"], y: Float[np.ndarray, "pairs k"],
                         *, n_boot: int, seed: int) -> list[float]:
    """Percentile-bootstrap interval over pairs of ``spearman(x.mean(0), y.mean(0))``:
    both methods' means recomputed on the same resample, every resample in one call."""
    return bootstrap_ci(
        lambda i: spearman_rows(resampled_means(i, x), resampled_means(i, y)), x.shape[0],
        n_resamples=n_boot, seed=seed, vectorized=True)


#: Exact importances within this of the k-th largest count as tied with it.
TIE = 0.01


def tied_at_k(exact: np.ndarray, baseline: float, k: int) -> int:
    """How many components' exact importance is within :data:`TIE` of the k-th largest."""
    imp = np.sort(np.abs(exact - baseline))[::-1]
    kth = imp[min(k, imp.size) - 1]
    return int((imp >= kth - TIE).sum())


def recall_at_k(exact: np.ndarray, approx: np.ndarray, baseline: float, k: int) -> float:
    """Fraction of the exact top-``k`` (by ``|effect - baseline|``) in the approximation's."""
    k = min(k, exact.size)
    top_e = set(np.argsort(-np.abs(exact - baseline), kind="stable")[:k].tolist())
    top_a = set(np.argsort(-np.abs(approx - baseline), kind="stable")[:k].tolist())
    return len(top_e & top_a) / k


def compare(
    exact: Effects,
    approx: Effects,
    baseline: float,
    *,
    n_boot: int = 1000,
    seed: int = 0,
) -> Agreement:
    """Spearman and recall@10/30 of ``approx`` against ``exact``, with bootstrap CIs."""
    e: Float[Tensor, "pairs comps"] = exact.normalised.reshape(exact.normalised.shape[0], -1)
    a: Float[Tensor, "pairs comps"] = approx.normalised.reshape(e.shape[0], -1)
    en, an = e.double().numpy(), a.double().numpy()
    n = en.shape[0]

    def stat(fn):
        return lambda idx: fn(en[idx].mean(0), an[idx].mean(0))

    rho = spearman(en.mean(0), an.mean(0))
    r10 = recall_at_k(en.mean(0), an.mean(0), baseline, 10)
    r30 = recall_at_k(en.mean(0), an.mean(0), baseline, 30)
    return Agreement(
        method=approx.method,
        n_components=int(en.shape[1]),
        spearman=rho,
        spearman_ci95=spearman_of_means_ci(en, an, n_boot=n_boot, seed=seed),
        recall_at_10=r10,
        recall_at_10_ci95=bootstrap_ci(
            stat(lambda x, y: recall_at_k(x, y, baseline, 10)), n, n_resamples=n_boot, seed=seed
        ),
        recall_at_30=r30,
        recall_at_30_ci95=bootstrap_ci(
            stat(lambda x, y: recall_at_k(x, y, baseline, 30)), n, n_resamples=n_boot, seed=seed
        ),
        seconds_exact=exact.seconds,
        seconds_approx=approx.seconds,
        tied_at_10=tied_at_k(en.mean(0), baseline, 10),
        tied_at_30=tied_at_k(en.mean(0), baseline, 30),
    )


def split_half(
    effects: Effects, baseline: float, names: list[str], k: int = 10
) -> SplitHalf | None:
    """Top-``k`` components on the even- and on the odd-numbered pairs, and their overlap."""
    per_pair = effects.normalised.reshape(effects.normalised.shape[0], -1).double().numpy()
    n = per_pair.shape[0]
    if n < 4:
        return None
    k = min(k, per_pair.shape[1])
    tops = []
    for half in (per_pair[0::2], per_pair[1::2]):
        order = np.argsort(-np.abs(half.mean(0) - baseline), kind="stable")[:k]
        tops.append([names[int(i)] for i in order])
    return SplitHalf(k=k, top_a=tops[0], top_b=tops[1], overlap=len(set(tops[0]) & set(tops[1])),
                     chance=k * k / per_pair.shape[1], n_a=(n + 1) // 2, n_b=n // 2)
