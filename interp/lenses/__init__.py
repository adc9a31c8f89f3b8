"""Lenses: decode the residual stream at every layer (logit lens, tuned lens).

- :mod:`interp.lenses.logit`: the shared unembedding, the logit lens, KL/entropy, and one
  lens's reading of a prompt (:class:`LensResult`);
- :mod:`interp.lenses.tuned`: the tuned lens (affine translators) and its artifact;
- :mod:`interp.lenses.readout`: :func:`~interp.lenses.readout.run_lens`, the one entry point: a
  prompt through the logit lens and an optional tuned lens (``interp lens``);
- :mod:`interp.lenses.training`: training a tuned lens (resumable);
- :mod:`interp.lenses.evaluation`: held-out KL/CE/entropy per layer, logit vs tuned;
- :mod:`interp.lenses.figures`: their matplotlib figures and the token grid's colours.
"""

from __future__ import annotations

from interp.lenses.evaluation import (
    LensEval,
    LensEvalConfig,
    TrainingSummary,
    evaluate_lenses,
    evaluate_tuned_lens,
)
from interp.lenses.logit import Lens, LensResult, LogitLens
from interp.lenses.readout import LensConfig, LensReadout, run_lens
from interp.lenses.training import TunedLensTrainConfig, TunedLensTrainResult, train_tuned_lens
from interp.lenses.tuned import TunedLens, load_tuned_lens
from interp.models.unembedding import Unembed

__all__ = [
    "Lens",
    "LensConfig",
    "LensEval",
    "LensEvalConfig",
    "LensReadout",
    "LensResult",
    "LogitLens",
    "TrainingSummary",
    "TunedLens",
    "TunedLensTrainConfig",
    "TunedLensTrainResult",
    "Unembed",
    "evaluate_lenses",
    "evaluate_tuned_lens",
    "load_tuned_lens",
    "run_lens",
    "train_tuned_lens",
]
