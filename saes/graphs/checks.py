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

**Faithfulness**: remove every active feature outside the pruned graph in the real model
and measure how much of the target is kept, ``(m_S − m_∅)/(m_clean − m_∅)`` with ``m_∅``
every active feature removed, against random sets of as many features.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import torch
from torch import Tensor

from interp.activations.capture import forward_with_hooks
from interp.circuits.agreement import spearman
from interp.models.forward import forward
from interp.models.loading import Model
from interp.stats.intervals import bootstrap_ci
from saes.graphs.attribution import Nodes
from saes.graphs.replacement import Frozen, Stack, replacement_forward
from saes.sae import SparseAutoencoder


def writes(nodes: Nodes, transcoders: Mapping[int, SparseAutoencoder],
           idx: Sequence[int]) -> list[tuple[int, int, Tensor]]:
    """(layer, position, what the feature writes) of feature nodes ``idx``."""
    out = []
    for i in idx:
        layer = int(nodes.feature_layer[i])
        vec = transcoders[layer].W_dec.detach()[int(nodes.feature_id[i])].float()
        out.append((layer, int(nodes.feature_pos[i]), vec * float(nodes.activation[i])))
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
                       transcoders: Mapping[int, SparseAutoencoder], errors: Sequence[Tensor],
                       deltas: Mapping[int, Tensor], batch: int = 32) -> np.ndarray:
    """The target metric in the frozen replacement model with ``deltas`` added."""
    n = next(iter(deltas.values())).shape[0]
    out = []
    with torch.no_grad():
        for s in range(0, n, batch):
            part = {k: v[s:s + batch] for k, v in deltas.items()}
            x = replacement_forward(stack, fz, transcoders, errors, part)[:, -1]
            out.append(x @ nodes.target_vectors.T @ nodes.target_weights)
    return torch.cat(out).numpy()


def agreement(pred: np.ndarray, measured: np.ndarray, seed: int = 0) -> dict[str, object]:
    """Spearman and sign agreement of predicted and measured effects, with bootstrap CIs
    over the features and their counts (``spearman``, ``spearman_ci95``, ``spearman_n``,
    ``sign``, …)."""
    ok = np.isfinite(pred) & np.isfinite(measured)
    pred, measured = pred[ok], measured[ok]
    n = int(len(pred))
    if n < 3:
        return {"spearman_n": n, "sign_n": n, "spearman": math.nan,
                "spearman_ci95": [math.nan] * 2, "sign": math.nan, "sign_ci95": [math.nan] * 2}
    sign = (np.sign(pred) == np.sign(measured)).astype(float)
    return {"spearman_n": n, "sign_n": n,
            "spearman": spearman(pred, measured),
            "spearman_ci95": bootstrap_ci(lambda i: spearman(pred[i], measured[i]),
                                          len(pred), seed=seed),
            "sign": float(sign.mean()),
            "sign_ci95": bootstrap_ci(lambda i: float(sign[i].mean()), len(pred), seed=seed)}


__all__ = ["agreement", "real_metric", "replacement_metric", "writes"]
