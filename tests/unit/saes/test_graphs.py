"""Attribution graphs on the tiny models: exactness, edges against finite differences,
pruning, interventions."""

from __future__ import annotations

import pytest
import torch

from saes.graphs import AttributionConfig, run_attribution
from saes.graphs.attribution import active_features
from saes.graphs.replacement import (
    Stack,
    attention_block,
    freeze,
    mlp_input,
    replacement_forward,
)
from saes.transcoders import TranscoderConfig
from saes.transcoders.files import TranscoderSet

PROMPT = "The capital of France is Paris. The capital of Italy is"


def _random_set(model, layers, arch="topk", skip=False, seed=0) -> TranscoderSet:
    torch.manual_seed(seed)
    d = model.d_model
    out = {}
    for layer in layers:
        cfg = TranscoderConfig(d_in=d, d_sae=96, hook_point=f"blocks.{layer}.mlp.hook_in",
                               output_hook=f"blocks.{layer}.hook_mlp_out", layer=layer,
                               architecture=arch, k=8 if arch == "topk" else None, skip=skip)
        tc = cfg.model_class()(cfg)
        with torch.no_grad():
            tc.W_enc.copy_(torch.randn(d, 96) / d ** 0.5)
            tc.W_dec.copy_(torch.randn(96, d) * 0.05)
            tc.b_dec.copy_(torch.randn(d) * 0.01)
            tc.b_enc.copy_(torch.randn(96) * 0.1)
            if skip:
                tc.W_skip.copy_(torch.randn(d, d) * 0.02)
        out[layer] = tc
    return TranscoderSet(out)


@pytest.mark.parametrize("which", ["tiny_model", "tiny_gemma3"])
def test_replacement_is_exact_and_edges_sum_to_the_target(which, request):
    model = request.getfixturevalue(which)
    tcs = _random_set(model, [0, 2], skip=True)
    g = run_attribution(model, tcs, PROMPT, AttributionConfig(check_features=5),
                        progress=False)
    assert g.n_active_features > 0
    assert g.target_replacement == pytest.approx(g.target_real, abs=1e-4)
    assert g.target_edge_sum == pytest.approx(g.target_real, abs=1e-4)
    # every feature row: edges into it sum to its pre-activation minus b_enc
    stack = Stack(model)
    ids = torch.tensor(model.encode(PROMPT))
    fz = freeze(model, stack, ids)
    lay, pos, feat, act, errors = active_features(fz, tcs.by_layer)
    adj = g.adjacency
    assert adj is not None
    for r in range(0, len(feat), max(1, len(feat) // 20)):
        tc = tcs[int(lay[r])]
        pre = fz.mlp_in[int(lay[r])][int(pos[r])] @ tc.W_enc[:, int(feat[r])]
        assert float(adj[r].sum()) == pytest.approx(float(pre.detach()), abs=1e-4)


def test_frozen_model_reproduces_the_real_residual_stream(tiny_gemma3):
    model = tiny_gemma3
    stack = Stack(model)
    ids = torch.tensor(model.encode(PROMPT))
    fz = freeze(model, stack, ids)
    with torch.no_grad():
        x = replacement_forward(stack, fz, {}, [])[0]
    want = fz.resid_final * fz.s_final * stack.final[0]
    assert torch.allclose(x, want, atol=1e-4)


def _pre_activation(stack, fz, tcs, layer, pos, feat, extra=None):
    """A layer-``layer`` feature's pre-activation (minus b_enc) in the frozen model run on
    the real values, with ``extra`` (layer → [t, d]) added to MLP outputs below it."""
    x = fz.embed[None].clone()
    for i in range(layer):
        x = x + attention_block(stack, fz, i, x)
        x = x + fz.mlp_out[i][None] + (extra.get(i, 0) if extra else 0)
    x = x + attention_block(stack, fz, layer, x)
    return mlp_input(stack, fz, layer, x)[0, pos] @ tcs[layer].W_enc[:, feat]


def test_edges_match_finite_differences(tiny_model):
    """An edge is the change of the target's pre-activation when the source's activation
    changes, everything else (patterns, norm scales, other features) held."""
    model = tiny_model
    tcs = _random_set(model, [0, 1, 2])
    g = run_attribution(model, tcs, PROMPT, AttributionConfig(check_features=0),
                        progress=False)
    stack = Stack(model)
    fz = freeze(model, stack, torch.tensor(model.encode(PROMPT)))
    lay, pos, feat, act, _ = active_features(fz, tcs.by_layer)
    adj = g.adjacency
    assert adj is not None
    eps = 1e-2
    checked = 0
    for src in (lay == 0).nonzero(as_tuple=True)[0][:3].tolist():
        bump = torch.zeros_like(fz.embed)
        bump[int(pos[src])] = eps * act[src] * tcs[0].W_dec[int(feat[src])].detach()
        for r in (lay == 2).nonzero(as_tuple=True)[0][:5].tolist():
            with torch.no_grad():
                base = _pre_activation(stack, fz, tcs, 2, int(pos[r]), int(feat[r]))
                moved = _pre_activation(stack, fz, tcs, 2, int(pos[r]), int(feat[r]), {0: bump})
            assert float(moved - base) / eps == pytest.approx(float(adj[r, src]), abs=1e-3)
            checked += 1
    assert checked == 15


def test_custom_target_and_checks_run(tiny_model):
    tcs = _random_set(model := tiny_model, [0, 1, 2])
    g = run_attribution(model, tcs, PROMPT, AttributionConfig(target=" Paris, Rome",
                                                              check_features=10),
                        progress=False)
    assert g.target.startswith("logit(")
    assert g.target_replacement == pytest.approx(g.target_real, abs=1e-4)
    assert len(g.checks) == 10
    # the replacement model's measured effects follow the graph closely (features that
    # stay active respond linearly); the real model's are what the check is for
    assert g.agreement["spearman_replacement"] > 0.5
    assert 0 <= g.faithfulness["features_kept"] <= g.n_active_features


def test_total_effects_are_the_replacement_models_derivative(tiny_model):
    """For a small change of one feature's activation, the frozen replacement model (features
    live, so every path through later features counts) moves by the graph's total effect:
    the path sum over the adjacency is the derivative the interventions are predicted from."""
    from saes.graphs.attribution import Nodes
    from saes.graphs.checks import _deltas, replacement_metric, writes
    from saes.graphs.influence import total_effects
    from saes.graphs.run import _targets

    model = tiny_model
    tcs = _random_set(model, [0, 1, 2])
    cfg = AttributionConfig(target=" Paris, Rome", check_features=0)
    g = run_attribution(model, tcs, PROMPT, cfg, progress=False)
    stack = Stack(model)
    fz = freeze(model, stack, torch.tensor(model.encode(PROMPT)))
    lay, pos, feat, act, errors = active_features(fz, tcs.by_layer)
    names, toks, weights, vecs, pair = _targets(model, stack, fz, cfg)
    nodes = Nodes(lay, pos, feat, act, stack.n_layers, fz.ids.numel(), tcs.layers, names, toks,
                  weights, vecs, pair)
    assert g.adjacency is not None
    effect = total_effects(g.adjacency, nodes)
    picked = (lay < 2).nonzero(as_tuple=True)[0][:12].tolist()  # with paths through later ones
    eps = 1e-3
    ws = writes(nodes, tcs.by_layer, picked)
    t, d = fz.embed.shape
    deltas = _deltas([[w] for w in ws], [-eps] * len(ws), t, d)
    err = [errors[i] for i in range(stack.n_layers)]
    moved = replacement_metric(stack, fz, nodes, tcs.by_layer, err, deltas)
    measured = (moved - g.target_replacement) / eps
    predicted = [-float(effect[i]) for i in picked]
    assert measured == pytest.approx(predicted, abs=2e-3, rel=2e-2)
    # and the direct part alone would not do: later features carry some of the effect
    direct = [-float(weights @ g.adjacency[nodes.target_start:, i]) for i in picked]
    assert max(abs(a - b) for a, b in zip(direct, predicted, strict=True)) > 1e-3
