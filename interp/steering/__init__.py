"""Steering vectors: contrast-pair directions, injection during generation, α × layer sweeps."""

from __future__ import annotations

from interp.steering.sweep import (
    SweepConfig,
    SweepResult,
    SweepText,
    SweetSpot,
    run_sweep,
    sweep_prompts,
)
from interp.steering.vectors import (
    ContrastPairs,
    SteeringVector,
    from_probe,
    load_pairs,
    load_vector,
    steer,
    train_vector,
)

__all__ = [
    "ContrastPairs",
    "SteeringVector",
    "SweepConfig",
    "SweepResult",
    "SweepText",
    "SweetSpot",
    "from_probe",
    "load_pairs",
    "load_vector",
    "run_sweep",
    "steer",
    "sweep_prompts",
    "train_vector",
]
