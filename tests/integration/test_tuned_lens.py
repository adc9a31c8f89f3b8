"""A tuned lens trained briefly on the real model beats the logit lens."""

from __future__ import annotations

from interp.lenses.evaluation import LensEvalConfig, evaluate_lenses
from interp.lenses.logit import LogitLens
from interp.lenses.training import TunedLensTrainConfig, train_tuned_lens
from interp.lenses.tuned import (
    load_tuned_lens,
)


def test_real_model_tuned_lens_beats_logit_lens(model, real_corpus, tmp_path):
    """A short real run (least-squares init + a few KL steps) already beats the logit lens."""
    from interp.data.corpus import load_texts

    cfg = TunedLensTrainConfig(tokens=4 * 128 * 3, init_tokens=4096, checkpoint_every=100)
    res = train_tuned_lens(model, load_texts("train"), tmp_path, cfg, progress=False)
    lens = load_tuned_lens(tmp_path, model)
    ev = evaluate_lenses(model, {"logit": LogitLens(model), "tuned": lens},
                         load_texts("heldout"), LensEvalConfig(tokens=512)).to_dict()
    assert res.complete
    assert set(ev["tuned_lower_kl_layers"]) >= set(range(model.n_layers - 1)), ev
    assert ev["kl_logit_lens"][-1] < 1e-3 and ev["kl_tuned_lens"][-1] < 1e-3
    assert ev["kl_ratio"] > 2.0, ev["kl_ratio"]
    # the tuned lens at the last layer is the model: top-1 agreement 1
    assert ev["top1_agreement_tuned_lens"][-1] == 1.0

