"""The shipped probe datasets' target tokens are single tokens for the real tokenizer."""

from __future__ import annotations

from tests.unit.interp.test_probe_datasets import FILES, _load

TARGET_TOKENS = [" good", " bad", " today", " yesterday"]


def test_target_tokens_are_single_tokens(model):
    used = {t for name in FILES for r in _load(name) for t in r.get("target_tokens", {}).values()}
    for s in sorted(used | set(TARGET_TOKENS)):
        ids = model.tokenizer(s, add_special_tokens=False)["input_ids"]
        assert len(ids) == 1, f"{s!r} encodes to {ids}"

