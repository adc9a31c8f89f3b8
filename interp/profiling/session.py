"""A profiling session: phase timers over the whole run, ``torch.profiler`` over its steps.

Tools mark their work with :func:`phase` (``"forward"``, ``"fit probes"``, …) and their
loop iterations with :func:`step`; both cost nothing when no session is active. A
session (:func:`profile`, or ``--profile DIR`` on the CLI) times every phase with a
wall clock (synchronising CUDA first) and records every operator with
``torch.profiler``, each phase as a ``record_function`` range. The analysis
(:mod:`interp.profiling.analysis`) then reads the steady state only: the steps after
the first :attr:`ProfileConfig.skip_steps` (allocator warm-up and one-off work), the
same wait/warm-up split a ``torch.profiler.schedule`` makes, applied to a trace of the
whole run so that a short run still yields one.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import torch

from interp.profiling.results import ProfileConfig, ProfileResult

_ACTIVE: Session | None = None
#: The phase that holds the profiler's own work between steps (collecting the trace when
#: the recorded window closes): time the run spends only because it is profiled.
PROFILER_PHASE = "profiler"
P = ParamSpec("P")
R = TypeVar("R")


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
        if self.cuda:
            torch.cuda.synchronize()

    def stop(self) -> None:
        self.sync()
        self.end = time.perf_counter()
        with _native_stderr_silenced():
            self.prof.__exit__(None, None, None)

    @property
    def wall_s(self) -> float:
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
    return _ACTIVE


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Mark a phase of a tool's work (wall time; a ``record_function`` range in the trace).

    Nested phases are timed too, but only outermost ones count towards the coverage of
    the run's wall time (they do not overlap).
    """
    s = _ACTIVE
    if s is None:
        yield
        return
    s.sync()
    t0 = time.perf_counter()
    s._depth += 1  # noqa: SLF001 - the session's own bookkeeping
    try:
        with torch.profiler.record_function(f"phase: {name}"):
            yield
    finally:
        s.sync()
        s._depth -= 1  # noqa: SLF001
        key = name if s._depth == 0 else f"{name} (nested)"  # noqa: SLF001
        s.phases[key] = s.phases.get(key, 0.0) + time.perf_counter() - t0


def phased(name: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a function so that every call is a :func:`phase` of that name."""

    def decorate(fn: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(fn)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            with phase(name):
                return fn(*args, **kwargs)

        return wrapper

    return decorate


def step() -> None:
    """Mark the end of one iteration of a tool's loop (a batch, a decode step, a training
    step): a zero-length marker in the trace; the analysis skips the first few as warm-up."""
    s = _ACTIVE
    if s is None:
        return
    with torch.profiler.record_function("interp: step"):
        pass
    s.steps += 1
    t0 = time.perf_counter()
    s.prof.step()  # where the recorded window closes, kineto collects the trace (seconds)
    key = PROFILER_PHASE if s._depth == 0 else f"{PROFILER_PHASE} (nested)"  # noqa: SLF001
    s.phases[key] = s.phases.get(key, 0.0) + time.perf_counter() - t0


def start(config: ProfileConfig | None = None, meta: dict[str, Any] | None = None) -> Session:
    """Start a session (one at a time); :func:`finish` ends it."""
    global _ACTIVE
    if _ACTIVE is not None:
        from interp.errors import InterpError

        raise InterpError("a profiling session is already running")
    _ACTIVE = Session(config or ProfileConfig(), meta)
    return _ACTIVE


def finish(out_dir: str | Path | None = None) -> ProfileResult:
    """Stop the session, analyse it and (with ``out_dir``) write ``trace.json``."""
    global _ACTIVE
    s = _ACTIVE
    if s is None:
        from interp.errors import InterpError

        raise InterpError("no profiling session is running")
    _ACTIVE = None
    s.stop()
    from interp.profiling.analysis import analyse

    result = analyse(s)
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        tmp = out / ".trace.json.tmp"
        s.prof.export_chrome_trace(str(tmp))
        tmp.replace(out / "trace.json")
        result.trace = str(out / "trace.json")
    return result


def abort() -> None:
    """Drop the running session without writing anything (the run failed)."""
    global _ACTIVE
    s = _ACTIVE
    _ACTIVE = None
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
