"""Building an attribution graph: active features, direct-effect edges from batched
backward passes, on the frozen replacement model of one prompt (:mod:`.replacement`).

**Nodes**, in this order: every active transcoder feature at every (layer, position ≥ 1),
sorted by layer, position, feature (a cross-layer transcoder's feature sits at the layer it
reads, and writes to that layer's MLP output and every later one); an error node per
(layer, position) (the MLP output the features miss; all of it at layers without features
writing there and at position 0); a bias node per layer with a decoder bias (written at
every position ≥ 1); in a family whose
norms or attention have biases (GPT-2, GPT-NeoX, Qwen2), a constant node per layer (the
model's own biases there: what its attention block adds, what its MLP's norm adds to the
MLP input, and what a skip path makes of that) and one for the final norm's bias; a token-
embedding node per position; the target nodes (the top logits covering
``logit_probability`` of the next-token probability, each demeaned over the vocabulary as
circuit-tracer does, or one custom direction such as logit(answer) − logit(wrong)).

**Edges.** ``A[t, s]`` is the direct effect of source ``s`` on target ``t``: what ``s``
writes into the residual stream (``a_s·W_dec[s]``, the error vector, the bias, the model's
constant terms, the embedding) dotted with the gradient of ``t``'s input (a feature's pre-
activation minus its encoder bias; a target's value) through the frozen linear model, MLPs
cut (a feature's effect through another feature is a path of two edges). One backward sweep
computes the rows of a batch of targets at once: the batch dimension carries one target per
row, each seeded at its own layer and position (circuit-tracer's trick), and the sweep
starts at the batch's deepest target. The model being linear, the sweep needs no forward
pass: it applies the transposed maps (:func:`~saes.graphs.replacement.backward_sweep`; the
autograd reference, :func:`~saes.graphs.replacement.linear_forward`, is checked equal in
the tests).

Because the frozen model is linear and every constant it adds is a node, the edges into a
target sum to its value exactly, and the replacement model's target equals the real
model's (the tests check both on the real model).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

import torch
from jaxtyping import Float, Int
from torch import Tensor

from saes.graphs.influence import influence, normalize
from saes.graphs.replacement import Frozen, Stack, backward_sweep, constants, frozen_input
from saes.transcoders.mlp_replacement import MLPReplacement


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
    #: Layers with a constant node (``n_layers``: the final norm); empty for a family
    #: without biases.
    constant_layers: list[int] = field(default_factory=list)

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
    def constant_start(self) -> int:
        """Index of the first constant node."""
        return self.bias_start + len(self.bias_layers)

    @property
    def embed_start(self) -> int:
        """Index of the first embedding node."""
        return self.constant_start + len(self.constant_layers)

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
        """"feature", "error", "bias", "constant", "embedding" or "target"."""
        for name, end in (("feature", self.error_start), ("error", self.bias_start),
                          ("bias", self.constant_start), ("constant", self.embed_start),
                          ("embedding", self.target_start)):
            if i < end:
                return name
        return "target"


def active_features(
    fz: Frozen, rep: MLPReplacement,
) -> tuple[Tensor, Tensor, Tensor, Tensor, dict[int, Tensor]]:
    """Every active feature (layer, position ≥ 1, feature, activation), sorted, and each
    layer's error vectors ``[t, d]`` (all layers: the real MLP output where no feature
    writes, and at position 0)."""
    layers, poss, ids, vals = [], [], [], []
    errors: dict[int, Tensor] = {}
    feats: dict[int, Tensor] = {}
    outs = set(rep.out_layers)
    for i, out in enumerate(fz.mlp_out):
        with torch.no_grad():
            if i in rep.layers:
                f = rep.encode(i, frozen_input(fz, rep, i))
                f[0] = 0.0  # position 0: the whole MLP output is the error
                feats[i] = f
            if i not in outs:
                errors[i] = out.clone()
                continue
            pred = rep.output(i, feats, frozen_input(fz, rep, i))
        err = out - pred
        err[0] = out[0]
        errors[i] = err
    for i, f in feats.items():
        p, j = f.nonzero(as_tuple=True)
        layers.append(torch.full_like(p, i))
        poss.append(p)
        ids.append(j)
        vals.append(f[p, j])
    if not layers:
        empty = torch.zeros(0, dtype=torch.long)
        return empty, empty, empty, torch.zeros(0), errors
    return torch.cat(layers), torch.cat(poss), torch.cat(ids), torch.cat(vals), errors


def _row_computer(
    stack: Stack, fz: Frozen, rep: MLPReplacement, nodes: Nodes,
    errors: Mapping[int, Tensor],
) -> Callable[[list[tuple[int, int, Tensor]]], Tensor]:
    """A function computing the direct-effect rows ``[len(rows), nodes.total]`` of a batch
    of rows given as (layer read, position, seed vector), in one backward sweep."""
    n = nodes.total
    with torch.no_grad():
        b_dec = {i: b.detach().float() for i in nodes.bias_layers
                 if (b := rep.bias(i)) is not None}
        # what the sources write into each layer, grouped by source layer and position:
        # (position, node indices, write vectors)
        groups: dict[int, list[tuple[int, Tensor, Tensor]]] = {}
        for src in rep.layers:
            sel = (nodes.feature_layer == src).nonzero(as_tuple=True)[0]
            if not sel.numel():
                continue
            for tgt in rep.targets(src):
                dec = rep.decoder(src, tgt).detach().float()
                by_pos = groups.setdefault(tgt, [])
                for p in nodes.feature_pos[sel].unique().tolist():
                    idx = sel[nodes.feature_pos[sel] == p]
                    by_pos.append((int(p), idx, dec[nodes.feature_id[idx]]
                                   * nodes.activation[idx, None]))
    # the model's constant terms: written by attention, by a skip path, and read directly
    consts = constants(stack, fz, rep) if nodes.constant_layers else []
    read_bias = [blk.ln2.bias if blk.ln2 is not None and (i not in rep.layers
                                                           or rep.reads_normed(i)) else None
                 for i, blk in enumerate(stack.blocks)]
    read_bias.append(stack.final.bias)
    c0 = nodes.constant_start

    def compute(chunk: list[tuple[int, int, Tensor]]) -> Tensor:
        seeds: dict[int, list[tuple[int, int, Tensor]]] = {}
        for b, (layer, pos, seed) in enumerate(chunk):
            seeds.setdefault(layer, []).append((b, pos, seed))
        block = torch.zeros(len(chunk), n)

        def on_attention(i: int, g: Tensor) -> None:
            block[:, c0 + i] += (g * consts[i][0]).sum((1, 2))

        def on_write(i: int, g: Tensor) -> None:
            if consts:
                block[:, c0 + i] += (g * consts[i][1]).sum((1, 2))
            e0 = nodes.error_index(i, 0)
            block[:, e0:e0 + nodes.n_pos] = (g * errors[i]).sum(-1)
            if i in b_dec:
                block[:, nodes.bias_start + nodes.bias_layers.index(i)] = (
                    (g[:, 1:] @ b_dec[i]).sum(-1))
            for p, cols, vecs in groups.get(i, []):
                block[:, cols] += g[:, p] @ vecs.T

        with torch.no_grad():
            g_embed = backward_sweep(stack, fz, rep, seeds, len(chunk), on_write,
                                     top=max(r[0] for r in chunk),
                                     on_attention=on_attention if consts else None)
            block[:, nodes.embed_start:nodes.target_start] = (g_embed * fz.embed).sum(-1)
            if consts:
                for b, (layer, _, seed) in enumerate(chunk):
                    beta = read_bias[layer]
                    if beta is not None:
                        block[b, c0 + layer] += seed @ beta
        return block

    return compute


def _feature_row(nodes: Nodes, enc: Mapping[int, Tensor], r: int) -> tuple[int, int, Tensor]:
    layer = int(nodes.feature_layer[r])
    return layer, int(nodes.feature_pos[r]), enc[layer][:, int(nodes.feature_id[r])]


def adjacency(
    stack: Stack, fz: Frozen, rep: MLPReplacement, nodes: Nodes,
    errors: Mapping[int, Tensor], *, batch_size: int = 256,
    on_rows: Callable[[int], None] | None = None,
) -> Float[Tensor, "n n"]:
    """The direct-effect matrix ``A[target, source]`` over all nodes (rows of features and
    targets filled; error, bias and embedding nodes have no inputs)."""
    n = nodes.total
    adj = torch.zeros(n, n)
    compute = _row_computer(stack, fz, rep, nodes, errors)
    enc = {i: rep.encoder(i).detach().float() for i in rep.layers}
    # rows to compute: (layer read, position, seed vector) and their row index
    rows = [_feature_row(nodes, enc, r) for r in range(nodes.n_features)]
    index = list(range(nodes.n_features))
    last = nodes.n_pos - 1
    rows += [(stack.n_layers, last, nodes.target_vectors[k])
             for k in range(len(nodes.target_names))]
    index += [nodes.target_start + k for k in range(len(nodes.target_names))]
    for start in range(0, len(rows), batch_size):
        chunk = rows[start:start + batch_size]
        adj[torch.tensor(index[start:start + batch_size])] = compute(chunk)
        if on_rows is not None:
            on_rows(len(chunk))
    return adj


def partial_influence(rows: Float[Tensor, "r n"], row_node: Int[Tensor, " r"],
                      seed: Float[Tensor, " n"]) -> Float[Tensor, " n"]:
    """Influence on the targets (``seed``: their weights over all nodes) through the rows
    computed so far (``rows[r]`` is node ``row_node[r]``'s inputs): the
    :func:`~saes.graphs.influence.influence` series over those rows."""
    return influence(normalize(rows), seed, row_node=row_node)


def capped_adjacency(
    stack: Stack, fz: Frozen, rep: MLPReplacement, nodes: Nodes,
    errors: Mapping[int, Tensor], max_features: int, *, batch_size: int = 256,
    update_every: int = 4, on_rows: Callable[[int], None] | None = None,
) -> tuple[Float[Tensor, "m m"], Nodes, Int[Tensor, " k"]]:
    """The graph with at most ``max_features`` feature nodes, chosen by influence as they
    are computed (circuit-tracer's ``max_feature_nodes``): the targets' rows first, then,
    ``update_every`` batches at a time, the not yet computed features of highest influence
    through the rows computed so far.

    A feature left out is not dropped: what it writes joins its (layer, position)'s error
    node (the error columns gain its columns), so the edges into each node still sum to
    its value and the replacement model stays exact; the scores count it as error.
    Returns the adjacency over the reduced nodes, those nodes, and the kept features'
    indices among ``nodes``'s features.
    """
    f, n, k = nodes.n_features, nodes.total, len(nodes.target_names)
    compute = _row_computer(stack, fz, rep, nodes, errors)
    enc = {i: rep.encoder(i).detach().float() for i in rep.layers}
    rows_out = torch.zeros(k + max_features, n)
    row_node = torch.zeros(k + max_features, dtype=torch.long)
    last = nodes.n_pos - 1
    for s in range(0, k, batch_size):
        e = min(k, s + batch_size)
        rows_out[s:e] = compute([(stack.n_layers, last, nodes.target_vectors[j])
                                 for j in range(s, e)])
        row_node[s:e] = torch.arange(nodes.target_start + s, nodes.target_start + e)
    if on_rows is not None:
        on_rows(k)
    seed = torch.zeros(n)
    seed[nodes.target_start:] = nodes.target_weights
    visited = torch.zeros(f, dtype=torch.bool)
    done = k
    while done < k + max_features:
        inf = partial_influence(rows_out[:done], row_node[:done], seed)[:f]
        order = torch.argsort(inf, descending=True, stable=True)
        pending = order[~visited[order]][:min(update_every * batch_size,
                                              k + max_features - done)]
        for s in range(0, len(pending), batch_size):
            idx = pending[s:s + batch_size]
            rows_out[done:done + len(idx)] = compute(
                [_feature_row(nodes, enc, int(r)) for r in idx])
            row_node[done:done + len(idx)] = idx
            visited[idx] = True
            done += len(idx)
            if on_rows is not None:
                on_rows(len(idx))
    kept = visited.nonzero(as_tuple=True)[0]          # ascending: the node order holds
    left = (~visited).nonzero(as_tuple=True)[0]
    # the left-out features' columns join their error node's
    err_cols = rows_out[:, nodes.error_start:]
    if left.numel():
        dest = (nodes.feature_layer[left] * nodes.n_pos + nodes.feature_pos[left])
        err_cols = err_cols.clone()
        err_cols[:, :nodes.n_layers * nodes.n_pos].index_add_(1, dest, rows_out[:, left])
    reduced = replace(nodes, feature_layer=nodes.feature_layer[kept],
                      feature_pos=nodes.feature_pos[kept], feature_id=nodes.feature_id[kept],
                      activation=nodes.activation[kept])
    m = reduced.total
    adj = torch.zeros(m, m)
    # new row of each computed row: a kept feature's rank among the kept, a target's place
    new_index = torch.full((n,), -1, dtype=torch.long)
    new_index[kept] = torch.arange(len(kept))
    new_index[f:] = torch.arange(len(kept), m)
    dest_rows = new_index[row_node[:done]]
    adj[dest_rows, :len(kept)] = rows_out[:done, kept]
    adj[dest_rows, len(kept):] = err_cols[:done]
    return adj, reduced, kept


__all__ = ["Nodes", "active_features", "adjacency", "capped_adjacency", "partial_influence"]
