"""How a result shows itself in a notebook (``_repr_html_``), without the report package.

A result's ``_repr_html_`` returns :func:`result_html`: a title, its headline
table and its main figure as inline SVG, the way pandas and TransformerLens
objects display themselves. Every string is escaped.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from matplotlib.figure import Figure

from interp.plotting import svg_text


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return html.escape(str(value))


def result_html(
    title: str,
    rows: Sequence[tuple[str, object]],
    figure: Figure | None = None,
    *,
    columns: Sequence[str] | None = None,
    table: Sequence[Sequence[object]] | None = None,
) -> str:
    """HTML for a notebook: ``title``, key/value ``rows``, an optional ``table`` and figure."""
    parts = [f"<div class='interp-result'><strong>{html.escape(title)}</strong>"]
    if rows:
        parts.append("<table>")
        parts += [f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{_cell(v)}</td></tr>"
                  for k, v in rows]
        parts.append("</table>")
    if table:
        parts.append("<table><thead><tr>")
        parts += [f"<th>{html.escape(str(c))}</th>" for c in (columns or [])]
        parts.append("</tr></thead><tbody>")
        for row in table:
            parts.append("<tr>" + "".join(f"<td>{_cell(v)}</td>" for v in row) + "</tr>")
        parts.append("</tbody></table>")
    if figure is not None:
        svg = svg_text(figure)
        parts.append(svg[svg.find("<svg"):])
    parts.append("</div>")
    return "".join(parts)
