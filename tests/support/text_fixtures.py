"""Synthetic text for tests on the tiny model: the text its tokenizer is trained on, and
paragraphs for training-loop tests (tuned lens, SAEs)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

#: The text the tiny model's tokenizer is trained on (``tests/conftest.py``).
TINY_TEXT = (
    "The capital of France is Paris. The capital of Italy is Rome. "
    "Water boils at 100 degrees. The quick brown fox jumps over the lazy dog. "
    "Once upon a time there was a small model that learned to read and write. "
    "Numbers like 12345 and 678 are split into digits. "
) * 4

WORDS = (
    "the a model layer token river mountain paris rome water fire reads writes learns "
    "quickly slowly under over between small large red blue seven twelve because while"
).split()


def paragraphs(n: int, seed: int = 0) -> list[str]:
    """``n`` paragraphs of 20–40 words drawn from :data:`WORDS`, seeded."""
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 40))).capitalize() + "."
            for _ in range(n)]


def text_file_fixture(n: int, seed: int = 0) -> Any:
    """A module-scoped ``text_file`` fixture: :func:`paragraphs` ``(n, seed)`` in a .txt file,
    blank lines between them (``text_file = text_file_fixture(400, seed=1)`` in a module)."""
    import pytest

    @pytest.fixture(scope="module", name="text_file")
    def text_file(tmp_path_factory: Any) -> Path:
        p = tmp_path_factory.mktemp("text") / "text.txt"
        p.write_text("\n\n".join(paragraphs(n, seed=seed)))
        return p

    return text_file
