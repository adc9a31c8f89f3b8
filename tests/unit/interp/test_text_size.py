"""How much text a document list holds (issue 28): the estimate, and the refusal of a
request beyond it before any work."""

from __future__ import annotations

import pytest

from interp.data.windows import _doc_order, estimate_tokens, pack_windows, require_text
from interp.errors import InterpError
from tests.support.text_fixtures import paragraphs


def _stream(model, docs: list[str]) -> list[int]:  # noqa: ANN001
    """One epoch of the packed stream, as the windows read it (seed 0)."""
    sep = [int(model.tokenizer.eos_token_id)]
    out: list[int] = []
    for i in _doc_order(len(docs), 0, 0):
        out += model.encode(docs[i]) + sep
    return out


def _mixed(n: int) -> list[str]:
    """Documents of very different lengths: prose of 20–40 words and runs of digits (the
    tiny tokenizer splits digits one by one, so tokens per character differ by kind)."""
    docs = paragraphs(n)
    return [d if i % 5 else d + " " + "1234567890" * (i % 7) for i, d in enumerate(docs)]


def test_exact_when_every_document_is_tokenised(tiny_model):
    docs = _mixed(40)
    size = estimate_tokens(tiny_model, docs)  # 40 < the sample: all of them
    stream = _stream(tiny_model, docs)
    assert size.exact and size.sampled == size.documents == 40
    assert size.tokens == len(stream)
    # the windows of exactly that much text are the first epoch, not a restart
    n = len(stream) // 16
    windows = pack_windows(tiny_model, docs, seq_len=16, n_windows=n, seed=0)
    assert windows.flatten().tolist() == stream[: n * 16]
    assert "counted over all 40 documents" in size.describe()


def test_estimate_from_a_sample_is_within_a_few_percent(tiny_model):
    docs = _mixed(2000)
    exact = len(_stream(tiny_model, docs))
    size = estimate_tokens(tiny_model, docs, sample=256)
    assert not size.exact and size.sampled == 256 and size.documents == 2000
    assert abs(size.tokens - exact) / exact < 0.03, (size.tokens, exact)
    assert "estimated from 256 of 2,000 documents" in size.describe()
    # blank documents count for nothing, as in the stream
    assert estimate_tokens(tiny_model, [*docs[:10], "  ", ""]).tokens == len(
        _stream(tiny_model, docs[:10]))


def test_require_text_decides_near_the_edge_on_the_exact_count(tiny_model):
    docs = paragraphs(400)
    exact = estimate_tokens(tiny_model, docs, sample=len(docs)).tokens
    kw = {"what": "the work", "asked": "tokens=N", "reads": "W windows", "fix": "lower tokens"}
    assert require_text(tiny_model, docs, need=exact, **kw).exact  # all of it: fits
    with pytest.raises(InterpError) as exc:
        require_text(tiny_model, docs, need=exact + 1, **kw)
    msg = str(exc.value)
    assert "\n" not in msg
    assert msg == (f"the work asks for tokens=N (W windows: {exact + 1:,} text tokens) but the "
                   f"text holds {exact:,} tokens (counted over all 400 documents); lower tokens")
    with pytest.raises(InterpError, match=r"about .* \(estimated from 256 of 400 documents\)"):
        require_text(tiny_model, docs, need=10 * exact, **kw)
    with pytest.raises(InterpError, match="no text"):
        require_text(tiny_model, [" "], need=1, **kw)


def test_each_library_consumer_refuses_beyond_the_text(tiny_model, tmp_path):
    """Every consumer compares the windows it reads (× seq_len) with the text, before the
    model runs; a request that fits still runs."""
    from interp.lenses.evaluation import evaluate_lenses
    from interp.lenses.logit import LogitLens
    from interp.lenses.training import TunedLensTrainConfig, train_tuned_lens
    from saes.features.browser import collect_browser_data
    from saes.features.steering import FeatureVectorConfig, feature_vector
    from saes.metrics import evaluate_sae
    from saes.results import BrowserConfig
    from saes.sae import SAEConfig, SparseAutoencoder
    from saes.train import SAETrainConfig, check_text, text_windows, train_sae

    docs = paragraphs(12)
    held = estimate_tokens(tiny_model, docs).tokens  # exact: 12 documents
    sae = SparseAutoencoder(SAEConfig(d_in=tiny_model.d_model, d_sae=16,
                                      hook_point=tiny_model.resid_hook(1), layer=1,
                                      model_id=tiny_model.model_id))
    fits = (held // 16) * 16  # tokens of whole 16-token windows inside the text
    with pytest.raises(InterpError, match=r"^SAE evaluation asks for tokens=.*; lower tokens"):
        evaluate_sae(tiny_model, sae, docs, tokens=held, ce_tokens=0, seq_len=16)
    assert evaluate_sae(tiny_model, sae, docs, tokens=fits // 16 * 15, ce_tokens=0,
                        seq_len=16, n_bootstrap=10).n_tokens == fits // 16 * 15
    with pytest.raises(InterpError, match="^the feature browser asks for tokens="):
        collect_browser_data(tiny_model, sae, docs, BrowserConfig(tokens=held + 1, seq_len=16))
    assert collect_browser_data(tiny_model, sae, docs,
                                BrowserConfig(tokens=fits, seq_len=16)).n_windows == fits // 16
    with pytest.raises(InterpError, match="^a feature's steering scale asks for tokens="):
        feature_vector(tiny_model, sae, docs, FeatureVectorConfig(feature=0, tokens=held,
                                                                  seq_len=16))
    with pytest.raises(InterpError, match="^lens evaluation asks for tokens="):
        evaluate_lenses(tiny_model, {"logit": LogitLens(tiny_model)}, docs,
                        tokens=held + 1, seq_len=16)
    out = tmp_path / "lens"
    with pytest.raises(InterpError, match="^tuned-lens training asks for tokens="):
        train_tuned_lens(tiny_model, docs, out, TunedLensTrainConfig(tokens=held + 1,
                                                                     seq_len=16, batch_size=1))
    assert not out.exists()
    # SAE training reads whole chunks: 1 chunk of 4 windows of 16 tokens (60 activations)
    cfg = SAETrainConfig(layer=1, d_sae=16, tokens=60, batch_size=60, seq_len=16,
                         windows_per_chunk=4)
    assert text_windows(cfg) == 4
    check_text(tiny_model, docs, cfg)
    big = SAETrainConfig(layer=1, d_sae=16, tokens=held, batch_size=60, seq_len=16,
                         windows_per_chunk=4)
    with pytest.raises(InterpError, match=r"^SAE training asks for tokens=.* chunks of "
                                          r"windows_per_chunk=4 windows of seq_len=16"):
        train_sae(tiny_model, docs, tmp_path / "sae", big)
    assert not (tmp_path / "sae").exists()
