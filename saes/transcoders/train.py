"""Training transcoders: the SAE trainer (:mod:`saes.train`) on ``[MLP input | MLP output]``
rows, several layers from one model pass, resumable.

Each layer is a run folder ``OUT/layer-L`` with ``checkpoint/`` while training and
``transcoder/`` at the end (:func:`saes.train.layer_dir`); the activation store reads both
hook points of each layer from the same forward pass (:data:`saes.store.SITES` ``"mlp"``),
and every chunk of windows runs through the model once for all layers, up to the deepest.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from interp.models.loading import Model
from interp.schema import setting
from saes.architectures import Architecture, TopKConfig
from saes.store import site_hooks
from saes.train import SAERun, SAETrainConfig, SAETrainResult, train_saes
from saes.transcoders.model import TranscoderConfig

TRANSCODER_SUBDIR = "transcoder"
CHECKPOINT_KIND = "transcoder_checkpoint"


@dataclass(frozen=True)
class TranscoderTrainConfig(SAETrainConfig):
    """Settings of one layer's transcoder run: :class:`~saes.train.SAETrainConfig`'s (TopK,
    k 32 by default) and the skip path. ``layer`` is the block whose MLP is replaced."""

    site: ClassVar[str] = "mlp"
    noun: ClassVar[str] = "transcoder"

    arch: Architecture = setting(default_factory=TopKConfig, cli=False,
                                 help="The architecture and its settings.")
    # measured at layer 6 of SmolLM2, TopK k 32, d_sae 4608 (held-out NMSE of the MLP output):
    # 200k tokens: 0.83 at 1e-3, 0.59 at 4e-3, 0.55 at 1e-2, 0.57 at 2e-2; 1M tokens: 0.42 at
    # 4e-3, 0.44 at 1e-2 (bench/README.md)
    lr: float = setting(4e-3, help="Adam's learning rate.")
    skip: bool = setting(False, help="Add a linear skip path from the MLP input (a skip "
                                     "transcoder, Paulo et al. 2025).")

    def check(self) -> None:
        """:meth:`saes.train.SAETrainConfig.check`; dead latents are not resampled (AuxK
        revives them)."""
        super().check()
        if self.resample_every:
            raise self.error("resample_every", "must be 0 for transcoders (TopK's AuxK "
                             "revives dead latents)", self.resample_every)

    def sae_config(self, model: Model) -> TranscoderConfig:
        """The :class:`TranscoderConfig` of the transcoder this run trains on ``model``."""
        hook_in, hook_out = site_hooks(model, self.layer, "mlp")
        return TranscoderConfig(d_in=model.d_model, d_sae=self.d_sae, hook_point=hook_in,
                                output_hook=hook_out, layer=self.layer,
                                model_id=model.model_id, skip=self.skip,
                                **self.arch.sae_fields())


class TranscoderRun(SAERun):
    """One layer's transcoder run (an :class:`~saes.train.SAERun` writing ``transcoder/``)."""

    checkpoint_kind = CHECKPOINT_KIND
    final_subdir = TRANSCODER_SUBDIR
    what = "a transcoder run"
    loss_name = "transcoder loss"


def train_transcoders(
    model: Model,
    docs: Sequence[str],
    out_dir: str | Path,
    layers: Sequence[int],
    cfg: TranscoderTrainConfig | None = None,
    *,
    data: dict[str, Any] | None = None,
    cache_dir: str | Path | None = None,
    stop_at: int | None = None,
    manifest: dict[str, Any] | None = None,
    progress: bool | None = None,
    on_checkpoint: Callable[[int], None] | None = None,
) -> dict[int, SAETrainResult]:
    """Train (or resume) one transcoder per layer of ``layers`` from shared forward passes,
    each into ``out_dir/layer-L`` (``transcoder/`` when done); results by layer.

    ``cfg.layer`` is ignored. See :func:`saes.train.train_saes` for ``data``, ``cache_dir``,
    ``stop_at`` and ``on_checkpoint``.
    """
    return train_saes(model, docs, out_dir, layers, cfg or TranscoderTrainConfig(), data=data,
                      cache_dir=cache_dir, stop_at=stop_at, manifest=manifest,
                      progress=progress, on_checkpoint=on_checkpoint, run_class=TranscoderRun)


__all__ = ["TRANSCODER_SUBDIR", "TranscoderRun", "TranscoderTrainConfig", "train_transcoders"]
