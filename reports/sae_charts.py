"""The SVG charts of the SAE evaluation report (:mod:`reports.sae`), and the number
formatting they share with it.

Each chart is one inline ``<svg>`` as :class:`~markupsafe.Markup`: :func:`strips_svg` (one
metric per row with its 95% CI and target), :func:`ce_chart_svg` (spliced cross-entropies),
:func:`density_svg` (the log10 feature-density histogram with dead features as a bar of their
own; also used by the feature browser, :mod:`reports.sae_browser`) and :func:`curve_svg` (a
training curve). Every number may be missing, None or NaN: it is shown as "—" and left out of
the drawing. Every string is escaped.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from markupsafe import Markup

from reports import heatmap
from reports.heatmap import _n, _nice_step, _nice_ticks, _svg_open, _text_width, _tick_label
from reports.html import MISSING, format_number
from reports.html import as_float as _f

__all__ = [
    "FRACTIONS",
    "Strip",
    "Target",
    "as_floats",
    "as_mapping",
    "ce_chart_svg",
    "curve_svg",
    "density_bins",
    "density_svg",
    "fmt_ci",
    "fmt_count",
    "fmt_metric",
    "fmt_pct",
    "fmt_signed",
    "fmt_with_ci",
    "parse_ci",
    "strip_range",
    "strips_svg",
]

#: The charts' palette (public, for the report's own figure code): the inks, grid and
#: monospace font of :mod:`reports.heatmap`, then the report's own colours.
INK, INK_2, MUTED = heatmap.INK, heatmap.INK_2, heatmap.MUTED
GRID, MONO = heatmap.GRID, heatmap.MONO
ACCENT = "#3b5bdb"
OK = "#2b7a3d"
BAD = "#c92a2a"
BAD_SOFT = "#fdecec"
OK_SOFT = "#e3f2e6"
BASE = "#8a93a6"
BAR = "#8da4c8"
DENSE = "#e8a33d"
RESAMPLE = "#9c36b5"
AXIS = "#9aa3b2"

FRACTIONS = {"dead_fraction", "dense_fraction"}


# ------------------------------------------------------------------------ numbers


def fmt_pct(value: Any) -> str:
    """A fraction as a percentage to 3 significant digits."""
    v = _f(value)
    if not math.isfinite(v):
        return MISSING
    return f"{100 * v:.3g}%"


def fmt_count(value: Any) -> str:
    """A whole number with thousands separators; any other number as :func:`format_number`."""
    v = _f(value)
    if not math.isfinite(v):
        return MISSING
    return f"{round(v):,}" if float(v).is_integer() else format_number(v)


def fmt_metric(metric: str, value: Any) -> str:
    """A metric's value in its own display format."""
    if metric in FRACTIONS:
        return fmt_pct(value)
    if metric == "l0":
        return format_number(_f(value), 1)
    if metric == "mse":
        return format_number(_f(value), 4)
    return format_number(_f(value), 3)


def parse_ci(value: Any) -> tuple[float, float] | None:
    """A finite (lo, hi) pair, or None."""
    if not isinstance(value, Sequence) or isinstance(value, str) or len(value) != 2:
        return None
    lo, hi = _f(value[0]), _f(value[1])
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return None
    return (min(lo, hi), max(lo, hi))


def fmt_ci(metric: str, ci: tuple[float, float] | None) -> str:
    """``[lo, hi]`` in the metric's format."""
    return f"[{fmt_metric(metric, ci[0])}, {fmt_metric(metric, ci[1])}]" if ci else MISSING


def fmt_with_ci(metric: str, value: Any, ci: Any) -> str:
    """The value, followed by its CI when both are finite."""
    text = fmt_metric(metric, value)
    c = parse_ci(ci)
    if c and math.isfinite(_f(value)):
        text += f" {fmt_ci(metric, c)}"
    return text


def fmt_signed(value: Any, digits: int = 3) -> str:
    """A number with an explicit sign (``+0.3``, ``-0.3``, ``0``)."""
    v = _f(value)
    if not math.isfinite(v):
        return MISSING
    text = format_number(v, digits)
    return text if text.startswith("-") or v == 0 else "+" + text


def _nice_ceil(x: float) -> float:
    if not math.isfinite(x) or x <= 0:
        return 1.0
    step = _nice_step(x, 6)
    return math.ceil(x / step - 1e-9) * step


def _nice_floor(x: float) -> float:
    if not math.isfinite(x) or x >= 0:
        return 0.0
    return -_nice_ceil(-x)


def as_mapping(value: Any) -> Mapping[str, Any]:
    """``value`` if it is a mapping, else an empty one."""
    return value if isinstance(value, Mapping) else {}


def as_floats(value: Any) -> list[float]:
    """A sequence as floats (non-numbers become NaN); anything else as ``[]``."""
    if not isinstance(value, Sequence) or isinstance(value, str):
        return []
    return [_f(v) for v in value]


# ------------------------------------------------------------------ strips (SVG)


class Target(Protocol):
    """A metric's target as a strip draws it (``reports.sae._Check`` is one)."""

    @property
    def op(self) -> str: ...  # ">=" or "<="

    @property
    def target(self) -> float: ...

    @property
    def passed(self) -> bool | None: ...

    @property
    def target_text(self) -> str: ...


@dataclass
class Strip:
    """One row of :func:`strips_svg`: a metric's value and CI on its own ``[lo, hi]`` axis,
    with an optional target and an optional baseline ``(value, tooltip)``."""

    metric: str
    label: str
    hint: str
    value: float
    ci: tuple[float, float] | None
    lo: float
    hi: float
    check: Target | None = None
    ref: tuple[float, str] | None = None


def strip_range(values: Sequence[float], lo: float, hi: float | None) -> tuple[float, float]:
    """A strip's axis: ``[lo, hi]`` widened to the finite ``values`` (``hi=None``: a nice
    ceiling above them)."""
    fin = [v for v in values if math.isfinite(v)]
    if fin:
        lo = min(lo, _nice_floor(min(fin)))
    if hi is None:
        hi = _nice_ceil(max(fin) * 1.12) if fin else 1.0
    else:
        hi = max([hi] + fin)
    if hi <= lo:
        hi = lo + 1.0
    return lo, hi


def strips_svg(rows: Sequence[Strip], *, width: float = 960.0) -> Markup:
    """One row per metric: its own axis, the value as a dot, the 95% CI as a whisker,
    the target as a dotted line with the failing side tinted, an optional baseline tick."""
    label_w = max(max(max(_text_width(r.label, 12.5), _text_width(r.hint, 10.5)) for r in rows),
                  120.0) + 16
    left = 12 + label_w
    value_w = 200.0
    track_w = width - left - value_w - 10
    row_h = 54.0
    top = 8.0
    height = top + row_h * len(rows) + 4
    out: list[Markup] = []
    add = out.append
    add(_svg_open("sae-strips", width, height, "metrics with 95% confidence intervals", 11))
    for k, r in enumerate(rows):
        lo, hi = r.lo, r.hi

        def sx(v: float, lo: float = lo, hi: float = hi) -> float:
            return left + (min(max(v, lo), hi) - lo) / (hi - lo) * track_w

        cy = top + k * row_h + 20
        passed = r.check.passed if r.check else None
        dot = OK if passed is True else BAD if passed is False else ACCENT
        shown = fmt_with_ci(r.metric, r.value, r.ci)
        tip = f"{r.label}: {shown}"
        if r.check:
            tip += f"  (target {r.check.target_text})"
        add(Markup('<g class="strip" data-metric="{}" data-value="{}">').format(
            r.metric, format_number(r.value, 6)))
        add(Markup("<title>{}</title>").format(tip))
        add(Markup('<text x="{}" y="{}" text-anchor="end" fill="{}" font-size="12.5" '
                   'font-weight="600">{}</text>').format(_n(left - 12), _n(cy + 1), INK, r.label))
        add(Markup('<text x="{}" y="{}" text-anchor="end" fill="{}" font-size="10.5">{}</text>')
            .format(_n(left - 12), _n(cy + 15), MUTED, r.hint))
        # the failing side of the target, tinted
        if r.check and math.isfinite(r.check.target):
            t = sx(r.check.target)
            x0, x1 = (left, t) if r.check.op == ">=" else (t, left + track_w)
            add(Markup('<rect x="{}" y="{}" width="{}" height="{}" fill="{}"/>').format(
                _n(x0), _n(cy - 10), _n(max(x1 - x0, 0)), _n(20), BAD_SOFT))
        add(Markup('<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="1.5"/>')
            .format(_n(left), _n(cy), _n(left + track_w), _n(cy), "#c5ccda"))
        step = _nice_step(hi - lo, 4)
        for t in _nice_ticks(lo, hi, 4):
            if not lo - 1e-12 <= t <= hi + 1e-12:
                continue
            x = sx(t)
            add(Markup('<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="1"/>')
                .format(_n(x), _n(cy + 3), _n(x), _n(cy + 7), AXIS))
            add(Markup('<text x="{}" y="{}" text-anchor="middle" fill="{}" font-size="10">{}'
                       "</text>").format(_n(x), _n(cy + 19), MUTED, _tick_label(t, step)))
        if r.check and math.isfinite(r.check.target):
            t = sx(r.check.target)
            add(Markup('<line class="strip-target" x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" '
                       'stroke-width="1.6" stroke-dasharray="3 2"/>').format(
                _n(t), _n(cy - 13), _n(t), _n(cy + 10), BAD))
            add(Markup('<text x="{}" y="{}" text-anchor="middle" fill="{}" font-size="10">'
                       "target</text>").format(_n(t), _n(cy - 15), BAD))
        if r.ref and math.isfinite(r.ref[0]):
            x = sx(r.ref[0])
            add(Markup('<path class="strip-ref" d="M{} {} l5 -7 l-10 0 Z" fill="{}">'
                       "<title>{}</title></path>").format(_n(x), _n(cy - 3), BASE, r.ref[1]))
            add(Markup('<text x="{}" y="{}" text-anchor="middle" fill="{}" font-size="10">{}'
                       "</text>").format(_n(x), _n(cy - 13), INK_2, "baseline"))
        if math.isfinite(r.value):
            if r.ci:
                a, b = sx(r.ci[0]), sx(r.ci[1])
                add(Markup('<path class="strip-ci" d="M{a} {y} L{b} {y} M{a} {y0} L{a} {y1} '
                           'M{b} {y0} L{b} {y1}" stroke="{c}" stroke-width="2" fill="none"/>')
                    .format(a=_n(a), b=_n(b), y=_n(cy), y0=_n(cy - 5), y1=_n(cy + 5), c=INK))
            add(Markup('<circle class="strip-dot" cx="{}" cy="{}" r="6" fill="{}" '
                       'stroke="#ffffff" stroke-width="1.5"/>').format(_n(sx(r.value)), _n(cy),
                                                                       dot))
        add(Markup('<text x="{}" y="{}" dominant-baseline="central" fill="{}" font-family="{}" '
                   'font-size="12">{}</text>').format(
            _n(left + track_w + 16), _n(cy), INK if math.isfinite(r.value) else MUTED, MONO,
            shown))
        add(Markup("</g>"))
    add(Markup("</svg>"))
    return Markup("").join(out)


# ---------------------------------------------------------------- CE chart (SVG)


def ce_chart_svg(res: Mapping[str, Any], *, width: float = 960.0) -> Markup:
    """Next-token CE of the clean model, the SAE spliced in and the two ablations, one axis."""
    clean, sae = _f(res.get("ce_clean")), _f(res.get("ce_sae"))
    mean_abl, zero_abl = _f(res.get("ce_mean_ablation")), _f(res.get("ce_zero_ablation"))
    delta_ci = parse_ci(res.get("delta_ce_ci95"))
    sae_ci = (clean + delta_ci[0], clean + delta_ci[1]) if delta_ci and math.isfinite(clean) \
        else None
    kl_sae = fmt_with_ci("kl", res.get("kl_sae"), res.get("kl_sae_ci95"))
    rows = [
        ("clean model", clean, INK, "KL 0 (the reference)"),
        ("SAE spliced in", sae, ACCENT, f"KL {kl_sae}"),
        ("mean ablation", mean_abl, BASE, f"KL {fmt_metric('kl', res.get('kl_mean_ablation'))}"),
        ("zero ablation", zero_abl, BASE, f"KL {fmt_metric('kl', res.get('kl_zero_ablation'))}"),
    ]
    fin = [v for _, v, _, _ in rows if math.isfinite(v)] + (list(sae_ci) if sae_ci else [])
    lo, hi = 0.0, _nice_ceil(max(fin)) if fin else 1.0
    label_w = max(_text_width(r[0], 12.5) for r in rows) + 18
    left = 12 + label_w
    text_w = 250.0
    plot_w = width - left - text_w - 12
    row_h, top = 34.0, 10.0
    plot_h = row_h * len(rows)
    height = top + plot_h + 48

    def sx(v: float) -> float:
        return left + (min(max(v, lo), hi) - lo) / (hi - lo) * plot_w

    out: list[Markup] = []
    add = out.append
    add(_svg_open("sae-ce-chart", width, height,
                  "next-token cross-entropy with the SAE spliced in and its baselines", 11))
    step = _nice_step(hi - lo, 6)
    for t in _nice_ticks(lo, hi, 6):
        x = sx(t)
        add(Markup('<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="1"/>').format(
            _n(x), _n(top), _n(x), _n(top + plot_h), GRID))
        add(Markup('<text x="{}" y="{}" text-anchor="middle" fill="{}">{}</text>').format(
            _n(x), _n(top + plot_h + 16), INK_2, _tick_label(t, step)))
    add(Markup('<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="1"/>').format(
        _n(left), _n(top + plot_h), _n(left + plot_w), _n(top + plot_h), AXIS))
    add(Markup('<text x="{}" y="{}" text-anchor="middle" fill="{}" font-size="12">{}</text>')
        .format(_n(left + plot_w / 2), _n(top + plot_h + 36), MUTED,
                "next-token cross-entropy (nats/token)"))
    if math.isfinite(clean):
        x = sx(clean)
        add(Markup('<line class="ce-clean-ref" x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" '
                   'stroke-width="1.2" stroke-dasharray="4 3"/>').format(
            _n(x), _n(top), _n(x), _n(top + plot_h), INK_2))
    for k, (label, v, color, kl) in enumerate(rows):
        cy = top + k * row_h + row_h / 2
        shown = format_number(v)
        tip = f"{label}: CE {shown} nats/token; {kl}"
        add(Markup('<g class="ce-row" data-label="{}" data-value="{}"><title>{}</title>').format(
            label, format_number(v, 6), tip))
        add(Markup('<text x="{}" y="{}" text-anchor="end" dominant-baseline="central" fill="{}" '
                   'font-size="12.5">{}</text>').format(_n(left - 10), _n(cy), INK_2, label))
        if label.startswith("SAE") and all(map(math.isfinite, (clean, sae, zero_abl))) \
                and zero_abl > clean:
            # the span the CE-loss score measures: lost (clean→SAE) and recovered (SAE→zero)
            xc, xs, xz = sx(clean), sx(sae), sx(zero_abl)
            add(Markup('<rect class="ce-lost" x="{}" y="{}" width="{}" height="12" fill="{}">'
                       "<title>lost vs the clean model: {} nats</title></rect>").format(
                _n(min(xc, xs)), _n(cy - 6), _n(abs(xs - xc)), BAD_SOFT, fmt_signed(sae - clean)))
            if xz > xs:
                add(Markup('<rect class="ce-recovered" x="{}" y="{}" width="{}" height="12" '
                           'fill="{}"><title>recovered of the zero-ablation gap: {} nats'
                           "</title></rect>").format(_n(xs), _n(cy - 6), _n(xz - xs), OK_SOFT,
                                                     format_number(zero_abl - sae)))
        if math.isfinite(v):
            x = sx(v)
            add(Markup('<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="2"/>')
                .format(_n(left), _n(cy), _n(x), _n(cy), "#d5dae3"))
            if label.startswith("SAE") and sae_ci:
                a, b = sx(sae_ci[0]), sx(sae_ci[1])
                add(Markup('<path class="ce-ci" d="M{a} {y} L{b} {y} M{a} {y0} L{a} {y1} '
                           'M{b} {y0} L{b} {y1}" stroke="{c}" stroke-width="2" fill="none"/>')
                    .format(a=_n(a), b=_n(b), y=_n(cy), y0=_n(cy - 6), y1=_n(cy + 6), c=INK))
            add(Markup('<circle class="ce-dot" cx="{}" cy="{}" r="6.5" fill="{}" '
                       'stroke="#ffffff" stroke-width="1.5"/>').format(_n(x), _n(cy), color))
        add(Markup('<text x="{}" y="{}" dominant-baseline="central" font-family="{}" '
                   'font-size="12"><tspan fill="{}">{}</tspan><tspan fill="{}" '
                   'font-size="11">  {}</tspan></text>').format(
            _n(left + plot_w + 14), _n(cy), MONO, INK if math.isfinite(v) else MUTED, shown,
            MUTED, kl))
        add(Markup("</g>"))
    add(Markup("</svg>"))
    return Markup("").join(out)


# ---------------------------------------------------------- density histogram (SVG)

_SUP = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def _pow10(t: float) -> str:
    return "1" if t == 0 else "10" + str(int(round(t))).translate(_SUP)


def _valid_bins(edges: Any, counts: Any) -> tuple[list[float], list[float]]:
    """Finite, increasing ``edges`` with one count per bin (a non-finite count is 0),
    or ``([], [])`` when they are not that."""
    e, c = as_floats(edges), as_floats(counts)
    ok = (len(e) >= 2 and len(c) == len(e) - 1
          and all(map(math.isfinite, e))
          and all(b > a for a, b in zip(e[:-1], e[1:], strict=True)))
    return (e, [x if math.isfinite(x) else 0.0 for x in c]) if ok else ([], [])


def density_bins(res: Mapping[str, Any]) -> tuple[list[float], list[float], float]:
    """(log10 edges, counts, n_dead), from ``density_histogram`` or else ``feature_density``."""
    hist = as_mapping(res.get("density_histogram"))
    edges, counts = _valid_bins(hist.get("edges"), hist.get("counts"))
    dens = [v for v in as_floats(res.get("feature_density")) if math.isfinite(v)]
    n_dead = _f(hist.get("n_dead"))
    if not math.isfinite(n_dead) and dens:
        n_dead = float(sum(1 for v in dens if v <= 0))
    if not math.isfinite(n_dead):
        n_dead = _f(res.get("dead_fraction")) * _f(res.get("d_sae"))
    if edges:
        return edges, counts, n_dead
    logs = [math.log10(v) for v in dens if v > 0]
    if not logs:
        return [], [], n_dead
    lo = math.floor(min(logs) * 4) / 4
    hi = max(0.0, math.ceil(max(logs) * 4) / 4)
    if hi <= lo:
        hi = lo + 0.25
    n_bins = min(60, max(1, round((hi - lo) / 0.25)))
    edges = [lo + (hi - lo) * k / n_bins for k in range(n_bins + 1)]
    counts = [0.0] * n_bins
    for v in logs:
        counts[min(n_bins - 1, max(0, int((v - lo) / (hi - lo) * n_bins)))] += 1
    return edges, counts, n_dead


def density_svg(
    edges: Sequence[float],
    counts: Sequence[float],
    *,
    n_dead: float | None,
    n_tokens: float | None,
    dense_threshold: float | None = None,
    width: float = 960.0,
    height: float = 300.0,
) -> Markup:
    """Histogram of features by ``log10`` density, as one ``<svg class="sae-density">``.

    ``edges`` (log10 densities, increasing) has one more entry than ``counts`` (features per
    bin, the dead ones not among them); anything else draws no bars ("no density data"). The
    ``n_dead`` dead features get a bar of their own left of the log axis. A dotted line marks
    one token in ``n_tokens`` (the rarest measurable density); with ``dense_threshold`` (a
    fraction of tokens) the bins at or above it are orange, right of a marked threshold.
    None, NaN and non-numbers count as missing.
    """
    edges, counts = _valid_bins(edges, counts)
    thr = _f(dense_threshold)
    log_thr = math.log10(thr) if math.isfinite(thr) and thr > 0 else math.nan
    n_tok = _f(n_tokens)
    floor = -math.log10(n_tok) if math.isfinite(n_tok) and n_tok >= 1 else math.nan
    dead = _f(n_dead) if math.isfinite(_f(n_dead)) else 0.0

    a_lo, a_hi = (edges[0], edges[-1]) if edges else (-5.0, 0.0)
    if math.isfinite(log_thr):
        a_lo, a_hi = min(a_lo, log_thr), max(a_hi, log_thr)
    a_lo, a_hi = math.floor(a_lo * 2) / 2, math.ceil(a_hi * 2) / 2
    if a_hi <= a_lo:
        a_hi = a_lo + 1
    c_max = max([*counts, dead, 1.0])
    y_step = max(1.0, _nice_step(c_max, 4))
    y_hi = math.ceil(c_max / y_step - 1e-9) * y_step
    y_ticks = [y_step * k for k in range(int(round(y_hi / y_step)) + 1)]

    y_tick_w = max(_text_width(_tick_label(t, y_step), 11) for t in y_ticks)
    left = 30 + y_tick_w + 12
    dead_w = 34.0
    gap = 26.0
    right = 16.0
    top = 30.0
    bottom = 52.0
    plot_x0 = left + dead_w + gap
    plot_w = width - plot_x0 - right
    plot_h = height - top - bottom

    def sx(v: float) -> float:
        return plot_x0 + (min(max(v, a_lo), a_hi) - a_lo) / (a_hi - a_lo) * plot_w

    def sy(c: float) -> float:
        return top + (1 - c / y_hi) * plot_h

    out: list[Markup] = []
    add = out.append
    add(_svg_open("sae-density", width, height, "histogram of log10 feature density", 11,
                  data_n=int(sum(counts) + dead)))
    # dense region, tinted, with its threshold
    if math.isfinite(log_thr):
        x = sx(log_thr)
        add(Markup('<rect class="dense-region" x="{}" y="{}" width="{}" height="{}" '
                   'fill="#fff4e5"/>').format(_n(x), _n(top), _n(plot_x0 + plot_w - x),
                                                _n(plot_h)))
    for t in y_ticks:
        y = sy(t)
        add(Markup('<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="1"/>').format(
            _n(left), _n(y), _n(plot_x0 + plot_w), _n(y), GRID))
        add(Markup('<text x="{}" y="{}" text-anchor="end" dominant-baseline="central" fill="{}">'
                   "{}</text>").format(_n(left - 7), _n(y), INK_2, _tick_label(t, y_step)))
    x_step = 1.0 if a_hi - a_lo <= 8 else 2.0
    for t in _nice_ticks(a_lo, a_hi, int((a_hi - a_lo) / x_step) or 1):
        if not float(t).is_integer() or not a_lo <= t <= a_hi:
            continue
        x = sx(t)
        add(Markup('<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="1"/>').format(
            _n(x), _n(top + plot_h), _n(x), _n(top + plot_h + 4), INK_2))
        add(Markup('<text x="{}" y="{}" text-anchor="middle" fill="{}">{}</text>').format(
            _n(x), _n(top + plot_h + 18), INK_2, _pow10(t)))
    # the dead features: their own bar, left of the log axis (log10 0 is −∞)
    add(Markup('<g class="dead-bar" data-count="{}"><title>{}</title>').format(
        fmt_count(dead),
        f"dead (fired on none of {fmt_count(n_tok)} tokens): {fmt_count(n_dead)} features"))
    add(Markup('<rect x="{}" y="{}" width="{}" height="{}" fill="{}" rx="1"/>').format(
        _n(left + 4), _n(sy(dead)), _n(dead_w - 4), _n(plot_h - (sy(dead) - top)), BAD))
    add(Markup('<text x="{}" y="{}" text-anchor="middle" fill="{}" font-weight="600">dead</text>')
        .format(_n(left + 2 + dead_w / 2), _n(top + plot_h + 18), BAD))
    add(Markup("</g>"))
    add(Markup('<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="1" '
               'stroke-dasharray="2 3"/>').format(_n(left + dead_w + gap / 2), _n(top),
                                                  _n(left + dead_w + gap / 2), _n(top + plot_h),
                                                  AXIS))
    add(Markup('<g class="hist-bars">'))
    for k, c in enumerate(counts):
        x0, x1 = sx(edges[k]), sx(edges[k + 1])
        dense = math.isfinite(log_thr) and edges[k] >= log_thr - 1e-9
        tip = (f"density {fmt_pct(10 ** edges[k])} to {fmt_pct(10 ** edges[k + 1])} of tokens: "
               f"{fmt_count(c)} features")
        add(Markup('<rect class="hist-bar" data-count="{}" x="{}" y="{}" width="{}" height="{}" '
                   'fill="{}" stroke="#ffffff" stroke-width="1"><title>{}</title></rect>').format(
            fmt_count(c), _n(x0), _n(sy(c)), _n(max(x1 - x0, 0.5)), _n(plot_h - (sy(c) - top)),
            DENSE if dense else BAR, tip))
    add(Markup("</g>"))
    if not counts:
        add(Markup('<text x="{}" y="{}" text-anchor="middle" fill="{}" font-size="12">no density '
                   "data</text>").format(_n(plot_x0 + plot_w / 2), _n(top + plot_h / 2), MUTED))
    add(Markup('<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="1"/>').format(
        _n(left), _n(top + plot_h), _n(plot_x0 + plot_w), _n(top + plot_h), AXIS))
    if math.isfinite(log_thr):
        x = sx(log_thr)
        label = f"dense ≥ {fmt_pct(thr)} of tokens"
        add(Markup('<g class="dense-marker" data-value="{}"><title>{}</title>').format(
            format_number(thr, 6), f"dense threshold: {label}"))
        add(Markup('<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="2"/>').format(
            _n(x), _n(top - 6), _n(x), _n(top + plot_h), "#b35c00"))
        tw = _text_width(label, 11)
        tx = min(x + 4, width - 4 - tw)
        add(Markup('<text x="{}" y="{}" fill="{}" font-size="11" font-weight="600">{}</text>')
            .format(_n(tx), _n(top - 10), "#b35c00", label))
        add(Markup("</g>"))
    if math.isfinite(floor) and a_lo <= floor <= a_hi:
        x = sx(floor)
        add(Markup('<g class="floor-marker"><title>{}</title>').format(
            f"1 / n_tokens = {format_number(1 / n_tok, 2)}: the rarest firing this sample can see"))
        add(Markup('<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="1.2" '
                   'stroke-dasharray="2 2"/>').format(_n(x), _n(top - 6), _n(x), _n(top + plot_h),
                                                      INK_2))
        add(Markup('<text x="{}" y="{}" text-anchor="middle" fill="{}" font-size="10.5">'
                   "1 token</text>").format(_n(x), _n(top - 10), INK_2))
        add(Markup("</g>"))
    add(Markup('<text x="{}" y="{}" text-anchor="middle" fill="{}" font-size="12">{}</text>')
        .format(_n(plot_x0 + plot_w / 2), _n(top + plot_h + 40), MUTED,
                "feature density: fraction of tokens the feature fires on (log scale)"))
    cy = top + plot_h / 2
    add(Markup('<text x="{}" y="{}" text-anchor="middle" transform="rotate(-90 {} {})" fill="{}" '
               'font-size="12">features</text>').format(_n(14), _n(cy), _n(14), _n(cy), MUTED))
    add(Markup("</svg>"))
    return Markup("").join(out)


# ------------------------------------------------------------- training curves (SVG)


def _moving_average(ys: Sequence[float], w: int) -> list[float]:
    out = []
    half = w // 2
    for i in range(len(ys)):
        win = [v for v in ys[max(0, i - half): i + half + 1] if math.isfinite(v)]
        out.append(sum(win) / len(win) if win else math.nan)
    return out


def curve_svg(
    title: str,
    ys: Sequence[float],
    *,
    y_label: str,
    color: str,
    resampled: Sequence[tuple[float, float]] = (),
    refs: Sequence[tuple[float, str, str]] = (),
    fmt: Callable[[float], str] = format_number,
    width: float = 515.0,
    height: float = 270.0,
) -> Markup:
    """One training curve vs step (raw and a moving average), resampling steps as
    vertical lines, ``refs`` (value, label, colour) as horizontal dashed lines.
    A positive curve spanning more than 1.5 decades is drawn on a log scale."""
    ys = list(ys)
    n = len(ys)
    steps = list(range(1, n + 1))
    if n > 2000:  # keep the file small: every k-th step
        k = math.ceil(n / 2000)
        steps, ys = steps[::k], ys[::k]
    w = max(1, len(ys) // 40)
    smooth = _moving_average(ys, w) if w > 1 else ys
    fin = [v for v in ys if math.isfinite(v)]
    ref_vals = [v for v, _, _ in refs if math.isfinite(v)]
    allv = fin + ref_vals
    log_y = bool(fin) and min(fin) > 0 and max(fin) / min(fin) > 10 ** 1.5 and \
        all(v > 0 for v in ref_vals)
    if log_y:
        y_lo, y_hi = math.floor(math.log10(min(allv))), math.ceil(math.log10(max(allv)))
        if y_hi <= y_lo:
            y_hi = y_lo + 1
        y_ticks = [float(t) for t in range(int(y_lo), int(y_hi) + 1)]
        y_step = 1.0
    else:
        y_lo = min(allv + [0.0]) if allv else 0.0
        y_hi = max(allv) if allv else 1.0
        if y_hi <= y_lo:
            y_hi = y_lo + 1.0
        y_step = _nice_step(y_hi - y_lo, 4)
        y_lo = math.floor(y_lo / y_step + 1e-9) * y_step
        y_hi = math.ceil(y_hi / y_step - 1e-9) * y_step
        y_ticks = [y_lo + y_step * k for k in range(int(round((y_hi - y_lo) / y_step)) + 1)]

    def tv(v: float) -> float:
        return math.log10(v) if log_y else v

    def tick_text(t: float) -> str:
        return _pow10(t) if log_y else _tick_label(t, y_step)

    y_tick_w = max(_text_width(tick_text(t), 11) for t in y_ticks)
    left = 30 + y_tick_w + 10
    right, bottom = 14.0, 42.0
    # legend items, wrapped into rows that fit the width
    legend: list[tuple[str, str, str]] = [("per step", color, "raw")]
    if w > 1:
        legend.append((f"mean of {w} steps", color, "line"))
    legend += [(label, c, "dash") for v, label, c in refs if math.isfinite(v)]
    if resampled:
        legend.append(("resampling", RESAMPLE, "vline"))
    placed: list[tuple[float, float, str, str, str]] = []
    lx, ly = left, 38.0
    for label, c, kind in legend:
        item_w = 23 + _text_width(label, 10.5) + 14
        if lx > left and lx + item_w > width - right:
            lx, ly = left, ly + 16
        placed.append((lx, ly, label, c, kind))
        lx += item_w
    top = ly + 14
    height += ly - 38.0
    plot_w, plot_h = width - left - right, height - top - bottom
    x_lo, x_hi = 1.0, float(max(n, 2))

    def sx(v: float) -> float:
        return left + (v - x_lo) / (x_hi - x_lo) * plot_w

    def sy(v: float) -> float:
        t = min(max(tv(v), y_lo), y_hi)
        return top + (1 - (t - y_lo) / (y_hi - y_lo)) * plot_h

    def path(xs: Sequence[float], vs: Sequence[float]) -> str:
        segs: list[list[str]] = [[]]
        for x, v in zip(xs, vs, strict=True):
            if math.isfinite(v) and (v > 0 or not log_y):
                segs[-1].append(f"{_n(sx(x))} {_n(sy(v))}")
            elif segs[-1]:
                segs.append([])
        return " ".join("M" + " L".join(s) for s in segs if len(s) > 1)

    out: list[Markup] = []
    add = out.append
    add(_svg_open("sae-curve", width, height, f"{title} vs training step", 11, data_n=n))
    add(Markup('<text x="{}" y="{}" font-size="13.5" font-weight="600" fill="{}">{}</text>')
        .format(_n(left), _n(20), INK, title))
    for lx, ly, label, c, kind in placed:
        if kind == "vline":
            add(Markup('<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="1.4" '
                       'stroke-dasharray="3 2"/>').format(_n(lx + 8), _n(ly - 6), _n(lx + 8),
                                                         _n(ly + 6), c))
        else:
            extra = {"raw": ' stroke-opacity="0.35"', "line": "", "dash": ' stroke-dasharray="5 3"'}
            add(Markup('<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="2"{}/>')
                .format(_n(lx), _n(ly), _n(lx + 18), _n(ly), c, Markup(extra[kind])))
        add(Markup('<text x="{}" y="{}" dominant-baseline="central" fill="{}" font-size="10.5">{}'
                   "</text>").format(_n(lx + 23), _n(ly), INK_2, label))
    for t in y_ticks:
        y = top + (1 - (t - y_lo) / (y_hi - y_lo)) * plot_h
        add(Markup('<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="1"/>').format(
            _n(left), _n(y), _n(left + plot_w), _n(y), GRID))
        add(Markup('<text x="{}" y="{}" text-anchor="end" dominant-baseline="central" fill="{}">'
                   "{}</text>").format(_n(left - 7), _n(y), INK_2, tick_text(t)))
    x_step = _nice_step(x_hi - x_lo, 5)
    for t in _nice_ticks(x_lo, x_hi, 5):
        if x_lo <= t <= x_hi:
            add(Markup('<text x="{}" y="{}" text-anchor="middle" fill="{}">{}</text>').format(
                _n(sx(t)), _n(top + plot_h + 16), INK_2, _tick_label(t, max(x_step, 1.0))))
    add(Markup('<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="1"/>').format(
        _n(left), _n(top + plot_h), _n(left + plot_w), _n(top + plot_h), AXIS))
    add(Markup('<text x="{}" y="{}" text-anchor="middle" fill="{}" font-size="11.5">step</text>')
        .format(_n(left + plot_w / 2), _n(top + plot_h + 34), MUTED))
    cy = top + plot_h / 2
    add(Markup('<text x="{}" y="{}" text-anchor="middle" transform="rotate(-90 {} {})" fill="{}" '
               'font-size="11.5">{}</text>').format(_n(13), _n(cy), _n(13), _n(cy), MUTED,
                                                    y_label + (" (log)" if log_y else "")))
    for step, n_feat in resampled:
        if not (math.isfinite(step) and x_lo <= step <= x_hi):
            continue
        x = sx(step)
        add(Markup('<line class="resample-mark" x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" '
                   'stroke-width="1.4" stroke-dasharray="3 2"><title>{}</title></line>').format(
            _n(x), _n(top), _n(x), _n(top + plot_h), RESAMPLE,
            f"step {fmt_count(step)}: {fmt_count(n_feat)} dead features resampled"))
    if fin:
        d_raw = path(steps, ys)
        if d_raw:
            add(Markup('<path class="curve-raw" d="{}" fill="none" stroke="{}" stroke-width="1.2" '
                       'stroke-opacity="{}"/>').format(d_raw, color, "0.35" if w > 1 else "1"))
        if w > 1:
            d_s = path(steps, smooth)
            if d_s:
                add(Markup('<path class="curve-smooth" d="{}" fill="none" stroke="{}" '
                           'stroke-width="2" stroke-linejoin="round"/>').format(d_s, color))
        last = next((v for v in reversed(smooth) if math.isfinite(v)), math.nan)
        if math.isfinite(last):
            add(Markup('<circle cx="{}" cy="{}" r="3.5" fill="{}"><title>{}</title></circle>')
                .format(_n(sx(steps[-1])), _n(sy(last)), color,
                        f"{title} at step {n}: {fmt(last)}"))
    else:
        add(Markup('<text x="{}" y="{}" text-anchor="middle" fill="{}" font-size="12">no data'
                   "</text>").format(_n(left + plot_w / 2), _n(cy), MUTED))
    for v, label, c in refs:
        if not math.isfinite(v) or (log_y and v <= 0):
            continue
        y = sy(v)
        add(Markup('<line class="curve-ref" x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" '
                   'stroke-width="1.5" stroke-dasharray="5 3"><title>{}</title></line>').format(
            _n(left), _n(y), _n(left + plot_w), _n(y), c, f"{label}: {fmt(v)}"))
    add(Markup("</svg>"))
    return Markup("").join(out)

