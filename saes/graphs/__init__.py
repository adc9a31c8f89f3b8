"""Attribution graphs on transcoders (Ameisen et al. 2025), checked against the real model.

::

    from saes.graphs import AttributionConfig, run_attribution
    from saes.transcoders import load_transcoders
    graph = run_attribution(model, load_transcoders("runs/tc", model),
                            "The capital of France is", AttributionConfig())
    graph.replacement_score, graph.agreement["spearman_real"]
"""

from saes.graphs.graph import run_attribution
from saes.graphs.results import AttributionConfig, AttributionGraph, FeatureCheck

__all__ = ["AttributionConfig", "AttributionGraph", "FeatureCheck", "run_attribution"]
