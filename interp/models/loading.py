"""Load a model into a TransformerLens ``TransformerBridge`` plus its tokenizer.

``load()`` accepts:

* ``None`` or ``"smollm2-135m-instruct"``: the embedded SmolLM2-135M-Instruct, and
  ``"gemma3-270m"``: the embedded Gemma-3-270M (see :mod:`interp.models.embedded`).
  Their GGUF's sha256 is checked, then it is converted once into
  ``$INTERP_CACHE/models/`` (see :mod:`interp.models.gguf_convert`); later loads read
  the cached checkpoint.
* a path to a ``.gguf`` file of any architecture transformers reads: converted and
  cached the same way;
* a local Hugging Face checkpoint folder (holding ``config.json``);
* a hub name such as ``gpt2`` (needs network access; the code path for online users).

Layers follow TransformerLens: ``layer L`` is ``blocks.L.hook_resid_post``, 0-based.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from jaxtyping import Float, Int
from torch import Tensor

from interp.errors import InterpError
from interp.models.anatomy import Anatomy, anatomy
from interp.models.embedded import (
    DEFAULT,
    EMBEDDED,
    EmbeddedModel,
    check_installed,
    embedded_gguf,
    find_embedded,
)
from interp.runs.manifest import sha256_file
from interp.runs.paths import cache_dir
from interp.runs.progress import Steps, note
from interp.schema.settings import Cli, Config, Dtype, at_least, seed_range, setting

EMBEDDED_MODEL = DEFAULT.name
_EMBEDDED_NAMES = ", ".join(em.name for em in EMBEDDED)

DTYPES = {
    "float32": torch.float32,
    "fp32": torch.float32,
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
    "float16": torch.float16,
    "fp16": torch.float16,
}

#: Files one of which a checkpoint folder's tokenizer is saved as (fast, sentencepiece,
#: BPE, WordPiece).
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "spiece.model",
                   "vocab.txt")

_HUB_NAME = re.compile(r"^[A-Za-z0-9][\w.\-]*(/[\w.\-]+)?$")


def parse_dtype(dtype: str | torch.dtype) -> torch.dtype:
    """``"float32" | "bfloat16" | "float16"`` (or a torch dtype) → torch dtype."""
    if isinstance(dtype, torch.dtype):
        return dtype
    try:
        return DTYPES[str(dtype).lower()]
    except KeyError:
        raise InterpError(
            f"unknown dtype {dtype!r}: use one of float32, bfloat16, float16"
        ) from None


#: The device types a model can run on (``meta``, ``cpu``'s siblings and the rest cannot).
RUNNABLE_DEVICES = ("cpu", "cuda", "mps")


def parse_device(device: str | torch.device) -> torch.device:
    """Validate a device string; fails with one line when it is not available."""
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise InterpError(f"unknown device {str(device)[:60]!r}: use cpu, cuda or cuda:N"
                          ) from None
    if dev.type not in RUNNABLE_DEVICES:
        # "meta" and friends parse, then fail deep inside a run (Tensor.item() on meta)
        raise InterpError(f"device {str(device)!r} cannot run a model: use cpu, cuda or cuda:N")
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise InterpError(f"device {device!r} requested but CUDA is not available here")
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise InterpError(f"device {device!r} requested but this machine has "
                          f"{torch.cuda.device_count()} CUDA device(s)")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise InterpError(f"device {device!r} requested but MPS is not available here")
    return dev


def converted_dir(name: str) -> Path:
    """Where the cache keeps the converted checkpoint of model ``name``."""
    from interp.models.gguf_convert import CONVERTER_VERSION

    return cache_dir() / "models" / f"{name}-hf-v{CONVERTER_VERSION}"


def _is_converted(folder: Path) -> bool:
    return (folder / "interp_conversion.json").exists()


#: How long a load waits for another process converting the same model (then refuses).
CONVERSION_WAIT_S = 1800.0


def _ready(folder: Path, *, say: bool = True) -> bool:
    """Whether ``folder`` holds an intact conversion of this converter's version; a damaged
    one (truncated, edited, another version) is never used: one line says it is rebuilt."""
    from interp.models.gguf_convert import conversion_problem

    if not _is_converted(folder):
        return False
    problem = conversion_problem(folder)
    if problem is not None and say:
        note(f"converted model folder {folder} is {problem}; rebuilding")
    return problem is None


@contextlib.contextmanager
def _conversion_lock(out: Path) -> Iterator[None]:
    """One conversion into ``out`` at a time: a second process waits for the first (saying
    so once), then uses its folder."""
    from interp.runs.lock import Lock

    lock = Lock(out.with_name(f".{out.name}.lock"), subject=f"the conversion into {out}",
                hint="wait for it to finish, then run again")
    lock.acquire(wait_s=CONVERSION_WAIT_S)
    try:
        yield
    finally:
        lock.release()


def _convert(
    gguf: Path, out: Path, expected_sha256: str | None, hint: str = "", source: str | None = None,
    steps: Steps | None = None,
) -> Path:
    """Check ``gguf``'s sha256 (when one is expected) and convert it into ``out``.

    Shows a progress bar over the conversion's steps (``steps``, or a new one), and
    one line on stderr when it is done (its time on two cores: the getting-started page).
    """
    from interp.models.gguf_convert import convert_gguf

    with contextlib.ExitStack() as stack:
        if steps is None:
            steps = stack.enter_context(conversion_progress(gguf.name))
        steps.step("checking the sha256")
        digest = sha256_file(gguf)
        if expected_sha256 is not None and digest != expected_sha256:
            raise InterpError(
                f"{gguf.name}: sha256 {digest[:16]}… does not match the expected "
                f"{expected_sha256[:16]}…{hint}"
            )
        # the loss check for the embedded models, whose loss on English is known
        check = {} if expected_sha256 is not None else {"max_nll": None}
        convert_gguf(gguf, out, source=source, steps=steps, **check)
        steps.finish(f"converted {gguf.name} into {out}, once for all later loads")
    return out


def conversion_progress(name: str, extra_steps: int = 0) -> Steps:
    """The progress bar of one conversion: the sha256, the converter's steps, and
    ``extra_steps`` before them (joining a chunked GGUF)."""
    from interp.models.gguf_convert import CONVERSION_STEPS

    return Steps(f"converting {name}", 1 + len(CONVERSION_STEPS) + extra_steps)


def ensure_embedded(em: EmbeddedModel) -> Path:
    """The embedded model's converted checkpoint folder, converting it on first use.

    A progress bar shows the conversion (measured on the getting-started page);
    ``INTERP_NO_PROGRESS=1`` turns it off. A model whose
    packages are not installed fails with one line saying how to install them. A cached
    folder that is truncated, edited or of another converter version is converted again,
    with one line saying so; a process converting the same model is waited for.
    """
    out = converted_dir(em.name)
    if _ready(out):
        return out
    check_installed(em)  # one line, before any bar
    with _conversion_lock(out):
        if _ready(out, say=False):  # another process converted it meanwhile
            return out
        return _convert_embedded(em, out)


def _convert_embedded(em: EmbeddedModel, out: Path) -> Path:
    with conversion_progress(em.name, 1 if em.chunks else 0) as steps:
        if em.chunks:
            steps.step(f"joining its {len(em.chunks)} chunk packages")
        with embedded_gguf(em, cache_dir() / "models") as gguf:
            return _convert(gguf, out, em.sha256, f"; reinstall with `{em.install_hint}",
                            source=f"{em.name}: {em.file} from {em.requirements[0]}",
                            steps=steps)


def resolve_source(source: str | os.PathLike | None) -> tuple[str, str]:
    """Map a user's model argument to ``(model_id, path_or_hub_name)``.

    Raises :class:`InterpError` with one line for anything that cannot be a model.
    """
    em = find_embedded(None if source is None else str(source))
    if em is not None:
        return em.name, str(ensure_embedded(em))
    text = str(source)
    if not text.strip():
        raise InterpError("empty model name")
    from interp.runs.paths import check_path_name

    check_path_name(text, "model name")  # before the file system says "File name too long"
    path = Path(text).expanduser()
    if path.suffix.lower() == ".gguf":
        if not path.is_file():
            raise InterpError(f"cannot read GGUF file {text}: no such file")
        out = converted_dir(f"gguf-{path.stem.lower()}-{sha256_file(path)[:12]}")
        if not _ready(out):
            with _conversion_lock(out):
                if not _ready(out, say=False):
                    _convert(path, out, None)
        return f"gguf:{path.name}", str(out)
    if path.exists():
        if not path.is_dir():
            raise InterpError(f"cannot use {text} as a model: not a folder or a .gguf file")
        if not (path / "config.json").is_file():
            raise InterpError(f"cannot use {text} as a model: folder has no config.json")
        if not any((path / f).is_file() for f in TOKENIZER_FILES):
            raise InterpError(
                f"cannot use {text} as a model: folder has no tokenizer "
                f"({', '.join(TOKENIZER_FILES[:3])}, ...); save the tokenizer beside the "
                "weights (tokenizer.save_pretrained(folder))"
            )
        return str(path.resolve()), str(path.resolve())
    if os.sep in text and not _HUB_NAME.match(text) or text.startswith((".", "/", "~")):
        raise InterpError(f"cannot read model path {text}: no such file or folder")
    if not _HUB_NAME.match(text):
        raise InterpError(f"unknown model {text!r}")
    if not _hub_cached(text) and not _hub_reachable():
        raise InterpError(
            f"unknown model {text!r}: not an embedded model ({_EMBEDDED_NAMES}), a .gguf file "
            "or a local checkpoint folder, not in the Hugging Face cache, and the hub is "
            "unreachable (offline?)"
        )
    return text, text


def _hub_cached(name: str) -> bool:
    """Whether a hub model's config is already in the local Hugging Face cache."""
    try:
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache(name, "config.json"), str)
    except Exception:  # noqa: BLE001 - any failure means "not usable offline"
        return False


def _hub_reachable(timeout: float = 3.0) -> bool:
    """One quick TCP connect to the hub, so offline users get an answer in seconds.

    Without it, a hub lookup retries for ~30 s before failing.
    """
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes"):
        return False
    from urllib.parse import urlparse

    url = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    try:
        socket.create_connection(
            (url.hostname or "huggingface.co", url.port or 443), timeout=timeout
        ).close()
        return True
    except OSError:
        return False


def _native_tokenizer(where: str, fallback: Any) -> Any:
    """The checkpoint's own tokenizer, with its own BOS convention (TL forces BOS on)."""
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(where)
    except (OSError, ValueError, KeyError):
        return fallback


def special_prefix(tokenizer: Any) -> list[int]:
    """The special tokens a tokenizer puts before every text by default (BOS), or ``[]``.

    Read off the tokenizer itself, once: encode a probe text with and without its
    special tokens; what the default adds in front is the prefix (what it adds at the
    end, an EOS, is not wanted after a prompt and is ignored).
    """
    probe = "Hello world"
    plain = list(tokenizer(probe, add_special_tokens=False)["input_ids"])
    full = list(tokenizer(probe)["input_ids"])
    for start in range(len(full) - len(plain) + 1):
        if full[start : start + len(plain)] == plain:
            return [int(i) for i in full[:start]]
    return []


@dataclass(frozen=True)
class ModelSettings(Config):
    """Which model a run loads and how, and the batch size and seed every model run takes:
    declared once for every verb (a tool whose config has ``batch_size`` or ``seed`` gives
    its own default)."""

    model_name: str | None = setting(
        None, cli=Cli(flag="--model", metavar="NAME|PATH"),
        help="Embedded model name (default smollm2-135m-instruct), a local HF checkpoint "
        "folder, a .gguf file, or a hub name when online.")
    device: str = setting("cpu", help="cpu, cuda, cuda:N.")
    dtype: Dtype = setting("float32", help="Model weights dtype.")
    batch_size: int = setting(16, check=at_least(1), help="Prompts per forward pass.")
    seed: int = setting(0, check=seed_range, help="Random seed (recorded in the manifest).")


@dataclass
class Model:
    """A loaded model: the TransformerLens bridge, its tokenizer and its facts.

    ``bridge`` exposes TransformerLens hook names (``blocks.6.hook_resid_post``).
    """

    bridge: Any = field(repr=False)
    tokenizer: Any = field(repr=False)
    model_id: str
    path: str
    device: torch.device
    dtype: torch.dtype
    n_layers: int = field(init=False)
    d_model: int = field(init=False)
    d_vocab: int = field(init=False)

    special_prefix: list[int] = field(init=False)

    def __post_init__(self) -> None:
        cfg = self.bridge.cfg
        self.n_layers = int(cfg.n_layers)
        self.d_model = int(cfg.d_model)
        self.d_vocab = int(cfg.d_vocab)
        self.special_prefix = special_prefix(self.tokenizer)

    # ---- layers and hook points -------------------------------------------------
    def check_layer(self, layer: int) -> int:
        """Validate a 0-based layer index (negative counts from the end)."""
        n = self.n_layers
        if not isinstance(layer, int) or isinstance(layer, bool):
            raise InterpError(f"layer must be an integer, got {layer!r}")
        if layer < -n or layer >= n:
            raise InterpError(
                f"layer {layer} out of range: model has {n} layers (0–{n - 1})"
            )
        return layer % n

    def parse_layers(self, spec: str | int | Sequence[int] | None) -> list[int]:
        """``"all"`` / ``None`` → every layer; ``"0-5,8,-1"`` or ``[3, 6]`` → checked, sorted
        list. A range ``a-b`` includes both ends; negative layers count from the end."""
        if spec is None or (isinstance(spec, str) and spec.strip().lower() == "all"):
            return list(range(self.n_layers))
        if isinstance(spec, int):
            return [self.check_layer(spec)]
        if isinstance(spec, str):
            items = [s.strip() for s in spec.split(",")]
            if not any(items):
                raise InterpError(f"empty layer list {spec!r}")
            out: list[int] = []
            for s in items:
                out += self._layer_item(s)
            spec = out
        layers = [self.check_layer(int(x)) for x in spec]
        return sorted(set(layers))

    def _layer_item(self, item: str) -> list[int]:
        """One comma-separated item of a layer list: ``6``, ``-1`` or a range ``0-5``."""
        match = re.fullmatch(r"(-?\d+)\s*-\s*(-?\d+)", item)
        if match:
            start, stop = (self.check_layer(int(g)) for g in match.groups())
            if start > stop:
                raise InterpError(f"bad layer range {item!r}: the first layer must not come "
                                  f"after the last ({start} > {stop})")
            return list(range(start, stop + 1))
        try:
            return [int(item)]
        except ValueError:
            raise InterpError(f"bad layer {item!r}: use integers and ranges separated by "
                              "commas (0-5,8), or 'all'") from None

    @property
    def anatomy(self) -> Anatomy:
        """How this model's blocks are built (:mod:`interp.models.anatomy`); an architecture
        no family describes is refused in one line naming the supported ones."""
        config = getattr(getattr(self.bridge, "original_model", None), "config", None)
        return anatomy(config)

    @staticmethod
    def resid_hook(layer: int) -> str:
        """TransformerLens hook name of the residual stream after block ``layer``."""
        return f"blocks.{layer}.hook_resid_post"

    # ---- text --------------------------------------------------------------------
    def format_prompt(self, prompt: str, chat: bool = False) -> str:
        """The prompt as the model sees it: raw, or wrapped in the chat template."""
        if not chat:
            return prompt
        if not self.has_chat_template:
            raise InterpError(f"model {self.model_id} has no chat template; drop --chat")
        return self.tokenizer.apply_chat_template(
            [{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True
        )

    @property
    def has_chat_template(self) -> bool:
        """Whether the tokenizer has a chat template (an instruct model; base models do not)."""
        return bool(getattr(self.tokenizer, "chat_template", None))

    @property
    def adds_bos(self) -> bool:
        """Whether the tokenizer puts special tokens (a BOS) before every text."""
        return bool(self.special_prefix)

    def encode(self, text: str) -> list[int]:
        """Token ids of a text the model reads from its start, the way its tokenizer does.

        The tokenizer's own special prefix (a BOS token, for models trained with one) is
        added, once: not when the text already begins with it, as a chat template that
        writes the BOS itself does. SmolLM2's tokenizer adds none. Every path that feeds
        a text to the model from its start (capture, lenses, generation, scoring, the
        training windows) tokenizes through here; continuations appended after a prompt
        use :meth:`encode_continuation`.
        """
        ids = [int(i) for i in self.tokenizer(text, add_special_tokens=False)["input_ids"]]
        prefix = self.special_prefix
        if prefix and ids[: len(prefix)] != prefix:
            ids = prefix + ids
        return ids

    def encode_continuation(self, text: str) -> list[int]:
        """Token ids of a text appended after others: never a special prefix."""
        return [int(i) for i in self.tokenizer(text, add_special_tokens=False)["input_ids"]]

    def single_token(self, text: str, what: str) -> int:
        """The one token id of ``text`` as a continuation; raises :class:`InterpError`
        naming ``what`` (``"line 3: answer"``) and the pieces when it is several."""
        ids = self.encode_continuation(text)
        if len(ids) != 1:
            pieces = " + ".join(repr(self.decode_token(i)) for i in ids) or "none"
            raise InterpError(f"{what} {text!r} is {len(ids)} tokens ({pieces}); it must be "
                              "one token")
        return ids[0]

    def encode_padded(
        self, texts: Sequence[str]
    ) -> tuple[Int[Tensor, "batch pos"], Int[Tensor, "batch pos"]]:
        """Left-padded ``(input_ids, attention_mask)`` of texts already formatted."""
        rows = [self.encode(t) for t in texts]
        width = max((len(r) for r in rows), default=0)
        pad = self.tokenizer.pad_token_id
        pad = int(pad) if pad is not None else 0
        ids = torch.full((len(rows), width), pad, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            if r:
                ids[i, width - len(r):] = torch.tensor(r, dtype=torch.long)
                mask[i, width - len(r):] = 1
        return ids.to(self.device), mask.to(self.device)

    def tokenize(
        self, prompts: Sequence[str], chat: bool = False
    ) -> tuple[Int[Tensor, "batch pos"], Int[Tensor, "batch pos"]]:
        """Left-padded ``(input_ids, attention_mask)`` for a batch of prompts."""
        if isinstance(prompts, str):
            prompts = [prompts]
        for p in prompts:
            if not isinstance(p, str) or not p.strip():
                raise InterpError("empty prompt: give at least one non-blank character")
        return self.encode_padded([self.format_prompt(p, chat) for p in prompts])

    def decode_token(self, token_id: int) -> str:
        """One token id → its text, e.g. ``" Paris"`` (never the raw ``"ĠParis"``)."""
        return self.tokenizer.decode([int(token_id)], clean_up_tokenization_spaces=False)

    def token_strs(self, ids: Sequence[int] | Tensor) -> list[str]:
        """Decoded text of each token id."""
        return [self.decode_token(int(i)) for i in ids]

    # ---- compute -----------------------------------------------------------------
    def unembed(self, resid: Float[Tensor, "... d_model"]) -> Float[Tensor, "... d_vocab"]:
        """Logits from residual-stream vectors: ``W_U · final_norm(resid)``.

        Uses the model's own final norm (with its γ) and unembedding modules, and the
        family's final-logit softcap where it has one, so for the last layer's residual
        this is exactly the model's output.
        """
        resid = resid.to(device=self.device, dtype=self.dtype)
        logits = self.bridge.unembed(self.bridge.ln_final(resid))
        cap = self._logit_softcap()
        return logits if cap is None else cap * torch.tanh(logits / cap)

    def _logit_softcap(self) -> float | None:
        """The final-logit softcap (Gemma-2's ``cap · tanh(logits / cap)``), None without one
        or for an architecture no family describes."""
        try:
            return self.anatomy.logit_softcap
        except InterpError:
            return None

    @torch.no_grad()
    def logits(
        self, input_ids: Int[Tensor, "batch pos"], attention_mask: Tensor | None = None
    ) -> Float[Tensor, "batch pos d_vocab"]:
        """The model's own output logits (full forward, hooks as registered; on the plain
        HF model where that is exact: :mod:`interp.models.forward`)."""
        from interp.models.forward import forward

        return forward(self, input_ids, attention_mask)[0]

    def manifest_info(self) -> dict[str, Any]:
        """Facts about this model for run manifests."""
        return {
            "model_id": self.model_id,
            "model_path": self.path,
            "n_layers": self.n_layers,
            "d_model": self.d_model,
            "d_vocab": self.d_vocab,
            "dtype": str(self.dtype).removeprefix("torch."),
            "special_prefix": list(self.special_prefix),
            "device": str(self.device),
        }


def load(
    source: str | os.PathLike | None = None,
    device: str | torch.device = "cpu",
    dtype: str | torch.dtype = "float32",
) -> Model:
    """Load a model by name or path (default: the embedded SmolLM2-135M-Instruct).

    Args:
        source: ``None``/``"smollm2-135m-instruct"``, ``"gemma3-270m"``, a ``.gguf``
            path, a local HF checkpoint folder, or a hub name.
        device: ``"cpu"``, ``"cuda"``, ``"cuda:1"``…
        dtype: ``"float32"`` (default), ``"bfloat16"`` or ``"float16"``.

    Returns:
        a :class:`Model`. Raises :class:`InterpError` (one line) on bad input.
    """
    dev = parse_device(device)
    dt = parse_dtype(dtype)
    model_id, where = resolve_source(source)
    from transformer_lens.model_bridge import TransformerBridge

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            bridge = TransformerBridge.boot_transformers(where, device=str(dev), dtype=dt)
        except (OSError, ValueError, KeyError) as exc:
            if model_id == where and not Path(where).exists():
                raise InterpError(
                    f"unknown model {where!r}: not an embedded model "
                    f"({_EMBEDDED_NAMES}), a .gguf file or a local checkpoint folder, and the "
                    "hub could not provide it (offline?)"
                ) from exc
            raise InterpError(f"cannot load model {where}: {str(exc).splitlines()[0]}") from exc
    bridge.eval()
    for p in bridge.parameters():
        p.requires_grad_(False)
    tok = _native_tokenizer(where, bridge.tokenizer)
    # TransformerLens boots its tokenizer with add_bos_token=True whatever the model's
    # convention; interp tokenizes with the model's own tokenizer, and tells TL the same.
    bridge.cfg.default_prepend_bos = bool(special_prefix(tok))
    tok.padding_side = "left"
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    return Model(bridge=bridge, tokenizer=tok, model_id=model_id, path=where, device=dev, dtype=dt)


def list_models() -> list[dict[str, Any]]:
    """What can be loaded here: the embedded models and every cached conversion.

    A cached conversion that fails its stamp's check (truncated, edited: see
    :func:`interp.models.gguf_convert.conversion_problem`) is not ``cached``: its row's
    ``damaged`` says why (it is converted again on its next load); else ``damaged`` is None.
    """
    from interp.models.embedded import is_installed
    from interp.models.gguf_convert import CONVERTER_VERSION, conversion_problem

    rows: list[dict[str, Any]] = []
    embedded_dirs = set()
    for em in EMBEDDED:
        conv = converted_dir(em.name)
        embedded_dirs.add(conv)
        problem = conversion_problem(conv) if _is_converted(conv) else None
        rows.append({
            "name": em.name,
            "kind": ("embedded, default" if em is DEFAULT else "embedded")
            + f" ({em.requirements[0].split('==')[0]} GGUF)",
            "installed": is_installed(em),
            "cached": _is_converted(conv) and problem is None,
            "damaged": problem,
            "path": str(conv) if conv.exists() else "-",
        })
    models_dir = cache_dir() / "models"
    if models_dir.is_dir():
        for d in sorted(models_dir.iterdir()):
            if d in embedded_dirs or d.name.startswith(".") or not _is_converted(d):
                continue
            try:
                info = json.loads((d / "interp_conversion.json").read_text())
            except (OSError, ValueError):
                info = None
            info = info if isinstance(info, dict) else {}
            version = info.get("converter_version", 1)
            stale = bool(info) and version != CONVERTER_VERSION
            problem = None if stale else conversion_problem(d)
            kind = "converted GGUF" if not stale else (
                f"stale conversion (converter v{version}; unused, safe to delete)")
            rows.append(
                {
                    "name": str(info.get("source", d.name)),
                    "kind": kind,
                    "installed": True,
                    "cached": problem is None,
                    "damaged": problem,
                    "path": str(d),
                }
            )
    return rows
