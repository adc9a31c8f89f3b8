"""DAS's controls can fail: the control task by type, intervals over templates, and the
subspace-illusion check, each shown firing on a case built to trip it (tiny model, fast)."""

from __future__ import annotations

import itertools
import json
import random

import numpy as np
import torch

from interp.causal import DASConfig, DASResult, LayerIIA, run_das
from interp.causal.das import (
    control_labels,
    cross_fit_folds,
    difference,
    observed_span,
    pair_types,
    rate,
    restrict_to_span,
)
from interp.causal.interchange import interchange_lds, position_mask, residuals
from interp.circuits import load_task, tokenize_task
from interp.stats import cluster_bootstrap_ci

WORDS = [" fox", " dog", " Rome", " Paris", " Italy", " France", " Water", " model", " time",
         " capital", " small", " brown"]
PREFIXES = ["The", "Once upon a", "It is like", "Numbers of the", "The small",
            "Water boils at", "The quick", "It was"]


def word_task(tmp_path, share: float = 0.25, seed: int = 0) -> str:
    """Pairs "<prefix> X is the" / "<prefix> Y is the" over 12 one-token words X ≠ Y in 8
    templates (the prefix), a random ``share`` of all of them; position ``x`` is the word."""
    rng = random.Random(seed)
    rows = []
    for t, pre in enumerate(PREFIXES):
        for a, b in itertools.permutations(WORDS, 2):
            if rng.random() < share:
                s, e = len(pre), len(pre) + len(a)
                rows.append({"clean": f"{pre}{a} is the", "corrupted": f"{pre}{b} is the",
                             "answer": " dog", "wrong": " fox", "template": t,
                             "labels": [["start", 0, s], ["x", s, e],
                                        ["END", e, len(pre) + len(a) + 7]]})
    rng.shuffle(rows)
    path = tmp_path / f"words-{share}-{seed}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


# ------------------------------------------------------------------ intervals by template
def test_cluster_bootstrap_resamples_whole_templates():
    """Units of one cluster move together: three homogeneous templates give at most
    C(5, 3) = 10 distinct resamples, and an interval far wider than Wilson's over the
    90 units as if independent."""
    values = np.array([1.0] * 30 + [0.0] * 30 + [1.0] * 30)
    clusters = ["a"] * 30 + ["b"] * 30 + ["c"] * 30
    seen: set[float] = set()

    def stat(idx: np.ndarray) -> float:
        counts = np.bincount(idx, minlength=90)
        for lo in (0, 30, 60):  # a drawn cluster comes whole, every unit as often
            block = counts[lo:lo + 30]
            assert (block == block[0]).all()
        m = float(values[idx].mean())
        seen.add(round(m, 9))
        return m

    lo, hi = cluster_bootstrap_ci(stat, clusters, n_resamples=500)
    assert len(seen) <= 10
    independent = rate(torch.tensor(values))
    clustered = rate(torch.tensor(values), clusters)
    assert clustered.clusters == 3 and independent.clusters is None
    w_lo, w_hi = independent.ci95
    assert w_lo is not None and w_hi is not None
    assert hi - lo > 2 * (w_hi - w_lo)
    # never narrower than Wilson's: an all-success IIA over 3 templates is not [1, 1]
    perfect = rate(torch.ones(90), clusters)
    assert perfect.ci95[0] == independent_lo(90)


def independent_lo(n: int) -> float | None:
    return rate(torch.ones(n)).ci95[0]


def test_cross_fit_folds_hold_out_every_pair_once_and_keep_templates_whole():
    groups = [str(i % 7) for i in range(70)]
    folds, how = cross_fit_folds(groups, 70, 5, seed=3)
    assert how == "5 folds by template, 7 templates" and len(folds) == 5
    held = sorted(i for _, te in folds for i in te)
    assert held == list(range(70))
    for train, test in folds:
        assert not {groups[i] for i in train} & {groups[i] for i in test}
        assert sorted(train + test) == list(range(70))
    # fewer templates than folds: leave one template out
    folds3, how3 = cross_fit_folds([str(i % 3) for i in range(12)], 12, 5, seed=0)
    assert len(folds3) == 3 and how3.startswith("3 folds")
    folds_r, how_r = cross_fit_folds(None, 10, 4, seed=0)
    assert how_r == "4 random folds" and sorted(i for _, t in folds_r for i in t) == \
        list(range(10))
    # the seed moves templates between folds
    other, _ = cross_fit_folds(groups, 70, 5, seed=4)
    assert [t for _, t in other] != [t for _, t in folds]


# ------------------------------------------------------------------ the control task by type
def test_control_labels_are_a_seeded_function_of_the_deciding_tokens(tiny_model, tmp_path):
    tt = tokenize_task(tiny_model, load_task(word_task(tmp_path)))
    types = pair_types(tt)
    words = {tiny_model.encode_continuation(w)[0]: w for w in WORDS}
    for i, t in enumerate(types):  # the source's word, the one token that differs
        assert len(t) == 1 and t[0] in words
        assert int(tt.clean_ids[i][tt.position_mask[i, tt.positions.index("x")]][0]) == t[0]
    labels = control_labels(types, seed=0)
    by_type: dict[tuple[int, ...], set[float]] = {}
    for t, y in zip(types, labels.tolist(), strict=True):
        by_type.setdefault(t, set()).add(y)
    assert all(len(v) == 1 for v in by_type.values())  # one label per type
    assert torch.equal(labels, control_labels(types, seed=0))
    many = control_labels([(i,) for i in range(400)], seed=1)
    assert 0.4 < float((many > 0).float().mean()) < 0.6
    assert not torch.equal(many, control_labels([(i,) for i in range(400)], seed=2))


def _memoriser(monkeypatch, tt_types: list) -> None:
    """Break DAS on purpose into the extreme of an over-expressive subspace: trained on
    the control task, it memorises each training type's target and, scored, flips exactly
    the held-out pairs whose type it memorised as "flip" (unseen types: flip). On the
    task itself it is real DAS."""
    import interp.causal.das as das

    real_train, real_lds = das.train_das, das.interchange_lds
    tables: dict[int, dict] = {}

    def train(model, tt, train, layer, base, source, where, *, targets=None, **kw):
        if targets is None:
            return real_train(model, tt, train, layer, base, source, where, **kw)
        basis = torch.zeros(base.shape[-1], 1)
        tables[id(basis)] = {tt_types[i]: float(targets[i]) for i in train}
        return basis, []

    def lds(model, tt, idx, layer, base, source, where, basis, batch_size=32):
        if id(basis) not in tables:
            return real_lds(model, tt, idx, layer, base, source, where, basis, batch_size)
        table = tables[id(basis)]
        return torch.tensor([table.get(tt_types[i], 1.0) for i in idx])

    monkeypatch.setattr(das, "train_das", train)
    monkeypatch.setattr(das, "interchange_lds", lds)


def test_the_control_by_type_fires_on_a_memorising_method(tiny_model, tmp_path, monkeypatch):
    """A method that memorises types fits the control by type on held-out templates: its
    control IIA lies above the control's chance, the selectivity falls, and the result
    warns. Against the old control (an independent coin flip per pair, so every pair its
    own "type") the memoriser has nothing to carry to a held-out pair: no held-out pair's
    label was ever seen, and the control is not scored at all rather than "passed"."""
    import interp.causal.das as das

    path = word_task(tmp_path)
    tt = tokenize_task(tiny_model, load_task(path))
    _memoriser(monkeypatch, pair_types(tt))
    cfg = DASConfig(task=path, layers=[2], position="x", dim=1, steps=2, folds=4)
    res = run_das(tiny_model, cfg, progress=False)
    (r,) = res.layers
    assert r.control is not None and r.control_chance is not None
    assert r.control.value == 1.0 and r.control_fits(), (r.control.text(), r.control_chance)
    assert r.control_types == len(WORDS)
    assert any("fits the control task" in m for m in res.warnings)
    assert "fitted" in (res.headline().verdict or "")
    # the old control: labels drawn per pair, which nothing can carry to a held-out pair
    g = torch.Generator().manual_seed(0)
    coin = torch.where(torch.rand(len(tt), generator=g) < 0.5, -1.0, 1.0)
    monkeypatch.setattr(das, "pair_types", lambda tt: [(i,) for i in range(len(tt))])
    monkeypatch.setattr(das, "control_labels", lambda types, seed: coin)
    _memoriser(monkeypatch, [(i,) for i in range(len(tt))])
    old = run_das(tiny_model, cfg, progress=False)
    assert old.layers[0].control is None  # no held-out pair's "type" was ever seen


def test_the_control_by_type_stays_at_chance_for_one_direction(tiny_model, tmp_path):
    """Real DAS with one direction on the same pairs does not fit the labels by type."""
    path = word_task(tmp_path)
    res = run_das(tiny_model, DASConfig(task=path, layers=[2], position="x", dim=1,
                                        steps=30, lr=0.05, folds=4), progress=False)
    (r,) = res.layers
    assert r.control is not None
    assert not r.control_fits(), r.control.text()
    assert not any("fits the control task" in m for m in res.warnings)


# ------------------------------------------------------------------ the subspace illusion
def constructed_illusion(model, tt, position: str, layer: int):
    """Makelov et al.'s construction on ``model``: the observed span at ``position``, the
    direction u along which the activations there vary (the mean source − base difference,
    each pair's taken with the sign that raises its logit difference, so that pairs of
    opposite labels, he → she and she → he, do not cancel), a dormant direction g (outside
    the span) along which the logit differences rise fastest (their gradients, signed
    alike), and v = (u + g)/√2; with each pair's success under a basis."""
    from interp.circuits.patching import ld_direction, ld_from_block

    where = position_mask(tt, position)
    n = len(tt)
    base, source = residuals(model, tt, layer)
    span = observed_span(base, source, where, range(n), 0.99)
    delta = ((source - base) * where[..., None]).sum(1)
    h = base.clone().requires_grad_(True)
    d = ld_direction(model, tt.answer, tt.wrong)
    ld = ld_from_block(model, h, layer + 1, tt.attention_mask, d, ())
    (grad,) = torch.autograd.grad(ld.sum(), h)
    grads = (grad * where[..., None]).sum(1)  # each pair's gradient at the position
    align = torch.sign((delta * grads).sum(1, keepdim=True))
    u = (align * delta).mean(0)
    u = (u / u.norm())[:, None]
    g = (align * grads).mean(0)
    g = g - span @ (span.T @ g)
    g = (g / g.norm())[:, None]
    v = (u + g) / (u + g).norm()

    def success(basis: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return (interchange_lds(model, tt, range(n), layer, base, source, where,
                                    basis) > 0).float()

    return span, u, v, success


def test_the_span_check_fires_on_a_constructed_illusion(tiny_model, tmp_path):
    """Makelov et al.'s construction: one direction v = (u + g)/√2 mixing u, along which the
    activations at the word vary (the mean source − base difference), with g, a dormant
    direction (outside the span they vary in) along which the logit difference rises
    fastest. Swapping along v writes the varying part's difference into g: the output
    moves, through a direction the model never occupies. Restricted to the observed span,
    v is u alone and the effect is gone: the gap is above zero beyond the noise. u itself
    (a direction in the span) loses nothing."""
    tt = tokenize_task(tiny_model, load_task(word_task(tmp_path, share=0.3)))
    span, u, v, success = constructed_illusion(tiny_model, tt, "x", 0)
    assert 0 < span.shape[1] < tiny_model.d_model
    restricted, share = restrict_to_span(v, span)
    assert 0.4 < share < 0.6  # half of v lies outside the span: the dormant g
    gap = difference(success(v), success(restricted))
    assert gap.above_zero(), gap.text()
    restricted_u, share_u = restrict_to_span(u, span)
    assert share_u > 0.95
    gap_u = difference(success(u), success(restricted_u))
    assert not gap_u.above_zero(), gap_u.text()


def test_a_span_gap_is_warned_even_below_the_full_interchange():
    """The illusion warning no longer needs DAS to beat the full interchange: a layer
    where DAS and the full interchange both score 1.00 but DAS restricted to the observed
    span falls to 0.10 is an illusion; a layer whose restricted DAS keeps its IIA is not."""
    ones = rate(torch.ones(40))
    low = rate(torch.tensor([1.0] * 4 + [0.0] * 36))
    zero = rate(torch.zeros(40))
    gap = difference(torch.ones(40), torch.tensor([1.0] * 4 + [0.0] * 36))
    none = difference(torch.ones(40), torch.ones(40))
    a = LayerIIA(3, ones, [1.0], zero, ones, zero, None, 0.0, in_span=low, span_gap=gap)
    b = LayerIIA(5, ones, [1.0], zero, ones, zero, None, 0.0, in_span=ones, span_gap=none)
    res = DASResult(DASConfig(), "t", "0" * 64, "name", 40, "random", layers=[a, b])
    assert [r.layer for r in res.illusions()] == [3]
    res.add_warnings()
    assert len(res.warnings) == 1 and "restricted to the span" in res.warnings[0]
    assert "subspace illusion" in (res.headline().verdict or "")
