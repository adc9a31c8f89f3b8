"""The attention-pattern HTML report (``interp attention``): where each head looks.

Input is an :class:`~interp.circuits.results.AttentionResult` (its manifest included).
The page (``templates/attention.html.j2``) shows one heatmap per head, from
:func:`interp.circuits.figures.attention_heatmap`, and the same patterns as a table:
for each query token, its three most attended keys with their weights. Tokens are
shown with visible whitespace (``␣``, ``↵``), the exact string as a tooltip; every
string is escaped.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from markupsafe import Markup

from interp.circuits.figures import attention_heatmap
from interp.circuits.results import AttentionResult
from reports.html import Report, ReportFigure, atomic_write_text, render_page, token_html

__all__ = ["attention_report", "render_attention_report", "top_keys",
           "write_attention_report"]

#: Keys listed per query in the table.
TOP_KEYS = 3


def top_keys(result: AttentionResult, index: int, query: int,
             k: int = TOP_KEYS) -> list[tuple[int, float]]:
    """The ``k`` keys query ``query`` of head ``result.heads[index]`` attends to most:
    ``(key position, weight)``, largest first (ties: the earlier key first)."""
    row = result.patterns[index, query, : query + 1].to(torch.float64)
    row = torch.nan_to_num(row, nan=-1.0)
    order = torch.argsort(row, descending=True, stable=True)[:k]
    return [(int(i), float(row[int(i)])) for i in order]


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
    facts = [
        ("model", r.model_id or "unknown"),
        ("layer", r.layer),
        ("heads", ", ".join(str(h) for h in r.heads)),
        ("tokens", len(r.tokens)),
        ("chat template", "yes" if r.config.chat else "no"),
    ]
    dl = Markup("").join(Markup("<div><dt>{}</dt><dd>{}</dd></div>").format(k, v)
                         for k, v in facts)
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
        lead=_lead(r), manifest=r.manifest, figures=figures, stylesheets=["circuits.css"],
        r=r, views=views, top_k=TOP_KEYS,
    )


def render_attention_report(result: AttentionResult) -> str:
    """The attention report as one self-contained HTML document."""
    return attention_report(result).html


def write_attention_report(path: str | os.PathLike[str], result: AttentionResult) -> Path:
    """Render the attention report and write it atomically to ``path`` (the page only)."""
    return atomic_write_text(path, render_attention_report(result))
