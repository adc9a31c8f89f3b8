"""TopK (Gao et al. 2024) and BatchTopK (Bussmann et al. 2024) SAEs, with AuxK.

**TopK.** ``f = ReLU(TopK_k(pre))``: each token keeps its ``k`` largest pre-activations,
so L0 is ``k`` by construction and the loss is the reconstruction alone; there is no
sparsity penalty to tune. Decoding reads only the ``k`` active rows of ``W_dec``
(:func:`torch.nn.functional.embedding_bag` with the activations as weights), so the
decoder's cost is ``k·d_in`` per token instead of ``d_sae·d_in``, forward and backward.

**BatchTopK.** The ``k·n`` largest activations of a batch of ``n`` tokens are kept,
wherever they fall: some tokens get more latents than others, ``k`` on average. At
inference there is no batch, so a single threshold ``θ`` stands in for the batch's cut:
during training it is an exponential moving average (``threshold_momentum``) of the
smallest activation the batch kept, and :meth:`BatchTopKSAE.activate` is
``ReLU(pre)·[pre > θ]``, the JumpReLU form (SAELens exports it the same way).

**AuxK** (Gao et al., section A.2). Latents that have not fired for ``dead_window``
tokens are *dead*. The auxiliary loss asks the ``aux_k`` largest pre-activations among
the dead latents (raw, without the ReLU, so that latents whose pre-activations are all
negative still get a gradient) to reconstruct the residual ``e = x − x̂`` (detached):
``α · min(n_dead / aux_k, 1) · ‖e − ê‖²`` per token, in the units of the main MSE, with
``α = 1/32`` and ``aux_k = d_in / 2`` by default. Its gradient reaches only the dead
latents, which it pulls back towards directions the SAE is missing.

Decoder rows are kept at unit norm after every step (Gao et al.), so the size of an
activation is the size of its contribution to ``x̂``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

import torch
import torch.nn.functional as F  # noqa: N812 - torch's own convention
from jaxtyping import Float, Int
from torch import Tensor

from interp.errors import InterpError
from saes.sae import SAEConfig, SparseAutoencoder, check_k


@dataclass
class TopKConfig:
    """Training settings of a TopK SAE."""

    k: int = 32
    aux_k: int | None = None  # None: d_in // 2
    aux_coefficient: float = 1 / 32
    name: str = field(default="topk", init=False)

    def validate(self, d_sae: int) -> None:
        check_k(self.k, d_sae)
        if self.aux_k is not None and (isinstance(self.aux_k, bool) or self.aux_k < 1):
            raise InterpError(f"--aux-k must be a positive integer, got {self.aux_k!r}")
        if not (math.isfinite(self.aux_coefficient) and self.aux_coefficient >= 0):
            raise InterpError(f"--aux-coefficient must be ≥ 0, got {self.aux_coefficient}")

    def coefficient(self) -> float:
        """The scheduled sparsity coefficient: none (sparsity is the activation's)."""
        return 0.0

    def sae_fields(self) -> dict[str, object]:
        return {"architecture": self.name, "k": self.k}


@dataclass
class BatchTopKConfig(TopKConfig):
    """Training settings of a BatchTopK SAE."""

    threshold_momentum: float = 0.99
    name: str = field(default="batchtopk", init=False)

    def validate(self, d_sae: int) -> None:
        super().validate(d_sae)
        m = self.threshold_momentum
        if not (math.isfinite(m) and 0 <= m < 1):
            raise InterpError(f"threshold momentum must be in [0, 1), got {m}")


def decode_sparse(
    idx: Int[Tensor, "n k"], vals: Float[Tensor, "n k"], w_dec: Float[Tensor, "d_sae d_in"],
) -> Float[Tensor, "n d_in"]:
    """``Σ_j vals[:, j] · W_dec[idx[:, j]]``: only the active rows are read (and, in the
    backward pass, written), through ``embedding_bag``."""
    return F.embedding_bag(idx, w_dec, per_sample_weights=vals, mode="sum")


class TopKSAE(SparseAutoencoder):
    """TopK SAE (see the module doc)."""

    architecture: ClassVar[str] = "topk"
    unit_decoder: ClassVar[bool] = True

    def __init__(self, cfg: SAEConfig, train: TopKConfig | None = None) -> None:
        k = check_k(cfg.k, cfg.d_sae)
        super().__init__(cfg, train or TopKConfig(k=k))
        self.k = k
        self.train_cfg: TopKConfig

    def activate(self, pre: Float[Tensor, "... d_sae"]) -> Float[Tensor, "... d_sae"]:
        vals, idx = pre.topk(self.k, dim=-1)
        return torch.zeros_like(pre).scatter_(-1, idx, torch.relu(vals))

    def _select(self, pre: Float[Tensor, "n d_sae"]) -> tuple[Tensor, Tensor]:
        """``(idx, vals)`` of the active latents, ``[n, k]`` each."""
        vals, idx = pre.topk(self.k, dim=-1)
        return idx, torch.relu(vals)

    def loss(
        self, x: Float[Tensor, "n d_in"], coefficient: float, dead: Tensor | None = None,
    ) -> tuple[Tensor, dict[str, Tensor]]:
        pre = self.pre_acts(x)
        idx, vals = self._select(pre)
        x_hat = decode_sparse(idx, vals, self.W_dec) + self.b_dec
        mse = (x_hat - x).pow(2).sum(-1).mean()
        aux = self._aux_loss(pre, x - x_hat.detach(), dead)
        loss = mse + self.train_cfg.aux_coefficient * aux
        active = vals > 0
        fired = torch.zeros(self.cfg.d_sae, dtype=torch.bool, device=x.device)
        fired[idx[active]] = True
        l1 = (vals * self.W_dec.detach().norm(dim=1)[idx]).sum(-1).mean()
        return loss, {"mse": mse.detach(), "l1": l1.detach(), "aux": aux.detach(),
                      "l0": active.float().sum(-1).mean(), "fired": fired,
                      **self._extra_parts(vals)}

    def _extra_parts(self, vals: Tensor) -> dict[str, Tensor]:
        return {}

    def _aux_loss(self, pre: Tensor, residual: Tensor, dead: Tensor | None) -> Tensor:
        """AuxK: the dead latents' top ``aux_k`` reconstruct the residual (module doc)."""
        n_dead = int(dead.sum()) if dead is not None else 0
        if n_dead == 0 or self.train_cfg.aux_coefficient == 0:
            return pre.new_zeros(())
        assert dead is not None
        aux_k = min(self.train_cfg.aux_k or max(1, self.cfg.d_in // 2), n_dead)
        masked = pre.masked_fill(~dead, float("-inf"))
        vals, idx = masked.topk(aux_k, dim=-1)
        # no ReLU here (as in SAELens): a dead latent's pre-activations are often all
        # negative, and only their raw values carry a gradient that can bring it back
        e_hat = decode_sparse(idx, vals, self.W_dec)
        scale = min(n_dead / aux_k, 1.0)
        return scale * (e_hat - residual).pow(2).sum(-1).mean()


class BatchTopKSAE(TopKSAE):
    """BatchTopK SAE (see the module doc): batch-level top-k in training, a threshold at
    inference."""

    architecture: ClassVar[str] = "batchtopk"

    def __init__(self, cfg: SAEConfig, train: TopKConfig | None = None) -> None:
        super().__init__(cfg, train or BatchTopKConfig(k=check_k(cfg.k, cfg.d_sae)))
        self.register_buffer("threshold", torch.zeros(cfg.d_sae))
        self.threshold: Tensor

    def activate(self, pre: Float[Tensor, "... d_sae"]) -> Float[Tensor, "... d_sae"]:
        return torch.relu(pre) * (pre > self.threshold)

    def loss(
        self, x: Float[Tensor, "n d_in"], coefficient: float, dead: Tensor | None = None,
    ) -> tuple[Tensor, dict[str, Tensor]]:
        pre = self.pre_acts(x)
        n, d_sae = pre.shape
        vals, flat = torch.relu(pre).flatten().topk(min(self.k * n, n * d_sae))
        token, latent = flat // d_sae, flat % d_sae
        order = torch.argsort(token, stable=True)
        token, latent, vals = token[order], latent[order], vals[order]
        offsets = torch.searchsorted(token, torch.arange(n, device=x.device))
        x_hat = F.embedding_bag(latent, self.W_dec, offsets, mode="sum",
                                per_sample_weights=vals) + self.b_dec
        mse = (x_hat - x).pow(2).sum(-1).mean()
        aux = self._aux_loss(pre, x - x_hat.detach(), dead)
        loss = mse + self.train_cfg.aux_coefficient * aux
        active = vals > 0
        fired = torch.zeros(d_sae, dtype=torch.bool, device=x.device)
        fired[latent[active]] = True
        l1 = (vals * self.W_dec.detach().norm(dim=1)[latent]).sum() / n
        kept = vals.detach()[active]
        low = kept.min() if kept.numel() else pre.new_zeros(())
        return loss, {"mse": mse.detach(), "l1": l1.detach(), "aux": aux.detach(),
                      "l0": active.float().sum() / n, "fired": fired,
                      "threshold_sample": low.detach()}

    @torch.no_grad()
    def after_step(self, parts: dict[str, Tensor]) -> None:
        """Unit-norm decoder rows, then the threshold's moving average moves towards the
        smallest activation this batch kept (set outright on the first step)."""
        super().after_step(parts)
        sample = parts.get("threshold_sample")
        if sample is None:
            return
        m = self.train_cfg.threshold_momentum if isinstance(
            self.train_cfg, BatchTopKConfig) else 0.99
        current = self.threshold[0]
        new = sample if float(current) == 0.0 else m * current + (1 - m) * sample
        self.threshold.fill_(float(new))

    def state_tensors(self) -> dict[str, Tensor]:
        return {"threshold": self.threshold}

    def load_state_tensors(self, tensors: dict[str, Tensor]) -> None:
        self.threshold.copy_(tensors["threshold"].float())
