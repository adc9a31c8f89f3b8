"""Splicing an SAE (or an ablation) into the model's forward pass.

Each hook replaces the activation at the SAE's hook point with something else at every
position **but the first**: position 0 is the attention sink (its residual norm is about 7×
the others'), SAEs are trained without it, and replacing it would measure the sink rather
than the SAE. The ablation baselines of the CE-loss score leave it alone for the same
reason, so the score compares like with like.

    with spliced(model, sae):
        logits = model.logits(ids)          # the model running on x̂ instead of x
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch
from jaxtyping import Float
from torch import Tensor

from interp.models.loading import Model
from saes.sae import SparseAutoencoder

Replace = Callable[[Float[Tensor, "b pos d"]], Float[Tensor, "b pos d"]]


def sae_replacement(sae: SparseAutoencoder) -> Replace:
    """``x → x̂ = sae(x)``."""

    def fn(x: Tensor) -> Tensor:
        return sae(x.float()).to(x.dtype)

    return fn


def zero_replacement() -> Replace:
    """``x → 0`` (the zero-ablation baseline)."""
    return torch.zeros_like


def mean_replacement(mean: Float[Tensor, " d"]) -> Replace:
    """``x → x̄`` (the mean-ablation baseline; ``mean`` over held-out tokens, position 0 out)."""

    def fn(x: Tensor) -> Tensor:
        return mean.to(device=x.device, dtype=x.dtype).expand_as(x).clone()

    return fn


def replace_after_first(replace: Replace) -> Callable[..., Tensor]:
    """A TransformerLens hook applying ``replace`` to positions 1…, keeping position 0."""

    def hook(tensor: Tensor, hook=None) -> Tensor:  # noqa: ANN001, ARG001 (TL hook signature)
        out = tensor.clone()
        out[:, 1:] = replace(tensor[:, 1:])
        return out

    return hook


@contextmanager
def spliced(model: Model, sae: SparseAutoencoder, hook_point: str | None = None) -> Iterator[None]:
    """Run ``model`` with ``sae``'s reconstruction in place of its input (positions 1…)."""
    name = hook_point or sae.cfg.hook_point
    with model.bridge.hooks(fwd_hooks=[(name, replace_after_first(sae_replacement(sae)))]):
        yield


@torch.no_grad()
def logits_with(
    model: Model, ids: Tensor, hook_point: str, replace: Replace | None
) -> Float[Tensor, "b pos vocab"]:
    """Full-forward logits with ``replace`` applied at ``hook_point`` (``None``: clean)."""
    hooks = [] if replace is None else [(hook_point, replace_after_first(replace))]
    mask = torch.ones_like(ids)
    with model.bridge.hooks(fwd_hooks=hooks):
        return model.logits(ids.to(model.device), mask.to(model.device)).float()
