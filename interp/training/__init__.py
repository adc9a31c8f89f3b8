"""Training, once for every trainer: the resumable loop the tuned lens and SAEs share
(:mod:`interp.training.loop`)."""

from interp.training.loop import CHECKPOINT_SUBDIR, ResumableRun, barrier, train_steps

__all__ = ["CHECKPOINT_SUBDIR", "ResumableRun", "barrier", "train_steps"]
