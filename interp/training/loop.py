"""One resumable training loop for every trainer: the tuned lens, SAEs, and what comes next.

A trainer subclasses :class:`ResumableRun` (one thing being trained, in its own run folder)
and writes only its science: the tensors its checkpoint holds, one optimiser step, and what
its progress bar says. :func:`train_steps` runs any number of such runs in lockstep (several
SAE layers from one forward pass) and owns the rest, once for all of them:

* the run folder (a file where a folder should be is refused; locked on rank 0, so a second
  process training into it is refused in one line; a killed save's debris swept);
* resuming: a checkpoint from the same settings and data is loaded (:meth:`ResumableRun.resume`),
  one from other settings is refused in one line naming what differs;
* a checkpoint every ``checkpoint_every`` steps and at the last step, written atomically
  (rank 0 only; all ranks wait for it), and ``progress.json`` after every step;
* the progress bar, the profiler's step marks, wall time and FLOPs (MFU against the cached
  peak of each dtype);
* a loss that is not finite stops training with one line that says which checkpoint is kept.
"""

from __future__ import annotations

import math
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import torch
from torch import Tensor

from interp.errors import InterpError
from interp.mfu import Work
from interp.mfu.peak import peaks_for
from interp.profiling.session import step as profiling_step
from interp.runs.progress import make_progress
from interp.runs.resume import (
    check_resumable,
    load_optimizer_tensors,
    lock_run_dir,
    optimizer_tensors,
    prepare_run_dir,
    remove_debris,
    write_progress,
)

if TYPE_CHECKING:
    from interp.runs.lock import Lock

CHECKPOINT_SUBDIR = "checkpoint"


class ResumableRun(ABC):
    """One thing being trained, resumable from its run folder ``out``.

    A subclass sets :attr:`checkpoint_kind` and :attr:`final_subdir`, builds its weights
    and ``self.optimizer`` in ``__init__`` (then calls :meth:`resume`), and implements
    :meth:`state_tensors`, :meth:`load_state`, :meth:`train_step` and :meth:`info`.
    """

    #: The checkpoint artifact's kind (``interp.runs.artifacts``).
    checkpoint_kind: ClassVar[str]
    #: Where the finished thing is saved inside the run folder (``lens``, ``sae``, …).
    final_subdir: ClassVar[str]
    #: What the refusal of another run's folder calls it ("an SAE run").
    what: ClassVar[str] = "a training run"
    #: What the one-line error when the loss is not finite calls the loss ("SAE loss");
    #: empty: the loss of :attr:`what` ("toy run loss").
    loss_name: ClassVar[str] = ""
    #: The end of the one-line error when the loss is not finite.
    nonfinite_hint: ClassVar[str] = "try a lower learning rate"
    #: Write a checkpoint before the first step of a fresh run (False: the trainer writes
    #: its own first checkpoint, e.g. after an initialisation worth keeping).
    checkpoint_at_start: ClassVar[bool] = True
    #: Check the finished thing (its sha256, its tensors against its config) before calling
    #: the run complete: a damaged one (truncated, edited) is said in one line and saved
    #: again from the last checkpoint instead of being reported as done.
    check_final: ClassVar[bool] = False

    optimizer: torch.optim.Optimizer

    def __init__(self, out: Path, settings: dict[str, Any], *, steps: int,
                 checkpoint_every: int, tokens_per_step: int, model_id: str, d_model: int,
                 device: Any = "cpu", dtypes: Iterable[str] = ("float32",), rank: int = 0,
                 world: int = 1) -> None:
        self.out = Path(out).expanduser()
        self.settings = settings  # {"train": …, "data": …, …}: compared on resume
        self.steps, self.checkpoint_every = steps, checkpoint_every
        self.tokens_per_step = tokens_per_step
        self.model_id, self.d_model = model_id, d_model
        self.rank, self.world = rank, world
        self.ckpt_dir = self.out / CHECKPOINT_SUBDIR
        self.final_dir = self.out / self.final_subdir
        prepare_run_dir(self.out, (CHECKPOINT_SUBDIR, self.final_subdir), sweep=False)
        self._lock: Lock | None = None
        refused: InterpError | None = None
        if rank == 0:  # one lock per run, taken by the rank that writes
            try:
                self._lock = lock_run_dir(self.out)
                weakref.finalize(self, self._lock.release)
            except InterpError as exc:
                refused = exc
        if not ranks_agree(refused is None, world, device):
            raise refused or InterpError(f"run folder {self.out} is in use by another process "
                                         "(rank 0 could not lock it)")
        if rank == 0:  # only once the folder is ours: a killed save's debris
            remove_debris(self.out, (CHECKPOINT_SUBDIR, self.final_subdir))
        self.start = 0
        self.elapsed = 0.0
        self.work, self.work_known = Work(), True  # FLOPs so far, for MFU
        self.peaks = peaks_for(device, tuple(dict.fromkeys(dtypes)))
        self.last_saved = 0
        self.resumed = False  # set by resume(): a checkpoint of this run was loaded
        self._final_ok = False  # check_final: the saved finished thing was found intact

    def close(self) -> None:
        """Let go of the run folder's lock (also at exit, or when the run is collected)."""
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    # ------------------------------------------------------------------ to implement
    @abstractmethod
    def state_tensors(self) -> dict[str, Tensor]:
        """The tensors a checkpoint holds besides the optimiser's state."""

    @abstractmethod
    def load_state(self, tensors: dict[str, Tensor], config: dict[str, Any]) -> None:
        """Restore :meth:`state_tensors` and what :meth:`checkpoint_config` saved."""

    @abstractmethod
    def train_step(self, step: int) -> float:
        """One optimiser step; the loss (all ranks agree on it). FLOPs go to ``self.work``."""

    @abstractmethod
    def info(self) -> str:
        """The progress bar's text after the last step."""

    def checkpoint_config(self) -> dict[str, Any]:
        """Run state a checkpoint's config carries besides the step, time and FLOPs."""
        return {}

    def artifact_options(self) -> dict[str, Any]:
        """Extra keywords of the checkpoint's ``save_artifact`` (hook point, seed, …)."""
        return {}

    def differences(self, have: dict[str, Any]) -> list[str]:
        """How a checkpoint's config differs from this run beyond ``settings``."""
        return []

    # ------------------------------------------------------------------ provided
    @property
    def complete(self) -> bool:
        """Every step done and the finished thing saved (and intact, with
        :attr:`check_final`)."""
        if not (self.start >= self.steps and (self.final_dir / "config.json").is_file()):
            return False
        if self.check_final and not self._final_ok:
            self._final_ok = self._check_final()
            return self._final_ok
        return True

    def _check_final(self) -> bool:
        """Whether the finished thing is intact; a damaged one is removed, saying so in one
        line (the end of the run saves it again from the checkpoint)."""
        from interp.runs.artifacts import load_artifact

        try:
            load_artifact(self.final_dir)
        except InterpError as exc:
            import shutil

            from interp.runs.progress import note

            note(f"{self.final_dir} is damaged ({exc}); rebuilding it from the run's "
                 f"checkpoint (step {self.start})")
            if self.rank == 0:
                shutil.rmtree(self.final_dir, ignore_errors=True)
            return False
        return True

    def resume(self) -> bool:
        """Load the run folder's checkpoint if it is this run's (refuse another run's)."""
        from interp.runs.artifacts import load_artifact

        try:
            if not check_resumable(self.out, self.ckpt_dir, self.settings, self.what,
                                   self.differences):
                return False
            art = load_artifact(self.ckpt_dir, kind=self.checkpoint_kind, d_model=self.d_model)
        except BaseException:
            self.close()  # refused: the folder is left as it was, lock file included
            raise
        tensors = self.local_tensors(art.tensors)
        self.load_state(tensors, art.config)
        load_optimizer_tensors(self.optimizer, tensors)
        self.start = self.last_saved = int(art.config["step"])
        self.elapsed = float(art.config.get("elapsed_s", 0.0))
        self.work_known = "flops_by_dtype" in art.config  # older checkpoints did not count
        self.work = Work(art.config.get("flops_by_dtype"))
        self.resumed = True
        return True

    def checkpoint_tensors(self) -> dict[str, Tensor]:
        """What the checkpoint holds, made on every rank (rank 0 writes it): the run's
        state and the optimiser's (only rank 0 makes them when every rank holds a replica)."""
        if self.rank:
            return {}
        return {**self.state_tensors(), **optimizer_tensors(self.optimizer)}

    def local_tensors(self, tensors: dict[str, Tensor]) -> dict[str, Tensor]:
        """A checkpoint's tensors as this rank holds them (all of them: a replica)."""
        return tensors

    def save_checkpoint(self, step: int) -> None:
        """The checkpoint at ``step`` (rank 0 writes; every rank waits for it)."""
        from interp.runs.artifacts import save_artifact

        tensors = self.checkpoint_tensors()
        if self.rank == 0:
            save_artifact(
                self.ckpt_dir, tensors,
                kind=self.checkpoint_kind,
                config={**self.settings, "step": step, "elapsed_s": self.elapsed,
                        **self.checkpoint_config(),
                        **({"flops_by_dtype": self.work.flops} if self.work_known else {})},
                model_id=self.model_id, d_model=self.d_model, **self.artifact_options())
        barrier(self.world)
        self.last_saved = step

    def throughput(self, done_steps: int) -> dict[str, Any]:
        """``tokens_per_s``, ``flops``, ``peak_flops`` and ``mfu`` after ``done_steps``."""
        out = self.work.summary(self.elapsed, self.peaks if self.work_known else None,
                                tokens=done_steps * self.tokens_per_step)
        out["tokens_per_s"] = (done_steps * self.tokens_per_step / self.elapsed
                               if self.elapsed > 0 else 0.0)
        return out

    def nonfinite(self, loss: float, step: int) -> InterpError:
        """The one-line error for a loss that is not finite at ``step`` (0-based)."""
        kept = (f"the last good checkpoint (step {self.last_saved}) is kept in {self.ckpt_dir}"
                if (self.ckpt_dir / "config.json").is_file() else "no checkpoint was written")
        name = self.loss_name or f"{self.what.removeprefix('a ').removeprefix('an ')} loss"
        return InterpError(f"{name} became {loss} at step {step + 1}; stopped, {kept}; "
                           f"{self.nonfinite_hint}")


def barrier(world: int) -> None:
    """Wait for every process of a torchrun group (nothing with one process)."""
    if world > 1:
        import torch.distributed as dist

        dist.barrier()


def ranks_agree(ok: bool, world: int, device: Any = "cpu") -> bool:
    """Whether every process of a torchrun group has ``ok`` (``ok`` itself with one), so a
    refusal on one rank stops all of them instead of leaving the others at a barrier."""
    if world <= 1:
        return ok
    import torch.distributed as dist

    flag = torch.tensor([0 if ok else 1], device=device)
    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    return not bool(flag.item())


def train_steps(
    runs: Sequence[ResumableRun],
    *,
    stop_at: int | None = None,
    progress: bool | None = None,
    labels: Sequence[str] | None = None,
    on_checkpoint: Callable[[int], None] | None = None,
) -> int:
    """Train ``runs`` in lockstep from the earliest of their resumed steps to their end
    (``stop_at`` stops early, with a checkpoint); the step reached.

    A run resumed later than the others waits until the loop reaches its step. The first
    checkpoint is written before step 1 of a fresh run, so a kill loses less than one
    checkpoint interval.
    """
    if not runs:
        return 0
    steps = runs[0].steps
    for run in runs:
        # decided from what this process loaded, never from the folder rank 0 is writing
        # (a rank that saw rank 0's checkpoint appear would skip the barrier and hang)
        if run.checkpoint_at_start and not run.resumed:
            run.save_checkpoint(0)
            if on_checkpoint is not None and run.rank == 0:
                on_checkpoint(0)
    first = min(r.start for r in runs)
    end = steps if stop_at is None else max(first, min(steps, int(stop_at)))
    rank = runs[0].rank
    bar = make_progress(enabled=progress if rank == 0 else False, transient=False)
    names = list(labels or [type(r).__name__ for r in runs])
    with bar:
        tasks = [bar.add_task(name, total=steps, completed=r.start, info=r.info())
                 for name, r in zip(names, runs, strict=True)]
        for step in range(first, end):
            for run, task in zip(runs, tasks, strict=True):
                if step < run.start:
                    continue
                t0 = time.perf_counter()
                loss = run.train_step(step)
                if not math.isfinite(loss):
                    raise run.nonfinite(loss, step)
                run.elapsed += time.perf_counter() - t0
                bar.update(task, completed=step + 1, info=run.info())
                if rank == 0:
                    write_progress(run.out, step=step + 1, steps=steps, loss=loss,
                                   checkpoint_step=run.last_saved)
                if (step + 1) % run.checkpoint_every == 0 or step + 1 == end:
                    run.save_checkpoint(step + 1)
                    if on_checkpoint is not None and run.rank == 0:
                        on_checkpoint(step + 1)
            profiling_step()
    return max(first, end)


__all__ = ["CHECKPOINT_SUBDIR", "ResumableRun", "barrier", "ranks_agree", "train_steps"]
