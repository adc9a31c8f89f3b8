"""JumpReLU SAE (Rajamanoharan et al. 2024): a learned threshold per latent, an L0 penalty.

``f = pre · H(pre − θ)`` with ``θ = exp(log θ) > 0`` per latent, trained on
``‖x − x̂‖² + λ · Σ_i H(pre_i − θ_i)``: the penalty counts active latents (L0), not
their size, so it does not shrink the activations that survive. ``H`` has no useful
gradient, so both functions get *straight-through estimators* of their derivative in
``θ``, with a rectangle kernel ``K(u) = [|u| < ½]`` of bandwidth ``ε``:

* ``∂/∂θ JumpReLU(z) := −(θ/ε) · K((z − θ)/ε)``,
* ``∂/∂θ H(z − θ) := −(1/ε) · K((z − θ)/ε)``;

the gradient in ``z`` is the ordinary one (``H(z − θ)`` for JumpReLU, 0 for the step).
Only pre-activations within ``ε/2`` of their threshold move it. Defaults as in the paper
and SAELens: ``θ₀ = 0.001``, ``ε = 0.001``. Decoder rows are kept at unit norm.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from jaxtyping import Float
from torch import Tensor, nn
from typing_extensions import override

from interp.errors import InterpError
from interp.schema import positive, setting
from saes.architectures.base import Architecture, arch_name, register
from saes.sae import SAEConfig, SparseAutoencoder


def _kernel(pre: Tensor, theta: Tensor, bandwidth: float) -> Tensor:
    """``K((z − θ)/ε) / ε`` with the rectangle kernel."""
    return ((pre - theta).abs() < bandwidth / 2).to(pre.dtype) / bandwidth


def _sum_to(grad: Tensor, like: Tensor) -> Tensor:
    return grad.reshape(-1, like.shape[-1]).sum(0)


class _JumpReLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, pre: Tensor, theta: Tensor, bandwidth: float) -> Tensor:
        ctx.save_for_backward(pre, theta)
        ctx.bandwidth = bandwidth
        return pre * (pre > theta)

    @staticmethod
    def backward(ctx: Any, *grads: Tensor) -> tuple[Tensor, Tensor, None]:
        (grad,) = grads
        pre, theta = ctx.saved_tensors
        gate = (pre > theta).to(grad.dtype)
        d_theta = -theta * _kernel(pre, theta, ctx.bandwidth) * grad
        return grad * gate, _sum_to(d_theta, theta), None


class _Step(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, pre: Tensor, theta: Tensor, bandwidth: float) -> Tensor:
        ctx.save_for_backward(pre, theta)
        ctx.bandwidth = bandwidth
        return (pre > theta).to(pre.dtype)

    @staticmethod
    def backward(ctx: Any, *grads: Tensor) -> tuple[Tensor, Tensor, None]:
        (grad,) = grads
        pre, theta = ctx.saved_tensors
        d_theta = -_kernel(pre, theta, ctx.bandwidth) * grad
        return torch.zeros_like(pre), _sum_to(d_theta, theta), None


def jumprelu(pre: Tensor, theta: Tensor, bandwidth: float) -> Tensor:
    """``pre · H(pre − θ)`` with the straight-through gradient in ``θ``."""
    out = _JumpReLU.apply(pre, theta, bandwidth)
    assert isinstance(out, Tensor)
    return out


def step(pre: Tensor, theta: Tensor, bandwidth: float) -> Tensor:
    """``H(pre − θ)`` with the straight-through gradient in ``θ`` (none in ``pre``)."""
    out = _Step.apply(pre, theta, bandwidth)
    assert isinstance(out, Tensor)
    return out


class JumpReLUSAE(SparseAutoencoder):
    """JumpReLU SAE (see the module doc)."""

    unit_decoder: ClassVar[bool] = True

    def __init__(self, cfg: SAEConfig, train: JumpReLUConfig | None = None) -> None:
        super().__init__(cfg, train)
        self.train_cfg: JumpReLUConfig
        self.log_threshold = nn.Parameter(
            torch.full((cfg.d_sae,), math.log(self.train_cfg.threshold_init)))

    @property
    def threshold(self) -> Tensor:
        """θ per latent, ``exp(log_threshold)`` (always positive)."""
        return self.log_threshold.exp()

    def activate(self, pre: Float[Tensor, "... d_sae"]) -> Float[Tensor, "... d_sae"]:
        """JumpReLU: ``pre`` where ``pre > θ``, else 0."""
        return pre * (pre > self.threshold)

    def loss(
        self, x: Float[Tensor, "n d_in"], coefficient: float, dead: Tensor | None = None,
    ) -> tuple[Tensor, dict[str, Tensor]]:
        """MSE plus ``coefficient`` × L0 (the step function's count of active latents,
        straight-through gradient to θ within ``bandwidth``); parts: mse, decoder-norm-weighted l1,
        l0 and the latents that fired."""
        x, y = self.split(x)
        pre = self.pre_acts(x)
        theta = self.threshold
        eps = self.train_cfg.bandwidth
        f = jumprelu(pre, theta, eps)
        y_hat = f @ self.W_dec + self.b_dec + self.skip_out(x)
        mse = (y_hat - y).pow(2).sum(-1).mean()
        l0 = step(pre, theta, eps).sum(-1).mean()
        loss = mse + coefficient * l0
        active = f.detach() > 0
        l1 = (f.detach() * self.W_dec.detach().norm(dim=1)).sum(-1).mean()
        return loss, {"mse": mse.detach(), "l1": l1, "l0": l0.detach(),
                      "fired": active.any(0)}

    @override
    def state_tensors(self) -> dict[str, Tensor]:
        return {"threshold": self.threshold}

    def load_state_tensors(self, tensors: dict[str, Tensor]) -> None:
        """Set θ from saved values; a non-positive threshold is an
        :class:`~interp.errors.InterpError`."""
        t = tensors["threshold"].double()
        if not bool((t > 0).all()):
            raise InterpError(f"JumpReLU threshold must be positive; {int((t <= 0).sum())} "
                              "of its values are not")
        self.log_threshold.copy_(t.log().float())


@register
@dataclass(frozen=True)
class JumpReLUConfig(Architecture):
    """Training settings of a JumpReLU SAE."""

    label: ClassVar[str] = "JumpReLU"
    summary: ClassVar[str] = "JumpReLU + L0"
    sae_class: ClassVar[type[SparseAutoencoder]] = JumpReLUSAE
    saelens: ClassVar[str] = "jumprelu"
    saelens_tensors: ClassVar[tuple[str, ...]] = ("threshold",)
    order: ClassVar[int] = 30

    l0_coefficient: float = setting(1.0, check=positive, help="L0 coefficient λ")
    threshold_init: float = setting(
        0.001, check=positive,
        help="initial threshold of every latent (the paper's). Thresholds move by at most "
             "about lr × steps in log space, so on short runs this sets the L0")
    bandwidth: float = setting(0.001, check=positive,
                               help="width ε of the straight-through kernel")
    name: str = arch_name("jumprelu")

    def coefficient(self) -> float:
        """λ of the L0 penalty (warmed up by the trainer)."""
        return float(self.l0_coefficient)
