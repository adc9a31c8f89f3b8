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
from interp.lazy import lazy_names
from interp.lenses.logit import LensResult, LogitLens
from interp.lenses.readout import LensConfig, LensReadout, run_lens
from interp.models.loading import Model, list_models, load

#: Entry points imported on first use (PEP 562), so that ``import interp`` (and every
#: CLI start) does not pay for scikit-learn, VADER and the trainers it may not need.
_LAZY = {
    "PatchConfig": "interp.circuits.results",
    "PatchResult": "interp.circuits.results",
    "AttentionConfig": "interp.circuits.results",
    "AttentionResult": "interp.circuits.results",
    "run_patch": "interp.circuits.patch",
    "run_attention": "interp.circuits.attention",
    "profile": "interp.profiling.session",
    "ProfileConfig": "interp.profiling.results",
    "ProfileResult": "interp.profiling.results",
    "VerifyConfig": "interp.verify.results",
    "VerifyResult": "interp.verify.results",
    "verify_model": "interp.verify.checks",
    "LensEvalConfig": "interp.lenses.evaluation",
    "LensEval": "interp.lenses.evaluation",
    "evaluate_lenses": "interp.lenses.evaluation",
    "evaluate_tuned_lens": "interp.lenses.evaluation",
    "TunedLensTrainConfig": "interp.lenses.training",
    "TunedLensTrainResult": "interp.lenses.training",
    "train_tuned_lens": "interp.lenses.training",
    "TunedLens": "interp.lenses.tuned",
    "load_tuned_lens": "interp.lenses.tuned",
    "AblationConfig": "interp.probing.ablation",
    "ablate_probe": "interp.probing.ablation",
    "run_ablation": "interp.probing.ablation",
    "load_probe_dataset": "interp.probing.probes",
    "run_probe": "interp.probing.probes",
    "AblationResult": "interp.probing.results",
    "ProbeConfig": "interp.probing.results",
    "ProbeResult": "interp.probing.results",
    "SweepConfig": "interp.steering.sweep",
    "SweepResult": "interp.steering.sweep",
    "run_sweep": "interp.steering.sweep",
    "sweep_prompts": "interp.steering.sweep",
    "SteeringVector": "interp.steering.vectors",
    "load_pairs": "interp.steering.vectors",
    "load_vector": "interp.steering.vectors",
    "steer": "interp.steering.vectors",
    "train_vector": "interp.steering.vectors",
}

if TYPE_CHECKING:
    from interp.circuits.attention import run_attention
    from interp.circuits.patch import run_patch
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


__getattr__, __dir__ = lazy_names(__name__, _LAZY)

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
