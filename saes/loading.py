"""Reading SAE artifacts of every architecture: the right class, checked shapes and values.

:func:`load_sae` reads an :mod:`interp.runs.artifacts` folder of kind ``"sae"`` and builds
the class its ``architecture`` names (:mod:`saes.architectures`); :func:`sae_from_tensors`
does the same from tensors in memory (SAELens import, tests).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

import saes.architectures  # noqa: F401 - registers every architecture
from interp.errors import InterpError
from saes.sae import KIND, SAEConfig, SparseAutoencoder

if TYPE_CHECKING:
    from interp.models.loading import Model

__all__ = ["LoadedSAE", "build_sae", "check_sae", "load_sae", "sae_from_tensors", "unpack_sae"]


@dataclass
class LoadedSAE:
    """An SAE read from disk with its saved config and manifest."""

    sae: SparseAutoencoder
    path: Path
    config: dict[str, Any]
    manifest: dict[str, Any]


def unpack_sae(sae: SparseAutoencoder | LoadedSAE) -> tuple[SparseAutoencoder, LoadedSAE | None]:
    """The SAE of either form, and the :class:`LoadedSAE` when given one (its path,
    config and manifest are the provenance a tool's result records)."""
    if isinstance(sae, LoadedSAE):
        return sae.sae, sae
    return sae, None


def build_sae(cfg: SAEConfig) -> SparseAutoencoder:
    """An SAE of ``cfg.architecture`` with zero weights (see :mod:`saes.architectures`); a
    transcoder's settings build a transcoder."""
    return cfg.model_class()(cfg)


def sae_from_tensors(cfg: SAEConfig, tensors: dict[str, Tensor]) -> SparseAutoencoder:
    """Build an SAE of ``cfg.architecture`` from named tensors, checking every shape
    (and, for thresholds, that every value is finite)."""
    sae = build_sae(cfg)
    want = {name: tuple(t.shape) for name, t in sae.tensors().items()}
    missing = sorted(set(want) - set(tensors))
    if missing:
        raise InterpError(f"{cfg.architecture} SAE weights lack {', '.join(missing)}")
    for name, shape in want.items():
        if tuple(tensors[name].shape) != shape:
            raise InterpError(
                f"SAE tensor {name} has shape {list(tensors[name].shape)}, expected {list(shape)} "
                f"for d_in={cfg.d_in}, d_sae={cfg.d_sae}"
            )
    for name in sae.state_tensors():
        t = tensors[name].double()
        if not bool(torch.isfinite(t).all()):
            bad = int((~torch.isfinite(t)).sum())
            raise InterpError(f"{cfg.architecture} SAE tensor {name} has {bad} non-finite "
                              f"value{'s' if bad > 1 else ''} (NaN or inf)")
    with torch.no_grad():
        for name in ("W_enc", "b_enc", "W_dec", "b_dec"):
            getattr(sae, name).copy_(tensors[name].float())
        sae.load_state_tensors({k: tensors[k] for k in sae.state_tensors()})
    return sae


def load_sae(path: str | Path, model: Any | None = None, device: str = "cpu", *,
             kind: str = KIND, config_class: type[SAEConfig] = SAEConfig) -> LoadedSAE:
    """Load an SAE artifact; with ``model``, refuse one made for another model or width.

    ``kind`` and ``config_class`` read another member of the family (a transcoder:
    :func:`saes.transcoders.files.load_transcoder`). Raises :class:`InterpError` in one line
    for a missing, corrupt or truncated file, a shape mismatch, or an SAE whose
    ``d_model``/model id differ from ``model``'s.
    """
    from interp.runs.artifacts import load_artifact

    art = load_artifact(path, kind=kind)
    sae_cfg = art.config.get(kind)
    what = "SAE" if kind == KIND else kind
    if not isinstance(sae_cfg, dict):
        raise InterpError(f"{what} {path}: config.json has no {kind!r} settings")
    try:
        cfg = config_class(**sae_cfg)
    except TypeError as exc:
        raise InterpError(f"{what} {path}: bad {kind!r} settings in config.json ({exc})"
                          ) from None
    if model is not None:
        if cfg.d_in != model.d_model:
            raise InterpError(
                f"{what} {path} reads activations of width d_in={cfg.d_in}, but model "
                f"{model.model_id} has d_model={model.d_model}"
            )
        if art.model_id != model.model_id:
            raise InterpError(
                f"{what} {path} was trained on model {art.model_id!r} but the loaded model is "
                f"{model.model_id!r}"
            )
    sae = sae_from_tensors(cfg, art.tensors).to(device)
    return LoadedSAE(sae, art.path, art.config, art.manifest)


def check_sae(model: Model, sae: SparseAutoencoder) -> None:
    """Refuse an SAE that does not read this model: its width or its model id differ."""
    if sae.cfg.d_in != model.d_model:
        raise InterpError(
            f"SAE reads activations of width d_in={sae.cfg.d_in}, but model {model.model_id} "
            f"has d_model={model.d_model}"
        )
    if sae.cfg.model_id and sae.cfg.model_id != model.model_id:
        raise InterpError(
            f"SAE was trained on model {sae.cfg.model_id!r} but the loaded model is "
            f"{model.model_id!r}"
        )
