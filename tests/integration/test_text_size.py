"""The text-size estimate on the real corpus, and every consumer's default request against
the split it reads (issue 28: a request beyond the text is refused, the defaults are not)."""

from __future__ import annotations

import time


def test_estimate_matches_the_exact_count_of_the_heldout_split(model, real_corpus):
    from interp.data.corpus import load_texts
    from interp.data.windows import estimate_tokens

    docs = load_texts("heldout")
    t0 = time.perf_counter()
    size = estimate_tokens(model, docs)
    cost = time.perf_counter() - t0
    assert not size.exact and size.sampled == 256 and size.documents == len(docs)
    exact = estimate_tokens(model, docs, sample=len(docs))
    assert exact.exact
    assert exact.tokens == sum(len(model.encode(d)) + 1 for d in docs if d.strip())
    assert abs(size.tokens - exact.tokens) / exact.tokens < 0.03, (size, exact)
    assert cost < 2.0, cost


def test_every_default_request_fits_its_split(model, real_corpus):
    from interp.data.corpus import load_texts
    from interp.data.windows import require_text
    from interp.lenses.evaluation import LensEvalConfig
    from interp.lenses.training import TunedLensTrainConfig
    from saes.features.steering import FeatureVectorConfig
    from saes.results import BrowserConfig, SAEEvalConfig
    from saes.train import SAETrainConfig, check_text, text_windows

    train, held = load_texts("train"), load_texts("heldout")
    kw = {"what": "default", "asked": "", "reads": "", "fix": ""}
    check_text(model, train, SAETrainConfig())
    assert text_windows(SAETrainConfig()) * 128 == 2_097_152
    lens = TunedLensTrainConfig()
    require_text(model, train, need=lens.steps * lens.batch_size * lens.seq_len, **kw)
    ev = SAEEvalConfig()
    require_text(model, held, need=max(ev.n_windows, ev.n_ce_windows) * ev.seq_len, **kw)
    for cfg in (BrowserConfig(), FeatureVectorConfig(feature=0), LensEvalConfig()):
        require_text(model, held, need=cfg.n_windows * cfg.seq_len, **kw)
