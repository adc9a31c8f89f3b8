"""Every tool on the second embedded model, Gemma-3-270M (issue 20).

Gemma differs from SmolLM2 where interp could go wrong: a BOS token it needs, a 262k
vocabulary, a ``(1 + w)`` RMSNorm gain, embeddings scaled by √d_model, norms after
attention and the MLP, sliding-window attention, and no chat template (a base model).
Each test checks a real effect on the real model; together they stay within the
5-minute budget of one issue's slow tests (measured: see the closing note of issue 20).
"""

from __future__ import annotations

import pytest
import torch

PARIS = "The Eiffel Tower is in the city of"


def test_gemma_facts_and_bos(gemma):
    """The facts that make Gemma different, and the BOS every path must keep."""
    assert (gemma.n_layers, gemma.d_model, gemma.d_vocab) == (18, 640, 262144)
    assert gemma.special_prefix == [2] and gemma.decode_token(2) == "<bos>"
    assert gemma.bridge.cfg.default_prepend_bos is True
    assert gemma.encode(PARIS) == list(gemma.tokenizer(PARIS)["input_ids"])
    assert not getattr(gemma.tokenizer, "chat_template", None)


def test_gemma_verifies(gemma):
    """lens = logits (through Gemma's 1 + w gain), hooked = transformers, capture batch
    invariance, BOS on every path, batched generation = one prompt at a time."""
    from interp.models.unembedding import Unembed
    from interp.verify import VerifyConfig, verify_model

    assert Unembed(gemma).fast, "Gemma's final norm should take the direct RMSNorm path"
    cfg = VerifyConfig(prompts=(PARIS, "Water boils at", "def add(a, b):\n    return"),
                       max_new_tokens=4)
    result = verify_model(gemma, cfg)
    assert result.passed, result.to_dict()["checks"]
    assert all(c.passed for c in result.checks), [c for c in result.checks if not c.passed]
    assert result.check("lens_logits").value < 1e-3
    assert result.special_prefix == ["<bos>"]


def test_gemma_capture_batch_of_16_equals_one_at_a_time(gemma):
    """16 prompts of different lengths, left-padded in one batch, against batch size 1."""
    import interp

    prompts = [f"{PARIS}" if i % 4 == 0 else f"Sentence {i}: " + "word " * (i % 7 + 1)
               for i in range(16)]
    together = interp.capture(gemma, prompts, layers="0,8,17", batch_size=16, progress=False)
    alone = interp.capture(gemma, prompts, layers="0,8,17", batch_size=1, progress=False)
    for layer in (0, 8, 17):
        a, b = together[layer], alone[layer]
        rel = float((a - b).abs().max() / b.abs().max())
        assert rel < 1e-4, (layer, rel)
    ids = together.input_ids[0][together.mask[0]].tolist()
    assert ids == gemma.encode(prompts[0]) and ids[0] == 2


def test_gemma_lens_and_generation_say_paris(gemma):
    """The failure issue 20 reported: without its BOS, Gemma's lens showed " the" and
    image tokens; with it, late layers and the model say " Paris"."""
    import interp

    r = interp.run_lens(gemma, PARIS).logit
    assert r.token_ids[0] == 2
    top = r.top1()
    assert top[gemma.n_layers - 1][-1] == " Paris"
    assert sum(top[layer][-1] == " Paris" for layer in range(12, 18)) >= 4
    g = interp.generate(gemma, [PARIS, "Water boils at"], max_new_tokens=3, deterministic=True)
    assert g.generations[0].text.startswith(" Paris")


def test_gemma_probe_beats_its_control(gemma):
    """A linear probe at a middle layer reads the capitals label far above chance."""
    from interp.probing.probes import load_probe_dataset, run_probe

    res = run_probe(gemma, load_probe_dataset(), layers=[9], seeds=2, random_weights=False,
                    progress=False)
    d = res.to_dict()
    acc, shuffled = d["test_accuracy_mean"][0], d["shuffled_accuracy_mean"][0]
    print(acc, shuffled, d["majority_rate_mean"][0])
    assert acc > 0.85 and acc - shuffled > 0.25


def test_gemma_steering_moves_sentiment(gemma):
    """A layer-6 sentiment vector raises the good − bad log-odds, and its negative lowers them."""
    from interp.runs.paths import shipped_dataset
    from interp.steering.vectors import load_pairs, steer, train_vector

    vec = train_vector(gemma, load_pairs(shipped_dataset("steering/sentiment.jsonl")), 6)
    good = gemma.encode_continuation(" good")[0]
    bad = gemma.encode_continuation(" bad")[0]
    ids, mask = gemma.tokenize(["I spent the afternoon at the library, and honestly it was"])

    def gap() -> float:
        lp = torch.log_softmax(gemma.logits(ids, mask)[0, -1].float(), -1)
        return float(lp[good] - lp[bad])

    base = gap()
    with steer(gemma, vec, alpha=4.0):
        up = gap()
    with steer(gemma, vec, alpha=-4.0):
        down = gap()
    print(f"good-bad gap: base {base:.2f}, +4 {up:.2f}, -4 {down:.2f}")
    assert up > base + 1.0 and down < base - 1.0


def test_gemma_tuned_lens_and_sae_train(gemma, real_corpus, tmp_path):
    """Short runs of both trainers through Gemma's 262k unembedding: the tuned lens's
    least-squares start beats the logit lens at the early layers, the SAE's reconstruction
    error falls."""
    from interp.data.corpus import load_texts
    from interp.lenses.evaluation import LensEvalConfig, evaluate_lenses
    from interp.lenses.logit import LogitLens
    from interp.lenses.training import TunedLensTrainConfig, train_tuned_lens
    from interp.lenses.tuned import load_tuned_lens
    from saes.train import SAETrainConfig, train_sae

    torch.manual_seed(0)  # the same run whatever the earlier tests drew
    texts = load_texts("train")
    cfg = TunedLensTrainConfig(tokens=2 * 64 * 2, seq_len=64, batch_size=2, init_tokens=2048,
                      checkpoint_every=100)
    res = train_tuned_lens(gemma, texts, tmp_path / "lens", cfg, progress=False)
    assert res.complete
    lens = load_tuned_lens(tmp_path / "lens", gemma)
    ev = evaluate_lenses(gemma, {"logit": LogitLens(gemma), "tuned": lens},
                         load_texts("heldout"), LensEvalConfig(tokens=256)).to_dict()
    print(ev["kl_logit_lens"][:4], ev["kl_tuned_lens"][:4])
    assert all(t < lo for t, lo in zip(ev["kl_tuned_lens"][:9], ev["kl_logit_lens"][:9],
                                       strict=True))

    # one chunk of 264 windows (16,632 tokens) covers the run's 16,384: the default chunk of
    # 1,024 windows ran Gemma over four times the tokens the run reads (45 s here)
    scfg = SAETrainConfig(layer=6, d_sae=1280, tokens=4096 * 4, batch_size=4096, seq_len=64,
                          windows_per_chunk=264, lr=2e-3, checkpoint_every=100)
    torch.manual_seed(0)
    sres = train_sae(gemma, texts, tmp_path / "sae", scfg, progress=False)
    assert sres.complete
    # the reconstruction error (the total loss's L1 term grows with λ's warm-up)
    mse = sres.history["mse"]
    print("SAE mse by step", mse)
    assert mse[-1] < mse[0], mse


def test_gemma_sycophancy_cloze_on_a_base_model(gemma):
    """A base model: cloze mode runs on a plain transcript; chat-only modes say so."""
    from evals.sycophancy import load_questions, run_sycophancy
    from interp.errors import InterpError

    r = run_sycophancy(gemma, load_questions(limit=12), probe=False, progress=False)
    assert r.prompt_format == "plain transcript"
    neutral = r.verdicts["neutral"]
    m = r.metrics.to_dict()
    print(m["sycophancy_rate"], m["priming_flip_rate"])
    assert sum(v == 1 for v in neutral) >= 8  # it knows most of these answers
    with pytest.raises(InterpError, match="no chat template"):
        run_sycophancy(gemma, load_questions(limit=3), mode="choice", probe=False,
                       progress=False)
