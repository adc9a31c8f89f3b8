"""Transcoders on the tiny model: the trainer, scales, files, other tools' formats."""

from __future__ import annotations

import json

import pytest
import torch

from interp.activations.capture import forward_with_hooks
from saes.autointerp.store import read_explanations
from saes.transcoders import (
    TranscoderConfig,
    TranscoderTrainConfig,
    load_transcoders,
    train_transcoders,
    transcoder_class,
)
from saes.transcoders.formats import write_circuit_tracer
from tests.support.bad_inputs import Case, M, _folder, _text, _tiny_clt, _tiny_sae
from tests.support.html_checks import json_island
from tests.support.text_fixtures import paragraphs, text_file_fixture


@pytest.fixture(scope="module")
def docs() -> list[str]:
    return paragraphs(150)


def _cfg(**kw) -> TranscoderTrainConfig:
    base = dict(d_sae=128, tokens=64 * 40, batch_size=64, seq_len=16, windows_per_chunk=16,
                checkpoint_every=100, dead_window=64 * 20, lr=3e-3)
    return TranscoderTrainConfig(**{**base, **kw})


def _mlp_io(model, text: str, layer: int):
    ids = torch.tensor([model.encode(text)])
    hooks = [f"blocks.{layer}.mlp.hook_in", f"blocks.{layer}.hook_mlp_out"]
    acts, _ = forward_with_hooks(model, ids, None, hooks)
    return acts[hooks[0]][0, 1:], acts[hooks[1]][0, 1:]


@pytest.fixture(scope="module")
def trained(tiny_model, docs, tmp_path_factory):
    out = tmp_path_factory.mktemp("tc")
    res = train_transcoders(tiny_model, docs, out, [0, 2], _cfg(skip=True), progress=False)
    return out, res


def test_trains_several_layers_that_predict_the_mlp_output(tiny_model, docs, trained):
    out, res = trained
    assert sorted(res) == [0, 2] and all(r.complete for r in res.values())
    tcs = load_transcoders(out, tiny_model)
    assert tcs.layers == [0, 2]
    for layer, r in res.items():
        h = r.history
        assert sum(h["mse"][-5:]) < 0.5 * sum(h["mse"][:5])
        tc = tcs[layer]
        assert tc.cfg.input_scale == tc.cfg.output_scale == 1.0  # folded
        assert tc.cfg.hook_point == f"blocks.{layer}.mlp.hook_in"
        assert tc.cfg.output_hook == f"blocks.{layer}.hook_mlp_out"
        x, y = _mlp_io(tiny_model, " ".join(paragraphs(3, seed=9)), layer)
        with torch.no_grad():
            pred = tc(x)
        nmse = float((pred - y).pow(2).sum() / (y - y.mean(0)).pow(2).sum())
        ev = sum(h["explained_variance"][-5:]) / 5  # training's, in scaled units
        assert nmse < 0.9  # better than the mean
        assert abs((1 - nmse) - ev) < 0.15, (layer, nmse, ev)  # raw units: scales folded right
        assert tc.encode(x).gt(0).sum(-1).float().mean() <= tc.cfg.k  # TopK


def test_fold_keeps_outputs(tiny_model):
    torch.manual_seed(0)
    cfg = TranscoderConfig(d_in=8, d_sae=16, hook_point="h", k=4, architecture="topk",
                           skip=True, input_scale=2.5, output_scale=0.3)
    tc = cfg.model_class()(cfg)
    assert type(tc) is transcoder_class(type(tc).__mro__[2])  # TopKSAE + the mixin, cached
    with torch.no_grad():
        for p in tc.parameters():
            p.copy_(torch.randn_like(p))
    x = torch.randn(5, 8)
    before = tc(x)
    tc.fold_input_scale()
    assert tc.cfg.input_scale == tc.cfg.output_scale == 1.0
    assert torch.allclose(tc(x), before, atol=1e-4)


def test_loss_is_against_the_output_not_the_input():
    cfg = TranscoderConfig(d_in=4, d_sae=8, hook_point="h", architecture="relu")
    tc = cfg.model_class()(cfg)
    x_in, y = torch.randn(6, 4), torch.randn(6, 4)
    with torch.no_grad():
        tc.b_dec.copy_(y.mean(0))
    _, parts = tc.loss(torch.cat([x_in, y], 1), 0.0)
    assert float(parts["mse"]) == pytest.approx(float((y - y.mean(0)).pow(2).sum(-1).mean()),
                                                rel=1e-5)


def test_circuit_tracer_and_sparsify_files_read_back(tiny_model, tmp_path):
    from safetensors.torch import save_file

    from saes.transcoders.files import TranscoderSet

    torch.manual_seed(1)
    d, m = tiny_model.d_model, 32
    by_layer = {}
    for layer, arch in ((0, "relu"), (1, "jumprelu")):
        cfg = TranscoderConfig(d_in=d, d_sae=m, hook_point=f"blocks.{layer}.mlp.hook_in",
                               output_hook=f"blocks.{layer}.hook_mlp_out", layer=layer,
                               architecture=arch, skip=True)
        tc = cfg.model_class()(cfg)
        with torch.no_grad():
            for p in tc.parameters():
                p.copy_(torch.randn_like(p) * 0.1)
        by_layer[layer] = tc
    ours = TranscoderSet(by_layer)
    write_circuit_tracer(ours, tmp_path / "ct")
    back = load_transcoders(tmp_path / "ct", tiny_model)
    assert back.format == "circuit-tracer" and back.layers == [0, 1]
    x = torch.randn(7, d)
    for layer in (0, 1):
        assert back[layer].cfg.architecture == by_layer[layer].cfg.architecture
        assert torch.allclose(back[layer](x), by_layer[layer](x), atol=1e-5)
    # sparsify: a folder per hook point, encoder.weight [d_sae, d_in], W_skip applied as x·Wᵀ
    w_enc, b_enc = torch.randn(m, d), torch.randn(m)
    w_dec, b_dec, w_skip = torch.randn(m, d), torch.randn(d), torch.randn(d, d)
    folder = tmp_path / "sp" / "layers.2.mlp"
    folder.mkdir(parents=True)
    save_file({"encoder.weight": w_enc, "encoder.bias": b_enc, "W_dec": w_dec, "b_dec": b_dec,
               "W_skip": w_skip}, str(folder / "sae.safetensors"))
    (folder / "cfg.json").write_text(json.dumps({"activation": "topk", "k": 5, "num_latents": m,
                                                 "transcode": True, "skip_connection": True,
                                                 "d_in": d}))
    sp = load_transcoders(tmp_path / "sp", tiny_model)
    assert sp.format == "sparsify" and sp.layers == [2]
    pre = torch.relu(x @ w_enc.T + b_enc)  # sparsify: ReLU, then the top k
    vals, idx = pre.topk(5, dim=-1)
    want = torch.zeros_like(pre).scatter_(-1, idx, vals) @ w_dec + b_dec + x @ w_skip.T
    assert torch.allclose(sp[2](x), want, atol=1e-4)


# ------------------------------------------------------------------ the command line


text_file = text_file_fixture(400, seed=1)


def test_cli_train_eval_graph(tiny_model_dir, text_file, tmp_path, capsys):
    from tests.support.cli_runner import run

    run_dir, m = tmp_path / "run", ["--model", str(tiny_model_dir)]
    train = ["transcoder", "train", "--layers", "0,1,2", "--d-sae", "96", "--k", "8",
             "--tokens", str(64 * 20), "--batch-size", "64", "--seq-len", "16",
             "--windows-per-chunk", "8", "--text", str(text_file), *m, "--out", str(run_dir)]
    code, out, err = run(train, capsys)
    assert code == 0, err
    assert out.count("steps 20/20") == 3
    assert all((run_dir / f"layer-{i}" / "transcoder" / "config.json").is_file()
               for i in range(3))
    code, out, err = run(["transcoder", "eval", str(run_dir), "--text", str(text_file),
                          "--tokens", "300", "--seq-len", "16", *m], capsys)
    assert code == 0, err
    res = json.loads((run_dir / "results.json").read_text())
    assert [row["layer"] for row in res["layers"]] == [0, 1, 2]
    assert res["ce_all"] >= res["ce_clean"] - 1e-6 or res["ce_loss_score_all"] <= 1.0
    assert (run_dir / "figures" / "transcoders.svg").is_file()
    assert (run_dir / "report.html").is_file()
    code, out, err = run(["transcoder", "eval", str(run_dir), "--text", str(text_file),
                          "--tokens", "300", "--seq-len", "16", *m, "--json", "--out",
                          str(tmp_path / "eval-json")], capsys)
    assert code == 0, err
    assert json.loads(out) == json.loads((tmp_path / "eval-json" / "results.json").read_text())
    assert json.loads(out)["ce_all"] == pytest.approx(res["ce_all"], rel=1e-6)
    # `sae explain` on a layer folder labels that transcoder's features, beside it
    code, out, err = run(["sae", "explain", str(run_dir / "layer-2"), "--text", str(text_file),
                          "--tokens", "300", "--seq-len", "16", "--ctx-len", "8",
                          "--n-explain", "4", "--n-score", "4", "--features", "alive:96",
                          "--scorer", "programmatic", "--random-features", "2", "--planted",
                          "2", "--bootstrap", "100", *m, "--out", str(tmp_path / "ex")], capsys)
    assert code == 0, err
    labels = read_explanations(run_dir / "layer-2" / "transcoder", d_sae=96)
    assert 0 < len(labels) <= 96  # every feature that fired on the held-out text
    g_dir = tmp_path / "graph"
    code, out, err = run(["graph", "The capital of France is Paris. The capital of Italy is",
                          "--transcoders", str(run_dir), "--check-features", "5",
                          "--no-contexts", "--save-adjacency", "--max-edges", "40", *m,
                          "--out", str(g_dir)], capsys)
    assert code == 0, err
    g = json.loads((g_dir / "results.json").read_text())
    # a prompt's graph carries its run manifest, and its report shows it
    assert g["manifest"]["model_id"] and g["manifest"]["dataset_hash"]
    assert g["manifest"]["git_commit"][:7] in (g_dir / "report.html").read_text()
    assert g["target_replacement"] == pytest.approx(g["target_real"], abs=1e-4)
    assert g["target_edge_sum"] == pytest.approx(g["target_real"], abs=1e-4)
    assert len(g["checks"]) == 5 and (g_dir / "report.html").is_file()
    assert len(g["edges"]) == min(40, g["n_edges_pruned"])
    assert (g_dir / "adjacency.safetensors").is_file()
    # the viewer shows the labels of the layer-2 features the graph kept
    data = json_island((g_dir / "report.html").read_text(), "graph-data")
    kept = {n["key"] for n in data["nodes"] if n["key"]}
    labelled = {f"2:{f}": e.label for f, e in labels.items() if f"2:{f}" in kept}
    assert labelled and data["explanations"] == labelled
    task = tmp_path / "task.jsonl"
    task.write_text("\n".join(json.dumps({"clean": f"The capital of {c} is", "corrupted":
                                          f"The capital of {d} is", "answer": " Paris",
                                          "wrong": " Rome"})
                              for c, d in (("France", "Italy"), ("Italy", "France"),
                                           ("Spain", "Italy"))) + "\n")
    t_dir = tmp_path / "task"
    code, out, err = run(["graph", "--task", str(task), "--limit", "3", "--transcoders",
                          str(run_dir), "--check-features", "4", *m, "--out", str(t_dir)],
                         capsys)
    assert code == 0, err
    res = json.loads((t_dir / "results.json").read_text())
    assert res["n_pairs"] == 3 and len(res["prompts"]) == 3
    assert "spearman_real" in res["summary"] and (t_dir / "report.html").is_file()


def test_interrupted_transcoder_run_resumes_to_the_same_weights(tiny_model, docs, tmp_path):
    cfg = _cfg(tokens=64 * 9, checkpoint_every=3, skip=True)
    whole = train_transcoders(tiny_model, docs, tmp_path / "whole", [0, 2], cfg, progress=False)
    part = train_transcoders(tiny_model, docs, tmp_path / "part", [0, 2], cfg, stop_at=6,
                             progress=False)
    assert [r.steps_done for r in part.values()] == [6, 6]
    done = train_transcoders(tiny_model, docs, tmp_path / "part", [0, 2], cfg, progress=False)
    assert all(r.resumed_from == 6 and r.complete for r in done.values())
    a, b = load_transcoders(tmp_path / "part", tiny_model), load_transcoders(
        tmp_path / "whole", tiny_model)
    for layer in (0, 2):
        for name, t in a[layer].tensors().items():
            assert torch.allclose(t, b[layer].tensors()[name], atol=1e-6), (layer, name)
        assert done[layer].history["loss"] == pytest.approx(whole[layer].history["loss"])


# ------------------------------------------------------------------ bad inputs
#: This tool's bad-input cases. tests/unit/interp/test_bad_inputs.py runs every unit-test
#: module's ``BAD_INPUTS`` as one matrix (tests/support/bad_inputs.py collects them).
BAD_INPUTS: list[Case] = [
    # a cross-layer transcoder is used whole: its features write to the later layers
    Case("transcoder-eval-clt-some-layers", lambda c: [
        "transcoder", "eval", _tiny_clt(c), *M(c), "--layers", "0,1", "--text", _text(c),
        "--out", c.out], "it is used whole"),
    Case("transcoder-train-bad-layer", lambda c: [
        "transcoder", "train", *M(c), "--layers", "0,7", "--text", _text(c), "--out", c.out],
        "layer 7", out_is_artifact=True),
    Case("transcoder-eval-no-transcoders", lambda c: [
        "transcoder", "eval", _folder(c, "empty_tc"), *M(c), "--text", _text(c),
        "--out", c.out], "no transcoders in"),
    Case("transcoder-eval-an-sae", lambda c: [
        "transcoder", "eval", _tiny_sae(c), *M(c), "--text", _text(c), "--out", c.out],
        "a 'sae' artifact, expected 'transcoder'"),
    # requests beyond the text: refused before the model runs
    Case("transcoder-train-tokens-beyond-text", lambda c: [
        "transcoder", "train", *M(c), "--layers", "0,1", "--text", _text(c), "--tokens",
        "50000000", "--out", c.out], "lower tokens (or windows_per_chunk) or give more text",
        out_is_artifact=True),
]
