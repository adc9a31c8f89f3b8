"""Direct logit attribution of the answer − wrong logit difference.

The residual stream at the final position is the embedding plus every attention
layer's and MLP's output, and an attention layer's output is the sum of its heads'
``z_h W_O[h]``. With the final RMSNorm's scale frozen at the clean run's value (its
rms at that position), the logit difference is linear in the residual stream, so each
head's and MLP's contribution is its output divided by that rms and dotted with
``gamma * (W_U[answer] - W_U[wrong])``. The contributions and the embedding term sum
to the model's own logit difference; :class:`DLAResult` records the largest gap.
"""

from __future__ import annotations

import torch

from interp.circuits.patching import ld_direction, module_weight, run_ld
from interp.circuits.results import DLAResult
from interp.circuits.tasks import TokenizedTask
from interp.errors import InterpError
from interp.models.loading import Model
from interp.models.unembedding import final_rms_norm


class DLAUnsupported(InterpError):
    """The model's computation does not split into per-component direct effects."""


def direct_logit_attribution(
    model: Model, tt: TokenizedTask, *, batch_size: int = 16
) -> DLAResult:
    """Per-head, per-MLP and embedding contributions to each clean run's logit difference."""
    cfg = model.bridge.cfg
    n_layers, n_heads, d_head = model.n_layers, int(cfg.n_heads), int(cfg.d_head)
    norm = final_rms_norm(model)
    if norm is None:
        raise DLAUnsupported(
            f"direct logit attribution needs an RMSNorm final norm; {model.model_id}'s is "
            "not one (use --no-dla)"
        )
    gain = norm.gain
    names = ["blocks.0.hook_resid_pre", "ln_final.hook_scale"]
    for layer in range(n_layers):
        names += [f"blocks.{layer}.attn.hook_z", f"blocks.{layer}.hook_attn_out",
                  f"blocks.{layer}.hook_mlp_out"]
    w_o = [module_weight(model.bridge.blocks[layer].attn.o).float()
           for layer in range(n_layers)]
    heads, mlps, embeds, totals = [], [], [], []
    worst_split = 0.0
    with torch.no_grad():
        for s in range(0, len(tt), batch_size):
            sl = slice(s, s + batch_size)
            d = ld_direction(model, tt.answer[sl], tt.wrong[sl])
            total, acts = run_ld(model, tt.clean_ids[sl], tt.attention_mask[sl], d,
                                 capture=names)
            scale = acts["ln_final.hook_scale"][:, -1].float().reshape(-1, 1)  # rms
            u = d * gain / scale  # [b, d]: what one unit of residual adds to the LD
            b = u.shape[0]
            h_out = torch.empty(b, n_layers, n_heads)
            m_out = torch.empty(b, n_layers)
            for layer in range(n_layers):
                z = acts[f"blocks.{layer}.attn.hook_z"][:, -1].float()  # [b, H, dh]
                w = w_o[layer].reshape(-1, n_heads, d_head)  # [d_model, H, dh]
                per_head = torch.einsum("bhk,dhk->bhd", z, w)  # [b, H, d_model]
                attn_out = acts[f"blocks.{layer}.hook_attn_out"][:, -1].float()
                split = (per_head.sum(1) - attn_out).abs().max().item()
                worst_split = max(worst_split, split / max(attn_out.abs().max().item(), 1e-6))
                h_out[:, layer] = torch.einsum("bhd,bd->bh", per_head, u).cpu()
                m_out[:, layer] = (acts[f"blocks.{layer}.hook_mlp_out"][:, -1].float() * u
                                   ).sum(-1).cpu()
            if worst_split > 1e-3:  # checked on the first batch: no wasted passes
                raise DLAUnsupported(
                    "DLA per head needs each attention layer's output to be the sum of its "
                    f"heads' z·W_O; {model.model_id}'s differs by {worst_split:.2g} (relative): "
                    "a norm after attention, as in Gemma"
                )
            embeds.append((acts["blocks.0.hook_resid_pre"][:, -1].float() * u).sum(-1).cpu())
            heads.append(h_out)
            mlps.append(m_out)
            totals.append(total.cpu())
    h, m, e, t = torch.cat(heads), torch.cat(mlps), torch.cat(embeds), torch.cat(totals)
    err = (h.sum((1, 2)) + m.sum(1) + e - t).abs().max().item()
    return DLAResult(heads=h, mlp=m, embed=e, total=t, max_sum_error=float(err))
