"""What a layer's attention scores are made of, per family: the queries and keys the scores
read (after the rotary embedding), the scale, the softcap and the window.

Methods that recompute attention from its parts (AtP*'s QK fix) read them here, so a
family's layout is handled once: separate projections with rotary hooks (Llama, Mistral,
Qwen, Gemma, OLMo-2) give ``hook_rot_q``/``hook_rot_k``; a fused projection with rotary
(GPT-NeoX, Phi-3), whose bridge fires no rotary hooks, gives the projected ``hook_q`` and
``hook_k`` turned here by the layer's own ``cos``/``sin`` on its rotary share; learned
positions (GPT-2) give ``hook_q``/``hook_k`` as they are. :func:`pattern` applies the
family's softcap and sliding window; callers check it against the model's own
``hook_pattern``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch
from jaxtyping import Bool, Float
from torch import Tensor

from interp.models.loading import Model


def qk_names(model: Model, layer: int) -> list[str]:
    """The hook points to capture for :func:`queries_keys` at ``layer``."""
    family = model.anatomy.family
    a = f"blocks.{layer}.attn."
    if family.positions == "learned":
        return [a + "hook_q", a + "hook_k"]
    if family.fused_qkv:
        return [a + "hook_q", a + "hook_k", a + "hook_cos", a + "hook_sin"]
    return [a + "hook_rot_q", a + "hook_rot_k"]


def _rotate_half(x: Tensor) -> Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def queries_keys(
    model: Model, layer: int, acts: Mapping[str, Tensor],
) -> tuple[Float[Tensor, "batch pos head d_head"], Float[Tensor, "batch pos kv_head d_head"]]:
    """The queries and keys ``layer``'s scores are made of, from the activations of
    :func:`qk_names` (in the dtype they come in)."""
    names = qk_names(model, layer)
    q, k = acts[names[0]], acts[names[1]]
    if len(names) == 2:
        return q, k
    cos, sin = acts[names[2]][:, :, None], acts[names[3]][:, :, None]  # [b, pos, 1, rot]
    rot = cos.shape[-1]

    def turn(x: Tensor) -> Tensor:
        x_rot, x_pass = x[..., :rot], x[..., rot:]
        return torch.cat((x_rot * cos + _rotate_half(x_rot) * sin, x_pass), dim=-1)

    return turn(q), turn(k)


def scale(model: Model, layer: int) -> float:
    """The factor on ``q · k`` (the module's own ``scaling``, else ``1 / √d_head``)."""
    attn = model.bridge.blocks[layer].attn
    module = getattr(attn, "_original_component", attn)
    value = getattr(module, "scaling", None)
    if value is None:
        return 1.0 / math.sqrt(int(model.bridge.cfg.d_head))
    return float(value)


def allowed(
    model: Model, layer: int, attention_mask: Tensor,
) -> Bool[Tensor, "batch 1 query key"]:
    """Which keys each query may attend to: causal, not padding, inside the layer's window."""
    width = attention_mask.shape[1]
    q = torch.arange(width, device=attention_mask.device)
    ok = q[None, :] <= q[:, None]
    window = model.anatomy.windows[layer]
    if window is not None:
        ok = ok & (q[None, :] > q[:, None] - window)
    return ok[None, None] & attention_mask.bool()[:, None, None, :]


def scores(
    model: Model, layer: int, q: Float[Tensor, "batch pos head d_head"],
    k: Float[Tensor, "batch pos kv_head d_head"],
) -> Float[Tensor, "batch head query key"]:
    """The scores the softmax reads: ``q · k · scale`` (grouped KV heads repeated), through
    the family's softcap (Gemma-2's ``cap · tanh(s / cap)``)."""
    rep = q.shape[2] // k.shape[2]
    s = torch.einsum("bqhd,bkhd->bhqk", q, k.repeat_interleave(rep, dim=2)) * scale(model, layer)
    cap = model.anatomy.attn_softcap
    return s if cap is None else cap * torch.tanh(s / cap)


def pattern(
    s: Float[Tensor, "batch head query key"], ok: Bool[Tensor, "batch 1 query key"],
) -> Float[Tensor, "batch head query key"]:
    """The softmax of scores ``s`` over the allowed keys (a fully masked padding row gives
    zeros)."""
    a = torch.softmax(s.masked_fill(~ok, -math.inf), dim=-1)
    return torch.nan_to_num(a, nan=0.0)


__all__ = ["allowed", "pattern", "qk_names", "queries_keys", "scale", "scores"]
