"""Attention patterns on the real model: SmolLM2 has induction heads (tiny model:
tests/unit/interp/test_attention.py)."""

from __future__ import annotations

import random

import torch

from interp.circuits.attention import run_attention
from interp.circuits.results import AttentionConfig, AttentionResult


def _repeated_random_words(model, n: int = 30, seed: int = 0) -> str:
    """``n`` random single-token words (leading space, letters only), all different,
    then the same ``n`` again."""
    rng = random.Random(seed)
    words: list[str] = []
    while len(words) < n:
        i = rng.randrange(1000, 20000)
        w = model.decode_token(i)
        if (w.startswith(" ") and w[1:].isalpha() and w not in words
                and model.tokenizer(w, add_special_tokens=False).input_ids == [i]):
            words.append(w)
    return "".join(words) * 2


def induction_scores(r: AttentionResult) -> torch.Tensor:
    """Per head: the mean attention from each token that occurred once before to the token
    that followed that earlier occurrence."""
    q, k = [], []
    for i, tok in enumerate(r.tokens):
        earlier = [j for j in range(i) if r.tokens[j] == tok]
        if len(earlier) == 1 and earlier[0] + 1 < i:
            q.append(i)
            k.append(earlier[0] + 1)
    assert len(q) >= 20, r.tokens
    return r.patterns[:, torch.tensor(q), torch.tensor(k)].mean(-1)


def test_real_model_has_induction_heads(model):
    prompt = _repeated_random_words(model)
    scores = {}
    for layer in range(1, model.n_layers):
        r = run_attention(model, AttentionConfig(prompt, layer))
        for h, s in zip(r.heads, induction_scores(r).tolist(), strict=True):
            scores[(layer, h)] = s
    best = max(scores, key=lambda lh: scores[lh])
    values = torch.tensor(list(scores.values()))
    print(f"best induction head L{best[0]}H{best[1]}: {scores[best]:.3f}; median over "
          f"{len(values)} heads {values.median():.3f}, mean {values.mean():.3f}")
    assert scores[best] > 0.4
    assert float(values.median()) < 0.05  # a typical head does not do it
    # the two copies tokenize alike (the scores compare like with like)
    once = run_attention(model, AttentionConfig(prompt[: len(prompt) // 2], best[0],
                                                heads=[best[1]]))
    assert len(once.tokens) * 2 == len(r.tokens)

