"""Linear probes on held-out data with controls, and the ablation check of their direction.

``run_probe(model, dataset, ProbeConfig(...))`` returns a :class:`ProbeResult`;
``ablate_probe(model, dataset, result, AblationConfig(...))`` its ablation check, which
``result.ablation`` carries; ``result.to_dict()`` is ``interp probe --ablate``'s
``results.json``. Figures: :mod:`interp.probing.figures`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from interp.lazy import lazy_names
from interp.probing.results import (
    AblationConfig,
    AblationResult,
    DatasetSummary,
    DirectionReport,
    LayerStats,
    ProbeConfig,
    ProbeResult,
    Verdict,
)

#: Names imported on first use (PEP 562): the fitting code imports scikit-learn (about 1 s),
#: which the CLI's start must not pay for while it only reads the configs.
_LAZY = {
    "ablate_probe": "interp.probing.ablation",
    "balanced_subsample": "interp.probing.ablation",
    "run_ablation": "interp.probing.ablation",
    "ProbeDataset": "interp.probing.probes",
    "fit_probe": "interp.probing.probes",
    "load_probe_dataset": "interp.probing.probes",
    "run_probe": "interp.probing.probes",
    "save_probe": "interp.probing.probes",
}

if TYPE_CHECKING:
    from interp.probing.ablation import ablate_probe, balanced_subsample, run_ablation
    from interp.probing.probes import (
        ProbeDataset,
        fit_probe,
        load_probe_dataset,
        run_probe,
        save_probe,
    )


__getattr__, __dir__ = lazy_names(__name__, _LAZY)

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
