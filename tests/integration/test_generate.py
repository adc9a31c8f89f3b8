"""interp.generate on the real model: Paris, KV cache and batching, the verifier's determinism."""

from __future__ import annotations

import pytest

from interp.generation.engine import generate
from tests.unit.interp.test_generate import prompts64


def test_real_model_answers_paris(model):
    res = generate(model, ["The capital of France is", "What is the capital of France?"],
                   max_new_tokens=8, batch_size=2)
    assert res.generations[0].text.startswith(" Paris")
    chat = generate(model, ["What is the capital of France?"], chat=True, max_new_tokens=16)
    assert chat.texts[0] == "The capital of France is Paris."
    assert chat.generations[0].stop_reason == "eos"


def test_real_model_cache_batching_and_determinism(model):
    prompts = prompts64()[:24]
    kw = {"max_new_tokens": 6}
    one = generate(model, prompts, batch_size=1, **kw)
    batched = generate(model, prompts, batch_size=8, **kw)
    nocache = generate(model, prompts[:6], batch_size=6, use_cache=False, **kw)
    assert nocache.texts == batched.texts[:6]
    diverged = sum(a != b for a, b in zip(one.texts, batched.texts, strict=True))
    print(f"plain batching diverged on {diverged}/{len(prompts)} prompts on this CPU")
    det7 = generate(model, prompts, batch_size=7, deterministic=True, verify_every=3,
                    inject_batch_noise=0.05, **kw)
    det1 = generate(model, prompts, batch_size=1, deterministic=True, verify_every=3,
                    inject_batch_noise=0.05, **kw)
    assert det7.texts == det1.texts


@pytest.mark.parametrize("verify_every, n_prompts", [(1, 6), (16, 16)])
def test_real_model_verifier_batch1_equals_batch7(model, verify_every, n_prompts):
    """The real model under the injected fault: batch 1 and batch 7 give byte-identical
    outputs (× 32 new tokens; verify_batch 8 keeps batch 1 short: 7 of 8 rows are
    dummies there)."""
    prompts = prompts64()[:n_prompts]
    kw = {"max_new_tokens": 32, "inject_batch_noise": 0.05, "deterministic": True,
          "verify_every": verify_every, "verify_batch": 8}
    det1 = generate(model, prompts, batch_size=1, **kw)
    det7 = generate(model, prompts, batch_size=7, **kw)
    assert [g.token_ids for g in det1.generations] == [g.token_ids for g in det7.generations]

