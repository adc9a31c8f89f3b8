"""Automatic interpretation's planted control on the real embedded model (SmolLM2).

The embedded scorer's planted recovery is computed at both levels (token and concept) on
the held-out corpus; when it fails, its scores are not summarised: the headline's table
holds no row of it and the verdict says there is no language-model finding. The
programmatic scorer passes the token level and recovers no concept-level feature.
The SAE is a TopK SAE at its random initialisation: the planted control does not depend on
the SAE, and no training is needed.
"""

from __future__ import annotations

import torch


def test_real_model_scorer_planted_control(model, real_corpus, tmp_path):
    from interp.data.corpus import load_texts
    from reports.autointerp import autointerp_report
    from saes.architectures import sae_class
    from saes.autointerp import AutoInterpConfig, run_autointerp
    from saes.sae import SAEConfig

    sae = sae_class("topk")(SAEConfig(d_in=model.d_model, d_sae=512,
                                      hook_point=model.resid_hook(6), layer=6,
                                      architecture="topk", k=32, model_id=model.model_id))
    sae.init_weights(torch.Generator().manual_seed(0))
    cfg = AutoInterpConfig(features="alive:2", scorers="programmatic,self",
                           methods="detection", tokens=16384, n_score=8, n_hard=3, planted=2,
                           planted_concepts=2, n_boot=200, n_permutations=999, batch_size=32)
    res = run_autointerp(model, sae, load_texts("heldout"), cfg, progress=False)
    lm = res.control("self", "detection")
    prog = res.control("programmatic", "detection")
    assert lm is not None and prog is not None
    print(lm, prog, [(p.reference, p.auroc) for p in [*res.planted, *res.concepts]],
          res.headline().verdict, sep="\n")
    assert lm.kind == "language model" and lm.token_n > 0 and lm.concept_n > 0
    assert prog.passed and prog.concept_recovered == 0
    summarised = {row[3] for row in res.headline().table}
    if not lm.passed:
        assert "self" not in summarised
        assert (res.headline().verdict or "").startswith("No finding about the features")
    else:
        assert "self" in summarised
    autointerp_report(res).save(tmp_path / "report")
