"""Edge attribution, exact path patching and circuits on the tiny random models (fast)."""

from __future__ import annotations

import json

import pytest
import torch

import interp
from interp.causal.edge_experiment import prune, run_edges, sample_edges
from interp.causal.edges import (
    EdgesUnsupported,
    circuit_lds,
    edge_attribution,
    exact_edges,
    graph_of,
)
from interp.causal.graph import model_graph
from interp.causal.results import EdgeConfig, EdgeResult
from interp.circuits import pair_lds, tokenize_task
from interp.circuits.patching import ld_direction, module_weight, run_ld
from interp.errors import InterpError
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


def test_one_step_is_eap_and_eap_is_the_derivative_of_the_patch(tiny_model, tt):
    """EAP-IG with one step is EAP, to the bit; EAP of an edge is the derivative of its
    exact patch: patching ε of the sender's difference moves the logit difference by ε
    times the EAP score, for edges into every kind of receiver."""
    eap, ig1 = edge_attribution(tiny_model, tt, steps=1, progress=False)
    assert torch.equal(eap, ig1)
    _, ig3 = edge_attribution(tiny_model, tt, steps=3, progress=False)
    assert not torch.equal(eap, ig3)
    g = graph_of(tiny_model)
    edges = torch.tensor([g.edge_of(s, r) for s, r in (
        ("input", "a0.h1<q>"), ("input", "a0.kv1<k>"), ("a0.h2", "a1.kv0<v>"),
        ("a0.h3", "m1"), ("m0", "a2.h0<q>"), ("a1.h1", "logits"), ("input", "logits"))])
    base = pair_lds(tiny_model, tt, 8)[1][:, None]
    full = exact_edges(tiny_model, tt, edges, progress=False) - base
    eps = 1e-3
    up = exact_edges(tiny_model, tt, edges, scale=eps, progress=False) - base
    down = exact_edges(tiny_model, tt, edges, scale=-eps, progress=False) - base
    slope = (up - down) / (2 * eps)
    assert full.abs().max() > 1e-3
    torch.testing.assert_close(slope, eap[:, edges], atol=2e-3, rtol=2e-2)


def test_the_shared_prefix_runs_once_and_changes_nothing(tiny_model, tt):
    """Positions before the first difference run once as a KV cache: the scores equal
    those of passes over every position, up to float rounding."""
    a = edge_attribution(tiny_model, tt, steps=3, progress=False)
    b = edge_attribution(tiny_model, tt, steps=3, cache_prefix=False, progress=False)
    for x, y in zip(a, b, strict=True):
        torch.testing.assert_close(x, y, atol=1e-5, rtol=1e-4)


def test_ig_converges_to_the_total_effect_through_the_input(tiny_model, tt):
    """Completeness: EAP-IG's scores of every edge leaving the input sum to the clean −
    corrupted gap as the steps grow (EAP's sum does not); the error shrinks with steps."""
    clean, corr = pair_lds(tiny_model, tt, 8)
    g = graph_of(tiny_model)
    snd, _ = g.edge_index
    gap = clean - corr
    errs = []
    for steps in (1, 4, 32):
        _, ig = edge_attribution(tiny_model, tt, steps=steps, progress=False)
        errs.append(float((ig[:, snd == 0].sum(1) - gap).abs().max()))
    assert errs[2] < errs[1] < errs[0]
    assert errs[2] < 0.02 * float(gap.abs().min())


def test_ig_converges_to_the_exact_effect_of_a_lone_edge(tiny_model_dir):
    """With every head's and MLP's output weights zero and prompts that differ in their
    last token, the input → logits edge is the only path: its exact effect is the whole
    gap, EAP (one step) misses it through the final norm's curvature, and EAP-IG tends to
    it as the steps grow, with nothing on any other edge."""
    from interp.circuits.tasks import Pair

    m = interp.load(str(tiny_model_dir))
    with torch.no_grad():
        for block in m.bridge.blocks:
            module_weight(block.attn.o).zero_()
            module_weight(block.mlp.out).zero_()
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
        _, ig = edge_attribution(m, tt2, steps=steps, progress=False)
        errs.append(float((ig[:, e] - exact).abs().max()))
        assert float(ig.abs().sum() - ig[:, e].abs().sum()) < 1e-6  # nothing else moves
    assert errs[2] < errs[1] < errs[0]
    assert errs[0] > 0.05 * float(exact.abs().min())  # EAP alone is off
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


def test_edges_refuse_a_model_with_norms_after_attention(tiny_gemma3, tt):
    with pytest.raises(EdgesUnsupported, match="sum of the embeddings"):
        edge_attribution(tiny_gemma3, tokenize_task(tiny_gemma3, _task(tiny_pair_list())),
                         steps=1, progress=False)


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


def test_run_edges_on_tiny(tiny_model, tmp_path):
    """run_edges end to end: every method, the agreement with its intervals, the curves
    (all edges keep the whole gap), the circuit, groups by template, the file."""
    path = _tiny_task_file(tmp_path)
    res = run_edges(tiny_model, EdgeConfig(task=path, sample=60, top=10, n_boot=100,
                                           min_gap=0, max_edges=190, circuit_edges=20),
                    progress=False)
    assert [a.method for a in res.agreement] == ["eap", "eap-ig"]
    for a in res.agreement:
        assert a.n_edges == 60 and -1 <= a.spearman <= 1
        assert a.spearman_ci95[0] <= a.spearman_ci95[1]
    assert res.n_edges == 190 and len(res.sample) == 60
    assert sum(s.chosen == "top" for s in res.sample) == 10
    assert {c.method for c in res.faithfulness} == {"eap", "eap-ig", "random"}
    for c in res.faithfulness:
        assert c.n[-1] == 190 and c.mean[-1] == pytest.approx(1.0, abs=1e-3)
    assert res.circuit is not None and 0 < len(res.circuit.edges) <= 20
    assert res.groups is not None and res.groups.column == "template"
    assert res.scores["eap"].shape == (6, 190) and res.scores["exact"].shape == (6, 60)
    d = json.loads(json.dumps(res.to_dict()))
    back = EdgeResult.from_dict(d)
    assert back.agreement[0].spearman == res.agreement[0].spearman
    assert back.circuit is not None and len(back.circuit.edges) == len(res.circuit.edges)
    assert "Spearman" in res.headline().columns and res.figure() is not None
    with pytest.raises(InterpError, match="larger than"):
        run_edges(tiny_model, task=path, sample=191)
    from interp.schema import ConfigError

    with pytest.raises(ConfigError, match="top"):
        EdgeConfig(sample=10, top=20)


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
