"""Lenses: decode the residual stream at every layer (logit lens, tuned lens).

- :mod:`interp.lenses.logit`: the shared unembedding, the logit lens, KL/entropy;
- :mod:`interp.lenses.tuned`: the tuned lens (affine translators) and its artifact;
- :mod:`interp.lenses.training`: training a tuned lens (resumable);
- :mod:`interp.lenses.evaluation`: held-out KL/CE/entropy per layer, logit vs tuned.
"""

from __future__ import annotations

from interp.lenses.evaluation import EvalConfig as LensEvalConfig
from interp.lenses.evaluation import LensEval, evaluate_lenses
from interp.lenses.logit import Lens, LensResult, LogitLens, Unembed, logit_lens, run_lens
from interp.lenses.training import TrainConfig as TunedLensTrainConfig
from interp.lenses.training import TrainResult as TunedLensTrainResult
from interp.lenses.training import train_tuned_lens
from interp.lenses.tuned import TunedLens, load_tuned_lens

__all__ = [
    "Lens",
    "LensEval",
    "LensEvalConfig",
    "LensResult",
    "LogitLens",
    "TunedLens",
    "TunedLensTrainConfig",
    "TunedLensTrainResult",
    "Unembed",
    "evaluate_lenses",
    "load_tuned_lens",
    "logit_lens",
    "run_lens",
    "train_tuned_lens",
]
