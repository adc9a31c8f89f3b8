"""The logit lens: exactness at the last layer, metric sanity, and the real model."""

from __future__ import annotations

import math

import pytest
import torch

from interp.errors import InterpError
from interp.lenses.logit import LogitLens, entropy, kl_divergence, logit_lens


def _model_logprobs(model, prompt: str) -> torch.Tensor:
    ids, mask = model.tokenize([prompt])
    return torch.log_softmax(model.logits(ids, mask)[0].float(), -1)


def test_last_layer_reproduces_model_logits_tiny(tiny_model):
    prompt = "The capital of France is"
    res = logit_lens(tiny_model, prompt, keep_logprobs=True)
    ref = _model_logprobs(tiny_model, prompt)
    torch.testing.assert_close(res.logprobs[-1], ref, atol=1e-4, rtol=0)
    assert float(res.kl[-1].abs().max()) < 1e-5
    # the lens is not the identity on earlier layers: KL > 0 there
    assert float(res.kl[0].min()) > 1e-3


def test_final_norm_gamma_is_used(tiny_model):
    """Dropping the final RMSNorm's γ changes the readout (γ was randomised)."""
    h = torch.randn(4, tiny_model.d_model)
    with_gamma = tiny_model.unembed(h)
    eps = tiny_model.bridge.cfg.eps if hasattr(tiny_model.bridge.cfg, "eps") else 1e-5
    normed = h / torch.sqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    w_u = tiny_model.bridge.original_model.lm_head.weight
    gamma = tiny_model.bridge.original_model.model.norm.weight
    torch.testing.assert_close(with_gamma, (normed * gamma) @ w_u.T, atol=1e-4, rtol=1e-4)
    assert not torch.allclose(with_gamma, normed @ w_u.T, atol=1e-2)


def test_metrics():
    p = torch.log_softmax(torch.tensor([[2.0, 1.0, 0.0]]), -1)
    q = torch.log_softmax(torch.tensor([[0.0, 1.0, 2.0]]), -1)
    assert float(kl_divergence(p, p)) == pytest.approx(0.0, abs=1e-7)
    expected = float((p.exp() * (p - q)).sum())
    assert float(kl_divergence(p, q)) == pytest.approx(expected)
    uniform = torch.log(torch.full((1, 8), 1 / 8))
    assert float(entropy(uniform)) == pytest.approx(math.log(8), rel=1e-6)


def test_result_schema(tiny_model):
    res = logit_lens(tiny_model, "Once upon a time", top_k=3, layers="0,2")
    d = res.to_dict()
    n_pos = len(d["tokens"])
    assert d["layers"] == [0, 2]
    for key in ("top1", "top1_prob", "kl", "entropy"):
        assert len(d[key]) == 2 and all(len(row) == n_pos for row in d[key])
    assert all(len(cell) == 3 for row in d["topk"] for cell in row)
    assert "".join(d["tokens"]) == "Once upon a time"
    probs = [c["prob"] for c in d["topk"][0][0]]
    assert probs == sorted(probs, reverse=True)
    df = res.to_frame()
    assert len(df) == 2 * n_pos and set(df.columns) >= {"layer", "top1", "kl", "entropy"}


def test_lens_errors(tiny_model):
    with pytest.raises(InterpError, match="empty prompt"):
        logit_lens(tiny_model, "  ")
    with pytest.raises(InterpError, match="out of range"):
        logit_lens(tiny_model, "hi", layers="9")
    with pytest.raises(InterpError, match="top-k"):
        logit_lens(tiny_model, "hi", top_k=0)


def test_lens_interface(tiny_model):
    lens = LogitLens(tiny_model)
    h = torch.randn(2, 5, tiny_model.d_model)
    lp = lens.logprobs(h, 1)
    assert lp.shape == (2, 5, tiny_model.d_vocab)
    torch.testing.assert_close(lp.exp().sum(-1), torch.ones(2, 5), atol=1e-5, rtol=0)
