"""The model's read-out, ``W_U · final_norm(resid)``, as plain tensor ops.

Every lens, the tuned lens's training loss, direct logit attribution and the SAE
browser's logit effects read residual vectors through the final norm and the
unembedding. For RMSNorm and LayerNorm models the read-out is a per-channel gain (and
for a LayerNorm a centring and a bias), an ε and one matrix product, which is several
times cheaper than calling the bridge modules on every layer's residual. An RMSNorm's
gain is read off the module itself (apply it to a constant vector), so Llama's
``γ ⊙ x̂`` and Gemma's ``(1 + w) ⊙ x̂`` are one code path; each reading is checked against
the module before it is used. The family's final-logit softcap (Gemma-2) is applied
after the product, as the model does.
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
class NormFacts:
    """A norm ``gain ⊙ x̃ / sqrt(mean(x̃²) + eps) + bias``, where ``x̃`` is ``x`` less its
    mean for a LayerNorm (``center``) and ``x`` itself for an RMSNorm."""

    gain: Float[Tensor, " d_model"]
    eps: float
    center: bool = False
    bias: Float[Tensor, " d_model"] | None = None

    def centred(self, x: Float[Tensor, "... d_model"]) -> Float[Tensor, "... d_model"]:
        """``x̃`` in float32: ``x`` less its mean for a LayerNorm, ``x`` for an RMSNorm."""
        x = x.float()
        return x - x.mean(-1, keepdim=True) if self.center else x

    def scale(self, x: Float[Tensor, "... d_model"]) -> Float[Tensor, "... 1"]:
        """The norm's scale ``1/√(mean x̃² + ε)`` of ``x``, in float32."""
        return self._inverse_rms(self.centred(x))

    def _inverse_rms(self, c: Tensor) -> Tensor:
        return torch.rsqrt(c.pow(2).mean(-1, keepdim=True) + self.eps)

    def __call__(self, x: Float[Tensor, "... d_model"]) -> Float[Tensor, "... d_model"]:
        """The norm of ``x`` in float32."""
        c = self.centred(x)
        y = c * self._inverse_rms(c) * self.gain
        return y if self.bias is None else y + self.bias


def final_norm(model: Model) -> NormFacts | None:
    """The final norm's gain, ε, centring and bias (:func:`read_norm`)."""
    return read_norm(model, model.bridge.ln_final)


def read_norm(model: Model, component: Any) -> NormFacts | None:
    """A norm's gain, ε, centring and bias, or ``None`` when it is neither an RMSNorm nor
    a LayerNorm (``component``: a bridge component or the module itself).

    An RMSNorm's gain is what the module does to a vector of ones (so Llama's ``γ`` and
    Gemma's ``1 + w`` are read alike); a LayerNorm's are its weight and bias. The reading is
    accepted only when it reproduces the module on random vectors, so an unusual formula
    gets ``None``, never a wrong gain.
    """
    inner = wrapped_module(component)
    eps = getattr(inner, "variance_epsilon", getattr(inner, "eps", None))
    if not isinstance(eps, int | float):
        return None
    eps = float(eps)
    with torch.no_grad():
        if isinstance(inner, torch.nn.LayerNorm):
            if inner.weight is None:
                return None
            facts = NormFacts(gain=inner.weight.detach().float().reshape(-1), eps=eps,
                              center=True, bias=None if inner.bias is None
                              else inner.bias.detach().float().reshape(-1))
        elif getattr(inner, "bias", None) is not None:
            return None
        else:
            ones = torch.ones(1, model.d_model, device=model.device, dtype=model.dtype)
            facts = NormFacts(gain=(inner(ones).float() * math.sqrt(1.0 + eps)).reshape(-1),
                              eps=eps)
        x = torch.randn(4, model.d_model, generator=torch.Generator().manual_seed(0)) * 5
        x = x.to(device=model.device, dtype=model.dtype)
        want = inner(x).float()
    if not torch.allclose(facts(x), want, atol=1e-4, rtol=1e-3):
        return None
    return facts


def rms_norm(model: Model, component: Any) -> NormFacts | None:
    """:func:`read_norm` when the norm is an RMSNorm (no centring, no bias), else ``None``:
    the tools that freeze a norm's scale as a plain rms read it through here."""
    norm = read_norm(model, component)
    return norm if norm is not None and not norm.center and norm.bias is None else None


def final_rms_norm(model: Model) -> NormFacts | None:
    """The final norm as an RMSNorm (:func:`rms_norm`), else ``None``."""
    return rms_norm(model, model.bridge.ln_final)


class Unembed:
    """``W_U · final_norm(resid)`` (softcapped where the family caps its logits): the direct
    path for RMSNorm and LayerNorm models, else the bridge.

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
        norm = final_norm(model)
        un = wrapped_module(model.bridge.unembed)
        weight = getattr(un, "weight", None)
        bias = getattr(un, "bias", None)
        if norm is None or not isinstance(weight, Tensor) or tuple(weight.shape) != (
            model.d_vocab, model.d_model
        ):
            return
        self.norm = norm
        self.softcap = model._logit_softcap()
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
        y = self.norm(resid)
        if matmul_dtype == torch.bfloat16:
            if self._W_bf16 is None:
                self._W_bf16 = self.W_U.to(torch.bfloat16)
            z = (y.to(torch.bfloat16) @ self._W_bf16.T).float()
        else:
            z = y @ self.W_U.T
        z = z if self.b_U is None else z + self.b_U
        return z if self.softcap is None else self.softcap * torch.tanh(z / self.softcap)
