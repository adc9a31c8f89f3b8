"""The tuned lens: translators, unembedding, training and resume, evaluation, CLI, report."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from interp.errors import InterpError
from interp.lenses.evaluation import LensEvalConfig, evaluate_lenses
from interp.lenses.logit import LogitLens
from interp.lenses.training import TunedLensTrainConfig, train_tuned_lens
from interp.lenses.tuned import (
    Translators,
    TunedLens,
    default_lens_dir,
    load_tuned_lens,
    unembedding_hash,
)
from interp.models.unembedding import Unembed
from tests.support.bad_inputs import (
    Case,
    Ctx,
    M,
    _foreign_lens,
    _text,
    _truncated_artifact,
    _under_file,
)
from tests.support.browser import assert_clean, visit
from tests.support.cli_runner import run
from tests.support.kill_resume import kill_at_steps
from tests.support.text_fixtures import text_file_fixture

text_file = text_file_fixture(120)


def _tiny_cfg(**kw) -> TunedLensTrainConfig:
    base = dict(tokens=8 * 2 * 16, seq_len=16, batch_size=2, positions_per_window=8,
                checkpoint_every=2, init_tokens=256, unembed_dtype="float32")
    base.update(kw)
    return TunedLensTrainConfig(**base)


# ------------------------------------------------------------------ lens maths


def test_zero_translators_are_the_logit_lens(tiny_model):
    tuned, logit = TunedLens(tiny_model), LogitLens(tiny_model)
    h = torch.randn(5, tiny_model.d_model) * 3
    for layer in range(tiny_model.n_layers):
        torch.testing.assert_close(tuned.logprobs(h, layer), logit.logprobs(h, layer))


def test_translator_is_affine_and_last_layer_is_untouched(tiny_model):
    tr = Translators(tiny_model.n_layers - 1, tiny_model.d_model)
    with torch.no_grad():
        tr.A.normal_(0, 0.1)
        tr.b.normal_(0, 0.1)
    lens = TunedLens(tiny_model, tr)
    h = torch.randn(4, tiny_model.d_model)
    torch.testing.assert_close(lens.transform(h, 0), h + h @ tr.A[0].T + tr.b[0])
    assert torch.equal(lens.transform(h, tiny_model.n_layers - 1), h)
    assert not torch.allclose(lens.logprobs(h, 0), LogitLens(tiny_model).logprobs(h, 0))


def test_fast_unembed_matches_the_bridge(tiny_model):
    u = Unembed(tiny_model)
    assert u.fast, "the tiny Llama should take the direct RMSNorm + W_U path"
    h = torch.randn(7, tiny_model.d_model) * 4
    ref = tiny_model.unembed(h).float()
    torch.testing.assert_close(u(h), ref, atol=1e-5, rtol=1e-5)
    bf = u(h, matmul_dtype=torch.bfloat16)
    assert (bf - ref).abs().max() < 0.05 * ref.abs().max()


def test_kl_loss_formula_matches_log_softmax(tiny_model):
    """lens_loss_step's logsumexp form equals KL computed from log-softmaxes."""
    from interp.lenses.training import lens_loss_step

    tr = Translators(tiny_model.n_layers - 1, tiny_model.d_model)
    ids = torch.randint(3, tiny_model.d_vocab, (2, 10))
    pos = torch.tensor([[1, 4, 9], [2, 3, 8]])
    got = lens_loss_step(tiny_model, tr, ids, pos, Unembed(tiny_model))
    from interp.activations.capture import forward_with_hooks
    from interp.lenses.logit import kl_divergence

    names = [tiny_model.resid_hook(i) for i in range(tiny_model.n_layers - 1)]
    acts, logits = forward_with_hooks(tiny_model, ids, None, names, with_logits=True)
    rows = torch.arange(2).unsqueeze(1).expand_as(pos)
    final = torch.log_softmax(logits[rows, pos], -1)
    for layer, value in enumerate(got):
        lp = LogitLens(tiny_model).logprobs(acts[names[layer]][rows, pos], layer)
        assert value == pytest.approx(float(kl_divergence(final, lp).mean()), abs=2e-5)


# ------------------------------------------------------------------ files


def _saved_lens(tiny_model, tmp_path: Path) -> Path:
    tr = Translators(tiny_model.n_layers - 1, tiny_model.d_model)
    with torch.no_grad():
        tr.A.normal_(0, 0.05)
        tr.b.normal_(0, 0.05)
    return TunedLens(tiny_model, tr).save(tmp_path / "lens", config={"note": "t"},
                                          manifest={"seed": 0})


def test_save_load_roundtrip(tiny_model, tmp_path):
    path = _saved_lens(tiny_model, tmp_path)
    cfg = json.loads((path / "config.json").read_text())
    assert cfg["config"]["unembedding_sha256"] == unembedding_hash(tiny_model)
    lens = load_tuned_lens(path, tiny_model)
    lens2 = load_tuned_lens(tmp_path, tiny_model)  # a run folder resolves to its lens/
    h = torch.randn(3, tiny_model.d_model)
    torch.testing.assert_close(lens.logprobs(h, 0), lens2.logprobs(h, 0))
    assert lens.path == path


@pytest.fixture(scope="module")
def other_tiny_model(tiny_model_dir, tmp_path_factory):
    """The tiny model with a different final-norm γ: same name shape, other unembedding."""
    import shutil

    from transformers import LlamaForCausalLM

    import interp

    d = tmp_path_factory.mktemp("other") / "tiny-llama"
    shutil.copytree(tiny_model_dir, d)
    hf = LlamaForCausalLM.from_pretrained(str(d))
    with torch.no_grad():
        hf.model.norm.weight.mul_(1.5)
    hf.save_pretrained(str(d))
    return interp.load(str(d))


def test_lens_from_another_model_is_refused(tiny_model, other_tiny_model, tmp_path):
    path = _saved_lens(tiny_model, tmp_path)
    with pytest.raises(InterpError, match="trained on another model"):
        load_tuned_lens(path, other_tiny_model)


def test_missing_and_corrupt_lens_files(tiny_model, tmp_path):
    with pytest.raises(InterpError, match="no tuned lens at"):
        load_tuned_lens(tmp_path / "nope", tiny_model)
    with pytest.raises(InterpError, match="interp tuned-lens train"):
        load_tuned_lens(None, tiny_model)
    path = _saved_lens(tiny_model, tmp_path)
    w = path / "weights.safetensors"
    w.write_bytes(w.read_bytes()[:100])
    with pytest.raises(InterpError, match="checksum mismatch"):
        load_tuned_lens(path, tiny_model)


def test_default_location_is_inside_the_test_cache(tiny_model):
    cache = Path(os.environ["INTERP_CACHE"]).resolve()
    assert cache in default_lens_dir(tiny_model).resolve().parents
    assert "pytest" in str(cache) or "tmp" in str(cache)


# ------------------------------------------------------------------ training


def test_training_lowers_kl_below_the_logit_lens(tiny_model, text_file):
    from interp.data.corpus import load_texts

    train = load_texts("train", text_file=text_file)
    held = load_texts("heldout", text_file=text_file)
    ev_cfg = LensEvalConfig(tokens=16 * 12, seq_len=16, batch_size=4, summary_last=1)
    for init in ("zero", "lstsq"):
        res = train_tuned_lens(tiny_model, train, Path(os.environ["INTERP_CACHE"]) / init,
                               _tiny_cfg(init=init, tokens=16 * 2 * 30, lr=3e-3),
                               progress=False)
        assert res.complete and res.steps_done == 30
        lens = load_tuned_lens(res.lens_path, tiny_model)
        ev = evaluate_lenses(tiny_model, {"logit": LogitLens(tiny_model), "tuned": lens},
                             held, ev_cfg).to_dict()
        for layer in (0, 1):
            assert ev["kl_tuned_lens"][layer] < ev["kl_logit_lens"][layer], (init, ev)
        assert ev["kl_tuned_lens"][-1] == pytest.approx(ev["kl_logit_lens"][-1])
        assert ev["kl_logit_lens"][-1] < 1e-4  # the last layer is the model's output


def _assert_same_run(a: Path, b: Path) -> None:
    from interp.runs.artifacts import load_artifact

    la, lb = load_artifact(a / "lens"), load_artifact(b / "lens")
    assert la.config["losses"] == lb.config["losses"]
    for name in ("A", "b"):
        assert torch.equal(la.tensors[name], lb.tensors[name])


def test_interrupted_run_resumes_to_the_same_losses(tiny_model, text_file, tmp_path,
                                                    monkeypatch):
    from interp.data.corpus import load_texts
    from interp.lenses import training as tlt

    docs = load_texts("train", text_file=text_file)
    cfg = _tiny_cfg(tokens=16 * 2 * 7, checkpoint_every=2)
    full = train_tuned_lens(tiny_model, docs, tmp_path / "full", cfg, progress=False)

    real = tlt.lens_loss_step
    calls = {"n": 0}

    def dying(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 4:  # step 4 of 7: the last checkpoint holds step 2
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(tlt, "lens_loss_step", dying)
    with pytest.raises(KeyboardInterrupt):
        train_tuned_lens(tiny_model, docs, tmp_path / "cut", cfg, progress=False)
    monkeypatch.setattr(tlt, "lens_loss_step", real)
    assert not (tmp_path / "cut" / "lens").exists()
    resumed = train_tuned_lens(tiny_model, docs, tmp_path / "cut", cfg, progress=False)
    assert resumed.resumed_from == 2
    assert resumed.losses == full.losses
    _assert_same_run(tmp_path / "full", tmp_path / "cut")
    again = train_tuned_lens(tiny_model, docs, tmp_path / "cut", cfg, progress=False)
    assert again.complete and again.resumed_from == 7  # nothing left to do
    # the FLOPs of the 7 KL steps, counted across the interruption (interp.mfu)
    from interp.mfu import ModelShape, forward_flops, tuned_lens_step_flops

    shape = ModelShape.of(tiny_model)
    per_step = forward_flops(shape, 2 * cfg.seq_len, cfg.seq_len) + sum(
        tuned_lens_step_flops(shape, tiny_model.n_layers - 1, 2 * cfg.positions_per_window))
    assert full.flops == resumed.flops == again.flops == pytest.approx(7 * per_step)
    assert full.mfu is not None and 0 < full.mfu < 1 and resumed.mfu is not None


def test_resume_refuses_other_settings(tiny_model, text_file, tmp_path):
    from interp.data.corpus import load_texts

    docs = load_texts("train", text_file=text_file)
    train_tuned_lens(tiny_model, docs, tmp_path, _tiny_cfg(), stop_at=2, progress=False)
    with pytest.raises(InterpError, match="other settings.*lr"):
        train_tuned_lens(tiny_model, docs, tmp_path, _tiny_cfg(lr=0.5), progress=False)


def test_nan_loss_stops_and_keeps_the_checkpoint(tiny_model, text_file, tmp_path,
                                                 monkeypatch):
    from interp.data.corpus import load_texts
    from interp.lenses import training as tlt

    docs = load_texts("train", text_file=text_file)
    real = tlt.lens_loss_step
    calls = {"n": 0}

    def poisoned(*args, **kwargs):
        calls["n"] += 1
        out = real(*args, **kwargs)
        return [float("nan")] * len(out) if calls["n"] == 3 else out

    monkeypatch.setattr(tlt, "lens_loss_step", poisoned)
    with pytest.raises(InterpError, match=r"nan at step 3.*checkpoint \(step 2\) is kept"):
        train_tuned_lens(tiny_model, docs, tmp_path, _tiny_cfg(), progress=False)
    cfg = json.loads((tmp_path / "checkpoint" / "config.json").read_text())
    assert cfg["config"]["step"] == 2


@pytest.mark.parametrize(
    "kw, message",
    [({"lr": -1.0}, "learning rate must be > 0"), ({"lr": float("nan")}, "learning rate"),
     ({"optimizer": "lbfgs"}, "unknown optimizer"), ({"weight_decay": -1}, "weight decay"),
     ({"seq_len": 1}, "sequence length"), ({"init": "random"}, "unknown init")],
)
def test_bad_training_settings(kw, message):
    with pytest.raises(InterpError, match=message):
        TunedLensTrainConfig(**kw)


def test_settings_are_frozen_and_fill_in_what_they_imply():
    """lr follows the optimiser and positions per window the window; an evaluation needs
    at least one window's tokens; a Python caller gets the CLI's checks."""
    import dataclasses

    assert TunedLensTrainConfig().lr == 1e-4 and TunedLensTrainConfig(optimizer="sgd").lr == 1.0
    cfg = TunedLensTrainConfig(seq_len=16)
    assert cfg.positions_per_window == 15
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.tokens = 1  # type: ignore[misc]
    assert cfg.replace(tokens=64).tokens == 64
    with pytest.raises(InterpError, match="tokens must be ≥ 1"):
        TunedLensTrainConfig(tokens=0)
    with pytest.raises(InterpError, match=r"LensEvalConfig: tokens must be ≥ the sequence length"):
        LensEvalConfig(tokens=8, seq_len=16)
    with pytest.raises(InterpError, match="summary_last must be ≥ 0"):
        LensEvalConfig(summary_last=-1)


# ------------------------------------------------------------------ CLI


def test_cli_train_eval_and_lens_report(tiny_model_dir, text_file, tmp_path, capsys):
    run_dir = tmp_path / "run"
    common = ["--model", str(tiny_model_dir), "--text", str(text_file)]
    code, out, err = run(["tuned-lens", "train", *common, "--tokens", "320", "--seq-len", "16",
                          "--batch-size", "2", "--positions-per-window", "8",
                          "--init-tokens", "128", "--out", str(run_dir)], capsys)
    assert code == 0, err
    assert "steps 10/10" in out and (run_dir / "lens" / "config.json").is_file()
    code, out, err = run(["tuned-lens", "train", *common, "--tokens", "320", "--seq-len", "16",
                          "--batch-size", "2", "--positions-per-window", "8",
                          "--init-tokens", "128", "--out", str(run_dir)], capsys)
    assert code == 0 and "already trained" in err

    ev_dir = tmp_path / "ev"
    code, out, err = run(["tuned-lens", "eval", *common, "--lens", str(run_dir), "--tokens",
                          "160", "--seq-len", "16", "--out", str(ev_dir)], capsys)
    assert code == 0, err
    res = json.loads((ev_dir / "results.json").read_text())
    assert res["layers"] == [0, 1, 2]
    assert len(res["kl_logit_lens"]) == len(res["kl_tuned_lens"]) == 3
    assert res["kl_tuned_lens"][0] < res["kl_logit_lens"][0]
    assert res["manifest"]["dataset_hash"] and "ratio" in out

    lens_dir = tmp_path / "lens_out"
    code, out, err = run(["lens", "The river reads", "--model", str(tiny_model_dir),
                          "--tuned", str(run_dir), "--out", str(lens_dir)], capsys)
    assert code == 0, err
    data = json.loads((lens_dir / "results.json").read_text())
    assert data["lens"] == "logit" and data["tuned"]["lens"] == "tuned"
    assert data["tuned"]["kl"][-1] == pytest.approx(data["kl"][-1], abs=1e-5)

    v = visit(ev_dir / "report.html", "tuned_lens_eval_report.png",
              lambda page: page.locator('svg.mpl-fig g[id*="-axes_"]').count())
    assert_clean(v)
    assert v.checks >= 4  # KL, CE, entropy, top-1 panels (+ training loss)
    assert {p.name for p in (ev_dir / "figures").iterdir()} == {
        f"{name}.{ext}" for name in ("kl", "metrics", "training") for ext in ("svg", "png")}
    v = visit(lens_dir / "report.html", "lens_with_tuned_report.png",
              lambda page: page.locator("svg").count())
    assert_clean(v)


@pytest.mark.parametrize(
    "case, message",
    [
        ("other-model", "trained on another model"),
        ("corrupt", "checksum mismatch"),
        ("missing", "no tuned lens at"),
        ("bad-lr", "learning rate must be > 0"),
        ("out-under-file", "cannot create output folder"),
        ("hf-offline", "cannot load Hugging Face dataset"),
        ("text-missing", "cannot read text file"),
    ],
)
def test_cli_errors_are_one_line(case, message, tiny_model, tiny_model_dir, other_tiny_model,
                                 text_file, tmp_path, capsys):
    lens = _saved_lens(tiny_model, tmp_path)
    out = tmp_path / "out"
    tiny = ["--model", str(tiny_model_dir)]
    if case == "other-model":
        args = ["tuned-lens", "eval", "--model", other_tiny_model.path, "--lens", str(lens),
                "--text", str(text_file), "--out", str(out)]
    elif case == "corrupt":
        (lens / "weights.safetensors").write_bytes(b"\0" * 10)
        args = ["lens", "hi", *tiny, "--tuned", str(lens), "--out", str(out)]
    elif case == "missing":
        args = ["tuned-lens", "eval", *tiny, "--lens", str(tmp_path / "nope"), "--text",
                str(text_file), "--out", str(out)]
    elif case == "bad-lr":
        args = ["tuned-lens", "train", *tiny, "--lr", "-1", "--text", str(text_file),
                "--out", str(out)]
    elif case == "out-under-file":
        (tmp_path / "f").write_text("x")
        args = ["tuned-lens", "train", *tiny, "--text", str(text_file), "--tokens", "64",
                "--seq-len", "16", "--out", str(tmp_path / "f" / "run")]
    elif case == "hf-offline":
        args = ["tuned-lens", "train", *tiny, "--hf-dataset", "wikitext", "--out", str(out)]
    else:
        args = ["tuned-lens", "train", *tiny, "--text", str(tmp_path / "none.txt"),
                "--out", str(out)]
    code, stdout, stderr = run(args, capsys)
    assert code == 2, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], stderr
    assert "Traceback" not in stderr
    assert not out.exists()


# ------------------------------------------------------------------ SIGKILL


def _train_cmd(tiny_model_dir: Path, text_file: Path, out: Path) -> list[str]:
    exe = Path(sys.executable).parent / "interp"
    return [str(exe), "tuned-lens", "train", "--model", str(tiny_model_dir), "--text",
            str(text_file), "--tokens", str(16 * 2 * 40), "--seq-len", "16", "--batch-size", "2",
            "--positions-per-window", "8", "--init-tokens", "128", "--checkpoint-every", "3",
            "--unembed-dtype", "float32", "--out", str(out)]


@pytest.mark.processes
def test_sigkill_at_random_points_then_resume(tiny_model_dir, text_file, tmp_path):
    """Kill training with SIGKILL ≥ 5 times; every resume works, the result is unchanged."""
    env = {**os.environ, "INTERP_NO_PROGRESS": "1"}
    ref = tmp_path / "ref"
    subprocess.run(_train_cmd(tiny_model_dir, text_file, ref), env=env, check=True,
                   capture_output=True, timeout=300)
    out = tmp_path / "killed"
    rng = random.Random(1)
    # Kill points: a random step in each of 5 spaced bands of the 40-step run, then a
    # random extra delay inside that step, so the kill lands anywhere in the loop
    # (mid-step, mid-checkpoint-write) whatever the machine's speed.
    targets = [band + rng.randrange(0, 4) for band in (2, 9, 16, 23, 30)]
    lost = kill_at_steps(_train_cmd(tiny_model_dir, text_file, out), out, targets, 3, rng)
    kills = len(lost)
    assert kills >= 5, "training finished too fast to be killed 5 times"
    proc = subprocess.run(_train_cmd(tiny_model_dir, text_file, out), env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    _assert_same_run(ref, out)
    assert lost == sorted(lost)  # checkpoints only move forward
    assert sorted(p.name for p in out.iterdir()) == ["checkpoint", "lens", "progress.json",
                                                     "results.json"]
    results = json.loads((out / "results.json").read_text())
    assert results["complete"] and 0 < results["mfu"] < 1 and results["peak_flops"] > 0


# ------------------------------------------------------------------ typed results, figures


def _fake_eval(n_windows: int = 5, n_layers: int = 4, *, training: bool = True):
    """A LensEval with made-up per-window metrics (no model)."""
    from interp.lenses.evaluation import METRICS, LensEval, TrainingSummary

    g = torch.Generator().manual_seed(0)
    values = {}
    for lens, scale in (("logit", 3.0), ("tuned", 1.0)):
        base = torch.linspace(1.0, 0.0, n_layers).expand(n_windows, n_layers)
        values[lens] = {m: (scale * base + 0.1 * torch.rand(n_windows, n_layers, generator=g))
                        for m in METRICS}
    summary = TrainingSummary.from_lens_config({
        "train": {"tokens": 1024, "seq_len": 16, "batch_size": 2, "lr": 1e-3,
                  "optimizer": "adam", "init": "lstsq", "weight_decay": 0.001,
                  "positions_per_window": 8},
        "data": {"source": "<b>text</b>"}, "steps": 3, "losses": [3.0, 2.0, 1.5],
        "elapsed_s": 1.0, "tokens_per_s": 96.0}) if training else None
    return LensEval(model_id="tiny/<model>", layers=list(range(n_layers)),
                    lenses=["logit", "tuned"], values=values,
                    model_ce=torch.linspace(2.0, 3.0, n_windows),
                    config=LensEvalConfig(tokens=16 * n_windows, seq_len=16, summary_last=2),
                    n_positions=n_windows * 14, lens_path="/lens/<path>",
                    data={"source": "held-out & co", "sha256": "x"}, training=summary)


def test_lens_eval_stats_come_from_interp_stats():
    from interp.stats import mean_ci

    ev = _fake_eval()
    mean, ci = ev.mean_ci("logit", "kl")
    ref = mean_ci(ev.values["logit"]["kl"][:, 1].double().numpy())
    assert (mean[1], ci[1][0], ci[1][1]) == pytest.approx(ref)
    ratio, (lo, hi) = ev.kl_ratio()
    assert lo <= ratio <= hi and ratio == pytest.approx(3.0, rel=0.2)
    assert ev.kl_ratio() == (ratio, [lo, hi])  # seeded: the same interval every time
    d = ev.to_dict()
    assert list(d)[-3:] == ["lens_path", "data", "training"]
    assert d["training"]["losses"] == [3.0, 2.0, 1.5]
    assert d["tuned_lower_kl_layers"] == ev.lower_kl_layers()
    assert d["mean_kl_logit_lens"] == ev.mean_kl("logit")
    assert d["model_ce_ci95"] == list(ev.model_ce_ci()[1:])
    # a plain evaluation (evaluate_lenses) has no lens or data keys
    bare = _fake_eval(training=False)
    bare.lens_path = bare.data = None
    assert not {"lens_path", "data", "training"} & set(bare.to_dict())


def test_lens_eval_frame_and_notebook_view():
    ev = _fake_eval()
    frame = ev.to_frame()
    assert len(frame) == 2 * 4 and {"lens", "layer", "kl", "kl_lo", "kl_hi", "ce"} <= set(frame)
    html = ev._repr_html_()
    assert "<svg" in html and "KL ratio logit / tuned" in html and "tiny/&lt;model&gt;" in html


def test_eval_figures_have_one_hover_point_per_layer_and_lens():
    from interp.lenses.figures import (
        eval_kl_figure,
        eval_kl_titles,
        eval_metrics_figure,
        training_loss_figure,
    )
    from interp.plotting import svg_text

    ev = _fake_eval()
    fig = eval_kl_figure(ev)
    (ax,) = fig.axes
    assert len([ln for ln in ax.get_lines() if ln.get_gid()]) == 2 * 4
    assert len(ax.collections) == 2  # the two CI bands
    titles = eval_kl_titles(ev)
    assert len(titles) == 2 * 4 and titles["p0-tuned-3"].startswith("tuned lens\nlayer 3: ")
    assert "  [" in titles["p0-tuned-3"]  # with its CI
    assert svg_text(fig) == svg_text(eval_kl_figure(ev))  # byte-stable
    metrics = eval_metrics_figure(ev)
    assert [a.get_title() for a in metrics.axes] == [
        "Cross-entropy vs the next token", "Entropy of the lens distribution",
        "Top-1 agreement with the model"]
    # CE: both lenses and the model's own line
    assert len([ln for ln in metrics.axes[0].get_lines() if ln.get_gid()]) == 3 * 4
    assert ev.training is not None
    (loss_ax,) = training_loss_figure(ev.training).axes
    assert len([ln for ln in loss_ax.get_lines() if ln.get_gid()]) == 3


def test_tuned_lens_report_from_the_typed_result(tmp_path):
    from interp.runs.outdir import OutDir
    from reports.tuned_lens import tuned_lens_report

    ev = _fake_eval()
    report = tuned_lens_report(ev, {"model_id": ev.model_id})
    html = report.html
    assert html == tuned_lens_report(ev, {"model_id": ev.model_id}).html
    assert "<b>" not in html and "&lt;b&gt;text&lt;/b&gt;" in html
    assert "held-out &amp; co" in html and "/lens/&lt;path&gt;" in html
    assert html.count("<svg") == 3 and "How the lens was trained" in html
    assert html.count("<title>") >= 2 * 4 + 3 * 4 + 3  # hover text on every point
    with OutDir(tmp_path / "o") as out:
        report.write(out)
    assert sorted(p.name for p in (tmp_path / "o" / "figures").iterdir()) == [
        "kl.png", "kl.svg", "metrics.png", "metrics.svg", "training.png", "training.svg"]
    no_training = tuned_lens_report(_fake_eval(training=False), {}).html
    assert "How the lens was trained" not in no_training and no_training.count("<svg") == 2


def test_train_result_frame_and_notebook_view(tmp_path):
    from interp.lenses.training import TunedLensTrainResult

    res = TunedLensTrainResult(out_dir=tmp_path, steps_done=3, steps_total=4, complete=False,
                      resumed_from=0, losses=[3.0, 2.0, 1.0],
                      layer_losses=[[2.0, 1.0], [1.5, 0.5], [0.6, 0.4]], tokens_per_s=10.0,
                      elapsed_s=1.0, lens_path=None)
    assert res.final_loss == pytest.approx(2.0)
    frame = res.to_frame()
    assert list(frame.columns) == ["step", "loss", "loss_layer_0", "loss_layer_1"]
    assert len(frame) == 3
    assert res.to_dict()["losses"] == [3.0, 2.0, 1.0]
    html = res._repr_html_()
    assert "<svg" in html and "unfinished" in html


def test_kl_difference_is_paired_by_window_and_labelled_when_within_noise():
    """ΔKL(logit − tuned) per layer is the mean of per-window differences with its
    normal CI; the fake eval's lenses differ by 2·(1 − layer/3) plus noise, so layers
    0–2 are beyond noise and the last (both lenses exact up to noise) is not."""
    from interp.stats import mean_ci
    from reports.tuned_lens import tuned_lens_report

    ev = _fake_eval()
    diff, ci = ev.kl_difference_ci()
    for i in range(len(ev.layers)):
        d = (ev.values["logit"]["kl"][:, i] - ev.values["tuned"]["kl"][:, i]).double().numpy()
        assert (diff[i], *ci[i]) == pytest.approx(mean_ci(d))
    assert ev.lower_kl_beyond_noise() == [0, 1, 2]
    assert ci[3][0] <= 0 <= ci[3][1]
    d = ev.to_dict()
    assert d["kl_logit_minus_tuned"] == diff and d["kl_logit_minus_tuned_ci95"] == ci
    assert d["tuned_lower_kl_layers_beyond_noise"] == [0, 1, 2]
    html = tuned_lens_report(ev, {}).html
    table = html[html.index("Numbers per layer"):]
    assert table.count(">within noise</span>") == 1
    assert "beyond noise (paired 95% CI of the difference excludes 0) at 3" in html


# ------------------------------------------------------------------ bad inputs


def _tiny_lens(ctx: Ctx) -> str:
    """A tuned lens (identity translators) saved for the tiny model."""
    import interp
    from interp.lenses.tuned import Translators, TunedLens

    model = interp.load(ctx.tiny)
    tr = Translators(model.n_layers - 1, model.d_model)
    return str(TunedLens(model, tr).save(ctx.tmp / "tiny_lens", config={}, manifest={}))


#: This tool's bad-input cases. tests/unit/interp/test_bad_inputs.py runs every unit-test
#: module's ``BAD_INPUTS`` as one matrix (tests/support/bad_inputs.py collects them).
BAD_INPUTS: list[Case] = [
    Case("tuned-lens-train-negative-lr", lambda c: [
        "tuned-lens", "train", *M(c), "--text", c.file("t.txt", "a b c\n\nd e f\n"), "--lr",
        "-1", "--out", c.out], "learning rate", out_is_artifact=True),
    Case("tuned-lens-train-nan-weight-decay", lambda c: [
        "tuned-lens", "train", *M(c), "--text", c.file("t.txt", "a b c\n\nd e f\n"),
        "--weight-decay", "nan", "--out", c.out], "weight decay", out_is_artifact=True),
    Case("tuned-lens-train-beyond-memory", lambda c: [
        "tuned-lens", "train", *M(c), "--text", c.file("t.txt", "a b c\n\nd e f\n"),
        "--batch-size", "100000000", "--out", c.out], "would need about",
        out_is_artifact=True),
    Case("tuned-lens-train-missing-text", lambda c: [
        "tuned-lens", "train", *M(c), "--text", str(c.tmp / "none.txt"), "--out", c.out],
        "cannot read text file", out_is_artifact=True),
    Case("tuned-lens-train-empty-text", lambda c: [
        "tuned-lens", "train", *M(c), "--text", c.file("e.txt", "   \n"), "--out", c.out],
        "no text", out_is_artifact=True),
    Case("tuned-lens-train-unwritable-out", lambda c: [
        "tuned-lens", "train", *M(c), "--text", c.file("t.txt", "a b c\n\nd e f\n" * 30),
        "--out", _under_file(c)], "cannot create output folder", out_is_artifact=True),
    Case("tuned-lens-eval-missing-lens", lambda c: [
        "tuned-lens", "eval", *M(c), "--lens", str(c.tmp / "none"), "--out", c.out],
        "no tuned lens"),
    Case("tuned-lens-eval-truncated-lens", lambda c: [
        "tuned-lens", "eval", *M(c), "--lens", _truncated_artifact(c, "tuned_lens"),
        "--text", _text(c), "--out", c.out], "checksum mismatch"),
    Case("tuned-lens-eval-other-model", lambda c: [
        "tuned-lens", "eval", *M(c), "--lens", _foreign_lens(c), "--text", _text(c),
        "--out", c.out], "was trained on"),
    # found by the fuzzing (test_cli_fuzz.py)
    Case("tuned-lens-eval-seed-too-large", lambda c: [
        "tuned-lens", "eval", *M(c), "--seed", "1180591620717411303423", "--out", c.out],
        "--seed"),
    # requests beyond the text: refused before the model runs
    Case("tuned-lens-train-tokens-beyond-text", lambda c: [
        "tuned-lens", "train", *M(c), "--text", _text(c), "--tokens", "50000000",
        "--out", c.out], "tuned-lens training asks for tokens=50,000,000",
        out_is_artifact=True),
    Case("tuned-lens-eval-tokens-beyond-text", lambda c: [
        "tuned-lens", "eval", *M(c), "--lens", _tiny_lens(c), "--text", _text(c),
        "--tokens", "5000", "--out", c.out], "lens evaluation asks for tokens=5,000"),
]
