"""Causal validation: interchange interventions in subspaces and distributed alignment
search (:mod:`interp.causal.interchange`; :func:`~interp.causal.das.run_das` over layers,
with its controls); edge attribution (eap-clean, eap-corrupted, eap-ig) against exact path patching
(:mod:`interp.causal.edge_effects`; :func:`~interp.causal.edges.run_edges`)."""

from interp.causal.das import run_das
from interp.causal.edge_effects import circuit_lds, edge_attribution, exact_edges, graph_of
from interp.causal.edges import run_edges
from interp.causal.interchange import (
    interchange,
    interchange_lds,
    intervened_ld,
    position_mask,
    random_basis,
    residuals,
    train_das,
)
from interp.causal.results import (
    DASConfig,
    DASResult,
    EdgeConfig,
    EdgeResult,
    LayerIIA,
    Rate,
)

__all__ = ["DASConfig", "DASResult", "EdgeConfig", "EdgeResult", "LayerIIA", "Rate",
           "circuit_lds", "edge_attribution", "exact_edges", "graph_of", "interchange",
           "interchange_lds", "intervened_ld", "position_mask", "random_basis", "residuals",
           "run_das", "run_edges", "train_das"]
