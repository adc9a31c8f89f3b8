"""Traps a probe run can fall into, caught from its own numbers and data.

Each check returns warning lines for ``ProbeResult.warnings`` (the report's warning box
and ``results.json["warnings"]``), or nothing:

* **below chance**: held-out accuracy (the probe's, or the bag-of-words baseline's)
  significantly *below* 0.5, the accuracy of a coin flip whatever the class balance.
  One-sided binomial test on one split's worth of test items (``n_test`` items at the
  mean accuracy over seeds; pooling the seeds' test sets would count the same items
  several times), Holm-corrected across layers, p < :data:`ALPHA`. A probe anti-learns
  when items that share something (an entity, an answer) carry opposite labels on the
  two sides of the split; the warning names the dataset's columns whose values repeat
  across the split with the other label, the ``--group-column`` that would fix it;
* **near-duplicates**: test texts equal to a training text after lower-casing and
  dropping punctuation and spacing (first split), counted;
* **overfitting**: training accuracy above held-out accuracy by more than
  :data:`OVERFIT_GAP` at some layer.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

#: Significance level of the below-chance test (after Holm's correction).
ALPHA = 0.01
#: Training minus held-out accuracy above which a layer's probe is said to overfit.
OVERFIT_GAP = 0.15
#: A column is named as the likely cause when at least this share of the test items
#: share its value with a training item of the other label.
CROSSING_SHARE = 0.2

_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)


def normalise(text: str) -> str:
    """Lower-case, punctuation and spacing dropped: what counts as a near-duplicate."""
    return _NON_WORD.sub(" ", text.lower()).strip()


def below_chance_layers(
    layers: Sequence[int], accuracies: Sequence[float], n_test: int
) -> list[tuple[int, float, float]]:
    """``(layer, accuracy, Holm-adjusted p)`` of the layers significantly below 0.5."""
    from scipy.stats import binomtest

    from interp.stats.tests import holm

    if n_test < 1 or not layers:
        return []
    pvals = [float(binomtest(round(a * n_test), n_test, 0.5, alternative="less").pvalue)
             for a in accuracies]
    reject, adjusted = holm(pvals, ALPHA)
    return [(layer, float(a), float(p)) for layer, a, p, r in
            zip(layers, accuracies, adjusted, reject, strict=True) if r]


def crossing_columns(
    columns: Mapping[str, Sequence[str]], labels: np.ndarray,
    split: tuple[np.ndarray, np.ndarray],
) -> list[tuple[str, float]]:
    """Columns whose values recur across the split with the other label, most first:
    ``(column, share of test items whose value a training item has with the other label)``."""
    tr, te = [int(i) for i in split[0]], [int(i) for i in split[1]]
    out = []
    for name, values in columns.items():
        train_labels: dict[str, set[int]] = defaultdict(set)
        for i in tr:
            train_labels[values[i]].add(int(labels[i]))
        crossing = sum(1 for i in te if (1 - int(labels[i])) in train_labels.get(values[i], set()))
        share = crossing / max(len(te), 1)
        if share >= CROSSING_SHARE:
            out.append((name, share))
    return sorted(out, key=lambda t: -t[1])


def near_duplicates(texts: Sequence[str], split: tuple[np.ndarray, np.ndarray]) -> int:
    """Test texts with a near-duplicate (:func:`normalise`) among the training texts."""
    tr, te = [int(i) for i in split[0]], [int(i) for i in split[1]]
    seen = {normalise(texts[i]) for i in tr}
    return sum(1 for i in te if normalise(texts[i]) in seen)


def _advice(
    columns: Mapping[str, Sequence[str]], labels: np.ndarray,
    split: tuple[np.ndarray, np.ndarray], group_column: str | None,
    resplit: Callable[[Sequence[str]], tuple[np.ndarray, np.ndarray]],
) -> str:
    """Which ``--group-column`` removes the crossing, checked by splitting on it."""
    crossing = [(c, s) for c, s in crossing_columns(columns, labels, split)
                if c != group_column]
    if not crossing:
        return "no column of the dataset repeats across the split with the other label"
    named = ", ".join(f"{c!r} ({s:.0%} of test items share its value with a training "
                      "item of the other label)" for c, s in crossing[:3])
    for c, _ in crossing:
        left = [o for o, _ in crossing_columns(columns, labels, resplit(columns[c]))
                if o != c]
        if not left:
            return f"crossing: {named}; --group-column {c} removes it"
    cols = [c for c, _ in crossing] + ([group_column] if group_column else [])
    n_comp = len(set(linked_components([columns[c] for c in cols])))
    listed = ", ".join(map(repr, cols))
    if n_comp < MIN_COMPONENTS:
        return (f"crossing: {named}; no grouping can fix it: items linked through "
                f"{listed} form {n_comp} connected group{'s' if n_comp > 1 else ''}, so any "
                "split puts shared values on both sides with opposite labels; the dataset "
                "itself needs values that do not recur with the other label")
    return (f"crossing: {named}; no single column removes it: put items linked through "
            f"{listed} in one group ({n_comp} connected groups) and pass that as "
            "--group-column")


#: Fewer linked groups than this cannot be split into train and test sensibly.
MIN_COMPONENTS = 8


def linked_components(columns: Sequence[Sequence[str]]) -> list[int]:
    """Per item, the id of its connected group: items sharing a value in any column link."""
    n = len(columns[0]) if columns else 0
    parent = list(range(n))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for values in columns:
        first: dict[str, int] = {}
        for i, v in enumerate(values):
            if v in first:
                parent[find(i)] = find(first[v])
            else:
                first[v] = i
    return [find(i) for i in range(n)]


def probe_traps(
    result: Mapping[str, Any], texts: Sequence[str], labels: np.ndarray,
    columns: Mapping[str, Sequence[str]], split: tuple[np.ndarray, np.ndarray],
    group_column: str | None,
    resplit: Callable[[Sequence[str]], tuple[np.ndarray, np.ndarray]],
) -> list[str]:
    """Every trap's warning for one probe run (``result`` is ``ProbeResult.to_dict()``).

    ``resplit(groups)`` is the run's first split made with other groups: the advice
    checks that the ``--group-column`` it names really removes the crossing.
    """
    warns: list[str] = []
    layers = list(result["layers"])
    n_test = int(result["n_test"])
    probe = below_chance_layers(layers, result["test_accuracy_mean"], n_test)
    bow = below_chance_layers([-1], [result["bow_accuracy_mean"][0]], n_test) if layers else []
    if probe or bow:
        where = []
        if probe:
            shown = ", ".join(str(layer) for layer, _, _ in probe[:8])
            more = f" and {len(probe) - 8} more" if len(probe) > 8 else ""
            worst = min(probe, key=lambda t: t[1])
            where.append(f"the probe at layer{'s' if len(probe) > 1 else ''} {shown}{more} "
                         f"(lowest {worst[1]:.2f} at layer {worst[0]})")
        if bow:
            where.append(f"the bag-of-words baseline ({bow[0][1]:.2f})")
        advice = _advice(columns, labels, split, group_column, resplit)
        warns.append(
            f"below chance: held-out accuracy of {' and '.join(where)} is significantly "
            f"below 0.5 (one-sided binomial on {n_test} test items, Holm, p < {ALPHA}): "
            "items that share something carry opposite labels across train and test; "
            f"{advice}")
    dup = near_duplicates(texts, split)
    if dup:
        warns.append(f"near-duplicates: {dup} of {len(split[1])} test texts equal a "
                     "training text up to case, punctuation and spacing (first split); "
                     "held-out accuracy is partly memorisation")
    gaps = [(layer, tr_acc - te_acc) for layer, tr_acc, te_acc in
            zip(layers, result["train_accuracy_mean"], result["test_accuracy_mean"],
                strict=True) if tr_acc - te_acc > OVERFIT_GAP]
    if gaps:
        worst_layer, worst_gap = max(gaps, key=lambda t: t[1])
        warns.append(
            f"overfitting: training accuracy exceeds held-out accuracy by more than "
            f"{OVERFIT_GAP:.2f} at {len(gaps)} of {len(layers)} layers (largest "
            f"{worst_gap:.2f} at layer {worst_layer}); raise the regularisation (lower --C) "
            "or add examples")
    return warns
