"""Seed noise and comparisons: is a difference bigger than the noise?

:func:`~interp.noise.seeds.summarise_seeds` summarises a verb's runs under several seeds
(``interp seeds K --out DIR -- VERB ARGS…``); :func:`~interp.noise.compare.compare_results`
compares two results or two seed groups metric by metric (``interp compare A B``).
"""

from interp.noise.compare import compare_results
from interp.noise.results import CompareResult, MetricComparison, MetricSummary, SeedsResult
from interp.noise.seeds import summarise_seeds

__all__ = ["CompareResult", "MetricComparison", "MetricSummary", "SeedsResult",
           "compare_results", "summarise_seeds"]
