"""Cross-layer transcoders: the model's algebra, training on the tiny model (resumable),
our files and circuit-tracer's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from interp.activations.capture import forward_with_hooks
from interp.errors import InterpError
from saes.architectures import JumpReLUConfig, TopKConfig
from saes.transcoders.crosslayer import (
    CLTConfig,
    CrossLayerTranscoder,
    load_clt,
)
from saes.transcoders.crosslayer_train import (
    CLTTrainConfig,
    clt_parameters,
    clt_training_bytes,
    train_clt,
)
from saes.transcoders.formats import read_circuit_tracer_clt, write_circuit_tracer_clt
from tests.support.text_fixtures import paragraphs, text_file_fixture

ARCHS = {"topk": TopKConfig(k=4), "jumprelu": JumpReLUConfig(), "relu": None}


def _random_clt(arch: str = "topk", skip: bool = True, layers=(0, 1, 3), d=8, m=16,
                seed: int = 0, reach: int | None = None) -> CrossLayerTranscoder:
    torch.manual_seed(seed)
    cfg = CLTConfig(d_in=d, d_sae=m, layers=tuple(layers), architecture=arch,
                    k=4 if arch == "topk" else None, skip=skip, reach=reach)
    clt = CrossLayerTranscoder(cfg, ARCHS[arch])
    clt.init_weights(torch.Generator().manual_seed(seed))
    with torch.no_grad():
        for w in clt.W_dec:
            w.add_(0.3 * torch.randn_like(w))
        clt.b_dec.normal_()
        clt.b_enc.normal_(std=0.3)
        if clt.W_skip is not None:
            clt.W_skip.normal_(std=0.1)
        if clt.log_threshold is not None:
            clt.log_threshold.copy_(torch.rand_like(clt.log_threshold).mul(0.5).log())
    return clt


def _reference(clt: CrossLayerTranscoder, x: torch.Tensor) -> torch.Tensor:
    """The CLT's definition written out, layer pair by layer pair (raw units); with a reach
    ``N``, layer ``i``'s features write to layers ``i … i + N − 1`` only."""
    n, reach = clt.cfg.n_layers, clt.cfg.reach
    f = [clt.encode_layer(i, x[:, i]) for i in range(n)]
    out = []
    for j in range(n):
        y = clt.b_dec[j] / (clt.cfg.output_scales[j] if clt.cfg.output_scales else 1.0)
        for i in range(j + 1):
            if reach is not None and j - i >= reach:
                continue
            y = y + f[i] @ clt.decoder(i, j)
        m = clt.skip_matrix(j)
        out.append(y + (x[:, j] @ m if m is not None else 0.0))
    return torch.stack(out, 1)


@pytest.mark.parametrize(("arch", "reach"), [*((a, None) for a in ARCHS), ("topk", 2),
                                            ("jumprelu", 1)])
def test_training_loss_forward_and_the_definition_agree(arch, reach):
    clt = _random_clt(arch, reach=reach)
    x = torch.randn(7, 3, 2, 8)
    xs, ys = x[:, :, 0], x[:, :, 1]
    with torch.no_grad():
        ref = _reference(clt, xs)
    assert torch.allclose(clt(xs), ref, atol=1e-5)
    loss, parts = clt.loss(x.reshape(7, -1), 0.0, None)
    assert float(parts["mse"]) == pytest.approx(float((ref - ys).pow(2).sum(-1).mean()),
                                                rel=1e-5)
    if arch == "topk":
        assert float(parts["l0"]) <= 4
    loss.backward()  # every decoder block gets a gradient
    assert all(float(w.grad.abs().sum()) > 0 for w in clt.W_dec)
    # and the gradient the sparse training path gives is the definition's
    got = [p.grad.clone() for p in (clt.W_enc, *clt.W_dec, clt.b_dec)]
    clt.zero_grad()
    (_reference(clt, xs) - ys).pow(2).sum(-1).mean().backward()
    for g, p in zip(got, (clt.W_enc, *clt.W_dec, clt.b_dec), strict=True):
        torch.testing.assert_close(g, p.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("reach", [None, 2])
def test_fold_keeps_outputs_and_features(reach):
    clt = _random_clt("jumprelu", reach=reach)
    clt.cfg = clt.cfg.replace(input_scales=(2.0, 0.5, 3.0), output_scales=(0.3, 4.0, 1.5))
    x = torch.randn(5, 3, 8)
    with torch.no_grad():
        before, f_before = clt(x), clt.encode(x)
        clt.fold_input_scale()
        assert not clt.cfg.input_scales and not clt.cfg.output_scales
        assert torch.allclose(clt(x), before, atol=1e-4)
        assert torch.equal(clt.encode(x) > 0, f_before > 0)


def test_no_cross_layer_decoders_is_per_layer_transcoders():
    """With every cross-layer decoder block at zero, layer j's output depends on layer j's
    input alone: changing another layer's input changes nothing there."""
    clt = _random_clt("topk", skip=False)
    with torch.no_grad():
        for w in clt.W_dec:
            w[:, 1:] = 0
    x = torch.randn(4, 3, 8)
    y = x.clone()
    y[:, 0] += 5
    with torch.no_grad():
        a, b = clt(x), clt(y)
    assert torch.allclose(a[:, 1:], b[:, 1:]) and not torch.allclose(a[:, 0], b[:, 0])
    # and the other way round: with them, layer 0's input reaches the later layers
    clt2 = _random_clt("topk", skip=False)
    with torch.no_grad():
        assert not torch.allclose(clt2(x)[:, 2], clt2(y)[:, 2])


def test_a_windowed_clt_writes_within_its_reach():
    """reach 2 over layers (0, 1, 3): layer index 0's features write to indices 0 and 1, not
    2; its decoder and parameter count shrink to match; past the reach is refused."""
    clt = _random_clt("topk", skip=False, reach=2)
    assert [tuple(w.shape[:2]) for w in clt.W_dec] == [(16, 2), (16, 2), (16, 1)]
    x = torch.randn(4, 3, 8)
    y = x.clone()
    y[:, 0] += 5
    with torch.no_grad():
        a, b = clt(x), clt(y)
    assert not torch.allclose(a[:, 1], b[:, 1]) and torch.allclose(a[:, 2], b[:, 2])
    with pytest.raises(InterpError, match="writes only to layer indices 0–1"):
        clt.decoder(0, 2)
    full = CLTTrainConfig(layers=(0, 1, 3), d_sae=16, arch=TopKConfig(k=4))
    windowed = CLTTrainConfig(layers=(0, 1, 3), d_sae=16, arch=TopKConfig(k=4), reach=2)
    assert (clt_parameters(full, 8) - clt_parameters(windowed, 8)) == 16 * 8  # one block
    assert clt_parameters(windowed, 8) == sum(p.numel() for p in clt.parameters())


@pytest.mark.parametrize(("m", "world"), [(16, 2), (17, 3), (5, 5)])
def test_feature_shards_cover_every_feature_once(m, world):
    from saes.transcoders.sharding import Shards

    parts = [Shards(r, world).span(m) for r in range(world)]
    assert parts[0][0] == 0 and parts[-1][1] == m
    assert all(a[1] == b[0] for a, b in zip(parts, parts[1:], strict=False))
    assert max(h - lo for lo, h in parts) - min(h - lo for lo, h in parts) <= 1


def test_config_refuses_bad_settings():
    with pytest.raises(Exception, match="reach"):
        CLTConfig(d_in=4, d_sae=8, layers=(0,), architecture="relu", reach=0)
    with pytest.raises(Exception, match="reach"):
        CLTTrainConfig(layers=(0, 1), reach=0)
    with pytest.raises(Exception, match="increasing"):
        CLTConfig(d_in=4, d_sae=8, layers=(2, 1))
    with pytest.raises(Exception, match="k"):
        CLTConfig(d_in=4, d_sae=8, layers=(0,), architecture="topk", k=9)
    with pytest.raises(Exception, match="reads"):
        CLTConfig(d_in=4, d_sae=8, layers=(0,), architecture="relu", reads="resid_post")


# ------------------------------------------------------------------ circuit-tracer's format
def _write_their_clt(folder, n=3, d=8, m=16, threshold=True, seed=1):
    """A CLT folder in circuit-tracer's layout, written here by hand from their
    ``to_safetensors`` (not by our writer), with the weights it holds."""
    from safetensors.torch import save_file

    g = torch.Generator().manual_seed(seed)
    w = {"W_enc": torch.randn(n, m, d, generator=g), "b_enc": torch.randn(n, m, generator=g),
         "b_dec": torch.randn(n, d, generator=g),
         "thr": torch.rand(n, m, generator=g) * 0.5 + 0.01,
         "W_dec": [torch.randn(m, n - i, d, generator=g) for i in range(n)]}
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        enc = {f"W_enc_{i}": w["W_enc"][i], f"b_enc_{i}": w["b_enc"][i],
               f"b_dec_{i}": w["b_dec"][i]}
        if threshold:
            enc[f"threshold_{i}"] = w["thr"][i]
        save_file(enc, str(folder / f"W_enc_{i}.safetensors"))
        save_file({f"W_dec_{i}": w["W_dec"][i]}, str(folder / f"W_dec_{i}.safetensors"))
    return w


@pytest.mark.parametrize("threshold", [True, False])
def test_a_circuit_tracer_clt_written_by_the_test_loads(tmp_path, threshold):
    w = _write_their_clt(tmp_path / "ct", threshold=threshold)
    clt = read_circuit_tracer_clt(tmp_path / "ct")
    assert clt.cfg.architecture == ("jumprelu" if threshold else "relu")
    assert clt.cfg.reads == "resid_mid" and clt.cfg.layers == (0, 1, 2)
    x = torch.randn(5, 3, 8)
    # circuit-tracer's encode / compute_reconstruction, written out from their source
    pre = torch.einsum("bld,lfd->blf", x, w["W_enc"]) + w["b_enc"]
    f = pre * (pre > w["thr"]) if threshold else torch.relu(pre)
    want = w["b_dec"].expand(5, 3, 8).clone()
    for i in range(3):
        want[:, i:] += torch.einsum("bf,fjd->bjd", f[:, i], w["W_dec"][i])
    with torch.no_grad():
        assert torch.allclose(clt.encode(x), f, atol=1e-5)
        assert torch.allclose(clt(x), want, atol=1e-4)


def test_ours_round_trips_through_circuit_tracer_files_to_the_bit(tmp_path):
    clt = _random_clt("jumprelu", skip=False, layers=(0, 1, 2))
    write_circuit_tracer_clt(clt, tmp_path / "ct")
    back = read_circuit_tracer_clt(tmp_path / "ct", reads="mlp_in")
    for name, t in clt.tensors().items():  # thresholds are stored as θ there, log θ here
        close = name == "log_threshold" and torch.allclose(back.tensors()[name], t, atol=1e-6)
        assert close or torch.equal(back.tensors()[name], t), name
    with pytest.raises(InterpError, match="TopK|topk"):
        write_circuit_tracer_clt(_random_clt("topk", skip=False, layers=(0, 1)), tmp_path / "x")
    with pytest.raises(InterpError, match="skip"):
        write_circuit_tracer_clt(_random_clt("jumprelu", skip=True, layers=(0, 1)),
                                 tmp_path / "y")
    with pytest.raises(InterpError, match="reach only 1"):
        write_circuit_tracer_clt(_random_clt("relu", skip=False, layers=(0, 1), reach=1),
                                 tmp_path / "w")
    with pytest.raises(InterpError, match="cover layers 0"):
        write_circuit_tracer_clt(_random_clt("relu", skip=False, layers=(1, 2)),
                                 tmp_path / "z")


def test_damaged_circuit_tracer_folders_are_refused_in_one_line(tmp_path):
    _write_their_clt(tmp_path / "a")
    (tmp_path / "a" / "W_dec_1.safetensors").unlink()
    with pytest.raises(InterpError, match="lacks W_dec_1"):
        read_circuit_tracer_clt(tmp_path / "a")
    _write_their_clt(tmp_path / "b")
    (tmp_path / "b" / "W_enc_1.safetensors").unlink()
    with pytest.raises(InterpError, match="W_enc_0"):
        read_circuit_tracer_clt(tmp_path / "b")
    _write_their_clt(tmp_path / "c")
    (tmp_path / "c" / "W_dec_2.safetensors").write_bytes(b"not safetensors")
    with pytest.raises(InterpError, match="cannot read"):
        read_circuit_tracer_clt(tmp_path / "c")


# ------------------------------------------------------------------ training
@pytest.fixture(scope="module")
def docs() -> list[str]:
    return paragraphs(150)


def _cfg(**kw) -> CLTTrainConfig:
    base = dict(d_sae=64, tokens=64 * 40, batch_size=64, seq_len=16, windows_per_chunk=16,
                checkpoint_every=100, dead_window=64 * 20, lr=3e-3, arch=TopKConfig(k=4))
    return CLTTrainConfig(**{**base, **kw})


def _mlp_io(model, text: str, layers):
    ids = torch.tensor([model.encode(text)])
    hooks = [h for i in layers for h in (f"blocks.{i}.mlp.hook_in", f"blocks.{i}.hook_mlp_out")]
    acts, _ = forward_with_hooks(model, ids, None, hooks)
    x = torch.stack([acts[f"blocks.{i}.mlp.hook_in"][0, 1:] for i in layers], 1)
    y = torch.stack([acts[f"blocks.{i}.hook_mlp_out"][0, 1:] for i in layers], 1)
    return x, y


@pytest.fixture(scope="module")
def trained(tiny_model, docs, tmp_path_factory):
    out = tmp_path_factory.mktemp("clt")
    return out, train_clt(tiny_model, docs, out, None, _cfg(skip=True), progress=False)


def test_trains_a_clt_that_predicts_every_mlp_output(tiny_model, trained):
    out, res = trained
    assert res.complete and res.sae_path == out / "clt"
    h = res.history
    assert sum(h["mse"][-5:]) < 0.5 * sum(h["mse"][:5])
    clt = load_clt(out, tiny_model).clt
    assert clt.cfg.layers == (0, 1, 2) and not clt.cfg.input_scales  # folded
    x, y = _mlp_io(tiny_model, " ".join(paragraphs(3, seed=9)), clt.cfg.layers)
    with torch.no_grad():
        pred = clt(x)
    nmse = float((pred - y).pow(2).sum() / (y - y.mean(0)).pow(2).sum())
    ev = sum(h["explained_variance"][-5:]) / 5
    assert nmse < 0.9
    assert abs((1 - nmse) - ev) < 0.15, (nmse, ev)  # the scales were folded right
    assert float((clt.encode(x) > 0).sum(-1).float().mean()) <= 4  # TopK, k per layer
    # the cross-layer decoders learned something
    assert float(clt.W_dec[0][:, 1:].detach().abs().sum()) > 0


def test_saved_clt_loads_back_to_the_bit(tiny_model, trained, tmp_path):
    out, _ = trained
    a = load_clt(out, tiny_model).clt
    a.save(tmp_path / "again")
    b = load_clt(tmp_path / "again", tiny_model).clt
    for name, t in a.tensors().items():
        assert torch.equal(b.tensors()[name], t), name


def test_interrupted_clt_run_resumes_to_the_same_weights(tiny_model, docs, tmp_path):
    cfg = _cfg(tokens=64 * 9, checkpoint_every=3, arch=JumpReLUConfig(), skip=True)
    whole = train_clt(tiny_model, docs, tmp_path / "whole", [0, 2], cfg, progress=False)
    part = train_clt(tiny_model, docs, tmp_path / "part", [0, 2], cfg, stop_at=6,
                     progress=False)
    assert part.steps_done == 6 and not part.complete
    done = train_clt(tiny_model, docs, tmp_path / "part", [0, 2], cfg, progress=False)
    assert done.resumed_from == 6 and done.complete
    a, b = load_clt(tmp_path / "part").clt, load_clt(tmp_path / "whole").clt
    for name, t in a.tensors().items():
        assert torch.allclose(t, b.tensors()[name], atol=1e-6), name
    assert done.history["loss"] == pytest.approx(whole.history["loss"])


def test_memory_estimate_refuses_up_front(tiny_model, docs, tmp_path, monkeypatch):
    cfg = _cfg(d_sae=4096)
    need = clt_training_bytes(cfg.__class__(**{**cfg.to_dict(), "arch": cfg.arch,
                                               "layers": (0, 1, 2)}), tiny_model.d_model)
    monkeypatch.setenv("INTERP_MAX_MEMORY_GB", str(need / 2**30 / 2))
    with pytest.raises(InterpError, match="lower d_sae"):
        train_clt(tiny_model, docs, tmp_path / "big", None, cfg, progress=False)
    assert not (tmp_path / "big").exists()


def test_loading_refuses_another_model(tiny_model, trained, tmp_path):
    out, _ = trained
    clt = load_clt(out).clt
    clt.cfg = clt.cfg.replace(layers=(0, 1, 5))
    clt.save(tmp_path / "deep")
    with pytest.raises(InterpError, match="layers up to 5"):
        load_clt(tmp_path / "deep", tiny_model)


# ------------------------------------------------------------------ evaluation, the command line
def test_eval_of_a_clt_without_cross_layer_writes_equals_per_layer_transcoders(tiny_model,
                                                                                docs):
    """A CLT whose cross-layer decoder blocks are zero is three per-layer transcoders: the
    held-out NMSE, L0 and every CE figure (all layers spliced, each alone) are the same."""
    from saes.transcoders import TranscoderConfig
    from saes.transcoders.evaluate import TranscoderEvalConfig, evaluate_transcoders
    from saes.transcoders.files import TranscoderSet
    from saes.transcoders.mlp_replacement import CLTReplacement
    from tests.support.transcoders import random_clt

    rep = random_clt(tiny_model, [0, 1, 2], skip=True)
    clt = rep.clt
    with torch.no_grad():
        for w in clt.W_dec:
            w[:, 1:] = 0
    per = {}
    for i in range(3):
        cfg = TranscoderConfig(d_in=clt.cfg.d_in, d_sae=clt.cfg.d_sae, layer=i, skip=True,
                               hook_point=f"blocks.{i}.mlp.hook_in", architecture="topk",
                               k=clt.cfg.k, output_hook=f"blocks.{i}.hook_mlp_out")
        tc = cfg.model_class()(cfg)
        with torch.no_grad():
            tc.W_enc.copy_(clt.W_enc[i])
            tc.b_enc.copy_(clt.b_enc[i])
            tc.W_dec.copy_(clt.W_dec[i][:, 0])
            tc.b_dec.copy_(clt.b_dec[i])
            tc.W_skip.copy_(clt.W_skip[i])
        per[i] = tc
    ecfg = TranscoderEvalConfig(tokens=400, seq_len=16, n_bootstrap=50)
    text = paragraphs(40, seed=3)
    a = evaluate_transcoders(tiny_model, CLTReplacement(clt), text, ecfg, progress=False)
    b = evaluate_transcoders(tiny_model, TranscoderSet(per), text, ecfg, progress=False)
    for key in ("ce_clean", "ce_all", "ce_zero_all"):
        assert getattr(a, key) == pytest.approx(getattr(b, key), abs=1e-5), key
    for la, lb in zip(a.layers, b.layers, strict=True):
        assert la.nmse == pytest.approx(lb.nmse, rel=1e-5)
        assert la.l0 == pytest.approx(lb.l0) and la.ce_loss_score == pytest.approx(
            lb.ce_loss_score, abs=1e-5)
    # and with the cross-layer blocks back, the later layers' predictions change
    c = evaluate_transcoders(tiny_model, random_clt(tiny_model, [0, 1, 2], skip=True), text,
                             ecfg, progress=False)
    assert c.layers[0].nmse == pytest.approx(a.layers[0].nmse, rel=1e-5)
    assert c.layers[2].nmse != pytest.approx(a.layers[2].nmse, rel=1e-3)


text_file = text_file_fixture(400, seed=1)


def test_cli_train_clt_eval_graph(tiny_model_dir, text_file, tmp_path, capsys):
    import json

    from tests.support.cli_runner import run

    run_dir, m = tmp_path / "clt", ["--model", str(tiny_model_dir)]
    code, out, err = run(["transcoder", "train-clt", "--d-sae", "48", "--k", "6", "--tokens",
                          str(64 * 20), "--batch-size", "64", "--seq-len", "16",
                          "--windows-per-chunk", "8", "--text", str(text_file), *m,
                          "--out", str(run_dir)], capsys)
    assert code == 0, err
    assert "steps 20/20" in out and (run_dir / "clt" / "config.json").is_file()
    assert json.loads((run_dir / "results.json").read_text())["complete"]
    code, out, err = run(["transcoder", "eval", str(run_dir), "--text", str(text_file),
                          "--tokens", "300", "--seq-len", "16", *m], capsys)
    assert code == 0, err
    res = json.loads((run_dir / "results.json").read_text())
    assert [row["layer"] for row in res["layers"]] == [0, 1, 2]
    assert res["transcoders"]["kind"] == "cross-layer"
    assert all(row["nmse"] < 1.0 for row in res["layers"])
    g_dir = tmp_path / "graph"
    code, out, err = run(["graph", "The capital of France is Paris. The capital of Italy is",
                          "--transcoders", str(run_dir), "--check-features", "5",
                          "--no-contexts", *m, "--out", str(g_dir)], capsys)
    assert code == 0, err
    g = json.loads((g_dir / "results.json").read_text())
    assert g["target_edge_sum"] == pytest.approx(g["target_real"], abs=1e-4)
    assert g["transcoders"]["kind"] == "cross-layer" and len(g["checks"]) == 5


#: A subprocess's environment: no progress bars, one thread per process.
ENV = {**os.environ, "INTERP_NO_PROGRESS": "1", "OMP_NUM_THREADS": "1"}
TORCHRUN = [str(Path(sys.executable).parent / "torchrun"), "--standalone", "--nproc-per-node",
            "2", "--no-python"]


def _clt_cmd(tiny_model_dir, text_file, out, *extra: str,
             arch: tuple[str, ...] = ("--k", "4")) -> list[str]:
    exe = Path(sys.executable).parent / "interp"
    return [str(exe), "transcoder", "train-clt", "--model", str(tiny_model_dir), "--text",
            str(text_file), "--d-sae", "48", *arch, "--skip", "--tokens", str(64 * 24),
            "--batch-size", "64", "--seq-len", "16", "--windows-per-chunk", "8",
            "--checkpoint-every", "5", "--dead-window", "128", "--out", str(out), *extra]


@pytest.mark.processes
def test_ddp_two_processes_train_the_clt_of_one(tiny_model_dir, text_file, tmp_path):
    """torchrun, 2 CPU processes (gloo), each streaming its own shard of the text and holding
    a whole replica, versus one process with the same global batch (data shards 2): the
    same losses and the same weights, every decoder block included."""
    one, two = tmp_path / "one", tmp_path / "two"
    subprocess.run(_clt_cmd(tiny_model_dir, text_file, one, "--data-shards", "2"), env=ENV,
                   check=True, capture_output=True, timeout=600)
    proc = subprocess.run([*TORCHRUN, *_clt_cmd(tiny_model_dir, text_file, two)],
                          env=ENV, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    a, b = load_clt(one).clt, load_clt(two).clt
    ha = json.loads((one / "results.json").read_text())["history"]["loss"]
    hb = json.loads((two / "results.json").read_text())["history"]["loss"]
    assert len(ha) == len(hb) == 24 and ha[0] != ha[-1]
    assert ha == pytest.approx(hb, rel=1e-4)
    for name, t in a.tensors().items():
        assert torch.allclose(b.tensors()[name], t, atol=1e-4), name


@pytest.mark.processes
@pytest.mark.parametrize("arch", [("--k", "4"), ("--arch", "jumprelu")], ids=["topk", "jumprelu"])
def test_features_sharded_over_two_processes_train_the_clt_of_one(tiny_model_dir, text_file,
                                                                 tmp_path, arch):
    """--shard-features under torchrun, 2 CPU processes (gloo): each holds half of every
    layer's features (TopK's k largest and AuxK's dead features chosen over both halves).
    Stopped at step 8, resumed by one process to step 16 and by two to the end (the
    checkpoint is the whole CLT), it equals one process's CLT, every weight."""
    one, two = tmp_path / "one", tmp_path / "two"
    subprocess.run(_clt_cmd(tiny_model_dir, text_file, one, arch=arch), env=ENV, check=True,
                   capture_output=True, timeout=600)
    alone = _clt_cmd(tiny_model_dir, text_file, two, "--shard-features", "--data-shards", "1",
                     arch=arch)
    sharded = [*TORCHRUN, *alone]
    for leg in ([*sharded, "--stop-at", "8"], [*alone, "--stop-at", "16"], sharded):
        proc = subprocess.run(leg, env=ENV, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
    a, b = load_clt(one).clt, load_clt(two).clt
    ha = json.loads((one / "results.json").read_text())["history"]
    hb = json.loads((two / "results.json").read_text())["history"]
    assert ha["loss"] == pytest.approx(hb["loss"], rel=1e-4)
    assert ha["l0"] == pytest.approx(hb["l0"], rel=1e-4)
    assert ha["dead_fraction"] == pytest.approx(hb["dead_fraction"])
    if arch[0] == "--k":
        assert max(ha["dead_fraction"]) > 0  # AuxK had dead features to choose among
    for name, t in a.tensors().items():
        assert torch.allclose(b.tensors()[name], t, atol=1e-4), name


# ------------------------------------------------------------------ bad inputs
from tests.support.bad_inputs import Case, M, _text  # noqa: E402

#: This tool's bad-input cases (tests/unit/interp/test_bad_inputs.py runs them all).
BAD_INPUTS: list[Case] = [
    Case("transcoder-train-clt-relu", lambda c: [
        "transcoder", "train-clt", *M(c), "--arch", "relu", "--text", _text(c),
        "--out", c.out], "cross-layer transcoders train as topk or jumprelu",
        out_is_artifact=True),
    Case("transcoder-train-clt-bad-layer", lambda c: [
        "transcoder", "train-clt", *M(c), "--layers", "0,9", "--text", _text(c),
        "--out", c.out], "layer 9", out_is_artifact=True),
    Case("transcoder-train-clt-too-big", lambda c: [
        "transcoder", "train-clt", *M(c), "--d-sae", "4000000", "--k", "8", "--text",
        _text(c), "--out", c.out], "lower d_sae", out_is_artifact=True),
    Case("transcoder-train-clt-reach-zero", lambda c: [
        "transcoder", "train-clt", *M(c), "--reach", "0", "--text", _text(c),
        "--out", c.out], "reach must be a positive integer", out_is_artifact=True),
]
