"""``interp attention PROMPT --layer L``: one layer's attention patterns on one prompt."""

from __future__ import annotations

from interp.circuits.results import AttentionConfig
from interp.cli.tool import Tool, tool_command
from interp.errors import InterpError


def _check(config: AttentionConfig) -> None:
    if not config.prompt.strip():
        raise InterpError("empty prompt: give at least one non-blank character")


ATTENTION = Tool(
    "attention", AttentionConfig, "interp.circuits.attention:run_attention",
    report="reports.attention:attention_report", check=_check, arguments=("prompt",),
    out_required=True, batch_help="Unused: one prompt is one forward pass.",
    help="Attention patterns of one layer's heads on PROMPT (query × key, per head).")

attention = tool_command(ATTENTION)

__all__ = ["ATTENTION", "attention"]
