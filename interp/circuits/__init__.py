"""Circuits: which components carry a behaviour.

* :func:`~interp.circuits.patch.run_patch`: exact activation patching over a family of
  components (residual stream, attention and MLP outputs per layer × position, heads), attribution
  patching (AtP, AtP*) and how well it recovers the exact effects, with direct logit attribution on
  the clean runs;
* :func:`~interp.circuits.attention.run_attention`: attention patterns of one prompt at one layer;
* :func:`~interp.circuits.dla.direct_logit_attribution`,
  :func:`~interp.circuits.patching.exact_patch`, :func:`~interp.circuits.attribution.atp`,
  :func:`~interp.circuits.attribution.atp_star`:
  the pieces, for scripts that compose their own experiment.
"""

from __future__ import annotations

from interp.circuits.agreement import compare
from interp.circuits.attention import run_attention
from interp.circuits.attribution import atp, atp_star
from interp.circuits.dla import direct_logit_attribution
from interp.circuits.patch import run_patch
from interp.circuits.patching import Component, components, exact_patch, family_hook, pair_lds
from interp.circuits.results import (
    Agreement,
    AttentionConfig,
    AttentionResult,
    DLAResult,
    Effects,
    PatchConfig,
    PatchResult,
    TaskSummary,
    ci95_over_pairs,
    top_keys,
)
from interp.circuits.tasks import Pair, Task, TokenizedTask, load_task, shipped_tasks, tokenize_task

__all__ = [
    "Agreement",
    "AttentionConfig",
    "AttentionResult",
    "Component",
    "DLAResult",
    "Effects",
    "Pair",
    "PatchConfig",
    "PatchResult",
    "Task",
    "TaskSummary",
    "TokenizedTask",
    "atp",
    "atp_star",
    "ci95_over_pairs",
    "compare",
    "components",
    "direct_logit_attribution",
    "exact_patch",
    "family_hook",
    "load_task",
    "pair_lds",
    "run_attention",
    "run_patch",
    "shipped_tasks",
    "tokenize_task",
    "top_keys",
]
