"""Steering vectors from SAE latents: a feature's decoder direction at its typical size.

``h ← h + α·v`` with ``v = a_typ · W_dec[i]`` at the SAE's hook point (the residual
stream after block ``layer``), where ``W_dec[i]`` is feature ``i``'s decoder row (its
contribution to ``x̂`` per unit of activation, in the model's units: the input scale is
folded into the weights) and ``a_typ`` is the feature's **typical maximum activation** on
held-out text: over the windows in which the feature fires, the median of each window's
largest activation of it. So **α = 1 adds the feature as strongly as it typically peaks
in a window of text**, α = 2 twice that. (Not the single largest activation: one outlier
would set the scale.)

Held-out text: ``cfg.tokens`` tokens of the corpus's held-out split (or the user's text)
packed into windows as for ``interp sae eval``; position 0 of every window (the attention
sink) is left out. A feature that never fires there is refused: its scale is undefined.
In use::

    vec = feature_vector(model, sae, heldout, FeatureVectorConfig(feature=123))
    with steer(model, vec, alpha=4.0):
        interp.generate(model, prompts)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from jaxtyping import Float
from torch import Tensor

from interp.activations.capture import forward_with_hooks
from interp.data.windows import pack_windows, require_text
from interp.errors import InterpError
from interp.models.loading import Model
from interp.profiling.session import phase
from interp.runs.progress import make_progress
from interp.schema import Config, at_least, seed_range, setting
from interp.steering.vectors import SteeringVector
from saes.autointerp.store import explanations_beside
from saes.loading import LoadedSAE, unpack_sae
from saes.sae import SparseAutoencoder

SCALE_NOTE = ("SAE feature decoder row × the feature's typical maximum activation (median "
              "over held-out windows where it fires of the window's largest activation): "
              "alpha = 1 adds the feature at its typical peak")


@dataclass(frozen=True)
class FeatureVectorConfig(Config):
    """Which feature, and how much held-out text sets its scale."""

    feature: int = setting(help="The SAE latent (a negative index counts from the end).")
    tokens: int = setting(65_536, check=at_least(1),
                          help="Held-out tokens that set the feature's typical maximum.")
    seq_len: int = setting(128, check=at_least(3), help="Tokens per text window.")
    batch_size: int = setting(16, check=at_least(1), help="Text windows per forward pass.")
    seed: int = setting(0, check=seed_range, help="Seeds the windows.")

    @property
    def n_windows(self) -> int:
        """Text windows of ``seq_len`` that cover ``tokens`` (``seq_len − 1`` tokens each: position
        0 is left out), at least 1."""
        return max(1, math.ceil(self.tokens / (self.seq_len - 1)))


def check_feature(sae: SparseAutoencoder, feature: int, option: str = "--feature") -> int:
    """``feature`` as a valid latent index of ``sae`` (negative counts from the end)."""
    m = sae.cfg.d_sae
    if isinstance(feature, bool) or not isinstance(feature, int) or not -m <= feature < m:
        raise InterpError(f"{option} {feature} out of range: the SAE has {m} features "
                          f"(0–{m - 1})")
    return feature % m


def sae_layer(model: Model, sae: SparseAutoencoder) -> int:
    """The layer whose residual stream the SAE reads (steering adds there)."""
    layer = sae.cfg.layer
    if layer is None or sae.cfg.hook_point != model.resid_hook(layer):
        raise InterpError(f"the SAE reads {sae.cfg.hook_point}, not a residual stream "
                          "(blocks.L.hook_resid_post): it cannot give a steering vector")
    if sae.cfg.d_in != model.d_model:
        raise InterpError(f"the SAE reads width {sae.cfg.d_in} but the model's d_model is "
                          f"{model.d_model}")
    return model.check_layer(layer)


@torch.no_grad()
def window_maxima(
    model: Model, sae: SparseAutoencoder, docs: Sequence[str], features: Sequence[int],
    cfg: FeatureVectorConfig, progress: bool | None = None,
) -> Float[Tensor, "windows features"]:
    """Each held-out window's largest activation of each of ``features`` (0: no firing)."""
    hook = sae.cfg.hook_point
    require_text(model, docs, need=cfg.n_windows * cfg.seq_len,
                 what="a feature's steering scale", asked=f"tokens={cfg.tokens:,}",
                 reads=f"{cfg.n_windows:,} windows of seq_len={cfg.seq_len}",
                 fix="lower tokens or give more held-out text")
    ids = pack_windows(model, docs, seq_len=cfg.seq_len, n_windows=cfg.n_windows,
                       seed=cfg.seed)
    cols = torch.tensor(list(features), dtype=torch.long)
    out = []
    bar = make_progress(enabled=progress)
    with bar:
        task = bar.add_task("feature activations", total=ids.shape[0], info="")
        for i in range(0, ids.shape[0], cfg.batch_size):
            batch = ids[i:i + cfg.batch_size].to(model.device)
            with phase("forward"):
                acts = forward_with_hooks(model, batch, None, [hook])[0][hook]
            with phase("encode"):
                f = sae.encode(acts[:, 1:].to(sae.W_enc.device, torch.float32))
                out.append(f[..., cols.to(f.device)].amax(1).clamp_min(0).cpu())
            bar.update(task, advance=batch.shape[0])
    return torch.cat(out)


def typical_max(maxima: Float[Tensor, " windows"]) -> float:
    """Median of the window maxima over windows where the feature fired (NaN: never)."""
    fired = maxima[maxima > 0]
    return float(fired.median()) if fired.numel() else math.nan


def feature_vector(
    model: Model, sae: SparseAutoencoder | LoadedSAE, docs: Sequence[str],
    cfg: FeatureVectorConfig, *, source: str = "", progress: bool | None = None,
) -> SteeringVector:
    """Feature ``cfg.feature``'s steering vector (see the module doc for the scale).

    ``sae`` is an SAE or what :func:`saes.loading.load_sae` returns (as the evaluation
    and the browser take); a loaded SAE's folder is the vector's ``source`` unless one is
    given.

    Raises:
        InterpError: the feature index is out of range, the SAE does not read a residual
            stream of ``model``, or the feature never fires on the held-out windows.
    """
    sae, loaded = unpack_sae(sae)
    if loaded is not None and not source:
        source = str(loaded.path)
    feature = check_feature(sae, cfg.feature)
    layer = sae_layer(model, sae)
    maxima = window_maxima(model, sae, docs, [feature], cfg, progress)[:, 0]
    scale = typical_max(maxima)
    if not math.isfinite(scale):
        raise InterpError(f"feature {feature} never fires on {maxima.shape[0]} held-out "
                          f"windows ({cfg.n_windows * (cfg.seq_len - 1)} tokens): it has no "
                          "typical activation to scale a steering vector by")
    direction = sae.W_dec[feature].detach().float().cpu()
    n_fired = int((maxima > 0).sum())
    explained: dict[str, Any] = {}
    beside = explanations_beside(loaded.path, sae.cfg.d_sae) if loaded is not None else None
    known = beside.get(feature) if beside is not None else None
    if known is not None:  # the SAE's explanations.jsonl names it: say so where it shows
        explained = {"explanation": known.label, "explanation_score": known.badge()}
        source = f"{source} · feature {feature}: {known.label} ({known.badge()})"
    return SteeringVector(
        direction * scale, layer, model.model_id, "sae_feature", source, 0, SCALE_NOTE,
        extra={"feature": feature, "typical_max_activation": scale,
               "windows_fired": n_fired, "windows": int(maxima.shape[0]),
               "decoder_norm": float(direction.norm()),
               "architecture": sae.cfg.architecture, "sae_hook_point": sae.cfg.hook_point,
               "feature_config": cfg.to_dict(), **explained},
    )
