"""The attention-pattern HTML report (``interp attention``): where each head looks.

Input is an :class:`~interp.circuits.results.AttentionResult` (its manifest included).
The page (``templates/attention.html.j2``) shows one heatmap per head, from
:func:`interp.circuits.figures.attention_heatmap`, and the same patterns as a table:
for each query token, its three most attended keys with their weights. Tokens are
shown with visible whitespace (``␣``, ``↵``), the exact string as a tooltip; every
string is escaped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from interp.circuits.figures import attention_heatmap
from interp.circuits.results import AttentionResult, top_keys
from reports.html import Report, ReportFigure, render_page, token_html

__all__ = ["attention_report", "top_keys"]

#: Keys listed per query in the table.
TOP_KEYS = 3


@dataclass
class _HeadView:
    head: int
    figure: str
    width: int
    rows: list[list[Any]]
    open: bool


def _key_cell(result: AttentionResult, key: int, weight: float) -> Markup:
    return Markup('<span class="key">{}<span class="pos">{}</span> '
                  '<span class="w">{}</span></span>').format(
        token_html(result.tokens[key]), key, f"{weight:.3f}")


def _rows(result: AttentionResult, index: int) -> list[list[Any]]:
    rows = []
    for q in range(len(result.tokens)):
        keys = top_keys(result, index, q)
        cells: list[Any] = [_key_cell(result, k, w) for k, w in keys]
        cells += [None] * (TOP_KEYS - len(cells))
        rows.append([q, token_html(result.tokens[q]), *cells])
    return rows


def _lead(r: AttentionResult) -> Markup:
    """The prompt, then the headline's facts (the rows a notebook shows)."""
    dl = Markup("").join(Markup("<div><dt>{}</dt><dd>{}</dd></div>").format(k, v)
                         for k, v in r.headline().rows)
    return Markup('<p class="prompt-label">Prompt</p><pre class="prompt">{}</pre>'
                  '<dl class="facts">{}</dl>').format(r.config.prompt, dl)


def attention_report(result: AttentionResult) -> Report:
    """The attention report (page and figures) of one prompt at one layer."""
    r = result
    figures: dict[str, ReportFigure] = {}
    views = []
    for i, h in enumerate(r.heads):
        name = f"attn-l{r.layer}h{h}"
        fig = attention_heatmap(r, i)
        figures[name] = ReportFigure(fig, label=f"Attention pattern of L{r.layer}H{h}")
        views.append(_HeadView(h, name, round(fig.get_figwidth() * 96), _rows(r, i), i == 0))
    return render_page(
        "attention.html.j2",
        title=f"Attention patterns — layer {r.layer} · {r.model_id or 'unknown model'}",
        subtitle=("Where each attention head of one layer looks: the softmax weights from "
                  "every query token to the tokens before it."),
        lead=_lead(r), manifest=r.manifest or {}, figures=figures, stylesheets=["circuits.css"],
        r=r, views=views, top_k=TOP_KEYS,
    )

