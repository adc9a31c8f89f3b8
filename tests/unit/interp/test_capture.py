"""interp.capture: positions, padding, batching, early stopping, errors."""

from __future__ import annotations

import pytest
import torch

from interp.activations.capture import capture
from interp.errors import InterpError
from tests.support.bad_inputs import Case, M, _under_file

PROMPTS = [
    "The capital of France is",
    "Hi",
    "Numbers like 12345 are split into digits, one token per digit.",
    "Once upon a time",
    "A",
    "The quick brown fox jumps over the lazy dog and keeps running.",
]


def _single(model, prompt: str, layer: int) -> torch.Tensor:
    """Reference: one unpadded forward through the bridge's own cache machinery."""
    ids, _ = model.tokenize([prompt])
    _, cache = model.bridge.run_with_cache(ids, names_filter=[model.resid_hook(layer)])
    return cache[model.resid_hook(layer)][0]


def test_positions_shapes_and_values(tiny_model):
    acts = capture(tiny_model, PROMPTS, layers=[1], positions="all", batch_size=4)
    n, d = len(PROMPTS), tiny_model.d_model
    assert acts[1].shape[0] == n and acts[1].shape[2] == d
    for i, p in enumerate(PROMPTS):
        ref = _single(tiny_model, p, 1)
        k = int(acts.lengths[i])
        assert k == ref.shape[0]
        torch.testing.assert_close(acts[1][i, :k], ref, atol=1e-4, rtol=1e-5)
        assert acts.mask[i, :k].all() and not acts.mask[i, k:].any()
        assert (acts[1][i, k:] == 0).all()
    last = capture(tiny_model, PROMPTS, layers=[1], positions="last", batch_size=4)
    mean = capture(tiny_model, PROMPTS, layers=[1], positions="mean", batch_size=4)
    first = capture(tiny_model, PROMPTS, layers=[1], positions=0, batch_size=4)
    second_last = capture(tiny_model, PROMPTS[:1], layers=[1], positions=-2)
    for i in range(n):
        k = int(acts.lengths[i])
        torch.testing.assert_close(last[1][i], acts[1][i, k - 1], atol=1e-5, rtol=0)
        torch.testing.assert_close(mean[1][i], acts[1][i, :k].mean(0), atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(first[1][i], acts[1][i, 0], atol=1e-5, rtol=0)
    k0 = int(acts.lengths[0])
    torch.testing.assert_close(second_last[1][0], acts[1][0, k0 - 2], atol=1e-4, rtol=1e-5)


def test_drop_first(tiny_model):
    full = capture(tiny_model, PROMPTS[:3], layers=[0], positions="all")
    dropped = capture(tiny_model, PROMPTS[:3], layers=[0], positions="mean", drop_first=True)
    for i in range(3):
        k = int(full.lengths[i])
        torch.testing.assert_close(dropped[0][i], full[0][i, 1:k].mean(0), atol=1e-5, rtol=1e-5)


def test_batch_invariance_tiny(tiny_model):
    a1 = capture(tiny_model, PROMPTS * 3, layers=[0, 2], positions="all", batch_size=1)
    a16 = capture(tiny_model, PROMPTS * 3, layers=[0, 2], positions="all", batch_size=16)
    for layer in (0, 2):
        torch.testing.assert_close(a16[layer], a1[layer], atol=1e-4, rtol=0)


def test_only_requested_hooks_kept_and_forward_stops_early(tiny_model):
    fired: list[str] = []

    def spy(tensor, hook):
        fired.append(hook.name)
        return tensor

    with tiny_model.bridge.hooks(fwd_hooks=[("blocks.2.hook_resid_post", spy)]):
        acts = capture(tiny_model, PROMPTS[:2], layers=[0])
        assert fired == [], "block 2 ran although only layer 0 was requested"
        capture(tiny_model, PROMPTS[:2], layers=[0], with_logits=True)
        assert fired, "with_logits must run the whole model"
    assert list(acts.acts) == ["blocks.0.hook_resid_post"]


def test_any_hook_point_and_logits(tiny_model):
    acts = capture(tiny_model, PROMPTS[:2], hooks=["blocks.1.mlp.hook_post"], layers=[2],
                   positions="last", with_logits=True)
    assert acts["blocks.1.mlp.hook_post"].shape == (2, 128)
    assert acts.logits is not None and acts.logits.shape == (2, tiny_model.d_vocab)
    torch.testing.assert_close(tiny_model.unembed(acts[2]), acts.logits, atol=1e-4, rtol=1e-5)


def test_chat_template_and_dtype(tiny_model):
    plain = capture(tiny_model, ["hello"], layers=[0], positions="all")
    chat = capture(tiny_model, ["hello"], layers=[0], positions="all", chat=True,
                   dtype=torch.bfloat16)
    assert int(chat.lengths[0]) > int(plain.lengths[0])
    assert chat[0].dtype == torch.bfloat16


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"layers": [7]}, "layer 7 out of range: model has 3 layers"),
        ({"hooks": ["blocks.0.hook_nope"]}, "unknown hook point"),
        ({"layers": [0], "positions": "first"}, "unknown positions"),
        ({"layers": [0], "positions": 50}, "past the end"),
        ({}, "nothing to capture"),
        ({"layers": [0], "batch_size": 0}, "batch size"),
    ],
)
def test_errors(tiny_model, kwargs, message):
    with pytest.raises(InterpError, match=message):
        capture(tiny_model, PROMPTS[:2], **kwargs)


def test_empty_prompt(tiny_model):
    with pytest.raises(InterpError, match="empty prompt"):
        capture(tiny_model, ["ok", "   "], layers=[0])
    with pytest.raises(InterpError, match="no prompts"):
        capture(tiny_model, [], layers=[0])


def test_progress_bar_goes_to_stderr_only(tiny_model, capsys):
    capture(tiny_model, PROMPTS * 4, layers=[0], batch_size=2, progress=True)
    out, err = capsys.readouterr()
    assert out == ""


def test_streaming_leaves_no_hooks_or_inference_mode_between_batches(tiny_model):
    """A consumer may run the model or train between batches of iter_capture."""
    from interp.activations.capture import iter_capture

    ids, mask = tiny_model.tokenize(["hello there"])
    full = tiny_model.logits(ids, mask)
    for batch in iter_capture(tiny_model, PROMPTS, layers=[0], batch_size=2):
        assert not torch.is_inference_mode_enabled()
        # a full forward between batches is not cut short by capture's stop hook
        torch.testing.assert_close(tiny_model.logits(ids, mask), full)
        w = torch.zeros(tiny_model.d_model, requires_grad=True)
        (batch.acts["blocks.0.hook_resid_post"] @ w).sum().backward()  # trainable downstream
        assert w.grad is not None


def test_run_capture_result_frame_figure_and_report(tiny_model, tmp_path):
    """The capture verb's typed result: results.json dict, frame, notebook view, report."""
    from interp.activations.capture import CaptureConfig, run_capture, summarize
    from interp.activations.figures import norm_figure, norm_titles
    from interp.plotting import svg_text
    from interp.runs.outdir import OutDir
    from reports.capture import capture_report

    cfg = CaptureConfig(layers="all", positions="all", dataset="<b>set</b>")
    res = run_capture(tiny_model, ["<script>x</script> hello", "Once upon a time"], cfg)
    d = res.to_dict()
    # the result carries its own manifest (last), made by run_capture
    assert d.pop("manifest")["config"] == cfg.to_dict()
    assert list(d) == ["model", "n_prompts", "n_tokens", "positions", "dtype", "dataset",
                       "dataset_hash", "artifact", "hooks"]
    assert d["hooks"] == summarize(res.activations)
    assert d["n_tokens"] == int(res.activations.lengths.sum())
    assert set(res.tensors()) == {*res.activations.hook_points, "lengths", "mask", "input_ids"}
    assert len(res.to_frame()) == tiny_model.n_layers
    # the figure: one hover point per layer and curve (mean, first token, other tokens)
    fig = norm_figure(res)
    (ax,) = fig.axes
    assert len([ln for ln in ax.get_lines() if ln.get_gid()]) == 3 * tiny_model.n_layers
    assert len(norm_titles(res)) == 3 * tiny_model.n_layers
    assert svg_text(fig) == svg_text(norm_figure(res))  # byte-stable
    assert "<svg" in res._repr_html_() and "<script>" not in res._repr_html_()
    report = capture_report(res, {"model_id": res.model_id})
    assert "&lt;b&gt;set&lt;/b&gt;" in report.html and report.html.count("<svg") == 1
    with OutDir(tmp_path / "o") as out:
        report.write(out)
    assert sorted(p.name for p in (tmp_path / "o" / "figures").iterdir()) == [
        "norms.png", "norms.svg"]
    # one layer: no norm-by-layer figure
    one = run_capture(tiny_model, ["hi"], CaptureConfig(layers=[1]))
    assert "<svg" not in capture_report(one, {}).html and one.to_dict()["hooks"][0]["norm_n"] == 1


def test_capture_config_checks_itself_and_run_capture_takes_keywords(tiny_model):
    """What the CLI checks, a Python caller gets when the config is built."""
    import math

    from interp.activations.capture import CaptureConfig, run_capture
    from interp.schema import ConfigError

    with pytest.raises(ConfigError, match="max_memory_gb .the memory limit. must be a "
                                          "positive number of GB, got nan"):
        CaptureConfig(max_memory_gb=math.nan)
    with pytest.raises(ConfigError, match="batch_size must be ≥ 1"):
        CaptureConfig(batch_size=0)
    with pytest.raises(ConfigError, match="unknown dtype 'int8'"):
        CaptureConfig(dtype="int8")  # type: ignore[arg-type]
    res = run_capture(tiny_model, ["hi"], layers=[1], seed=3)
    assert [h.layer for h in res.hooks] == [1]
    assert res.manifest is not None and res.manifest["seed"] == 3
    assert res.manifest["config"] == res.config.to_dict() and "seed" not in res.config.to_dict()
    with pytest.raises(InterpError, match="not both"):
        run_capture(tiny_model, ["hi"], CaptureConfig(layers=[1]), layers=[2])


@pytest.mark.parametrize("positions", ["all", "mean", "last", 0, -1])
@pytest.mark.parametrize("drop_first", [False, True])
def test_reduce_takes_per_head_activations(positions, drop_first):
    """A hook with a head dimension (``hook_z``: ``[b, pos, head, d_head]``) reduces like
    each head's ``[b, pos, d_head]`` slice (it failed with "all" and "mean" once)."""
    from interp.activations.capture import _reduce

    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 5, 4, 2, generator=g)
    mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1], [0, 0, 0, 1, 1]], dtype=torch.bool)
    whole = _reduce(x, mask, positions, drop_first)
    for h in range(x.shape[2]):
        one = _reduce(x[:, :, h], mask, positions, drop_first)
        assert torch.equal(whole.select(-2, h), one)


# ------------------------------------------------------------------ bad inputs


def _cache() -> str:
    from interp.runs.paths import cache_dir

    return str(cache_dir())


#: This tool's bad-input cases. tests/unit/interp/test_bad_inputs.py runs every unit-test
#: module's ``BAD_INPUTS`` as one matrix (tests/support/bad_inputs.py collects them).
BAD_INPUTS: list[Case] = [
    Case("capture-missing-file", lambda c: ["capture", "--file", str(c.tmp / "no.jsonl"), *M(c),
                                            "--layer", "0", "--out", c.out], "no such file"),
    Case("capture-malformed-jsonl", lambda c: ["capture", "--file", c.file(
        "bad.jsonl", '{"text": "ok"}\n{"text": oops}\n'), *M(c), "--layer", "0", "--out",
        c.out], "line 2"),
    Case("capture-malformed-csv", lambda c: ["capture", "--file", c.file(
        "bad.csv", 'text\n"unterminated\n'), *M(c), "--layer", "0", "--out", c.out], "bad.csv"),
    Case("capture-empty-dataset", lambda c: ["capture", "--file", c.file("empty.jsonl", ""),
                                             *M(c), "--layer", "0", "--out", c.out], "empty"),
    Case("capture-layer-out-of-range", lambda c: ["capture", "hi", *M(c), "--layer", "3",
                                                  "--out", c.out], "out of range"),
    Case("capture-bad-positions", lambda c: ["capture", "hi", *M(c), "--layer", "0",
                                             "--positions", "middle", "--out", c.out],
         "bad --positions"),
    Case("capture-unknown-hook", lambda c: ["capture", "hi", *M(c), "--hook", "blocks.0.nope",
                                            "--out", c.out], "unknown hook point"),
    Case("capture-over-memory-limit", lambda c: ["capture", "hi there", *M(c), "--layer", "all",
                                                 "--positions", "all", "--max-memory-gb",
                                                 "1e-7", "--out", c.out], "over the"),
    Case("capture-nan-memory-limit", lambda c: ["capture", "hi", *M(c), "--layer", "0",
                                                "--max-memory-gb", "nan", "--out", c.out],
         "memory limit"),
    Case("capture-unwritable-out", lambda c: ["capture", "hi", *M(c), "--layer", "0",
                                              "--out", _under_file(c)],
         "cannot create output folder"),
    Case("capture-truncated-gguf", lambda c: [
        "capture", "hi", "--model", c.ggufs["truncated"], "--layer", "0", "--out", c.out],
        "cannot load this GGUF"),
    # found by the fuzzing (test_cli_fuzz.py)
    Case("capture-position-too-large", lambda c: [
        "capture", "hi", *M(c), "--layer", "0", "--positions", str(10**30), "--out", c.out],
        "is out of range"),
    Case("capture-out-is-the-cache", lambda c: [
        "capture", "hi", *M(c), "--layer", "0", "--out", _cache()], "is interp's cache"),
]
