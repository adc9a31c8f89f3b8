"""A short SAE run on the real model's layer 6 beats its ablation baseline and browses."""

from __future__ import annotations

import pytest

from saes.architectures import ReLUConfig
from saes.loading import load_sae
from saes.metrics import SAEEvalConfig, evaluate_sae
from saes.train import SAETrainConfig, train_sae
from tests.unit.saes.test_sae import _identity_sae


def test_real_model_short_sae_beats_ablation_and_browses(model, real_corpus, activation_cache,
                                                       tmp_path):
    """Layer 6 of the embedded model: an identity 'SAE' reproduces the model exactly, and a
    short training run (164k tokens) already reconstructs most of the variance and recovers
    most of the CE lost to ablation; its feature browser shows real contexts. (It shares the
    layer-6 activation cache of the other SAE runs: whichever runs first fills its first
    82k tokens, byte for byte what the model gives.)"""
    from interp.data.corpus import corpus_hash, load_texts
    from saes.features.browser import BrowserConfig, collect_browser_data

    heldout = load_texts("heldout")
    ident = _identity_sae(model.d_model, model.resid_hook(6))
    exact = evaluate_sae(model, ident, heldout, SAEEvalConfig(tokens=1024, ce_tokens=1024,
                                                              n_bootstrap=50))
    assert abs(exact.delta_ce) < 1e-4 and exact.ce_loss_score == pytest.approx(1, abs=1e-4)
    assert exact.ce_zero_ablation - exact.ce_clean > 1.0  # ablating layer 6 hurts

    cfg = SAETrainConfig(layer=6, d_sae=1152, arch=ReLUConfig(4.0), tokens=2048 * 80,
                         batch_size=2048, lr=2e-3, windows_per_chunk=256, checkpoint_every=100)
    res = train_sae(model, load_texts("train"), tmp_path, cfg, cache_dir=activation_cache,
                    data={"source": "corpus", "sha256": corpus_hash()}, progress=False)
    assert res.complete
    sae = load_sae(tmp_path / "sae", model).sae
    ev = evaluate_sae(model, sae, heldout, SAEEvalConfig(tokens=8192, ce_tokens=4096,
                                                         n_bootstrap=200))
    print({k: ev.value(k) for k in ("l0", "explained_variance", "ce_loss_score",
                                    "ce_loss_score_mean_ablation", "delta_ce", "dead_fraction")})
    # measured here: L0 31, EV 0.74, CE-loss score 0.84 [0.82, 0.85] (mean ablation 0.70)
    assert ev.explained_variance > 0.6
    assert ev.ce_clean < ev.ce_sae < ev.ce_mean_ablation < ev.ce_zero_ablation
    assert ev.ce_loss_score_ci95[0] > 0.7
    assert ev.l0 < 100
    data = collect_browser_data(model, sae, heldout, BrowserConfig(tokens=2048,
                                                                   features="alive:3"))
    d = data.to_dict()
    assert len(d["features"]) == 3
    for f in d["features"]:
        top = f["contexts"][0]
        assert top["acts"][top["max_at"]] == pytest.approx(f["max_act"], rel=1e-4)
        assert "".join(top["tokens"]).strip()

