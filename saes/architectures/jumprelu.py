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
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch
from jaxtyping import Float
from torch import Tensor, nn

from interp.errors import InterpError
from saes.sae import SAEConfig, SparseAutoencoder


@dataclass
class JumpReLUConfig:
    """Training settings of a JumpReLU SAE."""

    l0_coefficient: float = 1.0
    threshold_init: float = 0.001
    bandwidth: float = 0.001
    name: str = field(default="jumprelu", init=False)

    def validate(self, d_sae: int) -> None:
        for key, label in (("l0_coefficient", "--l0-coefficient"),
                           ("threshold_init", "threshold init"), ("bandwidth", "bandwidth")):
            v = getattr(self, key)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise InterpError(f"{label} must be a positive number, got {v}")

    def coefficient(self) -> float:
        """λ of the L0 penalty (warmed up by the trainer)."""
        return float(self.l0_coefficient)

    def sae_fields(self) -> dict[str, object]:
        return {"architecture": self.name}


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

    architecture: ClassVar[str] = "jumprelu"
    unit_decoder: ClassVar[bool] = True

    def __init__(self, cfg: SAEConfig, train: JumpReLUConfig | None = None) -> None:
        super().__init__(cfg, train or JumpReLUConfig())
        self.train_cfg: JumpReLUConfig
        self.log_threshold = nn.Parameter(
            torch.full((cfg.d_sae,), math.log(self.train_cfg.threshold_init)))

    @property
    def threshold(self) -> Tensor:
        return self.log_threshold.exp()

    def activate(self, pre: Float[Tensor, "... d_sae"]) -> Float[Tensor, "... d_sae"]:
        return pre * (pre > self.threshold)

    def loss(
        self, x: Float[Tensor, "n d_in"], coefficient: float, dead: Tensor | None = None,
    ) -> tuple[Tensor, dict[str, Tensor]]:
        pre = self.pre_acts(x)
        theta = self.threshold
        eps = self.train_cfg.bandwidth
        f = jumprelu(pre, theta, eps)
        x_hat = f @ self.W_dec + self.b_dec
        mse = (x_hat - x).pow(2).sum(-1).mean()
        l0 = step(pre, theta, eps).sum(-1).mean()
        loss = mse + coefficient * l0
        active = f.detach() > 0
        l1 = (f.detach() * self.W_dec.detach().norm(dim=1)).sum(-1).mean()
        return loss, {"mse": mse.detach(), "l1": l1, "l0": l0.detach(),
                      "fired": active.any(0)}

    def state_tensors(self) -> dict[str, Tensor]:
        return {"threshold": self.threshold}

    def load_state_tensors(self, tensors: dict[str, Tensor]) -> None:
        t = tensors["threshold"].double()
        if not bool((t > 0).all()):
            raise InterpError(f"JumpReLU threshold must be positive; {int((t <= 0).sum())} "
                              "of its values are not")
        self.log_threshold.copy_(t.log().float())
