"""Linear probes on held-out data with controls, and the ablation check of their direction."""

from __future__ import annotations

from interp.probing.ablation import AblationResult, run_ablation
from interp.probing.probes import (
    ProbeConfig,
    ProbeDataset,
    ProbeResult,
    fit_probe,
    load_probe_dataset,
    run_probe,
    save_probe,
)

__all__ = [
    "AblationResult",
    "ProbeConfig",
    "ProbeDataset",
    "ProbeResult",
    "fit_probe",
    "load_probe_dataset",
    "run_ablation",
    "run_probe",
    "save_probe",
]
