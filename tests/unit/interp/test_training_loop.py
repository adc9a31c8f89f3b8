"""The one resumable training loop (interp.training), on a toy run: a linear map fit by
Adam. What every trainer relies on: a stopped run resumes to the same weights, bit for bit;
another run's folder is refused; a non-finite loss stops with one line; checkpoints follow
the schedule."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import pytest
import torch
from torch import Tensor

from interp.errors import InterpError
from interp.training import ResumableRun, train_steps


class ToyRun(ResumableRun):
    checkpoint_kind: ClassVar[str] = "toy_checkpoint"
    final_subdir: ClassVar[str] = "toy"
    what: ClassVar[str] = "a toy run"

    def __init__(self, out: Path, *, lr: float = 0.05, steps: int = 12,
                 poison_at: int | None = None) -> None:
        super().__init__(out, {"train": {"lr": lr, "steps": steps}, "data": {"sha256": "x"}},
                         steps=steps, checkpoint_every=5, tokens_per_step=8,
                         model_id="toy", d_model=4)
        torch.manual_seed(0)
        self.w = torch.nn.Parameter(torch.zeros(4, 4))
        self.optimizer = torch.optim.Adam([self.w], lr=lr)
        self.history: list[float] = []
        self.poison_at = poison_at
        self.resume()

    def batch(self, step: int) -> tuple[Tensor, Tensor]:
        g = torch.Generator().manual_seed(step)
        x = torch.randn(8, 4, generator=g)
        return x, x @ torch.arange(16.0).reshape(4, 4)

    def state_tensors(self) -> dict[str, Tensor]:
        return {"w": self.w.detach()}

    def load_state(self, tensors: dict[str, Tensor], config: dict[str, Any]) -> None:
        with torch.no_grad():
            self.w.copy_(tensors["w"])
        self.history = list(config["history"])

    def checkpoint_config(self) -> dict[str, Any]:
        return {"history": self.history}

    def train_step(self, step: int) -> float:
        x, y = self.batch(step)
        loss = ((x @ self.w - y) ** 2).mean()
        if step == self.poison_at:
            loss = loss * float("nan")
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.work.add("float32", 2 * 8 * 16)
        self.history.append(float(loss.detach()))
        return self.history[-1]

    def info(self) -> str:
        return f"loss {self.history[-1]:.3f}" if self.history else ""


def test_stopped_run_resumes_bit_for_bit(tmp_path: Path) -> None:
    whole = ToyRun(tmp_path / "whole")
    assert train_steps([whole], progress=False) == 12
    seen: list[int] = []
    part = ToyRun(tmp_path / "part")
    assert train_steps([part], stop_at=7, progress=False, on_checkpoint=seen.append) == 7
    assert seen == [0, 5, 7]  # before step 1, on the schedule, and where it stopped
    again = ToyRun(tmp_path / "part")
    assert again.start == 7 and again.history == part.history
    assert train_steps([again], progress=False, on_checkpoint=seen.append) == 12
    assert seen[3:] == [10, 12]
    assert torch.equal(again.w, whole.w) and again.history == whole.history
    progress = json.loads((tmp_path / "part" / "progress.json").read_text())
    assert progress["step"] == 12 and progress["checkpoint_step"] == 10
    summary = again.throughput(12)
    assert summary["flops"] == 12 * 2 * 8 * 16 and summary["tokens_per_s"] > 0


def test_other_settings_are_refused(tmp_path: Path) -> None:
    train_steps([ToyRun(tmp_path / "r")], stop_at=3, progress=False)
    with pytest.raises(InterpError, match=r"holds a toy run with other settings \(train: lr "
                                          r"0.05 → 0.1\)"):
        ToyRun(tmp_path / "r", lr=0.1)


def test_a_file_is_not_a_run_folder(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(InterpError, match="it is a file"):
        ToyRun(tmp_path / "f")


def test_nonfinite_loss_stops_and_keeps_the_last_checkpoint(tmp_path: Path) -> None:
    run = ToyRun(tmp_path / "r", poison_at=6)
    with pytest.raises(InterpError, match=r"toy run loss became nan at step 7; stopped, the "
                                          r"last good checkpoint \(step 5\) is kept"):
        train_steps([run], progress=False)


def test_lockstep_runs_wait_for_a_later_resume(tmp_path: Path) -> None:
    train_steps([ToyRun(tmp_path / "b")], stop_at=5, progress=False)
    a, b = ToyRun(tmp_path / "a"), ToyRun(tmp_path / "b")
    assert (a.start, b.start) == (0, 5)
    train_steps([a, b], progress=False)
    assert len(a.history) == len(b.history) == 12 and torch.equal(a.w, b.w)
