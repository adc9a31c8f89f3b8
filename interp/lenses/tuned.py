"""The tuned lens (Belrose et al. 2023): a learned affine translator per layer.

For layer ``L`` the translator maps the residual ``h`` into the final layer's basis,

    T_L(h) = h + A_L · h + b_L        (A_L, b_L start at zero: T_L starts as the logit lens)

and the lens reads ``log_softmax(W_U · RMSNorm_final(T_L(h)))`` through the model's own
final norm and unembedding, shared with :class:`interp.lenses.logit.LogitLens`. The last layer has
no translator: its residual *is* the model's output basis, so the lens there is exact.

Training lives in :mod:`interp.lenses.training`, evaluation in :mod:`interp.lenses.evaluation`.

A saved lens is an :mod:`interp.runs.artifacts` folder (kind ``"tuned_lens"``): tensors
``A`` ``[n_layers - 1, d_model, d_model]`` and ``b`` ``[n_layers - 1, d_model]`` plus a config
with the sha256 of the model's unembedding (final norm γ and ``W_U``). Loading into a
model whose unembedding differs fails with one line, even if its name matches. A training
run's lens (the cache's, ``$INTERP_CACHE/lenses/<model>/latest/lens``) that is truncated or
edited is refused in one line saying how to rebuild it; rerunning the training saves it
again from the run's last checkpoint, saying so.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any

import torch
from jaxtyping import Float
from torch import Tensor, nn

from interp.errors import InterpError
from interp.lenses.logit import Lens
from interp.models.loading import Model
from interp.runs.paths import cache_dir

KIND = "tuned_lens"
LENS_SUBDIR = "lens"


def unembedding_hash(model: Model) -> str:
    """sha256 over the final norm's parameters and ``W_U`` (float32 bytes, fixed order)."""
    h = hashlib.sha256()
    modules = [("ln_final", model.bridge.ln_final), ("unembed", model.bridge.unembed)]
    for prefix, module in modules:
        for name, p in sorted(module.named_parameters(), key=lambda kv: kv[0]):
            t = p.detach().to("cpu", torch.float32).contiguous()
            h.update(f"{prefix}.{name}:{list(t.shape)}\n".encode())
            h.update(t.numpy().tobytes())
    return h.hexdigest()


def default_lens_dir(model: Model) -> Path:
    """``$INTERP_CACHE/lenses/<model>/latest``: where training writes and eval looks by default."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", model.model_id).strip("._") or "model"
    return cache_dir() / "lenses" / safe / "latest"


class Translators(nn.Module):
    """The per-layer affine maps, stacked: ``A [L, d, d]`` and ``b [L, d]`` (L = n_layers − 1).

    Zero-initialised: untrained, every translator is the identity (the logit lens).
    """

    def __init__(self, n_translators: int, d_model: int) -> None:
        super().__init__()
        self.A = nn.Parameter(torch.zeros(n_translators, d_model, d_model))
        self.b = nn.Parameter(torch.zeros(n_translators, d_model))

    def forward(self, h: Float[Tensor, "... d_model"], layer: int) -> Float[Tensor, "... d_model"]:
        """``h + h·A_layerᵀ + b_layer``."""
        return h + h @ self.A[layer].T + self.b[layer]


class TunedLens(Lens):
    """Per-layer learned translators followed by the model's own unembedding.

    ``lens.logprobs(resid, layer)`` as for every :class:`~interp.lenses.logit.Lens`. Layers at or
    beyond ``n_translators`` (the last layer) pass through untranslated.
    """

    name = "tuned"

    def __init__(self, model: Model, translators: Translators | None = None) -> None:
        super().__init__(model)
        #: Where the lens was loaded from, its saved config and run manifest (if loaded).
        self.path: Path | None = None
        self.config: dict[str, Any] = {}
        self.manifest: dict[str, Any] = {}
        n = model.n_layers - 1
        self.translators = translators if translators is not None else Translators(n, model.d_model)
        self.translators.to(model.device)
        if self.translators.A.shape != (n, model.d_model, model.d_model):
            raise InterpError(
                f"tuned lens has translators of shape {list(self.translators.A.shape)} "
                f"but the model needs [{n}, {model.d_model}, {model.d_model}]"
            )

    def transform(self, resid: Float[Tensor, "... d_model"], layer: int) -> Tensor:
        """``resid + resid·A_layerᵀ + b_layer`` (:meth:`Translators.forward`); the last layer
        has no translator and is returned as it is."""
        layer = self.model.check_layer(layer)
        if layer >= self.translators.A.shape[0]:
            return resid
        return self.translators(resid.to(self.translators.A.dtype), layer)

    def save(self, path: str | os.PathLike[str], *, config: dict[str, Any],
             manifest: dict[str, Any]) -> Path:
        """Save as a ``tuned_lens`` artifact (config gains ``unembedding_sha256``)."""
        from interp.runs.artifacts import save_artifact

        cfg = dict(config)
        cfg["unembedding_sha256"] = unembedding_hash(self.model)
        cfg["n_layers"] = self.model.n_layers
        return save_artifact(
            path,
            {"A": self.translators.A.detach(), "b": self.translators.b.detach()},
            kind=KIND, config=cfg, model_id=self.model.model_id, d_model=self.model.d_model,
            manifest=manifest,
        )


def resolve_lens_path(path: str | os.PathLike[str] | None, model: Model | None) -> Path:
    """A lens folder from a user path: the artifact itself, or a training run's folder.

    ``path=None`` means the default location for ``model``.
    """
    if path is None and model is None:
        raise InterpError("give a lens path or a model")
    p = (Path(os.path.expanduser(os.fspath(path))) if path is not None
         else default_lens_dir(model))  # type: ignore[arg-type]
    if (p / LENS_SUBDIR / "config.json").is_file():
        return p / LENS_SUBDIR
    if (p / "config.json").is_file():
        return p
    if path is None:
        assert model is not None
        raise InterpError(
            f"no tuned lens for {model.model_id} at {p}: train one with "
            "`interp tuned-lens train`, or pass --lens PATH"
        )
    if (p / "checkpoint" / "config.json").is_file():
        raise InterpError(
            f"tuned-lens run {p} has a checkpoint but no finished lens: rerun the same "
            "`interp tuned-lens train` command to resume it"
        )
    raise InterpError(f"no tuned lens at {p}: expected a lens folder with config.json")


def load_tuned_lens(path: str | os.PathLike[str] | None, model: Model) -> TunedLens:
    """Load a saved lens for ``model`` (``None``: the default location).

    Raises :class:`InterpError` (one line) when the file is missing or corrupt, or the
    lens was trained on another model (name, width, layer count or unembedding differ).
    """
    from interp.runs.artifacts import load_artifact

    folder = resolve_lens_path(path, model)
    try:
        art = load_artifact(folder, kind=KIND)  # sha256 and tensors checked
    except InterpError as exc:
        run = folder.parent
        if folder.name != LENS_SUBDIR or not (run / "checkpoint" / "config.json").is_file():
            raise
        out = "" if path is None else f" with --out {run}"
        raise InterpError(f"{exc}; the lens is not used: run `interp tuned-lens train` again"
                          f"{out} (same settings) to rebuild it from its checkpoint") from None
    cfg = art.config
    if art.d_model != model.d_model or cfg.get("n_layers") != model.n_layers:
        raise InterpError(
            f"tuned lens {folder} was trained on {art.model_id} (d_model {art.d_model}, "
            f"{cfg.get('n_layers')} layers), not on {model.model_id} (d_model "
            f"{model.d_model}, {model.n_layers} layers)"
        )
    want = unembedding_hash(model)
    if cfg.get("unembedding_sha256") != want:
        raise InterpError(
            f"tuned lens {folder} was trained on another model ({art.model_id}, unembedding "
            f"sha256 {str(cfg.get('unembedding_sha256'))[:12]}…) than {model.model_id} "
            f"(unembedding sha256 {want[:12]}…)"
        )
    tr = Translators(model.n_layers - 1, model.d_model)
    with torch.no_grad():
        tr.A.copy_(art.tensors["A"].float())
        tr.b.copy_(art.tensors["b"].float())
    tr.requires_grad_(False)
    lens = TunedLens(model, tr)
    lens.path, lens.config, lens.manifest = folder, cfg, art.manifest
    return lens
