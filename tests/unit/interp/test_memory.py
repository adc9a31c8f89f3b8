"""Resource limits: requests that would exhaust memory are refused before work starts.

The available-memory figure is made small with ``INTERP_MAX_MEMORY_GB`` so that the tiny
model's requests cross it; each refusal must come before the first forward pass (or the
first weight) and quote the estimate, which must equal the formula's.
"""

from __future__ import annotations

import re

import pytest

from interp.errors import InterpError
from interp.runs import memory
from interp.runs.memory import logits_bytes, sae_training_bytes, size_text
from tests.support.text_fixtures import paragraphs

KIB = 2**10


def _budget(monkeypatch: pytest.MonkeyPatch, n_bytes: float) -> None:
    monkeypatch.setenv(memory.ENV, repr(n_bytes / 2**30))


def _quoted(message: str) -> tuple[str, str]:
    """The two figures of ``… would need about X; Y available: …``."""
    found = re.search(r"would need about ([\d.]+ [KMGT]iB); ([\d.]+ [KMGT]iB) available", message)
    assert found, message
    return found.group(1), found.group(2)


def test_available_memory(monkeypatch):
    monkeypatch.delenv(memory.ENV, raising=False)
    with open("/proc/meminfo") as fh:
        total = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("MemTotal"))
    assert 0 < memory.available_bytes() <= total
    monkeypatch.setenv(memory.ENV, "1.5")
    assert memory.available_bytes() == int(1.5 * 2**30)
    for bad in ("lots", "nan", "-1", "0"):
        monkeypatch.setenv(memory.ENV, bad)
        with pytest.raises(InterpError, match=memory.ENV):
            memory.available_bytes()


def test_require_message(monkeypatch):
    _budget(monkeypatch, 23.1 * 2**30)
    memory.require(23 * 2**30, "x", "y")  # fits: nothing happens
    with pytest.raises(InterpError) as info:
        memory.require(41.2 * 2**30, "training a thing", "lower batch_size or seq_len")
    assert str(info.value) == ("training a thing would need about 41.2 GiB; 23.1 GiB "
                               "available: lower batch_size or seq_len")
    assert size_text(310 * 2**20) == "310.0 MiB" and size_text(12 * KIB) == "12.0 KiB"


def test_generate_refused_before_any_forward(tiny_model, monkeypatch):
    import interp
    from interp.generation import engine

    calls: list[int] = []
    monkeypatch.setattr(engine._Engine, "run_batch", lambda *a, **k: calls.append(1))
    prompt = "hello there"
    n = len(tiny_model.encode(tiny_model.format_prompt(prompt, False)))
    want = (logits_bytes(1, n, tiny_model.d_vocab)
            + 2 * tiny_model.n_layers * (n + 8) * tiny_model.d_model * 4)
    _budget(monkeypatch, want - 1)
    with pytest.raises(InterpError, match="lower batch_size or max_new_tokens") as info:
        interp.generate(tiny_model, [prompt], max_new_tokens=8, progress=False)
    assert _quoted(str(info.value)) == (size_text(want), size_text(want - 1))
    assert not calls
    _budget(monkeypatch, want)  # exactly enough: it runs
    interp.generate(tiny_model, [prompt], max_new_tokens=8, progress=False)
    assert calls == [1]


def test_generate_deterministic_counts_every_position(tiny_model, monkeypatch):
    import interp

    n = len(tiny_model.encode("hello there"))
    want = (logits_bytes(16, n + 8, tiny_model.d_vocab)  # verify_batch rows, all positions
            + 2 * tiny_model.n_layers * 16 * (n + 8) * tiny_model.d_model * 4)
    _budget(monkeypatch, want - 1)
    with pytest.raises(InterpError) as info:
        interp.generate(tiny_model, ["hello there"], max_new_tokens=8, deterministic=True,
                        progress=False)
    assert _quoted(str(info.value))[0] == size_text(want)


def test_lens_refused_before_capture(tiny_model, monkeypatch):
    from interp.lenses import readout

    monkeypatch.setattr(readout, "capture", lambda *a, **k: pytest.fail("captured"))
    prompt = "the quick brown fox " * 8
    n = len(tiny_model.encode(prompt))
    _budget(monkeypatch, logits_bytes(1, n, tiny_model.d_vocab, copies=4) - 1)
    with pytest.raises(InterpError, match=f"reading {n} positions") as info:
        readout.run_lens(tiny_model, prompt)
    assert _quoted(str(info.value))[0] == size_text(logits_bytes(1, n, tiny_model.d_vocab, 4))


def test_lens_eval_refused_before_packing(tiny_model, monkeypatch):
    from interp.lenses import evaluation
    from interp.lenses.logit import LogitLens

    monkeypatch.setattr(evaluation, "pack_windows", lambda *a, **k: pytest.fail("packed"))
    want = logits_bytes(4, 16, tiny_model.d_vocab, copies=6)
    _budget(monkeypatch, want - 1)
    with pytest.raises(InterpError, match="lower batch_size or seq_len") as info:
        evaluation.evaluate_lenses(tiny_model, {"logit": LogitLens(tiny_model)},
                                   paragraphs(20), seq_len=16, tokens=16 * 8, batch_size=4,
                                   progress=False)
    assert _quoted(str(info.value))[0] == size_text(want)


def test_sae_training_refused_before_any_weight(tiny_model, tmp_path, monkeypatch):
    from saes.train import SAETrainConfig, train_sae, train_saes

    cfg = SAETrainConfig(layer=1, d_sae=256, tokens=64 * 4, batch_size=64, seq_len=16,
                         windows_per_chunk=8)
    one = sae_training_bytes(256, tiny_model.d_model, batch=64, chunk_tokens=8 * 16)
    assert one == 2 * 256 * 64 * 4 * 4 + 64 * 256 * 4 * 3 + 8 * 16 * 64 * 4 * 2
    _budget(monkeypatch, one - 1)
    with pytest.raises(InterpError, match="lower d_sae, batch_size or windows_per_chunk") as i:
        train_sae(tiny_model, paragraphs(40), tmp_path / "run", cfg, progress=False)
    assert _quoted(str(i.value))[0] == size_text(one)
    _budget(monkeypatch, 3 * one - 1)  # three layers: three SAEs and three chunks
    with pytest.raises(InterpError, match="training 3 SAEs") as i:
        train_saes(tiny_model, paragraphs(40), tmp_path / "runs", [0, 1, 2], cfg,
                   progress=False)
    assert _quoted(str(i.value))[0] == size_text(3 * one)
    assert not (tmp_path / "run").exists() and not (tmp_path / "runs").exists()


def test_defaults_fit_here(monkeypatch):
    """The default model's default requests are not refused on a machine like this one."""
    monkeypatch.setenv(memory.ENV, "8")  # well under this 24 GiB machine's RAM
    d_model, vocab = 576, 49_152
    memory.require(sae_training_bytes(4608, d_model, batch=4096, chunk_tokens=1024 * 128),
                   "SAE defaults", "")
    memory.require(logits_bytes(16, 64 + 64, vocab), "generation defaults", "")
    memory.require(logits_bytes(4, 128, 262_144, copies=6), "Gemma lens eval defaults", "")


def test_scoring_refused_before_any_forward(tiny_model, monkeypatch):
    from evals.scoring import score_continuations

    monkeypatch.setattr(tiny_model.bridge, "forward", lambda *a, **k: pytest.fail("ran"))
    prompts = ["The capital of France is", "Water boils at"]
    conts = [[" Paris", " Rome"], [" 100 degrees", " 0 degrees"]]
    p = max(len(tiny_model.encode(x)) for x in prompts)
    c = max(len(ids) for row in conts for ids in (tiny_model.encode(x) for x in row))
    m = tiny_model
    want = (max(logits_bytes(2, p, m.d_vocab), logits_bytes(4, c, m.d_vocab))
            + 2 * m.n_layers * 4 * (p + c) * m.d_model * 4)
    _budget(monkeypatch, want - 1)
    with pytest.raises(InterpError, match="lower batch_size or shorten the prompts") as info:
        score_continuations(m, prompts, conts, batch_size=8, progress=False)
    assert _quoted(str(info.value))[0] == size_text(want)


def test_tuned_lens_training_refused_before_any_work(tiny_model, tmp_path, monkeypatch):
    from interp.lenses import training

    cfg = training.TunedLensTrainConfig(tokens=4 * 16 * 3, batch_size=4, seq_len=16,
                                        positions_per_window=8)
    want = (logits_bytes(4, 16, tiny_model.d_vocab, copies=1)
            + logits_bytes(4, 8, tiny_model.d_vocab, copies=4))
    _budget(monkeypatch, want - 1)
    with pytest.raises(InterpError, match="lower batch_size, seq_len or positions_per") as i:
        training.train_tuned_lens(tiny_model, paragraphs(20), tmp_path / "run", cfg,
                                  progress=False)
    assert _quoted(str(i.value))[0] == size_text(want)
    assert not (tmp_path / "run").exists()
