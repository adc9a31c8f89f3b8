"""The distributed-alignment-search HTML report (``interp causal das``).

Input is a :class:`~interp.causal.results.DASResult` (its manifest included). The page
(``templates/das.html.j2``) shows the held-out IIA by layer
(:func:`interp.causal.figures.iia_by_layer`) and the same numbers as a table, every IIA
with its Wilson 95% interval beside the random direction, the full and empty
interchanges and the control task; every string is escaped.
"""

from __future__ import annotations

from typing import Any

from markupsafe import Markup

from interp.causal.figures import iia_by_layer
from interp.causal.results import DASResult
from reports.html import Report, ReportFigure, render_page, warnings_box

__all__ = ["das_report"]


def _lead(r: DASResult) -> Markup:
    """The verdict (best layer against its controls), then the headline's facts."""
    h = r.headline()
    dl = Markup("").join(Markup("<div><dt>{}</dt><dd>{}</dd></div>").format(k, v)
                         for k, v in h.rows)
    return Markup('<p class="verdict">{}</p>{}<dl class="facts">{}</dl>').format(
        (h.verdict or "no layer searched") + ".", warnings_box(r.warnings), dl)


def _rows(r: DASResult) -> list[list[Any]]:
    rows = []
    for x in r.layers:
        spread = (f"{min(x.das_seeds):.2f}–{max(x.das_seeds):.2f}" if len(x.das_seeds) > 1
                  else "one seed")
        def text(v: Any) -> str:
            return v.text() if v is not None else "—"

        rows.append([x.layer, x.das.text(), spread, text(x.probe_direction),
                     text(x.mean_difference), text(x.probe_accuracy), x.random.text(),
                     x.full.text(),
                     x.none.text(),
                     (f"{x.control.text()}, chance {x.control_chance:.2f}"
                      if x.control is not None and x.control_chance is not None else "—"),
                     f"{x.seconds:.1f} s"])
    return rows


def das_report(result: DASResult) -> Report:
    """The DAS report (page and figures) of one search."""
    r = result
    figures: dict[str, ReportFigure] = {}
    width = 0
    if r.layers:
        fig = iia_by_layer(r)
        figures["iia"] = ReportFigure(fig, label="Held-out IIA by layer")
        width = round(fig.get_figwidth() * 96)
    c = r.config
    setup = [("model", r.model_id or None), ("task", r.task),
             ("task sha256", Markup("<code>{}</code>").format(r.task_sha256)),
             ("position", r.position), ("dimensions (k)", c.dim), ("training steps", c.steps),
             ("learning rate", c.lr), ("batch size", c.batch_size), ("seeds", c.seeds),
             ("pairs", f"{r.n_train} train, {r.n_test} held out ({r.split})"),
             ("limit", c.limit), ("seed", c.seed)]
    return render_page(
        "das.html.j2",
        title=f"Distributed alignment search — {r.task} · {r.model_id or 'unknown model'}",
        subtitle=("Is the information used where it is readable? A learned subspace of the "
                  "residual stream is swapped from the source prompt into the base prompt, "
                  "and the output follows the source or not."),
        lead=_lead(r), manifest=r.manifest or {}, figures=figures, r=r, width=width,
        rows=_rows(r), setup=setup)
