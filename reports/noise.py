"""The seed-noise report (``interp seeds``) and the comparison report (``interp compare``).

Inputs are :class:`~interp.noise.results.SeedsResult` and
:class:`~interp.noise.results.CompareResult`. The seed page shows each metric's spread
over the seeds (table and :func:`interp.noise.figures.spread_figure`); the comparison
page each shared metric's difference with its interval and verdict (table and
:func:`interp.noise.figures.compare_figure`), differences inside the noise labelled
"within noise: not a result".
"""

from __future__ import annotations

from markupsafe import Markup

from interp.display import short
from interp.noise.figures import compare_figure, spread_figure
from interp.noise.results import LARGER, NO_NOISE, WITHIN, CompareResult, SeedsResult
from reports.html import Report, ReportFigure, render_page

__all__ = ["compare_report", "seeds_report"]


def seeds_report(result: SeedsResult) -> Report:
    """The seed-noise page: each metric's mean, std, relative spread, min and max over the seeds,
    and :func:`~interp.noise.figures.spread_figure`."""
    r = result
    varying = [m for m in r.metrics if m.std > 0]
    rows = [[m.name, short(m.mean), short(m.std),
             "—" if m.mean == 0 else f"{m.std / abs(m.mean):.1%}", short(m.min), short(m.max),
             m.n] for m in r.metrics]
    lead = Markup("<p><code>interp {} {}</code> under seeds {}: {} numeric metrics, {} of "
                  "them vary with the seed. A difference between two single runs smaller "
                  "than a metric's spread here is not a result.</p>").format(
        r.verb, " ".join(r.args), ", ".join(map(str, r.seeds)), len(r.metrics), len(varying))
    return render_page(
        "seeds.html.j2", title=f"Seed noise — interp {r.verb}",
        subtitle="The same run under several seeds: how much each number moves.",
        lead=lead, manifest=r.manifest or {},
        figures={"spread": ReportFigure(spread_figure(r), label="Relative spread by metric")},
        r=r, rows=rows,
    )


def compare_report(result: CompareResult) -> Report:
    """The comparison page: each shared metric's A, B, B − A with its interval and verdict, and
    :func:`~interp.noise.figures.compare_figure`."""
    r = result
    rows = [[x.name, short(x.a), short(x.b), f"{x.diff:+.4g}",
             "—" if x.ci95 is None else f"[{x.ci95[0]:+.3g}, {x.ci95[1]:+.3g}]",
             x.method, x.verdict] for x in r.rows]
    classes = ["" if x.verdict == LARGER else "dim" for x in r.rows]
    c = r.counts()
    lead = Markup("<p>B − A for <code>interp {}</code> ({}): <b>{}</b> metrics differ by more "
                  "than their noise, {} are within noise (not a result), {} have no noise "
                  "estimate.</p>").format(r.verb, r.kind, c[LARGER], c[WITHIN], c[NO_NOISE])
    return render_page(
        "compare.html.j2", title=f"Comparison — interp {r.verb}",
        subtitle="Is the difference between two results larger than the noise?",
        lead=lead, manifest=r.manifest or {},
        figures={"compare": ReportFigure(compare_figure(r), label="Differences in noise units")},
        r=r, rows=rows, row_classes=classes,
    )
