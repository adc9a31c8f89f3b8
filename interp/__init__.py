"""interp: mechanistic interpretability for transformer language models.

Quick start::

    import interp
    model = interp.load()                       # embedded SmolLM2-135M-Instruct
    acts = interp.capture(model, ["The capital of France is"], layers=[6])
    readout = interp.run_lens(model, "The capital of France is")   # logit lens, every layer

Every tool is one call that takes a config dataclass and returns a result
dataclass (``to_dict()`` is what the CLI writes to ``results.json``). The tools
live in subpackages named for what they do (:mod:`interp.lenses`,
:mod:`interp.probing`, :mod:`interp.steering`, ...); their entry points are
re-exported here. Importing ``interp`` changes no environment variable.
"""

from __future__ import annotations

__version__ = "0.1.0"

from typing import TYPE_CHECKING

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
from interp.lenses.logit import LensResult, LogitLens
from interp.lenses.readout import LensConfig, LensReadout, run_lens
from interp.models.loading import Model, list_models, load

#: Entry points imported on first use (PEP 562), so that ``import interp`` (and every
#: CLI start) does not pay for scikit-learn, VADER and the trainers it may not need.
_LAZY = {
    "PatchConfig": ("interp.circuits.results", "PatchConfig"),
    "PatchResult": ("interp.circuits.results", "PatchResult"),
    "AttentionConfig": ("interp.circuits.results", "AttentionConfig"),
    "AttentionResult": ("interp.circuits.results", "AttentionResult"),
    "run_patch": ("interp.circuits.experiment", "run_patch"),
    "run_attention": ("interp.circuits.attention", "run_attention"),
    "profile": ("interp.profiling.session", "profile"),
    "ProfileConfig": ("interp.profiling.results", "ProfileConfig"),
    "ProfileResult": ("interp.profiling.results", "ProfileResult"),
    "VerifyConfig": ("interp.verify.results", "VerifyConfig"),
    "VerifyResult": ("interp.verify.results", "VerifyResult"),
    "verify_model": ("interp.verify.checks", "verify_model"),
    "LensEvalConfig": ("interp.lenses.evaluation", "LensEvalConfig"),
    "LensEval": ("interp.lenses.evaluation", "LensEval"),
    "evaluate_lenses": ("interp.lenses.evaluation", "evaluate_lenses"),
    "evaluate_tuned_lens": ("interp.lenses.evaluation", "evaluate_tuned_lens"),
    "TunedLensTrainConfig": ("interp.lenses.training", "TunedLensTrainConfig"),
    "TunedLensTrainResult": ("interp.lenses.training", "TunedLensTrainResult"),
    "train_tuned_lens": ("interp.lenses.training", "train_tuned_lens"),
    "TunedLens": ("interp.lenses.tuned", "TunedLens"),
    "load_tuned_lens": ("interp.lenses.tuned", "load_tuned_lens"),
    "AblationConfig": ("interp.probing.ablation", "AblationConfig"),
    "ablate_probe": ("interp.probing.ablation", "ablate_probe"),
    "run_ablation": ("interp.probing.ablation", "run_ablation"),
    "load_probe_dataset": ("interp.probing.probes", "load_probe_dataset"),
    "run_probe": ("interp.probing.probes", "run_probe"),
    "AblationResult": ("interp.probing.results", "AblationResult"),
    "ProbeConfig": ("interp.probing.results", "ProbeConfig"),
    "ProbeResult": ("interp.probing.results", "ProbeResult"),
    "SweepConfig": ("interp.steering.sweep", "SweepConfig"),
    "SweepResult": ("interp.steering.sweep", "SweepResult"),
    "run_sweep": ("interp.steering.sweep", "run_sweep"),
    "sweep_prompts": ("interp.steering.sweep", "sweep_prompts"),
    "SteeringVector": ("interp.steering.vectors", "SteeringVector"),
    "load_pairs": ("interp.steering.vectors", "load_pairs"),
    "load_vector": ("interp.steering.vectors", "load_vector"),
    "steer": ("interp.steering.vectors", "steer"),
    "train_vector": ("interp.steering.vectors", "train_vector"),
}

if TYPE_CHECKING:
    from interp.circuits.attention import run_attention
    from interp.circuits.experiment import run_patch
    from interp.circuits.results import (
        AttentionConfig,
        AttentionResult,
        PatchConfig,
        PatchResult,
    )
    from interp.lenses.evaluation import (
        LensEval,
        LensEvalConfig,
        evaluate_lenses,
        evaluate_tuned_lens,
    )
    from interp.lenses.training import (
        TunedLensTrainConfig,
        TunedLensTrainResult,
        train_tuned_lens,
    )
    from interp.lenses.tuned import TunedLens, load_tuned_lens
    from interp.probing.ablation import AblationConfig, ablate_probe, run_ablation
    from interp.probing.probes import load_probe_dataset, run_probe
    from interp.probing.results import AblationResult, ProbeConfig, ProbeResult
    from interp.profiling.results import ProfileConfig, ProfileResult
    from interp.profiling.session import profile
    from interp.steering.sweep import SweepConfig, SweepResult, run_sweep, sweep_prompts
    from interp.steering.vectors import (
        SteeringVector,
        load_pairs,
        load_vector,
        steer,
        train_vector,
    )
    from interp.verify.checks import verify_model
    from interp.verify.results import VerifyConfig, VerifyResult


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'interp' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "AblationConfig",
    "AblationResult",
    "Activations",
    "AttentionConfig",
    "AttentionResult",
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
    "PatchConfig",
    "PatchResult",
    "ProbeConfig",
    "ProbeResult",
    "ProfileConfig",
    "ProfileResult",
    "SteeringVector",
    "SweepConfig",
    "SweepResult",
    "TunedLens",
    "TunedLensTrainConfig",
    "TunedLensTrainResult",
    "VerifyConfig",
    "VerifyResult",
    "ablate_probe",
    "profile",
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
    "run_ablation",
    "run_capture",
    "run_lens",
    "run_patch",
    "run_attention",
    "run_probe",
    "run_sweep",
    "steer",
    "sweep_prompts",
    "train_tuned_lens",
    "train_vector",
    "verify_model",
]
