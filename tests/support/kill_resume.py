"""Kill a training command with SIGKILL at chosen steps, then check each resume (shared by the
tuned-lens and SAE kill tests).

The command writes ``out/progress.json`` (``{"step": …}``) after every step and an artifact
checkpoint ``out/checkpoint/config.json`` (``config.step``) every ``interval`` steps.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path


def progress_step(out: Path) -> int:
    try:
        return json.loads((out / "progress.json").read_text())["step"]
    except (OSError, ValueError, KeyError):
        return -1


def checkpoint_step(out: Path) -> int:
    try:
        return json.loads((out / "checkpoint" / "config.json").read_text())["config"]["step"]
    except (OSError, ValueError, KeyError):
        return -1


def kill_at_steps(cmd: list[str], out: Path, targets: list[int], interval: int,
                  rng: random.Random) -> list[int]:
    """Start ``cmd`` once per target; SIGKILL it once it reaches that step (plus a random
    delay, so the kill lands anywhere in the loop, mid-write included). After each kill the
    checkpoint must be readable and at most ``interval`` steps behind. Returns the
    checkpoint step after each kill."""
    env = {**os.environ, "INTERP_NO_PROGRESS": "1"}
    kept = []
    for target in targets:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        deadline = time.time() + 180
        while progress_step(out) < target and proc.poll() is None and time.time() < deadline:
            time.sleep(0.005)
        time.sleep(rng.uniform(0.0, 0.03))
        if proc.poll() is not None:
            break  # finished before we could kill it
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        step, reached = checkpoint_step(out), progress_step(out)
        assert step >= 0, "a killed run must leave a readable checkpoint"
        assert reached - step <= interval, f"lost more than one checkpoint interval ({interval})"
        kept.append(step)
    return kept
