"""Tiny random checkpoints of the architecture families interpretability papers use.

Each family is built offline from its ``transformers`` config (3 layers, ``d_model`` 64,
4 heads of 16, grouped KV heads where the family has them, a 400-token BPE vocabulary
shared with the tiny Llama) and saved as a Hugging Face folder ``interp.load`` reads.
Random weights make every identity of the anatomy hold, so these test the mechanics of
every tool on every family; they say nothing about what a trained model computes.

Norm gains, and biases where the family has them, are drawn away from their initial
values (1 and 0), so a tool that drops a gain or a bias gets a different answer.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

#: Shared sizes of every tiny family.
SIZES: dict[str, Any] = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 3,
                         "num_attention_heads": 4, "max_position_embeddings": 256}
#: Token ids of the tiny tokenizer (``tests/conftest.py``'s ``tiny_model_dir``).
IDS: dict[str, int] = {"bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 2}


def _llama(vocab: int) -> Any:
    from transformers import LlamaConfig

    return LlamaConfig(vocab_size=vocab, num_key_value_heads=2, head_dim=16, rope_theta=1e5,
                       tie_word_embeddings=True, **SIZES, **IDS)


def _mistral(vocab: int) -> Any:
    from transformers import MistralConfig

    return MistralConfig(vocab_size=vocab, num_key_value_heads=2, head_dim=16,
                         sliding_window=4, tie_word_embeddings=False, **SIZES, **IDS)


def _qwen2(vocab: int) -> Any:
    from transformers import Qwen2Config

    return Qwen2Config(vocab_size=vocab, num_key_value_heads=2, tie_word_embeddings=True,
                       **SIZES, **IDS)


def _qwen3(vocab: int) -> Any:
    from transformers import Qwen3Config

    return Qwen3Config(vocab_size=vocab, num_key_value_heads=2, head_dim=16,
                       tie_word_embeddings=True, **SIZES, **IDS)


def _gemma2(vocab: int) -> Any:
    from transformers import Gemma2Config

    return Gemma2Config(vocab_size=vocab, num_key_value_heads=2, head_dim=16, sliding_window=4,
                        query_pre_attn_scalar=16, attn_logit_softcapping=1.0,
                        final_logit_softcapping=0.5, **SIZES, **IDS)  # caps that bite


def _gemma3_text(vocab: int) -> Any:
    from transformers import Gemma3TextConfig

    return Gemma3TextConfig(
        vocab_size=vocab, num_key_value_heads=2, head_dim=16, sliding_window=4,
        layer_types=["sliding_attention", "sliding_attention", "full_attention"],
        **SIZES, **IDS)


def _gpt2(vocab: int) -> Any:
    from transformers import GPT2Config

    return GPT2Config(vocab_size=vocab, n_embd=64, n_layer=3, n_head=4, n_inner=128,
                      n_positions=256, **IDS)


def _gpt_neox(vocab: int) -> Any:
    from transformers import GPTNeoXConfig

    return GPTNeoXConfig(vocab_size=vocab, rotary_pct=0.25, use_parallel_residual=True,
                         tie_word_embeddings=False, **SIZES, **IDS)


def _phi3(vocab: int) -> Any:
    from transformers import Phi3Config

    return Phi3Config(vocab_size=vocab, num_key_value_heads=2, tie_word_embeddings=False,
                      **SIZES, **IDS)


def _olmo2(vocab: int) -> Any:
    from transformers import Olmo2Config

    return Olmo2Config(vocab_size=vocab, num_key_value_heads=2, tie_word_embeddings=False,
                       **SIZES, **IDS)


#: The families, by Hugging Face ``model_type``: a function of the vocabulary size that
#: gives the tiny config.
FAMILIES: dict[str, Callable[[int], Any]] = {
    "llama": _llama, "mistral": _mistral, "qwen2": _qwen2, "qwen3": _qwen3,
    "gemma2": _gemma2, "gemma3_text": _gemma3_text, "gpt2": _gpt2, "gpt_neox": _gpt_neox,
    "phi3": _phi3, "olmo2": _olmo2,
}


def build_family(family: str, out: Path, tokenizer_dir: Path, seed: int = 0) -> Path:
    """Save a tiny random ``family`` checkpoint with the tokenizer of ``tokenizer_dir`` into
    ``out`` (created), and return ``out``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    out.mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(str(out))
    config = FAMILIES[family](len(tok))
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config)
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            leaf = name.rsplit(".", 1)[-1]
            if p.ndim == 1 and leaf == "weight":  # a norm's gain
                gemma = family.startswith("gemma")  # stored as w in (1 + w)
                p.copy_((0.0 if gemma else 1.0) + 0.3 * torch.randn(p.shape, generator=g))
            elif leaf == "bias":
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
    model.save_pretrained(str(out))
    return out


__all__ = ["FAMILIES", "build_family"]
