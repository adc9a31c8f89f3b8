"""Distributed alignment search on the real model: a real causal direction."""

from __future__ import annotations

from interp.causal import DASConfig, run_das


def test_real_das_finds_the_gender_direction(model):
    """Pronoun pairs (a name swapped for one of the other gender): at the name's position
    in layer 8, one learned direction carries the swap (IIA ≥ 0.8 with every pair held out
    once, as the full interchange does) while a random direction does nothing (≤ 0.2);
    the direction lies in the span the activations vary in (no subspace illusion), and
    the intervals rest on the task's templates."""
    res = run_das(model, DASConfig(task="pronoun", layers=[8], position="name", limit=48,
                                   steps=20, folds=3, control=False), progress=False)
    (r,) = res.layers
    assert res.n_clusters is not None and res.n_clusters >= 5
    assert r.full.value >= 0.9
    assert r.das.value >= 0.8, r.das
    assert r.random.value <= 0.2, r.random
    lo = r.das.ci95[0]
    hi = r.random.ci95[1]
    assert lo is not None and hi is not None and lo > hi  # apart beyond the noise
    assert r.none.value == 0.0  # the base runs all prefer the base's pronoun
    assert r.in_span is not None and r.in_span.value >= 0.8, r.in_span
    assert not r.illusion() and not res.warnings


def test_real_head_to_logits_edge_is_the_dla_difference(model):
    """Exact path patching of an edge from a head into the logits, with the final norm's
    scale frozen at the base (corrupted) run's, is the difference of that head's direct
    logit attribution terms between the runs (DLA from ``interp patch``'s own code)."""
    import torch

    from interp.causal.edge_effects import exact_edges, graph_of
    from interp.circuits import load_task, pair_lds, tokenize_task
    from interp.circuits.dla import direct_logit_attribution
    from interp.circuits.patching import ld_direction, run_ld
    from interp.models.unembedding import final_rms_norm

    tt = tokenize_task(model, load_task("ioi", 4))
    g = graph_of(model)
    heads = [(23, 3), (29, 1), (24, 4), (10, 7)]
    e = torch.tensor([g.edge_of(f"a{x}.h{h}", "logits") for x, h in heads])
    got = exact_edges(model, tt, e, freeze_final_norm=True, progress=False)
    corr = pair_lds(model, tt, 4)[1]
    swapped = tt.subset(list(range(len(tt))))
    swapped.clean_ids = tt.corrupted_ids
    dla_clean = direct_logit_attribution(model, tt).heads
    dla_corr = direct_logit_attribution(model, swapped).heads
    norm = final_rms_norm(model)
    assert norm is not None
    d = ld_direction(model, tt.answer, tt.wrong)
    rms = {}
    for name, ids in (("clean", tt.clean_ids), ("corr", tt.corrupted_ids)):
        _, cap = run_ld(model, ids, tt.attention_mask, d, capture=["ln_final.hook_in"])
        x = cap["ln_final.hook_in"][:, -1].float()
        rms[name] = torch.sqrt(x.pow(2).mean(-1) + norm.eps)
    want = torch.stack([dla_clean[:, x, h] * rms["clean"] / rms["corr"] - dla_corr[:, x, h]
                        for x, h in heads], 1)
    assert float(want.abs().max()) > 0.5  # L23H3 moves the logit difference by nats
    torch.testing.assert_close(got - corr[:, None], want, atol=2e-3, rtol=1e-3)


def test_real_edges_on_ioi(model):
    """IOI on SmolLM2: eap-ig's top 200 edges keep far more of the gap than their matched
    baseline (200 of its ranks 201–600) and than 200 edges drawn from all (the weak
    baseline, about zero); locally, the base-run estimator (eap-corrupted, denoising)
    ranks the sampled edges as exact path patching does (Spearman ≥ 0.8); MLP 0 reading
    the input is the largest edge (several nats), which eap-corrupted misses (saturation)
    and eap-ig finds."""
    from interp.causal.edges import run_edges
    from interp.causal.results import EdgeConfig

    res = run_edges(model, EdgeConfig(task="ioi", limit=8, sample=100, top=20,
                                      max_edges=200, circuit_edges=200, n_boot=200,
                                      random_draws=3), progress=False)
    local = next(a for a in res.agreement if a.method == "eap-corrupted")
    assert local.spearman >= 0.8, local
    first = next(s for s in res.sample if s.edge == "input->m0")
    assert first.exact > 3.0, first
    assert first.eap_ig is not None and first.eap_corrupted is not None
    assert abs(first.eap_ig - first.exact) < 0.3 * first.exact
    assert abs(first.eap_corrupted - first.exact) > 0.7 * first.exact
    v = next(v for v in res.versus_at(200) if v.method == "eap-ig")
    assert v.verdict == "beats" and v.random is not None, v
    assert v.kept > v.random + 0.2
