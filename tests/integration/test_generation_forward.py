"""The engine's direct HF pass gives the bridge path's texts on the real model."""

from __future__ import annotations

from typing import Any

from interp.generation.engine import generate
from interp.generation.forward import PATH_ENV
from tests.unit.interp.test_generation_forward import (
    PROMPTS,
    _compare_passes,
)


def test_real_model_direct_path_same_texts(model, monkeypatch, count_direct):
    _compare_passes(model, atol=1e-4)
    prompts = PROMPTS[:5]
    kw: dict[str, Any] = {"max_new_tokens": 12}
    one = generate(model, prompts, batch_size=1, **kw)
    bat = generate(model, prompts, batch_size=5, **kw)
    assert count_direct["n"] >= one.stats.forward_passes + bat.stats.forward_passes
    monkeypatch.setenv(PATH_ENV, "bridge")
    assert one.texts == generate(model, prompts, batch_size=1, **kw).texts
    assert bat.texts == generate(model, prompts, batch_size=5, **kw).texts

