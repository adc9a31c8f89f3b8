"""The CLI: outputs, --out semantics, stdout/stderr discipline, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.browser import assert_clean, visit
from tests.support.cli_runner import run

REQUIRED = {"model", "tokens", "layers", "top1", "topk", "kl", "entropy"}


def test_lens_writes_report_and_results(tiny_model_dir, tmp_path, capsys):
    out = tmp_path / "new" / "dir"
    code, stdout, _ = run(["lens", "Once upon a time", "--model", str(tiny_model_dir),
                           "--out", str(out), "--top-k", "3"], capsys)
    assert code == 0
    assert "logit lens" in stdout
    data = json.loads((out / "results.json").read_text())
    assert REQUIRED <= set(data)
    assert data["layers"] == [0, 1, 2]
    assert len(data["top1"]) == 3 and len(data["top1"][0]) == len(data["tokens"])
    assert all(len(c) == 3 for row in data["topk"] for c in row)
    assert data["manifest"]["seed"] == 0 and data["manifest"]["dataset_hash"]
    html = (out / "report.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and "Once upon a time" in html
    assert sorted(p.name for p in out.iterdir()) == ["figures", "report.html", "results.json"]
    assert sorted(p.name for p in (out / "figures").iterdir()) == ["curves.png", "curves.svg"]


def test_json_goes_to_stdout_logs_to_stderr(tiny_model_dir, capsys):
    code, stdout, _ = run(["lens", "hello there", "--model", str(tiny_model_dir), "--json",
                           "--layer", "0,2"], capsys)
    assert code == 0
    data = json.loads(stdout)  # stdout holds nothing but the JSON
    assert data["layers"] == [0, 2]


def test_out_keeps_other_files(tiny_model_dir, tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "results.json").write_text("old")
    code, _, _ = run(["lens", "hi", "--model", str(tiny_model_dir), "--out", str(tmp_path)],
                     capsys)
    assert code == 0
    assert (tmp_path / "notes.txt").read_text() == "mine"
    assert json.loads((tmp_path / "results.json").read_text())["prompt"] == "hi"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--layer", "40"], "layer 40 out of range: model has 3 layers (0–2)"),
        (["--layer", "1,x"], "bad layer 'x'"),
        (["--top-k", "0"], "0"),
        (["--device", "cuda:7"], "cuda"),
    ],
)
def test_errors_are_one_line_exit_2_and_leave_nothing(tiny_model_dir, tmp_path, capsys,
                                                      args, message):
    (tmp_path / "keep.txt").write_text("x")
    (tmp_path / "report.html").write_text("previous report")
    code, stdout, stderr = run(["lens", "hello", "--model", str(tiny_model_dir),
                                "--out", str(tmp_path), *args], capsys)
    assert code == 2
    assert stdout == ""
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]
    assert "Traceback" not in stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt", "report.html"]
    assert (tmp_path / "report.html").read_text() == "previous report"


@pytest.mark.parametrize(
    "args, message",
    [
        (["lens", "   "], "empty prompt"),
        (["lens", "hi", "--model", "/no/such/model"], "cannot read model path /no/such/model"),
        (["lens", "hi", "--model", "missing.gguf"], "cannot read GGUF file missing.gguf"),
        (["lens", "hi", "--model", "no-such-org/no-such-model"], "unknown model"),
    ],
)
def test_input_errors(tmp_path, capsys, args, message):
    out = tmp_path / "created"
    code, _, stderr = run([*args, "--out", str(out)], capsys)
    assert code == 2
    assert len(stderr.strip().splitlines()) == 1 and message in stderr
    assert not out.exists(), "an output folder created by a failed command must be removed"


def test_out_under_a_regular_file(tiny_model_dir, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, _, stderr = run(["lens", "hi", "--model", str(tiny_model_dir),
                           "--out", str(blocker / "sub")], capsys)
    assert code == 2 and "cannot create output folder" in stderr
    assert len(stderr.strip().splitlines()) == 1


def test_models_verb(capsys):
    code, stdout, _ = run(["models", "--json"], capsys)
    assert code == 0
    rows = json.loads(stdout)
    assert rows[0]["name"] == "smollm2-135m-instruct"


def test_console_script_subprocess(tiny_model_dir, tmp_path):
    """The installed `interp` entry point: exit 2, one stderr line, no traceback."""
    exe = Path(sys.executable).parent / "interp"
    assert exe.exists(), "console script `interp` not installed in the venv"
    proc = subprocess.run(
        [str(exe), "lens", "hello", "--model", str(tiny_model_dir), "--layer", "40"],
        capture_output=True, text=True, env={**os.environ}, timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == "error: layer 40 out of range: model has 3 layers (0–2)"
    assert proc.stdout == ""


def test_chat_flag_applies_template(tiny_model_dir, capsys):
    code, stdout, _ = run(["lens", "hello", "--model", str(tiny_model_dir), "--chat", "--json"],
                          capsys)
    assert code == 0
    data = json.loads(stdout)
    assert data["chat"] is True
    assert "<|im_start|>" in data["tokens"] and data["tokens"][-1] == "\n"


def test_capture_verb_saves_a_loadable_artifact(tiny_model_dir, tmp_path, capsys):
    import torch

    from interp.runs.artifacts import load_artifact

    data = tmp_path / "prompts.jsonl"
    data.write_text('{"text": "hello there"}\n{"text": "Once upon a time, far away"}\n')
    out = tmp_path / "cap"
    code, stdout, _ = run(["capture", "--file", str(data), "--model", str(tiny_model_dir),
                           "--layer", "0,2", "--positions", "all", "--out", str(out)], capsys)
    assert code == 0, stdout
    assert "blocks.2.hook_resid_post" in stdout
    art = load_artifact(out / "activations", kind="activations", d_model=64)
    acts = art.tensors["blocks.2.hook_resid_post"]
    assert acts.shape[0] == 2 and acts.shape[2] == 64
    assert art.tensors["mask"].sum(1).tolist() == art.tensors["lengths"].tolist()
    # the saved rows are exactly what the Python API returns
    import interp

    ref = interp.capture(interp.load(str(tiny_model_dir)), ["hello there",
                         "Once upon a time, far away"], layers=[2], positions="all")
    torch.testing.assert_close(acts, ref[2])
    res = json.loads((out / "results.json").read_text())
    assert [h["hook"] for h in res["hooks"]] == ["blocks.0.hook_resid_post",
                                                 "blocks.2.hook_resid_post"]
    assert res["hooks"][0]["norm_n"] == int(art.tensors["lengths"].sum())
    assert (out / "report.html").read_text().count("blocks.2.hook_resid_post") >= 1
    assert not [p for p in out.iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize(
    "args, message",
    [
        (["capture", "hi", "--positions", "middle"], "bad --positions 'middle'"),
        (["capture", "hi"], "nothing to capture"),
        (["capture", "--layer", "0"], "no prompts"),
        (["capture", "--file", "nope.jsonl", "--layer", "0"], "no such file"),
        (["capture", "hi", "--layer", "0", "--hook", "blocks.0.hook_bogus"], "unknown hook"),
    ],
)
def test_capture_verb_errors(tiny_model_dir, tmp_path, capsys, args, message):
    out = tmp_path / "o"
    code, _, stderr = run([*args, "--model", str(tiny_model_dir), "--out", str(out)], capsys)
    assert code == 2 and message in stderr and len(stderr.strip().splitlines()) == 1
    assert not out.exists()


@pytest.mark.parametrize(
    "args, hooks, note",
    [
        (["--layers", "0,2"], [0, 2], False),
        (["--layer", "1"], [1], False),
        (["--layer", "0,2"], [0, 2], True),  # the old meaning of --layer, still accepted
        (["--layer", "all"], [0, 1, 2], True),
    ],
)
def test_capture_layer_is_one_layer_and_layers_a_list(tiny_model_dir, tmp_path, capsys, args,
                                                      hooks, note):
    out = tmp_path / "cap"
    code, _, stderr = run(["capture", "hi there", "--model", str(tiny_model_dir), *args,
                           "--out", str(out)], capsys)
    assert code == 0, stderr
    res = json.loads((out / "results.json").read_text())
    assert [h["layer"] for h in res["hooks"]] == hooks
    assert ("note: --layer takes one layer; a list means --layers" in stderr) == note
    code, _, stderr = run(["capture", "hi", "--model", str(tiny_model_dir), "--layer", "1",
                           "--layers", "0,2", "--out", str(tmp_path / "both")], capsys)
    assert code == 2 and "give --layer or --layers, not both" in stderr


def test_generate_json_is_the_only_stdout(tiny_model_dir, tmp_path, capsys):
    out = tmp_path / "g"
    code, stdout, stderr = run(["generate", "hello there", "Once upon a time", "--model",
                                str(tiny_model_dir), "--max-new-tokens", "5", "--json",
                                "--deterministic", "--out", str(out)], capsys)
    assert code == 0
    data = json.loads(stdout)
    assert [d["prompt"] for d in data] == ["hello there", "Once upon a time"]
    assert all(isinstance(d["text"], str) for d in data)
    assert "tokens in" in stderr and "verified" in stderr
    res = json.loads((out / "results.json").read_text())
    assert res["config"]["deterministic"] is True
    assert [g["text"] for g in res["generations"]] == [d["text"] for d in data]
    v = visit(out / "report.html", "generate_report.png")
    assert_clean(v)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--temperature", "-1"], "temperature"),
        (["--temperature", "nan"], "temperature"),
        (["--top-p", "0"], "top-p"),
        (["--max-new-tokens", "0"], "max new tokens"),
        (["--inject-batch-noise", "inf"], "inject-batch-noise"),
    ],
)
def test_generate_errors(tiny_model_dir, tmp_path, capsys, args, message):
    out = tmp_path / "g"
    code, stdout, stderr = run(["generate", "hi", "--model", str(tiny_model_dir), *args,
                                "--out", str(out)], capsys)
    assert code == 2 and stdout == "" and message in stderr
    assert len(stderr.strip().splitlines()) == 1 and not out.exists()


def _probe_rows(n=40, classes=2, label_key="label"):
    adjs = ["good", "great", "fine", "nice", "bad", "awful", "poor", "sad"]
    return [{"text": f"The thing was {adjs[i % 8]}.", label_key: (i % 8 >= 4) % classes,
             "group": adjs[i % 8]} for i in range(n)]


def test_probe_verb_tiny_with_ablation(tiny_model_dir, tmp_path, capsys):
    data = tmp_path / "p.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in _probe_rows(80)))
    out = tmp_path / "probe-out"
    code, stdout, stderr = run(["probe", "--model", str(tiny_model_dir), "--dataset", str(data),
                                "--layers", "all", "--seeds", "2", "--ablate",
                                "--random-directions", "3", "--out", str(out)], capsys)
    assert code == 0, stderr
    assert "ablation at layer" in stdout
    res = json.loads((out / "results.json").read_text())
    for key in ("layers", "test_accuracy_mean", "test_accuracy_std", "control_accuracy_mean",
                "control_task_accuracy_mean", "selectivity", "shuffled_accuracy_mean",
                "train_accuracy_mean"):
        assert len(res[key]) == 3, key
    ab = res["ablation"]
    for name in ("probe", "mean_difference"):
        assert len(ab[name]["random"]["kl"]) == 3 and 0 <= ab[name]["percentile"] <= 100
    from interp.runs.artifacts import load_artifact

    art = load_artifact(out / "probe", kind="probe", d_model=64)
    assert art.hook_point == f"blocks.{res['best_layer']}.hook_resid_post"


@pytest.mark.parametrize(
    "rows, args, message",
    [
        (_probe_rows(40, classes=1), [], "single class"),
        (_probe_rows(6), [], "at least 10"),
        (_probe_rows(40, label_key="y"), [], "no column 'label'"),
        (_probe_rows(40), ["--layer", "40"], "layer 40 out of range"),
        (_probe_rows(40), ["--text-column", "sentence"], "no column 'sentence'"),
    ],
)
def test_probe_verb_errors(tiny_model_dir, tmp_path, capsys, rows, args, message):
    data = tmp_path / "p.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "o"
    code, stdout, stderr = run(["probe", "--model", str(tiny_model_dir), "--dataset", str(data),
                                *args, "--out", str(out)], capsys)
    assert code == 2 and stdout == "" and message in stderr
    assert len(stderr.strip().splitlines()) == 1 and not out.exists()


def test_steer_train_and_generate(tiny_model_dir, tmp_path, capsys):
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps({"positive": p, "negative": n}) + "\n" for p, n in [
        ("I love it.", "I hate it."), ("What a great day.", "What an awful day."),
        ("The food was lovely.", "The food was dreadful.")]))
    vec = tmp_path / "vec"
    code, stdout, stderr = run(["steer", "train", "--pairs", str(pairs), "--layer", "1",
                                "--model", str(tiny_model_dir), "--out", str(vec)], capsys)
    assert code == 0, stderr
    assert json.loads(stdout)["n_pairs"] == 3
    code, stdout, stderr = run(["steer", "generate", "Once upon a time", "--vector", str(vec),
                                "--alpha", "0", "--max-new-tokens", "5", "--json",
                                "--model", str(tiny_model_dir)], capsys)
    assert code == 0, stderr
    row = json.loads(stdout)[0]
    assert row["text"] == row["unsteered"] and row["layer"] == 1


@pytest.mark.parametrize("case", ["empty-pairs", "layer-out-of-range", "other-model"])
def test_steer_errors(tiny_model_dir, tmp_path, capsys, case):
    import torch

    from interp.steering.vectors import SteeringVector

    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text('{"positive": "I love it.", "negative": "I hate it."}\n')
    if case == "empty-pairs":
        pairs.write_text("\n")
        args = ["steer", "train", "--pairs", str(pairs), "--layer", "1"]
        message = "empty dataset"
    elif case == "layer-out-of-range":
        args = ["steer", "train", "--pairs", str(pairs), "--layer", "7"]
        message = "layer 7 out of range"
    else:
        path = SteeringVector(torch.ones(64), 1, "some-other-model", "mean_diff").save(
            tmp_path / "other")
        args = ["steer", "generate", "hi", "--vector", str(path)]
        message = "was made for model 'some-other-model'"
    code, stdout, stderr = run([*args, "--model", str(tiny_model_dir),
                                *(["--out", str(tmp_path / "v")] if "train" in args else [])],
                               capsys)
    assert code == 2 and stdout == "" and message in stderr, stderr
    assert len(stderr.strip().splitlines()) == 1


def test_steer_sweep_tiny(tiny_model_dir, tmp_path, capsys):
    from interp.generation.engine import generate
    from interp.models.loading import load

    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps({"positive": p, "negative": n}) + "\n" for p, n in [
        ("I love it.", "I hate it."), ("What a great day.", "What an awful day.")]))
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("Once upon a time\nThe weather today\nMy friend said\n")
    out = tmp_path / "sweep"
    code, stdout, stderr = run(["steer", "sweep", "--pairs", str(pairs), "--layers", "0,2",
                                "--alphas", "-1,2,30", "--prompts", str(prompts),
                                "--max-new-tokens", "4", "--model", str(tiny_model_dir),
                                "--out", str(out)], capsys)
    assert code == 0, stderr
    res = json.loads((out / "results.json").read_text())
    assert res["layers"] == [0, 2] and res["alphas"] == [0.0, -1.0, 2.0, 30.0]
    for key in ("target_score", "perplexity", "distinct2", "side_kl", "collapse"):
        assert len(res[key]) == 2 and all(len(row) == 4 for row in res[key]), key
    assert res["side_kl"][0][0] == 0.0  # alpha = 0 leaves the model unchanged
    # alpha = 0 rows are byte-identical to unsteered generation
    plain = generate(load(str(tiny_model_dir)), ["Once upon a time", "The weather today",
                                                 "My friend said"], max_new_tokens=4).texts
    zero = [t["text"] for t in res["texts"] if t["alpha"] == 0.0 and t["layer"] == 0]
    assert zero == plain
    assert (out / "report.html").exists()
    for name in ("target_delta", "perplexity", "distinct2", "collapse", "side_kl",
                 "target_by_alpha"):
        assert (out / "figures" / f"{name}.svg").exists(), name
        assert (out / "figures" / f"{name}.png").exists(), name


@pytest.mark.parametrize(
    "args, message",
    [
        (["--alphas", "1,x"], "bad --alphas"),
        (["--alphas", "1,nan"], "finite"),
        (["--layers", "0,9"], "layer 9 out of range"),
    ],
)
def test_steer_sweep_errors(tiny_model_dir, tmp_path, capsys, args, message):
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text('{"positive": "I love it.", "negative": "I hate it."}\n')
    out = tmp_path / "o"
    code, _, stderr = run(["steer", "sweep", "--pairs", str(pairs), *args, "--model",
                           str(tiny_model_dir), "--out", str(out)], capsys)
    assert code == 2 and message in stderr and len(stderr.strip().splitlines()) == 1
    assert not out.exists()


@pytest.mark.parametrize(
    "args, layers, note",
    [
        (["--layers", "0,2"], [0, 2], False),
        (["--layer", "1"], [1], False),
        (["--layer", "0,2"], [0, 2], True),  # the old meaning of --layer, still accepted
    ],
)
def test_lens_layer_reads_one_layer_and_layers_a_list(tiny_model_dir, capsys, args, layers,
                                                      note):
    code, stdout, stderr = run(["lens", "hi", "--model", str(tiny_model_dir), "--json", *args],
                               capsys)
    assert code == 0, stderr
    assert json.loads(stdout)["layers"] == layers
    assert ("note: --layer takes one layer; a list means --layers" in stderr) == note
    assert len(stderr.strip().splitlines()) == int(note)


def test_lens_layer_and_layers_together_is_an_error(tiny_model_dir, capsys):
    code, _, stderr = run(["lens", "hi", "--model", str(tiny_model_dir), "--layer", "1",
                           "--layers", "0,2"], capsys)
    assert code == 2 and "give --layer or --layers, not both" in stderr
