"""Progress bars and status lines, always on stderr (stdout carries only results)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

#: Every log line, bar and spinner goes here, never to stdout.
stderr_console = Console(stderr=True, soft_wrap=True)  # a log line stays one line


def progress_enabled(requested: bool | None = None) -> bool:
    """Bars on unless asked off or ``INTERP_NO_PROGRESS=1``."""
    if requested is not None:
        return requested
    return os.environ.get("INTERP_NO_PROGRESS", "") not in ("1", "true", "yes")


def make_progress(*, transient: bool = True, enabled: bool | None = None) -> Progress:
    """A rich progress bar on stderr with count, elapsed and remaining time."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[info]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=stderr_console,
        transient=transient,
        disable=not progress_enabled(enabled),
    )


@contextmanager
def status(message: str, enabled: bool | None = None) -> Iterator[None]:
    """A spinner with a message on stderr for one-off slow steps."""
    if not progress_enabled(enabled):
        yield
        return
    with stderr_console.status(message):
        yield
