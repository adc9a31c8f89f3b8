"""The capture memory guard: its estimate matches what capture holds, and it refuses early."""

from __future__ import annotations

import pytest
import torch

import interp
from interp.activations.capture import estimate_capture_bytes, memory_limit_gb, resolve_hooks
from interp.errors import InterpError

PROMPTS = ["hello there", "once upon a time there was a model", "water boils"]


@pytest.mark.parametrize("positions", ["all", "last"])
def test_estimate_is_twice_the_result(tiny_model, positions):
    names = resolve_hooks(tiny_model, None, "all")
    acts = interp.capture(tiny_model, PROMPTS, layers="all", positions=positions,
                          progress=False)
    held = sum(acts[n].numel() * acts[n].element_size() for n in names)
    est = estimate_capture_bytes(tiny_model, PROMPTS, names, positions, torch.float32)
    assert est == 2 * held


def test_refuses_before_running(tiny_model, monkeypatch):
    calls = []
    monkeypatch.setattr(tiny_model.bridge, "forward", lambda *a, **k: calls.append(1))
    with pytest.raises(InterpError, match="over the .* limit"):
        interp.capture(tiny_model, PROMPTS, layers="all", positions="all",
                       max_memory_gb=1e-9, progress=False)
    assert not calls


def test_limit_from_environment(monkeypatch):
    monkeypatch.setenv("INTERP_MAX_MEMORY_GB", "3.5")
    assert memory_limit_gb() == 3.5
    assert memory_limit_gb(1.0) == 1.0
    monkeypatch.setenv("INTERP_MAX_MEMORY_GB", "lots")
    with pytest.raises(InterpError, match="INTERP_MAX_MEMORY_GB"):
        memory_limit_gb()
    monkeypatch.delenv("INTERP_MAX_MEMORY_GB")
    assert memory_limit_gb() > 0.1
