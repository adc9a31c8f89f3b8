"""The model-verification HTML report (``interp models --verify NAME --out DIR``).

Input is a :class:`~interp.verify.results.VerifyResult`. The page shows each check's
outcome with what it compared, the measured differences against their tolerances
(:func:`interp.verify.figures.checks_figure`) and the verified-models table row.
"""

from __future__ import annotations

from markupsafe import Markup

from interp.display import MISSING
from interp.verify.figures import checks_figure
from interp.verify.results import VerifyResult
from reports.html import Report, ReportFigure, render_page

__all__ = ["verify_report"]


def _lead(r: VerifyResult, verdict: str) -> Markup:
    return Markup('<p class="lead">{} on <code>{}</code> ({}, {} layers × {}).</p>').format(
        verdict.capitalize(), r.model_id, r.architecture, r.n_layers, r.d_model)


def verify_report(result: VerifyResult) -> Report:
    """The verification report (page and figure) of one model: its headline's table and
    verdict, the figure and the verified-models table row."""
    r = result
    head = r.headline()
    figures = {"checks": ReportFigure(checks_figure(r),
                                      label="Measured differences against tolerances")}
    rows = [[MISSING if cell is None else cell for cell in row] for row in head.table]
    return render_page(
        "verify.html.j2",
        title=f"Model verification — {r.model_id}",
        subtitle=("Does interp read this model correctly? Each check compares two "
                  "computations that must agree."),
        lead=_lead(r, head.verdict or ""), manifest=r.manifest or {}, figures=figures, r=r,
        rows=rows,
        row_classes=["" if c.passed is not False else "baseline" for c in r.checks],
        header=VerifyResult.table_header(), table_row=r.table_row(),
    )
