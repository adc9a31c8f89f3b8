"""Shared pieces of resumable training runs (tuned lens, SAEs).

A run folder holds an atomically written checkpoint artifact, a ``progress.json`` updated
every step (monitoring, and the kill tests' clock), and after a kill possibly the
temporary files of an interrupted atomic write. These helpers write the progress file,
sweep that debris, round-trip optimiser state through safetensors-friendly tensors, and
list how two runs' settings differ.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from interp.errors import InterpError

if TYPE_CHECKING:
    from interp.runs.lock import Lock

PROGRESS_FILE = "progress.json"


def write_progress(out: Path, **fields: Any) -> None:
    """``out/progress.json``: the last finished step and friends, written atomically."""
    from interp.runs.atomic import atomic_write_text

    atomic_write_text(out / PROGRESS_FILE, json.dumps(fields))


def remove_debris(out: Path, artifact_names: Iterable[str]) -> None:
    """Temporary folders a killed artifact save left in ``out`` (never anything else)."""
    if not out.is_dir():
        return
    for name in artifact_names:
        for p in out.glob(f".{name}.tmp-*"):
            shutil.rmtree(p, ignore_errors=True)
        for p in out.glob(f".{name}.old-*"):
            if (out / name).exists():
                shutil.rmtree(p, ignore_errors=True)
    for p in out.glob(f".{PROGRESS_FILE}.*.tmp"):  # a killed atomic_write_text
        p.unlink(missing_ok=True)


def optimizer_tensors(opt: torch.optim.Optimizer) -> dict[str, Tensor]:
    """The optimiser's per-parameter state as ``opt.{param_id}.{key}`` tensors."""
    out = {}
    for pid, state in opt.state_dict()["state"].items():
        for key, val in state.items():
            out[f"opt.{pid}.{key}"] = torch.as_tensor(val).clone()
    return out


def load_optimizer_tensors(opt: torch.optim.Optimizer, tensors: dict[str, Tensor]) -> None:
    """Restore state saved by :func:`optimizer_tensors` (other tensors are ignored)."""
    sd = opt.state_dict()
    state: dict[int, dict[str, Tensor]] = {}
    for name, val in tensors.items():
        if name.startswith("opt."):
            _, pid, key = name.split(".", 2)
            state.setdefault(int(pid), {})[key] = val.clone()
    sd["state"] = state
    opt.load_state_dict(sd)


def settings_diff(have: dict[str, Any], want: dict[str, Any]) -> list[str]:
    """``"key old → new"`` for every key whose value differs; nested settings are
    compared key by key (``"arch.k 32 → 64"``)."""
    out = []
    for k in sorted(set(have) | set(want)):
        a, b = have.get(k), want.get(k)
        if isinstance(a, dict) and isinstance(b, dict):
            out += [f"{k}.{d}" for d in settings_diff(a, b)]
        elif a != b:
            out.append(f"{k} {a!r} → {b!r}")
    return out


def prepare_run_dir(out: Path, artifact_names: Iterable[str], *, sweep: bool = True) -> None:
    """Refuse a run folder that is a file; sweep a killed save's debris (``sweep``)."""
    if out.exists() and not out.is_dir():
        raise InterpError(f"cannot train into {out}: it is a file, not a folder")
    if sweep:
        remove_debris(out, artifact_names)


def lock_run_dir(out: Path) -> Lock:
    """Take run folder ``out``'s lock (creating the folder; removed again on release if
    nothing was written into it): another live process training into it is refused in one
    line, a killed one's lock taken over (:mod:`interp.runs.lock`)."""
    from interp.runs.lock import folder_lock

    return folder_lock(out, subject=f"run folder {out}", hint="wait for it or use another --out",
                       remove_folder=True).acquire()


def check_resumable(
    out: Path, ckpt_dir: Path, want: dict[str, Any], what: str,
    extra: Callable[[dict[str, Any]], list[str]] | None = None,
) -> bool:
    """Whether ``ckpt_dir`` holds a checkpoint of this run (``want``'s ``train`` and
    ``data`` settings, plus ``extra(have)`` differences); another run's is refused in one
    line naming up to three differences."""
    from interp.runs.artifacts import read_config

    if not (ckpt_dir / "config.json").is_file():
        return False
    have = read_config(ckpt_dir)["config"]
    diffs = [f"{part}: {d}" for part in ("train", "data")
             for d in settings_diff(have.get(part, {}), want[part])]
    if extra is not None:
        diffs += extra(have)
    if diffs:
        raise InterpError(
            f"{out} holds {what} with other settings ({'; '.join(diffs[:3])}); "
            "use another --out, or delete that folder to start over"
        )
    return True
