"""Linear probes on held-out data with controls, and the ablation check of their direction.

``run_probe(model, dataset, ProbeConfig(...))`` returns a :class:`ProbeResult`;
``ablate_probe(model, dataset, result, AblationConfig(...))`` its ablation check, which
``result.ablation`` carries; ``result.to_dict()`` is ``interp probe --ablate``'s
``results.json``. Figures: :mod:`interp.probing.figures`.
"""

from __future__ import annotations

from interp.probing.ablation import (
    AblationConfig,
    ablate_probe,
    balanced_subsample,
    run_ablation,
)
from interp.probing.probes import (
    ProbeDataset,
    fit_probe,
    load_probe_dataset,
    run_probe,
    save_probe,
)
from interp.probing.results import (
    AblationResult,
    DatasetSummary,
    DirectionReport,
    LayerStats,
    ProbeConfig,
    ProbeResult,
    Verdict,
)

__all__ = [
    "AblationConfig",
    "AblationResult",
    "DatasetSummary",
    "DirectionReport",
    "LayerStats",
    "ProbeConfig",
    "ProbeDataset",
    "ProbeResult",
    "Verdict",
    "ablate_probe",
    "balanced_subsample",
    "fit_probe",
    "load_probe_dataset",
    "run_ablation",
    "run_probe",
    "save_probe",
]
