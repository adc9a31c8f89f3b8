"""The local replacement model of one prompt: attention patterns and norm denominators
frozen at their values on the prompt, every MLP replaced by its transcoder plus an error
term that makes its output exact.

With those frozen, every path through the residual stream is linear: a norm is ``x·s·γ``
with the scale ``s = 1/√(mean x² + ε)`` of the prompt's own run, an attention layer is
``O·(P·V·x)`` with the prompt's pattern ``P``. What an MLP adds is the sum of its active
features' decoder rows (``a·W_dec``), the transcoder's decoder bias, its skip path (linear
in the MLP's input) and the error (the real output minus all of those). At a layer without
a transcoder, and at position 0 (the attention sink, never in a transcoder's training
data), the whole MLP output is the error.

:class:`Stack` reads the pieces of the Hugging Face model behind the bridge (Llama and
Gemma 3 text models; their attention has no bias); :func:`freeze` runs the real model once
on the prompt and keeps what is frozen; :func:`linear_forward` is the frozen linear model
with a batch of gradient rows (the attribution graph's backward passes); and
:func:`replacement_forward` runs it with the features live (recomputed by each transcoder
from its input, the error terms fixed), for interventions inside the replacement model.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import torch
from jaxtyping import Float, Int
from torch import Tensor, nn

from interp.activations.capture import forward_with_hooks
from interp.errors import InterpError
from interp.models.loading import Model
from saes.sae import SparseAutoencoder

#: Hugging Face model types whose decoder layers :class:`Stack` knows.
SUPPORTED = ("llama", "gemma3_text")


def _norm_parts(norm: nn.Module, d: int) -> tuple[Tensor, float]:
    """An RMSNorm's effective gain γ (``weight`` for Llama, ``1 + weight`` for Gemma) and ε,
    read from the module itself: ``norm(1) = γ / √(1 + ε)``."""
    eps = getattr(norm, "variance_epsilon", None)
    if eps is None:
        eps = getattr(norm, "eps", None)
    if eps is None:
        raise InterpError(f"{type(norm).__name__} is not an RMSNorm this tool knows")
    w = getattr(norm, "weight", None)
    like = w if isinstance(w, Tensor) else torch.zeros(())
    ones = torch.ones(1, d, dtype=like.dtype, device=like.device)
    with torch.no_grad():
        gamma = norm(ones)[0].float() * math.sqrt(1.0 + float(eps))
    return gamma, float(eps)


def rms_scale(x: Float[Tensor, "... d"], eps: float) -> Float[Tensor, "... 1"]:
    """``1/√(mean x² + ε)`` in float32, as the models' RMSNorms compute it."""
    x = x.float()
    return torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


@dataclass
class Block:
    """One decoder layer's frozen-linear pieces."""

    ln1: tuple[Tensor, float]            # (γ, ε) of the norm before attention
    ln2: tuple[Tensor, float]            # before the MLP
    attn_post: tuple[Tensor, float] | None  # Gemma's norm after attention
    w_v: Tensor                          # [n_kv·hd, d]
    w_o: Tensor                          # [d, n_heads·hd]
    n_heads: int
    n_kv: int
    head_dim: int


class Stack:
    """The Hugging Face decoder's weights, as the frozen linear model needs them."""

    def __init__(self, model: Model) -> None:
        hf = model.bridge.original_model
        cfg = hf.config
        self.model_type = str(getattr(cfg, "model_type", ""))
        if self.model_type not in SUPPORTED:
            raise InterpError(f"attribution graphs support {', '.join(SUPPORTED)} models, not "
                              f"{self.model_type or type(hf).__name__}")
        if getattr(cfg, "attention_bias", False):
            raise InterpError("attribution graphs need attention without biases "
                              f"({model.model_id} has attention_bias)")
        self.softcap = getattr(cfg, "final_logit_softcapping", None)
        gemma = self.model_type.startswith("gemma")
        d = model.d_model
        self.d_model = d
        self.blocks: list[Block] = []
        for layer in hf.model.layers:
            att = layer.self_attn
            n_heads = int(cfg.num_attention_heads)
            n_kv = int(cfg.num_key_value_heads)
            hd = int(getattr(att, "head_dim", d // n_heads))
            self.blocks.append(Block(
                ln1=_norm_parts(layer.input_layernorm, d),
                ln2=_norm_parts(layer.pre_feedforward_layernorm if gemma
                                else layer.post_attention_layernorm, d),
                attn_post=_norm_parts(layer.post_attention_layernorm, d) if gemma else None,
                w_v=att.v_proj.weight.detach().float(), w_o=att.o_proj.weight.detach().float(),
                n_heads=n_heads, n_kv=n_kv, head_dim=hd))
        self.final = _norm_parts(hf.model.norm, d)
        self.w_u = hf.lm_head.weight.detach().float()  # [vocab, d]
        self.n_layers = len(self.blocks)

    def attention(self, block: Block, x: Float[Tensor, "b t d"],
                  pattern: Float[Tensor, "h t t"]) -> Float[Tensor, "b t d"]:
        """``O·(P·V·x)``: attention with a fixed pattern, on the normalised input ``x``."""
        b, t, _ = x.shape
        v = (x @ block.w_v.T).view(b, t, block.n_kv, block.head_dim)
        v = v.repeat_interleave(block.n_heads // block.n_kv, dim=2)  # [b, t, h, hd]
        z = torch.einsum("hqk,bkhe->bqhe", pattern, v).reshape(b, t, -1)
        return z @ block.w_o.T


    def attention_transposed(self, block: Block, g: Float[Tensor, "b t d"],
                             pattern: Float[Tensor, "h t t"]) -> Float[Tensor, "b t d"]:
        """The transpose of :meth:`attention`'s linear map: ``Vᵀ·Pᵀ·Oᵀ·g``."""
        b, t, _ = g.shape
        gz = (g @ block.w_o).view(b, t, block.n_heads, block.head_dim)
        gv = torch.einsum("hqk,bqhe->bkhe", pattern, gz)
        gv = gv.view(b, t, block.n_kv, block.n_heads // block.n_kv, block.head_dim).sum(3)
        return gv.reshape(b, t, -1) @ block.w_v


@dataclass
class Frozen:
    """What the prompt's real run fixes (one prompt, ``T`` positions; float32)."""

    ids: Int[Tensor, " t"]
    embed: Float[Tensor, "t d"]                # what enters the residual stream
    patterns: list[Float[Tensor, "h t t"]]
    s_ln1: list[Float[Tensor, "t 1"]]
    s_ln2: list[Float[Tensor, "t 1"]]
    s_attn_post: list[Float[Tensor, "t 1"]] | None
    s_final: Float[Tensor, "t 1"]
    mlp_in: list[Float[Tensor, "t d"]]
    mlp_out: list[Float[Tensor, "t d"]]
    resid_final: Float[Tensor, "t d"]
    logits: Float[Tensor, " vocab"]           # the real model's, at the last position


def freeze(model: Model, stack: Stack, ids: Int[Tensor, " t"]) -> Frozen:
    """Run the real model on ``ids`` once and keep what the replacement model freezes."""
    n = stack.n_layers
    names = (["blocks.0.hook_resid_pre", "ln_final.hook_in"]
             + [f"blocks.{i}.{h}" for i in range(n)
                for h in ("hook_resid_pre", "hook_resid_mid", "attn.hook_pattern",
                          "mlp.hook_in", "hook_mlp_out")])
    names = list(dict.fromkeys(names))
    with torch.no_grad():
        acts, logits = forward_with_hooks(model, ids[None].to(model.device), None, names,
                                          with_logits=True)
    a = {k: v[0].float().cpu() for k, v in acts.items()}
    s_attn_post = [] if stack.blocks[0].attn_post is not None else None
    s_ln1, s_ln2 = [], []
    for i, blk in enumerate(stack.blocks):
        pre = a[f"blocks.{i}.hook_resid_pre"]
        s_ln1.append(rms_scale(pre, blk.ln1[1]))
        s_ln2.append(rms_scale(a[f"blocks.{i}.hook_resid_mid"], blk.ln2[1]))
        if s_attn_post is not None:
            assert blk.attn_post is not None
            x = pre * s_ln1[-1] * blk.ln1[0]
            raw = stack.attention(blk, x[None], a[f"blocks.{i}.attn.hook_pattern"])[0]
            s_attn_post.append(rms_scale(raw, blk.attn_post[1]))
    return Frozen(
        ids=ids.cpu(), embed=a["blocks.0.hook_resid_pre"],
        patterns=[a[f"blocks.{i}.attn.hook_pattern"] for i in range(n)],
        s_ln1=s_ln1, s_ln2=s_ln2, s_attn_post=s_attn_post,
        s_final=rms_scale(a["ln_final.hook_in"], stack.final[1]),
        mlp_in=[a[f"blocks.{i}.mlp.hook_in"] for i in range(n)],
        mlp_out=[a[f"blocks.{i}.hook_mlp_out"] for i in range(n)],
        resid_final=a["ln_final.hook_in"], logits=_last(logits))


def _last(logits: Tensor | None) -> Tensor:
    assert logits is not None  # forward_with_hooks(with_logits=True) always returns them
    return logits[0, -1].float().cpu()


def attention_block(stack: Stack, fz: Frozen, i: int, resid: Tensor) -> Tensor:
    """Layer ``i``'s attention output (after Gemma's post-attention norm), frozen."""
    blk = stack.blocks[i]
    out = stack.attention(blk, resid * fz.s_ln1[i] * blk.ln1[0], fz.patterns[i])
    if blk.attn_post is not None and fz.s_attn_post is not None:
        out = out * fz.s_attn_post[i] * blk.attn_post[0]
    return out


def mlp_input(stack: Stack, fz: Frozen, i: int, resid_mid: Tensor) -> Tensor:
    """The MLP's input at layer ``i`` from the residual stream, with the frozen scale."""
    blk = stack.blocks[i]
    return resid_mid * fz.s_ln2[i] * blk.ln2[0]


def final_normed(stack: Stack, fz: Frozen, resid: Tensor) -> Tensor:
    """The final norm with the frozen scale (what the unembedding reads)."""
    return resid * fz.s_final * stack.final[0]


def linear_forward(
    stack: Stack, fz: Frozen, transcoders: Mapping[int, SparseAutoencoder], batch: int,
    until: int,
) -> tuple[Tensor, list[Tensor], list[Tensor], Tensor | None]:
    """The frozen linear model for a batch of ``batch`` gradient rows, up to the MLP input of
    layer ``until`` (``until = n_layers``: to the final norm).

    Returns the embedding leaf ``[batch, t, d]``, each layer's MLP-output leaf (below
    ``until``; what a feature, bias or error node writes), each layer's MLP input (up to
    ``until``; what a feature reads) and the final normed residual (only when ``until`` is
    ``n_layers``). Leaves hold zeros: the model is linear, so gradients do not depend on
    the values, only on the frozen patterns and scales. A skip transcoder's skip path is in
    the graph (gradients flow through it); the MLP itself is not (features are nodes).
    """
    t, d = fz.embed.shape
    embed = torch.zeros(batch, t, d, requires_grad=True)
    resid: Tensor = embed
    writes, reads = [], []
    for i in range(min(until + 1, stack.n_layers)):
        resid = resid + attention_block(stack, fz, i, resid)
        x_in = mlp_input(stack, fz, i, resid)
        reads.append(x_in)
        if i == until:
            return embed, writes, reads, None
        w = torch.zeros(batch, t, d, requires_grad=True)
        writes.append(w)
        out: Tensor = w
        tc = transcoders.get(i)
        if tc is not None and getattr(tc, "W_skip", None) is not None:
            skip = tc.skip(x_in)  # type: ignore[operator]
            out = out + torch.cat([torch.zeros_like(skip[:, :1]), skip[:, 1:]], dim=1)
        resid = resid + out
    return embed, writes, reads, final_normed(stack, fz, resid)


def backward_sweep(
    stack: Stack, fz: Frozen, transcoders: Mapping[int, SparseAutoencoder],
    seeds: Mapping[int, list[tuple[int, int, Tensor]]], batch: int,
    on_write: Callable[[int, Tensor], None], top: int,
) -> Float[Tensor, "b t d"]:
    """Gradients of a batch of targets through the frozen linear model, computed backwards
    with the transposed maps (no forward pass: the model is linear, so the gradients do not
    depend on the values, only on the frozen patterns and scales).

    ``seeds[layer]`` holds ``(row, position, vector)``: target ``row`` reads ``vector``
    off the MLP input of ``layer`` at ``position`` (``layer = n_layers``: off the final
    normed residual). The sweep starts at layer ``top``; at each layer below it,
    ``on_write(layer, g)`` receives the gradient ``[batch, t, d]`` of every row with
    respect to what that layer's MLP writes (before the targets reading that layer's MLP
    input join). Returns the gradient with respect to the embeddings. A skip transcoder's
    skip path is part of the linear model (gradients flow through it, from position 1 on);
    the MLPs themselves are not (features are nodes).
    """
    t, d = fz.embed.shape
    g = torch.zeros(batch, t, d)
    for row, pos, vec in seeds.get(stack.n_layers, []):
        g[row, pos] += vec * fz.s_final[pos] * stack.final[0]
    for i in range(min(top, stack.n_layers - 1), -1, -1):
        blk = stack.blocks[i]
        if i < top:
            on_write(i, g)  # resid_post = resid_mid + MLP output
            tc = transcoders.get(i)
            w_skip = getattr(tc, "W_skip", None) if tc is not None else None
            if w_skip is not None:
                assert tc is not None
                ratio = tc.cfg.input_scale / float(getattr(tc.cfg, "output_scale", 1.0))
                g_in = g[:, 1:] @ (w_skip * ratio).T
                g = g.clone()
                g[:, 1:] += g_in * fz.s_ln2[i][1:] * blk.ln2[0]
        for row, pos, vec in seeds.get(i, []):
            g[row, pos] += vec * fz.s_ln2[i][pos] * blk.ln2[0]
        g_raw = g
        if blk.attn_post is not None and fz.s_attn_post is not None:
            g_raw = g * fz.s_attn_post[i] * blk.attn_post[0]
        g = g + stack.attention_transposed(blk, g_raw, fz.patterns[i]) * fz.s_ln1[i] * blk.ln1[0]
    return g


def replacement_forward(
    stack: Stack, fz: Frozen, transcoders: Mapping[int, SparseAutoencoder],
    errors: Sequence[Tensor], add: Mapping[int, Tensor] | None = None,
) -> Float[Tensor, "b t d"]:
    """The replacement model with live features: each transcoder encodes its (frozen-norm)
    input; its output plus the fixed error term (``errors[layer]``, the clean run's real
    output minus the transcoder's) is the MLP output; attention and norms frozen. Returns
    the final normed residual ``[b, t, d]``.

    ``add`` maps a layer to a ``[b, t, d]`` tensor added to that MLP's output: a feature
    intervention (``−a·W_dec`` removes a feature at its layer; the layers after recompute
    theirs). The batch is that of ``add``'s tensors (1 without).
    """
    batch = next(iter(add.values())).shape[0] if add else 1
    resid = fz.embed[None].expand(batch, -1, -1)
    for i in range(stack.n_layers):
        resid = resid + attention_block(stack, fz, i, resid)
        x_in = mlp_input(stack, fz, i, resid)
        tc = transcoders.get(i)
        if tc is None:
            out = fz.mlp_out[i][None].expand(batch, -1, -1)
        else:
            pred = tc(x_in)
            out = torch.cat([fz.mlp_out[i][None, :1].expand(batch, -1, -1),
                             pred[:, 1:] + errors[i][None, 1:]], dim=1)
        if add is not None and i in add:
            out = out + add[i]
        resid = resid + out
    return final_normed(stack, fz, resid)


__all__ = ["SUPPORTED", "Block", "Frozen", "Stack", "attention_block", "backward_sweep",
           "final_normed", "freeze", "linear_forward", "mlp_input", "replacement_forward",
           "rms_scale"]
