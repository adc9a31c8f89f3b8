"""Checks of the direct forward path (interp/models/forward.py) against the bridge path,
shared by the unit tests (tiny models of every family) and the integration tests (the
embedded models)."""

from __future__ import annotations

import torch

from interp.models.forward import runner_for

PROMPTS = [
    "The capital of France is", "Once upon a time", "Water boils at",
    "Numbers like 12345 and", "The quick brown fox", "hello",
]


def bridge_pass(model, ids, mask, cache=None, use_cache=True):
    with torch.no_grad():
        if not use_cache:
            return model.bridge(ids, attention_mask=mask, return_type="logits"), None
        return model.bridge(ids, attention_mask=mask, past_key_values=cache,
                            return_type="logits_and_cache", use_cache=True)


def compare_passes(model, atol: float) -> None:
    """Left-padded prefill, cached decode steps with a masked-out slot, and a
    right-padded use_cache=False pass: direct logits equal the bridge's."""
    runner = runner_for(model.bridge)
    assert runner.shadow is not None and runner.direct_ok()
    ids, mask = model.tokenize(PROMPTS[:4])
    assert (mask == 0).any()  # left padding present
    lb, cb = bridge_pass(model, ids, mask)
    ld, cd = runner.direct(ids, mask)
    real = mask.bool()
    torch.testing.assert_close(ld[real], lb[real], atol=atol, rtol=0)
    for step in range(3):
        nxt = lb[:, -1].argmax(-1, keepdim=True)
        mask = torch.cat([mask, torch.ones_like(nxt)], 1)
        if step == 1:
            mask[0, -1] = 0  # the engine masks out a slot fed with a pad
        lb, cb = bridge_pass(model, nxt, mask, cb)
        ld, cd = runner.direct(nxt, mask, cd)
        torch.testing.assert_close(ld, lb, atol=atol, rtol=0)
    # the cache supports the engine's row selection on both paths
    assert cb is not None and cd is not None
    sel = torch.tensor([0, 2])
    cb.batch_select_indices(sel)
    cd.batch_select_indices(sel)
    nxt = lb[sel, -1].argmax(-1, keepdim=True)
    mask = torch.cat([mask[sel], torch.ones_like(nxt)], 1)
    torch.testing.assert_close(runner.direct(nxt, mask, cd)[0], bridge_pass(
        model, nxt, mask, cb)[0], atol=atol, rtol=0)
    # a cache the caller built (the verifier's) is decided when it first comes in
    from transformers import DynamicCache

    mine, theirs = DynamicCache(), DynamicCache()
    assert runner.take(mine, use_cache=True) is not None
    ids, mask = model.tokenize(PROMPTS[1:4])
    ld = runner.direct(ids, mask, mine)[0]
    lb, theirs = bridge_pass(model, ids, mask, theirs)
    runner.mark_bridge(theirs)
    torch.testing.assert_close(ld[mask.bool()], lb[mask.bool()], atol=atol, rtol=0)
    assert runner.take(mine, use_cache=True) == ()
    assert runner.take(theirs, use_cache=True) is None
    # the verifier's shape: right-padded, no cache
    tok = model.tokenizer
    rows = [tok(p, add_special_tokens=False)["input_ids"] for p in PROMPTS[:3]]
    width = max(map(len, rows)) + 3
    ids = torch.full((3, width), int(tok.pad_token_id))
    mask = torch.zeros((3, width), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, : len(r)], mask[i, : len(r)] = torch.tensor(r), 1
    lb, _ = bridge_pass(model, ids, mask, use_cache=False)
    ld, none = runner.direct(ids, mask, use_cache=False)
    assert none is None
    torch.testing.assert_close(ld[mask.bool()], lb[mask.bool()], atol=atol, rtol=0)


def noise(t: torch.Tensor) -> torch.Tensor:
    """A fixed edit of an activation (same on both paths)."""
    g = torch.Generator().manual_seed(1)
    return t + 0.1 * t.float().std().to(t.dtype) * torch.randn(t.shape, generator=g).to(t.dtype)


def check_routed_points(model, names: list[str] | None = None, atol: float = 0.0) -> int:
    """Every routed hook point (or ``names``): what a hook reads, and the logits after
    it edits, equal the bridge path's to the bit (within ``atol`` where the bridge computes
    a piece itself). Returns the number checked."""
    runner = runner_for(model.bridge)
    todo = sorted(p.name for p in runner.routes) if names is None else names
    ids, mask = model.tokenize(PROMPTS[:3])
    assert (mask == 0).any()
    for name in todo:
        got: dict[str, torch.Tensor] = {}

        def read_and_edit(t, hook, tag, name=name, got=got):
            assert hook.name == name  # the very HookPoint, on both paths
            got[tag] = t.detach().clone()
            return noise(t) if t.is_floating_point() else t

        out = {}
        for tag in ("bridge", "direct"):
            with torch.no_grad(), model.bridge.hooks(
                    fwd_hooks=[(name, lambda t, hook, tag=tag: read_and_edit(t, hook, tag))]):
                routes = runner.plan()
                if tag == "bridge":
                    assert routes is not None and len(routes) == 1, name  # routable
                    out[tag] = model.bridge(ids, attention_mask=mask, return_type="logits")
                else:
                    out[tag] = runner.direct(ids, mask, use_cache=False, routes=routes)[0]
        assert set(got) == {"bridge", "direct"}, name
        assert got["bridge"].shape == got["direct"].shape, name
        for a, b in ((got["bridge"], got["direct"]), (out["bridge"], out["direct"])):
            if atol:
                torch.testing.assert_close(b, a, atol=atol, rtol=0, msg=name)
            else:
                assert torch.equal(a, b), name
    return len(todo)
