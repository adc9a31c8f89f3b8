"""A circuit task's pairs made ready for a patching run, once for every tool that patches.

:func:`prepare_pairs` loads the task, checks the grouping column, tokenizes the pairs,
measures each pair's clean and corrupted logit difference and keeps the pairs whose gap is
at least ``min_gap`` (a smaller gap cannot normalise an effect): the prologue activation
patching (:func:`~interp.circuits.patch.run_patch`) and edge attribution
(:func:`~interp.causal.edges.run_edges`) share. Its :meth:`PreparedPairs.summary` is the
task's record in their results.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from jaxtyping import Float
from torch import Tensor

from interp.circuits.patching import pair_lds
from interp.circuits.results import TaskSummary
from interp.circuits.tasks import Task, TokenizedTask, load_task, tokenize_task
from interp.errors import InterpError
from interp.models.loading import Model


def group_column(task: Task, group_by: str) -> str | None:
    """The column that groups the pairs: ``group_by`` itself (checked: every pair has it),
    ``template`` for ``auto`` when every pair has one, ``None`` for ``none`` (or ``auto``
    without templates)."""
    if group_by == "none":
        return None
    if group_by == "auto":
        return "template" if "template" in task.column_names() else None
    task.groups(group_by)  # the one-line error when a pair lacks it
    return group_by


class TaskSettings(Protocol):
    """A config that names a circuit task's pairs (``PatchConfig``, ``EdgeConfig``)."""

    task: str
    limit: int | None
    group_by: str


def check_task(config: TaskSettings) -> None:
    """Refuse a missing or empty task, or a grouping column it lacks, before a model loads."""
    group_column(load_task(config.task, config.limit), config.group_by)


@dataclass
class PreparedPairs:
    """The pairs a run patches: those whose logit-difference gap is at least ``min_gap``."""

    task: Task
    #: The column the pairs are grouped by (None: not grouped).
    column: str | None
    #: The kept pairs, tokenized.
    tokens: TokenizedTask
    #: Indices of the kept pairs among the task's.
    keep: list[int]
    clean: Float[Tensor, " n"]
    corrupted: Float[Tensor, " n"]
    n_read: int
    min_gap: float

    def summary(self) -> TaskSummary:
        """The task's record in a result: its source and hash, the pairs read, used and left
        out (and why), the positions and every kept pair's logit differences."""
        t = self.task
        return TaskSummary(
            name=t.name, source=t.source, sha256=t.sha256, n_read=self.n_read,
            n_used=len(self.keep), n_left_out=self.n_read - len(self.keep),
            left_out_reason=f"|clean LD - corrupted LD| < {self.min_gap:g}",
            positions=list(self.tokens.positions), clean_ld=self.clean.tolist(),
            corrupted_ld=self.corrupted.tolist())


def prepare_pairs(model: Model, task: str, *, limit: int | None, min_gap: float,
                  group_by: str, batch_size: int,
                  before_pass: Callable[[], None] | None = None) -> PreparedPairs:
    """Load ``task``, check ``group_by``, tokenize, and keep the pairs whose clean −
    corrupted logit difference is at least ``min_gap`` in size (one forward pass over the
    pairs, ``batch_size`` rows at a time); none kept → :class:`InterpError`.
    ``before_pass``: the caller's own checks, run after the task's and before any pass."""
    loaded = load_task(task, limit)
    column = group_column(loaded, group_by)  # a bad column fails before any pass
    tt_all = tokenize_task(model, loaded)
    if before_pass is not None:
        before_pass()
    clean_all, corr_all = pair_lds(model, tt_all, batch_size)
    gap = clean_all - corr_all
    keep = [i for i in range(len(tt_all)) if abs(float(gap[i])) >= min_gap]
    if not keep:
        raise InterpError(f"every pair's clean − corrupted logit difference gap is below "
                          f"{min_gap}; nothing to normalise")
    return PreparedPairs(task=loaded, column=column, tokens=tt_all.subset(keep), keep=keep,
                         clean=clean_all[keep].cpu(), corrupted=corr_all[keep].cpu(),
                         n_read=len(tt_all), min_gap=min_gap)


__all__ = ["PreparedPairs", "TaskSettings", "check_task", "group_column", "prepare_pairs"]
