"""Synthetic paragraphs for training-loop tests (tuned lens, SAEs) on the tiny model."""

from __future__ import annotations

import random

WORDS = (
    "the a model layer token river mountain paris rome water fire reads writes learns "
    "quickly slowly under over between small large red blue seven twelve because while"
).split()


def paragraphs(n: int, seed: int = 0) -> list[str]:
    """``n`` paragraphs of 20–40 words drawn from :data:`WORDS`, seeded."""
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 40))).capitalize() + "."
            for _ in range(n)]
