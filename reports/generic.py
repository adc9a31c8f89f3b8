"""The report of a tool that declares no report of its own: its result's headline (the
verdict, the facts, the table) and its figure, or a body template the tool gives as text.

The page is the same shell as every other report (one self-contained file, the run
manifest last); the template text is rendered with ``r`` (the result), ``h`` (its
headline) and the macros of ``macros.html.j2`` (``{% import "macros.html.j2" as m with
context %}``), escaped like every template here.
"""

from __future__ import annotations

from typing import Any

from reports.html import Report, ReportFigure, headline_lead, render_page, template_env

#: The name of the result's figure on the page and under ``figures/``.
FIGURE = "result"


def result_report(result: Any, *, title: str, template: str | None = None) -> Report:
    """The page of ``result``: its headline lead, then ``template`` (jinja2 text) or its
    table and figure."""
    h = result.headline()
    fig = result.figure()
    figures = {FIGURE: ReportFigure(fig, label=h.title)} if fig is not None else {}
    body = template_env().from_string(template) if template is not None else "result.html.j2"
    return render_page(body, title=h.title or title, manifest=result.manifest or {},
                       figures=figures, lead=headline_lead(result), r=result, h=h,
                       figure_name=FIGURE if fig is not None else None)


__all__ = ["result_report"]
