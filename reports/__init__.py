"""HTML reports: one self-contained file per report, shared by every tool of interp.

:mod:`reports.html` is the base (page shell, tables, the manifest section, atomic
writing, :class:`~reports.html.Report`); :mod:`reports.figures` embeds matplotlib
figures drawn by the tools; each report module (e.g. :mod:`reports.lens`) lays out
one tool's result through its template in ``reports/templates/``.
"""

from __future__ import annotations

from reports.html import (
    Report,
    figure,
    kv_table,
    paragraph,
    render_page,
    table,
)
from reports.lens import lens_report

__all__ = [
    "Report",
    "figure",
    "kv_table",
    "lens_report",
    "paragraph",
    "render_page",
    "table",
]
