"""Progress bars and status lines, always on stderr (stdout carries only results)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

#: Every log line, bar and spinner goes here, never to stdout.
stderr_console = Console(stderr=True, soft_wrap=True)  # a log line stays one line


def progress_enabled(requested: bool | None = None, auto: bool = True) -> bool:
    """``requested`` when given; else ``auto`` (the caller's default, e.g. "more than one
    batch") unless ``INTERP_NO_PROGRESS=1`` turns every bar off."""
    if requested is not None:
        return requested
    return auto and os.environ.get("INTERP_NO_PROGRESS", "") not in ("1", "true", "yes")


def make_progress(*, transient: bool = True, enabled: bool | None = None,
                  auto: bool = True) -> Progress:
    """A rich progress bar on stderr with count, elapsed and remaining time (shown as
    :func:`progress_enabled` decides)."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[info]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=stderr_console,
        transient=transient,
        disable=not progress_enabled(enabled, auto),
    )


@contextmanager
def status(message: str, enabled: bool | None = None) -> Iterator[None]:
    """A spinner with a message on stderr for one-off slow steps."""
    if not progress_enabled(enabled):
        yield
        return
    with stderr_console.status(message):
        yield


class Steps:
    """One bar over the named steps of a slow one-off job (a model conversion).

    Shows the job, the current step's name, the count of steps done, a detail that a
    step may update (``"tensor 120/236"``) and the elapsed time. Use as a context
    manager; :meth:`step` starts the next step (finishing the one before). Off, like
    every bar, with ``INTERP_NO_PROGRESS=1``.
    """

    def __init__(self, title: str, total: int, *, enabled: bool | None = None) -> None:
        self._done = -1
        self._name = ""
        self._finish = ""
        self._start = time.perf_counter()
        #: the steps started so far, in order
        self.names: list[str] = []
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[info]}"),
            TimeElapsedColumn(),
            console=stderr_console,
            transient=True,
            disable=not progress_enabled(enabled),
        )
        self.task = self.progress.add_task(title, total=total, info="")

    @property
    def enabled(self) -> bool:
        """Whether the bar is shown (``enabled`` when given, else on unless
        ``INTERP_NO_PROGRESS=1``)."""
        return not self.progress.disable

    def step(self, name: str) -> None:
        """Start step ``name``: the step before it counts as done."""
        self._done += 1
        self._name = name
        self.names.append(name)
        self.progress.update(self.task, completed=self._done, info=name)

    def detail(self, text: str) -> None:
        """Show ``text`` beside the current step's name (``"tensor 120/236"``)."""
        self.progress.update(self.task, info=f"{self._name} · {text}")

    def finish(self, message: str) -> None:
        """A line for stderr, with the elapsed time, once the job ends without error."""
        self._finish = message

    def __enter__(self) -> Steps:
        self._start = time.perf_counter()
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.progress.update(self.task, completed=self._done + 1)
        self.progress.__exit__(*exc)  # type: ignore[arg-type]
        if exc[0] is None and self._finish and self.enabled:
            elapsed = time.perf_counter() - self._start
            stderr_console.print(f"{self._finish} ({elapsed:.0f} s)", highlight=False,
                                 markup=False)


def note(message: str) -> None:
    """One line on stderr (a cache rebuilt, a stale lock taken over): never a bar."""
    stderr_console.print(message, highlight=False, markup=False)
