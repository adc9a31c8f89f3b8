"""Causal validation: interchange interventions in subspaces and distributed alignment
search (:mod:`interp.causal.interchange`)."""

from interp.causal.interchange import (
    interchange,
    interchange_lds,
    intervened_ld,
    position_mask,
    random_basis,
    residuals,
    train_das,
)

__all__ = ["interchange", "interchange_lds", "intervened_ld", "position_mask",
           "random_basis", "residuals", "train_das"]
