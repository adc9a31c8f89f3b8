"""An SAE's latents as a subspace for interchange interventions (scored beside DAS).

At the SAE's own layer (its hook point must be ``blocks.L.hook_resid_post``, the stream
DAS intervenes on), the ``k`` latents whose activations differ most between the source
and the base prompts at the position, averaged over the **training** pairs' tokens there
(``mean |f(source) − f(base)|``), span the subspace: their decoder directions,
orthonormalised (QR). Swapping that subspace from source to base is the interchange of
those latents' decoder span, the test MIB (2025) runs for SAE features against DAS.
"""

from __future__ import annotations

import re

import torch
from jaxtyping import Bool, Float
from torch import Tensor

from interp.errors import InterpError
from saes.loading import LoadedSAE, unpack_sae
from saes.sae import SparseAutoencoder

_RESID_POST = re.compile(r"^blocks\.(\d+)\.hook_resid_post$")


def sae_layer(hook_point: str) -> int:
    """The layer of a ``blocks.L.hook_resid_post`` hook point (a one-line error otherwise)."""
    m = _RESID_POST.match(hook_point)
    if m is None:
        raise InterpError(f"the SAE reads {hook_point}; an interchange needs an SAE of the "
                          "residual stream after a block (blocks.L.hook_resid_post)")
    return int(m.group(1))


def top_latents(
    sae: SparseAutoencoder, base: Float[Tensor, "n d"], source: Float[Tensor, "n d"], k: int
) -> list[int]:
    """The ``k`` latents with the largest mean ``|f(source) − f(base)|`` over the rows."""
    with torch.no_grad():
        diff = (sae.encode(source.float()) - sae.encode(base.float())).abs().mean(0)
    return torch.argsort(diff, descending=True, stable=True)[:k].tolist()


def latent_basis(sae: SparseAutoencoder, latents: list[int]) -> Float[Tensor, "d k"]:
    """The latents' decoder directions, orthonormalised (QR, signs fixed)."""
    q, r = torch.linalg.qr(sae.W_dec.detach()[latents].double().T)
    return (q * torch.sign(torch.diagonal(r))).float()


def latent_subspace(sae: SparseAutoencoder | LoadedSAE, k: int):  # noqa: ANN201
    """A :data:`interp.causal.das.SubspaceFn`: at the SAE's layer, the span of its ``k``
    most source-vs-base-different latents (chosen on the training pairs); elsewhere None."""
    model_sae, _ = unpack_sae(sae)
    layer_of_sae = sae_layer(model_sae.cfg.hook_point)
    if not 1 <= k < model_sae.cfg.d_in:
        raise InterpError(f"--sae-latents {k} must be between 1 and d_in − 1 "
                          f"({model_sae.cfg.d_in - 1})")

    def fn(layer: int, base: Tensor, source: Tensor, where: Bool[Tensor, "p w"],
           train: list[int]) -> Tensor | None:
        if layer != layer_of_sae:
            return None
        idx = torch.as_tensor(train, dtype=torch.long)
        w = where[idx]
        latents = top_latents(model_sae, base[idx][w], source[idx][w], k)
        return latent_basis(model_sae, latents)

    return fn


__all__ = ["latent_basis", "latent_subspace", "sae_layer", "top_latents"]
