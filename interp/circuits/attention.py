"""Attention patterns of one prompt at one layer: :func:`~interp.circuits.attention.run_attention`.

One no-grad forward pass of the prompt (raw, or wrapped in the chat template) reads
TransformerLens' ``blocks.{L}.attn.hook_pattern`` (``[batch, heads, query, key]``, the
softmax of the attention scores: every query row sums to 1 and is zero above the
diagonal, the model being causal) and keeps the asked heads as an
:class:`~interp.circuits.results.AttentionResult` (``patterns[head, query, key]``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from interp.activations.capture import forward_with_hooks
from interp.circuits.results import AttentionConfig, AttentionResult
from interp.errors import InterpError
from interp.runs.manifest import model_manifest

if TYPE_CHECKING:
    from interp.models.loading import Model

__all__ = ["check_heads", "pattern_hook", "run_attention"]


def pattern_hook(layer: int) -> str:
    """TransformerLens hook name of layer ``layer``'s attention pattern."""
    return f"blocks.{layer}.attn.hook_pattern"


def check_heads(heads: Sequence[int] | None, n_heads: int) -> list[int]:
    """The heads to read: every head for ``None``, else each checked (negative counts
    from the end) and kept once, in the order given."""
    if heads is None:
        return list(range(n_heads))
    given: Sequence[object] = [heads] if isinstance(heads, int | str) else heads
    out: list[int] = []
    for h in given:
        if not isinstance(h, int) or isinstance(h, bool):
            raise InterpError(f"head must be an integer, got {h!r}")
        if h < -n_heads or h >= n_heads:
            raise InterpError(
                f"head {h} out of range: the layer has {n_heads} heads (0–{n_heads - 1})")
        if h % n_heads not in out:
            out.append(h % n_heads)
    if not out:
        raise InterpError("no head given: pass at least one head, or none for all heads")
    return out


def run_attention(model: Model, cfg: AttentionConfig | None = None, **settings: Any
                  ) -> AttentionResult:
    """The attention patterns of ``cfg.prompt`` at ``cfg.layer`` (negative counts from the
    end) for ``cfg.heads`` (``None``: every head), as float32 on the CPU, with the run's
    manifest. Settings come from ``cfg`` or from keywords named as its fields
    (``run_attention(model, prompt="…", layer=3)``)."""
    cfg = AttentionConfig.resolve(cfg, settings)
    prompt = cfg.prompt
    if not isinstance(prompt, str) or not prompt.strip():
        raise InterpError("empty prompt: give at least one non-blank character")
    layer = model.check_layer(cfg.layer)
    heads = check_heads(cfg.heads, int(model.bridge.cfg.n_heads))
    ids, mask = model.tokenize([prompt], chat=cfg.chat)
    name = pattern_hook(layer)
    acts, _ = forward_with_hooks(model, ids, mask, [name])
    pattern = acts[name]
    if pattern.ndim != 4 or pattern.shape[-1] != pattern.shape[-2]:
        raise InterpError(f"{name} has shape {tuple(pattern.shape)}, expected "
                          "[batch, heads, query, key]")
    patterns = pattern[0, heads].float().cpu().contiguous()
    manifest = model_manifest(model, seed=cfg.seed, config=cfg.to_dict(), texts=[prompt])
    return AttentionResult(config=cfg, tokens=model.token_strs(ids[0]), layer=layer,
                           heads=heads, patterns=patterns, model_id=model.model_id,
                           manifest=manifest)
