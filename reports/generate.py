"""The ``interp generate`` report: prompts, continuations and what the engine did.

It renders a :class:`~interp.generation.engine.GenerationResult` through
``templates/generate.html.j2``; the continuations table is the result's headline table.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from interp.generation.engine import GenerationResult
from reports.html import Report, render_page

__all__ = ["generate_report"]


def generate_report(result: GenerationResult,
                    manifest: Mapping[str, Any] | None = None) -> Report:
    """The report of one ``interp generate`` run, with its manifest (``result.manifest``
    unless given)."""
    manifest = manifest if manifest is not None else (result.manifest or {})
    return render_page(
        "generate.html.j2", title=f"Generation — {result.model_id}",
        subtitle="Text generated with interp.generate.", manifest=manifest,
        rows=result.headline().table, cfg=result.config, stats=result.stats,
        model=result.model_id,
        stop=", ".join(repr(s) for s in result.config.stop) or "none",
    )
