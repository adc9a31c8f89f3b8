"""Control graphs: the baseline of a graph's replacement and completeness scores.

Exactness says nothing about the transcoders (the error nodes hold whatever they miss), and
the scores alone have no chance level: how much of the influence error nodes carry depends
on the model and the prompt as much as on the transcoders (random transcoders on a tiny
random Llama score 0.5–0.6). A **control graph** is built on the same transcoders with their
decoder rows shuffled across features (one seeded permutation per layer; a cross-layer
transcoder's features keep their set of decoder vectors together): the same active
features with the same activations (the encoders are untouched), decoder rows of the same
norms, the same bias and skip path, but each feature writes another feature's direction. A
transcoder that learned what its MLP does scores well above its shuffled self; random
transcoders score like theirs. The graph's verdict compares its scores with the controls'
(:func:`saes.graphs.results.beats_controls`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch

from saes.graphs.attribution import Nodes, active_features, adjacency, capped_adjacency
from saes.graphs.influence import scores
from saes.graphs.replacement import Frozen, Stack
from saes.transcoders.mlp_replacement import MLPReplacement


def shuffled_decoders(rep: MLPReplacement, generator: torch.Generator) -> MLPReplacement:
    """A copy of ``rep`` with each layer's decoder rows permuted across its features
    (encoders, biases, thresholds and skip paths kept;
    :meth:`~saes.transcoders.mlp_replacement.MLPReplacement.shuffled`)."""
    return rep.shuffled(generator)


def control_scores(stack: Stack, fz: Frozen, rep: MLPReplacement,
                   template: Nodes, n: int, seed: int, *, max_features: int | None = None,
                   batch_size: int = 256) -> dict[str, Any]:
    """The replacement and completeness scores of ``n`` control graphs (module doc) built
    like the graph (``template``: its nodes before any cap; ``max_features``: the same cap).
    Each control's matrices are freed before the next."""
    g = torch.Generator().manual_seed(seed + 7919)
    reps: list[float] = []
    comps: list[float] = []
    for _ in range(n):
        tcs = shuffled_decoders(rep, g)
        layer_t, pos_t, feat_t, act_t, errors = active_features(fz, tcs)
        nodes = replace(template, feature_layer=layer_t, feature_pos=pos_t,
                        feature_id=feat_t, activation=act_t)
        if max_features is None:
            adj = adjacency(stack, fz, tcs, nodes, errors, batch_size=batch_size)
        else:
            adj, nodes, _ = capped_adjacency(stack, fz, tcs, nodes, errors, max_features,
                                             batch_size=batch_size)
        r, c = scores(adj, nodes)
        del adj
        reps.append(r)
        comps.append(c)
    return {"kind": "decoder-shuffled", "replacement_scores": reps,
            "completeness_scores": comps}


__all__ = ["control_scores", "shuffled_decoders"]
