"""The logit lens on the real model: " Paris" at the last layer."""

from __future__ import annotations

import torch

from interp.lenses.readout import run_lens
from tests.unit.interp.test_lens import _model_logprobs


def test_real_model_paris(model):
    prompt = "The capital of France is"
    res = run_lens(model, prompt, keep_logprobs=True).logit
    top1 = res.top1()
    assert res.layers == list(range(30))
    assert top1[29][-1] == " Paris"
    assert top1[28][-1] == " capital"  # DESIGN.md: " capital" at 28, " Paris" only at 29
    assert all(row[-1] != " Paris" for row in top1[:29])
    ref = _model_logprobs(model, prompt)
    torch.testing.assert_close(res.logprobs[-1], ref, atol=1e-4, rtol=0)
    # KL(final || layer) shrinks towards the output: late layers beat early ones
    assert float(res.kl[-2, -1]) < float(res.kl[0, -1])

