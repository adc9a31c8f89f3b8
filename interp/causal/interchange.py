"""Interchange interventions in a subspace, and distributed alignment search (DAS).

A counterfactual pair is a circuit task's pair read causally: the **base** is the
corrupted prompt (its label the ``wrong`` token), the **source** the clean prompt (its
label the ``answer``). An interchange intervention at (layer, position) replaces the
base's residual stream after block ``layer`` at that position (every token of the
position's span) by the source's, inside a subspace with orthonormal basis ``B``
(``d_model × k``)::

    h' = h_base + (h_source - h_base) · B Bᵀ

and runs the model on from block ``layer + 1`` (only those blocks:
:func:`~interp.models.forward.forward_from_block`). The intervention *succeeds* on a
pair when the model then prefers the source's label: logit(answer) − logit(wrong) > 0.
The interchange-intervention accuracy (IIA) is the share of pairs where it succeeds.
With ``B`` the identity (``k = d_model``) it is exact activation patching of the
residual stream at that position, the ceiling of every subspace.

**DAS** (Geiger et al. 2023) learns ``B``: an orthogonal parametrisation
(``torch.nn.utils.parametrizations.orthogonal``) of ``k`` orthonormal directions, trained
on the training pairs to maximise the log-sigmoid of the intervened logit difference
(the pairwise form of "output the source's label"), then scored on held-out pairs. Only
``B`` is trained; the model's weights get no gradient.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from jaxtyping import Bool, Float, Int
from torch import Tensor

from interp.circuits.patching import cache_run, ld_direction, ld_from_block
from interp.circuits.tasks import END, TokenizedTask
from interp.errors import InterpError
from interp.models.loading import Model


def position_mask(tt: TokenizedTask, position: str) -> Bool[Tensor, "pairs width"]:
    """The tokens of ``position`` (a role label of the task, or ``END``) in each pair."""
    if position not in tt.positions:
        raise InterpError(f"unknown position {position!r}: the task's positions are "
                          f"{', '.join(tt.positions)}")
    return tt.position_mask[:, tt.positions.index(position)]


def residuals(
    model: Model, tt: TokenizedTask, layer: int, batch_size: int = 32,
) -> tuple[Float[Tensor, "pairs width d_model"], Float[Tensor, "pairs width d_model"]]:
    """The base (corrupted) and source (clean) runs' residual stream after ``layer``."""
    name = model.resid_hook(layer)
    base = cache_run(model, tt.corrupted_ids, tt, [name], batch_size)[name]
    source = cache_run(model, tt.clean_ids, tt, [name], batch_size)[name]
    return base, source


def interchange(
    base: Float[Tensor, "b width d"], source: Float[Tensor, "b width d"],
    where: Bool[Tensor, "b width"], basis: Float[Tensor, "d k"],
) -> Float[Tensor, "b width d"]:
    """``base`` with its component in ``span(basis)`` taken from ``source`` where ``where``."""
    delta = ((source - base).to(basis.dtype) @ basis) @ basis.T
    return base + where[..., None].to(delta.dtype) * delta.to(base.dtype)


def intervened_ld(
    model: Model, tt: TokenizedTask, idx: Int[Tensor, " b"], layer: int,
    base: Float[Tensor, "pairs width d"], source: Float[Tensor, "pairs width d"],
    where: Bool[Tensor, "pairs width"], basis: Float[Tensor, "d k"],
) -> Float[Tensor, " b"]:
    """logit(answer) − logit(wrong) of pairs ``idx`` with the interchange at ``layer``
    (under the caller's grad mode: differentiable in ``basis``)."""
    h = interchange(base[idx], source[idx], where[idx], basis)
    d = ld_direction(model, tt.answer[idx], tt.wrong[idx])
    return ld_from_block(model, h, layer + 1, tt.attention_mask[idx], d, ())


def interchange_lds(
    model: Model, tt: TokenizedTask, idx: Sequence[int], layer: int,
    base: Float[Tensor, "pairs width d"], source: Float[Tensor, "pairs width d"],
    where: Bool[Tensor, "pairs width"], basis: Float[Tensor, "d k"], batch_size: int = 32,
) -> Float[Tensor, " n"]:
    """:func:`intervened_ld` of every pair in ``idx``, in batches, without gradients."""
    out = []
    with torch.no_grad():
        for s in range(0, len(idx), batch_size):
            i = torch.as_tensor(list(idx[s:s + batch_size]), dtype=torch.long)
            out.append(intervened_ld(model, tt, i, layer, base, source, where,
                                     basis.detach()).cpu())
    return torch.cat(out) if out else torch.empty(0)


def random_basis(d: int, k: int, seed: int) -> Float[Tensor, "d k"]:
    """``k`` orthonormal directions drawn uniformly (QR of a Gaussian matrix)."""
    g = torch.Generator().manual_seed(seed)
    q, r = torch.linalg.qr(torch.randn(d, k, generator=g, dtype=torch.float64))
    return (q * torch.sign(torch.diagonal(r))).float()


def train_das(
    model: Model, tt: TokenizedTask, train: Sequence[int], layer: int,
    base: Float[Tensor, "pairs width d"], source: Float[Tensor, "pairs width d"],
    where: Bool[Tensor, "pairs width"], *, dim: int = 1, steps: int = 200,
    lr: float = 1e-2, batch_size: int = 32, seed: int = 0,
    targets: Float[Tensor, " pairs"] | None = None,
) -> tuple[Float[Tensor, "d k"], list[float]]:
    """A DAS basis (``d_model × dim``, orthonormal columns) and the loss at each step.

    ``targets[i]`` is +1 where pair ``i``'s intervention should give the source's label
    (the default for every pair) and −1 where it should keep the base's (the control
    task's random labels). Mini-batches of ``batch_size`` training pairs, drawn with
    ``seed``; Adam at ``lr``.
    """
    d = base.shape[-1]
    if not 1 <= dim < d:
        raise InterpError(f"dim {dim} must be between 1 and d_model − 1 ({d - 1})")
    if not train:
        raise InterpError("no training pairs")
    torch.manual_seed(seed)
    rot = torch.nn.utils.parametrizations.orthogonal(torch.nn.Linear(d, dim, bias=False))
    opt = torch.optim.Adam(rot.parameters(), lr=lr)
    g = torch.Generator().manual_seed(seed)
    pool = torch.as_tensor(list(train), dtype=torch.long)
    t = torch.ones(base.shape[0]) if targets is None else targets.float()
    losses: list[float] = []
    for _ in range(steps):
        idx = pool[torch.randperm(len(pool), generator=g)[:batch_size]]
        basis = _basis(rot)
        ld = intervened_ld(model, tt, idx, layer, base, source, where, basis)
        loss = torch.nn.functional.softplus(-t[idx].to(ld.device) * ld).mean()
        grads = torch.autograd.grad(loss, list(rot.parameters()))
        for p, gr in zip(rot.parameters(), grads, strict=True):
            p.grad = gr
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(float(loss.detach()))
    with torch.no_grad():
        return _basis(rot).detach().clone().float(), losses


def _basis(rot: torch.nn.Module) -> Float[Tensor, "d k"]:
    """The orthonormal columns of a parametrised ``Linear(d, k)``: its weight's rows."""
    weight = rot.weight
    assert isinstance(weight, Tensor)
    return weight.T


__all__ = ["END", "interchange", "interchange_lds", "intervened_ld", "position_mask",
           "random_basis", "residuals", "train_das"]
