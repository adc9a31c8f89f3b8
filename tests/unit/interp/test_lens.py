"""The logit lens: exactness at the last layer, metric sanity, and the real model."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from interp.errors import InterpError
from interp.lenses.logit import LogitLens, entropy, kl_divergence
from interp.lenses.readout import run_lens
from tests.support.bad_inputs import Case, Ctx, M, _foreign_lens, _truncated_artifact, _under_file


def _model_logprobs(model, prompt: str) -> torch.Tensor:
    ids, mask = model.tokenize([prompt])
    return torch.log_softmax(model.logits(ids, mask)[0].float(), -1)


def test_last_layer_reproduces_model_logits_tiny(tiny_model):
    prompt = "The capital of France is"
    res = run_lens(tiny_model, prompt, keep_logprobs=True).logit
    ref = _model_logprobs(tiny_model, prompt)
    torch.testing.assert_close(res.logprobs[-1], ref, atol=1e-4, rtol=0)
    assert float(res.kl[-1].abs().max()) < 1e-5
    # the lens is not the identity on earlier layers: KL > 0 there
    assert float(res.kl[0].min()) > 1e-3


def test_final_norm_gamma_is_used(tiny_model):
    """Dropping the final RMSNorm's γ changes the readout (γ was randomised)."""
    h = torch.randn(4, tiny_model.d_model)
    with_gamma = tiny_model.unembed(h)
    eps = tiny_model.bridge.cfg.eps if hasattr(tiny_model.bridge.cfg, "eps") else 1e-5
    normed = h / torch.sqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    w_u = tiny_model.bridge.original_model.lm_head.weight
    gamma = tiny_model.bridge.original_model.model.norm.weight
    torch.testing.assert_close(with_gamma, (normed * gamma) @ w_u.T, atol=1e-4, rtol=1e-4)
    assert not torch.allclose(with_gamma, normed @ w_u.T, atol=1e-2)


def test_metrics():
    p = torch.log_softmax(torch.tensor([[2.0, 1.0, 0.0]]), -1)
    q = torch.log_softmax(torch.tensor([[0.0, 1.0, 2.0]]), -1)
    assert float(kl_divergence(p, p)) == pytest.approx(0.0, abs=1e-7)
    expected = float((p.exp() * (p - q)).sum())
    assert float(kl_divergence(p, q)) == pytest.approx(expected)
    uniform = torch.log(torch.full((1, 8), 1 / 8))
    assert float(entropy(uniform)) == pytest.approx(math.log(8), rel=1e-6)


def test_result_schema(tiny_model):
    res = run_lens(tiny_model, "Once upon a time", top_k=3, layers="0,2").logit
    d = res.to_dict()
    n_pos = len(d["tokens"])
    assert d["layers"] == [0, 2]
    for key in ("top1", "top1_prob", "kl", "entropy"):
        assert len(d[key]) == 2 and all(len(row) == n_pos for row in d[key])
    assert all(len(cell) == 3 for row in d["topk"] for cell in row)
    assert "".join(d["tokens"]) == "Once upon a time"
    probs = [c["prob"] for c in d["topk"][0][0]]
    assert probs == sorted(probs, reverse=True)
    df = res.to_frame()
    assert len(df) == 2 * n_pos and set(df.columns) >= {"layer", "top1", "kl", "entropy"}


def test_lens_errors(tiny_model):
    with pytest.raises(InterpError, match="empty prompt"):
        run_lens(tiny_model, "  ")
    with pytest.raises(InterpError, match="out of range"):
        run_lens(tiny_model, "hi", layers="9")
    with pytest.raises(InterpError, match="top-k"):
        run_lens(tiny_model, "hi", top_k=0)


def test_lens_interface(tiny_model):
    lens = LogitLens(tiny_model)
    h = torch.randn(2, 5, tiny_model.d_model)
    lp = lens.logprobs(h, 1)
    assert lp.shape == (2, 5, tiny_model.d_vocab)
    torch.testing.assert_close(lp.exp().sum(-1), torch.ones(2, 5), atol=1e-5, rtol=0)


def test_one_entry_point_reads_logit_and_tuned_lens_from_one_pass(tiny_model):
    """run_lens: the logit lens alone, or with a tuned lens beside it (config or keywords,
    not both); the readout carries its manifest."""
    from interp.lenses.readout import LensConfig
    from interp.lenses.tuned import TunedLens

    alone = run_lens(tiny_model, "Once upon a time", top_k=2)
    assert alone.tuned is None and alone.logit.lens == "logit"
    assert alone.manifest is not None and alone.manifest["config"]["top_k"] == 2
    both = run_lens(tiny_model, "Once upon a time",
                    LensConfig(top_k=2, tuned=TunedLens(tiny_model)))
    assert both.tuned is not None and both.tuned.lens == "tuned"
    assert both.tuned.tokens == both.logit.tokens
    # zero translators: the tuned lens is the logit lens
    torch.testing.assert_close(both.tuned.kl, both.logit.kl)
    data = both.to_dict()
    assert data["lens"] == "logit" and data["tuned"]["lens"] == "tuned"
    assert list(data)[-2:] == ["tuned", "manifest"] and "warnings" not in data
    with pytest.raises(InterpError, match="not both"):
        run_lens(tiny_model, "hi", LensConfig(), top_k=2)


def test_lens_config_checks_name_the_field():
    from interp.lenses.readout import LensConfig

    with pytest.raises(InterpError, match="LensConfig: top_k must be ≥ 1"):
        LensConfig(top_k=0)
    with pytest.raises(InterpError, match="LensConfig: tuned must not be empty"):
        LensConfig(tuned="  ")


# ------------------------------------------------------------------ bad inputs


def _damaged_run_lens(ctx: Ctx) -> str:
    """A tuned-lens run folder whose finished lens was truncated (its checkpoint is there)."""
    run_dir = ctx.tmp / "tl-run"
    (run_dir / "checkpoint").mkdir(parents=True)
    (run_dir / "checkpoint" / "config.json").write_text("{}")
    Path(_truncated_artifact(ctx, "tuned_lens")).rename(run_dir / "lens")
    return str(run_dir)


#: This tool's bad-input cases. tests/unit/interp/test_bad_inputs.py runs every unit-test
#: module's ``BAD_INPUTS`` as one matrix (tests/support/bad_inputs.py collects them).
BAD_INPUTS: list[Case] = [
    Case("lens-empty-prompt", lambda c: ["lens", "  ", *M(c), "--out", c.out], "empty prompt"),
    Case("lens-missing-model", lambda c: ["lens", "hi", "--model", str(c.tmp / "nope"),
                                          "--out", c.out], "cannot read model path"),
    Case("lens-unknown-model", lambda c: ["lens", "hi", "--model", "no-org/no-model",
                                          "--out", c.out], "unknown model"),
    Case("lens-layer-out-of-range", lambda c: ["lens", "hi", *M(c), "--layer", "7",
                                               "--out", c.out], "out of range"),
    Case("lens-bad-layer-list", lambda c: ["lens", "hi", *M(c), "--layer", "1,x",
                                           "--out", c.out], "bad layer 'x'"),
    Case("lens-backward-layer-range", lambda c: ["lens", "hi", *M(c), "--layer", "2-0",
                                                 "--out", c.out], "bad layer range '2-0'"),
    Case("lens-top-k-zero", lambda c: ["lens", "hi", *M(c), "--top-k", "0", "--out", c.out],
         "--top-k"),
    Case("lens-unwritable-out", lambda c: ["lens", "hi", *M(c), "--out", _under_file(c)],
         "cannot create output folder"),
    Case("lens-truncated-tuned-lens", lambda c: ["lens", "hi", *M(c), "--tuned",
                                                 _truncated_artifact(c, "tuned_lens"),
                                                 "--out", c.out], "checksum mismatch"),
    Case("lens-damaged-run-lens", lambda c: ["lens", "hi", *M(c), "--tuned",
                                             _damaged_run_lens(c), "--out", c.out],
         "rebuild it from its checkpoint"),
    Case("lens-tuned-lens-other-model", lambda c: ["lens", "hi", *M(c), "--tuned",
                                                   _foreign_lens(c), "--out", c.out],
         "was trained on"),
    Case("lens-profile-unwritable", lambda c: [
        "lens", "hi", *M(c), "--profile", _under_file(c), "--out", c.out], "--profile"),
    Case("lens-gguf-unknown-architecture", lambda c: [
        "lens", "hi", "--model", c.ggufs["odd-arch"], "--out", c.out], "cannot load this GGUF"),
    # found by the fuzzing (test_cli_fuzz.py)
    Case("lens-meta-device", lambda c: [
        "lens", "hi", *M(c), "--device", "meta", "--out", c.out], "cannot run a model"),
    Case("lens-over-long-model-name", lambda c: [
        "lens", "hi", "--model", "m" * 10_000, "--out", c.out], "model name 'mmm"),
    Case("lens-prompt-not-utf8", lambda c: [
        "lens", "caf\udce9", *M(c), "--out", c.out], "argument 2 (caf\\udce9) is not valid UTF-8"),
    Case("lens-empty-out", lambda c: ["lens", "hi", *M(c), "--out", ""],
         "empty output folder name"),
    Case("lens-out-is-current-folder", lambda c: [
        "lens", "hi", *M(c), "--out", "."], "is the current folder"),
]
