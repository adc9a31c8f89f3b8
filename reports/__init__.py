"""HTML reports: one self-contained file per report, shared by every tool of interp.

:mod:`reports.html` is the base (sections, tables, the manifest section,
atomic writing); :mod:`reports.heatmap` draws pure-SVG figures;
:mod:`reports.lens` is the logit-lens report.
"""

from __future__ import annotations

from reports.heatmap import heatmap_svg, line_chart_svg
from reports.html import (
    Section,
    figure,
    kv_table,
    paragraph,
    render_report,
    table,
    write_report,
)
from reports.lens import render_lens_report, write_lens_report

__all__ = [
    "Section",
    "figure",
    "heatmap_svg",
    "kv_table",
    "line_chart_svg",
    "paragraph",
    "render_lens_report",
    "render_report",
    "table",
    "write_lens_report",
    "write_report",
]
