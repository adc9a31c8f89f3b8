"""Checking a graph against interventions: in the real model (everything live) and in the
frozen replacement model (features live, attention and norms frozen).

A feature node at (layer, position) is removed by subtracting what it writes (``a·W_dec``)
from that MLP's output at that position, and doubled by adding it once more; the change of
the target metric is measured and compared with the graph's prediction (``∓`` the node's
signed total effect, :func:`saes.graphs.influence.total_effects`). The real model runs
through the bridge with a hook on ``hook_mlp_out`` per layer, one batch row per
intervention. To tell what freezing costs from what the transcoders miss, the removal also
runs in the real model with its attention patterns and norm scales held at the clean run's
and its real MLPs live (``real_frozen``): the graph's only approximations left there are the
transcoders' (their features' linearisation, the constant error terms).

**Agreement** of predicted and measured changes: Spearman with a bootstrap CI over the
features (chance: 0), and sign agreement against a **permutation null** (the measured
changes shuffled against the predicted ones, within each prompt: chance is
``p·q + (1 − p)(1 − q)`` for shares ``p`` and ``q`` of positive predictions and
measurements, not 0.5), with the null's mean, its 95% range and a one-sided p-value
(:func:`sign_null`).

**Faithfulness**: remove every active feature outside a set ``S`` in the real model and
measure how much of the target is kept, ``(m_S − m_∅)/(m_clean − m_∅)`` with ``m_∅`` every
active feature removed. ``S`` is the pruned graph's features; the baseline is
**influence-matched** random sets (:func:`matched_sets`: the features ranked by influence
are cut into bins of ``2k`` ranks for a set of ``k``, and each random set takes as many
features from each bin as the graph's set does, so it has the same influence profile and
only the graph's choice *within* a band of influence is tested); the ceiling is the ``k``
features of largest measured single-feature effect (:func:`ceiling_set`). Random sets of
any active features, most of them of no influence, are kept as the *weak* baseline.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from jaxtyping import Bool, Float
from torch import Tensor

from interp.activations.capture import forward_with_hooks
from interp.circuits.agreement import spearman, spearman_rows
from interp.models.forward import forward
from interp.models.loading import Model
from interp.stats.intervals import bootstrap_ci
from saes.graphs.attribution import Nodes
from saes.graphs.replacement import Frozen, Stack, replacement_forward
from saes.transcoders.mlp_replacement import MLPReplacement


def writes(nodes: Nodes, rep: MLPReplacement,
           idx: Sequence[int]) -> list[list[tuple[int, int, Tensor]]]:
    """Per feature node of ``idx``, what it writes: ``(layer, position, vector)`` for each
    layer it writes to (its own; a cross-layer transcoder's, every later one too)."""
    out = []
    with torch.no_grad():
        dec = {(s, t): rep.decoder(s, t).detach().float()
               for s in {int(nodes.feature_layer[i]) for i in idx} for t in rep.targets(s)}
    for i in idx:
        layer, pos = int(nodes.feature_layer[i]), int(nodes.feature_pos[i])
        f, a = int(nodes.feature_id[i]), float(nodes.activation[i])
        out.append([(t, pos, dec[(layer, t)][f] * a) for t in rep.targets(layer)])
    return out


def _deltas(rows: Sequence[Sequence[tuple[int, int, Tensor]]], coefs: Sequence[float],
            t: int, d: int) -> dict[int, Tensor]:
    """Per layer, a ``[rows, t, d]`` tensor adding ``coef × write`` in each row."""
    out: dict[int, Tensor] = {}
    for r, (items, c) in enumerate(zip(rows, coefs, strict=True)):
        for layer, pos, vec in items:
            if layer not in out:
                out[layer] = torch.zeros(len(rows), t, d)
            out[layer][r, pos] += c * vec
    return out


def frozen_values(model: Model, ids: Tensor) -> dict[str, Tensor]:
    """The clean run's attention patterns and norm scales (every ``attn.hook_pattern`` and
    ``hook_scale`` point of the bridge), to freeze the real model at them."""
    names = [n for n in model.bridge.hook_dict
             if n.endswith("attn.hook_pattern") or n.endswith("hook_scale")]
    acts, _ = forward_with_hooks(model, ids[None].to(model.device), None, names)
    return acts


def _putter(value: Tensor):  # noqa: ANN202 - a TransformerLens hook
    def put(tensor: Tensor, hook: object) -> Tensor:  # noqa: ARG001
        return value.to(tensor.device, tensor.dtype).expand_as(tensor)
    return put


def real_metric(model: Model, fz: Frozen, nodes: Nodes, deltas: Mapping[int, Tensor],
                n_rows: int, softcap: float | None, batch: int = 32,
                frozen: Mapping[str, Tensor] | None = None) -> np.ndarray:
    """The target metric in the real model with ``deltas`` added to the MLP outputs;
    with ``frozen`` (:func:`frozen_values`), its attention patterns and norm scales held at
    the clean run's (the real MLPs stay live)."""
    ids = fz.ids[None].expand(n_rows, -1).to(model.device)
    out = []
    vecs = nodes.target_vectors
    for s in range(0, n_rows, batch):
        e = min(n_rows, s + batch)
        hooks = [(f"blocks.{layer}.hook_mlp_out", _adder(delta[s:e]))
                 for layer, delta in deltas.items()]
        hooks += [(name, _putter(v)) for name, v in (frozen or {}).items()]
        captured: list[Tensor] = []
        hooks.append(("ln_final.hook_out", _keeper(captured)))
        with torch.no_grad(), model.bridge.hooks(fwd_hooks=hooks), warnings.catch_warnings():
            # replaying the clean norm scales is the point here, not a numerics hazard
            warnings.filterwarnings("ignore", message="A forward hook edited hook_scale")
            logits = forward(model, ids[s:e])[0][:, -1].float().cpu()
        if softcap is None:
            vals = _logit_metric(logits, nodes)
        else:  # the pre-softcap logits: the final normed residual read by the targets
            vals = captured[-1][:, -1].float().cpu() @ vecs.T @ nodes.target_weights
        out.append(vals)
    return torch.cat(out).numpy()


def _adder(delta: Tensor):  # noqa: ANN202 - a TransformerLens hook
    def add(tensor: Tensor, hook: object) -> Tensor:  # noqa: ARG001
        return tensor + delta.to(tensor.device, tensor.dtype)
    return add


def _keeper(into: list[Tensor]):  # noqa: ANN202 - a TransformerLens hook
    def keep(tensor: Tensor, hook: object) -> Tensor:  # noqa: ARG001
        into.append(tensor.detach())
        return tensor
    return keep


def _logit_metric(logits: Tensor, nodes: Nodes) -> Tensor:
    """Σ_k w_k·target_k from full logits: demeaned top logits, or logit(a) − logit(w)."""
    vals = torch.zeros(logits.shape[0])
    for k, tok in enumerate(nodes.target_tokens):
        w = nodes.target_weights[k]
        if tok is None:  # a custom direction: answer − wrong
            assert nodes.target_pair is not None
            a, b = nodes.target_pair
            vals += w * (logits[:, a] - logits[:, b])
        else:
            vals += w * (logits[:, tok] - logits.mean(-1))
    return vals


def replacement_metric(stack: Stack, fz: Frozen, nodes: Nodes,
                       rep: MLPReplacement, errors: Sequence[Tensor],
                       deltas: Mapping[int, Tensor], batch: int = 32) -> np.ndarray:
    """The target metric in the frozen replacement model with ``deltas`` added."""
    n = next(iter(deltas.values())).shape[0]
    out = []
    with torch.no_grad():
        for s in range(0, n, batch):
            part = {k: v[s:s + batch] for k, v in deltas.items()}
            x = replacement_forward(stack, fz, rep, errors, part)[:, -1]
            out.append(x @ nodes.target_vectors.T @ nodes.target_weights)
    return torch.cat(out).numpy()


def sign_null(groups: Sequence[tuple[np.ndarray, np.ndarray]], n_resamples: int = 1000,
              seed: int = 0) -> dict[str, Any]:
    """Sign agreement pooled over ``groups`` of (predicted, measured) against its permutation
    null: the measured values shuffled against the predicted ones within each group (one
    prompt's features), ``n_resamples`` times. Returns ``sign`` (observed), ``null`` (the
    null's mean: chance), ``null_interval`` (its 2.5 and 97.5 percentiles) and ``p`` (one
    sided, ``(1 + #null ≥ observed)/(1 + n_resamples)``).

    scipy's ``permutation_test`` (``permutation_type="pairings"``) permutes a whole sample;
    the shuffle here is stratified by prompt, so each prompt keeps its own balance of signs
    (the tests check it against scipy for one group)."""
    pairs = [(np.sign(np.asarray(p, float)), np.sign(np.asarray(m, float))) for p, m in groups]
    pairs = [(p[ok], m[ok]) for p, m in pairs if (ok := np.isfinite(p) & np.isfinite(m)).any()]
    n = sum(len(p) for p, _ in pairs)
    if n == 0:
        return {"sign": math.nan, "null": math.nan, "null_interval": [math.nan] * 2,
                "p": math.nan}
    observed = sum(float((p == m).sum()) for p, m in pairs) / n
    rng = np.random.default_rng(seed)
    null = np.zeros(n_resamples)
    for p, m in pairs:
        shuffled = rng.permuted(np.broadcast_to(m, (n_resamples, len(m))), axis=1)
        null += (shuffled == p).sum(1)
    null /= n
    return {"sign": observed, "null": float(null.mean()),
            "null_interval": [float(np.quantile(null, 0.025)), float(np.quantile(null, 0.975))],
            "p": float((1 + (null >= observed - 1e-12).sum()) / (1 + n_resamples))}


def agreement(pred: np.ndarray, measured: np.ndarray, seed: int = 0,
              n_resamples: int = 1000) -> dict[str, object]:
    """Spearman and sign agreement of predicted and measured effects, with bootstrap CIs
    over the features and their counts (``spearman``, ``spearman_ci95``, ``spearman_n``,
    ``sign``, …), the sign agreement's permutation null (``sign_null``,
    ``sign_null_interval``, ``sign_p``: :func:`sign_null`), and the **slope** of the
    measured changes on the predicted ones (least squares through 0, ``slope``,
    ``slope_ci95``): 1 when the magnitudes agree, whatever the ranks say (a replacement
    that writes a later layer's output directly, where the real model computes it from an
    earlier layer's, has its removal counted twice in the real model: slope 2)."""
    ok = np.isfinite(pred) & np.isfinite(measured)
    pred, measured = pred[ok], measured[ok]
    n = int(len(pred))
    sq = float((pred * pred).sum())
    slope = float((pred * measured).sum()) / sq if sq > 0 else math.nan
    if n < 3:
        return {"spearman_n": n, "sign_n": n, "spearman": math.nan,
                "spearman_ci95": [math.nan] * 2, "sign": math.nan, "sign_ci95": [math.nan] * 2,
                "sign_null": math.nan, "sign_null_interval": [math.nan] * 2,
                "sign_p": math.nan, "slope": slope, "slope_ci95": [math.nan] * 2}
    sign = (np.sign(pred) == np.sign(measured)).astype(float)
    null = sign_null([(pred, measured)], n_resamples, seed)
    return {"spearman_n": n, "sign_n": n,
            "spearman": spearman(pred, measured),
            "spearman_ci95": bootstrap_ci(lambda i: spearman_rows(pred[i], measured[i]),
                                          len(pred), seed=seed, vectorized=True),
            "sign": float(sign.mean()),
            "sign_ci95": bootstrap_ci(lambda i: sign[i].mean(-1), len(pred), seed=seed,
                                      vectorized=True),
            "sign_null": null["null"], "sign_null_interval": null["null_interval"],
            "sign_p": null["p"], "slope": slope,
            "slope_ci95": bootstrap_ci(lambda i: _slopes(pred[i], measured[i]), len(pred),
                                       seed=seed, vectorized=True)}


def _slopes(pred: np.ndarray, measured: np.ndarray) -> np.ndarray:
    """Row-wise least-squares slopes through 0 (NaN for a row of zero predictions)."""
    sq = (pred * pred).sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(sq > 0, (pred * measured).sum(-1) / sq, np.nan)


#: An influence-matched set of ``k`` features draws from bins of this many times ``k``
#: consecutive influence ranks (:func:`matched_sets`).
BIN_FACTOR = 2


def matched_sets(influence: Float[Tensor, " f"], kept: Bool[Tensor, " f"], n_sets: int,
                 generator: torch.Generator) -> list[Bool[Tensor, " f"]]:
    """``n_sets`` random sets of features with the influence profile of ``kept``: the
    features ranked by influence (ties in random order) are cut into bins of
    ``BIN_FACTOR × k`` ranks (``k = kept.sum()``), and each set takes, from every bin, as
    many features at random as ``kept`` has in it. The most influential ``k`` features are
    matched by random ``k`` of the top ``2k``: the set is tested on its choice within a band
    of influence, not on having picked influential features at all."""
    f = int(influence.numel())
    k = int(kept.sum())
    if k == 0 or k == f:
        return [kept.clone() for _ in range(n_sets)]
    tie = torch.randperm(f, generator=generator)
    order = tie[torch.argsort(influence[tie], descending=True, stable=True)]
    width = BIN_FACTOR * k
    bins = [order[s:s + width] for s in range(0, f, width)]
    counts = [int(kept[b].sum()) for b in bins]
    out = []
    for _ in range(n_sets):
        m = torch.zeros(f, dtype=torch.bool)
        for b, c in zip(bins, counts, strict=True):
            if c:
                m[b[torch.randperm(len(b), generator=generator)[:c]]] = True
        out.append(m)
    return out


def ceiling_set(influence: Float[Tensor, " f"], measured: Mapping[int, float], k: int
                ) -> Bool[Tensor, " f"]:
    """The ``k`` features of largest measured single-feature effect ``|Δ|`` (``measured``:
    feature index → Δ in the real model); when fewer than ``k`` were measured, the rest by
    influence."""
    f = int(influence.numel())
    ranked = sorted(measured, key=lambda i: -abs(measured[i]) if math.isfinite(
        measured[i]) else math.inf)[:k]
    m = torch.zeros(f, dtype=torch.bool)
    if ranked:
        m[torch.tensor(ranked)] = True
    for i in torch.argsort(influence, descending=True, stable=True).tolist():
        if int(m.sum()) >= k:
            break
        m[i] = True
    return m


def faithfulness(kept: Bool[Tensor, " f"], influence: Float[Tensor, " f"],
                 measured: Mapping[int, float],
                 keep_only: Callable[[list[Tensor]], np.ndarray], n_sets: int,
                 seed: int) -> dict[str, Any]:
    """Faithfulness of the features ``kept`` against influence-matched random sets, the
    ceiling, and unmatched random sets (the weak baseline). ``keep_only(sets)`` gives the
    real model's target metric with every active feature outside each set removed
    (``sets[0]`` is empty: every feature removed), ``influence`` every active feature's
    influence (0 where not computed) and ``measured`` the single-feature effects measured.
    """
    f, k = int(kept.numel()), int(kept.sum())
    g = torch.Generator().manual_seed(seed)
    matched = matched_sets(influence, kept, n_sets, g)
    weak = []
    for _ in range(n_sets):
        m = torch.zeros(f, dtype=torch.bool)
        m[torch.randperm(f, generator=g)[:k]] = True
        weak.append(m)
    ceiling = ceiling_set(influence, measured, k)
    sets = [torch.zeros(f, dtype=torch.bool), torch.ones(f, dtype=torch.bool), kept, ceiling,
            *matched, *weak]
    vals = keep_only(sets)
    empty, clean = float(vals[0]), float(vals[1])
    span = clean - empty

    def frac(v: float) -> float:
        return float((v - empty) / span) if abs(span) > 1e-12 else math.nan

    graph = frac(float(vals[2]))
    m_vals = np.array([frac(v) for v in vals[4:4 + n_sets]])
    w_vals = np.array([frac(v) for v in vals[4 + n_sets:]])

    def summary(v: np.ndarray) -> tuple[float, list[float]]:
        if not np.isfinite(v).all():
            return math.nan, [math.nan, math.nan]
        return float(v.mean()), [float(np.quantile(v, 0.025)), float(np.quantile(v, 0.975))]

    m_mean, m_int = summary(m_vals)
    w_mean, w_int = summary(w_vals)
    return {"features_kept": k, "features_active": f, "target_clean": clean,
            "target_no_features": empty, "target_graph_only": float(vals[2]),
            "faithfulness": graph,
            "matched_mean": m_mean, "matched_interval": m_int,
            "matched_p": float((1 + (m_vals >= graph).sum()) / (1 + n_sets))
            if math.isfinite(graph) and np.isfinite(m_vals).all() else math.nan,
            "ceiling": frac(float(vals[3])),
            "ceiling_measured": min(k, sum(math.isfinite(v) for v in measured.values())),
            "random_mean": w_mean, "random_interval": w_int}


__all__ = ["BIN_FACTOR", "agreement", "ceiling_set", "faithfulness", "matched_sets",
           "real_metric", "replacement_metric", "sign_null", "writes"]
