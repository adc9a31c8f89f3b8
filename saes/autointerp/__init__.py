"""Automatic interpretation of SAE features, offline, scored against null controls.

:func:`~saes.autointerp.explain.run_autointerp` reads each feature's contexts
(:mod:`~saes.autointerp.contexts`), explains them (:mod:`~saes.autointerp.explainers`: the
programmatic baseline and a language-model explainer), scores the explanations by
detection and fuzzing from a scorer model's log-probabilities
(:mod:`~saes.autointerp.scoring`) beside a shuffled-explanation control
(:mod:`~saes.autointerp.metrics`), and returns an
:class:`~saes.autointerp.results.AutoInterpResult`; :mod:`~saes.autointerp.store` writes
and reads ``explanations.jsonl``.
"""

from saes.autointerp.explain import run_autointerp
from saes.autointerp.explainers import Cue, lm_explanations, programmatic_explanation, token_cues
from saes.autointerp.results import AutoInterpConfig, AutoInterpResult
from saes.autointerp.scoring import (
    DETECTION,
    FUZZING,
    ScoringPrompt,
    scores,
    scoring_prompts,
    shared_prefix_length,
)

__all__ = ["DETECTION", "FUZZING", "AutoInterpConfig", "AutoInterpResult", "Cue",
           "ScoringPrompt", "lm_explanations", "programmatic_explanation", "run_autointerp",
           "scores", "scoring_prompts", "shared_prefix_length", "token_cues"]
