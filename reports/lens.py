"""The lens report (``interp lens``): the logit lens, or the logit and tuned lens side by side.

It renders a :class:`~interp.lenses.readout.LensReadout` (or a single
:class:`~interp.lenses.logit.LensResult`) through ``templates/lens.html.j2``: the
token grid as an HTML table (colours from :func:`interp.lenses.figures.token_grid`),
the per-layer curves from :mod:`interp.lenses.figures`, and the last position's table.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from markupsafe import Markup

from interp.lenses.figures import (
    lens_compare_figure,
    lens_compare_titles,
    lens_curves_figure,
    lens_curves_titles,
    token_grid,
)
from interp.lenses.logit import NEXT_TOKEN, LensResult
from interp.lenses.readout import LensReadout
from reports.html import Report, ReportFigure, render_page, token_html

__all__ = ["lens_report"]


def _lead(r: LensResult) -> Markup:
    """The prompt, then the headline's facts (the model is in the page title)."""
    facts = [(k, token_html(r.final_top1()[-1]) if k == NEXT_TOKEN else v)
             for k, v in r.headline().rows if k not in ("model", "prompt")]
    dl = Markup("").join(Markup("<div><dt>{}</dt><dd>{}</dd></div>").format(k, v)
                         for k, v in facts)
    return Markup('<p class="prompt-label">Prompt</p><pre class="prompt">{}</pre>'
                  '<dl class="facts">{}</dl>').format(r.prompt, dl)


def _last_rows(r: LensResult) -> tuple[list[list[Any]], list[str | None]]:
    """The last position's table: the model's own prediction first, then every layer."""
    last = len(r.tokens) - 1
    final = r.final_top1()[last]
    rows: list[list[Any]] = [[Markup("<strong>model output</strong>"), token_html(final),
                              float(r.final_topk_probs[last, 0]), 0.0,
                              float(r.final_entropy[last]), None]]
    top1 = r.top1()
    for li in range(len(r.layers) - 1, -1, -1):
        tok = top1[li][last]
        check = (Markup('<span class="check" title="matches the final prediction">✓</span>')
                 if tok == final else Markup(""))
        rows.append([str(r.layers[li]), token_html(tok), float(r.topk_probs[li, last, 0]),
                     float(r.kl[li, last]), float(r.entropy[li, last]), check])
    return rows, ["baseline"] + [None] * len(r.layers)


def _panel(r: LensResult, title: str) -> dict[str, Any]:
    rows, classes = _last_rows(r)
    return {"title": title, "grid": token_grid(r), "rows": rows, "classes": classes,
            "last_token": r.tokens[-1]}


def lens_report(result: LensReadout | LensResult,
               manifest: Mapping[str, Any] | None = None) -> Report:
    """The lens report: one page (and its figures) for one prompt, with its manifest
    (``result.manifest`` unless given)."""
    readout = result if isinstance(result, LensReadout) else LensReadout(result)
    if manifest is None:
        manifest = result.manifest or {}
    r, t = readout.logit, readout.tuned
    if t is None:
        title, fig = f"Logit lens — {r.model_id}", ReportFigure(
            lens_curves_figure(r), lens_curves_titles(r), "KL and entropy by layer")
        subtitle = ("What each layer's residual stream would predict if decoded with the "
                    "model's final norm and unembedding.")
        panels = [_panel(r, "Last position, layer by layer")]
    else:
        title, fig = f"Logit lens and tuned lens — {r.model_id}", ReportFigure(
            lens_compare_figure(r, t), lens_compare_titles(r, t), "KL by layer, both lenses")
        subtitle = ("Each layer read with the model's final norm and unembedding, directly "
                    "(logit lens) and through a learned per-layer translator (tuned lens).")
        panels = [_panel(r, "Logit lens: last position, layer by layer"),
                  _panel(t, "Tuned lens: last position, layer by layer")]
    return render_page(
        "lens.html.j2", title=title, subtitle=subtitle, lead=_lead(r), manifest=manifest,
        figures={"curves": fig}, stylesheets=["lens.css"], panels=panels,
        tuned=t is not None, n_pos=len(r.tokens),
    )
