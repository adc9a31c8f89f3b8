"""SAE maths, activation store, trainer (resume, NaN, settings), metrics and CLI, on the tiny model.

The real-model checks (a short layer-6 run that must beat its ablation baselines) are at
the end, marked slow.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from interp.errors import InterpError
from saes.architectures import BatchTopKConfig, JumpReLUConfig, ReLUConfig, TopKConfig
from saes.loading import load_sae, sae_from_tensors
from saes.metrics import SAEEvalConfig, evaluate_sae
from saes.sae import SAEConfig, SparseAutoencoder
from saes.splice import logits_with, sae_replacement
from saes.store import ActivationStore, StoreConfig, capture_windows
from saes.train import SAETrainConfig, train_sae
from tests.support.bad_inputs import (
    Case,
    M,
    _foreign_sae,
    _text,
    _tiny_sae,
    _truncated_sae,
    _under_file,
)
from tests.support.cli_runner import run
from tests.support.text_fixtures import paragraphs, text_file_fixture


@pytest.fixture(scope="module")
def docs() -> list[str]:
    return paragraphs(150)


text_file = text_file_fixture(300, seed=1)


def _sae(d: int, m: int, hook: str = "blocks.1.hook_resid_post", seed: int = 0,
         scale: float = 1.0) -> SparseAutoencoder:
    sae = SparseAutoencoder(SAEConfig(d_in=d, d_sae=m, hook_point=hook, layer=1,
                                      model_id="tiny", input_scale=scale))
    sae.init_weights(torch.Generator().manual_seed(seed), dec_norm=0.5)
    with torch.no_grad():
        sae.b_enc.normal_(0, 0.1, generator=torch.Generator().manual_seed(seed + 1))
        sae.b_dec.normal_(0, 0.1, generator=torch.Generator().manual_seed(seed + 2))
    return sae


def _identity_sae(d: int, hook: str) -> SparseAutoencoder:
    """d_sae = 2d with W_enc = [I, −I], W_dec = [I; −I]: ReLU(x) − ReLU(−x) = x exactly."""
    eye = torch.eye(d)
    return sae_from_tensors(
        SAEConfig(d_in=d, d_sae=2 * d, hook_point=hook, layer=1, model_id="tiny"),
        {"W_enc": torch.cat([eye, -eye], 1), "b_enc": torch.zeros(2 * d),
         "W_dec": torch.cat([eye, -eye], 0), "b_dec": torch.zeros(d)})


def _tiny_cfg(**kw) -> SAETrainConfig:
    base = dict(layer=1, d_sae=128, tokens=64 * 12, batch_size=64,
                lr=1e-3, seq_len=16, windows_per_chunk=8, checkpoint_every=3,
                dead_window=256)
    base["arch"] = ReLUConfig(kw.pop("l1_coefficient", 1.0))
    base.update(kw)
    return SAETrainConfig(**base)


# ------------------------------------------------------------------ SAE maths


def test_encode_decode_and_loss_follow_the_formulas():
    sae = _sae(8, 32)
    x = torch.randn(5, 8)
    f = torch.relu((x - sae.b_dec) @ sae.W_enc + sae.b_enc)
    assert torch.allclose(sae.encode(x), f)
    assert torch.allclose(sae(x), f @ sae.W_dec + sae.b_dec)
    loss, parts = sae.loss(x, 0.3)
    mse = ((f @ sae.W_dec + sae.b_dec - x) ** 2).sum(-1).mean()
    l1 = (f * sae.W_dec.norm(dim=1)).sum(-1).mean()
    assert torch.allclose(loss, mse + 0.3 * l1)
    assert torch.allclose(parts["l0"], (f > 0).float().sum(-1).mean())


def test_weighted_l1_is_invariant_to_rescaling_a_feature():
    sae = _sae(8, 16)
    x = torch.randn(20, 8)
    before = sae.loss(x, 1.0)[0]
    with torch.no_grad():  # f_0 → 3 f_0 and W_dec[0] → W_dec[0] / 3: same x̂, same penalty
        sae.W_enc[:, 0] *= 3
        sae.b_enc[0] *= 3
        sae.W_dec[0] /= 3
    assert torch.allclose(sae.loss(x, 1.0)[0], before, atol=1e-5)


def test_folding_the_input_scale_keeps_features_and_raw_reconstructions():
    sae = _sae(8, 16, scale=2.5)
    x = torch.randn(6, 8) * 4
    f, x_hat = sae.encode(x), sae(x)
    assert torch.allclose(x_hat, (sae.encode(x) @ sae.W_dec + sae.b_dec) / 2.5)
    sae.fold_input_scale()
    assert sae.cfg.input_scale == 1.0
    assert torch.allclose(sae.encode(x), f, atol=1e-5)
    assert torch.allclose(sae(x), x_hat, atol=1e-5)


def test_save_load_roundtrip_and_refusals(tiny_model, tmp_path):
    sae = _sae(tiny_model.d_model, 32, hook=tiny_model.resid_hook(1))
    sae.cfg = sae.cfg.replace(model_id=tiny_model.model_id)
    sae.save(tmp_path / "s")
    loaded = load_sae(tmp_path / "s", tiny_model)
    for name, t in sae.tensors().items():
        assert torch.equal(getattr(loaded.sae, name), t)
    wide = _sae(tiny_model.d_model * 2, 8)
    wide.cfg = wide.cfg.replace(model_id=tiny_model.model_id)
    wide.save(tmp_path / "wide")
    with pytest.raises(InterpError, match="d_in=128, but model .* has d_model=64"):
        load_sae(tmp_path / "wide", tiny_model)
    other = _sae(tiny_model.d_model, 8)  # model id "tiny"
    other.save(tmp_path / "other")
    with pytest.raises(InterpError, match="trained on model 'tiny'"):
        load_sae(tmp_path / "other", tiny_model)
    w = tmp_path / "s" / "weights.safetensors"
    w.write_bytes(w.read_bytes()[:100])
    with pytest.raises(InterpError, match="checksum mismatch"):
        load_sae(tmp_path / "s", tiny_model)
    with pytest.raises(InterpError, match="W_dec has shape"):
        sae_from_tensors(sae.cfg, {**sae.tensors(), "W_dec": torch.zeros(3, 3)})


# ------------------------------------------------------------------ store


def test_store_serves_every_position_but_the_first_shuffled(tiny_model, docs):
    from interp.data.windows import pack_windows

    cfg = StoreConfig(layer=1, seq_len=16, windows_per_chunk=8, seed=3)
    store = ActivationStore(tiny_model, docs, cfg, batch_size=40)
    got = torch.cat([store.batch(s) for s in range(3)])  # 120 of the chunk's 8 × 15 tokens
    windows = pack_windows(tiny_model, docs, seq_len=16, n_windows=8, seed=3)
    ref = capture_windows(tiny_model, windows, 1)
    assert ref.shape == (8 * 15, tiny_model.d_model)
    order = lambda t: t[torch.argsort(t[:, 0])]  # noqa: E731
    assert torch.allclose(order(got), order(ref), atol=1e-5)  # a permutation of the chunk
    assert not torch.allclose(got, ref)  # … and a shuffled one
    with_first = capture_windows(tiny_model, windows, 1).shape[0]
    assert with_first == 8 * 15  # position 0 never served
    again = ActivationStore(tiny_model, docs, cfg, batch_size=40)
    assert torch.equal(again.batch(2), store.batch(2))  # a pure function of the step


def test_substreams_make_world_invariant_batches(tiny_model, docs):
    cfg = StoreConfig(layer=1, seq_len=16, windows_per_chunk=8, data_shards=2)
    one = ActivationStore(tiny_model, docs, cfg, batch_size=32)
    r0 = ActivationStore(tiny_model, docs, cfg, batch_size=32, rank=0, world=2)
    r1 = ActivationStore(tiny_model, docs, cfg, batch_size=32, rank=1, world=2)
    for step in (0, 5):
        assert torch.equal(one.batch(step), torch.cat([r0.batch(step), r1.batch(step)]))
    with pytest.raises(InterpError, match="multiple of the number of processes"):
        ActivationStore(tiny_model, docs, StoreConfig(layer=1), batch_size=32, rank=0, world=2)


def test_disk_cache_gives_the_same_batches(tiny_model, docs, tmp_path):
    cfg = StoreConfig(layer=1, seq_len=16, windows_per_chunk=8)
    plain = ActivationStore(tiny_model, docs, cfg, batch_size=50)
    cached = ActivationStore(tiny_model, docs, cfg, batch_size=50, cache_dir=tmp_path,
                             data_hash="abc")
    want = [plain.batch(s) for s in range(4)]
    assert [torch.equal(w, cached.batch(s)) for s, w in enumerate(want)] == [True] * 4
    shards = sorted(p.name for p in next(tmp_path.iterdir()).glob("*.safetensors"))
    assert shards == ["s000-c000000.safetensors", "s000-c000001.safetensors"]
    reread = ActivationStore(tiny_model, docs, cfg, batch_size=50, cache_dir=tmp_path,
                             data_hash="abc")
    import saes.store as store_mod

    calls = []
    real = store_mod.capture_windows_layers
    store_mod.capture_windows_layers = lambda *a, **k: calls.append(1) or real(*a, **k)
    try:
        assert torch.equal(reread.batch(3), want[3])
    finally:
        store_mod.capture_windows_layers = real
    assert calls == []  # read from disk, the model never ran


# ------------------------------------------------------------------ training


def test_training_reconstructs_and_sparsifies(tiny_model, docs, tmp_path):
    cfg = _tiny_cfg(tokens=64 * 60, checkpoint_every=100, lr=3e-3)
    res = train_sae(tiny_model, docs, tmp_path, cfg, progress=False)
    h = res.history
    assert res.complete and len(h["loss"]) == 60
    assert sum(h["mse"][-5:]) < 0.5 * sum(h["mse"][:5])
    assert min(h["explained_variance"][-5:]) > 0.5
    assert sum(h["l0"][-5:]) / 5 < 0.95 * max(h["l0"])
    loaded = load_sae(tmp_path / "sae", tiny_model)
    assert loaded.sae.cfg.input_scale == 1.0  # folded: the saved SAE takes raw activations
    assert loaded.config["train"]["arch"] == {"l1_coefficient": 1.0, "name": "relu"}
    assert loaded.manifest["seed"] == 0
    # MFU: 60 SAE steps plus whole windows of model forward (to layer 1), over the peak
    from interp.mfu import ModelShape, device_peak, forward_flops, sae_step_flops

    window = forward_flops(ModelShape.of(tiny_model), cfg.seq_len, cfg.seq_len, layers=2)
    model_part = res.flops - 60 * sae_step_flops(tiny_model.d_model, cfg.d_sae, 64)
    assert model_part > 0 and (model_part / window) == int(model_part / window)
    assert res.peak_flops == device_peak("cpu", "float32").flops
    assert 0 < res.mfu < 1
    assert loaded.config["mfu"] == res.mfu and res.to_dict()["mfu"] == res.mfu


def _assert_same_sae(a: Path, b: Path) -> None:
    from interp.runs.artifacts import load_artifact

    la, lb = load_artifact(a / "sae"), load_artifact(b / "sae")
    assert la.config["history"] == lb.config["history"]
    for name in ("W_enc", "b_enc", "W_dec", "b_dec"):
        assert torch.equal(la.tensors[name], lb.tensors[name]), name


def test_interrupted_run_resumes_to_the_same_weights(tiny_model, docs, tmp_path, monkeypatch):
    import interp.training.loop as tr  # the shared loop writes progress.json

    cfg = _tiny_cfg(resample_every=4)
    full = train_sae(tiny_model, docs, tmp_path / "full", cfg, progress=False)
    real = tr.write_progress
    calls = {"n": 0}

    def dying(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 8:  # after step 8 of 12; the last checkpoint holds step 6
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(tr, "write_progress", dying)
    with pytest.raises(KeyboardInterrupt):
        train_sae(tiny_model, docs, tmp_path / "cut", cfg, progress=False)
    monkeypatch.setattr(tr, "write_progress", real)
    assert not (tmp_path / "cut" / "sae").exists()
    resumed = train_sae(tiny_model, docs, tmp_path / "cut", cfg, progress=False)
    assert resumed.resumed_from == 6
    assert resumed.history == full.history
    _assert_same_sae(tmp_path / "full", tmp_path / "cut")
    again = train_sae(tiny_model, docs, tmp_path / "cut", cfg, progress=False)
    assert again.complete and again.resumed_from == 12


def test_resume_refuses_other_settings(tiny_model, docs, tmp_path):
    train_sae(tiny_model, docs, tmp_path, _tiny_cfg(), stop_at=3, progress=False)
    with pytest.raises(InterpError, match=r"other settings.*arch\.l1_coefficient 1\.0 → 2\.0"):
        train_sae(tiny_model, docs, tmp_path, _tiny_cfg(l1_coefficient=2.0), progress=False)


def test_nan_loss_stops_and_keeps_the_checkpoint(tiny_model, docs, tmp_path, monkeypatch):
    import saes.train as tr

    calls = {"n": 0}
    real = tr.ActivationStore.batch

    def poisoned(self, step):  # noqa: ANN001, ANN202
        calls["n"] += 1
        x = real(self, step)
        return x * float("nan") if step == 4 else x

    monkeypatch.setattr(tr.ActivationStore, "batch", poisoned)
    with pytest.raises(InterpError, match=r"nan at step 5.*checkpoint \(step 3\) is kept"):
        train_sae(tiny_model, docs, tmp_path, _tiny_cfg(), progress=False)
    cfg = json.loads((tmp_path / "checkpoint" / "config.json").read_text())
    assert cfg["config"]["step"] == 3


def test_resampling_revives_dead_features_and_leaves_live_ones():
    from saes.train import resample_dead

    torch.manual_seed(0)
    sae = _sae(16, 64)
    opt = torch.optim.Adam(sae.parameters(), lr=1e-3)
    x = torch.randn(256, 16) * 3
    sae.loss(x, 1.0)[0].backward()
    opt.step()
    dead = torch.zeros(64, dtype=torch.bool)
    dead[:10] = True
    with torch.no_grad():
        sae.b_enc[:10] = -1e4  # dead: never fire
    before = {k: v.clone() for k, v in sae.tensors().items()}
    assert (sae.encode(x)[:, :10] > 0).sum() == 0
    n = resample_dead(sae, opt, dead, x, torch.Generator().manual_seed(0))
    assert n == 10
    assert torch.equal(sae.W_dec[10:], before["W_dec"][10:])  # live features untouched
    assert torch.equal(sae.W_enc[:, 10:], before["W_enc"][:, 10:])
    assert (sae.encode(x)[:, :10] > 0).any(0).all()  # every resampled feature fires again
    assert torch.all(opt.state[sae.W_dec]["exp_avg"][:10] == 0)
    assert torch.all(opt.state[sae.W_dec]["exp_avg_sq"][:10] == 0)
    # each new decoder row points at one of the inputs (minus b_dec)
    v = torch.nn.functional.normalize(x - sae.b_dec, dim=1)
    cos = torch.nn.functional.normalize(sae.W_dec[:10], dim=1) @ v.T
    assert torch.allclose(cos.max(1).values, torch.ones(10), atol=1e-5)


def test_training_with_resampling_records_it(tiny_model, docs, tmp_path):
    kw = dict(tokens=64 * 40, l1_coefficient=40.0, lr=3e-3, dead_window=64 * 2,
              checkpoint_every=100, resample_until=1.0, resample_every=5)
    train_sae(tiny_model, docs, tmp_path, _tiny_cfg(**kw), progress=False)
    cfg = json.loads((tmp_path / "sae" / "config.json").read_text())["config"]
    assert cfg["resampled"] and all(n > 0 and step % 5 == 0 for step, n in cfg["resampled"])


@pytest.mark.parametrize("kw, message", [
    (lambda: {"arch": ReLUConfig(0.0)}, "--l1 must be a positive"),
    (lambda: {"arch": ReLUConfig(float("nan"))}, "--l1 must be a positive"),
    (lambda: {"arch": ReLUConfig(-1.0)}, "--l1 must be a positive"),
    (lambda: {"arch": TopKConfig(k=0), "d_sae": 64},
     r"--k must be an integer from 1 to d_sae = 64"),
    (lambda: {"arch": TopKConfig(k=65), "d_sae": 64},
     r"--k must be an integer from 1 to d_sae = 64"),
    (lambda: {"arch": BatchTopKConfig(k=-3)}, "--k must be an integer"),
    (lambda: {"arch": JumpReLUConfig(l0_coefficient=float("nan"))}, "--l0-coefficient must be"),
    (lambda: {"lr": float("inf")}, "--lr must be a positive"),
    (lambda: {"lr_decay_fraction": 1.5}, "lr_decay_fraction must be in"),
])
def test_bad_training_settings(kw, message):
    """The library's error names the field (``ReLUConfig: l1_coefficient must be …``); the
    command line prints the same error with the flag in its place (``--l1 must be …``).
    The settings are built inside the check: an architecture's own settings are checked
    when they are made."""
    import re

    import click

    from interp.cli.sae import train
    from interp.schema import ConfigError

    with pytest.raises(ConfigError) as exc:
        SAETrainConfig(**kw())
    err = exc.value
    assert str(err).startswith(f"{err.config}: {err.name} ") and "--" not in str(err)
    flags = {p.name: p.opts[0] for p in train.params if isinstance(p, click.Option)}
    shown = err.render(flags.get(err.name, err.name))  # what `interp sae train` prints
    assert re.search(message, shown), shown


# ------------------------------------------------------------------ metrics


def test_identity_sae_scores_perfectly_and_ablations_hurt(tiny_model, docs):
    sae = _identity_sae(tiny_model.d_model, tiny_model.resid_hook(1))
    res = evaluate_sae(tiny_model, sae, docs,
                       SAEEvalConfig(tokens=300, seq_len=16, n_bootstrap=50))
    assert res.explained_variance == pytest.approx(1.0, abs=1e-5)
    assert res.cosine_similarity == pytest.approx(1.0, abs=1e-5)
    assert res.ce_loss_score == pytest.approx(1.0, abs=1e-4)
    assert res.ce_loss_score_mean_ablation == pytest.approx(1.0, abs=1e-4)
    assert abs(res.delta_ce) < 1e-4 and abs(res.kl_sae) < 1e-5
    assert res.ce_zero_ablation > res.ce_clean and res.kl_zero_ablation > 0
    assert res.l0 == pytest.approx(tiny_model.d_model, rel=0.01)  # one of ±x_i per dim
    assert res.dead_fraction == 0.0


def test_metrics_equal_brute_force(tiny_model, docs):
    from interp.data.windows import pack_windows

    sae = _sae(tiny_model.d_model, 96, hook=tiny_model.resid_hook(1))
    cfg = SAEEvalConfig(tokens=15 * 6, ce_tokens=14 * 4, seq_len=16, n_bootstrap=50)
    res = evaluate_sae(tiny_model, sae, docs, cfg)
    windows = pack_windows(tiny_model, docs, seq_len=16, n_windows=6)
    x = capture_windows(tiny_model, windows, 1).double()
    x_hat = sae(x.float()).double()
    f = sae.encode(x.float())
    ev = 1 - ((x - x_hat) ** 2).sum() / ((x - x.mean(0)) ** 2).sum()
    assert res.n_tokens == 90
    assert res.explained_variance == pytest.approx(float(ev), rel=1e-4)
    assert res.l0 == pytest.approx(float((f > 0).float().sum(-1).mean()), rel=1e-5)
    density = (f > 0).float().mean(0)
    assert res.feature_density == pytest.approx(density.tolist(), abs=1e-6)
    assert res.dead_fraction == pytest.approx(float((density == 0).float().mean()))
    lo, hi = res.explained_variance_ci95
    assert lo <= res.explained_variance <= hi
    # CE with the SAE spliced, by hand over the first 4 windows (positions 1 … 14 predict 2 … 15)
    ids = windows[:4]
    lp = torch.log_softmax(logits_with(tiny_model, ids, sae.cfg.hook_point,
                                       sae_replacement(sae))[:, 1:-1], -1)
    ce = -lp.gather(-1, ids[:, 2:].unsqueeze(-1)).mean()
    assert res.n_ce_tokens == 4 * 14
    assert res.ce_sae == pytest.approx(float(ce), rel=1e-5)


def test_spliced_metrics_from_one_prefix_equal_full_forwards(tiny_model, docs, monkeypatch):
    """The prefix-once path (kept activations, suffixes from the hook) gives the metrics of
    four full bridge forwards per window, CE and KL for every variant."""
    from interp.data.windows import pack_windows
    from saes import metrics

    sae = _sae(tiny_model.d_model, 96, hook=tiny_model.resid_hook(1))
    cfg = SAEEvalConfig(tokens=15 * 6, ce_tokens=14 * 5, seq_len=16, n_bootstrap=20, batch_size=2,
                        cache_baselines=False)
    res = evaluate_sae(tiny_model, sae, docs, cfg)
    all_windows = pack_windows(tiny_model, docs, seq_len=16, n_windows=6)
    mean = capture_windows(tiny_model, all_windows, 1).mean(0)  # over the 6 EV windows
    windows = all_windows[:5]
    targets = windows[:, 2:]
    hook = sae.cfg.hook_point
    clean = torch.log_softmax(logits_with(tiny_model, windows, hook, None)[:, 1:-1], -1)
    want = {"ce_clean": float(-clean.gather(-1, targets.unsqueeze(-1)).mean())}
    for name, fn in (("sae", sae_replacement(sae)), ("zero_ablation", torch.zeros_like),
                     ("mean_ablation", metrics.mean_replacement(mean))):
        lp = torch.log_softmax(logits_with(tiny_model, windows, hook, fn)[:, 1:-1], -1)
        want[f"ce_{name}"] = float(-lp.gather(-1, targets.unsqueeze(-1)).mean())
        want[f"kl_{name}"] = float((clean.exp() * (clean - lp)).sum(-1).mean())
    for key, value in want.items():
        assert getattr(res, key) == pytest.approx(value, rel=1e-5, abs=1e-6), key
    # the prefix is recomputed when it is not kept: the same numbers
    monkeypatch.setattr(metrics, "PREFIX_KEEP_BYTES", 0)
    again = evaluate_sae(tiny_model, sae, docs, cfg)
    for key in want:
        assert getattr(again, key) == pytest.approx(getattr(res, key), rel=1e-6, abs=1e-7), key


def test_baseline_cache_reuses_the_ablations_with_identical_metrics(
        tiny_model, docs, monkeypatch, tmp_path):
    """Zero and mean ablation are stored once per (weights, hook, windows): a second SAE at
    the same layer runs two spliced passes per batch instead of four and every metric equals
    an uncached evaluation; other weights or other text miss the cache."""
    from saes import baselines, metrics

    monkeypatch.setenv("INTERP_CACHE", str(tmp_path))
    calls = {"n": 0}
    real = metrics.logits_from_layer

    def counting(*a, **kw):
        calls["n"] += 1
        return real(*a, **kw)

    monkeypatch.setattr(metrics, "logits_from_layer", counting)
    hook = tiny_model.resid_hook(1)
    cfg = SAEEvalConfig(tokens=15 * 6, ce_tokens=14 * 5, seq_len=16, n_bootstrap=20, batch_size=2)
    first = evaluate_sae(tiny_model, _sae(tiny_model.d_model, 96, hook=hook), docs, cfg)
    assert first.baselines_cached is False and calls["n"] == 3 * 4  # 3 batches, 4 variants
    assert len(list((tmp_path / "sae-eval-baselines").glob("*.safetensors"))) == 1

    other = _sae(tiny_model.d_model, 64, hook=hook, seed=5)
    calls["n"] = 0
    warm = evaluate_sae(tiny_model, other, docs, cfg)
    assert warm.baselines_cached is True and calls["n"] == 3 * 2  # clean and the SAE only
    cold = evaluate_sae(tiny_model, other, docs, replace(cfg, cache_baselines=False))
    assert cold.baselines_cached is False
    # every metric equal (the settings and the manifest, with its timestamp, differ)
    same = {"baselines_cached": None, "eval": None, "manifest": None}
    assert warm.to_dict() | same == cold.to_dict() | same
    assert warm.ce_zero_ablation == first.ce_zero_ablation

    # other text, or other weights: a new key
    shifted = evaluate_sae(tiny_model, other, docs[1:], cfg)
    assert shifted.baselines_cached is False
    p = next(tiny_model.bridge.parameters())
    with torch.no_grad():
        p.add_(1.0)
    try:
        assert evaluate_sae(tiny_model, other, docs, cfg).baselines_cached is False
    finally:
        with torch.no_grad():
            p.sub_(1.0)
    assert len(list(baselines.baseline_path("x").parent.glob("*.safetensors"))) == 3


@pytest.mark.parametrize("path", ["direct", "bridge"])
def test_logits_from_layer_equal_the_full_forward(tiny_model, docs, monkeypatch, path):
    from interp.data.windows import pack_windows
    from interp.models.forward import PATH_ENV, logits_from_layer

    if path == "bridge":
        monkeypatch.setenv(PATH_ENV, "bridge")
    ids = pack_windows(tiny_model, docs, seq_len=12, n_windows=3)
    from interp.activations.capture import forward_with_hooks

    hook = tiny_model.resid_hook(1)
    x = forward_with_hooks(tiny_model, ids, None, [hook])[0][hook]
    full = logits_with(tiny_model, ids, hook, None)
    assert torch.allclose(logits_from_layer(tiny_model, x, 1), full, atol=1e-5)
    edited = x.clone()
    edited[:, 1:] = 0
    assert torch.allclose(logits_from_layer(tiny_model, edited, 1),
                          logits_with(tiny_model, ids, hook, torch.zeros_like), atol=1e-5)


def test_splice_leaves_position_zero_alone(tiny_model, docs):
    from interp.data.windows import pack_windows

    ids = pack_windows(tiny_model, docs, seq_len=12, n_windows=2)
    clean = logits_with(tiny_model, ids, tiny_model.resid_hook(1), None)
    zeroed = logits_with(tiny_model, ids, tiny_model.resid_hook(1), torch.zeros_like)
    assert torch.allclose(clean[:, 0], zeroed[:, 0], atol=1e-5)
    assert not torch.allclose(clean[:, 1:], zeroed[:, 1:], atol=1e-3)


# ------------------------------------------------------------------ CLI


def test_cli_train_eval_browse_export_import(tiny_model_dir, text_file, tmp_path, capsys):
    from tests.support.browser import assert_clean, visit

    run_dir = tmp_path / "run"
    m = ["--model", str(tiny_model_dir)]
    code, out, err = run(["sae", "train", "--layer", "1", "--d-sae", "128", "--l1", "1",
                          "--tokens", str(64 * 20), "--batch-size", "64", "--seq-len", "16",
                          "--windows-per-chunk", "8", "--text", str(text_file), *m,
                          "--out", str(run_dir)], capsys)
    assert code == 0, err
    assert "steps 20/20" in out and (run_dir / "sae" / "config.json").is_file()
    code, out, err = run(["sae", "train", "--layer", "1", "--d-sae", "128", "--l1", "1",
                          "--tokens", str(64 * 20), "--batch-size", "64", "--seq-len", "16",
                          "--windows-per-chunk", "8", "--text", str(text_file), *m,
                          "--out", str(run_dir)], capsys)
    assert code == 0 and "already trained" in err
    code, out, err = run(["sae", "eval", str(run_dir), "--text", str(text_file), "--tokens",
                          "600", "--seq-len", "16", *m], capsys)
    assert code == 0, err
    res = json.loads((run_dir / "sae" / "results.json").read_text())
    for key in ("l0", "explained_variance", "ce_loss_score", "ce_loss_score_mean_ablation",
                "delta_ce", "dead_fraction", "dense_fraction"):
        assert key in res and res[key] is not None, key
    assert "explained variance" in out
    code, out, err = run(["sae", "eval", str(run_dir), "--text", str(text_file), "--tokens",
                          "600", "--seq-len", "16", *m, "--json", "--out",
                          str(tmp_path / "eval-json")], capsys)
    assert code == 0, err
    assert json.loads(out) == json.loads((tmp_path / "eval-json" / "results.json").read_text())
    assert json.loads(out)["l0"] == res["l0"]  # the same SAE on the same tokens
    for name in ("reconstruction", "ce", "scores", "density", "training"):  # beside the page
        assert (run_dir / "sae" / "figures" / f"{name}.svg").is_file(), name
        assert (run_dir / "sae" / "figures" / f"{name}.png").is_file(), name
    v = visit(run_dir / "sae" / "report.html", "sae_eval_tiny.png")
    assert_clean(v)
    code, out, err = run(["sae", "browse", str(run_dir), "--text", str(text_file), "--tokens",
                          "600", "--seq-len", "16", "--features", "alive:5", *m,
                          "--out", str(tmp_path / "browse")], capsys)
    assert code == 0, err
    assert (tmp_path / "browse" / "browser.html").is_file()
    assert (tmp_path / "browse" / "figures" / "density.svg").is_file()
    code, out, err = run(["sae", "export", str(run_dir), "--out", str(tmp_path / "lens")],
                         capsys)
    assert code == 0, err
    code, out, err = run(["sae", "import", str(tmp_path / "lens"), "--out",
                          str(tmp_path / "back")], capsys)
    assert code == 0, err
    a, b = load_sae(run_dir / "sae"), load_sae(tmp_path / "back")
    for name in ("W_enc", "b_enc", "W_dec", "b_dec"):
        assert torch.equal(getattr(a.sae, name), getattr(b.sae, name))


# ------------------------------------------------------------------ SIGKILL and DDP


def _train_cmd(tiny_model_dir: Path, text_file: Path, out: Path, *extra: str,
               layers: tuple[str, str] = ("--layer", "1")) -> list[str]:
    exe = Path(sys.executable).parent / "interp"
    return [str(exe), "sae", "train", "--model", str(tiny_model_dir), "--text", str(text_file),
            *layers, "--d-sae", "128", "--l1", "1", "--tokens", str(64 * 40),
            "--batch-size", "64", "--seq-len", "16", "--windows-per-chunk", "8",
            "--checkpoint-every", "3", "--resample-every", "7", "--dead-window", "128",
            "--out", str(out), *extra]


@pytest.mark.processes
def test_sigkill_at_random_points_then_resume(tiny_model_dir, text_file, tmp_path):
    """Kill SAE training with SIGKILL ≥ 5 times; every resume works, the result is unchanged."""
    from tests.support.kill_resume import kill_at_steps

    env = {**os.environ, "INTERP_NO_PROGRESS": "1"}
    ref = tmp_path / "ref"
    subprocess.run(_train_cmd(tiny_model_dir, text_file, ref), env=env, check=True,
                   capture_output=True, timeout=300)
    out = tmp_path / "killed"
    rng = random.Random(2)
    targets = [band + rng.randrange(0, 4) for band in (2, 9, 16, 23, 30)]
    kept = kill_at_steps(_train_cmd(tiny_model_dir, text_file, out), out, targets, 3, rng)
    assert len(kept) >= 5, "training finished too fast to be killed 5 times"
    proc = subprocess.run(_train_cmd(tiny_model_dir, text_file, out), env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    _assert_same_sae(ref, out)
    assert kept == sorted(kept)  # checkpoints only move forward
    assert sorted(p.name for p in out.iterdir()) == ["checkpoint", "progress.json",
                                                     "results.json", "sae"]
    results = json.loads((out / "results.json").read_text())
    assert results["complete"] and 0 < results["mfu"] < 1 and results["peak_flops"] > 0


@pytest.mark.processes
@pytest.mark.parametrize("layers", [("--layer", "1"), ("--layers", "0,2")],
                         ids=["one-layer", "two-layers"])
def test_ddp_two_processes_match_one_process(tiny_model_dir, text_file, tmp_path, layers):
    """torchrun, 2 CPU processes (gloo), each streaming its own shard, versus one process
    with the same global batch (data shards 2): the same losses and weights (for several
    layers from shared forwards too: each layer's SAE)."""
    from interp.runs.artifacts import load_artifact

    env = {**os.environ, "INTERP_NO_PROGRESS": "1", "OMP_NUM_THREADS": "1"}
    one, two = tmp_path / "one", tmp_path / "two"
    subprocess.run(_train_cmd(tiny_model_dir, text_file, one, "--data-shards", "2",
                              layers=layers), env=env, check=True, capture_output=True,
                   timeout=600)
    torchrun = Path(sys.executable).parent / "torchrun"
    proc = subprocess.run(
        [str(torchrun), "--standalone", "--nproc-per-node", "2", "--no-python",
         *_train_cmd(tiny_model_dir, text_file, two, layers=layers)],
        env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    sub = "layer-2/" if layers[0] == "--layers" else ""
    a, b = load_artifact(one / sub / "sae"), load_artifact(two / sub / "sae")
    assert a.config["train"]["data_shards"] == b.config["train"]["data_shards"] == 2
    la, lb = a.config["history"]["loss"], b.config["history"]["loss"]
    assert len(la) == len(lb) == 40
    assert la[0] != la[-1]
    assert la == pytest.approx(lb, rel=1e-4)
    assert a.config["resampled"] == b.config["resampled"]
    for name in ("W_enc", "b_enc", "W_dec", "b_dec"):
        assert torch.allclose(a.tensors[name], b.tensors[name], atol=1e-4), name


@pytest.mark.processes
def test_ddp_batchtopk_calibrates_one_threshold_across_processes(tiny_model_dir, text_file,
                                                                 tmp_path):
    """Under torchrun the end-of-training calibration is a collective: both processes
    take part, and the saved threshold is their mean cut over both shards' batches."""
    from interp.runs.artifacts import load_artifact
    from saes.train import CALIBRATION_STEPS

    env = {**os.environ, "INTERP_NO_PROGRESS": "1", "OMP_NUM_THREADS": "1"}
    exe = Path(sys.executable).parent / "interp"
    torchrun = Path(sys.executable).parent / "torchrun"
    out = tmp_path / "two"
    proc = subprocess.run(
        [str(torchrun), "--standalone", "--nproc-per-node", "2", "--no-python", str(exe),
         "sae", "train", "--model", str(tiny_model_dir), "--text", str(text_file),
         "--layer", "1", "--d-sae", "128", "--arch", "batchtopk", "--k", "4",
         "--tokens", str(64 * 12), "--batch-size", "64", "--seq-len", "16",
         "--windows-per-chunk", "8", "--out", str(out)],
        env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    art = load_artifact(out / "sae")
    cal = art.config["calibration"]
    assert cal["tokens"] == CALIBRATION_STEPS * 64  # both processes' halves of each batch
    assert 0 < cal["threshold"] == pytest.approx(float(art.tensors["threshold"][0]))


# ------------------------------------------------------------------ several layers


def test_several_layers_from_one_pass_equal_separate_runs(tiny_model, docs, tmp_path):
    import saes.store as store_mod
    from saes.train import layer_dir, train_saes

    cfg = _tiny_cfg(tokens=64 * 8, checkpoint_every=4)
    calls: list[int] = []
    real = store_mod.capture_windows_layers
    store_mod.capture_windows_layers = lambda *a, **k: calls.append(1) or real(*a, **k)
    try:
        together = train_saes(tiny_model, docs, tmp_path / "multi", [2, 0], cfg, progress=False)
        chunks = len(calls)
        calls.clear()
        alone = {layer: train_sae(tiny_model, docs, tmp_path / f"l{layer}",
                                  SAETrainConfig(**{**cfg.__dict__, "layer": layer}),
                                  progress=False) for layer in (0, 2)}
    finally:
        store_mod.capture_windows_layers = real
    assert sorted(together) == [0, 2]
    assert len(calls) == 2 * chunks  # separate runs ran the model twice as often
    for layer in (0, 2):
        assert together[layer].out_dir == layer_dir(tmp_path / "multi", layer)
        assert together[layer].complete and together[layer].sae_path is not None
        a = load_sae(together[layer].sae_path, tiny_model).sae
        b = load_sae(alone[layer].sae_path, tiny_model).sae
        assert a.cfg.hook_point == tiny_model.resid_hook(layer)
        for name, t in a.tensors().items():
            assert torch.allclose(t, b.tensors()[name], atol=1e-6), (layer, name)
        assert together[layer].history["loss"] == pytest.approx(alone[layer].history["loss"])


def test_several_layers_resume_each_from_its_own_checkpoint(tiny_model, docs, tmp_path):
    import shutil

    from saes.train import layer_dir, train_saes

    cfg = _tiny_cfg(tokens=64 * 9, checkpoint_every=3)
    whole = train_saes(tiny_model, docs, tmp_path / "whole", [0, 2], cfg, progress=False)
    part = train_saes(tiny_model, docs, tmp_path / "part", [0, 2], cfg, stop_at=6,
                      progress=False)
    assert [r.steps_done for r in part.values()] == [6, 6]
    assert not any(r.complete for r in part.values())
    # layer 2 lost its last checkpoint (as if killed between the two writes): step 3
    early = train_saes(tiny_model, docs, tmp_path / "early", [0, 2], cfg, stop_at=3,
                       progress=False)
    assert early[2].steps_done == 3
    shutil.rmtree(layer_dir(tmp_path / "part", 2))
    shutil.copytree(layer_dir(tmp_path / "early", 2), layer_dir(tmp_path / "part", 2))
    done = train_saes(tiny_model, docs, tmp_path / "part", [0, 2], cfg, progress=False)
    assert done[0].resumed_from == 6 and done[2].resumed_from == 3
    for layer in (0, 2):
        a = load_sae(done[layer].sae_path, tiny_model).sae
        b = load_sae(whole[layer].sae_path, tiny_model).sae
        for name, t in a.tensors().items():
            assert torch.allclose(t, b.tensors()[name], atol=1e-6), (layer, name)


def test_cli_train_several_layers(tiny_model_dir, text_file, tmp_path, capsys):
    run_dir = tmp_path / "run"
    args = ["sae", "train", "--layers", "0,2", "--d-sae", "96", "--tokens", str(64 * 4),
            "--batch-size", "64", "--seq-len", "16", "--windows-per-chunk", "8", "--text",
            str(text_file), "--model", str(tiny_model_dir), "--out", str(run_dir)]
    code, out, err = run(args, capsys)
    assert code == 0, err
    assert "layer 0: steps 4/4" in out and "layer 2: steps 4/4" in out
    for layer in (0, 2):
        assert (run_dir / f"layer-{layer}" / "sae" / "config.json").is_file()
    res = json.loads((run_dir / "results.json").read_text())
    assert sorted(res["layers"]) == ["0", "2"] and res["manifest"]["config"]["layers"] == [0, 2]
    code, out, err = run(["sae", "eval", str(run_dir), "--text", str(text_file), "--model",
                          str(tiny_model_dir)], capsys)
    assert code == 2 and "holds SAEs for layers 0, 2" in err
    bad = tmp_path / "bad"
    code, out, err = run([*args[:3], "0,7", *args[4:-1], str(bad)], capsys)
    assert code == 2 and "layer 7 out of range" in err and not bad.exists()


def test_ce_tokens_default_is_the_smaller_of_tokens_and_24576():
    from saes.results import CE_TOKENS, SAEEvalConfig

    assert CE_TOKENS == 24_576
    assert SAEEvalConfig().ce_tokens == 24_576 and SAEEvalConfig().tokens == 102_400
    assert SAEEvalConfig(tokens=8192).ce_tokens == 8192
    assert SAEEvalConfig(ce_tokens=102_400).ce_tokens == 102_400


# ------------------------------------------------------------------ bad inputs
#: This tool's bad-input cases. tests/unit/interp/test_bad_inputs.py runs every unit-test
#: module's ``BAD_INPUTS`` as one matrix (tests/support/bad_inputs.py collects them).
BAD_INPUTS: list[Case] = [
    Case("sae-train-zero-l1", lambda c: [
        "sae", "train", *M(c), "--layer", "1", "--text", _text(c), "--l1", "0", "--out", c.out],
        "--l1 must be a positive", out_is_artifact=True),
    Case("sae-train-negative-l1", lambda c: [
        "sae", "train", *M(c), "--layer", "1", "--text", _text(c), "--l1", "-0.5",
        "--out", c.out], "--l1 must be a positive", out_is_artifact=True),
    Case("sae-train-nan-l1", lambda c: [
        "sae", "train", *M(c), "--layer", "1", "--text", _text(c), "--l1", "nan",
        "--out", c.out], "--l1 must be a positive", out_is_artifact=True),
    Case("sae-train-infinite-lr", lambda c: [
        "sae", "train", *M(c), "--layer", "1", "--text", _text(c), "--lr", "inf",
        "--out", c.out], "--lr must be a positive", out_is_artifact=True),
    Case("sae-train-layer-out-of-range", lambda c: [
        "sae", "train", *M(c), "--layer", "7", "--text", _text(c), "--out", c.out],
        "out of range", out_is_artifact=True),
    Case("sae-train-layers-out-of-range", lambda c: [
        "sae", "train", *M(c), "--layers", "0,9", "--text", _text(c), "--out", c.out],
        "layer 9 out of range"),
    Case("sae-train-layer-and-layers", lambda c: [
        "sae", "train", *M(c), "--layer", "1", "--layers", "0,2", "--text", _text(c),
        "--out", c.out], "--layer or --layers, not both"),
    Case("sae-train-unknown-model", lambda c: [
        "sae", "train", "--model", "no-org/no-model", "--text", _text(c), "--out", c.out],
        "unknown model", out_is_artifact=True),
    Case("sae-train-missing-text", lambda c: [
        "sae", "train", *M(c), "--text", str(c.tmp / "none.txt"), "--out", c.out],
        "cannot read text file", out_is_artifact=True),
    Case("sae-train-empty-text", lambda c: [
        "sae", "train", *M(c), "--text", c.file("e.txt", "   \n"), "--out", c.out],
        "no text", out_is_artifact=True),
    Case("sae-train-bad-shards", lambda c: [
        "sae", "train", *M(c), "--layer", "1", "--text", _text(c), "--data-shards", "3",
        "--out", c.out], "multiple of the data shards", out_is_artifact=True),
    Case("sae-train-d-sae-beyond-memory", lambda c: [
        "sae", "train", *M(c), "--layer", "1", "--text", _text(c), "--d-sae", "2000000000",
        "--out", c.out], "would need about", out_is_artifact=True),
    Case("sae-train-layers-beyond-memory", lambda c: [
        "sae", "train", *M(c), "--layers", "0,1", "--text", _text(c), "--d-sae", "1000000000",
        "--out", c.out], "training 2 SAEs of d_sae=1,000,000,000"),
    Case("sae-train-unwritable-out", lambda c: [
        "sae", "train", *M(c), "--layer", "1", "--text", _text(c), "--out", _under_file(c)],
        "cannot create output folder", out_is_artifact=True),
    Case("sae-train-unknown-arch", lambda c: [
        "sae", "train", *M(c), "--layer", "1", "--text", _text(c), "--arch", "gated",
        "--out", c.out], "unknown SAE architecture 'gated'", out_is_artifact=True),
    Case("sae-train-k-zero", lambda c: [
        "sae", "train", *M(c), "--layer", "1", "--text", _text(c), "--arch", "topk",
        "--k", "0", "--d-sae", "64", "--out", c.out], "--k must be an integer from 1 to d_sae",
        out_is_artifact=True),
    Case("sae-train-k-above-d-sae", lambda c: [
        "sae", "train", *M(c), "--layer", "1", "--text", _text(c), "--arch", "batchtopk",
        "--k", "65", "--d-sae", "64", "--out", c.out], "from 1 to d_sae = 64, got 65",
        out_is_artifact=True),
    Case("sae-train-k-with-relu", lambda c: [
        "sae", "train", *M(c), "--layer", "1", "--text", _text(c), "--k", "8",
        "--out", c.out], "--k is for --arch topk or batchtopk, not relu", out_is_artifact=True),
    Case("sae-train-nan-l0-coefficient", lambda c: [
        "sae", "train", *M(c), "--layer", "1", "--text", _text(c), "--arch", "jumprelu",
        "--l0-coefficient", "nan", "--out", c.out], "--l0-coefficient must be a positive",
        out_is_artifact=True),
    Case("sae-train-zero-threshold-init", lambda c: [
        "sae", "train", *M(c), "--layer", "1", "--text", _text(c), "--arch", "jumprelu",
        "--threshold-init", "0", "--out", c.out], "--threshold-init must be a positive",
        out_is_artifact=True),
    Case("sae-train-bandwidth-with-topk", lambda c: [
        "sae", "train", *M(c), "--layer", "1", "--text", _text(c), "--arch", "topk",
        "--bandwidth", "0.05", "--out", c.out], "--bandwidth is for --arch jumprelu, not topk",
        out_is_artifact=True),
    Case("sae-eval-missing-sae", lambda c: [
        "sae", "eval", str(c.tmp / "none"), *M(c), "--out", c.out], "no SAE at"),
    Case("sae-eval-truncated-sae", lambda c: [
        "sae", "eval", _truncated_sae(c), *M(c), "--text", _text(c), "--out", c.out],
        "checksum mismatch"),
    Case("sae-eval-other-d-model", lambda c: [
        "sae", "eval", _foreign_sae(c), *M(c), "--text", _text(c), "--out", c.out],
        "d_in=32, but model"),
    Case("sae-eval-unwritable-out", lambda c: [
        "sae", "eval", _foreign_sae(c), *M(c), "--text", _text(c), "--out", _under_file(c)],
        "cannot create output folder", out_is_artifact=True),
    # found by the fuzzing (test_cli_fuzz.py)
    Case("sae-eval-meta-device", lambda c: [
        "sae", "eval", _tiny_sae(c), *M(c), "--text", _text(c), "--device", "meta",
        "--out", c.out], "cannot run a model"),
    Case("sae-eval-empty-out", lambda c: [
        "sae", "eval", _tiny_sae(c), *M(c), "--text", _text(c), "--out", ""],
        "empty output folder name"),
    Case("sae-eval-line-break-in-name", lambda c: [
        "sae", "eval", str(c.tmp / "a\x1eb\nc"), *M(c), "--out", c.out], "a\\x1eb c"),
    # requests beyond the text: refused before the model runs
    Case("sae-train-tokens-beyond-text", lambda c: [
        "sae", "train", *M(c), "--layer", "1", "--text", _text(c), "--tokens", "50000000",
        "--out", c.out], "SAE training asks for tokens=50,000,000", out_is_artifact=True),
    Case("sae-train-layers-tokens-beyond-text", lambda c: [
        "sae", "train", *M(c), "--layers", "0,1", "--text", _text(c), "--tokens", "50000000",
        "--out", c.out], "lower tokens (or windows_per_chunk) or give more text",
        out_is_artifact=True),
    Case("sae-eval-tokens-beyond-text", lambda c: [
        "sae", "eval", _tiny_sae(c), *M(c), "--text", _text(c), "--tokens", "5000",
        "--out", c.out], "SAE evaluation asks for tokens=5,000, ce_tokens=5,000"),
    Case("sae-eval-ce-tokens-beyond-text", lambda c: [
        "sae", "eval", _tiny_sae(c), *M(c), "--text", _text(c), "--tokens", "10",
        "--ce-tokens", "5000", "--out", c.out], "ce_tokens=5,000 (40 windows of seq_len=128"),
]
