"""The direct HF pass on the real models: the bridge path's logits and texts, with and
without hooks, for a sample of every kind of routed hook point."""

from __future__ import annotations

from typing import Any

import torch

from interp.generation.engine import generate
from interp.models.forward import PATH_ENV, runner_for
from interp.steering.vectors import steer
from tests.support.forward_checks import PROMPTS, check_routed_points, compare_passes


def _sample(model) -> list[str]:
    """Every routed point of the first, a middle and the last block, and those outside
    the blocks: each kind of point, ~80 names (all ~730 take minutes on SmolLM2)."""
    names = sorted(r.point.name for r in runner_for(model.bridge).routes.values())
    n = model.n_layers
    keep = {f"blocks.{i}." for i in (0, n // 2, n - 1)}
    return [x for x in names if not x.startswith("blocks.") or any(x.startswith(k) for k in keep)]


def test_real_model_direct_path_same_texts(model, monkeypatch, count_direct):
    compare_passes(model, atol=1e-4)
    prompts = PROMPTS[:5]
    kw: dict[str, Any] = {"max_new_tokens": 12}
    one = generate(model, prompts, batch_size=1, **kw)
    bat = generate(model, prompts, batch_size=5, **kw)
    assert count_direct["n"] >= one.stats.forward_passes + bat.stats.forward_passes
    monkeypatch.setenv(PATH_ENV, "bridge")
    assert one.texts == generate(model, prompts, batch_size=1, **kw).texts
    assert bat.texts == generate(model, prompts, batch_size=5, **kw).texts


def test_real_model_routed_points_equal_the_bridge(model):
    sample = _sample(model)
    kinds = {x.split(".", 2)[-1] for x in sample if x.startswith("blocks.0.")}
    assert {"hook_in", "hook_out", "attn.hook_out", "attn.o.hook_in", "mlp.hook_out",
            "ln2.hook_in", "mlp.out.hook_in"} <= kinds
    assert check_routed_points(model, sample) > 60


def test_real_model_steered_generation_direct_and_equal(model, monkeypatch, count_direct):
    """A steered generation routes its hook (no bridge pass) and matches the bridge's."""
    v = torch.randn(model.d_model, generator=torch.Generator().manual_seed(0))
    v = v / v.norm() * 8.0
    prompts = ["I think that", "The weather today"]
    with steer(model, v, layer=6, alpha=4.0):
        steered = generate(model, prompts, max_new_tokens=10, batch_size=2)
    assert count_direct["n"] >= steered.stats.forward_passes
    plain = generate(model, prompts, max_new_tokens=10, batch_size=2)
    assert steered.texts != plain.texts  # the steering acted
    monkeypatch.setenv(PATH_ENV, "bridge")
    with steer(model, v, layer=6, alpha=4.0):
        assert generate(model, prompts, max_new_tokens=10, batch_size=2).texts == steered.texts


def test_gemma_routed_points_equal_the_bridge(gemma):
    assert check_routed_points(gemma, _sample(gemma)) > 60
