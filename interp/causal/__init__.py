"""Causal validation: interchange interventions in subspaces and distributed alignment
search (:mod:`interp.causal.interchange`; :func:`~interp.causal.das.run_das` over layers,
with its controls)."""

from interp.causal.das import run_das
from interp.causal.interchange import (
    interchange,
    interchange_lds,
    intervened_ld,
    position_mask,
    random_basis,
    residuals,
    train_das,
)
from interp.causal.results import DASConfig, DASResult, LayerIIA, Rate

__all__ = ["DASConfig", "DASResult", "LayerIIA", "Rate", "interchange", "interchange_lds",
           "intervened_ld", "position_mask", "random_basis", "residuals", "run_das",
           "train_das"]
