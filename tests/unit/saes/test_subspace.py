"""An SAE's latents as an interchange subspace, scored beside DAS (tiny model, fast)."""

from __future__ import annotations

import json

import pytest
import torch

from interp.errors import InterpError
from saes.features.subspace import latent_basis, latent_subspace, sae_layer, top_latents
from saes.sae import SAEConfig, SparseAutoencoder
from tests.unit.interp.test_causal import _tiny_task_file


def _sae(d_in: int, hook: str = "blocks.1.hook_resid_post") -> SparseAutoencoder:
    sae = SparseAutoencoder(SAEConfig(d_in=d_in, d_sae=32, hook_point=hook, layer=1))
    sae.init_weights(torch.Generator().manual_seed(0))
    return sae


def test_top_latents_basis_and_layer():
    sae = _sae(8)
    g = torch.Generator().manual_seed(1)
    base = torch.randn(20, 8, generator=g)
    source = base.clone()
    # move the source along latent 5's decoder direction only: latent 5 changes most
    source += 3.0 * sae.W_dec.detach()[5] / sae.W_dec.detach()[5].norm()
    assert top_latents(sae, base, source, 1) == [int(
        (sae.encode(source) - sae.encode(base)).abs().mean(0).argmax())]
    b = latent_basis(sae, [5, 9, 2])
    torch.testing.assert_close(b.T @ b, torch.eye(3), atol=1e-5, rtol=0)
    proj = b @ b.T  # the decoder rows lie in the span
    rows = sae.W_dec.detach()[[5, 9, 2]]
    torch.testing.assert_close(rows @ proj, rows, atol=1e-5, rtol=1e-5)
    assert sae_layer("blocks.12.hook_resid_post") == 12
    with pytest.raises(InterpError, match="residual stream after a block"):
        latent_subspace(_sae(8, "blocks.1.hook_mlp_out"), 2)
    with pytest.raises(InterpError, match="sae-latents"):
        latent_subspace(sae, 8)


def test_run_das_scores_the_sae_subspace_at_its_layer(tiny_model, tmp_path):
    """The SAE's subspace is scored at its own layer only, as a rate on the held-out
    pairs; with every direction (an invertible decoder span) it is the full interchange."""
    from interp.causal import DASConfig, run_das

    d = tiny_model.d_model
    sae = _sae(d)
    res = run_das(tiny_model, DASConfig(task=_tiny_task_file(tmp_path), layers=[0, 1],
                                        position="animal", steps=3, folds=3,
                                        control=False),
                  subspaces={"SAE latents (4)": latent_subspace(sae, 4),
                             "SAE latents (all)": latent_subspace(sae, d - 1)},
                  progress=False)
    l0, l1 = res.layers
    assert l0.subspaces == {} and set(l1.subspaces) == {"SAE latents (4)", "SAE latents (all)"}
    rate = l1.subspaces["SAE latents (4)"]
    assert rate.n == res.n_pairs and 0 <= rate.value <= 1
    assert "SAE latents (4)" in res.headline().columns
    assert "SAE latents (4)" in res.to_frame().columns
    back = type(res).from_dict(json.loads(json.dumps(res.to_dict())))
    assert back.layers[1].subspaces["SAE latents (4)"].value == rate.value


def test_cli_das_with_an_sae(tiny_model_dir, tiny_model, tmp_path, capsys):
    from tests.support.cli_runner import run

    sae = SparseAutoencoder(SAEConfig(d_in=tiny_model.d_model, d_sae=32,
                                      hook_point="blocks.1.hook_resid_post", layer=1,
                                      model_id=tiny_model.model_id))
    sae.init_weights(torch.Generator().manual_seed(0))
    art = sae.save(tmp_path / "sae", manifest={})
    out = tmp_path / "out"
    code, stdout, err = run(["causal", "das", "--model", str(tiny_model_dir), "--task",
                             _tiny_task_file(tmp_path), "--layers", "1", "--position",
                             "animal", "--steps", "2", "--folds", "3", "--no-control",
                             "--sae", str(art), "--sae-latents", "4", "--out", str(out)],
                            capsys)
    assert code == 0, err
    data = json.loads((out / "results.json").read_text())
    assert "SAE latents (4)" in data["layers"][0]["subspaces"]
    assert "SAE latents (4)" in (out / "report.html").read_text()
