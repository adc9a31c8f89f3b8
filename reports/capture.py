"""The ``interp capture`` report: what was captured, and residual norms by layer.

It renders a :class:`~interp.activations.capture.CaptureResult` through
``templates/capture.html.j2`` with :func:`interp.activations.figures.norm_figure`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from interp.activations.capture import CaptureResult
from interp.activations.figures import norm_figure, norm_titles
from interp.display import ci_text
from reports.html import Report, ReportFigure, render_page

__all__ = ["capture_report"]


def capture_report(result: CaptureResult, manifest: Mapping[str, Any] | None = None) -> Report:
    """The report of one ``interp capture`` run: one page and its figure, with its manifest
    (``result.manifest`` unless given)."""
    manifest = manifest if manifest is not None else (result.manifest or {})
    figures = {}
    if len(result.resid_norms()) >= 2:
        figures["norms"] = ReportFigure(norm_figure(result), norm_titles(result),
                                        "residual-stream norm by layer")
    rows = [[h.hook, " × ".join(str(s) for s in h.shape), h.norm_mean, h.norm_std,
             ci_text(h.norm_ci95[0], h.norm_ci95[1]), h.norm_n] for h in result.hooks]
    return render_page(
        "capture.html.j2", title=f"Activations — {result.model_id}",
        subtitle="Activations captured with interp.capture and saved as an artifact.",
        manifest=manifest, figures=figures, r=result, cfg=result.config,
        facts=result.headline().rows, rows=rows,
    )
