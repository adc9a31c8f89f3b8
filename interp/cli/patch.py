"""``interp patch``: activation patching, attribution patching and DLA over a task."""

from __future__ import annotations

from typing import TYPE_CHECKING

from interp.circuits.results import PatchConfig
from interp.cli.tool import Tool, tool_command

if TYPE_CHECKING:
    from interp.circuits.results import PatchResult


def _notes(result: PatchResult) -> list[str]:
    t = result.task
    lines = [f"{t.name}: {t.n_used} of {t.n_read} pairs used ({t.n_left_out} left out: "
             f"{t.left_out_reason})"]
    if result.dla_skipped:
        lines.append(f"direct logit attribution skipped: {result.dla_skipped}")
    return lines


PATCH = Tool(
    "patch", PatchConfig, "interp.circuits.patch:run_patch",
    report="reports.patching:patching_report", check="interp.circuits.pairs:check_task",
    notes=_notes, out_required=True,
    batch_help="Patched runs (rows) per forward pass.",
    help="Patch every component of a family over clean/corrupted pairs; compare AtP with "
         "exact.")

patch = tool_command(PATCH)

__all__ = ["PATCH", "patch"]
