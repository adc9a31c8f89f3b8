"""interp: mechanistic interpretability for transformer language models.

Quick start::

    import interp
    model = interp.load()                       # embedded SmolLM2-135M-Instruct
    acts = interp.capture(model, ["The capital of France is"], layers=[6])
    result = interp.logit_lens(model, "The capital of France is")

Every tool is one call that takes a config dataclass and returns a result
dataclass (``to_dict()`` is what the CLI writes to ``results.json``). The tools
live in subpackages named for what they do (:mod:`interp.lenses`,
:mod:`interp.probing`, :mod:`interp.steering`, ...); their entry points are
re-exported here. Importing ``interp`` changes no environment variable.
"""

from __future__ import annotations

__version__ = "0.1.0"

from interp.activations.capture import Activations, capture, iter_capture
from interp.errors import InterpError
from interp.generation.engine import GenerationConfig, GenerationResult, generate
from interp.lenses.evaluation import EvalConfig as LensEvalConfig
from interp.lenses.evaluation import LensEval, evaluate_lenses
from interp.lenses.logit import LensResult, LogitLens, logit_lens, run_lens
from interp.lenses.training import TrainConfig as TunedLensTrainConfig
from interp.lenses.training import train_tuned_lens
from interp.lenses.tuned import TunedLens, load_tuned_lens
from interp.models.loading import Model, list_models, load
from interp.probing.ablation import AblationResult, run_ablation
from interp.probing.probes import ProbeConfig, ProbeResult, load_probe_dataset, run_probe
from interp.steering.sweep import SweepConfig, run_sweep
from interp.steering.vectors import SteeringVector, load_pairs, load_vector, steer, train_vector

__all__ = [
    "AblationResult",
    "Activations",
    "GenerationConfig",
    "GenerationResult",
    "InterpError",
    "LensEval",
    "LensEvalConfig",
    "LensResult",
    "LogitLens",
    "Model",
    "ProbeConfig",
    "ProbeResult",
    "SteeringVector",
    "SweepConfig",
    "TunedLens",
    "TunedLensTrainConfig",
    "capture",
    "evaluate_lenses",
    "generate",
    "iter_capture",
    "list_models",
    "load",
    "load_probe_dataset",
    "load_pairs",
    "load_tuned_lens",
    "load_vector",
    "logit_lens",
    "run_ablation",
    "run_lens",
    "run_probe",
    "run_sweep",
    "steer",
    "train_tuned_lens",
    "train_vector",
]
