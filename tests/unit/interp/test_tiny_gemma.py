"""The general (non-Llama) paths on a tiny random Gemma-3: fast unit tests.

Gemma's final norm scales by ``1 + w`` (Llama's by ``γ``), its blocks put a norm after
attention and after the MLP, and its embeddings are scaled by √d_model. The direct
read-out (:class:`interp.models.unembedding.Unembed`) must handle the first, DLA must
freeze the second's scale (exact at the clean run's scales), and the verified-models
checks must pass on it all.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

TEXT = "The capital of France is Paris"


@pytest.fixture(scope="module")
def tiny_gemma_dir(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from transformers import AutoTokenizer, Gemma3ForCausalLM, Gemma3TextConfig

    out = tmp_path_factory.mktemp("tiny-gemma") / "gemma"
    out.mkdir()
    for f in tiny_model_dir.iterdir():  # the tiny BPE tokenizer, reused
        if f.name.startswith("tokenizer") or f.name.endswith(".jinja"):
            shutil.copy(f, out / f.name)
    tok = AutoTokenizer.from_pretrained(str(out))
    torch.manual_seed(0)
    cfg = Gemma3TextConfig(
        vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=3,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=256,
        sliding_window=8, layer_types=["sliding_attention", "sliding_attention",
                                       "full_attention"],
        bos_token_id=1, eos_token_id=2, pad_token_id=2, tie_word_embeddings=True,
    )
    hf = Gemma3ForCausalLM(cfg)
    with torch.no_grad():
        for name, p in hf.named_parameters():
            if "norm" in name:
                p.copy_(0.3 * torch.randn_like(p))  # Gemma's gain is 1 + w: w must matter
    hf.save_pretrained(str(out))
    return out


@pytest.fixture(scope="module")
def tiny_gemma(tiny_gemma_dir: Path):
    import interp

    return interp.load(str(tiny_gemma_dir))


def test_unembed_reads_gemmas_one_plus_w_gain(tiny_gemma):
    from interp.models.unembedding import Unembed, final_rms_norm

    norm = final_rms_norm(tiny_gemma)
    assert norm is not None
    inner = tiny_gemma.bridge.ln_final.original_component
    assert torch.allclose(norm.gain, 1.0 + inner.weight.float(), atol=1e-6)
    u = Unembed(tiny_gemma)
    assert u.fast, "Gemma's final RMSNorm should take the direct path"
    x = torch.randn(5, tiny_gemma.d_model) * 3
    assert torch.allclose(u(x), tiny_gemma.unembed(x).float(), atol=1e-4)


def test_layernorm_is_not_read_as_an_rmsnorm():
    """A final norm that is not an RMSNorm gets no gain (never a wrong one): a LayerNorm
    with a bias fails the form check, one without fails the reproduction check."""
    from types import SimpleNamespace

    from interp.models.unembedding import final_rms_norm

    for ln in (torch.nn.LayerNorm(16), torch.nn.LayerNorm(16, elementwise_affine=False),
               torch.nn.LayerNorm(16, bias=False)):
        fake = SimpleNamespace(bridge=SimpleNamespace(ln_final=ln), d_model=16,
                               device=torch.device("cpu"), dtype=torch.float32)
        assert final_rms_norm(fake) is None, ln  # type: ignore[arg-type]
    rms = torch.nn.RMSNorm(16, eps=1e-6)
    with torch.no_grad():
        rms.weight.copy_(torch.linspace(0.5, 2.0, 16))
    fake = SimpleNamespace(bridge=SimpleNamespace(ln_final=rms), d_model=16,
                           device=torch.device("cpu"), dtype=torch.float32)
    norm = final_rms_norm(fake)  # type: ignore[arg-type]
    assert norm is not None and torch.allclose(norm.gain, rms.weight, atol=1e-5)


def test_verify_passes_on_tiny_gemma(tiny_gemma):
    from interp.verify import VerifyConfig, verify_model

    result = verify_model(tiny_gemma, VerifyConfig(prompts=(TEXT, "Water boils at 100"),
                                                   max_new_tokens=3))
    assert result.passed and all(c.passed for c in result.checks), result.to_dict()["checks"]
    assert result.architecture == "Gemma3ForCausalLM"


def test_dla_freezes_the_post_attention_norm_and_patch_goes_on_without_dla(
        tiny_gemma, tmp_path, monkeypatch):
    """Gemma's attention output is a norm of the heads' sum: with that norm's scale frozen
    at the clean run's, as the final norm's, each head's term is exact and the terms sum to
    the logit difference. Where DLA cannot be defined (here: a final norm it cannot read),
    patching goes on without it and says why."""
    import json

    import interp
    from interp.circuits import dla
    from interp.circuits.tasks import load_task, tokenize_task

    pairs = [{"clean": "The capital of France is", "corrupted": "The capital of Italy is",
              "answer": " Paris", "wrong": " Rome"}] * 3
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(p) for p in pairs))
    res = dla.direct_logit_attribution(tiny_gemma, tokenize_task(tiny_gemma, load_task(str(path))))
    assert res.max_sum_error < 1e-4 and res.heads.abs().max() > 1e-3
    assert "norm after each attention layer" in res.convention
    monkeypatch.setattr(dla, "final_norm", lambda model: None)
    res = interp.run_patch(tiny_gemma, interp.PatchConfig(task=str(path), family="attn",
                                                          min_gap=0.0))
    assert res.dla is None and res.dla_skipped and "final norm" in res.dla_skipped
    assert res.to_dict()["dla_skipped"] == res.dla_skipped
