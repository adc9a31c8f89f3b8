"""Weights read per family: the projections tools read directly, in one convention.

Hugging Face stores a linear map as ``nn.Linear`` (``weight [out, in]``) in most families
and as GPT-2's ``Conv1D`` (``weight [in, out]``) in GPT-2; a tool reading a weight gets it
here as ``[out, in]`` whatever the module, with its bias (``None`` without one).
"""

from __future__ import annotations

from typing import Any

from jaxtyping import Float
from torch import Tensor

from interp.models.loading import Model
from interp.models.unembedding import wrapped_module


def linear(module: Any, *, stored: bool = False,
           ) -> tuple[Float[Tensor, "out in"], Float[Tensor, " out"] | None]:
    """A linear map's weight as ``[out, in]`` and its bias, from an ``nn.Linear``, a GPT-2
    ``Conv1D`` or a bridge component wrapping either (detached; float32, or with
    ``stored`` in the module's own dtype: a view, no copy of a large matrix)."""
    inner = wrapped_module(module)
    weight = getattr(inner, "weight", None)
    if not isinstance(weight, Tensor):
        raise TypeError(f"{type(inner).__name__} has no weight")
    if type(inner).__name__ == "Conv1D":  # transformers' GPT-2 layer: x @ W + b
        weight = weight.T
    bias = getattr(inner, "bias", None)
    bias = bias.detach() if isinstance(bias, Tensor) else None
    if stored:
        return weight.detach(), bias
    return weight.detach().float(), None if bias is None else bias.float()


def attn_out(model: Model, layer: int) -> tuple[
        Float[Tensor, "d_model heads_d_head"], Float[Tensor, " d_model"] | None]:
    """Attention's output projection at ``layer``: ``W_O`` as ``[d_model, n_heads·d_head]``
    (head ``h``'s columns are ``h·d_head … (h+1)·d_head − 1``) and its bias ``b_O``."""
    return linear(model.bridge.blocks[layer].attn.o)


def unembedding(model: Model, *, stored: bool = False) -> Float[Tensor, "vocab d_model"]:
    """The unembedding matrix ``W_U`` as ``[vocab, d_model]`` (rows are tokens; float32, or
    with ``stored`` in the model's dtype, for reading a few rows of it)."""
    return linear(model.bridge.unembed, stored=stored)[0]


__all__ = ["attn_out", "linear", "unembedding"]
