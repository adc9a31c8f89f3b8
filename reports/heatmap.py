"""Pure-SVG figures for the reports: a labelled heatmap and a line chart.

No plotting library, no script: each function returns one ``<svg>`` element as
:class:`markupsafe.Markup`, with every label, cell text and tooltip escaped.
Hover tooltips are SVG ``<title>`` elements, which browsers show natively.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup

from interp.errors import InterpError
from reports.html import format_number, truncate, visible_token

__all__ = ["COLORMAPS", "colormap_color", "heatmap_svg", "line_chart_svg", "text_color_for"]

SVG_NS = "http://www.w3.org/2000/svg"
MONO = "ui-monospace, SFMono-Regular, Menlo, Consolas, DejaVu Sans Mono, Liberation Mono, monospace"
SANS = "system-ui, -apple-system, Segoe UI, Roboto, Helvetica Neue, DejaVu Sans, Arial, sans-serif"
INK = "#1d2330"
INK_2 = "#4a5468"
MUTED = "#7a8496"
GRID = "#e6e9ef"
MISSING_FILL = "#e9ebef"

#: Sequential colormaps as evenly spaced stops (matplotlib's viridis, magma, cividis;
#: ColorBrewer's Blues).
COLORMAPS: dict[str, tuple[str, ...]] = {
    "viridis": (
        "#440154", "#482878", "#3e4a89", "#31688e", "#26828e",
        "#1f9e89", "#35b779", "#6ece58", "#b5de2b", "#fde725",
    ),
    "magma": (
        "#000004", "#180f3d", "#440f76", "#721f81", "#9e2f7f",
        "#cd4071", "#f1605d", "#fd9668", "#feca8d", "#fcfdbf",
    ),
    "cividis": (
        "#00224e", "#123570", "#3b496c", "#575d6d", "#707173",
        "#8a8678", "#a59c74", "#c3b369", "#e1cc55", "#fee838",
    ),
    "blues": (
        "#f7fbff", "#deebf7", "#c6dbef", "#9ecae1", "#6baed6",
        "#4292c6", "#2171b5", "#08519c", "#08306b",
    ),
}  # fmt: skip

#: Categorical palette for line charts (Tableau 10).
PALETTE = (
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
    "#b07aa1", "#edc948", "#ff9da7", "#9c755f", "#bab0ac",
)  # fmt: skip


# ------------------------------------------------------------------------ colours


def _hex_to_rgb(color: str) -> tuple[int, int, int]:
    c = color.lstrip("#")
    if len(c) == 3:
        c = "".join(ch * 2 for ch in c)
    if len(c) != 6:
        raise InterpError(f"colour {color!r} is not #rrggbb")
    try:
        return int(c[0:2], 16), int(c[2:4], 16), int(c[4:6], 16)
    except ValueError:
        raise InterpError(f"colour {color!r} is not #rrggbb") from None


def _rgb_to_hex(rgb: Sequence[float]) -> str:
    return "#" + "".join(f"{max(0, min(255, round(v))):02x}" for v in rgb)


def _stops(colormap: str | Sequence[str]) -> tuple[str, ...]:
    if isinstance(colormap, str):
        try:
            return COLORMAPS[colormap.lower()]
        except KeyError:
            raise InterpError(
                f"unknown colormap {colormap!r}; choose one of {', '.join(COLORMAPS)}"
            ) from None
    stops = tuple(str(c) for c in colormap)
    if len(stops) < 2:
        raise InterpError("a custom colormap needs at least two colours")
    for c in stops:
        _hex_to_rgb(c)
    return stops


def colormap_color(t: float, colormap: str | Sequence[str] = "viridis") -> str:
    """The colour at ``t`` in [0, 1] (clamped) of a sequential colormap, as ``#rrggbb``."""
    stops = _stops(colormap)
    t = 0.0 if math.isnan(t) else min(1.0, max(0.0, t))
    pos = t * (len(stops) - 1)
    i = min(int(pos), len(stops) - 2)
    frac = pos - i
    a, b = _hex_to_rgb(stops[i]), _hex_to_rgb(stops[i + 1])
    return _rgb_to_hex([x + (y - x) * frac for x, y in zip(a, b, strict=True)])


def _luminance(color: str) -> float:
    def lin(c: int) -> float:
        s = c / 255
        return s / 12.92 if s <= 0.03928 else ((s + 0.055) / 1.055) ** 2.4

    r, g, b = _hex_to_rgb(color)
    return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b)


def text_color_for(background: str) -> str:
    """Near-black or white, whichever contrasts more with ``background`` (WCAG luminance)."""
    lum = _luminance(background)
    return INK if (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) else "#ffffff"


# ------------------------------------------------------------------------ helpers


def _n(x: float) -> str:
    """A compact SVG coordinate."""
    s = f"{x:.2f}".rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


def _float(value: Any) -> float:
    if value is None:
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        raise InterpError(f"expected a number, got {value!r}") from None


def _text_width(text: str, font_size: float, mono: bool = False) -> float:
    """Rough rendered width; good enough to lay out labels without a browser."""
    per = 0.62 if mono else 0.56
    wide = sum(1 for ch in text if ord(ch) > 0x2E80)  # CJK and friends take ~2 cells
    return (len(text) + wide) * font_size * per


def _nice_step(span: float, target: int) -> float:
    if span <= 0 or not math.isfinite(span):
        return 1.0
    raw = span / max(target, 1)
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def _nice_ticks(lo: float, hi: float, target: int = 5) -> list[float]:
    step = _nice_step(hi - lo, target)
    start = math.ceil(lo / step - 1e-9) * step
    ticks = []
    t = start
    while t <= hi + step * 1e-9:
        ticks.append(0.0 if abs(t) < step * 1e-9 else t)
        t += step
    return ticks


def _tick_label(v: float, step: float) -> str:
    if step >= 1 and float(v).is_integer():
        return str(int(v))
    decimals = 6
    for d in range(7):
        if abs(round(step, d) - step) <= 1e-9 * step:
            decimals = d
            break
    return f"{v:.{decimals}f}"


def _matrix(values: Sequence[Sequence[Any]], name: str) -> list[list[Any]]:
    try:
        return [list(row) for row in values]
    except TypeError:
        raise InterpError(f"{name} must be a list of rows") from None


# ------------------------------------------------------------------------ heatmap


def _svg_open(
    cls: str, width: float, height: float, aria: str, font_size: float | str,
    data_n: int | None = None,
) -> Markup:
    """The opening ``<svg>`` tag of a chart (escaped label) and its ``<title>``."""
    extra = Markup(' data-n="{}"').format(data_n) if data_n is not None else Markup("")
    return Markup(
        '<svg xmlns="{}" class="{}" width="{}" height="{}" viewBox="0 0 {} {}" '
        'role="img" aria-label="{}" font-family="{}" font-size="{}"{}><title>{}</title>'
    ).format(SVG_NS, cls, _n(width), _n(height), _n(width), _n(height), aria, SANS,
             font_size, extra, aria)


def heatmap_svg(
    values: Sequence[Sequence[float]],
    *,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    cell_text: Sequence[Sequence[str]] | None = None,
    tooltips: Sequence[Sequence[str]] | None = None,
    vmin: float = 0.0,
    vmax: float = 1.0,
    colormap: str | Sequence[str] = "viridis",
    title: str | None = None,
    colorbar_label: str | None = None,
    x_label: str | None = None,
    y_label: str | None = None,
    col_sublabels: Sequence[str] | None = None,
    emphasis: Sequence[Sequence[bool]] | None = None,
    visible_whitespace: bool = True,
    max_cell_chars: int = 12,
    max_width: float | None = 1076.0,
) -> Markup:
    """A rows × cols heatmap as one ``<svg>`` element.

    Row ``i`` of ``values`` is drawn as the i-th row from the TOP. Each cell is
    coloured by its value mapped from [vmin, vmax] onto ``colormap`` (NaN/None:
    grey), shows ``cell_text`` (default: the value) in black or white chosen by
    luminance, and carries ``tooltips`` as a native hover ``<title>``. Cell text
    and column labels have whitespace made visible (``" "`` -> ``"␣"``,
    newline -> ``"↵"``) and are truncated with "…"; tooltips keep the full text.
    ``emphasis`` marks cells to draw in bold. Columns narrow (down to a minimum)
    to keep the figure within ``max_width`` pixels. Each cell is a
    ``<g class="hm-cell" data-row=i data-col=j>``.
    """
    vals = _matrix(values, "values")
    n_rows = len(vals)
    n_cols = len(vals[0]) if vals else 0
    if n_rows == 0 or n_cols == 0:
        raise InterpError("heatmap needs at least one row and one column")
    for i, row in enumerate(vals):
        if len(row) != n_cols:
            raise InterpError(f"heatmap row {i} has {len(row)} values, expected {n_cols}")
    row_labels = [str(x) for x in row_labels]
    col_labels = [str(x) for x in col_labels]
    if len(row_labels) != n_rows:
        raise InterpError(f"heatmap has {n_rows} rows but {len(row_labels)} row labels")
    if len(col_labels) != n_cols:
        raise InterpError(f"heatmap has {n_cols} columns but {len(col_labels)} column labels")
    if col_sublabels is not None:
        col_sublabels = [str(x) for x in col_sublabels]
        if len(col_sublabels) != n_cols:
            raise InterpError(f"heatmap has {n_cols} columns but {len(col_sublabels)} sublabels")
    for name, grid in (("cell_text", cell_text), ("tooltips", tooltips), ("emphasis", emphasis)):
        if grid is None:
            continue
        g = _matrix(grid, name)
        if len(g) != n_rows or any(len(r) != n_cols for r in g):
            raise InterpError(f"heatmap {name} must be {n_rows} × {n_cols}")
    vmin, vmax = float(vmin), float(vmax)
    if not (math.isfinite(vmin) and math.isfinite(vmax)) or vmax <= vmin:
        raise InterpError(f"heatmap needs finite vmin < vmax, got {vmin}, {vmax}")
    stops = _stops(colormap)

    nums = [[_float(v) for v in row] for row in vals]

    def shown(text: str) -> str:
        return visible_token(text) if visible_whitespace else str(text)

    if cell_text is None:
        texts = [[format_number(v, 2) for v in row] for row in nums]
    else:
        texts = [[shown(str(t)) for t in row] for row in cell_text]
    col_shown = [shown(c) for c in col_labels]

    # ---- layout: columns sized to the longest text, shrunk (smaller font, more
    # truncation) when the figure would be wider than max_width; past the
    # minimum width the figure scrolls horizontally in the page.
    cell_fs, label_fs, small_fs = 11.5, 11.5, 10.0
    longest = max(
        [len(truncate(t, max_cell_chars)) for row in texts for t in row]
        + [min(len(c), max_cell_chars) for c in col_shown]
    )
    col_w = max(46.0, min(128.0, longest * cell_fs * 0.62 + 14))
    row_h = 24.0
    row_label_w = max(_text_width(r, label_fs) for r in row_labels) + 10
    y_title_w = 22.0 if y_label else 0.0
    left = 10 + y_title_w + row_label_w
    top = 14 + (26.0 if title else 0.0)
    bottom = 10 + 18 + (14.0 if col_sublabels else 0.0) + (22.0 if x_label else 0.0)
    cb_gap, cb_w = 18.0, 12.0
    tick_labels = [format_number(v, 2) for v in _nice_ticks(vmin, vmax, 5)]
    cb_ticks_w = max(_text_width(t, small_fs) for t in tick_labels) + 10
    cb_title_w = 20.0 if colorbar_label else 0.0
    fixed_w = left + cb_gap + cb_w + cb_ticks_w + cb_title_w + 8
    if max_width is not None and fixed_w + n_cols * col_w > max_width:
        col_w = max(38.0, (float(max_width) - fixed_w) / n_cols)
        if col_w < 64:
            cell_fs = 10.5
    col_fs = cell_fs
    fit_chars = max(2, int((col_w - 6) / (cell_fs * 0.62)))
    grid_w, grid_h = n_cols * col_w, n_rows * row_h
    width = fixed_w + grid_w
    height = top + grid_h + bottom

    out: list[Markup] = []
    add = out.append
    aria = title or "heatmap"
    add(_svg_open("interp-heatmap", width, height, aria, label_fs))
    if title:
        add(
            Markup(
                '<text class="hm-title" x="{}" y="{}" font-size="13.5" font-weight="600" '
                'fill="{}">{}</text>'
            ).format(_n(left), _n(20), INK, title)
        )

    # rows
    for i, label in enumerate(row_labels):
        y = top + i * row_h + row_h / 2
        add(
            Markup(
                '<text class="hm-row-label" x="{}" y="{}" text-anchor="end" '
                'dominant-baseline="central" fill="{}">{}</text>'
            ).format(_n(left - 7), _n(y), INK_2, label)
        )
    if y_label:
        cy = top + grid_h / 2
        add(
            Markup(
                '<text class="hm-axis-title" x="{}" y="{}" text-anchor="middle" '
                'transform="rotate(-90 {} {})" fill="{}" font-size="12">{}</text>'
            ).format(_n(18), _n(cy), _n(18), _n(cy), MUTED, y_label)
        )

    # cells
    add(Markup('<g class="hm-cells" font-family="{}" font-size="{}">').format(MONO, cell_fs))
    for i in range(n_rows):
        for j in range(n_cols):
            v = nums[i][j]
            x, y = left + j * col_w, top + i * row_h
            if math.isnan(v):
                fill = MISSING_FILL
            else:
                fill = colormap_color((v - vmin) / (vmax - vmin), stops)
            ink = text_color_for(fill)
            tip = (
                str(tooltips[i][j])
                if tooltips is not None
                else (f"{row_labels[i]} · {col_labels[j]}: {format_number(v, 3)}")
            )
            bold = emphasis is not None and bool(emphasis[i][j])
            add(Markup('<g class="hm-cell" data-row="{}" data-col="{}">').format(i, j))
            add(Markup("<title>{}</title>").format(tip))
            add(
                Markup(
                    '<rect x="{}" y="{}" width="{}" height="{}" fill="{}" stroke="#ffffff" '
                    'stroke-width="1"/>'
                ).format(_n(x), _n(y), _n(col_w), _n(row_h), fill)
            )
            add(
                Markup(
                    '<text x="{}" y="{}" text-anchor="middle" dominant-baseline="central" '
                    'fill="{}"{}>{}</text>'
                ).format(
                    _n(x + col_w / 2),
                    _n(y + row_h / 2 + 0.5),
                    ink,
                    Markup(' font-weight="700"') if bold else Markup(""),
                    truncate(texts[i][j], min(fit_chars, max_cell_chars)),
                )
            )
            add(Markup("</g>"))
    add(Markup("</g>"))

    # column labels (input tokens) under the grid
    y_lab = top + grid_h + 16
    add(Markup('<g class="hm-col-labels" font-family="{}" font-size="{}">').format(MONO, col_fs))
    for j, label in enumerate(col_shown):
        cx = left + j * col_w + col_w / 2
        add(
            Markup(
                '<text x="{}" y="{}" text-anchor="middle" fill="{}"><title>{}</title>{}</text>'
            ).format(_n(cx), _n(y_lab), INK, col_labels[j], truncate(label, fit_chars))
        )
        if col_sublabels:
            add(
                Markup(
                    '<text x="{}" y="{}" text-anchor="middle" fill="{}" font-size="{}" '
                    'font-family="{}">{}</text>'
                ).format(_n(cx), _n(y_lab + 14), MUTED, small_fs, SANS, col_sublabels[j])
            )
    add(Markup("</g>"))
    if x_label:
        add(
            Markup(
                '<text class="hm-axis-title" x="{}" y="{}" text-anchor="middle" fill="{}" '
                'font-size="12">{}</text>'
            ).format(
                _n(left + grid_w / 2),
                _n(y_lab + (14 if col_sublabels else 0) + 20),
                MUTED,
                x_label,
            )
        )

    # colour bar: stacked rects (no gradient ids, so several heatmaps can share a page)
    cb_x = left + grid_w + cb_gap
    cb_h = max(grid_h, 60.0)
    cb_top = top + (grid_h - cb_h) / 2 if grid_h >= 60 else top
    steps = 48
    add(Markup('<g class="hm-colorbar">'))
    for k in range(steps):
        t0 = k / steps
        color = colormap_color((k + 0.5) / steps, stops)
        y0 = cb_top + cb_h * (1 - t0) - cb_h / steps
        add(
            Markup('<rect x="{}" y="{}" width="{}" height="{}" fill="{}"/>').format(
                _n(cb_x), _n(y0), _n(cb_w), _n(cb_h / steps + 0.4), color
            )
        )
    add(
        Markup(
            '<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="{}" '
            'stroke-width="0.8"/>'
        ).format(_n(cb_x), _n(cb_top), _n(cb_w), _n(cb_h), "#b8bfcc")
    )
    for tv in _nice_ticks(vmin, vmax, 5):
        ty = cb_top + cb_h * (1 - (tv - vmin) / (vmax - vmin))
        add(
            Markup('<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="1"/>').format(
                _n(cb_x + cb_w), _n(ty), _n(cb_x + cb_w + 4), _n(ty), INK_2
            )
        )
        add(
            Markup(
                '<text x="{}" y="{}" dominant-baseline="central" fill="{}" font-size="{}">{}</text>'
            ).format(_n(cb_x + cb_w + 7), _n(ty), INK_2, small_fs, format_number(tv, 2))
        )
    if colorbar_label:
        cx = cb_x + cb_w + cb_ticks_w + 10
        cy = cb_top + cb_h / 2
        add(
            Markup(
                '<text x="{}" y="{}" text-anchor="middle" transform="rotate(90 {} {})" '
                'fill="{}" font-size="11.5">{}</text>'
            ).format(_n(cx), _n(cy), _n(cx), _n(cy), MUTED, colorbar_label)
        )
    add(Markup("</g>"))
    add(Markup("</svg>"))
    return Markup("").join(out)


# --------------------------------------------------------------------- line chart


def _grid_and_ticks(
    add: Any, x_ticks: Sequence[float], y_ticks: Sequence[float], sx: Any, sy: Any,
    x_step: float, y_step: float, left: float, top: float, plot_w: float, plot_h: float,
) -> None:
    """Horizontal grid lines with y tick labels, and x tick marks with labels."""
    for t in y_ticks:
        yy = sy(t)
        add(
            Markup('<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="1"/>').format(
                _n(left), _n(yy), _n(left + plot_w), _n(yy), GRID
            )
        )
        add(
            Markup(
                '<text x="{}" y="{}" text-anchor="end" dominant-baseline="central" '
                'fill="{}">{}</text>'
            ).format(_n(left - 7), _n(yy), INK_2, _tick_label(t, y_step))
        )
    for t in x_ticks:
        xx = sx(t)
        add(
            Markup('<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="1"/>').format(
                _n(xx), _n(top + plot_h), _n(xx), _n(top + plot_h + 4), INK_2
            )
        )
        add(
            Markup('<text x="{}" y="{}" text-anchor="middle" fill="{}">{}</text>').format(
                _n(xx), _n(top + plot_h + 17), INK_2, _tick_label(t, x_step)
            )
        )


def line_chart_svg(
    series: Mapping[str, Sequence[float]],
    x: Sequence[float],
    *,
    x_label: str,
    y_label: str,
    title: str | None = None,
    bands: Mapping[str, tuple[Sequence[float], Sequence[float]]] | None = None,
    styles: Mapping[str, Mapping[str, Any]] | None = None,
    width: float = 720.0,
    height: float = 320.0,
    y_min: float | None = None,
    y_max: float | None = None,
    integer_x: bool | None = None,
) -> Markup:
    """Curves over a shared x axis (e.g. per-layer KL and entropy) as one ``<svg>``.

    ``bands[name] = (lo, hi)`` shades a band around series ``name`` in its
    colour. ``styles[name]`` may set ``color`` (``#rrggbb``) and ``dash`` (bool).
    NaN/None points break the line. Each point carries a hover tooltip.
    """
    xs = [_float(v) for v in x]
    if not xs:
        raise InterpError("line chart needs at least one x value")
    if not series:
        raise InterpError("line chart needs at least one series")
    data: dict[str, list[float]] = {}
    for name, ys in series.items():
        ys_f = [_float(v) for v in ys]
        if len(ys_f) != len(xs):
            raise InterpError(f"series {name!r} has {len(ys_f)} points, expected {len(xs)}")
        data[str(name)] = ys_f
    band_data: dict[str, tuple[list[float], list[float]]] = {}
    for name, pair in (bands or {}).items():
        if str(name) not in data:
            raise InterpError(f"band {name!r} has no series of that name")
        try:
            lo, hi = pair
        except (TypeError, ValueError):
            raise InterpError(f"band {name!r} must be a (lo, hi) pair") from None
        lo_f, hi_f = [_float(v) for v in lo], [_float(v) for v in hi]
        if len(lo_f) != len(xs) or len(hi_f) != len(xs):
            raise InterpError(f"band {name!r} must have {len(xs)} points on each side")
        band_data[str(name)] = (lo_f, hi_f)
    styles = styles or {}
    colors = {}
    for k, name in enumerate(data):
        st = styles.get(name, {})
        color = str(st.get("color", PALETTE[k % len(PALETTE)]))
        _hex_to_rgb(color)
        colors[name] = color
    if integer_x is None:
        integer_x = all(math.isfinite(v) and float(v).is_integer() for v in xs)

    # ---- ranges
    finite_y = [v for ys in data.values() for v in ys if math.isfinite(v)]
    for lo, hi in band_data.values():
        finite_y += [v for v in lo + hi if math.isfinite(v)]
    y_lo = min(finite_y + [0.0]) if y_min is None else float(y_min)
    y_hi = (max(finite_y) if finite_y else 1.0) if y_max is None else float(y_max)
    if y_hi <= y_lo:
        y_hi = y_lo + 1.0
    y_ticks = _nice_ticks(y_lo, y_hi, 5)
    y_step = _nice_step(y_hi - y_lo, 5)
    if y_max is None:
        y_hi = max(y_hi, y_ticks[-1])
        if y_ticks[-1] < y_hi - 1e-12 * max(1.0, abs(y_hi)):
            y_hi = y_ticks[-1] + y_step
            y_ticks.append(y_hi)
    if y_min is None and y_ticks and y_ticks[0] > y_lo:
        y_lo = y_ticks[0] - y_step
        y_ticks.insert(0, y_lo)
    fx = [v for v in xs if math.isfinite(v)]
    x_lo, x_hi = (min(fx), max(fx)) if fx else (0.0, 1.0)
    if x_hi <= x_lo:
        x_lo, x_hi = x_lo - 1, x_hi + 1
    if integer_x and x_hi - x_lo <= 24:
        x_ticks = [float(v) for v in range(int(x_lo), int(x_hi) + 1)]
        x_step = 1.0
    else:
        x_ticks = [t for t in _nice_ticks(x_lo, x_hi, 8) if x_lo <= t <= x_hi]
        x_step = _nice_step(x_hi - x_lo, 8)

    # ---- layout
    legend_items = list(data)
    legend_fs = 11.5
    item_w = [28 + _text_width(n, legend_fs) + 18 for n in legend_items]
    y_tick_w = max(_text_width(_tick_label(t, y_step), 11) for t in y_ticks)
    left = 22 + y_tick_w + 12
    right = 16.0
    avail = width - left - right
    # Legend: one row if it fits, else a balanced grid of equal-width columns.
    if sum(item_w) <= avail:
        legend_rows = [list(range(len(item_w)))]
    else:
        cell = max(item_w)
        n_cols = max(1, int(avail // cell))
        n_rows = math.ceil(len(item_w) / n_cols)
        n_cols = math.ceil(len(item_w) / n_rows)
        item_w = [cell] * len(item_w)
        legend_rows = [
            list(range(k, min(k + n_cols, len(item_w)))) for k in range(0, len(item_w), n_cols)
        ]
    top = 12 + (24.0 if title else 0.0) + 18 * len(legend_rows) + 8
    bottom = 46.0
    plot_w, plot_h = width - left - right, height - top - bottom
    if plot_h < 80:
        height += 80 - plot_h
        plot_h = 80.0

    def sx(v: float) -> float:
        return left + (v - x_lo) / (x_hi - x_lo) * plot_w

    def sy(v: float) -> float:
        return top + (1 - (v - y_lo) / (y_hi - y_lo)) * plot_h

    out: list[Markup] = []
    add = out.append
    aria = title or f"{y_label} by {x_label}"
    add(_svg_open("interp-linechart", width, height, aria, 11))
    if title:
        add(
            Markup(
                '<text x="{}" y="{}" font-size="13.5" font-weight="600" fill="{}">{}</text>'
            ).format(_n(left), _n(22), INK, title)
        )

    # legend
    ly = 12 + (24.0 if title else 0.0) + 9
    for row in legend_rows:
        lx = left
        for k in row:
            name = legend_items[k]
            st = styles.get(name, {})
            dash = Markup(' stroke-dasharray="5 3"') if st.get("dash") else Markup("")
            add(Markup('<g class="lc-legend-item">'))
            if name in band_data:
                add(
                    Markup(
                        '<rect x="{}" y="{}" width="22" height="10" fill="{}" fill-opacity="0.16"/>'
                    ).format(_n(lx), _n(ly - 5), colors[name])
                )
            add(
                Markup(
                    '<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="2.2"{}/>'
                ).format(_n(lx), _n(ly), _n(lx + 22), _n(ly), colors[name], dash)
            )
            add(
                Markup(
                    '<text x="{}" y="{}" dominant-baseline="central" fill="{}">{}</text>'
                ).format(_n(lx + 28), _n(ly), INK_2, name)
            )
            add(Markup("</g>"))
            lx += item_w[k]
        ly += 18

    # grid and axes
    add(Markup('<g class="lc-grid">'))
    _grid_and_ticks(add, x_ticks, y_ticks, sx, sy, x_step, y_step, left, top, plot_w, plot_h)
    add(
        Markup('<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="1"/>').format(
            _n(left), _n(top + plot_h), _n(left + plot_w), _n(top + plot_h), "#9aa3b2"
        )
    )
    add(Markup("</g>"))
    add(
        Markup(
            '<text x="{}" y="{}" text-anchor="middle" fill="{}" font-size="12">{}</text>'
        ).format(_n(left + plot_w / 2), _n(top + plot_h + 38), MUTED, x_label)
    )
    cy = top + plot_h / 2
    add(
        Markup(
            '<text x="{}" y="{}" text-anchor="middle" transform="rotate(-90 {} {})" fill="{}" '
            'font-size="12">{}</text>'
        ).format(_n(14), _n(cy), _n(14), _n(cy), MUTED, y_label)
    )

    # bands, then lines, then points (so points stay hoverable on top)
    def clip(v: float) -> float:
        return min(max(v, y_lo), y_hi)

    for name, (lo, hi) in band_data.items():
        idx = [k for k in range(len(xs)) if all(map(math.isfinite, (xs[k], lo[k], hi[k])))]
        if len(idx) < 2:
            continue
        pts = [(sx(xs[k]), sy(clip(hi[k]))) for k in idx]
        pts += [(sx(xs[k]), sy(clip(lo[k]))) for k in reversed(idx)]
        d = "M" + " L".join(f"{_n(a)} {_n(b)}" for a, b in pts) + " Z"
        add(
            Markup(
                '<path class="lc-band" d="{}" fill="{}" fill-opacity="0.16" stroke="none"/>'
            ).format(d, colors[name])
        )
    for name, ys in data.items():
        st = styles.get(name, {})
        dash = Markup(' stroke-dasharray="5 3"') if st.get("dash") else Markup("")
        segs: list[list[tuple[float, float]]] = [[]]
        for xv, yv in zip(xs, ys, strict=True):
            if math.isfinite(xv) and math.isfinite(yv):
                segs[-1].append((sx(xv), sy(clip(yv))))
            elif segs[-1]:
                segs.append([])
        d = " ".join(
            "M" + " L".join(f"{_n(a)} {_n(b)}" for a, b in seg) for seg in segs if len(seg) > 1
        )
        if d:
            add(
                Markup(
                    '<path class="lc-line" d="{}" fill="none" stroke="{}" stroke-width="2" '
                    'stroke-linejoin="round" stroke-linecap="round"{}/>'
                ).format(d, colors[name], dash)
            )
    for name, ys in data.items():
        add(Markup('<g class="lc-points" fill="{}">').format(colors[name]))
        for k, (xv, yv) in enumerate(zip(xs, ys, strict=True)):
            if not (math.isfinite(xv) and math.isfinite(yv)):
                continue
            tip = f"{name}\n{x_label} {int(xv) if integer_x else format_number(xv)}"
            tip += f": {format_number(yv)}"
            if name in band_data:
                lo, hi = band_data[name]
                tip += f"  [{format_number(lo[k])}, {format_number(hi[k])}]"
            add(
                Markup(
                    '<circle cx="{}" cy="{}" r="3" stroke="#ffffff" stroke-width="1">'
                    "<title>{}</title></circle>"
                ).format(_n(sx(xv)), _n(sy(clip(yv))), tip)
            )
        add(Markup("</g>"))
    add(Markup("</svg>"))
    return Markup("").join(out)


# ---------------------------------------------------------------------- histogram

MARKER_COLOR = "#c92a2a"
BAR_COLOR = "#8da4c8"


def histogram_svg(
    values: Sequence[float | None],
    *,
    marker: float | None = None,
    marker_label: str | None = None,
    x_label: str,
    bins: int = 12,
    title: str | None = None,
    y_label: str = "count",
    width: float = 520.0,
    height: float = 270.0,
    color: str = BAR_COLOR,
) -> Markup:
    """A histogram of ``values`` (None/NaN left out) as one ``<svg>``, with an optional marker.

    The bins span the finite values; the x axis is widened to include ``marker``,
    drawn as a vertical line with ``marker_label`` above the plot, so a tested value
    far outside the distribution still shows (and shows how far out it is). Each bin
    is a ``<rect class="hist-bar" data-count=n>`` with a hover tooltip; the root
    carries ``data-n`` (the number of values binned).
    """
    if bins < 1:
        raise InterpError(f"a histogram needs at least one bin, got {bins}")
    _hex_to_rgb(color)
    vals = [v for v in (_float(x) for x in values) if math.isfinite(v)]
    mk = _float(marker) if marker is not None else math.nan
    has_marker = math.isfinite(mk)

    # ---- bins over the data, axis over data ∪ marker
    if vals:
        d_lo, d_hi = min(vals), max(vals)
        if d_hi <= d_lo:
            half = abs(d_lo) * 0.05 or 0.5
            d_lo, d_hi = d_lo - half, d_hi + half
        edges = [d_lo + (d_hi - d_lo) * k / bins for k in range(bins + 1)]
        counts = [0] * bins
        for v in vals:
            k = min(bins - 1, int((v - d_lo) / (d_hi - d_lo) * bins))
            counts[max(0, k)] += 1
    else:
        d_lo, d_hi = (mk - 0.5, mk + 0.5) if has_marker else (0.0, 1.0)
        edges, counts = [], []
    a_lo, a_hi = d_lo, d_hi
    if has_marker:
        a_lo, a_hi = min(a_lo, mk), max(a_hi, mk)
    pad = (a_hi - a_lo) * 0.04
    a_lo, a_hi = a_lo - pad, a_hi + pad
    x_ticks = [t for t in _nice_ticks(a_lo, a_hi, 6) if a_lo <= t <= a_hi]
    x_step = _nice_step(a_hi - a_lo, 6)
    c_max = max(counts, default=0)
    y_top = max(1, c_max)
    y_step = max(1.0, _nice_step(y_top, 4))
    y_ticks = [float(t) for t in range(0, int(math.ceil(y_top / y_step) * y_step) + 1, int(y_step))]
    y_hi = y_ticks[-1] if y_ticks[-1] > 0 else 1.0

    # ---- layout
    y_tick_w = max(_text_width(_tick_label(t, y_step), 11) for t in y_ticks)
    left = 22 + y_tick_w + 12
    right = 16.0
    top = 10 + (24.0 if title else 0.0) + (20.0 if has_marker and marker_label else 6.0)
    bottom = 46.0
    plot_w, plot_h = width - left - right, height - top - bottom
    if plot_h < 80:
        height += 80 - plot_h
        plot_h = 80.0

    def sx(v: float) -> float:
        return left + (v - a_lo) / (a_hi - a_lo) * plot_w

    def sy(c: float) -> float:
        return top + (1 - c / y_hi) * plot_h

    out: list[Markup] = []
    add = out.append
    aria = title or f"histogram of {x_label}"
    add(_svg_open("interp-histogram", width, height, aria, 11, data_n=len(vals)))
    if title:
        add(
            Markup(
                '<text x="{}" y="{}" font-size="13.5" font-weight="600" fill="{}">{}</text>'
            ).format(_n(left), _n(22), INK, title)
        )

    # grid, ticks, axes
    add(Markup('<g class="hist-grid">'))
    _grid_and_ticks(add, x_ticks, y_ticks, sx, sy, x_step, y_step, left, top, plot_w, plot_h)
    add(Markup("</g>"))

    # bars
    add(Markup('<g class="hist-bars" fill="{}">').format(color))
    for k, c in enumerate(counts):
        x0, x1 = sx(edges[k]), sx(edges[k + 1])
        tip = f"{format_number(edges[k])} to {format_number(edges[k + 1])}: {c}"
        add(
            Markup(
                '<rect class="hist-bar" data-count="{}" x="{}" y="{}" width="{}" height="{}" '
                'stroke="#ffffff" stroke-width="1"><title>{}</title></rect>'
            ).format(c, _n(x0), _n(sy(c)), _n(max(x1 - x0, 0.5)), _n(plot_h - (sy(c) - top)), tip)
        )
    add(Markup("</g>"))
    if not vals:
        add(
            Markup(
                '<text x="{}" y="{}" text-anchor="middle" fill="{}" font-size="12">no data</text>'
            ).format(_n(left + plot_w / 2), _n(top + plot_h / 2), MUTED)
        )
    add(
        Markup('<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="1"/>').format(
            _n(left), _n(top + plot_h), _n(left + plot_w), _n(top + plot_h), "#9aa3b2"
        )
    )
    add(
        Markup(
            '<text x="{}" y="{}" text-anchor="middle" fill="{}" font-size="12">{}</text>'
        ).format(_n(left + plot_w / 2), _n(top + plot_h + 38), MUTED, x_label)
    )
    cy = top + plot_h / 2
    add(
        Markup(
            '<text x="{}" y="{}" text-anchor="middle" transform="rotate(-90 {} {})" fill="{}" '
            'font-size="12">{}</text>'
        ).format(_n(14), _n(cy), _n(14), _n(cy), MUTED, y_label)
    )

    # marker: a vertical line, its label above the plot (kept inside the figure)
    if has_marker:
        mx = sx(mk)
        tip = marker_label or f"{format_number(mk)}"
        add(Markup('<g class="hist-marker" data-value="{}">').format(format_number(mk, 6)))
        add(Markup("<title>{}</title>").format(tip))
        add(
            Markup('<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="2.2"/>').format(
                _n(mx), _n(top - 4), _n(mx), _n(top + plot_h), MARKER_COLOR
            )
        )
        if marker_label:
            fs = 11.5
            tw = _text_width(marker_label, fs)
            tx = min(max(mx - tw / 2, 4.0), width - 4.0 - tw)
            add(
                Markup(
                    '<text class="hist-marker-label" x="{}" y="{}" fill="{}" font-size="{}" '
                    'font-weight="600">{}</text>'
                ).format(_n(max(tx, 4.0)), _n(top - 9), MARKER_COLOR, fs, marker_label)
            )
        add(Markup("</g>"))
    add(Markup("</svg>"))
    return Markup("").join(out)


# ---------------------------------------------------------------------- bar chart


def bar_chart_svg(
    labels: Sequence[str],
    values: Sequence[float | None],
    *,
    x_label: str,
    errors: Sequence[float | None] | None = None,
    colors: Sequence[str] | None = None,
    title: str | None = None,
    x_min: float = 0.0,
    x_max: float | None = None,
    width: float = 640.0,
) -> Markup:
    """Horizontal bars, one per label, as one ``<svg>`` (e.g. accuracies of one layer).

    ``errors`` draws ±error whiskers; a None/NaN value is shown as "—" with no bar.
    Each bar is a ``<g class="bar-item">`` with a hover tooltip.
    """
    labels = [str(x) for x in labels]
    vals = [_float(v) for v in values]
    if not labels:
        raise InterpError("bar chart needs at least one bar")
    if len(vals) != len(labels):
        raise InterpError(f"bar chart has {len(labels)} labels but {len(vals)} values")
    errs = [_float(e) for e in errors] if errors is not None else [math.nan] * len(vals)
    if len(errs) != len(vals):
        raise InterpError(f"bar chart has {len(vals)} values but {len(errs)} errors")
    cols = [str(c) for c in colors] if colors is not None else [PALETTE[0]] * len(vals)
    if len(cols) != len(vals):
        raise InterpError(f"bar chart has {len(vals)} values but {len(cols)} colours")
    for c in cols:
        _hex_to_rgb(c)
    finite = [
        v + (e if math.isfinite(e) else 0)
        for v, e in zip(vals, errs, strict=True)
        if math.isfinite(v)
    ]
    lo = float(x_min)
    hi = float(x_max) if x_max is not None else max(finite + [lo + 1.0])
    if hi <= lo:
        hi = lo + 1.0
    ticks = _nice_ticks(lo, hi, 5)
    step = _nice_step(hi - lo, 5)

    fs = 12.0
    label_w = max(_text_width(lab, fs) for lab in labels) + 14
    value_w = 104.0
    left = 10 + label_w
    right = value_w + 10
    bar_h, gap = 20.0, 8.0
    top = 10 + (26.0 if title else 0.0)
    plot_w = width - left - right
    plot_h = len(vals) * (bar_h + gap) - gap + 8
    bottom = 44.0
    height = top + plot_h + bottom

    def sx(v: float) -> float:
        return left + (min(max(v, lo), hi) - lo) / (hi - lo) * plot_w

    out: list[Markup] = []
    add = out.append
    aria = title or f"{x_label} by item"
    add(_svg_open("interp-barchart", width, height, aria, fs))
    if title:
        add(
            Markup(
                '<text x="{}" y="{}" font-size="13.5" font-weight="600" fill="{}">{}</text>'
            ).format(_n(left), _n(22), INK, title)
        )
    for t in ticks:
        xx = sx(t)
        add(
            Markup('<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="1"/>').format(
                _n(xx), _n(top), _n(xx), _n(top + plot_h), GRID
            )
        )
        add(
            Markup(
                '<text x="{}" y="{}" text-anchor="middle" fill="{}" font-size="11">{}</text>'
            ).format(_n(xx), _n(top + plot_h + 16), INK_2, _tick_label(t, step))
        )
    for k, (lab, v, e, c) in enumerate(zip(labels, vals, errs, cols, strict=True)):
        y = top + 4 + k * (bar_h + gap)
        cy = y + bar_h / 2
        shown = format_number(v)
        if math.isfinite(v) and math.isfinite(e) and e > 0:
            shown += f" ± {format_number(e)}"
        add(Markup('<g class="bar-item">'))
        add(Markup("<title>{}</title>").format(f"{lab}: {shown}"))
        add(
            Markup(
                '<text x="{}" y="{}" text-anchor="end" dominant-baseline="central" '
                'fill="{}">{}</text>'
            ).format(_n(left - 8), _n(cy), INK_2, lab)
        )
        end = left
        if math.isfinite(v):
            end = sx(v)
            add(
                Markup('<rect x="{}" y="{}" width="{}" height="{}" fill="{}" rx="2"/>').format(
                    _n(left), _n(y), _n(max(end - left, 0.5)), _n(bar_h), c
                )
            )
            if math.isfinite(e) and e > 0:
                x0, x1 = sx(v - e), sx(v + e)
                add(
                    Markup(
                        '<path d="M{} {} L{} {} M{} {} L{} {} M{} {} L{} {}" stroke="{}" '
                        'stroke-width="1.4" fill="none"/>'
                    ).format(
                        _n(x0),
                        _n(cy),
                        _n(x1),
                        _n(cy),
                        _n(x0),
                        _n(cy - 5),
                        _n(x0),
                        _n(cy + 5),
                        _n(x1),
                        _n(cy - 5),
                        _n(x1),
                        _n(cy + 5),
                        INK,
                    )
                )
                end = max(end, x1)
        add(
            Markup(
                '<text x="{}" y="{}" dominant-baseline="central" fill="{}" font-family="{}" '
                'font-size="11.5">{}</text>'
            ).format(
                _n(max(end, left) + 6), _n(cy), INK if math.isfinite(v) else MUTED, MONO, shown
            )
        )
        add(Markup("</g>"))
    add(
        Markup('<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="1"/>').format(
            _n(left), _n(top), _n(left), _n(top + plot_h), "#9aa3b2"
        )
    )
    add(
        Markup(
            '<text x="{}" y="{}" text-anchor="middle" fill="{}" font-size="12">{}</text>'
        ).format(_n(left + plot_w / 2), _n(top + plot_h + 36), MUTED, x_label)
    )
    add(Markup("</svg>"))
    return Markup("").join(out)


__all__ += ["bar_chart_svg", "histogram_svg"]
