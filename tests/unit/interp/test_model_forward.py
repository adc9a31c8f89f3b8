"""The direct HF pass (interp/models/forward.py) vs the bridge path: unhooked and hooked."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from interp.generation.engine import generate
from interp.models import forward as fwd_mod
from interp.models.forward import PATH_ENV, ForwardRunner, runner_for
from tests.support.forward_checks import (
    PROMPTS,
    check_routed_points,
    compare_passes,
)


@pytest.fixture
def count_direct(monkeypatch):
    """Counts the direct passes the engine takes."""
    calls = {"n": 0}
    real = ForwardRunner.direct

    def spy(self, *a, **kw):
        calls["n"] += 1
        return real(self, *a, **kw)

    monkeypatch.setattr(ForwardRunner, "direct", spy)
    return calls


def test_direct_logits_equal_bridge(tiny_model):
    compare_passes(tiny_model, atol=1e-5)


@pytest.mark.parametrize(
    "kw",
    [{"batch_size": 1}, {"batch_size": 4}, {"batch_size": 3, "use_cache": False},
     {"batch_size": 4, "deterministic": True, "verify_every": 3, "verify_batch": 4},
     {"batch_size": 4, "temperature": 0.8, "top_p": 0.9, "seed": 3, "return_logprobs": True}],
)
def test_generate_same_on_both_paths(tiny_model, monkeypatch, count_direct, kw):
    direct = generate(tiny_model, PROMPTS, max_new_tokens=10, **kw)
    assert count_direct["n"] >= direct.stats.forward_passes  # every pass went direct
    monkeypatch.setenv(PATH_ENV, "bridge")
    n = count_direct["n"]
    bridge = generate(tiny_model, PROMPTS, max_new_tokens=10, **kw)
    assert count_direct["n"] == n  # the forced bridge path took no direct pass
    assert [g.token_ids for g in direct.generations] == [g.token_ids for g in bridge.generations]
    assert direct.texts == bridge.texts
    if kw.get("return_logprobs"):
        for a, b in zip(direct.generations, bridge.generations, strict=True):
            assert a.logprobs == pytest.approx(b.logprobs, abs=1e-5)


def test_hook_registered_outside_generate_fires_on_the_direct_path(tiny_model, count_direct,
                                                                  monkeypatch):
    name = "blocks.1.hook_resid_post"
    seen = []

    def hook(t, hook):
        seen.append(t.shape[0])
        return t * 0.5  # changes the output

    plain = generate(tiny_model, PROMPTS[:3], max_new_tokens=6, batch_size=3)
    n = count_direct["n"]
    assert n >= plain.stats.forward_passes
    with tiny_model.bridge.hooks(fwd_hooks=[(name, hook)]):
        hooked = generate(tiny_model, PROMPTS[:3], max_new_tokens=6, batch_size=3)
    assert count_direct["n"] - n == hooked.stats.forward_passes  # routed: still direct
    assert len(seen) == hooked.stats.forward_passes
    assert hooked.texts != plain.texts
    monkeypatch.setenv(PATH_ENV, "bridge")
    with tiny_model.bridge.hooks(fwd_hooks=[(name, hook)]):
        assert generate(tiny_model, PROMPTS[:3], max_new_tokens=6, batch_size=3).texts == \
            hooked.texts
    monkeypatch.delenv(PATH_ENV)
    n = count_direct["n"]
    # a point the shadow cannot carry (inside the bridge's attention) takes the bridge
    pattern = []
    with tiny_model.bridge.hooks(fwd_hooks=[("blocks.0.attn.hook_pattern",
                                             lambda t, hook: pattern.append(1))]):
        generate(tiny_model, PROMPTS[:2], max_new_tokens=3, batch_size=2)
    assert pattern and count_direct["n"] == n
    # so does a plain torch hook on a bridge module
    fired = []
    handle = tiny_model.bridge.blocks[0].register_forward_hook(lambda *a: fired.append(1))
    try:
        generate(tiny_model, PROMPTS[:2], max_new_tokens=3, batch_size=2)
    finally:
        handle.remove()
    assert fired and count_direct["n"] == n
    # hooks gone: direct again
    again = generate(tiny_model, PROMPTS[:3], max_new_tokens=6, batch_size=3)
    assert again.texts == plain.texts and count_direct["n"] > n


def test_engine_hooks_are_routed(tiny_model, count_direct):
    seen = []
    generate(tiny_model, PROMPTS[:2], max_new_tokens=3,
             hooks=[("blocks.0.hook_resid_post", lambda t, hook: seen.append(1))])
    generate(tiny_model, PROMPTS[:2], max_new_tokens=3,
             row_hooks=[("blocks.0.hook_resid_post", lambda t, hook, rows: seen.append(2))])
    assert count_direct["n"] > 0 and 1 in seen and 2 in seen


def test_every_routed_point_equals_the_bridge(tiny_model):
    runner = runner_for(tiny_model.bridge)
    names = {r.point.name for r in runner.routes.values()}
    for must in ("blocks.0.hook_in", "blocks.2.hook_out", "blocks.1.attn.hook_out",
                 "blocks.1.mlp.hook_out", "blocks.1.attn.o.hook_in", "blocks.1.ln2.hook_in",
                 "ln_final.hook_in", "embed.hook_out", "unembed.hook_out",
                 "blocks.1.attn.q.hook_out", "blocks.1.mlp.out.hook_in"):
        assert must in names, must
    assert not any("rotary" in n or "hook_pattern" in n for n in names)
    assert check_routed_points(tiny_model) == len(names) > 50


def test_gradients_and_backward_hooks_equal_the_bridge(tiny_model):
    """AtP's shape: grads through a routed edit and a backward hook, on both paths."""
    runner = runner_for(tiny_model.bridge)
    ids, mask = tiny_model.tokenize(PROMPTS[:3])
    res: dict[str, dict[str, torch.Tensor]] = {}
    for tag in ("bridge", "direct"):
        kept: dict[str, torch.Tensor] = {}

        def keep(t, hook, kept=kept):
            leaf = t.detach().requires_grad_()  # AtP's leaf (the weights need no grad)
            kept["z"] = leaf
            return leaf

        def bwd(g, hook, kept=kept):
            kept["g"] = g.detach().clone()

        with tiny_model.bridge.hooks(fwd_hooks=[("blocks.1.attn.hook_z", keep)],
                                     bwd_hooks=[("blocks.2.hook_resid_pre", bwd)]):
            routes = runner.plan()
            assert routes is not None and len(routes) == 2
            if tag == "bridge":
                logits = tiny_model.bridge(ids, attention_mask=mask, return_type="logits")
            else:
                logits = runner.direct(ids, mask, use_cache=False, routes=routes)[0]
            logits[:, -1, :5].sum().backward()
        res[tag] = {"z": kept["z"].grad, "g": kept["g"]}
    for k in ("z", "g"):
        assert torch.equal(res["bridge"][k], res["direct"][k]), k


def test_tools_take_the_direct_path_with_hooks(tiny_model, count_direct, monkeypatch):
    """Capture, a steered forward and an edited forward: direct, and equal to the bridge."""
    from interp.activations.capture import capture
    from interp.steering.vectors import steer

    texts = PROMPTS[:4]
    v = torch.randn(tiny_model.d_model)

    def run() -> tuple[torch.Tensor, torch.Tensor]:
        acts = capture(tiny_model, texts, layers=[1], positions="last", with_logits=True,
                       progress=False)
        ids, mask = tiny_model.tokenize(texts)
        with steer(tiny_model, v, layer=1, alpha=4.0):
            steered = tiny_model.logits(ids, mask)
        assert acts.logits is not None
        return torch.cat([acts[1].flatten(), acts.logits.flatten()]), steered

    direct = run()
    assert count_direct["n"] >= 2
    monkeypatch.setenv(PATH_ENV, "bridge")
    n = count_direct["n"]
    bridge = run()
    assert count_direct["n"] == n
    assert torch.equal(direct[0], bridge[0]) and torch.equal(direct[1], bridge[1])


def test_fallback_rules(tiny_model, monkeypatch):
    bridge = tiny_model.bridge
    monkeypatch.setattr(fwd_mod, "DIRECT_MODEL_TYPES", frozenset())
    assert ForwardRunner(bridge).shadow is None  # unknown architecture: bridge only
    assert not ForwardRunner(bridge).direct_ok()
    monkeypatch.undo()
    runner = ForwardRunner(bridge)
    assert runner.direct_ok()
    monkeypatch.setattr(bridge, "compatibility_mode", True, raising=False)
    assert not runner.direct_ok()
    monkeypatch.undo()
    # the shadow shares the bridge's tensors, and notices when one is replaced
    assert runner.shadow is not None
    shadow_params = {id(p) for p in runner.shadow.parameters()}
    assert shadow_params <= {id(p) for p in bridge.parameters()}
    store, key, t = next(s for s in runner._shared if s[1] == "inv_freq")
    store[key] = t.clone()
    try:
        assert runner.stale() and runner.direct_ok() and not runner.stale()  # rebuilt
    finally:
        store[key] = t


def test_gemma3_direct_path(tiny_gemma3, monkeypatch, count_direct):
    assert tiny_gemma3.bridge.original_model.config.model_type == "gemma3_text"
    compare_passes(tiny_gemma3, atol=1e-5)
    assert check_routed_points(tiny_gemma3) > 50
    kw: dict[str, Any] = {"max_new_tokens": 10, "batch_size": 4}  # past the window of 4
    direct = generate(tiny_gemma3, PROMPTS, **kw)
    assert count_direct["n"] >= direct.stats.forward_passes
    monkeypatch.setenv(PATH_ENV, "bridge")
    bridge = generate(tiny_gemma3, PROMPTS, **kw)
    assert [g.token_ids for g in direct.generations] == [g.token_ids for g in bridge.generations]


@pytest.mark.parametrize("which", ["tiny_model", "tiny_gemma3"])
def test_forward_from_block_equals_the_whole_pass(which, request, monkeypatch):
    """Left-padded rows entering block b with the whole pass's residual give the whole
    pass's logits to the bit, without running blocks 0..b-1; an edited residual gives what
    the bridge gives with the same edit."""
    from interp.models.forward import can_run_from_block, forward, forward_from_block

    model = request.getfixturevalue(which)
    ids, mask = model.tokenize(PROMPTS[:4])
    assert (mask == 0).any()
    n = model.n_layers
    kept: dict[int, torch.Tensor] = {}

    def keeper(b: int):
        def keep(t, hook):  # noqa: ARG001
            kept[b] = t.detach().clone()
            return t
        return keep

    hooks = [(f"blocks.{b}.hook_resid_pre", keeper(b)) for b in range(n)]
    with torch.no_grad():
        with model.bridge.hooks(fwd_hooks=hooks):
            whole = forward(model, ids, mask)[0]
        shadow = runner_for(model.bridge).shadow
        assert shadow is not None and can_run_from_block(model)
        ran = {"n": 0}
        handle = shadow.model.layers[0].register_forward_hook(
            lambda *a: ran.__setitem__("n", ran["n"] + 1))
        try:
            for b in range(1, n):
                assert torch.equal(forward_from_block(model, kept[b], b, mask), whole), b
            assert ran["n"] == 0  # block 0 never ran
            assert torch.equal(forward_from_block(model, kept[0], 0, mask), whole)
            assert ran["n"] == 1
        finally:
            handle.remove()
        edited = kept[1] + 0.5 * torch.randn_like(kept[1])
        direct = forward_from_block(model, edited, 1, mask)
        monkeypatch.setenv(PATH_ENV, "bridge")
        assert not can_run_from_block(model)
        bridge = forward_from_block(model, edited, 1, mask)
    assert not torch.equal(direct, whole)
    assert torch.equal(direct, bridge)
    with pytest.raises(ValueError, match="outside"):
        forward_from_block(model, edited, n + 1, mask)
