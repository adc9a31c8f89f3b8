"""Influence, pruning and the graph's scores (Ameisen et al. 2025, as circuit-tracer computes
them), and the signed total effects the interventions are predicted from.

**Influence** of a node on the targets: with ``Â`` the adjacency with each row's absolute
values normalised to sum to 1, and ``w`` the targets' weights (their probabilities, or 1 for
a custom target), ``w·(Â + Â² + …)``; the series ends because the graph has no cycles.
**Pruning** keeps the nodes holding ``node_threshold`` of the total influence (tokens and
targets always), then the edges holding ``edge_threshold`` of the edge influence, then drops
feature and error nodes left with no outgoing (or, for features, incoming) edge. An edge's
**influence** (its score in that step, circuit-tracer's ``compute_edge_influence``) is its
share of its target's input times the target's influence plus weight; the viewer keeps the
edges of most influence (:meth:`Pruned.edge_influence`), never the largest raw weights,
which mix units.

**Scores.** The *replacement score* is the share of the tokens' and errors' influence that
the tokens hold (1: no path from the input to the output needs an error node); the
*completeness score* is the share of every node's input that comes from non-error nodes,
weighted by the node's influence (plus the targets' own weight). Bias nodes count as neither
tokens nor errors in the first and as non-error inputs in the second. Both are the full graph's
(circuit-tracer's ``compute_graph_scores``; it defines none for a pruned graph, and neither
do we). They have no chance level of their own: :mod:`saes.graphs.controls` gives them one.

**Total effect** (signed): the effect on the target metric ``Σ_k w_k·target_k`` of removing
a node, through every path, with each feature's activation following its pre-activation
with slope 1 (TopK and JumpReLU features that stay active): ``T_s = Σ_k w_k A[k, s] +
Σ_t (T_t / a_t)·A[t, s]`` over feature nodes ``t``. Removing ``s`` changes the metric by
``−T_s``; doubling its activation by ``+T_s``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from jaxtyping import Bool, Float, Int
from torch import Tensor

if TYPE_CHECKING:
    from saes.graphs.attribution import Nodes


def normalize(adj: Float[Tensor, "n n"]) -> Float[Tensor, "n n"]:
    """Each row's absolute values divided by their sum."""
    a = adj.abs()
    a /= a.sum(dim=1, keepdim=True).clamp(min=1e-10)  # in place: one [n, n] copy, not two
    return a


def influence(norm_adj: Float[Tensor, "r n"], weights: Float[Tensor, " n"],
              max_iter: int = 1000, *, row_node: Int[Tensor, " r"] | None = None,
              ) -> Float[Tensor, " n"]:
    """``w·(Â + Â² + …)`` (the graph is acyclic, so the series ends).

    ``row_node``: when ``norm_adj`` holds only some nodes' rows (a graph computed row block
    by row block), the node each row is; the nodes without a row add nothing yet.
    """
    def step(v: Tensor) -> Tensor:
        return v @ norm_adj if row_node is None else v[row_node] @ norm_adj

    current = step(weights)
    total = current.clone()
    for _ in range(max_iter):
        current = step(current)
        if not bool(current.any()):
            return total
        total += current
    raise RuntimeError(f"influence did not converge in {max_iter} steps (a cycle?)")


def target_weights(nodes: Nodes) -> Float[Tensor, " n"]:
    """The targets' weights as a vector over all nodes."""
    w = torch.zeros(nodes.total)
    w[nodes.target_start:] = nodes.target_weights
    return w


def _threshold(scores: Tensor, keep: float) -> Tensor:
    """The score at which the cumulative share of the (non-negative) scores reaches
    ``keep``. Zeros add nothing to the share and are left out of the sort (an edge matrix
    is mostly zeros, and a sort of all ``n²`` keeps int64 indices beside the values)."""
    flat = scores.flatten()
    nonzero = flat[flat != 0]
    if nonzero.numel() == 0:
        return torch.zeros((), dtype=scores.dtype)
    ordered = torch.sort(nonzero, descending=True).values
    cum = torch.cumsum(ordered, 0) / ordered.sum().clamp(min=1e-30)
    i = int(torch.searchsorted(cum, torch.tensor(keep)))
    if i >= ordered.numel():  # the share never reaches keep (rounding): keep everything
        return ordered[-1] if nonzero.numel() == flat.numel() else torch.zeros(
            (), dtype=scores.dtype)
    return ordered[i]


@dataclass
class Pruned:
    """Which nodes and edges a threshold keeps, and every node's influence."""

    node_mask: Bool[Tensor, " n"]
    edge_mask: Bool[Tensor, "n n"]
    node_influence: Float[Tensor, " n"]
    cumulative: Float[Tensor, " n"]   # each node's place in the cumulative influence
    #: Per target row t of the node-pruned graph, ``(influence_t + w_t) / Σ_s |A[t, s]|``:
    #: an edge's influence (circuit-tracer's edge score) is ``|A[t, s]| · edge_factor[t]``
    #: (:meth:`edge_influence`), kept as a vector, not an ``[n, n]`` matrix.
    edge_factor: Float[Tensor, " n"] | None = None

    def edge_influence(self, adj: Float[Tensor, "n n"], rows: Tensor, cols: Tensor
                       ) -> Float[Tensor, " e"]:
        """The influence on the targets of the edges ``(rows[i], cols[i])`` (targets,
        sources): the edge's share of its target's input (row-normalised absolute weight) times
        the target's own influence plus its weight, as pruning scores edges."""
        if self.edge_factor is None:
            raise ValueError("this pruning result carries no edge factor")
        return adj[rows, cols].abs() * self.edge_factor[rows]


def prune(adj: Float[Tensor, "n n"], nodes: Nodes, node_threshold: float = 0.8,
          edge_threshold: float = 0.98) -> Pruned:
    """Nodes then edges by cumulative influence (module doc)."""
    w = target_weights(nodes)
    node_inf = influence(normalize(adj), w)
    keep = node_inf >= _threshold(node_inf, node_threshold)
    keep[nodes.embed_start:nodes.target_start] = True
    keep[nodes.target_start:] = True
    keep[nodes.bias_start:nodes.embed_start] &= node_inf[nodes.bias_start:nodes.embed_start] > 0
    pruned = adj.clone()
    pruned[~keep] = 0
    pruned[:, ~keep] = 0
    nonzero = pruned != 0
    row_abs = torch.linalg.vector_norm(pruned, ord=1, dim=1).clamp(min=1e-10)  # no copy
    norm = normalize(pruned)
    del pruned
    row_out = influence(norm, w) + w
    edge_scores = norm.mul_(row_out[:, None])  # in place: norm is done
    edges = edge_scores >= _threshold(edge_scores, edge_threshold)
    del edge_scores, norm
    edges &= nonzero
    del nonzero
    sources = nodes.embed_start  # features, errors, biases need an outgoing edge
    before = None
    while before is None or not torch.equal(before, keep):
        before = keep.clone()
        edges[~keep] = False
        edges[:, ~keep] = False
        keep[:sources] &= edges[:, :sources].any(0)
        keep[:nodes.n_features] &= edges[:nodes.n_features].any(1)
    order = torch.argsort(node_inf, descending=True)
    cum = torch.zeros_like(node_inf)
    cum[order] = torch.cumsum(node_inf[order], 0) / node_inf.sum().clamp(min=1e-30)
    return Pruned(keep, edges, node_inf, cum, row_out / row_abs)


def scores(adj: Float[Tensor, "n n"], nodes: Nodes) -> tuple[float, float]:
    """(replacement score, completeness score) of a graph (module doc)."""
    w = target_weights(nodes)
    norm = normalize(adj)
    inf = influence(norm, w)
    tokens = inf[nodes.embed_start:nodes.target_start].sum()
    errs = inf[nodes.error_start:nodes.bias_start].sum()
    replacement = float(tokens / (tokens + errs).clamp(min=1e-30))
    non_error = 1 - norm[:, nodes.error_start:nodes.bias_start].sum(-1)
    # nodes without inputs (tokens, errors, biases) are all "non-error input"
    out = inf + w
    completeness = float((non_error * out).sum() / out.sum())
    return replacement, completeness


def total_effects(adj: Float[Tensor, "n n"], nodes: Nodes) -> Float[Tensor, " n"]:
    """Each node's signed total effect on the target metric (module doc)."""
    f = nodes.n_features
    w = nodes.target_weights
    base = w @ adj[nodes.target_start:]
    a = nodes.activation.clamp(min=1e-30)
    effect = base.clone()
    for _ in range(nodes.n_layers + 2):
        new = base + (effect[:f] / a) @ adj[:f]
        if torch.allclose(new, effect, rtol=0, atol=0):
            break
        effect = new
    return effect


__all__ = ["Pruned", "influence", "normalize", "prune", "scores", "target_weights",
           "total_effects"]
