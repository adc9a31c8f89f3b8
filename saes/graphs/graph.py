"""``run_attribution``: one prompt's attribution graph, built, pruned, scored and checked
against the real model."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from interp.errors import InterpError
from interp.models.loading import Model
from interp.runs.manifest import model_manifest
from interp.runs.progress import make_progress
from saes.graphs.attribution import Nodes, active_features, adjacency, capped_adjacency
from saes.graphs.checks import (
    _deltas,
    agreement,
    faithfulness,
    frozen_values,
    real_metric,
    replacement_metric,
    writes,
)
from saes.graphs.controls import control_scores
from saes.graphs.influence import Pruned, prune, scores, total_effects
from saes.graphs.replacement import Frozen, Stack, final_normed, freeze, replacement_forward
from saes.graphs.results import AttributionConfig, AttributionGraph, FeatureCheck


def _targets(model: Model, stack: Stack, fz: Frozen, cfg: AttributionConfig
             ) -> tuple[list[str], list[int | None], torch.Tensor, torch.Tensor,
                        tuple[int, int] | None]:
    """Target names, tokens, weights, vectors (read off the final normed residual) and the
    custom pair."""
    w_u = stack.w_u
    pair = cfg.answer_wrong()
    if pair is not None:
        a = model.single_token(pair[0], "the target token")
        b = model.single_token(pair[1], "the target token")
        name = f"logit({pair[0]!r}) − logit({pair[1]!r})"
        return [name], [None], torch.ones(1), (w_u[a] - w_u[b])[None], (a, b)
    probs = torch.softmax(fz.logits.double(), -1).float()
    top_p, top_i = probs.topk(cfg.max_logits)
    cut = int(torch.searchsorted(torch.cumsum(top_p, 0), torch.tensor(cfg.logit_probability)))
    keep = min(cut + 1, cfg.max_logits)
    top_p, top_i = top_p[:keep], top_i[:keep]
    vecs = w_u[top_i] - w_u.mean(0, keepdim=True)
    names = [f"logit {model.token_strs([int(t)])[0]!r}" for t in top_i]
    return names, [int(t) for t in top_i], top_p, vecs, None


def run_attribution(
    model: Model, transcoders: Any, prompt: str, cfg: AttributionConfig | None = None, *,
    progress: bool | None = None,
) -> AttributionGraph:
    """The attribution graph of ``prompt`` on ``model`` with ``transcoders`` (an
    :class:`~saes.transcoders.mlp_replacement.MLPReplacement`: per-layer transcoders or a
    cross-layer transcoder, as :func:`~saes.transcoders.files.load_transcoders` gives them;
    or a dict layer → transcoder, or a cross-layer transcoder).

    Raises :class:`InterpError` (one line) for no transcoders, transcoders that do not fit
    the model, a prompt longer than ``cfg.max_tokens``, or a target token that is not one
    token.
    """
    from saes.transcoders.files import as_replacement

    cfg = cfg or AttributionConfig()
    start = time.perf_counter()
    transcoders = as_replacement(transcoders)
    transcoders.check_model(model)
    tcs = transcoders
    ids = torch.tensor(model.encode(prompt))
    if ids.numel() > cfg.max_tokens:
        raise InterpError(f"the prompt is {ids.numel()} tokens, over the limit of "
                          f"{cfg.max_tokens} (max_tokens)")
    if ids.numel() < 2:
        raise InterpError("the prompt needs at least 2 tokens")
    stack = Stack(model)
    fz = freeze(model, stack, ids)
    layer_t, pos_t, feat_t, act_t, errors = active_features(fz, tcs)
    names, toks, weights, vecs, pair = _targets(model, stack, fz, cfg)
    bias_layers = [i for i in tcs.out_layers if tcs.bias(i) is not None]
    nodes = Nodes(layer_t, pos_t, feat_t, act_t, stack.n_layers, len(ids), bias_layers,
                  names, toks, weights, vecs, pair,
                  constant_layers=list(range(stack.n_layers + 1)) if stack.has_constants
                  else [])
    n_active = nodes.n_features
    all_nodes, kept = nodes, None
    cap = cfg.max_feature_nodes
    if cap is not None and cap >= n_active:
        cap = None  # every active feature fits
    check_graph_memory(nodes.total, len(ids), cap)
    # the controls first: their matrices are freed before the graph's are built; their
    # time is theirs (controls["elapsed_s"]), not the graph's (elapsed_s)
    t_ctl = time.perf_counter()
    controls = control_scores(stack, fz, tcs, nodes, cfg.control_graphs, cfg.seed,
                              max_features=cap, batch_size=cfg.batch_size
                              ) if cfg.control_graphs else {}
    if controls:
        controls["elapsed_s"] = time.perf_counter() - t_ctl
    bar = make_progress(enabled=progress)
    with bar:
        task = bar.add_task("graph rows (backward passes)",
                            total=(n_active if cap is None else cap) + len(names), info="")
        if cap is None:
            adj = adjacency(stack, fz, tcs, nodes, errors, batch_size=cfg.batch_size,
                            on_rows=lambda k: bar.advance(task, k))
        else:
            adj, nodes, kept = capped_adjacency(stack, fz, tcs, nodes, errors, cap,
                                             batch_size=cfg.batch_size,
                                             on_rows=lambda k: bar.advance(task, k))
    err_list = [errors[i] for i in range(stack.n_layers)]
    with torch.no_grad():
        x = replacement_forward(stack, fz, tcs, err_list)[0, -1]
        target_replacement = float(x @ vecs.T @ weights)
    softcap = stack.softcap
    real_clean = real_metric(model, fz, nodes, {}, 1, softcap)[0] if softcap is None else float(
        final_normed(stack, fz, fz.resid_final)[-1] @ vecs.T @ weights)
    edge_sum = float(weights @ adj[nodes.target_start:].sum(-1))
    replacement_score, completeness_score = scores(adj, nodes)
    pr = prune(adj, nodes, cfg.node_threshold, cfg.edge_threshold)
    edge_rows, n_edges = _edge_rows(adj, pr, cfg.max_edges)
    effects = total_effects(adj, nodes)
    result = AttributionGraph(
        prompt=prompt, tokens=model.token_strs(ids.tolist()), token_ids=ids.tolist(),
        target=" + ".join(f"{float(w):.3f}·{n}" for w, n in zip(weights, names, strict=True))
        if pair is None else names[0],
        nodes=_node_rows(nodes, pr, effects, model), edges=edge_rows, n_edges_pruned=n_edges,
        n_active_features=n_active, n_nodes=nodes.total,
        n_feature_nodes=None if cap is None else nodes.n_features,
        replacement_score=replacement_score, completeness_score=completeness_score,
        controls=controls, target_real=float(real_clean), target_replacement=target_replacement,
        target_edge_sum=edge_sum, config=cfg, adjacency=adj,
        transcoders=transcoders.to_dict())
    if cfg.check_features and nodes.n_features:
        f = nodes.n_features
        # indices among all the active features (a cap leaves some out of ``nodes``)
        among_all = torch.arange(f) if kept is None else kept
        in_graph = among_all[pr.node_mask[:f]]
        inf_all = torch.zeros(all_nodes.n_features)  # left out by a cap: not computed, 0
        inf_all[among_all] = pr.node_influence[:f]
        measured = _check(model, stack, fz, nodes, tcs, err_list, pr, effects, cfg, result)
        result.faithfulness = _faithfulness(model, fz, all_nodes, tcs, in_graph, inf_all,
                                            {int(among_all[i]): v for i, v in measured.items()},
                                            cfg, stack)
    result.elapsed_s = time.perf_counter() - start - controls.get("elapsed_s", 0.0)
    result.manifest = model_manifest(model, seed=cfg.seed, config=cfg.to_dict(), texts=[prompt])
    return result


#: Dense [n, n] float32 matrices a graph holds at its peak (the adjacency, a normalised copy
#: and the pruned copy while pruning and scoring, masks and temporaries): measured, a
#: 20-token graph of 17,812 nodes peaked at 7.1 GB resident, the model included.
GRAPH_MATRICES = 5


def check_graph_memory(n_nodes: int, n_tokens: int, max_features: int | None = None) -> None:
    """Refuse (one line, before the backward passes) a graph whose dense matrices would not
    fit in memory: they grow with the square of the active features, so with the prompt's
    length times the transcoder layers times k. With ``max_features`` (fewer than the active
    features), the graph holds ``[max_features + targets, n_nodes]`` rows while it grows,
    then the matrices of the reduced graph."""
    from interp.runs.memory import require

    what = f"an attribution graph of {n_nodes:,} nodes ({n_tokens} tokens)"
    if max_features is None:
        require(GRAPH_MATRICES * 4.0 * n_nodes * n_nodes, what,
                "use a shorter prompt, transcoders at fewer layers or --max-feature-nodes")
        return
    # n_nodes counts every active feature; the reduced graph keeps max_features of them
    need = 3 * 4.0 * max_features * n_nodes + GRAPH_MATRICES * 4.0 * max_features ** 2
    require(need, what + f" with {max_features:,} feature nodes",
            "use a shorter prompt or a lower --max-feature-nodes")


def _node_rows(nodes: Nodes, pr: Any, effects: torch.Tensor, model: Model
               ) -> list[dict[str, Any]]:
    rows = []
    for i in pr.node_mask.nonzero(as_tuple=True)[0].tolist():
        kind = nodes.kind(i)
        row: dict[str, Any] = {"id": i, "kind": kind, "influence": float(pr.node_influence[i]),
                               "cumulative": float(pr.cumulative[i]),
                               "effect": float(effects[i])}
        if kind == "feature":
            row.update(layer=int(nodes.feature_layer[i]), position=int(nodes.feature_pos[i]),
                       feature=int(nodes.feature_id[i]),
                       activation=float(nodes.activation[i]))
        elif kind == "error":
            j = i - nodes.error_start
            row.update(layer=j // nodes.n_pos, position=j % nodes.n_pos)
        elif kind == "bias":
            row.update(layer=nodes.bias_layers[i - nodes.bias_start], position=-1)
        elif kind == "constant":
            row.update(layer=nodes.constant_layers[i - nodes.constant_start], position=-1)
        elif kind == "embedding":
            row.update(layer=-1, position=i - nodes.embed_start)
        else:
            k = i - nodes.target_start
            row.update(layer=nodes.n_layers, position=nodes.n_pos - 1,
                       name=nodes.target_names[k], weight=float(nodes.target_weights[k]))
        rows.append(row)
    return rows


def _edge_rows(adj: torch.Tensor, pr: Pruned, limit: int
               ) -> tuple[list[dict[str, Any]], int]:
    """The pruned graph's edges, the ``limit`` of most influence on the targets (the
    edge's share of its target's input times the target's influence: the score pruning
    uses, :meth:`~saes.graphs.influence.Pruned.edge_influence`; raw weights mix units,
    a feature's pre-activation and a logit), and how many the pruning kept."""
    t, s = pr.edge_mask.nonzero(as_tuple=True)
    inf = pr.edge_influence(adj, t, s)
    if inf.numel() > limit:
        keep = torch.argsort(inf, descending=True, stable=True)[:limit]
        t, s, inf = t[keep], s[keep], inf[keep]
    w = adj[t, s]
    rows = [{"source": int(a), "target": int(b), "weight": float(c), "influence": float(d)}
            for a, b, c, d in zip(s.tolist(), t.tolist(), w.tolist(), inf.tolist(),
                                  strict=True)]
    return rows, int(pr.edge_mask.sum())


def _check(model: Model, stack: Stack, fz: Frozen, nodes: Nodes, tcs: Any, errors: list,
           pr: Any, effects: torch.Tensor, cfg: AttributionConfig,
           result: AttributionGraph) -> dict[int, float]:
    """Interventions on the top feature nodes, in the real and the replacement model;
    returns each checked feature node's measured change in the real model."""
    f = nodes.n_features
    top = torch.argsort(pr.node_influence[:f], descending=True)[:cfg.check_features].tolist()
    ws = writes(nodes, tcs, top)
    t, d = fz.embed.shape
    rows = list(ws) * 2
    coefs = [-1.0] * len(ws) + [1.0] * len(ws)
    deltas = _deltas(rows, coefs, t, d)
    clean_real = result.target_real
    real = real_metric(model, fz, nodes, deltas, len(rows), stack.softcap) - clean_real
    rep = replacement_metric(stack, fz, nodes, tcs, errors, deltas) - result.target_replacement
    n = len(ws)
    removals = {k: v[:n] for k, v in deltas.items()}
    real_frozen = real_metric(model, fz, nodes, removals, n, stack.softcap,
                              frozen=frozen_values(model, fz.ids)) - clean_real
    pred = np.array([-float(effects[i]) for i in top])
    for j, i in enumerate(top):
        result.checks.append(FeatureCheck(
            node=int(i), layer=int(nodes.feature_layer[i]), position=int(nodes.feature_pos[i]),
            feature=int(nodes.feature_id[i]), activation=float(nodes.activation[i]),
            influence=float(pr.node_influence[i]), predicted=float(pred[j]),
            replacement=float(rep[j]), real=float(real[j]),
            real_frozen=float(real_frozen[j]),
            replacement_doubled=float(rep[n + j]), real_doubled=float(real[n + j])))
    perms = cfg.null_permutations
    a_real = agreement(pred, real[:n], cfg.seed, perms)
    a_rep = agreement(pred, rep[:n], cfg.seed, perms)
    a_dbl = agreement(-pred, real[n:], cfg.seed, perms)
    a_frz = agreement(pred, real_frozen, cfg.seed, perms)
    result.agreement = {}
    for where, a in (("real", a_real), ("replacement", a_rep), ("real_doubled", a_dbl),
                     ("real_frozen", a_frz)):
        for key, value in a.items():  # spearman_ci95 → spearman_real_ci95, sign_p → …
            metric, _, rest = key.partition("_")
            result.agreement[f"{metric}_{where}" + (f"_{rest}" if rest else "")] = value
    return {i: float(real[j]) for j, i in enumerate(top)}


def _faithfulness(model: Model, fz: Frozen, nodes: Nodes, tcs: Any, in_graph: torch.Tensor,
                  influence: torch.Tensor, measured: dict[int, float],
                  cfg: AttributionConfig, stack: Stack) -> dict[str, Any]:
    """The share of the target kept in the real model when every active feature outside
    the pruned graph is removed (features left out by ``max_feature_nodes`` included:
    ``nodes`` are all the active ones), against influence-matched random sets, the ceiling
    and random active features (:func:`saes.graphs.checks.faithfulness`)."""
    f = nodes.n_features
    kept = torch.zeros(f, dtype=torch.bool)
    kept[in_graph] = True
    all_ws = writes(nodes, tcs, range(f))
    t, d = fz.embed.shape

    def keep_only(sets: list[torch.Tensor]) -> np.ndarray:
        rows = [[w for i in (~m).nonzero(as_tuple=True)[0].tolist() for w in all_ws[i]]
                for m in sets]
        return real_metric(model, fz, nodes, _deltas(rows, [-1.0] * len(rows), t, d),
                           len(rows), stack.softcap)

    return faithfulness(kept, influence, measured, keep_only, cfg.random_subgraphs, cfg.seed)


__all__ = ["run_attribution"]
