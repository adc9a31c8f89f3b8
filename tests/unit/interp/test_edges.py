"""Edge attribution, exact path patching and circuits on the tiny random models (fast)."""

from __future__ import annotations

import json

import pytest
import torch

import interp
from interp.causal.edge_effects import (
    circuit_lds,
    edge_attribution,
    exact_edges,
    graph_of,
)
from interp.causal.edge_graph import model_graph
from interp.causal.edges import (
    faithfulness,
    matched_sets,
    prune,
    run_edges,
    sample_edges,
)
from interp.causal.results import EdgeConfig, EdgeResult, parse_edge_method
from interp.circuits import pair_lds, tokenize_task
from interp.circuits.patching import ld_direction, run_ld
from interp.circuits.tasks import TokenizedTask
from interp.errors import InterpError
from interp.models.unembedding import wrapped_module
from tests.support.bad_inputs import Case, M, _pair
from tests.unit.interp.test_causal import _tiny_task_file
from tests.unit.interp.test_circuits import _task, tiny_pair_list


@pytest.fixture(scope="module")
def tt(tiny_model):
    return tokenize_task(tiny_model, _task(tiny_pair_list()))


def test_graph_counts_names_and_order():
    """The tiny Llama's graph (3 layers, 4 heads, 2 key/value heads), counted by hand;
    SmolLM2's count; edges receiver-major with every sender upstream of its receiver."""
    g = model_graph(3, 4, 2)
    assert g.n_senders == 1 + 3 * 5 and g.n_receivers == 3 * 9 + 1
    # attention: 8 receivers × (1 + 5l) senders; MLP: 1 + 5l + 4; logits: 16
    assert g.n_edges == sum(8 * (1 + 5 * x) + (5 + 5 * x) for x in range(3)) + 16 == 190
    assert model_graph(30, 9, 3).n_edges == 70_651
    assert g.senders[:3] == ["input", "a0.h0", "a0.h1"] and g.senders[5] == "m0"
    assert g.receivers[:6] == ["a0.h0<q>", "a0.h1<q>", "a0.h2<q>", "a0.h3<q>", "a0.kv0<k>",
                               "a0.kv1<k>"]
    assert g.receivers[8] == "m0" and g.receivers[-1] == "logits"
    snd, rcv = g.edge_index
    assert len(snd) == g.n_edges and bool((rcv[1:] >= rcv[:-1]).all())
    for e in range(g.n_edges):
        grp = g.group_of(int(rcv[e]))
        assert int(snd[e]) < grp.upstream
        assert g.edge_of(*g.edge_name(e).split("->")) == e
    assert g.receiver_node(g.receivers.index("a1.kv1<v>")) == ["a1.h2", "a1.h3"]
    assert model_graph(2, 3, 3).receivers[3] == "a0.h0<k>"  # no grouping: per head
    with pytest.raises(InterpError, match="not upstream"):
        g.edge_of("m2", "a1.h0<q>")


def test_circuits_of_all_and_no_edges_are_the_clean_and_corrupted_runs(tiny_model, tt):
    g = graph_of(tiny_model)
    clean, corr = pair_lds(tiny_model, tt, 8)
    lds = circuit_lds(tiny_model, tt, [torch.ones(g.n_edges, dtype=torch.bool),
                                       torch.zeros(g.n_edges, dtype=torch.bool)], progress=False)
    torch.testing.assert_close(lds[:, 0], clean, atol=1e-5, rtol=0)
    torch.testing.assert_close(lds[:, 1], corr, atol=1e-5, rtol=0)


def test_a_circuit_without_an_mlps_inputs_is_that_mlp_noised(tiny_model, tt):
    """Every edge but those into MLP 1: MLP 1 reads the corrupted residual, so its output
    is the corrupted run's and everything else runs on: activation patching of
    ``hook_mlp_out`` (corrupted into clean), computed here independently."""
    g = graph_of(tiny_model)
    _, rcv = g.edge_index
    keep = rcv != g.receivers.index("m1")
    (got,) = circuit_lds(tiny_model, tt, [keep], progress=False).T
    d = ld_direction(tiny_model, tt.answer, tt.wrong)
    name = "blocks.1.hook_mlp_out"
    _, cap = run_ld(tiny_model, tt.corrupted_ids, tt.attention_mask, d, capture=[name])
    want, _ = run_ld(tiny_model, tt.clean_ids, tt.attention_mask, d,
                     [(name, lambda t, hook: cap[name])])
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_estimators_are_named_by_where_their_gradient_is_taken(tiny_model, tt):
    """eap-ig with one step is eap-corrupted, to the bit; the base run's gradient is the
    derivative of the exact patch (patching ε of the sender's difference moves the logit
    difference by ε times the score, for edges into every kind of receiver): eap-corrupted
    when denoising (the base is the corrupted run), eap-clean (Syed et al.'s EAP) when
    noising, and not the other one; the direction flips only the sign."""
    one = edge_attribution(tiny_model, tt, steps=1, progress=False)
    assert torch.equal(one["eap-corrupted"], one["eap-ig"])
    assert not torch.allclose(one["eap-clean"], one["eap-corrupted"], atol=1e-3)
    three = edge_attribution(tiny_model, tt, steps=3, methods=("eap-ig",), progress=False)
    assert set(three) == {"eap-ig"} and not torch.equal(one["eap-ig"], three["eap-ig"])
    g = graph_of(tiny_model)
    edges = torch.tensor([g.edge_of(s, r) for s, r in (
        ("input", "a0.h1<q>"), ("input", "a0.kv1<k>"), ("a0.h2", "a1.kv0<v>"),
        ("a0.h3", "m1"), ("m0", "a2.h0<q>"), ("a1.h1", "logits"), ("input", "logits"))])
    clean, corr = pair_lds(tiny_model, tt, 8)
    eps = 1e-3
    for direction, base, name, other in (("denoise", corr, "eap-corrupted", "eap-clean"),
                                         ("noise", clean, "eap-clean", "eap-corrupted")):
        scores = edge_attribution(tiny_model, tt, steps=1, direction=direction,
                                  progress=False)
        if direction == "noise":
            for m in scores:
                torch.testing.assert_close(scores[m], -one[m], atol=1e-6, rtol=0)
        full = exact_edges(tiny_model, tt, edges, direction=direction, progress=False)
        up = exact_edges(tiny_model, tt, edges, direction=direction, scale=eps,
                         progress=False)
        down = exact_edges(tiny_model, tt, edges, direction=direction, scale=-eps,
                           progress=False)
        slope = (up - down) / (2 * eps)
        assert (full - base[:, None]).abs().max() > 1e-3
        torch.testing.assert_close(slope, scores[name][:, edges], atol=2e-3, rtol=2e-2)
        assert (slope - scores[other][:, edges]).abs().max() > 0.05 * slope.abs().max()


def test_the_shared_prefix_runs_once_and_changes_nothing(tiny_model, tt):
    """Positions before the first difference run once as a KV cache: the scores equal
    those of passes over every position, up to float rounding."""
    a = edge_attribution(tiny_model, tt, steps=3, progress=False)
    b = edge_attribution(tiny_model, tt, steps=3, cache_prefix=False, progress=False)
    assert set(a) == set(b) == {"eap-clean", "eap-corrupted", "eap-ig"}
    for m in a:
        torch.testing.assert_close(a[m], b[m], atol=1e-5, rtol=1e-4)


def test_ig_converges_to_the_total_effect_through_the_input(tiny_model, tt):
    """Completeness: eap-ig's scores of every edge leaving the input sum to the clean −
    corrupted gap as the steps grow (one step's sum does not); the error shrinks with
    steps."""
    clean, corr = pair_lds(tiny_model, tt, 8)
    g = graph_of(tiny_model)
    snd, _ = g.edge_index
    gap = clean - corr
    errs = []
    for steps in (1, 4, 32):
        ig = edge_attribution(tiny_model, tt, steps=steps, methods=("eap-ig",),
                              progress=False)["eap-ig"]
        errs.append(float((ig[:, snd == 0].sum(1) - gap).abs().max()))
    assert errs[2] < errs[1] < errs[0]
    assert errs[2] < 0.02 * float(gap.abs().min())


def test_ig_converges_to_the_exact_effect_of_a_lone_edge(tiny_model_dir):
    """With every head's and MLP's output weights zero and prompts that differ in their
    last token, the input → logits edge is the only path: its exact effect is the whole
    gap, eap-corrupted (one step) misses it through the final norm's curvature, and eap-ig
    tends to it as the steps grow, with nothing on any other edge."""
    from interp.circuits.tasks import Pair

    m = interp.load(str(tiny_model_dir))
    with torch.no_grad():
        for block in m.bridge.blocks:
            wrapped_module(block.attn.o).weight.zero_()
            wrapped_module(block.mlp.out).weight.zero_()
    pairs = [Pair("The quick brown fox", "The quick brown dog", " jumps", " over"),
             Pair("The capital of France", "The capital of Italy", " is", " the")]
    tt2 = tokenize_task(m, _task(pairs))
    g = graph_of(m)
    e = g.edge_of("input", "logits")
    clean, corr = pair_lds(m, tt2, 8)
    exact = exact_edges(m, tt2, torch.tensor([e]), progress=False)[:, 0] - corr
    torch.testing.assert_close(exact, clean - corr, atol=1e-5, rtol=0)
    assert float(exact.abs().min()) > 1e-2
    errs = []
    for steps in (1, 8, 64):
        ig = edge_attribution(m, tt2, steps=steps, methods=("eap-ig",),
                              progress=False)["eap-ig"]
        errs.append(float((ig[:, e] - exact).abs().max()))
        assert float(ig.abs().sum() - ig[:, e].abs().sum()) < 1e-6  # nothing else moves
    assert errs[2] < errs[1] < errs[0]
    assert errs[0] > 0.05 * float(exact.abs().min())  # one step alone is off
    assert errs[2] < 0.02 * float(exact.abs().min())


def test_exact_edges_prefix_reuse_is_bit_equal_and_logit_edges_match_dla(tiny_model, tt):
    """Chunks run from their first receiver's block equal whole passes to the bit; an edge
    from a head into the logits, with the final norm's scale frozen at the base run's,
    is the difference of that head's direct logit attribution between the two runs."""
    from interp.circuits.dla import direct_logit_attribution

    g = graph_of(tiny_model)
    edges = torch.arange(g.n_edges)
    a = exact_edges(tiny_model, tt, edges, batch_size=16, progress=False)
    b = exact_edges(tiny_model, tt, edges, batch_size=16, reuse_prefix=False, progress=False)
    assert torch.equal(a, b)
    heads = [(x, h) for x in range(3) for h in range(4)]
    e = torch.tensor([g.edge_of(f"a{x}.h{h}", "logits") for x, h in heads])
    frozen = exact_edges(tiny_model, tt, e, freeze_final_norm=True, progress=False)
    corr = pair_lds(tiny_model, tt, 8)[1]
    swapped = tt.subset(list(range(len(tt))))
    swapped.clean_ids = tt.corrupted_ids
    dla_clean = direct_logit_attribution(tiny_model, tt).heads  # [pairs, L, H]
    dla_corr = direct_logit_attribution(tiny_model, swapped).heads
    d = ld_direction(tiny_model, tt.answer, tt.wrong)
    scale = {}
    for name, ids in (("clean", tt.clean_ids), ("corr", tt.corrupted_ids)):
        _, cap = run_ld(tiny_model, ids, tt.attention_mask, d, capture=["ln_final.hook_in"])
        x = cap["ln_final.hook_in"][:, -1].float()
        scale[name] = torch.sqrt(x.pow(2).mean(-1) + 1e-5)
    ratio = (scale["clean"] / scale["corr"])[:, None]  # clean's terms at the base's scale
    want = torch.stack([dla_clean[:, x, h] * ratio[:, 0] - dla_corr[:, x, h]
                        for x, h in heads], 1)
    torch.testing.assert_close(frozen - corr[:, None], want, atol=1e-5, rtol=1e-4)


def test_the_old_name_eap_is_refused_with_the_new_names(tiny_model, tt):
    with pytest.raises(InterpError, match="eap-clean, eap-corrupted, eap-ig"):
        edge_attribution(tiny_model, tt, methods=("eap",), progress=False)
    with pytest.raises(ValueError, match="eap-clean .Syed et al.'s EAP. or eap-corrupted"):
        parse_edge_method("eap")
    assert parse_edge_method("eap-clean") == "eap-clean"


def test_sample_and_prune():
    g = model_graph(3, 4, 2)
    score = torch.zeros(g.n_edges)
    score[[5, 50, 150]] = torch.tensor([3.0, -2.0, 1.0])
    idx, origin = sample_edges(g, [score], 40, 2, seed=0)
    assert idx[:2].tolist() == [5, 50] and origin[:2] == ["top", "top"]
    assert len(set(idx.tolist())) == 40 and origin.count("random") == 38
    again, _ = sample_edges(g, [score], 40, 2, seed=0)
    assert torch.equal(idx, again)
    with pytest.raises(InterpError, match="larger than"):
        sample_edges(g, [score], g.n_edges + 1, 0, seed=0)
    # input -> a0.h0<q>, a0.h0 -> logits: kept; a1.h0 -> logits has nothing feeding a1.h0
    path = [g.edge_of("input", "a0.h0<q>"), g.edge_of("a0.h0", "logits")]
    dead = g.edge_of("a1.h0", "logits")
    stub = g.edge_of("input", "a2.h1<q>")  # a2.h1 feeds nothing
    assert sorted(prune(g, [*path, dead, stub])) == sorted(path)


def random_token_task(model, n: int = 16, width: int = 10, seed: int = 0) -> TokenizedTask:
    """Random token prompts whose corrupted copy differs at two positions; each pair's
    answer and wrong tokens are those whose logit difference moves most between the runs,
    so every gap is large (a random model's gaps on text are near zero and make the
    normalised faithfulness noise)."""
    g = torch.Generator().manual_seed(seed)
    clean = torch.randint(3, 390, (n, width), generator=g)
    corr = clean.clone()
    for pos in (3, 6):
        corr[:, pos] = torch.randint(3, 390, (n,), generator=g)
    with torch.no_grad():
        move = model.bridge(clean)[:, -1] - model.bridge(corr)[:, -1]
    return TokenizedTask(clean, corr, torch.ones(n, width, dtype=torch.bool),
                         move.argmax(-1), move.argmin(-1), ["END"],
                         torch.ones(n, 1, width, dtype=torch.bool), [width] * n)


def test_the_matched_baseline_is_not_zero_where_edges_drawn_from_all_are():
    """A constructed case on SmolLM2's graph (70,651 edges), faithfulness additive over
    600 edges that matter: an estimator that ranks them roughly right has a matched
    baseline (100 of its ranks 101–300) that keeps a fair share of the gap, while 100
    edges drawn from all keep almost nothing (zero by construction at that scale); an
    estimator with permuted scores keeps no more at its top than its matched sets."""
    g = model_graph(30, 9, 3)
    gen = torch.Generator().manual_seed(0)
    weight = torch.zeros(g.n_edges)
    weight[torch.randperm(g.n_edges, generator=gen)[:600]] = torch.rand(600, generator=gen) + 0.5
    weight /= weight.sum()
    real = weight * (1 + 0.5 * torch.rand(g.n_edges, generator=gen))
    wrong = real[torch.randperm(g.n_edges, generator=gen)]

    def keep(idx: torch.Tensor) -> float:
        return float(weight[idx].sum())

    n = 100
    for scores, good in ((real, True), (wrong, False)):
        order = torch.argsort(scores.abs(), descending=True)
        draws = matched_sets(order, n, 5, gen)
        assert len(draws) == 5 and all(len(set(d.tolist())) == n for d in draws)
        assert not set(order[:n].tolist()) & set(torch.cat(draws).tolist())
        matched = sum(keep(d) for d in draws) / 5
        drawn = sum(keep(torch.randperm(g.n_edges, generator=gen)[:n]) for _ in range(5)) / 5
        if good:
            assert keep(order[:n]) > matched > 0.15 > 0.01 > drawn
        else:
            assert keep(order[:n]) < 0.01 and matched < 0.01
    assert matched_sets(torch.arange(190), 100, 3, gen) == []  # ranks 101–300 not there


def test_a_wrong_estimator_sits_on_its_matched_baseline_the_real_one_beats_it(tiny_model):
    """On the tiny model, with circuits run for real: eap-ig's top 30 and 60 edges keep
    most of the gap and beat their matched baselines beyond the noise; an estimator with
    eap-ig's scores permuted over the edges (a ranking that carries nothing) is within the
    noise of its own matched baseline at every count."""
    rtt = random_token_task(tiny_model)
    clean, corr = pair_lds(tiny_model, rtt, 8)
    assert float((clean - corr).min()) > 0.1
    real = edge_attribution(tiny_model, rtt, steps=8, methods=("eap-ig",),
                            progress=False)["eap-ig"].mean(0)
    wrong = real[torch.randperm(len(real), generator=torch.Generator().manual_seed(1))]
    config = EdgeConfig(max_edges=60, circuit_edges=60, random_draws=10)
    curves, versus, _ = faithfulness(tiny_model, rtt, {"eap-ig": real, "wrong": wrong},
                                     config, clean, corr, progress=False)
    at = {(v.method, v.n): v for v in versus}
    assert sorted(n for m, n in at if m == "wrong") == [1, 3, 10, 30, 60]
    for n in (10, 30, 60):
        v, w = at["eap-ig", n], at["wrong", n]
        assert v.verdict == "beats" and v.difference > 5 * abs(w.difference), (v, w)
    assert at["eap-ig", 30].difference_ci95[0] > 0.5 and at["eap-ig", 30].kept > 0.7
    for (m, _), v in at.items():
        if m == "wrong":
            assert v.verdict == "within the noise" and v.kept < 0.2, v
    kinds = {(c.kind, c.method) for c in curves}
    assert kinds == {("top", "eap-ig"), ("matched", "eap-ig"), ("top", "wrong"),
                     ("matched", "wrong"), ("random", "random")}


def test_run_edges_on_tiny(tiny_model, tmp_path):
    """run_edges end to end: every estimator, the agreement with its intervals, the curves
    (all edges keep the whole gap) with the matched baselines and the exact reference, the
    comparisons, the circuit, groups by template, the file."""
    path = _tiny_task_file(tmp_path)
    res = run_edges(tiny_model, EdgeConfig(task=path, sample=60, top=10, n_boot=100,
                                           min_gap=0, max_edges=190, circuit_edges=20,
                                           random_draws=2, ig_steps=4), progress=False)
    assert [a.method for a in res.agreement] == ["eap-clean", "eap-corrupted", "eap-ig"]
    for a in res.agreement:
        assert a.n_edges == 60 and -1 <= a.spearman <= 1
        assert a.spearman_ci95[0] <= a.spearman_ci95[1]
    assert res.n_edges == 190 and len(res.sample) == 60
    assert sum(s.chosen == "top" for s in res.sample) == 10
    assert {(c.kind, c.method) for c in res.faithfulness} == {
        *((k, m) for k in ("top", "matched") for m in ("eap-clean", "eap-corrupted", "eap-ig")),
        ("random", "random"), ("exact", "exact")}
    for c in res.faithfulness:
        if c.kind in ("top", "random"):
            assert c.n[-1] == 190 and c.mean[-1] == pytest.approx(1.0, abs=1e-3)
        if c.kind == "exact":
            assert c.n[-1] <= 60
    assert {v.method for v in res.versus_at(20)} == {"eap-clean", "eap-corrupted", "eap-ig"}
    assert res.circuit is not None and 0 < len(res.circuit.edges) <= 20
    assert res.groups is not None and res.groups.column == "template"
    assert res.scores["eap-clean"].shape == (6, 190) and res.scores["exact"].shape == (6, 60)
    d = json.loads(json.dumps(res.to_dict()))
    back = EdgeResult.from_dict(d)
    assert back.agreement[0].spearman == res.agreement[0].spearman
    assert back.versus[0].difference == res.versus[0].difference
    assert back.circuit is not None and len(back.circuit.edges) == len(res.circuit.edges)
    head = res.headline()
    assert head.columns[:5] == ["estimator", "top 20 keep", "matched", "difference", "verdict"]
    assert "Spearman (local)" in head.columns and res.figure() is not None
    assert head.verdict is not None and head.verdict.startswith("top 20 edges keep")
    one = run_edges(tiny_model, EdgeConfig(task=path, method="eap-clean", sample=20, top=5,
                                           n_boot=100, min_gap=0, max_edges=10,
                                           circuit_edges=10, random_draws=2), progress=False)
    assert set(one.scores) == {"eap-clean"} and not one.agreement and one.circuit is not None
    with pytest.raises(InterpError, match="larger than"):
        run_edges(tiny_model, task=path, sample=191)
    from interp.schema import ConfigError

    with pytest.raises(ConfigError, match="top"):
        EdgeConfig(sample=10, top=20)
    with pytest.raises(ConfigError, match="unknown method 'eap'"):
        EdgeConfig(method="eap")  # type: ignore[arg-type]


def test_cli_causal_edges_writes_its_files(tiny_model_dir, tmp_path, capsys):
    from safetensors.torch import load_file

    from tests.support.cli_runner import run

    out = tmp_path / "out"
    code, stdout, err = run(["causal", "edges", "--model", str(tiny_model_dir), "--task",
                             _tiny_task_file(tmp_path), "--sample", "30", "--top", "5",
                             "--ig-steps", "2", "--max-edges", "100", "--circuit-edges", "10",
                             "--bootstrap", "100", "--min-gap", "0", "--out", str(out)], capsys)
    assert code == 0, err
    data = json.loads((out / "results.json").read_text())
    assert data["manifest"]["config"]["ig_steps"] == 2 and len(data["sample"]) == 30
    circuit = json.loads((out / "circuit.json").read_text())
    assert circuit["method"] == "eap-ig" and circuit["edges"]
    scores = load_file(str(out / "edge_scores.safetensors"))
    assert scores["eap_ig"].shape == (6, 190) and scores["exact_edges"].shape == (30,)
    page = (out / "report.html").read_text()
    assert 'data-figure="faith"' in page and 'data-figure="circuit"' in page
    assert "Spearman" in stdout


# ------------------------------------------------------------------ bad inputs
#: This tool's bad-input cases. tests/unit/interp/test_bad_inputs.py runs every unit-test
#: module's ``BAD_INPUTS`` as one matrix (tests/support/bad_inputs.py collects them).
BAD_INPUTS: list[Case] = [
    Case("causal-edges-sample-too-large", lambda c: [
        "causal", "edges", *M(c), "--task", c.file("t.jsonl", _pair() * 4), "--sample",
        "1000", "--out", c.out], "--sample 1000 is larger than the model's 190 edges"),
    Case("causal-edges-top-over-sample", lambda c: [
        "causal", "edges", *M(c), "--task", c.file("t.jsonl", _pair() * 4), "--sample", "10",
        "--top", "20", "--out", c.out], "top must be at most --sample (10)"),
    Case("causal-edges-unknown-method", lambda c: [
        "causal", "edges", *M(c), "--task", c.file("t.jsonl", _pair() * 4), "--method",
        "acdc", "--out", c.out], "acdc"),
    Case("causal-edges-old-method-name-eap", lambda c: [
        "causal", "edges", *M(c), "--task", c.file("t.jsonl", _pair() * 4), "--method",
        "eap", "--out", c.out], "eap-clean (Syed et al.'s EAP) or eap-corrupted"),
    Case("causal-edges-unpaired-row", lambda c: [
        "causal", "edges", *M(c), "--task", c.file("t.jsonl", json.dumps(
            {"clean": "The capital of France is", "answer": " Paris", "wrong": " Rome"})),
        "--out", c.out], "missing or empty corrupted"),
    Case("causal-edges-multi-token-label", lambda c: [
        "causal", "edges", *M(c), "--task", c.file("t.jsonl", _pair(answer=" Parisian") * 4),
        "--out", c.out], "must be one token"),
]
