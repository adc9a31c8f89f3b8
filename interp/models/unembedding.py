"""The model's read-out, ``W_U · final_norm(resid)``, as plain tensor ops.

Every lens, the tuned lens's training loss, direct logit attribution and the SAE
browser's logit effects read residual vectors through the final norm and the
unembedding. For RMSNorm models the read-out is a per-channel gain, an ε and one
matrix product, which is several times cheaper than calling the bridge modules on
every layer's residual. The gain is read off the norm module itself (apply it to a
constant vector), so Llama's ``γ ⊙ x̂`` and Gemma's ``(1 + w) ⊙ x̂`` are one code
path; each reading is checked against the module before it is used.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
from jaxtyping import Float
from torch import Tensor

from interp.models.loading import Model


def wrapped_module(component: Any) -> Any:
    """The HF module a bridge component wraps (or the module itself)."""
    for name in ("original_component", "_original_component"):
        inner = getattr(component, name, None)
        if isinstance(inner, torch.nn.Module):
            return inner
    return component


@dataclass(frozen=True)
class RMSNormFacts:
    """A final norm of the form ``gain ⊙ x / sqrt(mean(x²) + eps)``."""

    gain: Float[Tensor, " d_model"]
    eps: float


def final_rms_norm(model: Model) -> RMSNormFacts | None:
    """The final norm as an RMSNorm (gain, ε), or ``None`` when it is not one.

    The gain is what the module does to a vector of ones; the reading is accepted only
    when it reproduces the module on random vectors (so a LayerNorm, a norm with a
    bias or an unusual formula gets ``None``, never a wrong gain).
    """
    inner = wrapped_module(model.bridge.ln_final)
    eps = getattr(inner, "variance_epsilon", getattr(inner, "eps", None))
    if not isinstance(eps, int | float) or getattr(inner, "bias", None) is not None:
        return None
    eps = float(eps)
    with torch.no_grad():
        ones = torch.ones(1, model.d_model, device=model.device, dtype=model.dtype)
        gain = (inner(ones).float() * math.sqrt(1.0 + eps)).reshape(-1)
        x = torch.randn(4, model.d_model, generator=torch.Generator().manual_seed(0)) * 5
        x = x.to(device=model.device, dtype=model.dtype)
        want = inner(x).float()
        xf = x.float()
        got = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * gain
    if not torch.allclose(got, want, atol=1e-4, rtol=1e-3):
        return None
    return RMSNormFacts(gain=gain, eps=eps)


class Unembed:
    """``W_U · final_norm(resid)``: the direct path for RMSNorm models, else the bridge.

    The direct path (the gain, ε and ``W_U`` read once) is checked at construction
    against :meth:`interp.models.loading.Model.unembed` (the bridge modules); any other
    architecture, or a mismatch, falls back to the bridge and ``fast`` is False.
    ``matmul_dtype=bfloat16`` runs the big ``[rows, d] × [d, vocab]`` product in bf16
    (1.6–1.8× faster on CPUs with AVX512-BF16; logits agree to ~1e-2): training uses
    it, evaluation does not.
    """

    def __init__(self, model: Model) -> None:
        self.model = model
        self.fast = False
        norm = final_rms_norm(model)
        un = wrapped_module(model.bridge.unembed)
        weight = getattr(un, "weight", None)
        bias = getattr(un, "bias", None)
        if norm is None or not isinstance(weight, Tensor) or tuple(weight.shape) != (
            model.d_vocab, model.d_model
        ):
            return
        self.gain = norm.gain
        self.eps = norm.eps
        self.W_U = weight.detach().float()
        self.b_U = bias.detach().float() if isinstance(bias, Tensor) else None
        self._W_bf16: Tensor | None = None
        probe = torch.randn(4, model.d_model, generator=torch.Generator().manual_seed(1))
        probe = (probe * 5).to(model.device)
        with torch.no_grad():
            ref = model.unembed(probe).float()
        self.fast = True
        if not torch.allclose(self(probe), ref, atol=1e-4, rtol=1e-4):
            self.fast = False

    def __call__(
        self, resid: Float[Tensor, "... d_model"], *, matmul_dtype: torch.dtype = torch.float32
    ) -> Float[Tensor, "... d_vocab"]:
        """Logits ``[..., d_vocab]`` in float32: the direct path when ``fast``, else the bridge's;
        ``matmul_dtype=torch.bfloat16`` runs the unembedding product in bf16."""
        if not self.fast:
            return self.model.unembed(resid).float()
        x = resid.float()
        y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.gain
        if matmul_dtype == torch.bfloat16:
            if self._W_bf16 is None:
                self._W_bf16 = self.W_U.to(torch.bfloat16)
            z = (y.to(torch.bfloat16) @ self._W_bf16.T).float()
        else:
            z = y @ self.W_U.T
        return z if self.b_U is None else z + self.b_U
