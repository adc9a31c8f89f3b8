"""Automatic interpretation of SAE features (issue 32, in progress): detection scoring
read from a scorer model's log-probabilities (:mod:`saes.autointerp.detection`)."""

from saes.autointerp.detection import (
    detection_prompts,
    detection_scores,
    shared_prefix_length,
)

__all__ = ["detection_prompts", "detection_scores", "shared_prefix_length"]
