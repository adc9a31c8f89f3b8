"""Steering vectors: contrast-pair directions, injection during generation, α × layer sweeps."""

from __future__ import annotations

from interp.steering.sweep import SweepConfig, run_sweep
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
    "from_probe",
    "load_pairs",
    "load_vector",
    "run_sweep",
    "steer",
    "train_vector",
]
