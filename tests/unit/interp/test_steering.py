"""interp.steering.vectors: vectors from contrast pairs, injection during generation, artifacts."""

from __future__ import annotations

import json

import pytest
import torch

from interp.activations.capture import capture
from interp.errors import InterpError
from interp.generation.engine import generate
from interp.steering.vectors import (
    ContrastPairs,
    distinct_n,
    load_vector,
    steer,
    train_vector,
)
from tests.support.bad_inputs import (
    Case,
    Ctx,
    M,
    _text,
    _tiny_sae,
    _truncated_artifact,
    _under_file,
)

PAIRS = ContrastPairs(
    positive=["I love this town.", "The food was wonderful.", "What a great day it was."],
    negative=["I hate this town.", "The food was dreadful.", "What an awful day it was."],
    source="inline",
)
PROMPTS = ["Once upon a time", "The weather today", "My friend said", "Numbers 1 2 3"]


def test_mean_difference_vector(tiny_model):
    vec = train_vector(tiny_model, PAIRS, 1)
    acts = capture(tiny_model, PAIRS.positive + PAIRS.negative, layers=[1])[1]
    expected = acts[:3].mean(0) - acts[3:].mean(0)
    torch.testing.assert_close(vec.vector, expected)
    assert vec.hook_point == "blocks.1.hook_resid_post" and vec.n_pairs == 3


@pytest.mark.parametrize("method", ["mean_diff", "pca"])
def test_vectors_of_several_layers_from_one_capture_equal_one_by_one(tiny_model, method):
    from interp.steering.vectors import train_vectors

    both = train_vectors(tiny_model, PAIRS, [1, 0], method=method)
    assert sorted(both) == [0, 1]
    for layer in (0, 1):
        alone = train_vector(tiny_model, PAIRS, layer, method=method)
        assert torch.equal(both[layer].vector, alone.vector)
        assert (both[layer].layer, both[layer].method, both[layer].n_pairs) == (layer, method, 3)
    assert not torch.equal(both[0].vector, both[1].vector)


def test_pca_vector_sign_and_scale(tiny_model):
    md = train_vector(tiny_model, PAIRS, 1)
    pc = train_vector(tiny_model, PAIRS, 1, method="pca")
    assert pc.norm == pytest.approx(md.norm, rel=1e-5)
    assert float(pc.vector @ md.vector) > 0


def test_alpha_zero_is_byte_identical(tiny_model):
    vec = train_vector(tiny_model, PAIRS, 1)
    base = generate(tiny_model, PROMPTS, max_new_tokens=8)
    with steer(tiny_model, vec, alpha=0.0):
        same = generate(tiny_model, PROMPTS, max_new_tokens=8)
    assert [g.token_ids for g in same.generations] == [g.token_ids for g in base.generations]


def test_steering_changes_output_and_hooks_are_removed(tiny_model):
    vec = train_vector(tiny_model, PAIRS, 0)
    base = generate(tiny_model, PROMPTS, max_new_tokens=8).texts
    with steer(tiny_model, vec, alpha=50.0):
        steered = generate(tiny_model, PROMPTS, max_new_tokens=8).texts
    assert steered != base
    assert generate(tiny_model, PROMPTS, max_new_tokens=8).texts == base
    with pytest.raises(RuntimeError, match="boom"), steer(tiny_model, vec, alpha=5.0):
        raise RuntimeError("boom")
    assert generate(tiny_model, PROMPTS, max_new_tokens=8).texts == base


def test_per_request_alpha_is_one_batch_sweep(tiny_model):
    """Alphas per request in one batch equal separate runs with a scalar alpha."""
    vec = train_vector(tiny_model, PAIRS, 1)
    alphas = [0.0, 10.0, -10.0, 30.0]
    prompts = ["Once upon a time"] * 4
    with steer(tiny_model, vec, alpha=alphas):
        batched = generate(tiny_model, prompts, max_new_tokens=6, batch_size=4).texts
    for i, a in enumerate(alphas):
        with steer(tiny_model, vec, alpha=a):
            alone = generate(tiny_model, [prompts[i]], max_new_tokens=6).texts[0]
        assert batched[i] == alone, (a, batched[i], alone)
    assert len(set(batched)) > 1


def test_errors(tiny_model, tmp_path):
    vec = train_vector(tiny_model, PAIRS, 1)
    with pytest.raises(InterpError, match="no contrast pairs"):
        train_vector(tiny_model, ContrastPairs([], []), 1)
    with pytest.raises(InterpError, match="out of range"):
        train_vector(tiny_model, PAIRS, 9)
    with pytest.raises(InterpError, match="finite"), steer(tiny_model, vec, alpha=float("nan")):
        pass
    with pytest.raises(InterpError, match="d_model"), steer(tiny_model, torch.ones(7), layer=1):
        pass
    path = vec.save(tmp_path / "vec")
    again = load_vector(path, tiny_model)
    torch.testing.assert_close(again.vector, vec.vector)
    vec.model_id = "other-model"
    with pytest.raises(InterpError, match="made for model 'other-model'"):
        with steer(tiny_model, vec, alpha=1.0):
            pass
    bad = vec.save(tmp_path / "vec2")
    with pytest.raises(InterpError, match="was made for model"):
        load_vector(bad, tiny_model)


def test_distinct_n():
    assert distinct_n([1, 2, 3, 4]) == 1.0
    assert distinct_n([1, 2, 1, 2, 1, 2]) == pytest.approx(2 / 5)


@pytest.mark.parametrize("positions", ["generated", "prompt"])
def test_positions_are_respected_by_every_engine_path(tiny_model, positions):
    """Steering only generated (or only prompt) tokens gives the same text with the KV
    cache, without it, and under decode-verify-rollback."""
    vec = train_vector(tiny_model, PAIRS, 0)
    kw = {"max_new_tokens": 8, "batch_size": 4}
    base = generate(tiny_model, PROMPTS, **kw)
    outs = []
    for extra in ({}, {"use_cache": False}, {"deterministic": True, "verify_every": 3}):
        with steer(tiny_model, vec, alpha=60.0, positions=positions):
            outs.append(generate(tiny_model, PROMPTS, **kw, **extra))
    assert outs[0].texts == outs[1].texts == outs[2].texts
    assert outs[0].texts != base.texts
    if positions == "generated":  # the first new token comes from the unsteered prompt
        assert [g.token_ids[0] for g in outs[0].generations] == \
            [g.token_ids[0] for g in base.generations]


def test_unknown_positions(tiny_model):
    vec = train_vector(tiny_model, PAIRS, 0)
    with pytest.raises(InterpError, match="unknown positions"), \
            steer(tiny_model, vec, alpha=1.0, positions="middle"):
        pass


def test_run_sweep_takes_a_config_and_returns_a_typed_result(tiny_model):
    """The config call and the keyword call give the same result; α = 0 is added."""
    import json

    from interp.steering.sweep import SweepConfig, SweepResult, run_sweep

    cfg = SweepConfig(layers=[1], alphas=[5.0], max_new_tokens=3, batch_size=8)
    res = run_sweep(tiny_model, PROMPTS[:2], cfg, pairs=PAIRS, progress=False)
    assert isinstance(res, SweepResult) and cfg.alphas == [5.0]
    assert res.alphas == [0.0, 5.0] and res.config.alphas == [0.0, 5.0]
    assert res.config.vector_source == "inline" and res.n_prompts == 2
    assert res.side_kl[0][0] == 0.0 and len(res.texts) == 4
    again = run_sweep(tiny_model, PROMPTS[:2], pairs=PAIRS, progress=False, layers=[1],
                      alphas=[5.0], max_new_tokens=3, batch_size=8)
    # each result carries its own manifest (with its own timestamp); the rest is equal
    assert again.manifest and res.manifest
    assert again.manifest["config"] == res.manifest["config"] == res.config.to_dict()
    again.manifest = res.manifest
    assert json.dumps(again.to_dict()) == json.dumps(res.to_dict())
    assert json.dumps(SweepResult.from_dict(res.to_dict()).to_dict()) == json.dumps(res.to_dict())
    frame = res.to_frame()
    assert list(frame.alpha) == [0.0, 5.0] and list(frame.layer) == [1, 1]
    assert len(res.texts_frame()) == 4
    with pytest.raises(InterpError, match="layers"):
        run_sweep(tiny_model, PROMPTS, pairs=PAIRS)
    with pytest.raises(InterpError, match="not both"):
        run_sweep(tiny_model, PROMPTS, cfg)


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"alphas": [1.0, float("nan")]}, "alphas items must be a finite number"),
        ({"max_new_tokens": 0}, "max_new_tokens must be ≥ 1"),
        ({"temperature": -0.5}, "temperature must be ≥ 0"),
        ({"seeds": []}, "seeds must not be empty"),
        ({"batch_size": 0}, "batch_size must be ≥ 1"),
        ({"method": "ica"}, "unknown method 'ica'"),
        ({"positions": "middle"}, "unknown positions 'middle'"),
        ({"collapse_distinct2": 1.5}, "collapse_distinct2 must be in"),
        ({"layers": [-1]}, "layers items must be ≥ 0"),
    ],
)
def test_sweep_config_checks_every_setting(settings, message):
    """A Python caller gets the checks the CLI makes (before any model work)."""
    from interp.schema import ConfigError
    from interp.steering.sweep import SweepConfig

    with pytest.raises(ConfigError, match=message):
        SweepConfig(**{"layers": [1], **settings})
    cfg = SweepConfig(layers=(1, 2), alphas=(0, 4), seeds=(0,))
    assert cfg.layers == [1, 2] and cfg.alphas == [0.0, 4.0] and cfg.seeds == [0]
    assert "seed" not in cfg.to_dict()  # provenance: the manifest has it


def test_run_sweep_config_with_overrides(tiny_model):
    """Keywords next to a config override it (a copy; the config is unchanged)."""
    from interp.steering.sweep import SweepConfig, run_sweep

    cfg = SweepConfig(layers=[1], alphas=[5.0], max_new_tokens=3, batch_size=8)
    res = run_sweep(tiny_model, PROMPTS[:1], cfg, pairs=PAIRS, progress=False,
                    max_new_tokens=2, seed=7)
    assert res.config.max_new_tokens == 2 and cfg.max_new_tokens == 3
    assert res.manifest is not None and res.manifest["seed"] == 7
    head = res.headline()
    assert head.columns == ["layer", "α=0", "α=5"] and head.table[0][0] == 1
    assert "steering sweep" in head.text(160) and head.verdict
    with pytest.raises(InterpError, match="no setting"):
        run_sweep(tiny_model, PROMPTS[:1], cfg, pairs=PAIRS, alpha=2.0)


def test_sweep_prompts(tmp_path):
    from interp.steering.sweep import sweep_prompts

    shipped = sweep_prompts()
    assert len(shipped) > 3 and sweep_prompts(n=3) == shipped[:3]
    txt = tmp_path / "p.txt"
    txt.write_text("one\ntwo\nthree\n")
    assert sweep_prompts(txt, 2) == ["one", "two"]
    jl = tmp_path / "p.jsonl"
    jl.write_text('{"prompt": "a"}\n{"prompt": "b"}\n')
    assert sweep_prompts(str(jl)) == ["a", "b"]


@pytest.mark.parametrize("positions", ["all", "generated", "prompt"])
def test_steering_hook_adds_each_rows_alpha_times_v(positions):
    """The hook's gathered, broadcast add equals adding α_row·v to each row one by one,
    bit for bit, on the positions asked for."""
    from interp.steering.vectors import steering_hook

    g = torch.Generator().manual_seed(0)
    v = torch.randn(8, generator=g)
    alpha = torch.tensor([0.0, 1.5, -3.0, 7.25, 2.0])
    rows = torch.tensor([3, 1, 1, 0])  # request index of each batch row (a repeat too)
    gen = torch.tensor([[False, False, True]] * 2 + [[False, True, True]] * 2)
    h = torch.randn(4, 3, 8, generator=g)
    out = steering_hook(v, alpha, positions, lambda: rows, lambda: gen)(h, None)
    for b in range(4):
        for s in range(3):
            on = positions == "all" or (gen[b, s] == (positions == "generated"))
            expected = h[b, s] + float(alpha[rows[b]]) * v if on else h[b, s]
            assert torch.equal(out[b, s], expected), (b, s)
    scalar = steering_hook(v, torch.tensor(2.0))(h, None)
    assert torch.equal(scalar, h + 2.0 * v)
    with pytest.raises(InterpError, match="per-request"):
        steering_hook(v, alpha)(h, None)  # no request indices: not inside generate
    with pytest.raises(InterpError, match="per-request"):
        steering_hook(v, alpha, rows=lambda: rows[:2])(h, None)


def test_run_sweep_times_its_stages(tiny_model):
    from interp.steering.sweep import METRIC_STAGES, SWEEP_STAGES, run_sweep

    res = run_sweep(tiny_model, PROMPTS[:2], pairs=PAIRS, progress=False, layers=[0, 1],
                    alphas=[5.0], max_new_tokens=4, batch_size=8)
    st = res.stats
    assert st.rows == len(res.texts) == 2 * 2 * 2
    rows = [p for p in PROMPTS[:2] for _ in (0.0, 5.0)]
    tokens, texts = 0, []
    for layer in (0, 1):  # the same generation by hand: same tokens counted
        with steer(tiny_model, train_vector(tiny_model, PAIRS, layer), alpha=[0.0, 5.0] * 2):
            gen = generate(tiny_model, rows, max_new_tokens=4, batch_size=8)
        tokens += gen.stats.new_tokens
        texts += gen.texts
    assert [t.text for t in res.texts] == texts and st.new_tokens == tokens > 0
    assert set(st.seconds) == set(SWEEP_STAGES) and all(st.seconds[k] > 0 for k in SWEEP_STAGES)
    assert st.metric_seconds == pytest.approx(sum(st.seconds[k] for k in METRIC_STAGES))
    assert sum(st.seconds.values()) <= st.total
    assert st.tokens_per_second == pytest.approx(st.new_tokens / st.seconds["generate"])
    assert "stats" not in res.to_dict()


def test_side_effect_kl_shares_passes_and_matches_one_pass_per_alpha(tiny_model, monkeypatch):
    """Grouped α (per-row coefficients) give the KL of one steered pass per α, up to
    float rounding; α = 0 is its own pass and exactly 0."""
    from interp.lenses.logit import kl_divergence
    from interp.steering.sweep import side_effect_kl

    vec = train_vector(tiny_model, PAIRS, 1)
    ids, mask = tiny_model.tokenize(PROMPTS)
    with torch.no_grad():
        clean = torch.log_softmax(tiny_model.logits(ids, mask)[:, -1].float(), -1)
    alphas = [0.0, 5.0, -20.0, 40.0]
    expected = []
    for a in alphas:
        with steer(tiny_model, vec, alpha=a), torch.no_grad():
            lp = torch.log_softmax(tiny_model.logits(ids, mask)[:, -1].float(), -1)
        expected.append(kl_divergence(clean, lp))
    passes = []
    real_logits = tiny_model.logits
    monkeypatch.setattr(tiny_model, "logits",
                        lambda i, m=None: passes.append(i.shape[0]) or real_logits(i, m))
    got = side_effect_kl(tiny_model, vec, 1, alphas, ids, mask, clean, max_rows=8)
    assert passes == [4, 8, 4]  # α = 0 alone, then two α per pass of ≤ 8 rows
    assert got[0] == [0.0] * len(PROMPTS)
    for kl, exp in zip(got, expected, strict=True):
        torch.testing.assert_close(torch.tensor(kl), exp, rtol=1e-4, atol=1e-6)
    assert min(got[3]) > 0


# ------------------------------------------------------------------ bad inputs


def _pairs(n: int = 4) -> str:
    return "\n".join(json.dumps({"positive": f"I love it {i}", "negative": f"I hate it {i}"})
                     for i in range(n))


def _foreign_vector(ctx: Ctx) -> str:
    import torch

    from interp.runs.artifacts import save_artifact

    path = ctx.tmp / "foreign_vec"
    save_artifact(path, {"vector": torch.ones(32)}, kind="steering_vector",
                  config={"layer": 1}, model_id=ctx.other_d_model, d_model=32, manifest={})
    return str(path)


#: This tool's bad-input cases. tests/unit/interp/test_bad_inputs.py runs every unit-test
#: module's ``BAD_INPUTS`` as one matrix (tests/support/bad_inputs.py collects them).
BAD_INPUTS: list[Case] = [
    Case("steer-train-missing-pairs", lambda c: ["steer", "train", "--pairs",
                                                 str(c.tmp / "no.jsonl"), "--layer", "1", *M(c),
                                                 "--out", c.out], "no such file",
         out_is_artifact=True),
    Case("steer-train-malformed-pairs", lambda c: ["steer", "train", "--pairs", c.file(
        "p.jsonl", _pairs() + "\n{oops\n"), "--layer", "1", *M(c), "--out", c.out], "line 5",
        out_is_artifact=True),
    Case("steer-train-empty-pairs", lambda c: ["steer", "train", "--pairs",
                                               c.file("p.jsonl", ""), "--layer", "1", *M(c),
                                               "--out", c.out], "empty", out_is_artifact=True),
    Case("steer-train-layer-out-of-range", lambda c: ["steer", "train", "--pairs",
                                                      c.file("p.jsonl", _pairs()), "--layer",
                                                      "5", *M(c), "--out", c.out],
         "out of range", out_is_artifact=True),
    Case("steer-train-unwritable-out", lambda c: ["steer", "train", "--pairs",
                                                  c.file("p.jsonl", _pairs()), "--layer", "1",
                                                  *M(c), "--out", _under_file(c)],
         "not a folder", out_is_artifact=True),
    Case("steer-train-out-is-a-file", lambda c: ["steer", "train", "--pairs",
                                                 c.file("p.jsonl", _pairs()), "--layer", "1",
                                                 *M(c), "--out", c.file("vector", "keep me")],
         "is a file", out_is_artifact=True),
    Case("steer-generate-truncated-vector", lambda c: [
        "steer", "generate", "hi", "--vector", _truncated_artifact(c, "steering_vector"),
        *M(c)], "checksum mismatch"),
    Case("steer-generate-vector-other-d-model", lambda c: [
        "steer", "generate", "hi", "--vector", _foreign_vector(c), *M(c)], "made for"),
    Case("steer-generate-nan-alpha", lambda c: [
        "steer", "generate", "hi", "--vector", _foreign_vector(c), "--alpha", "nan", *M(c)],
        "alpha"),
    Case("steer-generate-missing-vector", lambda c: [
        "steer", "generate", "hi", "--vector", str(c.tmp / "none"), *M(c)], "none"),
    Case("steer-sweep-nan-alpha", lambda c: [
        "steer", "sweep", "--pairs", c.file("p.jsonl", _pairs()), "--alphas=0,nan", *M(c),
        "--layers", "1", "--out", c.out], "alphas"),
    Case("steer-sweep-layer-out-of-range", lambda c: [
        "steer", "sweep", "--pairs", c.file("p.jsonl", _pairs()), "--layers", "1,8", *M(c),
        "--out", c.out], "out of range"),
    Case("steer-sweep-negative-temperature", lambda c: [
        "steer", "sweep", "--pairs", c.file("p.jsonl", _pairs()), "--layers", "1",
        "--temperature", "-0.5", *M(c), "--out", c.out], "temperature"),
    Case("steer-train-feature-out-of-range", lambda c: [
        "steer", "train", "--sae", _tiny_sae(c), "--feature", "16", "--text", _text(c), *M(c),
        "--out", c.out], "--feature 16 out of range: the SAE has 16 features",
        out_is_artifact=True),
    Case("steer-train-sae-and-pairs", lambda c: [
        "steer", "train", "--sae", _tiny_sae(c), "--feature", "1", "--pairs",
        c.file("p.jsonl", _pairs()), *M(c), "--out", c.out], "not both", out_is_artifact=True),
    Case("steer-train-sae-without-feature", lambda c: [
        "steer", "train", "--sae", _tiny_sae(c), *M(c), "--out", c.out],
        "--sae and --feature go together", out_is_artifact=True),
    # found by the fuzzing (test_cli_fuzz.py)
    Case("steer-generate-meta-device", lambda c: [
        "steer", "generate", "hi", "--vector", _foreign_vector(c), *M(c), "--device", "meta"],
        "device 'meta' cannot run a model"),
    Case("steer-train-over-long-out", lambda c: [
        "steer", "train", "--pairs", c.file("p.jsonl", _pairs()), "--layer", "1", *M(c),
        "--out", str(c.tmp / ("n" * 300))], "is too long", out_is_artifact=True),
    # requests beyond the text: refused before the model runs
    Case("steer-train-tokens-beyond-text", lambda c: [
        "steer", "train", "--sae", _tiny_sae(c), "--feature", "1", "--text", _text(c),
        "--tokens", "5000", *M(c), "--out", c.out],
        "a feature's steering scale asks for tokens=5,000", out_is_artifact=True),
]
