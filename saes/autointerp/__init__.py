"""Automatic interpretation of SAE features (issue 32, in progress): detection scoring
read from a scorer model's log-probabilities (:mod:`saes.autointerp.detection`) and the
programmatic explainer, the baseline (:mod:`saes.autointerp.explainers`)."""

from saes.autointerp.detection import (
    detection_prompts,
    detection_scores,
    shared_prefix_length,
)
from saes.autointerp.explainers import Cue, programmatic_explanation, token_cues

__all__ = ["Cue", "detection_prompts", "detection_scores", "programmatic_explanation",
           "shared_prefix_length", "token_cues"]
