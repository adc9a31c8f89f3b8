"""The SAE family (issue 18): TopK, BatchTopK and JumpReLU beside ReLU + L1."""

from __future__ import annotations

import math
import shutil

import pytest
import torch

from interp.errors import InterpError
from saes.architectures import (
    ARCHITECTURES,
    BatchTopKConfig,
    JumpReLUConfig,
    ReLUConfig,
    TopKConfig,
    arch_config,
    arch_config_from_dict,
    sae_class,
)
from saes.architectures.jumprelu import jumprelu, step
from saes.architectures.topk import decode_sparse
from saes.loading import load_sae, sae_from_tensors
from saes.sae import SAEConfig
from saes.train import SAETrainConfig, train_sae
from tests.support.text_fixtures import paragraphs

ARCHS = {
    "relu": ReLUConfig(1.0),
    "topk": TopKConfig(k=8),
    "batchtopk": BatchTopKConfig(k=8),
    "jumprelu": JumpReLUConfig(l0_coefficient=0.05),
}


@pytest.fixture(scope="module")
def docs() -> list[str]:
    return paragraphs(150)


def _cfg(arch, **kw) -> SAETrainConfig:
    base = dict(layer=1, d_sae=128, tokens=64 * 24, batch_size=64, lr=3e-3, seq_len=16,
                windows_per_chunk=8, checkpoint_every=5, dead_window=256, arch=arch)
    base.update(kw)
    return SAETrainConfig(**base)


def _sae(name: str, d_in: int = 16, d_sae: int = 64, seed: int = 0):
    arch = ARCHS[name]
    cfg = SAEConfig(d_in=d_in, d_sae=d_sae, hook_point="h", **arch.sae_fields())
    sae = sae_class(name)(cfg, arch)
    sae.init_weights(torch.Generator().manual_seed(seed))
    return sae


# ------------------------------------------------------------------ registry and configs


def test_registry_names_every_architecture_and_round_trips_settings():
    assert list(ARCHITECTURES) == ["relu", "topk", "batchtopk", "jumprelu"]
    from dataclasses import asdict

    for arch in ARCHS.values():
        assert arch_config_from_dict(asdict(arch)) == arch
    # the CLI passes every option; each architecture takes its own
    assert arch_config("topk", k=5, l1_coefficient=3.0, l0_coefficient=None) == TopKConfig(k=5)
    assert arch_config("relu", k=5, l1_coefficient=3.0) == ReLUConfig(3.0)
    with pytest.raises(InterpError, match="unknown SAE architecture 'gated': use relu, topk"):
        arch_config("gated")
    with pytest.raises(InterpError, match="unknown SAE architecture"):
        SAEConfig(d_in=4, d_sae=8, hook_point="h", architecture="gated")
    # the library names the field (the CLI shows --k: BAD_INPUTS in tests/unit/saes/test_sae.py)
    with pytest.raises(InterpError,
                       match=r"SAEConfig: k must be an integer from 1 to d_sae = 8, got 9"):
        SAEConfig(d_in=4, d_sae=8, hook_point="h", architecture="topk", k=9)
    # a SAETrainConfig read back from config.json rebuilds its architecture
    cfg = SAETrainConfig(arch=TopKConfig(k=16), d_sae=64)
    again = SAETrainConfig(**asdict(cfg))
    assert again.arch == TopKConfig(k=16) and again == cfg


# ------------------------------------------------------------------ activations


def test_topk_keeps_exactly_k_latents_per_token():
    sae = _sae("topk")
    x = torch.randn(200, 16) * 3
    f = sae.encode(x)
    assert ((f > 0).sum(-1) <= 8).all()
    pre = sae.pre_acts(x)
    kth = pre.topk(8, dim=-1).values[:, -1:]
    # every latent above the k-th pre-activation of its token is kept (when positive)
    assert torch.equal(f > 0, (pre >= kth) & (pre > 0))
    assert ((f > 0).sum(-1) == 8).float().mean() > 0.9  # almost always all k positive
    # training's sparse decode equals the dense product with the scattered f
    vals, idx = pre.topk(8, dim=-1)
    vals = torch.relu(vals)
    dense = f @ sae.W_dec
    torch.testing.assert_close(decode_sparse(idx, vals, sae.W_dec), dense, atol=1e-5, rtol=1e-5)


def _dense_reference_loss(sae, x: torch.Tensor, dead: torch.Tensor) -> torch.Tensor:  # noqa: ANN001
    """The TopK/BatchTopK loss with plain autograd through the dense pre-activations."""
    import torch.nn.functional as F  # noqa: N812

    pre = sae.pre_acts(x)
    n, m = pre.shape
    if sae.architecture == "topk":
        vals, idx = pre.topk(sae.k, dim=-1)
        f = torch.zeros_like(pre).scatter(-1, idx, torch.relu(vals))
    else:
        flat = torch.relu(pre).flatten()
        keep = flat.topk(sae.k * n).indices
        f = torch.zeros_like(flat).scatter(0, keep, flat[keep]).view(n, m)
    x_hat = f @ sae.W_dec + sae.b_dec
    loss = (x_hat - x).pow(2).sum(-1).mean()
    if dead.any():
        aux_k = min(sae.train_cfg.aux_k or sae.cfg.d_in // 2, int(dead.sum()))
        vals, idx = pre.masked_fill(~dead, float("-inf")).topk(aux_k, dim=-1)
        e_hat = F.embedding_bag(idx, sae.W_dec, per_sample_weights=vals, mode="sum")
        e = (x - x_hat).detach()
        scale = min(int(dead.sum()) / aux_k, 1.0)
        loss = loss + sae.train_cfg.aux_coefficient * scale * (e_hat - e).pow(2).sum(-1).mean()
    return loss


@pytest.mark.parametrize("name", ["topk", "batchtopk"])
@pytest.mark.parametrize("dead_fraction", [0.0, 0.5], ids=["no-dead", "half-dead"])
@pytest.mark.parametrize("m", [64, 256], ids=["dense-branch", "sparse-branch"])
def test_sparse_backward_equals_dense_autograd(name, dead_fraction, m):
    """The selected-entries encoder gradient (no input gradient; a sparse matmul when k/m is
    below SPARSE_GRAD_MAX_DENSITY, else a dense one) is the gradient of the dense
    formulation, with and without AuxK's dead latents."""
    g = torch.Generator().manual_seed(0)
    sae = _sae(name, d_in=24, d_sae=m)
    with torch.no_grad():
        sae.b_dec.normal_(0, 0.3, generator=g)
        sae.b_enc.normal_(0, 0.1, generator=g)
    x = torch.randn(40, 24, generator=g)
    dead = torch.zeros(m, dtype=torch.bool)
    dead[: int(dead_fraction * m)] = True
    loss, _ = sae.loss(x, 0.0, dead)
    fast = torch.autograd.grad(loss, [sae.W_enc, sae.b_enc, sae.W_dec, sae.b_dec])
    ref_loss = _dense_reference_loss(sae, x, dead)
    ref = torch.autograd.grad(ref_loss, [sae.W_enc, sae.b_enc, sae.W_dec, sae.b_dec])
    assert float(loss) == pytest.approx(float(ref_loss), rel=1e-5)
    for name_, a, b in zip(("W_enc", "b_enc", "W_dec", "b_dec"), fast, ref, strict=True):
        assert torch.allclose(a, b, atol=1e-5, rtol=1e-4), name_


def test_batchtopk_keeps_k_per_token_on_average_and_learns_its_threshold():
    sae = _sae("batchtopk")
    x = torch.randn(128, 16) * 3
    loss, parts = sae.loss(x, 0.0, None)
    assert float(parts["l0"]) == pytest.approx(8.0, abs=0.05)  # k·n kept over the batch
    assert float(sae.threshold[0]) == 0.0
    sae.after_step(parts)
    first = float(sae.threshold[0])
    assert first == pytest.approx(float(parts["threshold_sample"])) and first > 0
    # inference: ReLU(pre) above the threshold, the JumpReLU form
    pre = sae.pre_acts(x)
    torch.testing.assert_close(sae.encode(x), torch.relu(pre) * (pre > first))
    # the moving average moves towards later samples by (1 − momentum)
    parts["threshold_sample"] = torch.tensor(first + 1.0)
    sae.after_step(parts)
    assert float(sae.threshold[0]) == pytest.approx(first + 0.01, rel=1e-5)


def test_batchtopk_calibration_sets_the_mean_batch_cut_of_the_final_weights():
    sae = _sae("batchtopk")
    batches = [torch.randn(128, 16) * 3 for _ in range(3)]
    sae.threshold.fill_(5.0)  # a moving average left behind by the weights
    cuts = []
    for x in batches:  # the smallest activation batch top-k keeps, by brute force
        act = torch.relu(sae.pre_acts(x)).detach()
        cuts.append(float(act.flatten().sort(descending=True).values[8 * 128 - 1]))
    info = sae.calibrate(batches)
    assert float(sae.threshold[0]) == pytest.approx(sum(cuts) / 3, rel=1e-6)
    assert info["threshold_moving_average"] == 5.0
    assert info["threshold"] == pytest.approx(sum(cuts) / 3, rel=1e-6)
    l0 = torch.cat([(sae.encode(x) > 0).float().sum(-1) for x in batches]).mean()
    assert float(l0) == pytest.approx(8.0, rel=0.05)  # the k it was trained for
    sae.calibrate(batches, mean_over_ranks=lambda t: t * 2)  # the DDP average is applied
    assert float(sae.threshold[0]) == pytest.approx(2 * sum(cuts) / 3, rel=1e-6)
    assert sae.calibrate([]) == {} and _sae("topk").calibrate(batches) == {}


def test_batchtopk_training_ends_with_a_calibrated_threshold(tiny_model, docs, tmp_path):
    """The saved threshold is the final weights' mean batch cut over the last steps'
    batches, so the SAE's inference L0 on the text it saw is its k."""
    from saes.store import ActivationStore
    from saes.train import CALIBRATION_STEPS

    cfg = _cfg(ARCHS["batchtopk"])
    res = train_sae(tiny_model, docs, tmp_path, cfg, progress=False)
    loaded = load_sae(tmp_path / "sae", tiny_model)
    sae, cal = loaded.sae, loaded.config["calibration"]
    assert res.calibration == cal and res.to_dict()["calibration"] == cal
    assert float(sae.threshold[0]) == pytest.approx(cal["threshold"], rel=1e-6)
    assert cal["tokens"] == CALIBRATION_STEPS * cfg.batch_size
    store = ActivationStore(tiny_model, docs, cfg.store_config(), batch_size=cfg.batch_size)
    x = torch.cat([store.batch(s) for s in range(cfg.steps - CALIBRATION_STEPS, cfg.steps)])
    l0 = float((sae.encode(x) > 0).float().sum(-1).mean())
    assert l0 == pytest.approx(8.0, rel=0.1)
    # Killed after the last checkpoint, before the SAE was written: the resumed run trains
    # no step, draws the last batches again from the store, and sets the same threshold.
    shutil.rmtree(tmp_path / "sae")
    again = train_sae(tiny_model, docs, tmp_path, cfg, progress=False)
    assert again.calibration == cal


def test_jumprelu_threshold_and_its_straight_through_gradients():
    pre = torch.tensor([[0.10, 0.2005, 0.30, -1.0]], requires_grad=True)
    theta = torch.tensor([0.2, 0.2, 0.2, 0.2], requires_grad=True)
    eps = 0.002
    out = jumprelu(pre, theta, eps)
    # below the threshold: 0; above: the identity
    assert out.detach().tolist() == [[0.0, pytest.approx(0.2005), pytest.approx(0.30), 0.0]]
    out.sum().backward()
    assert pre.grad is not None and theta.grad is not None
    assert pre.grad.tolist() == [[0.0, 1.0, 1.0, 0.0]]
    # only latent 1 is within ε/2 of θ: ∂/∂θ = −(θ/ε)·K = −0.2 / 0.002
    assert theta.grad.tolist() == [0.0, pytest.approx(-100.0), 0.0, 0.0]
    theta.grad = None
    step(pre, theta, eps).sum().backward()
    assert theta.grad.tolist() == [0.0, pytest.approx(-1 / eps), 0.0, 0.0]
    # the SAE: a latent fires only above its own threshold
    sae = _sae("jumprelu")
    with torch.no_grad():
        sae.log_threshold.copy_(torch.linspace(-3, 1, 64))
    x = torch.randn(50, 16)
    f, p = sae.encode(x), sae.pre_acts(x)
    assert torch.equal(f > 0, p > sae.threshold)
    assert torch.equal(f[f > 0], p[f > 0])


# ------------------------------------------------------------------ training


@pytest.mark.parametrize("name", list(ARCHS))
def test_training_lowers_the_loss_and_saves_the_architecture(name, tiny_model, docs, tmp_path):
    res = train_sae(tiny_model, docs, tmp_path, _cfg(ARCHS[name]), progress=False)
    h = res.history
    first, last = sum(h["mse"][:3]) / 3, sum(h["mse"][-3:]) / 3
    print(name, first, last)
    assert last < 0.8 * first, (first, last)
    loaded = load_sae(tmp_path / "sae", tiny_model)
    sae = loaded.sae
    assert type(sae) is sae_class(name) and sae.cfg.architecture == name
    assert loaded.config["train"]["arch"]["name"] == name
    if name in ("topk", "batchtopk"):
        assert sae.cfg.k == 8
        assert sum(h["l0"][-3:]) / 3 == pytest.approx(8.0, abs=0.5)
    if sae.unit_decoder:  # the saved SAE takes raw activations: rows are 1 / scale
        norms = sae.W_dec.norm(dim=1)
        torch.testing.assert_close(norms, norms.mean().expand_as(norms), rtol=1e-4, atol=0)
    if name == "jumprelu":  # thresholds moved from their initial value, all finite
        assert torch.isfinite(sae.threshold).all()
        assert not torch.allclose(sae.threshold, torch.full_like(sae.threshold, 0.001))


@pytest.mark.parametrize("name", ["topk", "batchtopk", "jumprelu"])
def test_interrupted_run_resumes_to_the_same_state(name, tiny_model, docs, tmp_path):
    from interp.runs.artifacts import load_artifact

    cfg = _cfg(ARCHS[name], tokens=64 * 12, checkpoint_every=3)
    full = train_sae(tiny_model, docs, tmp_path / "full", cfg, progress=False)
    train_sae(tiny_model, docs, tmp_path / "cut", cfg, stop_at=6, progress=False)
    resumed = train_sae(tiny_model, docs, tmp_path / "cut", cfg, progress=False)
    assert resumed.resumed_from == 6 and resumed.history == full.history
    a, b = load_artifact(tmp_path / "full" / "sae"), load_artifact(tmp_path / "cut" / "sae")
    assert set(a.tensors) == set(b.tensors)
    for key in a.tensors:
        assert torch.equal(a.tensors[key], b.tensors[key]), key


def test_auxk_revives_dead_latents(tiny_model, docs, tmp_path):
    """Half the latents start dead (encoder bias 3 below the others: their
    pre-activations, about unit-normal, hardly ever reach the top k). With AuxK their
    share of dead latents falls; with the AuxK weight at 0 they stay dead."""
    import saes.train as tr

    real_init = tr.SparseAutoencoder.init_weights

    def half_dead(self, generator, dec_norm=0.1):
        real_init(self, generator, dec_norm)
        with torch.no_grad():
            self.b_enc[: self.cfg.d_sae // 2] = -3.0

    dead = {}
    for label, coef in (("aux", 1 / 32), ("none", 0.0)):
        cfg = _cfg(TopKConfig(k=4, aux_coefficient=coef), tokens=64 * 60, dead_window=64 * 3,
                   checkpoint_every=100, lr=1e-2)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(tr.SparseAutoencoder, "init_weights", half_dead)
            res = train_sae(tiny_model, docs, tmp_path / label, cfg, progress=False)
        dead[label] = res.history["dead_fraction"]
    print(dead["aux"][::5], dead["none"][::5])
    assert dead["none"][-1] >= 0.45  # without AuxK nothing pulls them back
    assert dead["aux"][-1] < dead["none"][-1] - 0.1, (dead["aux"][-1], dead["none"][-1])


# ------------------------------------------------------------------ loading


def test_nan_threshold_is_refused_in_one_line():
    for name in ("jumprelu", "batchtopk"):
        sae = _sae(name)
        t = {k: v.clone() for k, v in sae.tensors().items()}
        t["threshold"][3] = math.nan
        with pytest.raises(InterpError, match=f"{name} SAE tensor threshold has 1 non-finite"):
            sae_from_tensors(sae.cfg, t)
    sae = _sae("jumprelu")
    t = {k: v.clone() for k, v in sae.tensors().items()}
    t["threshold"][0] = 0.0
    with pytest.raises(InterpError, match="JumpReLU threshold must be positive"):
        sae_from_tensors(sae.cfg, t)
    del t["threshold"]
    with pytest.raises(InterpError, match="jumprelu SAE weights lack threshold"):
        sae_from_tensors(sae.cfg, t)


@pytest.mark.parametrize("name", ["topk", "batchtopk", "jumprelu"])
def test_eval_and_browser_read_every_architecture(name, tiny_model, docs, tmp_path):
    """``sae eval``'s metrics and the browser run on each architecture; a TopK SAE's
    held-out L0 is its k, and the result records the architecture."""
    from saes import BrowserConfig, SAEEvalConfig, collect_browser_data, evaluate_sae

    train_sae(tiny_model, docs, tmp_path, _cfg(ARCHS[name], tokens=64 * 6), progress=False)
    sae = load_sae(tmp_path / "sae", tiny_model).sae
    res = evaluate_sae(tiny_model, sae, docs, SAEEvalConfig(tokens=15 * 6, ce_tokens=14 * 4,
                                                            seq_len=16, n_bootstrap=50))
    d = res.to_dict()
    assert d["architecture"] == name and d.get("k") == sae.cfg.k
    assert math.isfinite(res.explained_variance) and math.isfinite(res.ce_loss_score)
    if name == "topk":
        assert res.l0 == pytest.approx(8.0, abs=0.3)
    data = collect_browser_data(tiny_model, sae, docs, BrowserConfig(
        tokens=16 * 8, seq_len=16, features="alive:3"))
    assert len(data.to_dict()["features"]) == 3


# ------------------------------------------------------------------ the real model
