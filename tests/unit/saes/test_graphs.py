"""Attribution graphs on the tiny models: exactness, edges against finite differences,
pruning, interventions."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from interp.models.anatomy import FAMILIES
from saes.graphs import AttributionConfig, run_attribution
from saes.graphs.attribution import active_features
from saes.graphs.replacement import (
    Stack,
    attention_step,
    freeze,
    replacement_forward,
)
from tests.support.bad_inputs import Case, M, _folder, _tiny_clt, _tiny_transcoders
from tests.support.transcoders import random_transcoders

PROMPT = "The capital of France is Paris. The capital of Italy is"

#: Every registered family, on its tiny checkpoint; Llama and Gemma-3 by the tiny models of
#: the other tests.
WHICH = ["tiny_model", "tiny_gemma3",
         *(n for n in sorted(FAMILIES) if n not in ("llama", "gemma3_text"))]
#: The families with constant terms (biases in norms or attention; GPT-NeoX also parallel).
BIASED = ["gpt2", "gpt_neox", "qwen2"]


def _model(which, request):  # noqa: ANN001, ANN202
    return (request.getfixturevalue("tiny_family")(which)[1] if which in FAMILIES
            else request.getfixturevalue(which))




@pytest.mark.parametrize("which", WHICH)
def test_replacement_is_exact_and_edges_sum_to_the_target(which, request):
    model = _model(which, request)
    tcs = random_transcoders(model, [0, 2], skip=True)
    g = run_attribution(model, tcs, PROMPT, AttributionConfig(check_features=5, control_graphs=0),
                        progress=False)
    assert g.n_active_features > 0
    assert g.target_replacement == pytest.approx(g.target_real, abs=1e-4)
    assert g.target_edge_sum == pytest.approx(g.target_real, abs=1e-4)
    # every feature row: edges into it sum to its pre-activation minus b_enc
    stack = Stack(model)
    ids = torch.tensor(model.encode(PROMPT))
    fz = freeze(model, stack, ids)
    lay, pos, feat, act, errors = active_features(fz, tcs)
    adj = g.adjacency
    assert adj is not None
    for r in range(0, len(feat), max(1, len(feat) // 20)):
        tc = tcs[int(lay[r])]
        pre = fz.mlp_in[int(lay[r])][int(pos[r])] @ tc.W_enc[:, int(feat[r])]
        assert float(adj[r].sum()) == pytest.approx(float(pre.detach()), abs=1e-4)


@pytest.mark.parametrize("which", WHICH[1:])
def test_frozen_model_reproduces_the_real_residual_stream(which, request):
    model = _model(which, request)
    stack = Stack(model)
    ids = torch.tensor(model.encode(PROMPT))
    fz = freeze(model, stack, ids)
    with torch.no_grad():
        x = replacement_forward(stack, fz, None, [])[0]
    want = stack.final(fz.resid_final)  # the real final norm of the real residual
    assert torch.allclose(x, want, atol=1e-4)


def _pre_activation(stack, fz, tcs, layer, pos, feat, extra=None):
    """A layer-``layer`` feature's pre-activation (minus b_enc) in the frozen model run on
    the real values, with ``extra`` (layer → [t, d]) added to MLP outputs below it."""
    x = fz.embed[None].clone()
    for i in range(layer):
        x = attention_step(stack, fz, i, x)[0]
        x = x + fz.mlp_out[i][None] + (extra.get(i, 0) if extra else 0)
    return attention_step(stack, fz, layer, x)[1][0, pos] @ tcs[layer].W_enc[:, feat]


@pytest.mark.parametrize("family", BIASED)
def test_constant_nodes_carry_the_model_biases(family, tiny_family, monkeypatch):
    """In a family with biases, the model's constant terms are nodes, and the edges sum to
    the target only with them: with the constants dropped on purpose, the sum misses."""
    import saes.graphs.attribution as attribution

    model = tiny_family(family)[1]
    tcs = random_transcoders(model, [0, 2], skip=True)
    cfg = AttributionConfig(check_features=0, control_graphs=0)
    g = run_attribution(model, tcs, PROMPT, cfg, progress=False)
    consts = [n for n in g.nodes if n["kind"] == "constant"]  # the kept ones
    assert consts and {n["layer"] for n in consts} <= set(range(model.n_layers + 1))
    assert g.target_edge_sum == pytest.approx(g.target_real, abs=1e-4)

    original = attribution.constants
    monkeypatch.setattr(attribution, "constants",
                        lambda st, fz, t: [(torch.zeros_like(a), torch.zeros_like(s))
                                           for a, s in original(st, fz, t)])
    broken = run_attribution(model, tcs, PROMPT, cfg, progress=False)
    assert abs(broken.target_edge_sum - broken.target_real) > 1e-3  # 10× the tolerance


def test_a_family_without_biases_has_no_constant_nodes(tiny_model):
    model = tiny_model
    g = run_attribution(model, random_transcoders(model, [0]), PROMPT,
                        AttributionConfig(check_features=0, control_graphs=0), progress=False)
    assert not Stack(model).has_constants
    assert all(n["kind"] != "constant" for n in g.nodes)


@pytest.mark.parametrize("which", ["tiny_model", "gpt_neox"])
def test_edges_match_finite_differences(which, request):
    """An edge is the change of the target's pre-activation when the source's activation
    changes, everything else (patterns, norm scales, other features) held (GPT-NeoX:
    LayerNorms, biases, attention and the MLP in parallel)."""
    model = _model(which, request)
    tcs = random_transcoders(model, [0, 1, 2])
    g = run_attribution(model, tcs, PROMPT, AttributionConfig(check_features=0, control_graphs=0),
                        progress=False)
    stack = Stack(model)
    fz = freeze(model, stack, torch.tensor(model.encode(PROMPT)))
    lay, pos, feat, act, _ = active_features(fz, tcs)
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
    from saes.graphs.graph import _targets
    from saes.graphs.influence import total_effects

    model = tiny_model
    tcs = random_transcoders(model, [0, 1, 2])
    cfg = AttributionConfig(target=" Paris, Rome", check_features=0, control_graphs=0)
    g = run_attribution(model, tcs, PROMPT, cfg, progress=False)
    stack = Stack(model)
    fz = freeze(model, stack, torch.tensor(model.encode(PROMPT)))
    lay, pos, feat, act, errors = active_features(fz, tcs)
    names, toks, weights, vecs, pair = _targets(model, stack, fz, cfg)
    nodes = Nodes(lay, pos, feat, act, stack.n_layers, fz.ids.numel(), tcs.layers, names, toks,
                  weights, vecs, pair)
    assert g.adjacency is not None
    effect = total_effects(g.adjacency, nodes)
    picked = (lay < 2).nonzero(as_tuple=True)[0][:12].tolist()  # with paths through later ones
    eps = 1e-3
    ws = writes(nodes, tcs, picked)
    t, d = fz.embed.shape
    deltas = _deltas(ws, [-eps] * len(ws), t, d)
    err = [errors[i] for i in range(stack.n_layers)]
    moved = replacement_metric(stack, fz, nodes, tcs, err, deltas)
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
    g = run_attribution(tiny_model, tcs, PROMPT, AttributionConfig(
        check_features=0, control_graphs=0),
                        progress=False)
    assert g.n_active_features > 0
    assert not [n for n in g.nodes if n["kind"] == "feature"]
    assert g.target_edge_sum == pytest.approx(g.target_real, abs=1e-4)


@pytest.mark.parametrize("which", WHICH)
def test_backward_sweep_equals_autograd_through_the_linear_model(which, request):
    """The attribution's backward sweep (transposed maps, no forward) gives autograd's
    gradients through the frozen linear model, skip paths included."""
    model = _model(which, request)
    _sweep_equals_autograd(model, random_transcoders(model, [0, 1], skip=True),
                           lambda t: [(1, 5), (2, t - 1), (3, t - 1), (2, 3)])


def _sweep_equals_autograd(model, rep, rows_of) -> None:  # noqa: ANN001
    """The backward sweep's gradients of seeded rows (``rows_of(t)``: (layer read, position),
    3 = the final norm) equal autograd's through :func:`linear_forward`, with respect to
    the embeddings and to what each of the 3 layers' MLPs writes."""
    from saes.graphs.replacement import backward_sweep, linear_forward

    stack = Stack(model)
    fz = freeze(model, stack, torch.tensor(model.encode(PROMPT)))
    t, d = fz.embed.shape
    g = torch.Generator().manual_seed(0)
    rows = rows_of(t)
    vecs = [torch.randn(d, generator=g) for _ in rows]
    embed, writes, reads, final = linear_forward(stack, fz, rep, len(rows), 3)
    obj = sum((final if layer == 3 else reads[layer])[b, p] @ v
              for b, ((layer, p), v) in enumerate(zip(rows, vecs, strict=True)))
    want = torch.autograd.grad(obj, [embed, *writes])
    seen: dict[int, torch.Tensor] = {}
    seeds: dict[int, list] = {}
    for b, ((layer, p), v) in enumerate(zip(rows, vecs, strict=True)):
        seeds.setdefault(layer, []).append((b, p, v))
    with torch.no_grad():
        got_embed = backward_sweep(stack, fz, rep, seeds, len(rows),
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
    from saes.graphs.graph import _targets

    lay, pos, feat, act, _ = active_features(fz, tcs)
    cfg = AttributionConfig(target=" Paris, Rome", control_graphs=0)
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
    lay, pos, feat, act, errors = active_features(fz, tcs)
    vec = (stack.w_u[5] - stack.w_u[7])[None]
    nodes = Nodes(lay, pos, feat, act, stack.n_layers, fz.embed.shape[0], sorted(tcs),
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
    a = adjacency(stack, fz, tcs, nodes, errors)
    b, reduced, kept = capped_adjacency(stack, fz, tcs, nodes, errors, cap,
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
    full = run_attribution(model, tcs, PROMPT, AttributionConfig(
        check_features=0, control_graphs=0),
                           progress=False)
    capped = run_attribution(model, tcs, PROMPT, AttributionConfig(
        check_features=5, max_feature_nodes=cap, control_graphs=1), progress=False)
    assert full.n_feature_nodes is None and capped.n_feature_nodes == cap
    # its control is capped alike: left-out features count as error there too
    (ctl,) = capped.controls["replacement_scores"]
    assert 0 <= ctl <= 1 and capped.controls["elapsed_s"] > 0
    assert capped.n_active_features == full.n_active_features == f
    assert "as nodes" in capped.features_text()
    assert capped.target_replacement == pytest.approx(capped.target_real, abs=1e-4)
    assert capped.target_edge_sum == pytest.approx(capped.target_real, abs=1e-4)
    assert len(capped.checks) == 5
    # faithfulness removes every active feature outside the pruned graph, left-out ones too
    assert capped.faithfulness["features_active"] == f
    assert capped.faithfulness["target_no_features"] == pytest.approx(
        run_attribution(model, tcs, PROMPT, AttributionConfig(check_features=5, control_graphs=0),
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
    full = adjacency(stack, fz, tcs, nodes, errors)
    cap = 10
    _, reduced, kept = capped_adjacency(stack, fz, tcs, nodes, errors, cap,
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
    from saes.graphs.graph import GRAPH_MATRICES

    tcs = random_transcoders(tiny_model, [0, 1, 2])
    full = run_attribution(tiny_model, tcs, PROMPT, AttributionConfig(
        check_features=0, control_graphs=0),
                           progress=False)
    n = full.n_nodes
    half = GRAPH_MATRICES * 4 * n * n / 2
    monkeypatch.setattr(memory, "available_bytes", lambda device=None: half)
    with pytest.raises(InterpError, match=r"would need about .*--max-feature-nodes$"):
        run_attribution(tiny_model, tcs, PROMPT, AttributionConfig(
            check_features=0, control_graphs=0),
                        progress=False)
    capped = run_attribution(tiny_model, tcs, PROMPT, AttributionConfig(
        check_features=0, max_feature_nodes=8), progress=False)
    assert capped.n_feature_nodes == 8
    monkeypatch.setattr(memory, "available_bytes", lambda device=None: 1.0)
    with pytest.raises(InterpError, match="with 8 feature nodes would need .*lower "
                                          "--max-feature-nodes"):
        run_attribution(tiny_model, tcs, PROMPT, AttributionConfig(
            check_features=0, max_feature_nodes=8), progress=False)


# ------------------------------------------------------------- controls that can fail


@pytest.fixture(scope="module")
def relu_llama(tiny_model_dir, tmp_path_factory):
    """A tiny random Llama whose MLPs are plain ReLU MLPs (``up_proj`` zero with bias 1, so
    ``down(relu(gate(x)) ⊙ 1)``): a ReLU transcoder can reproduce each MLP exactly."""
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    import interp

    out = tmp_path_factory.mktemp("relu-llama")
    tok = AutoTokenizer.from_pretrained(str(tiny_model_dir))
    tok.save_pretrained(str(out))
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=len(tok), hidden_size=64, intermediate_size=64, num_hidden_layers=3,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, rope_theta=1e5,
        tie_word_embeddings=True, rms_norm_eps=1e-5, max_position_embeddings=256,
        bos_token_id=1, eos_token_id=2, pad_token_id=2, hidden_act="relu", mlp_bias=True)
    hf = LlamaForCausalLM(cfg)
    with torch.no_grad():
        for name, p in hf.named_parameters():
            if "norm" in name:
                p.copy_(1.0 + 0.3 * torch.randn_like(p))
        for layer in hf.model.layers:  # MLPs that matter: larger weights than the init's
            layer.mlp.up_proj.weight.zero_()
            layer.mlp.up_proj.bias.fill_(1.0)
            layer.mlp.gate_proj.weight.mul_(4.0)
            layer.mlp.down_proj.weight.mul_(4.0)
            layer.mlp.gate_proj.bias.copy_(torch.randn(64) * 0.1)
    hf.save_pretrained(str(out))
    return interp.load(str(out))


def exact_transcoders(model, layers):
    """ReLU transcoders equal to the ReLU MLPs of :func:`relu_llama`: ``W_enc = gateᵀ``,
    ``W_dec = downᵀ``; their error terms are zero (but at position 0)."""
    from saes.transcoders import TranscoderConfig
    from saes.transcoders.files import TranscoderSet

    hf = model.bridge.original_model
    out = {}
    for layer in layers:
        mlp = hf.model.layers[layer].mlp
        d, m = model.d_model, mlp.gate_proj.weight.shape[0]
        cfg = TranscoderConfig(d_in=d, d_sae=m, hook_point=f"blocks.{layer}.mlp.hook_in",
                               output_hook=f"blocks.{layer}.hook_mlp_out", layer=layer,
                               architecture="relu")
        tc = cfg.model_class()(cfg)
        with torch.no_grad():
            tc.W_enc.copy_(mlp.gate_proj.weight.T)
            tc.b_enc.copy_(mlp.gate_proj.bias)
            tc.W_dec.copy_(mlp.down_proj.weight.T)
            tc.b_dec.copy_(mlp.down_proj.bias)
        out[layer] = tc
    return TranscoderSet(out)


WORTH_CFG = AttributionConfig(target=" Paris, Rome", check_features=16, control_graphs=3,
                              random_subgraphs=5)


def test_exact_transcoders_are_informative_random_ones_worthless(relu_llama, tiny_model):
    """The verdict can fail: on a model whose MLPs a transcoder can reproduce exactly, the
    exact transcoders' graph beats its decoder-shuffled controls and agrees with the real
    model; random transcoders on the same model are said to be worthless, although their
    real-model agreement is beyond chance (removing any vector is predicted well: the
    agreement alone would pass them), because their scores are their shuffled controls'.
    On the gated tiny model they fail the agreement too. Both are exact (bookkeeping)."""
    good = run_attribution(relu_llama, exact_transcoders(relu_llama, [0, 1, 2]), PROMPT,
                           WORTH_CFG, progress=False)
    assert good.exact and good.replacement_score > 0.99
    assert len(good.controls["replacement_scores"]) == 3
    assert max(good.controls["replacement_scores"]) < 0.95
    w = good.worth()
    assert w.level == "informative", w.sentence
    assert "WORTHLESS" not in (good.headline().verdict or "")
    assert good.agreement["spearman_real_ci95"][0] > 0

    bad = run_attribution(relu_llama, random_transcoders(relu_llama, [0, 1, 2]), PROMPT,
                          WORTH_CFG, progress=False)
    assert bad.exact  # exactness is bookkeeping: random transcoders earn it too
    w = bad.worth()
    assert w.level == "worthless"
    assert any("decoders shuffled" in r for r in w.reasons)
    assert bad.agreement["spearman_real_ci95"][0] > 0  # the zero-null alone would pass
    assert bad.headline().verdict.startswith("This graph is WORTHLESS")
    assert bad.replacement_score < good.replacement_score - 0.3

    tiny = run_attribution(tiny_model, random_transcoders(tiny_model, [0, 1, 2]), PROMPT,
                           WORTH_CFG, progress=False)
    w = tiny.worth()
    assert w.level == "worthless"
    assert any("do not agree with the real model beyond chance" in r for r in w.reasons)


def test_decoder_shuffled_controls_keep_the_features_and_their_norms(tiny_model):
    """A control's transcoders read the same features with the same activations and write
    decoder rows of the same norms, permuted."""
    from saes.graphs.controls import shuffled_decoders

    tcs = random_transcoders(tiny_model, [0, 2], skip=True)
    ctl = shuffled_decoders(tcs, torch.Generator().manual_seed(0))
    x = torch.randn(5, tiny_model.d_model)
    for layer, tc in tcs.items():
        c = ctl[layer]
        assert torch.equal(c.encode(x), tc.encode(x))
        assert not torch.equal(c.W_dec, tc.W_dec)
        assert torch.equal(c.W_dec.norm(dim=1).sort().values, tc.W_dec.norm(dim=1).sort().values)
        assert torch.equal(c.W_skip, tc.W_skip) and torch.equal(c.b_dec, tc.b_dec)


def test_clt_decoder_shuffled_controls_keep_each_features_writes_together(tiny_model):
    """A CLT's control permutes whole features: each keeps its encoder, and its set of
    decoder vectors (one per later layer) moves together to another feature of its layer."""
    from saes.graphs.controls import shuffled_decoders
    from tests.support.transcoders import random_clt

    rep = random_clt(tiny_model, [0, 1, 2], skip=True)
    ctl = shuffled_decoders(rep, torch.Generator().manual_seed(0))
    x = torch.randn(5, tiny_model.d_model)
    for layer in rep.layers:
        assert torch.equal(ctl.encode(layer, x), rep.encode(layer, x))
        assert torch.equal(ctl.bias(layer), rep.bias(layer))
        i = rep.clt.index(layer)
        a, b = rep.clt.W_dec[i].detach(), ctl.clt.W_dec[i].detach()  # [m, L − i, d]
        assert not torch.equal(a, b)
        rows = {tuple(r.flatten().tolist()) for r in a}
        assert {tuple(r.flatten().tolist()) for r in b} == rows  # whole rows, permuted
    assert torch.equal(ctl.clt.W_skip, rep.clt.W_skip)


def test_sign_agreement_is_compared_with_its_permutation_null():
    """On imbalanced signs (90% positive), chance is p·q + (1 − p)(1 − q) ≈ 0.82, not 0.5:
    a predictor of independent 90%-positive signs sits at the null, a constant-sign
    predictor (90% agreement, 'above 0.5') sits exactly at it with p = 1, and the true signs
    beat it. One group's p-value is scipy's permutation test's."""
    from scipy.stats import permutation_test

    from saes.graphs.checks import agreement, sign_null

    rng = np.random.default_rng(0)
    n = 200
    measured = np.where(rng.random(n) < 0.9, 1.0, -1.0) * rng.uniform(0.1, 1, n)
    indep = np.where(rng.random(n) < 0.9, 1.0, -1.0)
    null = sign_null([(indep, measured)], 2000, seed=1)
    q = float((measured > 0).mean())
    p = float((indep > 0).mean())
    assert null["null"] == pytest.approx(p * q + (1 - p) * (1 - q), abs=0.01)
    assert 0.78 < null["null"] < 0.86
    assert null["p"] > 0.05 and null["null_interval"][0] <= null["sign"]

    constant = np.ones(n)
    c = sign_null([(constant, measured)], 500, seed=1)
    assert c["sign"] == pytest.approx(q) and c["null"] == pytest.approx(q)
    assert c["p"] == 1.0  # above 0.5, yet exactly chance

    truth = sign_null([(measured * 2, measured)], 2000, seed=1)
    assert truth["sign"] == 1.0 and truth["p"] < 0.01

    want = permutation_test((measured,), lambda m: float(np.mean(np.sign(m) == np.sign(indep))),
                            permutation_type="pairings", n_resamples=2000,
                            alternative="greater", rng=2)
    assert null["p"] == pytest.approx(want.pvalue, abs=0.03)
    # agreement() carries the null beside the bootstrap CI
    ag = agreement(indep, measured)
    assert ag["sign_null"] == pytest.approx(null["null"], abs=0.01) and ag["sign_p"] > 0.05


def test_pooled_sign_null_shuffles_within_prompts():
    """Over a task, each prompt keeps its own balance: two prompts whose predictions only
    follow each prompt's constant sign agree 100%, and that is exactly chance (a pooled
    shuffle would call it far above its 0.5)."""
    from saes.graphs.checks import sign_null
    from saes.graphs.tasks import _pooled_sign

    pos = [(1.0, m) for m in np.linspace(0.1, 1, 20)]
    neg = [(-1.0, -m) for m in np.linspace(0.1, 1, 20)]
    got = _pooled_sign([pos, neg], seed=0, n_resamples=500)
    assert got[""] == 1.0 and got["_null"] == 1.0 and got["_p"] == 1.0
    pooled = sign_null([(np.array([p for p, _ in pos + neg]),
                         np.array([m for _, m in pos + neg]))], 500, seed=0)
    assert pooled["null"] < 0.6 and pooled["p"] < 0.01  # what a pooled shuffle would say


def _additive_case(seed: int, f: int = 400):
    """Features whose real effects, kept together, add up: effect = influence × (1 + 0.3
    noise), influence lognormal, so the influence ranking is informative within every band
    of influence. Returns (influence sorted descending, effects, keep_only, generator)."""
    rng = np.random.default_rng(seed)
    influence = torch.tensor(np.sort(rng.lognormal(0, 1, f))[::-1].copy(), dtype=torch.float32)
    effect = influence.numpy() * (1 + 0.3 * rng.standard_normal(f))

    def keep_only(sets):
        return np.array([float(effect[m.numpy()].sum()) for m in sets])

    return influence, effect, keep_only, rng


def test_influence_matched_baseline_tells_the_ranking_from_the_band():
    """Over 20 constructed cases: the real ranking (the top k by influence) beats
    influence-matched random sets every time; a broken ranking (k features in random order
    from the top 2k: the right band, chosen blindly) beats the weak baseline of random
    active features every time too, but sits inside the matched baseline's 95% range (as
    a member of it should, about 95% of the time). The ceiling (top by measured effect) is
    at least the graph's; matched sets keep the count per band of 2k ranks."""
    from saes.graphs.checks import faithfulness, matched_sets

    f, k = 400, 20
    inside = 0
    for seed in range(20):
        influence, effect, keep_only, rng = _additive_case(seed, f)
        top = torch.zeros(f, dtype=torch.bool)
        top[:k] = True
        measured = {i: float(effect[i]) for i in range(k)}
        real = faithfulness(top, influence, measured, keep_only, 40, seed)
        assert real["faithfulness"] > real["matched_interval"][1]
        assert real["matched_p"] == pytest.approx(1 / 41)
        assert real["faithfulness"] > real["random_interval"][1]
        assert real["ceiling"] >= real["faithfulness"] - 1e-9

        band = torch.zeros(f, dtype=torch.bool)
        band[torch.tensor(rng.permutation(2 * k)[:k])] = True
        broken = faithfulness(band, influence, {}, keep_only, 40, seed)
        assert broken["faithfulness"] > broken["random_interval"][1]  # the weak one passes it
        lo, hi = broken["matched_interval"]
        inside += lo <= broken["faithfulness"] <= hi
    assert inside >= 17  # expected 19 of 20

    sets = matched_sets(influence, band, 3, torch.Generator().manual_seed(0))
    for m in sets:
        assert int(m.sum()) == k and int(m[:2 * k].sum()) == k
        assert not torch.equal(m, band)


def test_viewer_keeps_the_edges_of_most_influence():
    """A hand-built graph: token 1 → feature 2 has the largest raw |weight| (100, in
    pre-activation units) but feature 2 barely reaches the target (1e-4); token 0 →
    feature 0 → target carries the influence. With room for two edges, the kept ones are
    feature 0's, by influence; by |weight| the useless edge would be first."""
    from saes.graphs.graph import _edge_rows
    from saes.graphs.influence import prune

    nodes = _toy_nodes(3, 1, 2, [1.0])
    n = nodes.total
    adj = torch.zeros(n, n)
    f, tok, tgt = 0, nodes.embed_start, nodes.target_start
    adj[f + 0, tok + 0] = 4.0
    adj[tgt, f + 0] = 9.0
    adj[f + 2, tok + 1] = 100.0
    adj[tgt, f + 2] = 1e-4
    pr = prune(adj, nodes, node_threshold=1.0, edge_threshold=1.0)
    assert pr.node_mask[f + 2] and pr.edge_mask[f + 2, tok + 1]  # pruning kept it
    rows, n_kept = _edge_rows(adj, pr, limit=2)
    assert n_kept == 4
    kept = {(r["source"], r["target"]) for r in rows}
    assert kept == {(tok + 0, f + 0), (f + 0, tgt)}
    assert (tok + 1, f + 2) not in kept
    by_weight = max(((s, t) for t, s in zip(*pr.edge_mask.nonzero(as_tuple=True), strict=True)),
                    key=lambda e: abs(float(adj[e[1], e[0]])))
    assert by_weight == (tok + 1, f + 2)
    # the edge influence is the pruning's edge score: share of the row × the row's influence
    inf = pr.edge_influence(adj, torch.tensor([tgt, f + 2]), torch.tensor([f + 0, tok + 1]))
    assert float(inf[0]) == pytest.approx(9.0 / (9.0 + 1e-4), rel=1e-5)
    assert float(inf[1]) == pytest.approx(1e-4 / (9.0 + 1e-4), rel=1e-3)


def test_task_verdict_fires_on_chance_agreement_or_lost_controls():
    """The task check's verdict: worthless when the mean Spearman's interval over prompts
    includes 0, or when the graphs beat their controls in half the prompts or fewer;
    informative otherwise; the goal is met only with the sign agreement above its null."""
    from saes.graphs.tasks import task_verdict

    base = {"spearman_real": 0.85, "spearman_real_ci95": [0.8, 0.9], "with_controls": 20,
            "beats_controls": 18, "sign_real": 0.92, "sign_real_null": 0.6,
            "sign_real_p": 0.001}
    good = task_verdict(base)
    assert good.startswith("The task's graphs are informative") and "goal" in good
    assert "goal (Spearman ≥ 0.8, sign agreement ≥ 90%) met" in good
    chance = task_verdict({**base, "spearman_real": 0.1, "spearman_real_ci95": [-0.1, 0.3]})
    assert "WORTHLESS" in chance and "do not agree with the real model beyond chance" in chance
    lost = task_verdict({**base, "beats_controls": 10})
    assert "WORTHLESS" in lost and "in 10 of 20 prompts" in lost
    at_null = task_verdict({**base, "sign_real_null": 0.92, "sign_real_p": 1.0})
    assert "informative" in at_null and "not met" in at_null  # 92% signs, but chance


# ------------------------------------------------------------------ bad inputs
#: This tool's bad-input cases. tests/unit/interp/test_bad_inputs.py runs every unit-test
#: module's ``BAD_INPUTS`` as one matrix (tests/support/bad_inputs.py collects them).
BAD_INPUTS: list[Case] = [
    Case("graph-clt-deeper-than-the-model", lambda c: [
        "graph", "The capital of France is", "--transcoders", _tiny_clt(c, (0, 1, 7)), *M(c),
        "--out", c.out], "layers up to 7"),
    Case("graph-no-transcoders", lambda c: [
        "graph", "The capital of France is", "--transcoders", _folder(c, "no_tc"), *M(c),
        "--no-contexts", "--out", c.out], "no transcoders in"),
    Case("graph-layer-mismatch", lambda c: [
        "graph", "The capital of France is", "--transcoders", _tiny_transcoders(c, [0, 5]),
        *M(c), "--no-contexts", "--out", c.out], "has layers 0–2"),
    Case("graph-other-width", lambda c: [
        "graph", "The capital of France is", "--transcoders", _tiny_transcoders(c, [0], 32),
        *M(c), "--no-contexts", "--out", c.out], "reads activations of width d_in=32"),
    Case("graph-target-not-one-token", lambda c: [
        "graph", "The capital of France is", "--transcoders", _tiny_transcoders(c, [0, 1]),
        "--target", " Parisian capital, Rome", *M(c), "--no-contexts", "--out", c.out],
        "must be one token"),
    Case("graph-target-not-a-pair", lambda c: [
        "graph", "The capital of France is", "--transcoders", _tiny_transcoders(c, [0, 1]),
        "--target", " Paris", *M(c), "--no-contexts", "--out", c.out], "ANSWER,WRONG"),
    Case("graph-prompt-too-long", lambda c: [
        "graph", "word " * 200, "--transcoders", _tiny_transcoders(c, [0, 1]), *M(c),
        "--no-contexts", "--out", c.out], "over the limit of 64"),
    Case("graph-prompt-and-task", lambda c: [
        "graph", "hi there", "--task", "ioi", "--transcoders", _tiny_transcoders(c, [0]),
        *M(c), "--out", c.out], "not both"),
    Case("graph-missing-task", lambda c: [
        "graph", "--task", str(c.tmp / "nope.jsonl"), "--transcoders",
        _tiny_transcoders(c, [0]), *M(c), "--out", c.out], "nope.jsonl"),
    Case("graph-max-edges-zero", lambda c: [
        "graph", "The capital of France is", "--transcoders", _tiny_transcoders(c, [0, 1]),
        "--max-edges", "0", *M(c), "--no-contexts", "--out", c.out],
        "Invalid value for '--max-edges': 0 is not in the range x>=1"),
    Case("graph-max-feature-nodes-zero", lambda c: [
        "graph", "The capital of France is", "--transcoders", _tiny_transcoders(c, [0, 1]),
        "--max-feature-nodes", "0", *M(c), "--no-contexts", "--out", c.out],
        "Invalid value for '--max-feature-nodes': 0 is not in the range x>=1"),
    Case("graph-control-graphs-negative", lambda c: [
        "graph", "The capital of France is", "--transcoders", _tiny_transcoders(c, [0, 1]),
        "--control-graphs", "-1", *M(c), "--no-contexts", "--out", c.out],
        "Invalid value for '--control-graphs': -1 is not in the range x>=0"),
    Case("graph-task-limit-zero", lambda c: [
        "graph", "--task", "ioi", "--limit", "0", "--transcoders", _tiny_transcoders(c, [0, 1]),
        *M(c), "--out", c.out], "Invalid value for '--limit': 0 is not in the range x>=1"),
    Case("graph-neither-prompt-nor-task", lambda c: [
        "graph", "--transcoders", _tiny_transcoders(c, [0, 1]), *M(c), "--out", c.out],
        "give a PROMPT (or --task capitals|ioi|pronoun|FILE)"),
    Case("graph-task-with-save-adjacency", lambda c: [
        "graph", "--task", "ioi", "--save-adjacency", "--transcoders",
        _tiny_transcoders(c, [0, 1]), *M(c), "--out", c.out],
        "--save-adjacency is for one PROMPT's graph, not --task"),
    Case("graph-task-with-target", lambda c: [
        "graph", "--task", "ioi", "--target", " Mary, John", "--transcoders",
        _tiny_transcoders(c, [0, 1]), *M(c), "--out", c.out],
        "--target is for one PROMPT's graph, not --task"),
]


# ------------------------------------------------------------------ cross-layer transcoders
#: (family fixture, reads, skip): a CLT reading the MLP's normalised input or the residual
#: before the norm (circuit-tracer's default), with and without skip paths, on Llama, Gemma
#: (norms after attention and the MLP) and GPT-NeoX (LayerNorms, biases, parallel blocks).
CLT_CASES = [("tiny_model", "mlp_in", True), ("tiny_model", "resid_mid", False),
             ("tiny_gemma3", "resid_mid", True), ("gpt_neox", "mlp_in", True),
             ("gpt_neox", "resid_mid", True)]


def _clt_pre(stack, fz, rep, layer, pos, feat, add=None):  # noqa: ANN001, ANN202
    """Feature ``feat``'s pre-activation (less its bias) at (layer, pos) in the frozen
    replacement model with the features' outputs fixed at the clean run's and ``add``
    (skip paths respond to their input, from position 1 on)."""
    from saes.graphs.replacement import attention_read, feature_input, frozen_input

    x = fz.embed[None]
    for i in range(layer + 1):
        x, read = attention_read(stack, fz, i, x)
        x_in = feature_input(stack, fz, rep, i, read)
        if i == layer:
            return x_in[0, pos] @ rep.encoder(layer)[:, feat]
        m = rep.skip_matrix(i)
        skip = 0.0 if m is None else (x_in - frozen_input(fz, rep, i)) @ m
        if m is not None:
            skip[:, 0] = 0
        x = x + fz.mlp_out[i][None] + (add or {}).get(i, 0) + skip
    raise AssertionError


@pytest.mark.parametrize(("which", "reads", "skip"), CLT_CASES)
def test_clt_graphs_are_exact_and_match_finite_differences(which, reads, skip, request):
    """A cross-layer transcoder's graph: the replacement model reproduces the real target,
    the edges into the target and into every feature sum to their values, and an edge from
    a layer-0 feature (which writes to layers 0, 1 and 2) to a layer-2 feature is the
    finite-difference change of its pre-activation."""
    from tests.support.transcoders import random_clt

    model = _model(which, request)
    rep = random_clt(model, [0, 1, 2], skip=skip, reads=reads)
    g = run_attribution(model, rep, PROMPT, AttributionConfig(check_features=4,
                                                              control_graphs=1),
                        progress=False)
    assert g.n_active_features > 0
    assert g.target_replacement == pytest.approx(g.target_real, abs=1e-4)
    assert g.target_edge_sum == pytest.approx(g.target_real, abs=1e-4)
    assert g.transcoders["kind"] == "cross-layer"
    stack = Stack(model)
    fz = freeze(model, stack, torch.tensor(model.encode(PROMPT)))
    lay, pos, feat, act, _ = active_features(fz, rep)
    adj = g.adjacency
    assert adj is not None
    for r in range(0, len(feat), max(1, len(feat) // 15)):
        with torch.no_grad():
            pre = _clt_pre(stack, fz, rep, int(lay[r]), int(pos[r]), int(feat[r]))
        assert float(adj[r].sum()) == pytest.approx(float(pre), abs=1e-4)
    eps, checked = 1e-2, 0
    for src in (lay == 0).nonzero(as_tuple=True)[0][:3].tolist():
        add = {}
        for tgt in (0, 1):  # its writes into the layers before the target's
            bump = torch.zeros_like(fz.embed)
            bump[int(pos[src])] = eps * act[src] * rep.decoder(0, tgt)[int(feat[src])].detach()
            add[tgt] = bump
        for r in (lay == 2).nonzero(as_tuple=True)[0][:4].tolist():
            with torch.no_grad():
                base = _clt_pre(stack, fz, rep, 2, int(pos[r]), int(feat[r]))
                moved = _clt_pre(stack, fz, rep, 2, int(pos[r]), int(feat[r]), add)
            assert float(moved - base) / eps == pytest.approx(float(adj[r, src]), abs=1e-3)
            checked += 1
    assert checked == 12


def test_windowed_clt_graph_is_exact_and_writes_within_its_reach(tiny_model):
    """A windowed CLT (reach 2 over layers 0–2: a layer-0 feature writes to layers 0 and 1,
    not 2): its graph is exact and the backward sweep equals autograd."""
    from tests.support.transcoders import random_clt

    rep = random_clt(tiny_model, [0, 1, 2], reach=2)
    assert rep.targets(0) == [0, 1] and rep.targets(1) == [1, 2] and rep.targets(2) == [2]
    g = run_attribution(tiny_model, rep, PROMPT, AttributionConfig(check_features=4,
                                                                   control_graphs=1),
                        progress=False)
    assert g.target_replacement == pytest.approx(g.target_real, abs=1e-4)
    assert g.target_edge_sum == pytest.approx(g.target_real, abs=1e-4)
    _sweep_equals_autograd(tiny_model, rep, lambda t: [(1, 5), (2, t - 1), (3, t - 1), (0, 3)])


@pytest.mark.parametrize(("which", "reads", "skip"), CLT_CASES)
def test_clt_backward_sweep_equals_autograd(which, reads, skip, request):
    from tests.support.transcoders import random_clt

    model = _model(which, request)
    _sweep_equals_autograd(model, random_clt(model, [0, 1, 2], skip=skip, reads=reads),
                           lambda t: [(1, 5), (2, t - 1), (3, t - 1), (0, 3)])


def test_clt_cross_layer_writes_are_in_the_edges(tiny_model, monkeypatch):
    """Control: the same CLT with its cross-layer decoder blocks dropped (each feature writes
    only to its own layer, as a per-layer transcoder) gives other edges, and a graph broken
    on purpose (its edges leave the cross-layer writes out while its error terms count them)
    misses the target: the exactness check fires."""
    import copy

    import saes.graphs.attribution as attribution
    import saes.graphs.graph as graph_module
    from saes.transcoders.mlp_replacement import CLTReplacement
    from tests.support.transcoders import random_clt

    rep = random_clt(tiny_model, [0, 1, 2])
    local = copy.deepcopy(rep.clt)
    with torch.no_grad():
        for w in local.W_dec:
            w[:, 1:] = 0
    cfg = AttributionConfig(check_features=0, control_graphs=0)
    full = run_attribution(tiny_model, rep, PROMPT, cfg, progress=False)
    own = run_attribution(tiny_model, CLTReplacement(local), PROMPT, cfg, progress=False)
    assert full.n_active_features == own.n_active_features  # the same encoders
    assert full.adjacency is not None and own.adjacency is not None
    f = full.n_active_features
    assert float((full.adjacency[:f, :f] - own.adjacency[:f, :f]).abs().max()) > 1e-3
    # both exact on their own terms: the errors take up what the decoders do not write
    assert own.target_edge_sum == pytest.approx(own.target_real, abs=1e-4)
    # broken on purpose: errors from every write, edges from the own-layer writes only
    honest = attribution.active_features

    def errors_from_all_writes(fz, r):  # noqa: ANN001, ANN202
        with monkeypatch.context() as m:
            m.setattr(CLTReplacement, "targets", original_targets)
            return honest(fz, r)

    original_targets = CLTReplacement.targets
    monkeypatch.setattr(graph_module, "active_features", errors_from_all_writes)
    monkeypatch.setattr(CLTReplacement, "targets", lambda self, layer: [layer])
    broken = run_attribution(tiny_model, rep, PROMPT, cfg, progress=False)
    assert abs(broken.target_edge_sum - broken.target_real) > 1e-3
