"""Effects that depend on the group: does a top component act alike on every kind of pair?

A task file's column (``template`` in the shipped tasks, or any column a user names)
groups the pairs. For the components that matter most, overall or inside any one group
(the top ``k`` by ``|effect - baseline|`` of the overall mean and of each group's mean,
so a component whose groups cancel out in the overall mean is still looked at), each
group's mean effect gets its 95% interval over that group's pairs, and a heterogeneity
test asks whether the groups' means differ beyond the noise:

* Welch's one-way ANOVA (``statsmodels.stats.oneway.anova_oneway``, unequal variances;
  with two groups it is Welch's t-test) over the groups with at least two pairs;
* where a group's effects are all equal (zero variance, which Welch's weights cannot
  take) the Kruskal–Wallis test (``scipy.stats.kruskal``) instead; when every group is
  constant, the groups differ exactly when their values do;
* Holm's correction over the components tested (:func:`interp.stats.tests.holm`), so
  ``differs`` holds the family-wise error at ``alpha`` (0.05).

A component that differs is a ``sign`` difference when one group's interval lies wholly
above the baseline and another's wholly below, else a ``size`` difference.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from jaxtyping import Float
from torch import Tensor

from interp.circuits.results import ALPHA, GroupComparison, GroupEffects, ci95_over_pairs

#: Components looked at: the top ``TOP_K`` overall and the top ``TOP_K`` of each group.
TOP_K = 10


def _p_value(samples: list[np.ndarray]) -> float | None:
    """The between-group p-value of one component (None: fewer than two groups to test)."""
    from scipy import stats as sps
    from statsmodels.stats.oneway import anova_oneway

    groups = [s for s in samples if len(s) >= 2]
    if len(groups) < 2:
        return None
    constant = [bool(np.ptp(s) == 0) for s in groups]
    if all(constant):
        return 1.0 if np.ptp(np.array([s[0] for s in groups])) == 0 else 0.0
    if any(constant):
        return float(sps.kruskal(*groups).pvalue)
    return float(anova_oneway(groups, use_var="unequal").pvalue)


def _kind(mean: Sequence[float], ci: Sequence[list[float] | None], baseline: float) -> str:
    above = any(c is not None and c[0] > baseline for c in ci)
    below = any(c is not None and c[1] < baseline for c in ci)
    return "sign" if above and below else "size"


def group_effects(
    normalised: Float[Tensor, "pairs ..."],
    names: Sequence[str],
    labels: Sequence[str],
    *,
    column: str,
    method: str,
    baseline: float,
    k: int = TOP_K,
    alpha: float = ALPHA,
) -> GroupEffects:
    """Per-group effects of the top components (see the module docstring).

    ``normalised`` holds one method's per-pair effects (any component axes, flattened in
    ``names`` order); ``labels[i]`` is pair ``i``'s group. Groups are ordered by first
    appearance.
    """
    from interp.stats.tests import holm

    x = normalised.reshape(normalised.shape[0], -1).to(torch.float64)
    if x.shape[0] != len(labels) or x.shape[1] != len(names):
        raise ValueError(f"effects {tuple(x.shape)} do not match {len(labels)} labels and "
                         f"{len(names)} names")
    groups = list(dict.fromkeys(labels))
    rows = {g: [i for i, lab in enumerate(labels) if lab == g] for g in groups}
    means = {g: x[rows[g]].mean(0) for g in groups}
    chosen: list[int] = []
    for mean in (x.mean(0), *means.values()):
        order = torch.argsort((mean - baseline).abs(), descending=True, stable=True)[:k]
        chosen += [int(i) for i in order if int(i) not in chosen]
    comps: list[GroupComparison] = []
    for j in chosen:
        mean, ci = [], []
        for g in groups:
            m, interval = ci95_over_pairs(x[rows[g], j])
            mean.append(float(m))
            ci.append(None if len(rows[g]) < 2 else [float(v) for v in interval])
        samples = [x[rows[g], j].numpy() for g in groups]
        comps.append(GroupComparison(names[j], mean, ci, _p_value(samples), None, False))
    tested = [(c, c.p_value) for c in comps if c.p_value is not None]
    if tested:
        reject, adjusted = holm([p for _, p in tested], alpha)
        for (c, _), r, p in zip(tested, reject, adjusted, strict=True):
            c.p_holm = float(p)
            c.differs = bool(r)
            c.kind = _kind(c.mean, c.ci95, baseline) if c.differs else ""
    return GroupEffects(column=column, groups=groups, n_pairs=[len(rows[g]) for g in groups],
                        method=method, baseline=baseline, components=comps, alpha=alpha)
