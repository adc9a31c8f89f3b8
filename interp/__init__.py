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

from interp.activations.capture import (
    Activations,
    CaptureConfig,
    CaptureResult,
    capture,
    iter_capture,
    run_capture,
)
from interp.errors import InterpError
from interp.generation.engine import GenerationConfig, GenerationResult, generate
from interp.lenses.evaluation import EvalConfig as LensEvalConfig
from interp.lenses.evaluation import LensEval, evaluate_lenses, evaluate_tuned_lens
from interp.lenses.logit import LensResult, LogitLens, logit_lens, run_lens
from interp.lenses.readout import LensConfig, LensReadout, run_lenses
from interp.lenses.training import TrainConfig as TunedLensTrainConfig
from interp.lenses.training import TrainResult as TunedLensTrainResult
from interp.lenses.training import train_tuned_lens
from interp.lenses.tuned import TunedLens, load_tuned_lens
from interp.models.loading import Model, list_models, load
from interp.probing.ablation import AblationConfig, ablate_probe, run_ablation
from interp.probing.probes import load_probe_dataset, run_probe
from interp.probing.results import AblationResult, ProbeConfig, ProbeResult
from interp.steering.sweep import SweepConfig, SweepResult, run_sweep, sweep_prompts
from interp.steering.vectors import SteeringVector, load_pairs, load_vector, steer, train_vector

__all__ = [
    "AblationConfig",
    "AblationResult",
    "Activations",
    "CaptureConfig",
    "CaptureResult",
    "GenerationConfig",
    "GenerationResult",
    "InterpError",
    "LensConfig",
    "LensEval",
    "LensEvalConfig",
    "LensReadout",
    "LensResult",
    "LogitLens",
    "Model",
    "ProbeConfig",
    "ProbeResult",
    "SteeringVector",
    "SweepConfig",
    "SweepResult",
    "TunedLens",
    "TunedLensTrainConfig",
    "TunedLensTrainResult",
    "ablate_probe",
    "capture",
    "evaluate_lenses",
    "evaluate_tuned_lens",
    "generate",
    "iter_capture",
    "list_models",
    "load",
    "load_pairs",
    "load_probe_dataset",
    "load_tuned_lens",
    "load_vector",
    "logit_lens",
    "run_ablation",
    "run_capture",
    "run_lens",
    "run_lenses",
    "run_probe",
    "run_sweep",
    "steer",
    "sweep_prompts",
    "train_tuned_lens",
    "train_vector",
]
