"""A second process that holds something (a lock, an output folder) while a test tries
to take it: wait until it says it holds it, and let it go, killed if it will not go."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest


def wait_until_ready(ready: Path, proc: subprocess.Popen, seconds: float = 60) -> None:  # type: ignore[type-arg]
    """Wait until ``proc`` writes ``ready``; fail the test (the process killed, its stderr
    shown when piped) if it exits or ``seconds`` pass first."""
    deadline = time.monotonic() + seconds
    while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    if not ready.exists():
        if proc.poll() is None:
            proc.kill()
        _, err = proc.communicate()
        pytest.fail(f"the holder did not start: {err or '(stderr not captured)'}")


def release(proc: subprocess.Popen, go: Path) -> None:  # type: ignore[type-arg]
    """Let a holder finish by writing ``go`` (killed if it does not within a minute): never
    left running after a failure."""
    go.write_text("1")
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
