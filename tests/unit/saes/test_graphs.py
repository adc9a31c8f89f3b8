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
from tests.support.transcoders import random_transcoders

PROMPT = "The capital of France is Paris. The capital of Italy is"




@pytest.mark.parametrize("which", ["tiny_model", "tiny_gemma3"])
def test_replacement_is_exact_and_edges_sum_to_the_target(which, request):
    model = request.getfixturevalue(which)
    tcs = random_transcoders(model, [0, 2], skip=True)
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
    tcs = random_transcoders(model, [0, 1, 2])
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
    tcs = random_transcoders(model := tiny_model, [0, 1, 2])
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
    tcs = random_transcoders(model, [0, 1, 2])
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


def _toy_nodes(n_features: int, n_layers: int, n_pos: int, target_weights: list[float]):
    from saes.graphs.attribution import Nodes

    z = torch.zeros(n_features, dtype=torch.long)
    return Nodes(z, z + 1, torch.arange(n_features), torch.ones(n_features), n_layers, n_pos,
                 [], [f"t{k}" for k in range(len(target_weights))],
                 [k for k in range(len(target_weights))], torch.tensor(target_weights),
                 torch.zeros(len(target_weights), 4))


def test_pruning_keeps_the_influential_path_and_drops_orphans():
    """A toy graph: token 0 → feature 0 → target (strong), token 1 → feature 1 → target
    (weak), feature 2 feeds nothing (no influence), feature 3 has no input but feeds the
    target a little. Pruning at 0.8 keeps feature 0's path; feature 2 goes; every token and
    the target stay; influence is as computed by hand."""
    from saes.graphs.influence import influence, normalize, prune, scores

    nodes = _toy_nodes(4, 1, 2, [1.0])
    n = nodes.total
    adj = torch.zeros(n, n)
    f, tok, tgt = 0, nodes.embed_start, nodes.target_start
    adj[f + 0, tok + 0] = 4.0
    adj[f + 1, tok + 1] = 1.0
    adj[f + 2, tok + 1] = 1.0
    adj[tgt, f + 0] = 9.0
    adj[tgt, f + 1] = 0.5
    adj[tgt, f + 3] = 0.5
    adj[tgt, nodes.error_index(0, 1)] = 0.0
    pr = prune(adj, nodes, node_threshold=0.8, edge_threshold=0.98)
    inf = influence(normalize(adj), torch.eye(n)[tgt])
    assert float(inf[f + 0]) == pytest.approx(0.9)   # 9 / (9 + 0.5 + 0.5)
    assert float(inf[tok + 0]) == pytest.approx(0.9)
    assert float(inf[f + 2]) == 0.0
    assert pr.node_mask[f + 0] and not pr.node_mask[f + 2]
    assert pr.node_mask[tok:].all()               # tokens and targets always stay
    assert not pr.node_mask[f + 3]                # no incoming edge: a feature needs one
    assert pr.edge_mask[tgt, f + 0] and pr.edge_mask[f + 0, tok + 0]
    rep, comp = scores(adj, nodes)
    assert rep == pytest.approx(1.0) and comp == pytest.approx(1.0)  # no error node in use
    adj[tgt, nodes.error_index(0, 1)] = 10.0      # now half the target's input is error
    rep, comp = scores(adj, nodes)
    # by hand: the target's row normalised is f0 .45, f1 .025, f3 .025, error .5; the
    # tokens behind f0 and f1 get .45 + .025; nodes without inputs count as non-error
    assert rep == pytest.approx(0.475 / 0.975, rel=1e-5)
    assert comp == pytest.approx((0.5 + 1.475) / 2.475, rel=1e-5)


def _threshold_over_all(scores: torch.Tensor, keep: float) -> torch.Tensor:
    """The reference: the cumulative share over every score, zeros included, sorted."""
    ordered = torch.sort(scores.flatten(), descending=True).values
    cum = torch.cumsum(ordered, 0) / ordered.sum().clamp(min=1e-30)
    i = min(int(torch.searchsorted(cum, torch.tensor(keep))), ordered.numel() - 1)
    return ordered[i]


@pytest.mark.parametrize("keep", [0.0, 0.5, 0.8, 0.98, 1.0])
def test_threshold_without_the_zeros_is_the_threshold_over_all(keep):
    """Leaving the zeros out of the sort (memory) picks the same cut: on sparse
    non-negative matrices with small integer values (sums exact in float32), at every
    share including 1, and on an all-zero matrix."""
    from saes.graphs.influence import _threshold

    g = torch.Generator().manual_seed(0)
    for density in (0.0, 0.01, 0.3, 1.0):
        m = torch.randint(1, 50, (200, 200), generator=g).float()
        m *= torch.rand(200, 200, generator=g) < density
        want = _threshold_over_all(m, keep)
        got = _threshold(m, keep)
        assert float(got) == float(want), (density, keep)
        assert torch.equal(m >= got, m >= want)


def test_features_that_write_nothing_get_no_influence(tiny_model):
    """On the tiny model: transcoders whose decoders are zero leave every MLP output to the
    errors; their features have inputs but no influence, pruning keeps none, and the
    edges still sum to the target."""
    tcs = random_transcoders(tiny_model, [0, 1, 2])
    for tc in tcs.by_layer.values():
        with torch.no_grad():
            tc.W_dec.zero_()
            tc.b_dec.zero_()
    g = run_attribution(tiny_model, tcs, PROMPT, AttributionConfig(check_features=0),
                        progress=False)
    assert g.n_active_features > 0
    assert not [n for n in g.nodes if n["kind"] == "feature"]
    assert g.target_edge_sum == pytest.approx(g.target_real, abs=1e-4)


@pytest.mark.parametrize("which", ["tiny_model", "tiny_gemma3"])
def test_backward_sweep_equals_autograd_through_the_linear_model(which, request):
    """The attribution's backward sweep (transposed maps, no forward) gives autograd's
    gradients through the frozen linear model, skip paths included."""
    from saes.graphs.replacement import backward_sweep, linear_forward

    model = request.getfixturevalue(which)
    tcs = random_transcoders(model, [0, 1], skip=True)
    stack = Stack(model)
    fz = freeze(model, stack, torch.tensor(model.encode(PROMPT)))
    t, d = fz.embed.shape
    g = torch.Generator().manual_seed(0)
    rows = [(1, 5), (2, t - 1), (3, t - 1), (2, 3)]  # (layer read, position); 3 = final
    vecs = [torch.randn(d, generator=g) for _ in rows]
    embed, writes, reads, final = linear_forward(stack, fz, tcs.by_layer, len(rows), 3)
    obj = sum((final if layer == 3 else reads[layer])[b, p] @ v
              for b, ((layer, p), v) in enumerate(zip(rows, vecs, strict=True)))
    want = torch.autograd.grad(obj, [embed, *writes])
    seen: dict[int, torch.Tensor] = {}
    seeds: dict[int, list] = {}
    for b, ((layer, p), v) in enumerate(zip(rows, vecs, strict=True)):
        seeds.setdefault(layer, []).append((b, p, v))
    with torch.no_grad():
        got_embed = backward_sweep(stack, fz, tcs.by_layer, seeds, len(rows),
                                   lambda i, grad: seen.__setitem__(i, grad.clone()), top=3)
    scale = float(want[0].abs().max())
    torch.testing.assert_close(got_embed, want[0], rtol=1e-5, atol=1e-6 * scale)
    for i in range(3):
        torch.testing.assert_close(seen[i], want[1 + i], rtol=1e-5, atol=1e-6 * scale)


@pytest.mark.parametrize("which", ["tiny_model", "tiny_gemma3"])
def test_freezing_the_real_model_at_its_own_values_changes_nothing(which, request):
    """The real model with its attention patterns and norm scales replayed from the clean
    run gives the clean target; frozen, a removal's effect differs from the live one."""
    from saes.graphs.checks import frozen_values, real_metric

    model = request.getfixturevalue(which)
    tcs = random_transcoders(model, [0, 1])
    g = run_attribution(model, tcs, PROMPT, AttributionConfig(target=" Paris, Rome",
                                                              check_features=8),
                        progress=False)
    stack = Stack(model)
    fz = freeze(model, stack, torch.tensor(model.encode(PROMPT)))
    from saes.graphs.attribution import Nodes
    from saes.graphs.run import _targets

    lay, pos, feat, act, _ = active_features(fz, tcs.by_layer)
    cfg = AttributionConfig(target=" Paris, Rome")
    names, toks, weights, vecs, pair = _targets(model, stack, fz, cfg)
    nodes = Nodes(lay, pos, feat, act, stack.n_layers, fz.ids.numel(), tcs.layers, names,
                  toks, weights, vecs, pair)
    frozen = frozen_values(model, fz.ids)
    assert any(k.endswith("hook_pattern") for k in frozen)
    assert any(k.endswith("hook_scale") for k in frozen)
    replay = real_metric(model, fz, nodes, {}, 1, None, frozen=frozen)[0]
    assert replay == pytest.approx(g.target_real, abs=1e-4)
    assert all(abs(c.real_frozen) < 1e3 for c in g.checks)
    assert any(abs(c.real_frozen - c.real) > 1e-6 for c in g.checks)
    assert "spearman_real_frozen" in g.agreement


def _nodes_and_parts(model, tcs):
    from saes.graphs.attribution import Nodes

    stack = Stack(model)
    fz = freeze(model, stack, torch.tensor(model.encode(PROMPT)))
    lay, pos, feat, act, errors = active_features(fz, tcs.by_layer)
    vec = (stack.w_u[5] - stack.w_u[7])[None]
    nodes = Nodes(lay, pos, feat, act, stack.n_layers, fz.embed.shape[0], sorted(tcs.by_layer),
                  ["t"], [None], torch.ones(1), vec)
    return stack, fz, nodes, errors


@pytest.mark.parametrize("which", ["tiny_model", "tiny_gemma3"])
def test_capped_graph_folds_the_left_out_features_into_error_nodes(which, request):
    """With ``max_feature_nodes`` below the active features, the graph's rows are the full
    graph's rows of the kept features and targets, the kept features' columns unchanged,
    and each error column the full error column plus the columns of the features left out
    at that (layer, position): the edges still sum to every node's value."""
    from saes.graphs.attribution import adjacency, capped_adjacency

    model = request.getfixturevalue(which)
    tcs = random_transcoders(model, [0, 1, 2], skip=True)
    stack, fz, nodes, errors = _nodes_and_parts(model, tcs)
    f = nodes.n_features
    cap = f // 3
    a = adjacency(stack, fz, tcs.by_layer, nodes, errors)
    b, reduced, kept = capped_adjacency(stack, fz, tcs.by_layer, nodes, errors, cap,
                                        batch_size=7)
    assert reduced.n_features == cap == len(kept)
    assert torch.equal(reduced.feature_id, nodes.feature_id[kept])
    n_other = nodes.total - f
    assert b.shape == (cap + n_other, cap + n_other)
    left = torch.ones(f, dtype=torch.bool)
    left[kept] = False
    lf = left.nonzero(as_tuple=True)[0]
    dest = nodes.feature_layer[lf] * nodes.n_pos + nodes.feature_pos[lf]
    rows_full = torch.cat([kept, torch.arange(f, nodes.total)])
    want = torch.cat([a[rows_full][:, kept], a[rows_full][:, f:]], dim=1)
    want[:, cap:].index_add_(1, dest, a[rows_full][:, lf])
    assert torch.allclose(b, want, atol=1e-5)
    # so every row still sums to its node's value
    assert torch.allclose(b.sum(1), a[rows_full].sum(1), atol=1e-4)

    # through run_attribution: exact, and the count of feature nodes reported
    full = run_attribution(model, tcs, PROMPT, AttributionConfig(check_features=0),
                           progress=False)
    capped = run_attribution(model, tcs, PROMPT, AttributionConfig(
        check_features=5, max_feature_nodes=cap), progress=False)
    assert full.n_feature_nodes is None and capped.n_feature_nodes == cap
    assert capped.n_active_features == full.n_active_features == f
    assert "as nodes" in capped.features_text()
    assert capped.target_replacement == pytest.approx(capped.target_real, abs=1e-4)
    assert capped.target_edge_sum == pytest.approx(capped.target_real, abs=1e-4)
    assert len(capped.checks) == 5
    # faithfulness removes every active feature outside the pruned graph, left-out ones too
    assert capped.faithfulness["features_active"] == f
    assert capped.faithfulness["target_no_features"] == pytest.approx(
        run_attribution(model, tcs, PROMPT, AttributionConfig(check_features=5),
                        progress=False).faithfulness["target_no_features"], abs=1e-5)
    # left-out features count as error: the completeness score cannot rise
    assert capped.completeness_score <= full.completeness_score + 1e-6
    # a cap at or above the active features is the full graph
    same = run_attribution(model, tcs, PROMPT, AttributionConfig(
        check_features=0, max_feature_nodes=f), progress=False)
    assert same.n_feature_nodes is None and torch.equal(same.adjacency, full.adjacency)


def test_capped_graph_keeps_the_most_influential_features(tiny_model):
    """Kept in one round (cap ≤ the features ranked at once), the features are those of
    highest influence through the target rows alone: their direct effects, normalised."""
    from saes.graphs.attribution import adjacency, capped_adjacency, partial_influence
    from saes.graphs.influence import influence, normalize

    tcs = random_transcoders(tiny_model, [0, 1, 2])
    stack, fz, nodes, errors = _nodes_and_parts(tiny_model, tcs)
    full = adjacency(stack, fz, tcs.by_layer, nodes, errors)
    cap = 10
    _, reduced, kept = capped_adjacency(stack, fz, tcs.by_layer, nodes, errors, cap,
                                        batch_size=cap, update_every=1)
    assert reduced.n_features == cap
    direct = normalize(full[nodes.target_start:])[0, :nodes.n_features].abs()
    assert set(kept.tolist()) == set(torch.argsort(direct, descending=True,
                                                   stable=True)[:cap].tolist())
    # with every row computed, the partial influence is the full one
    w = torch.zeros(nodes.total)
    w[nodes.target_start:] = 1.0
    rows = torch.arange(nodes.total)
    assert torch.allclose(partial_influence(full, rows, w), influence(normalize(full), w),
                          atol=1e-6)


def test_a_graph_over_the_memory_refuses_before_the_backward_passes(tiny_model, monkeypatch):
    """The dense matrices grow with the square of the nodes: with too little memory the
    graph is refused in one line naming the remedy; a cap needs far less."""
    import interp.runs.memory as memory
    from interp.errors import InterpError
    from saes.graphs.run import GRAPH_MATRICES

    tcs = random_transcoders(tiny_model, [0, 1, 2])
    full = run_attribution(tiny_model, tcs, PROMPT, AttributionConfig(check_features=0),
                           progress=False)
    n = full.n_nodes
    half = GRAPH_MATRICES * 4 * n * n / 2
    monkeypatch.setattr(memory, "available_bytes", lambda device=None: half)
    with pytest.raises(InterpError, match=r"would need about .*--max-feature-nodes$"):
        run_attribution(tiny_model, tcs, PROMPT, AttributionConfig(check_features=0),
                        progress=False)
    capped = run_attribution(tiny_model, tcs, PROMPT, AttributionConfig(
        check_features=0, max_feature_nodes=8), progress=False)
    assert capped.n_feature_nodes == 8
    monkeypatch.setattr(memory, "available_bytes", lambda device=None: 1.0)
    with pytest.raises(InterpError, match="with 8 feature nodes would need .*lower "
                                          "--max-feature-nodes"):
        run_attribution(tiny_model, tcs, PROMPT, AttributionConfig(
            check_features=0, max_feature_nodes=8), progress=False)
