"""How results show themselves: numbers as tables and tooltips print them, and a result in a
notebook (``_repr_html_``), without the report package.

A result's ``_repr_html_`` returns :func:`result_html`: a title, its headline
table and its main figure as inline SVG, the way pandas and TransformerLens
objects display themselves. Every string is escaped.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: Shown for missing values (None, NaN) in tables, tooltips and the manifest.
MISSING = "—"


#: Whitespace shown as a visible sign in token displays.
_VISIBLE = {
    " ": "␣",
    "\n": "↵",
    "\r": "␍",
    "\t": "⇥",
    "\u00a0": "⍽",
}


def visible_token(text: str) -> str:
    """Display form of a token: whitespace made visible, control characters shown as ``\\xNN``.

    ``" Paris"`` -> ``"␣Paris"``, ``"\\n"`` -> ``"↵"``, ``""`` -> ``"∅"``. For
    display only: the exact string belongs in tooltips. Reports and figure axes share it.
    """
    text = str(text)
    if text == "":
        return "∅"
    out = []
    for ch in text:
        if ch in _VISIBLE:
            out.append(_VISIBLE[ch])
        elif ord(ch) < 32 or 0x7F <= ord(ch) < 0xA0:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return "".join(out)


def as_float(value: Any) -> float:
    """A float; None, non-numbers and bools become NaN (for tolerant report inputs)."""
    if value is None or isinstance(value, bool):
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def is_finite(value: Any) -> bool:
    """Whether ``value`` is a finite number (see :func:`as_float`)."""
    return math.isfinite(as_float(value))


def format_number(value: Any, digits: int = 3) -> str:
    """A table-friendly number: fixed decimals, scientific for tiny/huge, ``—`` for None/NaN."""
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    try:
        x = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(x):
        return MISSING
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    if x == 0:
        return "0"
    ax = abs(x)
    if ax < 10 ** (-digits) or ax >= 1e6:
        return f"{x:.{max(digits - 1, 1)}e}"
    return f"{x:.{digits}f}"


def _finite(value: Any) -> float | None:
    x = as_float(value)
    return x if math.isfinite(x) else None


def signed(value: Any, digits: int = 3) -> str:
    """``+0.120``, ``−0.120`` (a true minus sign), ``0``; ``—`` when missing."""
    x = _finite(value)
    if x is None:
        return MISSING
    return ("+" if x > 0 else "−" if x < 0 else "") + format_number(abs(x), digits)


def plus_minus(mean: Any, std: Any = None, digits: int = 3) -> str:
    """``"0.912 ± 0.013"``; ``"0.912"`` without a spread; ``—`` without a mean."""
    m = _finite(mean)
    if m is None:
        return MISSING
    sd = _finite(std)
    tiny = 0.5 * 10**-digits
    if sd is not None and abs(m) < tiny <= sd:
        m = 0.0  # zero at this precision, next to a visible spread
    text = format_number(m, digits).replace("-", "−")
    if sd is not None and sd > 0:
        text += f" ± {sd:.{digits}f}" if sd >= tiny else f" ± <{10**-digits:.{digits}f}"
    return text


def ci_text(lo: Any, hi: Any, digits: int = 3, *, fmt: Any = None) -> str:
    """A 95% interval as ``[0.812, 0.901]``; ``—`` unless both ends are finite.

    ``fmt`` formats each end (default :func:`format_number` to ``digits``).
    """
    a, b = _finite(lo), _finite(hi)
    if a is None or b is None:
        return MISSING
    show = fmt or (lambda x: format_number(x, digits))
    return f"[{show(min(a, b))}, {show(max(a, b))}]"


def with_ci(value: Any, lo: Any, hi: Any, digits: int = 3, *, fmt: Any = None) -> str:
    """``"0.853 [0.812, 0.901]"``: the value, and its interval when known."""
    show = fmt or (lambda x: format_number(x, digits))
    text = show(value) if _finite(value) is not None else MISSING
    interval = ci_text(lo, hi, digits, fmt=fmt)
    return text if interval == MISSING or text == MISSING else f"{text} {interval}"


def percent(value: Any, digits: int = 3) -> str:
    """A fraction as a percentage to ``digits`` significant digits (``0.0625`` → ``6.25%``)."""
    x = _finite(value)
    return MISSING if x is None else f"{100 * x:.{digits}g}%"


def count(value: Any) -> str:
    """A whole number with thousands separators (``123456`` → ``123,456``)."""
    x = _finite(value)
    if x is None:
        return MISSING
    return f"{round(x):,}" if float(x).is_integer() else format_number(x, 3)


def compact(value: Any) -> str:
    """A large count in three significant digits (``3,657,235`` → ``3.66M``, ``36,512`` →
    ``36.5k``); below 10,000 with thousands separators."""
    x = _finite(value)
    if x is None:
        return MISSING
    if abs(x) >= 1_000_000:
        return f"{x / 1e6:.3g}M"
    if abs(x) >= 10_000:
        return f"{x / 1e3:.3g}k"
    return count(x)


def short(value: Any) -> str:
    """Four significant digits (``0.001234``, ``1.235e+04``); ``—`` when missing."""
    x = _finite(value)
    return MISSING if x is None else f"{x:.4g}"


#: The formatters by name: the reports register them as jinja filters, so a template and
#: a table print a number the same way.
FILTERS = {
    "fmt": format_number,
    "signed": signed,
    "pm": plus_minus,
    "ci": ci_text,
    "with_ci": with_ci,
    "pct": percent,
    "count": count,
    "compact": compact,
    "short": short,
    "vtok": visible_token,
}


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
    warnings: Sequence[str] = (),
) -> str:
    """HTML for a notebook: ``title``, the result's ``warnings`` (each a line, before
    anything else, so a trap that fired is not missed), key/value ``rows``, an optional
    ``table`` and figure."""
    parts = [f"<div class='interp-result'><strong>{html.escape(title)}</strong>"]
    if warnings:
        parts.append("<ul class='interp-warnings'>")
        parts += [f"<li>warning: {html.escape(w)}</li>" for w in warnings]
        parts.append("</ul>")
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
        from interp.plotting import svg_text  # matplotlib only when a figure is shown

        svg = svg_text(figure)
        parts.append(svg[svg.find("<svg"):])
    parts.append("</div>")
    return "".join(parts)
