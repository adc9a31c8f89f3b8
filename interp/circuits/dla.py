"""Direct logit attribution of the answer − wrong logit difference.

The residual stream at the final position is the embedding plus every attention
layer's and MLP's output, and an attention layer's output is the sum of its heads'
``z_h W_O[h]`` (and its output bias ``b_O``, where the family has one). With the final
norm's scale frozen at the clean run's value at that position, the logit difference
(the final norm's output along ``W_U[answer] − W_U[wrong]``) is linear in the residual
stream: each component's contribution is its output divided by that scale and dotted
with ``gain ⊙ (W_U[answer] − W_U[wrong])``, centred first for a LayerNorm, whose bias
adds a constant term. Where a norm follows attention (Gemma's sandwich, OLMo-2), its
scale is frozen too, so each head's term is ``gain ⊙ z_h W_O[h] / scale``: exact at the
clean run's scales, as the final norm's. The terms sum to the model's own logit
difference; :class:`DLAResult` records the largest gap.
"""

from __future__ import annotations

import torch

from interp.circuits.patching import ld_direction, run_ld
from interp.circuits.results import DLA_CONVENTION, DLAResult
from interp.circuits.tasks import TokenizedTask
from interp.errors import InterpError
from interp.models import weights
from interp.models.loading import Model
from interp.models.unembedding import NormFacts, final_norm, rms_norm


class DLAUnsupported(InterpError):
    """The model's computation does not split into per-component direct effects."""


def convention(norm: NormFacts, post: bool) -> str:
    """How the terms are defined, in words (the plain-RMSNorm one is
    :data:`~interp.circuits.results.DLA_CONVENTION`)."""
    if not norm.center and norm.bias is None and not post:
        return DLA_CONVENTION
    kind = "LayerNorm (centred, its bias a constant term)" if norm.center else "RMSNorm"
    after = (" The norm after each attention layer has its scale frozen the same way: each "
             "head's output is divided by it and multiplied by that norm's gain.") if post else ""
    return (f"final {kind} scale frozen at the clean run's value at the final position: each "
            "component's output is divided by that scale and dotted with "
            f"gain * (W_U[answer] - W_U[wrong]).{after}")


def direct_logit_attribution(
    model: Model, tt: TokenizedTask, *, batch_size: int = 16
) -> DLAResult:
    """Per-head, per-MLP and embedding contributions to each clean run's logit difference
    (and the attention output biases' and the final norm bias's constant terms)."""
    cfg = model.bridge.cfg
    n_layers, n_heads, d_head = model.n_layers, int(cfg.n_heads), int(cfg.d_head)
    norm = final_norm(model)
    if norm is None:
        raise DLAUnsupported(
            f"direct logit attribution needs an RMSNorm or LayerNorm final norm; "
            f"{model.model_id}'s is neither (use --no-dla)"
        )
    try:
        post = model.anatomy.family.placement in ("post", "sandwich")
    except InterpError as exc:  # an architecture no family describes: patching goes on
        raise DLAUnsupported(str(exc)) from None
    post_norms: list[NormFacts] = []
    if post:
        for layer in range(n_layers):
            facts = rms_norm(model, model.bridge.blocks[layer].ln1_post)
            if facts is None:
                raise DLAUnsupported(f"the norm after layer {layer}'s attention is not an "
                                     "RMSNorm: its scale cannot be frozen as one")
            post_norms.append(facts)
    names = ["blocks.0.hook_resid_pre", "ln_final.hook_scale"]
    for layer in range(n_layers):
        names += [f"blocks.{layer}.attn.hook_z", f"blocks.{layer}.hook_attn_out",
                  f"blocks.{layer}.hook_mlp_out"]
        if post:
            names.append(f"blocks.{layer}.ln1_post.hook_scale")
    w_o = [weights.attn_out(model, layer) for layer in range(n_layers)]
    heads, biases, mlps, embeds, consts, totals = [], [], [], [], [], []
    worst_split = 0.0
    with torch.no_grad():
        for s in range(0, len(tt), batch_size):
            sl = slice(s, s + batch_size)
            d = ld_direction(model, tt.answer[sl], tt.wrong[sl])
            total, acts = run_ld(model, tt.clean_ids[sl], tt.attention_mask[sl], d,
                                 capture=names)
            scale = acts["ln_final.hook_scale"][:, -1].float().reshape(-1, 1)
            u = d * norm.gain / scale  # [b, d]: what one unit of residual adds to the LD
            u = norm.centred(u)  # a LayerNorm reads x − mean(x): the same as u − mean(u) on x
            b = u.shape[0]
            h_out = torch.empty(b, n_layers, n_heads)
            a_bias = torch.zeros(b, n_layers)
            m_out = torch.empty(b, n_layers)
            for layer in range(n_layers):
                z = acts[f"blocks.{layer}.attn.hook_z"][:, -1].float()  # [b, H, dh]
                w, bias_o = w_o[layer]
                per_head = torch.einsum("bhk,dhk->bhd", z, w.reshape(-1, n_heads, d_head))
                bias_vec = (torch.zeros(b, model.d_model) if bias_o is None
                            else bias_o.expand(b, -1))
                if post:
                    s1 = acts[f"blocks.{layer}.ln1_post.hook_scale"][:, -1].float()
                    g1 = post_norms[layer].gain / s1.reshape(-1, 1)  # [b, d]
                    per_head = per_head * g1[:, None]
                    bias_vec = bias_vec * g1
                attn_out = acts[f"blocks.{layer}.hook_attn_out"][:, -1].float()
                split = (per_head.sum(1) + bias_vec - attn_out).abs().max().item()
                worst_split = max(worst_split, split / max(attn_out.abs().max().item(), 1e-6))
                h_out[:, layer] = torch.einsum("bhd,bd->bh", per_head, u).cpu()
                a_bias[:, layer] = (bias_vec * u).sum(-1).cpu()
                m_out[:, layer] = (acts[f"blocks.{layer}.hook_mlp_out"][:, -1].float() * u
                                   ).sum(-1).cpu()
            if worst_split > 1e-3:  # checked on the first batch: no wasted passes
                raise DLAUnsupported(
                    "DLA per head needs each attention layer's output to be the sum of its "
                    f"heads' outputs; {model.model_id}'s differs by {worst_split:.2g} "
                    "(relative)"
                )
            embeds.append((acts["blocks.0.hook_resid_pre"][:, -1].float() * u).sum(-1).cpu())
            consts.append(torch.zeros(b) if norm.bias is None
                          else (d * norm.bias).sum(-1).cpu())
            heads.append(h_out)
            biases.append(a_bias)
            mlps.append(m_out)
            totals.append(total.cpu())
    h, m, e, t = torch.cat(heads), torch.cat(mlps), torch.cat(embeds), torch.cat(totals)
    ab, nb = torch.cat(biases), torch.cat(consts)
    err = (h.sum((1, 2)) + ab.sum(1) + m.sum(1) + e + nb - t).abs().max().item()
    return DLAResult(heads=h, mlp=m, embed=e, total=t, max_sum_error=float(err),
                     convention=convention(norm, post), attn_bias=ab, norm_bias=nb)
