"""Attribution patching: AtP and AtP*, first-order estimates of exact patching.

**AtP** (Nanda 2023; Kramár et al. 2024): the effect of patching component ``c`` is
estimated as ``(a_src - a_base) · dLD/da`` with the gradient taken at the base run
(the corrupted run when denoising). One forward of the source run, one forward and
one backward of the base run, for every component of the family at once.

**AtP*** (Kramár et al. 2024, the *QK fix*; their GradDrop is not implemented) is
for the ``heads`` family. A head's output ``z = A(q, k) v`` changes through its values,
its queries and its keys. The value path stays linear (``dLD/dz · A Δv``). The query and
key paths do not linearise the attention softmax, which is where AtP misses effects of
saturated heads: the softmax is recomputed with the source queries (for each query
position) or the source key (for each key position, one at a time, in closed form), and
the exact change of the pattern ``ΔA`` is multiplied by ``dLD/dA``. The three paths are
summed per head (or per position: queries by query position, keys and values by key
position).

Both return the estimated change of the raw logit difference, ``[pairs, components]``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from jaxtyping import Float
from torch import Tensor

from interp.circuits.patching import (
    Component,
    HookFn,
    family_hook,
    ld_direction,
    run_ld,
)
from interp.circuits.tasks import TokenizedTask
from interp.errors import InterpError
from interp.models import heads
from interp.models.loading import Model
from interp.runs.progress import make_progress


def _adder(delta: Tensor, store: dict[str, Tensor], name: str) -> HookFn:
    def hook(t: Tensor, hook) -> Tensor:  # noqa: ARG001 (TL hook signature)
        store[name] = t.detach()
        return t + delta.to(t.dtype)

    return hook


def _gradients(
    model: Model,
    tt: TokenizedTask,
    sl: slice,
    ids: Tensor,
    names: Sequence[str],
    shapes: dict[str, tuple[int, ...]],
    capture: Sequence[str] = (),
) -> tuple[dict[str, Tensor], dict[str, Tensor], Tensor]:
    """Activations at ``names`` on ``ids`` and the gradient of the summed LD w.r.t. them.

    The activations at ``capture`` (no gradient wanted) come back among the first.
    """
    deltas = {n: torch.zeros(shapes[n], device=ids.device, requires_grad=True) for n in names}
    acts: dict[str, Tensor] = {}
    hooks = [(n, _adder(deltas[n], acts, n)) for n in names]
    d = ld_direction(model, tt.answer[sl], tt.wrong[sl])
    with torch.enable_grad():
        ld, captured = run_ld(model, ids[sl], tt.attention_mask[sl], d, hooks, capture)
        grads = torch.autograd.grad(ld.sum(), [deltas[n] for n in names], allow_unused=True)
    acts |= captured
    out = {}
    for n, g in zip(names, grads, strict=True):
        out[n] = torch.zeros_like(deltas[n]) if g is None else g.detach()
    return acts, out, ld.detach()


def _reduce(
    family: str,
    per_token: Float[Tensor, "b width ..."],
    comps: Sequence[Component],
    layer_of: dict[int, int],
    tt: TokenizedTask,
    sl: slice,
) -> Tensor:
    """Token-level scores ``[b, layer, width(, H)]`` → component scores ``[b, comps]``."""
    pos_mask = tt.position_mask[sl].to(per_token.dtype)  # [b, P, width]
    att = tt.attention_mask[sl].to(per_token.dtype)  # [b, width]
    b = per_token.shape[0]
    out = torch.empty(b, len(comps), dtype=per_token.dtype, device=per_token.device)
    for j, c in enumerate(comps):
        x = per_token[:, layer_of[c.layer]]
        if family == "heads":
            x = x[..., c.head]
        w = pos_mask[:, c.position] if c.position >= 0 else att
        out[:, j] = (x * w).sum(-1)
    return out


def atp(
    model: Model,
    tt: TokenizedTask,
    family: str,
    comps: Sequence[Component],
    *,
    direction: str = "denoise",
    batch_size: int = 16,
    progress: bool | None = None,
) -> Float[Tensor, "pairs components"]:
    """AtP estimate of the change in raw logit difference for each (pair, component)."""
    base_ids, src_ids = tt.runs(direction)
    layers = sorted({c.layer for c in comps})
    names = [family_hook(family, layer) for layer in layers]
    layer_of = {layer: i for i, layer in enumerate(layers)}
    out = []
    with make_progress(enabled=progress) as bar:
        task = bar.add_task(f"AtP {family}", total=len(tt), info="")
        for s in range(0, len(tt), batch_size):
            sl = slice(s, s + batch_size)
            with torch.no_grad():
                d = ld_direction(model, tt.answer[sl], tt.wrong[sl])
                _, src = run_ld(model, src_ids[sl], tt.attention_mask[sl], d, capture=names)
            shapes = {n: tuple(src[n].shape) for n in names}
            base, grads, _ = _gradients(model, tt, sl, base_ids, names, shapes)
            per_layer = []
            for n in names:
                prod = (src[n].float() - base[n].float()) * grads[n].float()
                per_layer.append(prod.sum(-1))  # [b, width] or [b, width, H]
            per_token = torch.stack(per_layer, 1)
            out.append(_reduce(family, per_token, comps, layer_of, tt, sl).cpu())
            bar.advance(task, per_token.shape[0])
    return torch.cat(out)


def key_path(
    grad_pattern: Float[Tensor, "b h q k"],
    pattern: Float[Tensor, "b h q k"],
    delta: Float[Tensor, "b h q k"],
    allowed: Tensor,
) -> Float[Tensor, "b h q k"]:
    """``dLD/dA · ΔA`` when only key ``k``'s score at query ``q`` moves by ``delta[q, k]``.

    The softmax is recomputed in closed form, one key at a time: with ``g = e^δ - 1``
    and ``Z = 1 + A_k g``, the new pattern is ``A / Z`` off key ``k`` and ``A_k e^δ / Z``
    on it, so the change dotted with the gradient is
    ``(1/Z - 1) Σ_j G_j A_j + G_k A_k g / Z``.
    """
    ga_dot = (grad_pattern * pattern).sum(-1, keepdim=True)
    grow = torch.expm1(delta)
    z = 1.0 + pattern * grow
    out = (1.0 / z - 1.0) * ga_dot + grad_pattern * pattern * grow / z
    return torch.where(allowed, out, torch.zeros_like(out))


def atp_star(
    model: Model,
    tt: TokenizedTask,
    comps: Sequence[Component],
    *,
    direction: str = "denoise",
    batch_size: int = 16,
    progress: bool | None = None,
) -> Float[Tensor, "pairs components"]:
    """AtP* (QK fix) estimate for the ``heads`` family, per (pair, component)."""
    if any(c.head < 0 for c in comps):
        raise InterpError("atp-star applies to the heads family only (it fixes a head's softmax)")
    base_ids, src_ids = tt.runs(direction)
    cfg = model.bridge.cfg
    n_heads = int(cfg.n_heads)
    layers = sorted({c.layer for c in comps})
    layer_of = {layer: i for i, layer in enumerate(layers)}

    def qkv(layer: int) -> list[str]:
        return [*heads.qk_names(model, layer), f"blocks.{layer}.attn.hook_v"]

    cap = [n for layer in layers for n in qkv(layer)]
    z_names = [f"blocks.{layer}.attn.hook_z" for layer in layers]
    a_names = [f"blocks.{layer}.attn.hook_pattern" for layer in layers]
    out = []
    with make_progress(enabled=progress) as bar:
        task = bar.add_task("AtP* heads", total=len(tt), info="")
        for s in range(0, len(tt), batch_size):
            sl = slice(s, s + batch_size)
            mask = tt.attention_mask[sl]
            b, width = mask.shape
            with torch.no_grad():
                d = ld_direction(model, tt.answer[sl], tt.wrong[sl])
                _, src = run_ld(model, src_ids[sl], mask, d, capture=cap)
            shapes = {n: (b, width, n_heads, int(cfg.d_head)) for n in z_names}
            shapes |= {n: (b, n_heads, width, width) for n in a_names}
            # The base run's q, k, v are captured alongside the gradient hooks.
            acts, grads, _ = _gradients(model, tt, sl, base_ids, [*z_names, *a_names], shapes,
                                        capture=cap)
            g = {n: gr.double() for n, gr in grads.items()}
            base = {n: acts[n].double() for n in cap}
            srcd = {n: src[n].double() for n in cap}
            per_layer_head = []
            for layer in layers:
                ok = heads.allowed(model, layer, mask)  # [b, 1, q, k]
                vn = f"blocks.{layer}.attn.hook_v"
                q0, k0 = heads.queries_keys(model, layer, base)
                q1, k1 = heads.queries_keys(model, layer, srcd)
                rep = n_heads // base[vn].shape[2]
                v0, v1 = (x[vn].repeat_interleave(rep, dim=2) for x in (base, srcd))
                s00 = heads.scores(model, layer, q0, k0)
                a0 = heads.pattern(s00, ok)
                seen = acts[f"blocks.{layer}.attn.hook_pattern"].double()
                real_rows = mask[:, None, :, None]  # padding queries attend anywhere
                if ((a0 - seen) * real_rows).abs().max() > 1e-3:
                    raise InterpError(
                        f"AtP*: cannot reproduce layer {layer}'s attention pattern from its "
                        "queries and keys"
                    )
                g_a = g[f"blocks.{layer}.attn.hook_pattern"]  # [b, h, q, k]
                g_z = g[f"blocks.{layer}.attn.hook_z"]  # [b, q, h, d]
                # Value path, by key position.
                value = torch.einsum("bqhd,bhqk,bkhd->bkh", g_z, a0, v1 - v0)
                # Query path: source queries against base keys, by query position.
                a_q = heads.pattern(heads.scores(model, layer, q1, k0), ok)
                query = ((a_q - a0) * g_a).sum(-1).transpose(1, 2)  # [b, q, h]
                # Key path: one source key at a time, closed form of the softmax change
                # (of the scores the softmax reads: after the softcap).
                s01 = heads.scores(model, layer, q0, k1)
                delta = torch.where(ok, s01 - s00, torch.zeros_like(s00))
                key = key_path(g_a, a0, delta, ok).sum(2).transpose(1, 2)  # [b, k, h]
                per_layer_head.append((value, query, key))
            res = torch.empty(b, len(comps), dtype=torch.float64)
            att = mask.double()
            pos_mask = tt.position_mask[sl].double()
            for j, c in enumerate(comps):
                value, query, key = per_layer_head[layer_of[c.layer]]
                w = pos_mask[:, c.position] if c.position >= 0 else att
                tot = value[..., c.head] + query[..., c.head] + key[..., c.head]
                res[:, j] = (tot * w).sum(-1)
            out.append(res.float().cpu())
            bar.advance(task, b)
    return torch.cat(out)
