"""The ``interp generate`` report: prompts, continuations and what the engine did.

It renders a :class:`~interp.generation.engine.GenerationResult` through
``templates/generate.html.j2``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from interp.generation.engine import GenerationResult
from reports.html import Report, render_page

__all__ = ["generate_report", "render_generate_report"]


def generate_report(result: GenerationResult, manifest: Mapping[str, Any]) -> Report:
    """The report of one ``interp generate`` run."""
    rows = [[g.index, g.prompt, g.text, g.stop_reason, len(g.token_ids)]
            for g in result.generations]
    return render_page(
        "generate.html.j2", title=f"Generation — {result.model_id}",
        subtitle="Text generated with interp.generate.", manifest=manifest,
        rows=rows, cfg=result.config, stats=result.stats, model=result.model_id,
        stop=", ".join(repr(s) for s in result.config.stop) or "none",
    )


def render_generate_report(result: GenerationResult, manifest: Mapping[str, Any]) -> str:
    """HTML for one :func:`interp.generation.engine.generate` result."""
    return generate_report(result, manifest).html
