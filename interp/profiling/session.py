"""A profiling session: phase timers over the whole run, ``torch.profiler`` over its steps.

Tools mark their work with :func:`~interp.runs.phases.phase` (``"forward"``, ``"fit probes"``, …)
and their loop iterations with :func:`~interp.runs.phases.step` (both live in
:mod:`interp.runs.phases`, the plumbing, and are re-exported here); both cost nothing when no
session is active. A session (:func:`profile`, or ``--profile DIR`` on the CLI) times every phase
with a wall clock (synchronising CUDA first) and records every operator with ``torch.profiler``,
each phase as a ``record_function`` range. The analysis (:mod:`interp.profiling.analysis`) then
reads the steady state only: the steps after the first ``ProfileConfig.skip_steps`` (allocator
warm-up and one-off work), the same wait/warm-up split a ``torch.profiler.schedule`` makes, applied
to a trace of the whole run so that a short run still yields one.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from interp.profiling.results import ProfileConfig, ProfileResult
from interp.runs.phases import PROFILER_PHASE, current, phase, phased, set_current, step


class Session:
    """What one profiled run records; see the module docstring."""

    def __init__(self, config: ProfileConfig, meta: dict[str, Any] | None = None) -> None:
        self.config = config
        self.meta = dict(meta or {})
        self.phases: dict[str, float] = {}
        self._depth = 0
        self.steps = 0
        self.start = time.perf_counter()
        self.end: float | None = None
        self.cuda = torch.cuda.is_available() and config.cuda
        activities = [torch.profiler.ProfilerActivity.CPU]
        if self.cuda:
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        self.prof = torch.profiler.profile(activities=activities, record_shapes=False,
                                           schedule=self._schedule)
        with _native_stderr_silenced():  # Kineto logs a line to fd 2 on start and stop
            self.prof.__enter__()
        # starting Kineto takes seconds the first time: the run pays it only to be profiled
        self.phases[PROFILER_PHASE] = time.perf_counter() - self.start

    def _schedule(self, step: int) -> torch.profiler.ProfilerAction:
        """Record the warm-up steps and the steady-state window, then stop recording:
        the trace stays small however long the run (a short run is recorded whole)."""
        last = self.config.skip_steps + self.config.active_steps - 1
        if step < last:
            return torch.profiler.ProfilerAction.RECORD
        if step == last:
            return torch.profiler.ProfilerAction.RECORD_AND_SAVE
        return torch.profiler.ProfilerAction.NONE

    def sync(self) -> None:
        """Wait for queued CUDA work (when profiling CUDA), so that a phase's wall clock covers
        it."""
        if self.cuda:
            torch.cuda.synchronize()

    def stop(self) -> None:
        """End the session: synchronise, stop the clock and close the profiler."""
        self.sync()
        self.end = time.perf_counter()
        with _native_stderr_silenced():
            self.prof.__exit__(None, None, None)

    @property
    def wall_s(self) -> float:
        """Seconds from the session's start to :meth:`stop` (to now while it runs)."""
        return (self.end or time.perf_counter()) - self.start


@contextmanager
def _native_stderr_silenced() -> Iterator[None]:
    """Send file descriptor 2 to /dev/null for the block (C++ logging only)."""
    try:
        saved = os.dup(2)
    except OSError:
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def active() -> Session | None:
    """The running session, if any."""
    return current()  # type: ignore[return-value] - only a Session is ever made current


def start(config: ProfileConfig | None = None, meta: dict[str, Any] | None = None) -> Session:
    """Start a session (one at a time); :func:`finish` ends it."""
    if current() is not None:
        from interp.errors import InterpError

        raise InterpError("a profiling session is already running")
    session = Session(config or ProfileConfig(), meta)
    set_current(session)
    return session


def finish(out_dir: str | Path | None = None) -> ProfileResult:
    """Stop the session, analyse it and (with ``out_dir``) write ``trace.json``."""
    s = active()
    if s is None:
        from interp.errors import InterpError

        raise InterpError("no profiling session is running")
    set_current(None)
    s.stop()
    from interp.profiling.analysis import analyse

    result = analyse(s)
    if out_dir is not None:
        from interp.runs.atomic import write_error

        out = Path(out_dir)
        tmp = out / ".trace.json.tmp"
        try:
            out.mkdir(parents=True, exist_ok=True)
            s.prof.export_chrome_trace(str(tmp))
            tmp.replace(out / "trace.json")
        except OSError as exc:  # a full disk: one line, no partial trace left
            tmp.unlink(missing_ok=True)
            raise write_error(out / "trace.json", exc) from None
        result.trace = str(out / "trace.json")
    return result


def abort() -> None:
    """Drop the running session without writing anything (the run failed)."""
    s = active()
    set_current(None)
    if s is not None:
        s.stop()


@contextmanager
def profile(
    out_dir: str | Path | None = None, config: ProfileConfig | None = None
) -> Iterator[Session]:
    """Profile the block: ``with interp.profile("prof/") as p: ...``; then ``p.result``.

    Writes ``out_dir/trace.json`` (open it in Perfetto) when the block succeeds; the
    report (``profile.html``) is :func:`reports.profile.profile_report`'s job.
    """
    s = start(config)
    try:
        yield s
    except BaseException:
        abort()
        raise
    s.result = finish(out_dir)  # type: ignore[attr-defined]


__all__ = ["PROFILER_PHASE", "Session", "abort", "active", "finish", "phase", "phased",
           "profile", "start", "step"]
