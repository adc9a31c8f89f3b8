"""The local replacement model of one prompt: attention patterns and norm denominators
frozen at their values on the prompt, every MLP replaced by its transcoder plus an error
term that makes its output exact.

With those frozen, every path through the residual stream is affine: a norm is
``x̃·s·γ + β`` (``x̃`` is ``x`` for an RMSNorm and ``x`` less its mean for a LayerNorm) with
the scale ``s = 1/√(mean x̃² + ε)`` of the prompt's own run, an attention layer is
``O·(P·(V·x + b_V)) + b_O`` with the prompt's pattern ``P``. What an MLP adds is the sum of
its active features' decoder rows (``a·W_dec``), the transcoder's decoder bias, its skip
path (linear in the MLP's input) and the error (the real output minus all of those). At a
layer without a transcoder, and at position 0 (the attention sink, never in a transcoder's
training data), the whole MLP output is the error.

The model's own constant terms (norm biases ``β``, attention biases ``b_V`` and ``b_O``, and
what a skip path makes of the MLP norm's ``β``) are what :func:`constants` gives per
layer; the graph gives them nodes of their own, so edges sum to each target exactly in
families with biases (GPT-2, GPT-NeoX, Qwen2) as in those without. A family that runs
attention and the MLP in parallel (GPT-NeoX) has its MLP read the block's input instead
of the mid-block residual.

:class:`Stack` reads the pieces of the model through its family's anatomy (every
registered family); :func:`freeze` runs the real model once
on the prompt and keeps what is frozen; :func:`linear_forward` is the frozen linear model
with a batch of gradient rows (the attribution graph's backward passes); and
:func:`replacement_forward` runs it with the features live (recomputed by each transcoder
from its input, the error terms fixed), for interventions inside the replacement model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import torch
from jaxtyping import Float, Int
from torch import Tensor

from interp.activations.capture import forward_with_hooks
from interp.errors import InterpError
from interp.models import weights
from interp.models.loading import Model
from interp.models.unembedding import NormFacts, read_norm
from saes.transcoders.mlp_replacement import MLPReplacement


def frozen_norm(norm: NormFacts | None, x: Tensor, scale: Tensor | None) -> Tensor:
    """A norm with its scale frozen, ``x̃ · scale · gain + bias`` (``x`` itself where the
    block has no norm there): affine in ``x``."""
    if norm is None:
        return x
    assert scale is not None
    y = norm.centred(x) * scale * norm.gain
    return y if norm.bias is None else y + norm.bias


def frozen_norm_t(norm: NormFacts | None, g: Tensor, scale: Tensor | None) -> Tensor:
    """The transpose of :func:`frozen_norm`'s linear part, for gradients: the centring
    (a symmetric projection) after ``g · scale · gain``."""
    if norm is None:
        return g
    assert scale is not None
    return norm.centred(g * scale * norm.gain)


@dataclass
class Block:
    """One decoder layer's frozen-linear pieces (:mod:`interp.models.anatomy` says which
    norms the family has)."""

    ln1: NormFacts | None                # the norm before attention (None: OLMo-2)
    ln2: NormFacts | None                # before the MLP
    attn_post: NormFacts | None          # the norm after attention (Gemma, OLMo-2)
    w_v: Tensor                          # [n_kv·hd, d]
    w_o: Tensor                          # [d, n_heads·hd]
    b_v: Tensor | None                   # [n_kv·hd]
    b_o: Tensor | None                   # [d]
    n_heads: int
    n_kv: int
    head_dim: int

    @property
    def has_constants(self) -> bool:
        """Whether the block adds a constant term (a norm's or attention's bias)."""
        return (any(n is not None and n.bias is not None
                    for n in (self.ln1, self.ln2, self.attn_post))
                or self.b_v is not None or self.b_o is not None)


class Stack:
    """The model's decoder weights, as the frozen affine model needs them, read through the
    family's anatomy (every registered family: serial or parallel blocks, RMSNorms or
    LayerNorms, with or without biases)."""

    def __init__(self, model: Model) -> None:
        anat = model.anatomy  # an unknown family is refused here, in one line
        fam = anat.family
        self.model_type = fam.model_type
        self.parallel = fam.parallel
        self.softcap = anat.logit_softcap
        d = model.d_model
        self.d_model = d
        self.blocks: list[Block] = []
        for layer, blk in enumerate(model.bridge.blocks):
            w_v, b_v = weights.linear(blk.attn.v)
            w_o, b_o = weights.attn_out(model, layer)
            self.blocks.append(Block(
                ln1=_norm(model, blk, "ln1"), ln2=_norm(model, blk, "ln2"),
                attn_post=_norm(model, blk, "ln1_post"), w_v=w_v, w_o=w_o, b_v=b_v, b_o=b_o,
                n_heads=anat.n_heads, n_kv=anat.n_kv_heads, head_dim=anat.d_head))
        final = _norm(model, model.bridge, "ln_final")
        assert final is not None
        self.final = final
        self.w_u = weights.unembedding(model)  # [vocab, d]
        self.n_layers = len(self.blocks)
        #: Whether the model adds constant terms (the graph then has constant nodes).
        self.has_constants = (final.bias is not None
                              or any(b.has_constants for b in self.blocks))

    def attention(self, block: Block, x: Float[Tensor, "b t d"],
                  pattern: Float[Tensor, "h t t"]) -> Float[Tensor, "b t d"]:
        """``O·(P·(V·x + b_V)) + b_O``: attention with a fixed pattern, on the normalised
        input ``x``."""
        b, t, _ = x.shape
        v = x @ block.w_v.T
        if block.b_v is not None:
            v = v + block.b_v
        v = v.view(b, t, block.n_kv, block.head_dim)
        v = v.repeat_interleave(block.n_heads // block.n_kv, dim=2)  # [b, t, h, hd]
        z = torch.einsum("hqk,bkhe->bqhe", pattern, v).reshape(b, t, -1)
        out = z @ block.w_o.T
        return out if block.b_o is None else out + block.b_o

    def attention_transposed(self, block: Block, g: Float[Tensor, "b t d"],
                             pattern: Float[Tensor, "h t t"]) -> Float[Tensor, "b t d"]:
        """The transpose of :meth:`attention`'s linear part: ``Vᵀ·Pᵀ·Oᵀ·g``."""
        b, t, _ = g.shape
        gz = (g @ block.w_o).view(b, t, block.n_heads, block.head_dim)
        gv = torch.einsum("hqk,bqhe->bkhe", pattern, gz)
        gv = gv.view(b, t, block.n_kv, block.n_heads // block.n_kv, block.head_dim).sum(3)
        return gv.reshape(b, t, -1) @ block.w_v


def _norm(model: Model, owner: object, name: str) -> NormFacts | None:
    """The norm ``name`` of a block (or the model) as gain, ε, centring and bias; None where
    it has none."""
    if not hasattr(owner, name):
        return None
    facts = read_norm(model, getattr(owner, name))
    if facts is None:
        raise InterpError(f"attribution graphs need RMSNorms or LayerNorms; "
                          f"{model.model_id}'s {name} is neither")
    return facts


@dataclass
class Frozen:
    """What the prompt's real run fixes (one prompt, ``T`` positions; float32)."""

    ids: Int[Tensor, " t"]
    embed: Float[Tensor, "t d"]                # what enters the residual stream
    patterns: list[Float[Tensor, "h t t"]]
    s_ln1: list[Float[Tensor, "t 1"] | None]
    s_ln2: list[Float[Tensor, "t 1"] | None]
    s_attn_post: list[Float[Tensor, "t 1"] | None]
    s_final: Float[Tensor, "t 1"]
    mlp_in: list[Float[Tensor, "t d"]]
    mlp_out: list[Float[Tensor, "t d"]]
    #: the residual stream each MLP's norm reads (mid-block; the block's input where
    #: attention and the MLP run in parallel): what features that read the raw residual read
    mlp_resid: list[Float[Tensor, "t d"]]
    resid_final: Float[Tensor, "t d"]
    logits: Float[Tensor, " vocab"]           # the real model's, at the last position


def _scale(norm: NormFacts | None, x: Tensor) -> Tensor | None:
    return None if norm is None else norm.scale(x)


def freeze(model: Model, stack: Stack, ids: Int[Tensor, " t"]) -> Frozen:
    """Run the real model on ``ids`` once and keep what the replacement model freezes."""
    n = stack.n_layers
    # what each MLP's norm reads: the mid-block residual, or the block's input (parallel)
    mlp_reads = "hook_resid_pre" if stack.parallel else "hook_resid_mid"
    names = (["blocks.0.hook_resid_pre", "ln_final.hook_in"]
             + [f"blocks.{i}.{h}" for i in range(n)
                for h in ("hook_resid_pre", mlp_reads, "attn.hook_pattern",
                          "mlp.hook_in", "hook_mlp_out")])
    names = list(dict.fromkeys(names))
    with torch.no_grad():
        acts, logits = forward_with_hooks(model, ids[None].to(model.device), None, names,
                                          with_logits=True)
    a = {k: v[0].float().cpu() for k, v in acts.items()}
    s_ln1: list[Tensor | None] = []
    s_ln2: list[Tensor | None] = []
    s_post: list[Tensor | None] = []
    for i, blk in enumerate(stack.blocks):
        pre = a[f"blocks.{i}.hook_resid_pre"]
        s_ln1.append(_scale(blk.ln1, pre))
        s_ln2.append(_scale(blk.ln2, a[f"blocks.{i}.{mlp_reads}"]))
        if blk.attn_post is None:
            s_post.append(None)
            continue
        raw = stack.attention(blk, frozen_norm(blk.ln1, pre, s_ln1[-1])[None],
                              a[f"blocks.{i}.attn.hook_pattern"])[0]
        s_post.append(blk.attn_post.scale(raw))
    s_final = stack.final.scale(a["ln_final.hook_in"])
    return Frozen(
        ids=ids.cpu(), embed=a["blocks.0.hook_resid_pre"],
        patterns=[a[f"blocks.{i}.attn.hook_pattern"] for i in range(n)],
        s_ln1=s_ln1, s_ln2=s_ln2, s_attn_post=s_post, s_final=s_final,
        mlp_in=[a[f"blocks.{i}.mlp.hook_in"] for i in range(n)],
        mlp_out=[a[f"blocks.{i}.hook_mlp_out"] for i in range(n)],
        mlp_resid=[a[f"blocks.{i}.{mlp_reads}"] for i in range(n)],
        resid_final=a["ln_final.hook_in"], logits=_last(logits))


def _last(logits: Tensor | None) -> Tensor:
    assert logits is not None  # forward_with_hooks(with_logits=True) always returns them
    return logits[0, -1].float().cpu()


def attention_block(stack: Stack, fz: Frozen, i: int, resid: Tensor) -> Tensor:
    """Layer ``i``'s attention output (after the norm that follows attention, where the
    family has one), frozen."""
    blk = stack.blocks[i]
    out = stack.attention(blk, frozen_norm(blk.ln1, resid, fz.s_ln1[i]), fz.patterns[i])
    return frozen_norm(blk.attn_post, out, fz.s_attn_post[i])


def mlp_input(stack: Stack, fz: Frozen, i: int, resid_mid: Tensor) -> Tensor:
    """The MLP's input at layer ``i`` from the residual stream it reads (the mid-block
    residual; the block's input where attention and the MLP run in parallel), with the
    frozen scale."""
    return frozen_norm(stack.blocks[i].ln2, resid_mid, fz.s_ln2[i])


def attention_step(stack: Stack, fz: Frozen, i: int,
                   resid: Tensor) -> tuple[Tensor, Tensor]:
    """Layer ``i``'s attention added to ``resid`` (the block's input), and the MLP's
    input: ``(resid + attention, mlp_in)``, serial or parallel as the family runs them."""
    after, read = attention_read(stack, fz, i, resid)
    return after, mlp_input(stack, fz, i, read)


def attention_read(stack: Stack, fz: Frozen, i: int,
                   resid: Tensor) -> tuple[Tensor, Tensor]:
    """Layer ``i``'s attention added to ``resid`` (the block's input), and the residual
    stream the MLP's norm reads (the block's input where they run in parallel)."""
    after = resid + attention_block(stack, fz, i, resid)
    return after, resid if stack.parallel else after


def feature_input(stack: Stack, fz: Frozen, rep: MLPReplacement, i: int,
                  read: Tensor) -> Tensor:
    """What layer ``i``'s features read, from the residual its MLP's norm reads: the MLP's
    normalised input, or that residual itself
    (:meth:`~saes.transcoders.mlp_replacement.MLPReplacement.reads_normed`)."""
    return mlp_input(stack, fz, i, read) if rep.reads_normed(i) else read


def frozen_input(fz: Frozen, rep: MLPReplacement, i: int) -> Tensor:
    """What layer ``i``'s features read in the prompt's real run."""
    return fz.mlp_in[i] if rep.reads_normed(i) else fz.mlp_resid[i]


def constants(stack: Stack, fz: Frozen,
              rep: MLPReplacement | None) -> list[tuple[Tensor, Tensor]]:
    """Per layer, the constant terms the frozen affine model writes into the residual
    stream, as ``(attention, skip)``, each ``[t, d]``: what the attention block writes at
    zero input (its norms' and attention's biases), and what a skip path writes of the
    MLP norm's bias (positions ≥ 1). The MLP norm's bias itself is read directly by the
    layer's features (:mod:`saes.graphs.attribution` adds it to their rows). Zeros for a
    family without biases."""
    t, d = fz.embed.shape
    out = []
    zero = torch.zeros(1, t, d)
    for i, blk in enumerate(stack.blocks):
        attn = attention_block(stack, fz, i, zero)[0]
        skip = torch.zeros(t, d)
        m = rep.skip_matrix(i) if rep is not None and i in rep.out_layers else None
        if m is not None and rep is not None and rep.reads_normed(i) and (
                blk.ln2 is not None and blk.ln2.bias is not None):
            skip[1:] = blk.ln2.bias @ m
        out.append((attn, skip))
    return out


def final_normed(stack: Stack, fz: Frozen, resid: Tensor) -> Tensor:
    """The final norm with the frozen scale (what the unembedding reads)."""
    return frozen_norm(stack.final, resid, fz.s_final)


def linear_forward(
    stack: Stack, fz: Frozen, rep: MLPReplacement | None, batch: int, until: int,
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
        resid, read = attention_read(stack, fz, i, resid)
        has = rep is not None and i in rep.layers
        x_in = (feature_input(stack, fz, rep, i, read) if has and rep is not None
                else mlp_input(stack, fz, i, read))
        reads.append(x_in)
        if i == until:
            return embed, writes, reads, None
        w = torch.zeros(batch, t, d, requires_grad=True)
        writes.append(w)
        out: Tensor = w
        m = rep.skip_matrix(i) if has and rep is not None else None
        if m is not None:
            skip = x_in @ m
            out = out + torch.cat([torch.zeros_like(skip[:, :1]), skip[:, 1:]], dim=1)
        resid = resid + out
    return embed, writes, reads, final_normed(stack, fz, resid)


def backward_sweep(
    stack: Stack, fz: Frozen, rep: MLPReplacement | None,
    seeds: Mapping[int, list[tuple[int, int, Tensor]]], batch: int,
    on_write: Callable[[int, Tensor], None], top: int,
    on_attention: Callable[[int, Tensor], None] | None = None,
) -> Float[Tensor, "b t d"]:
    """Gradients of a batch of targets through the frozen linear model, computed backwards
    with the transposed maps (no forward pass: the model is linear, so the gradients do not
    depend on the values, only on the frozen patterns and scales).

    ``seeds[layer]`` holds ``(row, position, vector)``: target ``row`` reads ``vector``
    off what ``layer``'s features read (:func:`feature_input`) at ``position`` (``layer =
    n_layers``: off the final normed residual). The sweep starts at layer ``top``; at each
    layer below it, ``on_write(layer, g)`` receives the gradient ``[batch, t, d]`` of every row with
    respect to what that layer's MLP writes (before the targets reading that layer's MLP
    input join), and ``on_attention(layer, g)`` (at every layer up to ``top``) the gradient
    with respect to what its attention block writes. Returns the gradient with respect to
    the embeddings. A skip transcoder's skip path is part of the linear model (gradients
    flow through it, from position 1 on); the MLPs themselves are not (features are nodes).
    """
    t, d = fz.embed.shape
    g = torch.zeros(batch, t, d)
    for row, pos, vec in seeds.get(stack.n_layers, []):
        g[row, pos] += frozen_norm_t(stack.final, vec, fz.s_final[pos])
    for i in range(min(top, stack.n_layers - 1), -1, -1):
        blk = stack.blocks[i]
        read = torch.zeros_like(g)  # the gradient reaching what the MLP's norm reads
        has = rep is not None and i in rep.layers
        normed = not has or rep is None or rep.reads_normed(i)

        def through_norm(v: Tensor, pos: int | slice, i: int = i, normed: bool = normed
                         ) -> Tensor:
            blk = stack.blocks[i]
            return frozen_norm_t(blk.ln2, v, _at(fz.s_ln2[i], pos)) if normed else v

        if i < top:
            on_write(i, g)  # resid_post = resid_mid + MLP output
            m = rep.skip_matrix(i) if has and rep is not None else None
            if m is not None:
                read[:, 1:] += through_norm(g[:, 1:] @ m.T, slice(1, None))
        for row, pos, vec in seeds.get(i, []):
            read[row, pos] += through_norm(vec, pos)
        if not stack.parallel:
            g = g + read  # serial: the MLP reads the residual after attention
        if on_attention is not None:
            on_attention(i, g)
        g_raw = frozen_norm_t(blk.attn_post, g, fz.s_attn_post[i])
        g = g + frozen_norm_t(blk.ln1, stack.attention_transposed(blk, g_raw, fz.patterns[i]),
                              fz.s_ln1[i])
        if stack.parallel:
            g = g + read  # parallel: the MLP reads the block's input
    return g


def _at(scale: Tensor | None, pos: int | slice) -> Tensor | None:
    """The frozen scale of positions ``pos`` (None where the block has no norm there)."""
    return None if scale is None else scale[pos]


def replacement_forward(
    stack: Stack, fz: Frozen, rep: MLPReplacement | None,
    errors: Sequence[Tensor], add: Mapping[int, Tensor] | None = None,
) -> Float[Tensor, "b t d"]:
    """The replacement model with live features: each layer's features encode what they
    read (frozen norms), and each MLP output is what the features of every layer writing
    there predict plus the fixed error term (``errors[layer]``, the clean run's real output
    minus the prediction); attention and norms frozen. Returns the final normed residual
    ``[b, t, d]``.

    ``add`` maps a layer to a ``[b, t, d]`` tensor added to that MLP's output: a feature
    intervention (``−a·W_dec`` removes a feature at its layer; the layers after recompute
    theirs). The batch is that of ``add``'s tensors (1 without).
    """
    batch = next(iter(add.values())).shape[0] if add else 1
    resid = fz.embed[None].expand(batch, -1, -1)
    feats: dict[int, Tensor] = {}
    inputs: dict[int, Tensor] = {}
    outs = set(rep.out_layers) if rep is not None else set()
    for i in range(stack.n_layers):
        resid, read = attention_read(stack, fz, i, resid)
        if rep is not None and i in rep.layers:
            inputs[i] = feature_input(stack, fz, rep, i, read)
            feats[i] = rep.encode(i, inputs[i])
        if rep is None or i not in outs:
            out = fz.mlp_out[i][None].expand(batch, -1, -1)
        else:
            pred = rep.output(i, feats, inputs[i])
            out = torch.cat([fz.mlp_out[i][None, :1].expand(batch, -1, -1),
                             pred[:, 1:] + errors[i][None, 1:]], dim=1)
        if add is not None and i in add:
            out = out + add[i]
        resid = resid + out
    return final_normed(stack, fz, resid)


__all__ = ["Block", "Frozen", "Stack", "attention_block", "attention_read", "attention_step",
           "backward_sweep", "constants", "feature_input", "final_normed", "freeze",
           "frozen_input", "frozen_norm", "frozen_norm_t", "linear_forward", "mlp_input",
           "replacement_forward"]
