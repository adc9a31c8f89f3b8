"""The engine's direct HF pass (interp/generation/forward.py) vs the bridge path."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from interp.generation import forward as fwd_mod
from interp.generation.engine import generate
from interp.generation.forward import PATH_ENV, ForwardRunner, runner_for

PROMPTS = [
    "The capital of France is", "Once upon a time", "Water boils at",
    "Numbers like 12345 and", "The quick brown fox", "hello",
]


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


def _bridge_pass(model, ids, mask, cache=None, use_cache=True):
    with torch.no_grad():
        if not use_cache:
            return model.bridge(ids, attention_mask=mask, return_type="logits"), None
        return model.bridge(ids, attention_mask=mask, past_key_values=cache,
                            return_type="logits_and_cache", use_cache=True)


def _compare_passes(model, atol: float) -> None:
    """Left-padded prefill, cached decode steps with a masked-out slot, and a
    right-padded use_cache=False pass: direct logits equal the bridge's."""
    runner = runner_for(model.bridge)
    assert runner.shadow is not None and runner.direct_ok()
    ids, mask = model.tokenize(PROMPTS[:4])
    assert (mask == 0).any()  # left padding present
    lb, cb = _bridge_pass(model, ids, mask)
    ld, cd = runner.direct(ids, mask)
    real = mask.bool()
    torch.testing.assert_close(ld[real], lb[real], atol=atol, rtol=0)
    for step in range(3):
        nxt = lb[:, -1].argmax(-1, keepdim=True)
        mask = torch.cat([mask, torch.ones_like(nxt)], 1)
        if step == 1:
            mask[0, -1] = 0  # the engine masks out a slot fed with a pad
        lb, cb = _bridge_pass(model, nxt, mask, cb)
        ld, cd = runner.direct(nxt, mask, cd)
        torch.testing.assert_close(ld, lb, atol=atol, rtol=0)
    # the cache supports the engine's row selection on both paths
    assert cb is not None and cd is not None
    sel = torch.tensor([0, 2])
    cb.batch_select_indices(sel)
    cd.batch_select_indices(sel)
    nxt = lb[sel, -1].argmax(-1, keepdim=True)
    mask = torch.cat([mask[sel], torch.ones_like(nxt)], 1)
    torch.testing.assert_close(runner.direct(nxt, mask, cd)[0], _bridge_pass(
        model, nxt, mask, cb)[0], atol=atol, rtol=0)
    # a cache the caller built (the verifier's) is decided when it first comes in
    from transformers import DynamicCache

    mine, theirs = DynamicCache(), DynamicCache()
    assert runner.take_direct(mine, use_cache=True, engine_hooks=False)
    ids, mask = model.tokenize(PROMPTS[1:4])
    ld = runner.direct(ids, mask, mine)[0]
    lb, theirs = _bridge_pass(model, ids, mask, theirs)
    runner.mark_bridge(theirs)
    torch.testing.assert_close(ld[mask.bool()], lb[mask.bool()], atol=atol, rtol=0)
    assert runner.take_direct(mine, use_cache=True, engine_hooks=False)
    assert not runner.take_direct(theirs, use_cache=True, engine_hooks=False)
    assert not runner.take_direct(None, use_cache=True, engine_hooks=True)
    # the verifier's shape: right-padded, no cache
    tok = model.tokenizer
    rows = [tok(p, add_special_tokens=False)["input_ids"] for p in PROMPTS[:3]]
    width = max(map(len, rows)) + 3
    ids = torch.full((3, width), int(tok.pad_token_id))
    mask = torch.zeros((3, width), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, : len(r)], mask[i, : len(r)] = torch.tensor(r), 1
    lb, _ = _bridge_pass(model, ids, mask, use_cache=False)
    ld, none = runner.direct(ids, mask, use_cache=False)
    assert none is None
    torch.testing.assert_close(ld[mask.bool()], lb[mask.bool()], atol=atol, rtol=0)


def test_direct_logits_equal_bridge(tiny_model):
    _compare_passes(tiny_model, atol=1e-5)


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


def test_hook_registered_outside_generate_still_fires(tiny_model, count_direct):
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
    assert count_direct["n"] == n  # no direct pass while the hook was registered
    assert len(seen) == hooked.stats.forward_passes
    assert hooked.texts != plain.texts
    # a plain torch hook on a bridge module counts as live too
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


def test_engine_hooks_take_the_bridge(tiny_model, count_direct):
    seen = []
    generate(tiny_model, PROMPTS[:2], max_new_tokens=3,
             hooks=[("blocks.0.hook_resid_post", lambda t, hook: seen.append(1))])
    generate(tiny_model, PROMPTS[:2], max_new_tokens=3,
             row_hooks=[("blocks.0.hook_resid_post", lambda t, hook, rows: seen.append(2))])
    assert count_direct["n"] == 0 and 1 in seen and 2 in seen


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


@pytest.fixture(scope="module")
def tiny_gemma3(tiny_model_dir, tmp_path_factory):
    """A tiny random Gemma-3 text model (sliding-window and global layers)."""
    from transformers import AutoTokenizer, Gemma3ForCausalLM, Gemma3TextConfig

    import interp

    out = tmp_path_factory.mktemp("tiny-gemma3")
    tok = AutoTokenizer.from_pretrained(str(tiny_model_dir))
    tok.save_pretrained(str(out))
    torch.manual_seed(0)
    cfg = Gemma3TextConfig(
        vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=3,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=256,
        sliding_window=4, layer_types=["sliding_attention", "sliding_attention", "full_attention"],
        bos_token_id=1, eos_token_id=2, pad_token_id=2,
    )
    Gemma3ForCausalLM(cfg).save_pretrained(str(out))
    return interp.load(str(out))


def test_gemma3_direct_path(tiny_gemma3, monkeypatch, count_direct):
    assert tiny_gemma3.bridge.original_model.config.model_type == "gemma3_text"
    _compare_passes(tiny_gemma3, atol=1e-5)
    kw: dict[str, Any] = {"max_new_tokens": 10, "batch_size": 4}  # past the window of 4
    direct = generate(tiny_gemma3, PROMPTS, **kw)
    assert count_direct["n"] >= direct.stats.forward_passes
    monkeypatch.setenv(PATH_ENV, "bridge")
    bridge = generate(tiny_gemma3, PROMPTS, **kw)
    assert [g.token_ids for g in direct.generations] == [g.token_ids for g in bridge.generations]
