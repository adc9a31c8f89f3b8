"""Phase and step markers: what every tool calls to say what it is doing, profiled or not.

Tools mark their work with :func:`phase` (``"forward"``, ``"fit probes"``, …) and their
loop iterations with :func:`step`; both cost nothing unless a profiling session is
recording (:mod:`interp.profiling.session` starts one and makes it :func:`current`). Kept
in the plumbing, apart from the profiler, so that the plumbing (manifests, artifacts) can
mark its own phases and the profiler can use the plumbing (its result's manifest) without
a circle between the two packages.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, ParamSpec, Protocol, TypeVar

import torch

#: The phase that holds the profiler's own work between steps (collecting the trace when
#: the recorded window closes): time the run spends only because it is profiled.
PROFILER_PHASE = "profiler"
P = ParamSpec("P")
R = TypeVar("R")


class Recorder(Protocol):
    """What a profiling session offers the markers (:class:`interp.profiling.session.Session`)."""

    phases: dict[str, float]
    steps: int
    _depth: int
    prof: Any

    def sync(self) -> None:
        """Wait for the device's queued work, so that a phase's wall clock covers it."""
        ...


_CURRENT: list[Recorder] = []


def current() -> Recorder | None:
    """The recording session, if any."""
    return _CURRENT[0] if _CURRENT else None


def set_current(session: Recorder | None) -> None:
    """Make ``session`` the one the markers record into (``None``: none)."""
    _CURRENT.clear()
    if session is not None:
        _CURRENT.append(session)


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Mark a phase of a tool's work (wall time; a ``record_function`` range in the trace).

    Nested phases are timed too, but only outermost ones count towards the coverage of
    the run's wall time (they do not overlap).
    """
    s = current()
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
    s = current()
    if s is None:
        return
    with torch.profiler.record_function("interp: step"):
        pass
    s.steps += 1
    t0 = time.perf_counter()
    s.prof.step()  # where the recorded window closes, kineto collects the trace (seconds)
    key = PROFILER_PHASE if s._depth == 0 else f"{PROFILER_PHASE} (nested)"  # noqa: SLF001
    s.phases[key] = s.phases.get(key, 0.0) + time.perf_counter() - t0


__all__ = ["PROFILER_PHASE", "Recorder", "current", "phase", "phased", "set_current", "step"]
