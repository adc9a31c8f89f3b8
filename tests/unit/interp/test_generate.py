"""interp.generate: KV cache, batching, determinism under injected faults, hooks, stopping."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from interp.errors import InterpError
from interp.generation.engine import generate, select_token
from tests.support.bad_inputs import Case, M, _under_file

PROMPTS = [
    "The capital of France is",
    "Hi",
    "Numbers like 12345 are split into digits, one token per digit.",
    "Once upon a time",
    "A",
    "The quick brown fox jumps over the lazy dog and keeps running.",
    "Water boils at",
    "My favourite",
]


def prompts64() -> list[str]:
    words = ["red", "blue", "river", "stone", "quietly", "seven", "market", "winter"]
    out = []
    for i in range(64):
        n = 1 + (i * 7) % 9
        out.append(" ".join(words[(i + k) % len(words)] for k in range(n)).capitalize())
    return out


def test_cache_equals_no_cache(tiny_model):
    a = generate(tiny_model, PROMPTS, max_new_tokens=10, batch_size=4)
    b = generate(tiny_model, PROMPTS, max_new_tokens=10, batch_size=4, use_cache=False)
    assert [g.token_ids for g in a.generations] == [g.token_ids for g in b.generations]
    assert a.texts == b.texts


def test_outputs_in_prompt_order_and_lengths(tiny_model):
    res = generate(tiny_model, PROMPTS, max_new_tokens=6, batch_size=3)
    assert [g.prompt for g in res.generations] == PROMPTS
    assert all(len(g.token_ids) <= 6 for g in res.generations)
    assert res.stats.new_tokens == sum(len(g.token_ids) for g in res.generations)
    assert set(res.to_frame().columns) >= {"prompt", "text", "stop_reason"}


def test_greedy_first_token_is_the_argmax(tiny_model):
    res = generate(tiny_model, PROMPTS[:3], max_new_tokens=1, return_logprobs=True)
    for g in res.generations:
        ids, mask = tiny_model.tokenize([g.prompt])
        lp = torch.log_softmax(tiny_model.logits(ids, mask)[0, -1].float(), -1)
        assert g.token_ids[0] == int(lp.argmax())
        assert g.logprobs[0] == pytest.approx(float(lp.max()), abs=1e-4)


def test_batched_greedy_equals_unbatched_on_64_prompts(tiny_model):
    prompts = prompts64()
    one = generate(tiny_model, prompts, max_new_tokens=8, batch_size=1)
    batched = generate(tiny_model, prompts, max_new_tokens=8, batch_size=16)
    diverged = [i for i, (a, b) in enumerate(zip(one.texts, batched.texts, strict=True))
                if a != b]
    print(f"plain batch 16 vs one-by-one: {len(diverged)}/64 differ")
    assert not diverged, f"batched greedy differs on prompts {diverged}"


def test_deterministic_is_batch_invariant_under_injected_fault(tiny_model):
    """64 prompts at batch sizes 1, 7 and 32: plain batching diverges under the
    shape-dependent fault, decode-verify-rollback gives byte-identical outputs."""
    prompts = prompts64()
    kw = {"max_new_tokens": 8, "inject_batch_noise": 0.05}
    plain = {b: generate(tiny_model, prompts, batch_size=b, **kw).texts for b in (1, 7, 32)}
    diverged = sum(x != y for x, y in zip(plain[1], plain[32], strict=True))
    assert diverged > 0, "the injected fault should make plain batching diverge"
    det = {}
    for b in (1, 7, 32):
        res = generate(tiny_model, prompts, batch_size=b, deterministic=True, verify_every=4,
                       **kw)
        det[b] = res.texts
        assert res.stats.tokens_verified >= res.stats.new_tokens
    assert det[1] == det[7] == det[32]
    # and the verified output does not depend on which other prompts share the batch
    alone = generate(tiny_model, prompts[5:9], batch_size=3, deterministic=True,
                     verify_every=4, **kw).texts
    assert alone == det[1][5:9]


def test_rollbacks_are_counted(tiny_model):
    res = generate(tiny_model, prompts64()[:16], max_new_tokens=8, batch_size=16,
                   deterministic=True, verify_every=4, inject_batch_noise=0.05)
    assert res.stats.rollbacks > 0 and res.stats.regenerated_tokens >= res.stats.rollbacks


def test_sampling_is_seeded(tiny_model):
    kw = {"max_new_tokens": 8, "temperature": 1.0, "top_p": 0.9}
    a = generate(tiny_model, PROMPTS, seed=1, **kw).texts
    b = generate(tiny_model, PROMPTS, seed=1, **kw).texts
    c = generate(tiny_model, PROMPTS, seed=2, **kw).texts
    assert a == b and a != c
    greedy = generate(tiny_model, PROMPTS, max_new_tokens=8).texts
    assert a != greedy


def test_select_token():
    logits = torch.tensor([3.0, 2.0, 1.0, -5.0])
    assert select_token(logits, 0.0, 1.0, 0.7) == 0
    # top_p small: only the top token survives, whatever u
    assert {select_token(logits, 1.0, 0.1, u) for u in (0.0, 0.5, 0.999)} == {0}
    picks = {select_token(logits, 1.0, 1.0, u) for u in torch.linspace(0, 0.9999, 200).tolist()}
    assert picks == {0, 1, 2, 3}


def test_stop_strings_and_max_tokens(tiny_model):
    free = generate(tiny_model, ["Once upon a time"], max_new_tokens=12).generations[0]
    assert free.stop_reason in ("length", "eos")
    # stop at the first character the model actually produced after position 2
    target = free.text[3:5]
    if not target.strip():
        pytest.skip("tiny model produced whitespace only")
    res = generate(tiny_model, ["Once upon a time"], max_new_tokens=12, stop=[target])
    g = res.generations[0]
    assert g.stop_reason == "stop"
    assert target not in g.text and free.text.startswith(g.text)


def test_row_hooks_get_their_rows_and_change_only_them(tiny_model):
    seen: list[list[int]] = []
    d = tiny_model.d_model
    push = torch.randn(d) * 50

    def hook(t, hook, rows):
        seen.append(rows.tolist())
        bump = (rows == 1).float().view(-1, 1, 1) * push
        return t + bump.to(t.dtype)

    base = generate(tiny_model, PROMPTS[:3], max_new_tokens=6, batch_size=3).texts
    steered = generate(tiny_model, PROMPTS[:3], max_new_tokens=6, batch_size=3,
                       row_hooks=[("blocks.0.hook_resid_post", hook)]).texts
    assert steered[0] == base[0] and steered[2] == base[2]
    assert steered[1] != base[1]
    assert all(sorted(r) == [0, 1, 2] for r in seen[:1])


def test_hooks_removed_after_an_exception(tiny_model):
    ids, mask = tiny_model.tokenize(["hello"])
    before = tiny_model.logits(ids, mask)

    def boom(t, hook):
        raise RuntimeError("hook failed")

    with pytest.raises(RuntimeError, match="hook failed"):
        generate(tiny_model, ["hello"], max_new_tokens=3,
                 hooks=[("blocks.1.hook_resid_post", boom)])
    torch.testing.assert_close(tiny_model.logits(ids, mask), before)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"max_new_tokens": 0}, "max new tokens"),
        ({"temperature": -1.0}, "temperature"),
        ({"temperature": float("nan")}, "temperature"),
        ({"top_p": 0.0}, "top-p"),
        ({"batch_size": 0}, "batch size"),
        ({"inject_batch_noise": -0.1}, "inject-batch-noise"),
        ({"stop": [""]}, "stop strings"),
        ({"hooks": [("blocks.9.nope", lambda t, hook: t)]}, "unknown hook point"),
    ],
)
def test_errors(tiny_model, kwargs, message):
    with pytest.raises(InterpError, match=message):
        generate(tiny_model, ["hello"], **kwargs)


def test_config_or_keywords_one_implementation(tiny_model):
    """``generate(model, prompts, GenerationConfig(...))`` equals the keyword form; the
    config checks every setting without a model, and the result carries its manifest."""
    from interp.generation.engine import GenerationConfig
    from interp.schema import ConfigError

    cfg = GenerationConfig(max_new_tokens=4, batch_size=2, stop=["\n"])
    assert cfg.stop == ("\n",) and GenerationConfig(temperature=1).temperature == 1.0
    by_config = generate(tiny_model, PROMPTS[:3], cfg)
    by_keywords = generate(tiny_model, PROMPTS[:3], max_new_tokens=4, batch_size=2, stop=["\n"])
    assert by_config.texts == by_keywords.texts and by_config.config == by_keywords.config
    man = by_config.manifest
    assert man is not None and man["config"] == cfg.to_dict() and man["seed"] == 0
    assert list(by_config.to_dict())[-1] == "manifest"
    with pytest.raises(InterpError, match="not both"):
        generate(tiny_model, PROMPTS[:1], cfg, max_new_tokens=2)
    with pytest.raises(InterpError, match="no setting max_tokens"):
        generate(tiny_model, PROMPTS[:1], max_tokens=2)
    with pytest.raises(ConfigError, match="verify_every must be ≥ 1"):
        GenerationConfig(verify_every=0)
    with pytest.raises(ConfigError, match="chat must be bool"):
        GenerationConfig(chat="yes")  # type: ignore[arg-type]


def test_empty_prompt(tiny_model):
    with pytest.raises(InterpError, match="empty prompt"):
        generate(tiny_model, ["ok", ""])


def test_result_notebook_view_and_report():
    from interp.generation.engine import (
        Generation,
        GenerationConfig,
        GenerationResult,
        GenerationStats,
    )
    from reports.generate import generate_report

    res = GenerationResult(
        generations=[Generation(0, "<script>alert(1)</script>", " <b>hi</b>", [1, 2], "stop")],
        stats=GenerationStats(prompts=1, new_tokens=2, seconds=0.5, forward_passes=2),
        config=GenerationConfig(stop=("\n",)), model_id="tiny",
    )
    html = res._repr_html_()
    assert "&lt;script&gt;" in html and "<script>" not in html and "<b>" not in html
    assert len(res.to_frame()) == 1
    page = generate_report(res, {"model_id": "tiny"}).html
    res.manifest = {"model_id": "tiny"}
    assert page == generate_report(res).html  # the manifest the result carries
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<b>" not in page
    assert "&#39;\\n&#39;" in page  # the stop string, as Python writes it
    assert [h for h in ("Continuations", "Settings", "Engine") if f"<h2>{h}</h2>" in page] == [
        "Continuations", "Settings", "Engine"]


# ------------------------------------------------- the KV-cached fixed-shape verifier
def _verifier_batch_invariance(model, n_prompts: int, new: int, sizes: tuple[int, ...],
                               verify_every: int) -> None:
    """Under the injected fault plain batching diverges, and the verified output is the
    same token for token at every batch size in ``sizes``."""
    prompts = prompts64()[:n_prompts]
    kw = {"max_new_tokens": new, "inject_batch_noise": 0.05}
    plain1 = generate(model, prompts, batch_size=1, **kw).texts
    plain_big = generate(model, prompts, batch_size=sizes[-1], **kw).texts
    assert plain1 != plain_big, "the injected fault should make plain batching diverge"
    det = {}
    for b in sizes:
        res = generate(model, prompts, batch_size=b, deterministic=True,
                       verify_every=verify_every, **kw)
        det[b] = [g.token_ids for g in res.generations]
        assert res.stats.tokens_verified == res.stats.new_tokens == n_prompts * new
        if verify_every > 1 and b > 1:
            assert res.stats.rollbacks > 0  # the rollback path was exercised
    first = det[sizes[0]]
    assert all(d == first for d in det.values())


@pytest.mark.parametrize("verify_every", [1, 16])
def test_verifier_is_batch_invariant_under_injected_fault(tiny_model, verify_every):
    """The fast tier's check: 24 prompts × 16 new tokens at batch sizes 1, 5 and 12 (W = 1:
    the verifier decodes alone; W = 16, the default: decode-verify-rollback through the
    verifier's own KV cache)."""
    _verifier_batch_invariance(tiny_model, 24, 16, (1, 5, 12), verify_every)


@pytest.mark.slow  # 12 s each on 2 cores: the slow tier keeps issue 16's full size
@pytest.mark.parametrize("verify_every", [1, 16])
def test_verifier_is_batch_invariant_on_64_prompts_x_32_tokens(tiny_model, verify_every):
    """Issue 16's acceptance: 64 prompts × 32 new tokens at batch sizes 1, 7 and 32 under
    the injected fault give byte-identical outputs."""
    _verifier_batch_invariance(tiny_model, 64, 32, (1, 7, 32), verify_every)


@pytest.mark.parametrize("verify_every", [1, 3, 16])
@pytest.mark.parametrize("sampling", [{}, {"temperature": 1.0, "top_p": 0.9, "seed": 3}])
def test_deterministic_equals_plain_batch1_without_fault(tiny_model, verify_every, sampling):
    """Without the injected fault the verified output is plain one-by-one decoding's,
    greedy and sampled; and the fast path then proposes exactly what is accepted."""
    prompts = prompts64()[:16]
    kw = {"max_new_tokens": 20, "return_logprobs": True, **sampling}
    one = generate(tiny_model, prompts, batch_size=1, **kw)
    det = generate(tiny_model, prompts, batch_size=6, deterministic=True,
                   verify_every=verify_every, **kw)
    assert [g.token_ids for g in det.generations] == [g.token_ids for g in one.generations]
    for a, b in zip(det.generations, one.generations, strict=True):
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)
    assert det.stats.rollbacks == 0


def test_verifier_passes_have_fixed_shapes_and_publish_rows(tiny_model):
    """Hooks see the verifier's passes: verify_batch rows, a query of W tokens (or the
    prefill chunk), ``current_rows``/``current_generated`` set to match."""
    from interp.generation import engine

    seen: list[tuple[tuple[int, ...], list[int], tuple[int, ...]]] = []

    def hook(t, hook):
        gen = engine.current_generated.get()
        rows = engine.current_rows.get()
        assert gen is not None and rows is not None
        seen.append((tuple(t.shape[:2]), rows.tolist(), tuple(gen.shape)))
        return t

    prompts = [p * 3 for p in PROMPTS]  # long enough to need prefill chunks
    res = generate(tiny_model, prompts, max_new_tokens=10, batch_size=3, deterministic=True,
                   verify_every=4, verify_batch=5, hooks=[("blocks.0.hook_resid_post", hook)])
    verifier = [s for s in seen if s[0][0] == 5]  # the fast path has ≤ 3 rows
    assert len(verifier) == res.stats.verifier_passes > 0
    assert {s[0][1] for s in verifier} == {4, engine._PREFILL_CHUNK}
    assert all(s[2] == s[0] and set(s[1]) <= set(range(len(prompts))) for s in verifier)
    plain = generate(tiny_model, prompts, max_new_tokens=10, batch_size=1)
    assert res.texts == plain.texts


def test_verifier_span_pads_at_most_a_quarter():
    """A request's verifier past: 32-slot steps up to 255, then a quarter of the power of
    two under it; never shorter than needed, never more than a quarter padding beyond 32."""
    from interp.generation.engine import verifier_span

    last = 0
    for past in range(1, 5000):
        span = verifier_span(past)
        assert span >= past and span % 32 == 0 and span >= last
        assert span - past < max(32, past / 4)
        last = span
    assert {verifier_span(p) for p in range(1, 33)} == {32}
    assert {verifier_span(p) for p in range(257, 321)} == {320}  # one shape for 64 lengths
    assert {verifier_span(p) for p in range(769, 897)} == {896}


def test_prompts_of_spread_lengths_share_the_verifier_passes(tiny_model):
    """Eight prompts of 260–300 tokens (more than one 32-slot step apart) are verified in
    shared passes: about as many as the longest prompt needs alone, where one span each
    (or one per 32 slots) would need one prefill pass per group; and batch 1 and 8 still
    agree under the injected fault."""
    from interp.generation.engine import verifier_span

    ids = tiny_model.tokenizer(" ".join(prompts64()) * 3)["input_ids"]
    prompts = [tiny_model.tokenizer.decode(ids[:n]) for n in range(260, 300, 5)]
    lengths = [len(tiny_model.tokenizer(p)["input_ids"]) for p in prompts]
    pasts = [(n + 4 - 2) // 16 * 16 + 1 for n in lengths]  # 4 new tokens, W = 16
    assert len({-(-p // 32) for p in pasts}) > 1  # a fixed 32-slot step: several shapes
    assert len({verifier_span(p) for p in pasts}) == 1
    kw = {"max_new_tokens": 4, "deterministic": True, "verify_batch": 8}
    together = generate(tiny_model, prompts, batch_size=8, **kw)
    alone = generate(tiny_model, prompts[-1:], batch_size=1, **kw)
    assert together.stats.verifier_passes <= alone.stats.verifier_passes + 1
    noisy = {**kw, "inject_batch_noise": 0.05}
    one = generate(tiny_model, prompts, batch_size=1, **noisy)
    eight = generate(tiny_model, prompts, batch_size=8, **noisy)
    assert [g.token_ids for g in one.generations] == [g.token_ids for g in eight.generations]


# ------------------------------------------------------------------ bad inputs
#: This tool's bad-input cases. tests/unit/interp/test_bad_inputs.py runs every unit-test
#: module's ``BAD_INPUTS`` as one matrix (tests/support/bad_inputs.py collects them).
BAD_INPUTS: list[Case] = [
    Case("generate-nan-temperature", lambda c: ["generate", "hi", *M(c), "--temperature",
                                                "nan", "--out", c.out], "temperature"),
    Case("generate-negative-temperature", lambda c: ["generate", "hi", *M(c), "--temperature",
                                                     "-1", "--out", c.out], "temperature"),
    Case("generate-top-p-above-one", lambda c: ["generate", "hi", *M(c), "--top-p", "1.5",
                                                "--out", c.out], "top-p"),
    Case("generate-zero-new-tokens", lambda c: ["generate", "hi", *M(c), "--max-new-tokens",
                                                "0", "--out", c.out], "max new tokens"),
    Case("generate-zero-verify-every", lambda c: ["generate", "hi", *M(c), "--deterministic",
                                                  "--verify-every", "0"], "verify-every"),
    Case("generate-empty-file", lambda c: ["generate", "--file", c.file("e.txt", "\n\n"), *M(c),
                                           "--out", c.out], "empty dataset"),
    Case("generate-beyond-memory", lambda c: ["generate", "hi", *M(c), "--max-new-tokens",
                                              "1000000000", "--out", c.out],
         "would need about"),
    Case("generate-unwritable-out", lambda c: ["generate", "hi", *M(c), "--out",
                                               _under_file(c)], "cannot create output folder"),
    Case("generate-folder-without-tokenizer", lambda c: [
        "generate", "hi", "--model", c.no_tokenizer, "--out", c.out], "folder has no tokenizer"),
    # found by the fuzzing (test_cli_fuzz.py)
    Case("generate-stop-not-utf8", lambda c: [
        "generate", "hi", *M(c), "--stop", "\udcff", "--out", c.out], "is not valid UTF-8"),
    Case("generate-out-above-the-package", lambda c: [
        "generate", "hi", *M(c), "--out", str(Path(__file__).resolve().parents[4])],
        "holds interp's own source"),
]
