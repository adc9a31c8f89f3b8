"""SAELens interoperability: export our SAEs in SAELens's folder layout, import theirs.

A SAELens SAE folder (what ``SAE.save_model`` writes and ``SAE.load_from_disk`` reads)::

    my-sae/
        cfg.json                  # architecture, widths, normalisation, metadata
        sae_weights.safetensors   # W_enc [d_in, d_sae], b_enc, W_dec [d_sae, d_in], b_dec
        sparsity.safetensors      # optional, log10 feature firing rates (not read here)

Our SAE (:mod:`saes.sae`) is SAELens's ``"standard"`` architecture with
``apply_b_dec_to_input: true``: ``f = ReLU((x − b_dec)·W_enc + b_enc)``,
``x̂ = f·W_dec + b_dec``, same tensor names and shapes, so the weights are copied as
they are (float32).

**cfg.json written by** :func:`export_saelens`. SAELens 6 reads the top-level
``architecture``, ``d_in``, ``d_sae``, ``dtype``, ``device``, ``apply_b_dec_to_input``,
``normalize_activations``, ``reshape_activations`` and the nested ``metadata`` dict
(``model_name``, ``hook_name``, ``context_size``, ``prepend_bos``, ``dataset_path``,
``seqpos_slice``, ``sae_lens_version``, …). ``metadata.sae_lens_version`` ≥ 6 makes
SAELens 6 take the file as a v6 config; unknown top-level keys are ignored by it. The
flat fields SAELens 3–5 require (``hook_name``, ``hook_layer``, ``model_name``,
``activation_fn_str``, ``finetuning_scaling_factor``, ``context_size``, …) are written
at the top level as well, so older readers load the same file. An ``interp`` entry (at
the top level, and again inside ``metadata``, which SAELens 6 keeps when it re-saves
the SAE) records our provenance: model id, hook point, layer, the source artifact's
weights sha256 and the exported weights' sha256.

**Normalisation.** Our saved SAEs take raw activations (the training scale is folded in,
:meth:`~saes.sae.SparseAutoencoder.fold_input_scale`), so the export says
``normalize_activations: "none"``; an SAE still holding an ``input_scale`` is folded on
the way out, as SAELens's own ``fold_activation_norm_scaling_factor`` does.

**Architectures.** Each registered architecture (:mod:`saes.architectures`) names its
SAELens format: ReLU SAEs are SAELens's ``"standard"``, TopK SAEs its ``"topk"`` (with
``k``), JumpReLU SAEs its ``"jumprelu"`` (with a ``threshold`` tensor). A BatchTopK SAE
is written as ``"jumprelu"`` with its single threshold for every latent, as SAELens
saves its own BatchTopK SAEs for inference; our provenance entry says it was BatchTopK,
so importing it back gives a BatchTopK SAE again.

**Import** (:func:`import_saelens`, :func:`load_saelens`) accepts SAELens 3–6 folders of
the standard, topk and jumprelu architectures. What cannot be represented exactly is
refused in one line: other architectures (gated, matryoshka, …), per-token normalisations
(``constant_norm_rescale``, ``layer_norm``), unfolded whitening, hook_z reshaping and
per-head hooks. What can is converted:

* ``normalize_activations: "expected_average_only_in"`` with its scaling factor (from
  ``activation_scaler.json`` beside the weights, or a ``norm_scaling_factor`` entry in
  cfg.json) becomes our ``input_scale``: the same multiply-then-divide SAELens's
  activation scaler does. Without a known factor the folder is refused.
* ``apply_b_dec_to_input: false`` is folded into the encoder bias,
  ``b_enc ← b_enc + b_dec·W_enc`` (computed in float64): the same function in exact
  arithmetic; only float32 rounding of the new bias differs.
* a pre-v6 ``finetuning_scaling_factor`` vector s is folded into the decoder,
  ``W_dec ← diag(s)·W_dec`` (all-ones vectors are dropped, as SAELens does).

Weights are read with safetensors only (never pickle or ``torch.load``); a missing,
truncated or corrupt file, malformed JSON, a missing tensor or a wrong shape is an
:class:`~interp.errors.InterpError` with a one-line message.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from interp.errors import InterpError
from interp.runs.atomic import atomic_folder, fsync_path, save_safetensors, write_text_synced
from saes.architectures import ARCHITECTURES, architecture, saelens_architecture
from saes.loading import LoadedSAE, load_sae, sae_from_tensors
from saes.sae import SAEConfig, SparseAutoencoder

CFG_FILE = "cfg.json"
WEIGHTS_FILE = "sae_weights.safetensors"
SPARSITY_FILE = "sparsity.safetensors"
SCALER_FILE = "activation_scaler.json"

SAELENS_FORMAT_VERSION = "6.54.12"
"""The SAELens release whose ``load_from_disk`` the written layout was verified with
(``bench/saelens_compat.py``); written as ``metadata.sae_lens_version``."""

#: Files a SAELens SAE (or training checkpoint) folder may hold; an export replaces a
#: folder only if it has nothing else.
SAELENS_FILES = frozenset({
    CFG_FILE, WEIGHTS_FILE, SPARSITY_FILE, SCALER_FILE, "runner_cfg.json",
    "activation_whitening.safetensors", "README.md",
})

#: Hugging Face names of the models interp knows under a short id, for SAELens's
#: ``model_name`` (the exact interp id is kept in the ``interp`` entry).
HF_MODEL_NAMES = {"smollm2-135m-instruct": "HuggingFaceTB/SmolLM2-135M-Instruct"}

_TENSOR_NAMES = ("W_enc", "b_enc", "W_dec", "b_dec")
_SCALE_TENSORS = ("finetuning_scaling_factor", "scaling_factor")
_RESID_POST = re.compile(r"^blocks\.(\d+)\.hook_resid_post$")
_BLOCK = re.compile(r"^blocks\.(\d+)\.")
_ARCH_HINTS = {
    "threshold": "jumprelu", "log_threshold": "jumprelu",
    "b_gate": "gated", "r_mag": "gated", "b_mag": "gated",
}


# --------------------------------------------------------------------------- export


def export_saelens(
    sae_path_or_loaded: str | os.PathLike[str] | LoadedSAE | SparseAutoencoder,
    out_dir: str | os.PathLike[str],
) -> Path:
    """Write an interp SAE as a SAELens ``"standard"`` SAE folder; return its path.

    Args:
        sae_path_or_loaded: an SAE artifact folder, a :class:`~saes.loading.LoadedSAE`, or a
            :class:`~saes.sae.SparseAutoencoder` in memory (then no source sha256 is known).
        out_dir: the SAELens folder to write (``cfg.json`` + ``sae_weights.safetensors``).
            It is built in a hidden temporary sibling and renamed into place. An existing
            folder is replaced only if it is a SAELens SAE folder; anything else (a file,
            a symlink, another kind of folder) is refused.

    Raises:
        InterpError: one line, for an unreadable source or a refused/unwritable target.
    """
    sae, source, config = _resolve_source(sae_path_or_loaded)
    target = Path(os.path.abspath(os.path.expanduser(os.fspath(out_dir))))
    if not target.name:
        raise InterpError(f"cannot export an SAE to {target}: give a folder name")
    _check_saelens_replaceable(target)

    tensors, folded_scale = _export_tensors(sae)
    parent = target.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as exc:
        raise InterpError(f"cannot export to {target}: a parent is not a folder") from exc
    except OSError as exc:
        raise InterpError(f"cannot create folder {parent}: {exc.strerror or exc}") from exc

    from interp.runs.manifest import sha256_file

    # a failed write (a full disk) is atomic_folder's one line; the old folder stays
    with atomic_folder(target) as tmp:
        weights = tmp / WEIGHTS_FILE
        save_safetensors(tensors, weights, metadata={"format": "pt"})
        fsync_path(weights)
        cfg = _saelens_cfg(sae, source, config, folded_scale, sha256_file(weights))
        write_text_synced(tmp / CFG_FILE, json.dumps(cfg, indent=2) + "\n")
        os.chmod(tmp, 0o755)  # mkdtemp makes 0700; the result is an ordinary folder
    return target


def _resolve_source(
    src: str | os.PathLike[str] | LoadedSAE | SparseAutoencoder,
) -> tuple[SparseAutoencoder, dict[str, Any], dict[str, Any]]:
    """The SAE, a provenance dict (path, sha256, manifest facts) and its saved config."""
    if isinstance(src, SparseAutoencoder):
        return src, {"source_artifact": None, "source_weights_sha256": None}, {}
    if isinstance(src, LoadedSAE):
        loaded = src
    elif isinstance(src, str | os.PathLike):
        loaded = load_sae(os.fspath(src))
    else:
        raise InterpError(
            f"export_saelens needs an SAE artifact path, a LoadedSAE or a SparseAutoencoder, "
            f"got {type(src).__name__}"
        )
    from interp.runs.artifacts import read_config

    raw = read_config(loaded.path)
    man = loaded.manifest or {}
    source = {
        "source_artifact": str(loaded.path),
        "source_weights_sha256": raw.get("weights_sha256"),
        "interp_version": man.get("interp_version"),
        "git_commit": man.get("git_commit"),
        "seed": man.get("seed"),
        "dataset_hash": man.get("dataset_hash"),
        "created": man.get("timestamp"),
    }
    return loaded.sae, source, dict(loaded.config)


@torch.no_grad()
def _export_tensors(sae: SparseAutoencoder) -> tuple[dict[str, Tensor], float | None]:
    """float32 copies of the four tensors (and a threshold), with any ``input_scale``
    folded in (thresholds are in activation units, which the fold leaves alone)."""
    t = {name: tensor.detach().to("cpu", torch.float64) for name, tensor in sae.tensors().items()}
    c = float(sae.cfg.input_scale)
    folded = None
    if c != 1.0:  # same algebra as SparseAutoencoder.fold_input_scale, in float64
        t["W_enc"], t["b_dec"], t["W_dec"] = t["W_enc"] * c, t["b_dec"] / c, t["W_dec"] / c
        folded = c
    names = [*_TENSOR_NAMES, *sae.state_tensors()]
    return {name: t[name].to(torch.float32).contiguous() for name in names}, folded


def _saelens_cfg(
    sae: SparseAutoencoder, source: dict[str, Any], config: dict[str, Any],
    folded_scale: float | None, weights_sha256: str,
) -> dict[str, Any]:
    cfg = sae.cfg
    hook = cfg.hook_point
    model_id = cfg.model_id or "unknown"
    model_name = HF_MODEL_NAMES.get(model_id, model_id)
    m = _BLOCK.match(hook)
    hook_layer = int(m.group(1)) if m else (cfg.layer if cfg.layer is not None else 0)
    train_raw, data_raw = config.get("train"), config.get("data")
    train = train_raw if isinstance(train_raw, dict) else None
    data = data_raw if isinstance(data_raw, dict) else {}
    context_size = train.get("seq_len") if train else None
    dataset_path = str(data.get("source") or "").removeprefix("hf:")
    # interp's SAE training drops each window's first token (saes.store) and packs
    # windows without a BOS token.
    seqpos_slice = [1, None] if train else [None]
    prepend_bos = False

    interp_entry = {
        "model_id": model_id,
        "hook_point": hook,
        "layer": cfg.layer,
        **source,
        "weights_sha256": weights_sha256,
        "input_scale_folded": folded_scale,
        "architecture": cfg.architecture,
        "k": cfg.k,
    }
    spec = architecture(cfg.architecture)  # its SAELens format (saes.architectures)
    arch = spec.saelens
    metadata = {
        "sae_lens_version": SAELENS_FORMAT_VERSION,
        "sae_lens_training_version": None,
        "model_name": model_name,
        "hook_name": hook,
        "hook_head_index": None,
        "model_from_pretrained_kwargs": {},
        "prepend_bos": prepend_bos,
        "context_size": context_size,
        "dataset_path": dataset_path,
        "seqpos_slice": seqpos_slice,
        "neuronpedia_id": None,
        "interp": interp_entry,
    }
    return {
        # SAELens 6: the SAEConfig dataclass fields, the architecture and the metadata.
        "architecture": arch,
        **spec.to_saelens(cfg),
        "d_in": cfg.d_in,
        "d_sae": cfg.d_sae,
        "dtype": "float32",
        "device": "cpu",
        "apply_b_dec_to_input": True,
        "normalize_activations": "none",
        "reshape_activations": "none",
        "metadata": metadata,
        # SAELens 3-5 read these flat fields (SAELens 6 ignores them).
        "model_name": model_name,
        "hook_name": hook,
        "hook_layer": hook_layer,
        "hook_head_index": None,
        "activation_fn_str": {"standard": "relu"}.get(arch, arch),
        "activation_fn_kwargs": {},
        "finetuning_scaling_factor": False,
        "context_size": context_size,
        "prepend_bos": prepend_bos,
        "dataset_path": dataset_path,
        "dataset_trust_remote_code": False,
        "seqpos_slice": seqpos_slice,
        "sae_lens_training_version": None,
        "neuronpedia_id": None,
        "model_from_pretrained_kwargs": {},
        # Our provenance.
        "interp": interp_entry,
    }


def _check_saelens_replaceable(target: Path) -> None:
    """Refuse to replace anything at ``target`` but a SAELens SAE folder (or an empty one)."""
    if target.is_symlink():
        raise InterpError(f"refusing to overwrite {target}: it is a symlink, not a SAELens folder")
    if not target.exists():
        return
    if not target.is_dir():
        raise InterpError(f"refusing to overwrite {target}: it is a file, not a SAELens folder")
    entries = {p.name for p in target.iterdir()}
    if not entries:
        return
    try:
        raw = json.loads((target / CFG_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raw = None
    is_saelens = isinstance(raw, dict) and "d_in" in raw and "d_sae" in raw
    others = sorted(entries - SAELENS_FILES)
    if not is_saelens or others:
        why = (f"it holds {', '.join(others[:3])}{' …' if len(others) > 3 else ''}"
               if is_saelens else f"it has no SAELens {CFG_FILE}")
        raise InterpError(
            f"refusing to overwrite {target}: the folder exists and is not a SAELens SAE "
            f"folder ({why}); choose another path or remove it"
        )


# --------------------------------------------------------------------------- import


def import_saelens(
    in_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    model_id: str | None = None,
) -> Path:
    """Convert a SAELens SAE folder into an interp SAE artifact at ``out_dir``; return it.

    Args:
        in_dir: a SAELens folder (``cfg.json`` + ``sae_weights.safetensors``).
        out_dir: the interp artifact folder to write (atomically, by
            :meth:`~saes.sae.SparseAutoencoder.save`); an existing non-artifact folder is
            refused.
        model_id: the interp model id to record (what :func:`~saes.loading.load_sae` checks a
            model against). Default: the id our own export recorded, else SAELens's
            ``model_name``.

    The hook point is SAELens's ``hook_name``; the layer is set when it is
    ``blocks.L.hook_resid_post``. The artifact's config keeps the SAELens cfg.json and
    the conversions applied (``config["saelens"]``).

    Raises:
        InterpError: one line, for anything that cannot be imported exactly (see the
            module docstring).
    """
    sae, info = load_saelens(in_dir, model_id=model_id)
    return sae.save(os.fspath(out_dir), d_model=sae.cfg.d_in, extra={"saelens": info})


def load_saelens(
    in_dir: str | os.PathLike[str], *, model_id: str | None = None,
) -> tuple[SparseAutoencoder, dict[str, Any]]:
    """Read a SAELens SAE folder into a :class:`~saes.sae.SparseAutoencoder` (in memory).

    Returns the SAE and a dict describing the source: its path, the sha256 of its
    weights, the SAELens version that wrote it, the conversions applied and the
    original ``cfg.json``.
    """
    folder = Path(os.path.expanduser(os.fspath(in_dir)))
    raw = read_saelens_cfg(folder)
    where = f"SAELens folder {folder}"
    meta_raw = raw.get("metadata")
    meta: dict[str, Any] = meta_raw if isinstance(meta_raw, dict) else {}

    def field(key: str, *old: str) -> Any:
        for k in (key, *old):
            if meta.get(k) is not None:
                return meta[k]
        for k in (key, *old):
            if raw.get(k) is not None:
                return raw[k]
        return None

    # ---- architecture -------------------------------------------------------------
    arch = raw.get("architecture", "standard")
    act = field("activation_fn_str", "activation_fn")
    if act is not None and act != {"standard": "relu"}.get(arch, arch):
        arch = f"{arch} with activation {act!r}"
    ours_raw = raw.get("interp")
    ours = ours_raw if isinstance(ours_raw, dict) else meta.get("interp")
    ours = ours if isinstance(ours, dict) else {}
    spec = saelens_architecture(str(arch), ours)  # the registered architecture it reads as
    if spec is None:
        native = [a for a in ARCHITECTURES.values() if a.saelens_import]
        names = [f"{a.saelens!r} ({a.label})" for a in native]
        raise InterpError(
            f"{where}: architecture {arch!r} is not supported; interp imports SAELens "
            f"{', '.join(names[:-1])} and {names[-1]} SAEs" if len(names) > 1 else
            f"{where}: architecture {arch!r} is not supported")
    d_in, d_sae = (_positive_int(raw.get(k), k, where) for k in ("d_in", "d_sae"))
    try:  # k and the like, from the top level, then the metadata
        fields = spec.from_saelens({**meta, **{k: v for k, v in raw.items() if v is not None}},
                                   ours, d_sae)
    except InterpError as exc:
        raise InterpError(f"{where}: {exc}") from None
    state_names = spec.saelens_tensors
    hook = field("hook_name", "hook_point")
    if not isinstance(hook, str) or not hook.strip() or "\n" in hook:
        raise InterpError(f"{where}: {CFG_FILE} has no hook_name (got {hook!r}); interp needs "
                          f"the hook point the SAE reads")
    head = field("hook_head_index", "hook_point_head_index")
    reshape = raw.get("reshape_activations", "none")
    if head is not None or reshape not in (None, "none") or hook.endswith("hook_z"):
        raise InterpError(
            f"{where}: per-head / hook_z SAEs (hook {hook}, head {head}, reshape "
            f"{reshape!r}) are not supported; interp SAEs read flat activations"
        )

    # ---- normalisation --------------------------------------------------------------
    norm = raw.get("normalize_activations", "none")
    if isinstance(norm, bool) or norm is None:  # SAELens < 3 wrote a bool
        norm = "expected_average_only_in" if norm else "none"
    conversions: list[str] = []
    input_scale = 1.0
    if norm == "expected_average_only_in":
        input_scale = _norm_scaling_factor(folder, raw, meta, where)
        conversions.append(f"normalize_activations expected_average_only_in -> "
                           f"input_scale {input_scale!r}")
    elif norm != "none":
        raise InterpError(
            f"{where}: normalize_activations {norm!r} cannot be folded into an SAE exactly "
            f"(only 'none' and 'expected_average_only_in' with a known factor can); fold it "
            f"in SAELens and save again"
        )
    apply_b_dec = raw.get("apply_b_dec_to_input", True)
    if not isinstance(apply_b_dec, bool):
        raise InterpError(f"{where}: apply_b_dec_to_input must be true or false, "
                          f"got {apply_b_dec!r}")

    # ---- weights ----------------------------------------------------------------------
    tensors, weights_sha = _read_weights(folder, where)
    extra = sorted(set(tensors) - set(_TENSOR_NAMES) - set(_SCALE_TENSORS) - set(state_names))
    if extra:
        hints = sorted({_ARCH_HINTS[n] for n in extra if n in _ARCH_HINTS})
        hint = f" (a {'/'.join(hints)} SAE?)" if hints else ""
        raise InterpError(f"{where}: {WEIGHTS_FILE} has tensors a standard SAE lacks: "
                          f"{', '.join(extra)}{hint}")
    missing = [n for n in (*_TENSOR_NAMES, *state_names) if n not in tensors]
    if missing:
        raise InterpError(f"{where}: {WEIGHTS_FILE} lacks tensor {', '.join(missing)} "
                          f"(has {', '.join(sorted(tensors)) or 'none'})")
    want = {"W_enc": [d_in, d_sae], "b_enc": [d_sae], "W_dec": [d_sae, d_in], "b_dec": [d_in]}
    for name, shape in want.items():
        t = tensors[name]
        if list(t.shape) != shape:
            raise InterpError(
                f"{where}: tensor {name} has shape {list(t.shape)}, expected {shape} "
                f"(cfg.json d_in={d_in}, d_sae={d_sae})"
            )
        if not t.is_floating_point():
            raise InterpError(f"{where}: tensor {name} is {str(t.dtype).removeprefix('torch.')}, "
                              f"not floating point")
    w = {name: tensors[name].to(torch.float64) for name in _TENSOR_NAMES}
    changed: set[str] = set()

    scale_name = next((n for n in _SCALE_TENSORS if n in tensors), None)
    if scale_name is not None:
        s = tensors[scale_name]
        if list(s.shape) != [d_sae] or not s.is_floating_point():
            raise InterpError(f"{where}: tensor {scale_name} has shape {list(s.shape)}, "
                              f"expected [{d_sae}]")
        if not torch.allclose(s.float(), torch.ones_like(s, dtype=torch.float32)):
            if not field("finetuning_scaling_factor"):
                raise InterpError(f"{where}: {WEIGHTS_FILE} has a {scale_name} vector but "
                                  f"cfg.json says finetuning_scaling_factor is false")
            w["W_dec"] = w["W_dec"] * s.to(torch.float64)[:, None]
            changed.add("W_dec")
            conversions.append(f"{scale_name} folded into W_dec")
    if not apply_b_dec:
        w["b_enc"] = w["b_enc"] + w["b_dec"] @ w["W_enc"]
        changed.add("b_enc")
        conversions.append("apply_b_dec_to_input false: b_enc += b_dec @ W_enc")

    out = {}
    for name in _TENSOR_NAMES:
        # Untouched float32 tensors are kept bit for bit; others are rounded once.
        t = tensors[name] if name not in changed and tensors[name].dtype == torch.float32 \
            else w[name].to(torch.float32)
        if not bool(torch.isfinite(t).all()):
            raise InterpError(f"{where}: tensor {name} has non-finite values"
                              f"{' after folding' if name in changed else ''}")
        out[name] = t.contiguous()
    for name in state_names:  # shape and finiteness: sae_from_tensors, in one line
        if not tensors[name].is_floating_point():
            raise InterpError(f"{where}: tensor {name} is not floating point")
        out[name] = tensors[name].to(torch.float32).contiguous()

    # ---- provenance -------------------------------------------------------------------
    if model_id is None:
        model_id = ours.get("model_id") or field("model_name") or "unknown"
    if not isinstance(model_id, str) or not model_id.strip() or "\n" in model_id:
        raise InterpError(f"model id must be a non-empty one-line string, got {model_id!r}")
    m = _RESID_POST.match(hook)
    layer = int(m.group(1)) if m else None
    try:
        cfg = SAEConfig(d_in=d_in, d_sae=d_sae, hook_point=hook, layer=layer,
                        model_id=model_id, input_scale=input_scale, architecture=spec.name,
                        **fields)
        sae = sae_from_tensors(cfg, out)
    except InterpError as exc:
        raise InterpError(f"{where}: {exc}") from None
    info = {
        "source": str(folder.resolve()),
        "weights_sha256": weights_sha,
        "sae_lens_version": field("sae_lens_version"),
        "model_name": field("model_name"),
        "conversions": conversions,
        "weights_dtype": str(tensors["W_enc"].dtype).removeprefix("torch."),
        "exported_by_interp": bool(ours),
        "weights_changed_since_export": (ours.get("weights_sha256") != weights_sha
                                         if ours.get("weights_sha256") else None),
        "cfg": raw,
    }
    return sae, info


def read_saelens_cfg(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and minimally check a SAELens folder's ``cfg.json`` (one-line InterpErrors)."""
    folder = Path(os.path.expanduser(os.fspath(folder)))
    if not folder.exists():
        raise InterpError(f"SAELens folder not found: {folder}")
    if not folder.is_dir():
        raise InterpError(f"{folder} is not a folder (a SAELens SAE is a folder with "
                          f"{CFG_FILE} and {WEIGHTS_FILE})")
    path = folder / CFG_FILE
    if not path.is_file():
        raise InterpError(f"SAELens folder {folder} has no {CFG_FILE}")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise InterpError(f"SAELens folder {folder}: {CFG_FILE} is not UTF-8 text") from exc
    except json.JSONDecodeError as exc:
        raise InterpError(f"SAELens folder {folder}: {CFG_FILE} is not valid JSON (line "
                          f"{exc.lineno} column {exc.colno}: {exc.msg})") from exc
    except OSError as exc:
        raise InterpError(f"SAELens folder {folder}: cannot read {CFG_FILE}: "
                          f"{_reason(exc)}") from exc
    if not isinstance(raw, dict):
        raise InterpError(f"SAELens folder {folder}: {CFG_FILE} is not a JSON object")
    return raw


def _read_weights(folder: Path, where: str) -> tuple[dict[str, Tensor], str]:
    import safetensors.torch

    from interp.runs.manifest import sha256_file

    path = folder / WEIGHTS_FILE
    if not path.is_file():
        raise InterpError(f"{where} has no {WEIGHTS_FILE}")
    try:
        tensors = safetensors.torch.load_file(str(path), device="cpu")
    except Exception as exc:  # SafetensorError, OSError, ...: the file cannot be parsed
        raise InterpError(f"{where}: cannot read {WEIGHTS_FILE}: {_reason(exc)}; the file is "
                          f"truncated or not safetensors") from exc
    return tensors, sha256_file(path)


def _norm_scaling_factor(folder: Path, raw: dict[str, Any], meta: dict[str, Any],
                         where: str) -> float:
    """The activation scale of an ``expected_average_only_in`` SAE, or refuse."""
    value: Any = None
    origin = ""
    scaler = folder / SCALER_FILE
    if scaler.is_file():
        try:
            data = json.loads(scaler.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InterpError(f"{where}: {SCALER_FILE} is unreadable: {_reason(exc)}") from exc
        if isinstance(data, dict):
            if data.get("has_whitening"):
                raise InterpError(f"{where}: {SCALER_FILE} holds a whitening transform, which "
                                  f"interp cannot fold exactly")
            value, origin = data.get("scaling_factor"), SCALER_FILE
    for src in (meta, raw):
        if value is None and src.get("norm_scaling_factor") is not None:
            value, origin = src["norm_scaling_factor"], f"{CFG_FILE} norm_scaling_factor"
    if value is None:
        raise InterpError(
            f"{where}: normalize_activations is 'expected_average_only_in' but the folder "
            f"gives no scaling factor ({SCALER_FILE} or norm_scaling_factor), so the SAE's "
            f"input scale is unknown; fold it with SAELens's fold_activation_norm_scaling_factor"
        )
    if isinstance(value, bool) or not isinstance(value, int | float) or \
            not math.isfinite(value) or value <= 0:
        raise InterpError(f"{where}: scaling factor from {origin} must be a positive number, "
                          f"got {value!r}")
    return float(value)


def _positive_int(value: Any, name: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InterpError(f"{where}: {CFG_FILE} field {name} must be a positive integer, "
                          f"got {value!r}")
    return value


# --------------------------------------------------------------------------- helpers


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return " ".join(str(exc).split()) or type(exc).__name__


__all__ = [
    "CFG_FILE",
    "SAELENS_FORMAT_VERSION",
    "WEIGHTS_FILE",
    "export_saelens",
    "import_saelens",
    "load_saelens",
    "read_saelens_cfg",
]
