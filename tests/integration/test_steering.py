"""A sentiment steering vector moves the real model's own judgement."""

from __future__ import annotations

import torch

from interp.steering.vectors import (
    steer,
    train_vector,
)


def test_sentiment_vector_moves_the_models_own_judgement(model):
    """The sentiment vector at layer 10 shifts the next-token " good" − " bad" gap on a
    neutral prompt: up for +α, down for −α, unchanged at α = 0.

    Measured here (base gap 3.62; α = −8, −4, +4, +8): layer 3: 2.64, 3.08, 4.08, 4.47;
    layer 6: 2.37, 3.00, 3.86, 3.75; layer 10: −0.60, 0.55, 4.70, 5.34; layer 14 (vector
    norm 22): 2.04, 0.02, 6.38, 6.15.
    """
    from interp.runs.paths import shipped_dataset
    from interp.steering.vectors import load_pairs

    pairs = load_pairs(shipped_dataset("steering/sentiment.jsonl"))
    vec = train_vector(model, pairs, 10)
    good = model.tokenizer(" good", add_special_tokens=False)["input_ids"][0]
    bad = model.tokenizer(" bad", add_special_tokens=False)["input_ids"][0]
    ids, mask = model.tokenize(["I spent the afternoon at the library, and honestly it was"])

    def gap() -> float:
        lp = torch.log_softmax(model.logits(ids, mask)[0, -1].float(), -1)
        return float(lp[good] - lp[bad])

    base = gap()
    with steer(model, vec, alpha=0.0):
        assert gap() == base
    with steer(model, vec, alpha=4.0):
        up = gap()
    with steer(model, vec, alpha=-4.0):
        down = gap()
    print(f"good-bad gap: base {base:.2f}, +4 {up:.2f}, -4 {down:.2f}")
    assert up > base + 0.5 and down < base - 0.5

