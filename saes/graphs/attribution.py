"""Building an attribution graph: active features, direct-effect edges from batched
backward passes, on the frozen replacement model of one prompt (:mod:`.replacement`).

**Nodes**, in this order: every active transcoder feature at every (layer, position ≥ 1),
sorted by layer, position, feature; an error node per (layer, position) (the MLP output the
transcoder misses; all of it at layers without a transcoder and at position 0); a bias node
per transcoder layer (its decoder bias, written at every position ≥ 1); a token-embedding
node per position; the target nodes (the top logits covering ``logit_probability`` of the
next-token probability, each demeaned over the vocabulary as circuit-tracer does, or one
custom direction such as logit(answer) − logit(wrong)).

**Edges.** ``A[t, s]`` is the direct effect of source ``s`` on target ``t``: what ``s``
writes into the residual stream (``a_s·W_dec[s]``, the error vector, the bias, the
embedding) dotted with the gradient of ``t``'s input (a feature's pre-activation minus its
encoder bias; a target's value) through the frozen linear model, MLPs cut (a feature's
effect through another feature is a path of two edges). One backward sweep computes the
rows of a batch of targets at once: the batch dimension carries one target per row, each
seeded at its own layer and position (circuit-tracer's trick), and the sweep starts at the
batch's deepest target. The model being linear, the sweep needs no forward pass: it applies
the transposed maps (:func:`~saes.graphs.replacement.backward_sweep`; the autograd
reference, :func:`~saes.graphs.replacement.linear_forward`, is checked equal in the tests).

Because the frozen model is linear and every constant it adds is a node, the edges into a
target sum to its value exactly, and the replacement model's target equals the real
model's (the tests check both on the real model).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch
from jaxtyping import Float, Int
from torch import Tensor

from saes.graphs.replacement import Frozen, Stack, backward_sweep
from saes.sae import SparseAutoencoder


@dataclass
class Nodes:
    """The graph's nodes (see the module doc for the order)."""

    feature_layer: Int[Tensor, " f"]
    feature_pos: Int[Tensor, " f"]
    feature_id: Int[Tensor, " f"]
    activation: Float[Tensor, " f"]
    n_layers: int
    n_pos: int
    bias_layers: list[int]
    target_names: list[str]
    target_tokens: list[int | None]
    target_weights: Float[Tensor, " k"]     # probability (top logits) or 1 (custom target)
    target_vectors: Float[Tensor, "k d"]    # read off the final normed residual
    target_pair: tuple[int, int] | None = None  # (answer, wrong) of a custom target

    @property
    def n_features(self) -> int:
        """Active feature nodes."""
        return int(self.feature_id.numel())

    @property
    def error_start(self) -> int:
        """Index of the first error node."""
        return self.n_features

    @property
    def bias_start(self) -> int:
        """Index of the first bias node."""
        return self.error_start + self.n_layers * self.n_pos

    @property
    def embed_start(self) -> int:
        """Index of the first embedding node."""
        return self.bias_start + len(self.bias_layers)

    @property
    def target_start(self) -> int:
        """Index of the first target node."""
        return self.embed_start + self.n_pos

    @property
    def total(self) -> int:
        """Every node."""
        return self.target_start + len(self.target_names)

    def error_index(self, layer: int, pos: int) -> int:
        """The error node of (layer, position)."""
        return self.error_start + layer * self.n_pos + pos

    def kind(self, i: int) -> str:
        """"feature", "error", "bias", "embedding" or "target"."""
        for name, end in (("feature", self.error_start), ("error", self.bias_start),
                          ("bias", self.embed_start), ("embedding", self.target_start)):
            if i < end:
                return name
        return "target"


def active_features(
    fz: Frozen, transcoders: Mapping[int, SparseAutoencoder],
) -> tuple[Tensor, Tensor, Tensor, Tensor, dict[int, Tensor]]:
    """Every active feature (layer, position ≥ 1, feature, activation), sorted, and each
    layer's error vectors ``[t, d]`` (all layers: the real MLP output where there is no
    transcoder, and at position 0)."""
    layers, poss, ids, vals = [], [], [], []
    errors: dict[int, Tensor] = {}
    for i, out in enumerate(fz.mlp_out):
        tc = transcoders.get(i)
        if tc is None:
            errors[i] = out.clone()
            continue
        with torch.no_grad():
            f = tc.encode(fz.mlp_in[i])
            f[0] = 0.0  # position 0: the whole MLP output is the error
            pred = tc.decode(f) + tc.skip(fz.mlp_in[i])  # type: ignore[operator]
        err = out - pred
        err[0] = out[0]
        errors[i] = err
        p, j = f.nonzero(as_tuple=True)
        layers.append(torch.full_like(p, i))
        poss.append(p)
        ids.append(j)
        vals.append(f[p, j])
    if not layers:
        empty = torch.zeros(0, dtype=torch.long)
        return empty, empty, empty, torch.zeros(0), errors
    return torch.cat(layers), torch.cat(poss), torch.cat(ids), torch.cat(vals), errors


def adjacency(
    stack: Stack, fz: Frozen, transcoders: Mapping[int, SparseAutoencoder], nodes: Nodes,
    errors: Mapping[int, Tensor], *, batch_size: int = 256,
    on_rows: Callable[[int], None] | None = None,
) -> Float[Tensor, "n n"]:
    """The direct-effect matrix ``A[target, source]`` over all nodes (rows of features and
    targets filled; error, bias and embedding nodes have no inputs)."""
    n = nodes.total
    adj = torch.zeros(n, n)
    # rows to compute: (layer read, position, seed vector, row index)
    enc = {i: tc.W_enc.detach().float() for i, tc in transcoders.items()}
    dec = {i: tc.W_dec.detach().float() for i, tc in transcoders.items()}
    b_dec = {i: tc.b_dec.detach().float() for i, tc in transcoders.items()}
    order = torch.argsort(nodes.feature_layer, stable=True)  # already sorted; kept explicit
    rows: list[tuple[int, int, Tensor, int]] = [
        (int(nodes.feature_layer[r]), int(nodes.feature_pos[r]),
         enc[int(nodes.feature_layer[r])][:, int(nodes.feature_id[r])], int(r))
        for r in order.tolist()]
    last = nodes.n_pos - 1
    rows += [(stack.n_layers, last, nodes.target_vectors[k], nodes.target_start + k)
             for k in range(len(nodes.target_names))]
    # sources of each layer, grouped by position: (position, node indices, write vectors)
    groups: dict[int, list[tuple[int, Tensor, Tensor]]] = {}
    for i in transcoders:
        sel = (nodes.feature_layer == i).nonzero(as_tuple=True)[0]
        by_pos = []
        for p in nodes.feature_pos[sel].unique().tolist():
            idx = sel[nodes.feature_pos[sel] == p]
            vecs = dec[i][nodes.feature_id[idx]] * nodes.activation[idx, None]
            by_pos.append((int(p), idx, vecs))
        groups[i] = by_pos
    for start in range(0, len(rows), batch_size):
        chunk = rows[start:start + batch_size]
        seeds: dict[int, list[tuple[int, int, Tensor]]] = {}
        for b, (layer, pos, seed, _) in enumerate(chunk):
            seeds.setdefault(layer, []).append((b, pos, seed))
        block = torch.zeros(len(chunk), n)

        def on_write(i: int, g: Tensor, block: Tensor = block) -> None:
            e0 = nodes.error_index(i, 0)
            block[:, e0:e0 + nodes.n_pos] = (g * errors[i]).sum(-1)
            if i in transcoders:
                block[:, nodes.bias_start + nodes.bias_layers.index(i)] = (
                    (g[:, 1:] @ b_dec[i]).sum(-1))
                for p, cols, vecs in groups[i]:
                    block[:, cols] = g[:, p] @ vecs.T

        with torch.no_grad():
            g_embed = backward_sweep(stack, fz, transcoders, seeds, len(chunk), on_write,
                                     top=max(r[0] for r in chunk))
            block[:, nodes.embed_start:nodes.target_start] = (g_embed * fz.embed).sum(-1)
            adj[torch.tensor([r[3] for r in chunk])] = block
        if on_rows is not None:
            on_rows(len(chunk))
    return adj


__all__ = ["Nodes", "active_features", "adjacency"]
