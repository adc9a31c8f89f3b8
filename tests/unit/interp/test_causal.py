"""Interchange interventions and DAS on the tiny random model (fast)."""

from __future__ import annotations

import pytest
import torch

from interp.causal import (
    interchange,
    interchange_lds,
    position_mask,
    random_basis,
    residuals,
    train_das,
)
from interp.circuits import components, exact_patch, pair_lds, tokenize_task
from interp.errors import InterpError
from tests.unit.interp.test_circuits import _task, tiny_pair_list


@pytest.fixture(scope="module")
def tt(tiny_model):
    return tokenize_task(tiny_model, _task(tiny_pair_list()))


def test_full_interchange_is_exact_resid_patching(tiny_model, tt):
    """With the identity basis the intervention is exact patching of the residual stream
    at that position; with no basis (k = 0) it is the base run."""
    d = tiny_model.d_model
    where = position_mask(tt, "animal")
    _, corr = pair_lds(tiny_model, tt, 8)
    for layer in range(tiny_model.n_layers - 1):
        base, source = residuals(tiny_model, tt, layer)
        full = interchange_lds(tiny_model, tt, [0, 1], layer, base, source, where,
                               torch.eye(d))
        comps = components("resid", [layer], 4, len(tt.positions), False)
        ref = exact_patch(tiny_model, tt, "resid", comps, batch_size=8, progress=False)
        torch.testing.assert_close(full, ref[:, tt.positions.index("animal")], atol=1e-4,
                                   rtol=1e-4)
        none = interchange_lds(tiny_model, tt, [0, 1], layer, base, source, where,
                               torch.zeros(d, 1))
        torch.testing.assert_close(none, corr, atol=1e-4, rtol=1e-4)


def test_interchange_only_moves_the_subspace():
    g = torch.Generator().manual_seed(0)
    base, source = torch.randn(3, 5, 8, generator=g), torch.randn(3, 5, 8, generator=g)
    where = torch.zeros(3, 5, dtype=torch.bool)
    where[:, 2] = True
    basis = random_basis(8, 2, seed=1)
    torch.testing.assert_close(basis.T @ basis, torch.eye(2), atol=1e-6, rtol=0)
    out = interchange(base, source, where, basis)
    assert torch.equal(out[:, [0, 1, 3, 4]], base[:, [0, 1, 3, 4]])
    proj = basis @ basis.T
    torch.testing.assert_close(out[:, 2] @ proj, source[:, 2] @ proj, atol=1e-5, rtol=0)
    torch.testing.assert_close(out[:, 2] - out[:, 2] @ proj, base[:, 2] - base[:, 2] @ proj,
                               atol=1e-5, rtol=0)


def test_das_learns_a_direction_that_beats_random(tiny_model, tt):
    """On two pairs, DAS's one direction moves the logit difference towards the source's
    label far more than a random direction does, and its basis stays orthonormal."""
    layer = 0
    base, source = residuals(tiny_model, tt, layer)
    where = position_mask(tt, "animal")
    basis, losses = train_das(tiny_model, tt, [0, 1], layer, base, source, where, dim=1,
                              steps=60, lr=0.05, seed=0)
    assert basis.shape == (tiny_model.d_model, 1)
    torch.testing.assert_close(basis.T @ basis, torch.eye(1), atol=1e-5, rtol=0)
    assert losses[-1] < losses[0]
    _, corr = pair_lds(tiny_model, tt, 8)
    das = interchange_lds(tiny_model, tt, [0, 1], layer, base, source, where, basis)
    rand = interchange_lds(tiny_model, tt, [0, 1], layer, base, source, where,
                           random_basis(tiny_model.d_model, 1, seed=3))
    assert ((das - corr) - (rand - corr)).min() > 0
    with pytest.raises(InterpError, match="dim"):
        train_das(tiny_model, tt, [0], layer, base, source, where, dim=tiny_model.d_model)
    with pytest.raises(InterpError, match="unknown position"):
        position_mask(tt, "nowhere")
