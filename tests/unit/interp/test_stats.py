"""interp.stats: every interval and test against a published or library reference value."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from interp.stats import (
    bootstrap_ci,
    mcnemar_exact,
    mean_ci,
    paired_difference_ci,
    pearson_ci,
    wilson,
    wilson_ci,
)


def test_wilson_matches_newcombe_1998_table():
    # Newcombe (1998), Statist. Med. 17:857-872, Table II, method 3 (Wilson score).
    assert wilson(81, 263) == pytest.approx((0.2553, 0.3662), abs=5e-5)
    assert wilson(15, 148) == pytest.approx((0.0624, 0.1605), abs=5e-5)
    assert wilson(0, 20) == pytest.approx((0.0, 0.1611), abs=5e-5)
    assert wilson(1, 29) == pytest.approx((0.0061, 0.1718), abs=5e-5)


def test_wilson_exact_ends_fractional_k_and_empty():
    assert wilson(0, 10)[0] == 0.0 and wilson(10, 10)[1] == 1.0
    lo, hi = wilson(2.5, 10)
    assert lo < 0.25 < hi
    assert all(math.isnan(x) for x in wilson(0, 0))
    assert wilson_ci(0, 0) == [None, None]
    assert wilson_ci(3, 10) == list(wilson(3, 10))


def test_mcnemar_exact_is_the_binomial_tail():
    # b = 1, c = 9: 2·P(X ≤ 1 | n = 10, p = ½) = 2·11/1024.
    assert mcnemar_exact(1, 9) == pytest.approx(22 / 1024)
    assert mcnemar_exact(9, 1) == pytest.approx(22 / 1024)
    assert mcnemar_exact(5, 5) == 1.0
    assert mcnemar_exact(0, 0) == 1.0


def test_paired_difference_reduces_to_statsmodels_newcombe_without_correlation():
    # With a·d = b·c the pairing carries no correlation (phi = 0) and Newcombe's paired
    # method 10 is his independent-samples hybrid score interval, which statsmodels has.
    from statsmodels.stats.proportion import confint_proportions_2indep

    a, b, c, d = 4, 2, 6, 3
    n = a + b + c + d
    diff, lo, hi = paired_difference_ci(a, b, c, d)
    ref = confint_proportions_2indep(a + b, n, a + c, n, method="newcomb", compare="diff")
    assert diff == pytest.approx((b - c) / n)
    assert (lo, hi) == pytest.approx(tuple(float(x) for x in ref))


def test_paired_difference_narrows_with_positive_correlation():
    # Same margins, concordant pairs: a positive correlation narrows the interval.
    _, lo0, hi0 = paired_difference_ci(4, 2, 6, 3)
    diff, lo, hi = paired_difference_ci(12, 9, 2, 21)
    assert diff == pytest.approx(7 / 44)
    assert lo < diff < hi and hi - lo < hi0 - lo0
    assert all(math.isnan(x) for x in paired_difference_ci(0, 0, 0, 0))


def test_mean_ci_is_the_normal_interval():
    x = np.arange(10, dtype=float)
    mean, lo, hi = mean_ci(x)
    half = sps.norm.ppf(0.975) * x.std(ddof=1) / math.sqrt(10)
    assert (mean, lo, hi) == pytest.approx((4.5, 4.5 - half, 4.5 + half))


def test_bootstrap_ci_covers_the_mean_and_is_seeded():
    x = np.random.default_rng(0).normal(loc=3.0, size=400)
    a = bootstrap_ci(lambda i: float(x[i].mean()), x.size, seed=1)
    b = bootstrap_ci(lambda i: float(x[i].mean()), x.size, seed=1)
    assert a == b
    assert a[0] < 3.0 < a[1] and a[1] - a[0] < 0.4
    # agrees with the normal interval within a few percent of its width
    _, lo, hi = mean_ci(x)
    assert a == pytest.approx([lo, hi], abs=0.05)


def test_vectorized_bootstrap_draws_the_same_resamples():
    """A statistic given every resample at once gets the interval of the per-resample
    statistic: same draws, one call."""
    from interp.stats.intervals import resampled_means

    rng = np.random.default_rng(0)
    x = rng.normal(size=(12, 5))
    one = bootstrap_ci(lambda i: float(x[i].mean(0)[2]), 12, seed=3)
    rows = bootstrap_ci(lambda i: resampled_means(i, x)[:, 2], 12, seed=3, vectorized=True)
    assert rows == pytest.approx(one, abs=1e-12)
    assert bootstrap_ci(lambda i: resampled_means(i, x)[:, 2], 1, vectorized=True) == (
        [x[0, 2]] * 2)


def test_spearman_rows_is_scipys_spearman_ties_included():
    from interp.circuits.agreement import spearman, spearman_rows

    rng = np.random.default_rng(0)
    x = rng.integers(0, 4, size=(50, 20)).astype(float)  # many ties
    y = rng.normal(size=(50, 20))
    got = spearman_rows(x, y)
    want = [sps.spearmanr(a, b)[0] for a, b in zip(x, y, strict=True)]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    assert math.isnan(spearman(np.ones(5), np.arange(5.0)))  # a constant side
    assert spearman(np.arange(6.0), np.arange(6.0) ** 3) == pytest.approx(1.0)


def test_holm_is_statsmodels_holm():
    from statsmodels.stats.multitest import multipletests

    from interp.stats.tests import holm

    # statsmodels' Holm costs a gc.collect() per call (the reason for ours): a few calls
    rng = np.random.default_rng(0)
    for m in (1, 7, 60):
        p = rng.uniform(0, 0.02, m) ** rng.uniform(0.5, 3, m)  # some rejected, some not
        p[rng.integers(0, m)] = p[0]  # a tie
        reject, adjusted = holm(p.tolist(), 0.05)
        want = multipletests(p, alpha=0.05, method="holm")
        assert reject == np.asarray(want[0]).tolist()
        np.testing.assert_allclose(adjusted, want[1], rtol=0, atol=1e-15)
        if m == 60:
            assert 0 < sum(reject) < m
    assert holm([], 0.05) == ([], [])


def test_pearson_ci_is_fisher_z():
    xs = [1, 2, 3, 4, 5, 6, 7, 8]
    ys = [2, 1, 4, 3, 6, 5, 8, 7]
    r, (lo, hi) = pearson_ci(xs, ys)
    z, half = math.atanh(r), sps.norm.ppf(0.975) / math.sqrt(len(xs) - 3)
    assert r == pytest.approx(float(np.corrcoef(xs, ys)[0, 1]))
    assert (lo, hi) == pytest.approx((math.tanh(z - half), math.tanh(z + half)))
    assert pearson_ci([1, 1, 1, 1], [1, 2, 3, 4]) == (None, [None, None])


def test_mean_t_ci_is_students_interval():
    import math

    from scipy import stats

    from interp.stats import mean_t_ci

    v = [0.70, 0.74, 0.79]
    mean, lo, hi = mean_t_ci(v)
    half = stats.t.ppf(0.975, 2) * stats.tstd(v) / math.sqrt(3)
    assert mean == pytest.approx(0.7433333) and hi - mean == pytest.approx(half)
    assert mean - lo == pytest.approx(half) and half > 1.96 * stats.tstd(v) / math.sqrt(3)
    assert math.isnan(mean_t_ci([0.5])[1]) and math.isnan(mean_t_ci([])[0])
