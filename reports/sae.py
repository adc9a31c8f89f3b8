"""The SAE evaluation report: reconstruction, sparsity, the SAE spliced into the model, features.

Input is the ``results.json`` of ``interp sae eval``: the headline metrics (``l0``,
``explained_variance``, ``mse``, ``cosine_similarity``, each with a ``_ci95`` sibling), the
spliced cross-entropies (``ce_clean``, ``ce_sae``, ``ce_mean_ablation``, ``ce_zero_ablation``)
with the CE-loss scores, ``delta_ce`` and the KL divergences, the feature densities
(``feature_density``, ``density_histogram``, ``dead_fraction``, ``dense_fraction``), and
optionally ``targets`` and ``training`` (settings, per-step history, resampling events).

Every number may be missing, None or NaN: it is then shown as "—" and left out of the
figures. Every string is escaped; the figures are inline SVG built here or by
:mod:`reports.heatmap`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from interp.errors import InterpError
from reports.heatmap import (
    GRID,
    INK,
    INK_2,
    MONO,
    MUTED,
    _n,
    _nice_step,
    _nice_ticks,
    _svg_open,
    _text_width,
    _tick_label,
)
from reports.html import (
    MISSING,
    Section,
    figure,
    format_number,
    kv_table,
    note,
    paragraph,
    render_report,
    table,
)
from reports.html import as_float as _f

__all__ = ["TARGETS", "render_sae_report"]

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

#: Known targets: key in ``res["targets"]`` -> (metric key, comparison, label).
#: Other keys follow the suffix rule: ``<metric>_max`` is "≤", ``<metric>_min`` and a
#: bare ``<metric>`` are "≥".
TARGETS: dict[str, tuple[str, str, str]] = {
    "explained_variance": ("explained_variance", ">=", "explained variance"),
    "l0_max": ("l0", "<=", "L0"),
    "dead_fraction_max": ("dead_fraction", "<=", "dead features"),
    "ce_loss_score": ("ce_loss_score", ">=", "CE-loss score"),
}

_FRACTIONS = {"dead_fraction", "dense_fraction"}
_OPS = {">=": "≥", "<=": "≤"}


# ------------------------------------------------------------------------ numbers


def _pct(value: Any) -> str:
    v = _f(value)
    if not math.isfinite(v):
        return MISSING
    return f"{100 * v:.3g}%"


def _count(value: Any) -> str:
    v = _f(value)
    if not math.isfinite(v):
        return MISSING
    return f"{round(v):,}" if float(v).is_integer() else format_number(v)


def _fmt(metric: str, value: Any) -> str:
    """A metric's value in its own display format."""
    if metric in _FRACTIONS:
        return _pct(value)
    if metric == "l0":
        return format_number(_f(value), 1)
    if metric == "mse":
        return format_number(_f(value), 4)
    return format_number(_f(value), 3)


def _ci(value: Any) -> tuple[float, float] | None:
    """A finite (lo, hi) pair, or None."""
    if not isinstance(value, Sequence) or isinstance(value, str) or len(value) != 2:
        return None
    lo, hi = _f(value[0]), _f(value[1])
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return None
    return (min(lo, hi), max(lo, hi))


def _ci_text(metric: str, ci: tuple[float, float] | None) -> str:
    return f"[{_fmt(metric, ci[0])}, {_fmt(metric, ci[1])}]" if ci else MISSING


def _with_ci(metric: str, value: Any, ci: Any) -> str:
    text = _fmt(metric, value)
    c = _ci(ci)
    if c and math.isfinite(_f(value)):
        text += f" {_ci_text(metric, c)}"
    return text


def _signed(value: Any, digits: int = 3) -> str:
    v = _f(value)
    if not math.isfinite(v):
        return MISSING
    text = format_number(v, digits)
    return text if text.startswith("-") or v == 0 else "+" + text


def _short(value: float) -> str:
    return f"{value:g}"


def _nice_ceil(x: float) -> float:
    if not math.isfinite(x) or x <= 0:
        return 1.0
    step = _nice_step(x, 6)
    return math.ceil(x / step - 1e-9) * step


def _nice_floor(x: float) -> float:
    if not math.isfinite(x) or x >= 0:
        return 0.0
    return -_nice_ceil(-x)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _floats(value: Any) -> list[float]:
    if not isinstance(value, Sequence) or isinstance(value, str):
        return []
    return [_f(v) for v in value]


# ------------------------------------------------------------------------ targets


@dataclass
class _Check:
    key: str
    metric: str
    label: str
    op: str
    target: float
    value: float

    @property
    def passed(self) -> bool | None:
        if not (math.isfinite(self.value) and math.isfinite(self.target)):
            return None
        return self.value >= self.target if self.op == ">=" else self.value <= self.target

    @property
    def target_text(self) -> str:
        shown = _pct(self.target) if self.metric in _FRACTIONS else _short(self.target)
        if not math.isfinite(self.target):
            shown = MISSING
        return f"{_OPS[self.op]} {shown}"


def _checks(res: Mapping[str, Any]) -> list[_Check]:
    out = []
    for key, target in _mapping(res.get("targets")).items():
        key = str(key)
        if key in TARGETS:
            metric, op, label = TARGETS[key]
        elif key.endswith("_max"):
            metric, op, label = key[:-4], "<=", key[:-4].replace("_", " ")
        elif key.endswith("_min"):
            metric, op, label = key[:-4], ">=", key[:-4].replace("_", " ")
        else:
            metric, op, label = key, ">=", key.replace("_", " ")
        out.append(_Check(key, metric, label, op, _f(target), _f(res.get(metric))))
    return out


def _mark(check: _Check | None) -> Markup:
    """A ✓ / ✗ / ? badge with the target, tagged for tests and tooltips."""
    if check is None:
        return Markup("")
    passed = check.passed
    if passed is True:
        cls, sym, state = "badge ok", "✓", "true"
    elif passed is False:
        cls, sym, state = "badge warn", "✗", "false"
    else:
        cls, sym, state = "badge", "?", "unknown"
    style = Markup("") if passed is not None else Markup(
        ' style="background:#eef0f4;color:#7a8496"'
    )
    tip = f"target: {check.label} {check.target_text} (judged on the point estimate)"
    return Markup(
        '<span class="{} target-mark" data-target="{}" data-pass="{}" title="{}"{}>{} target {}'
        "</span>"
    ).format(cls, check.key, state, tip, style, sym, check.target_text)


def _check_for(checks: Sequence[_Check], metric: str) -> _Check | None:
    return next((c for c in checks if c.metric == metric), None)


# ------------------------------------------------------------------ strips (SVG)


@dataclass
class _Strip:
    metric: str
    label: str
    hint: str
    value: float
    ci: tuple[float, float] | None
    lo: float
    hi: float
    check: _Check | None = None
    ref: tuple[float, str] | None = None


def _strip_range(values: Sequence[float], lo: float, hi: float | None) -> tuple[float, float]:
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


def _strips_svg(rows: Sequence[_Strip], *, width: float = 960.0) -> Markup:
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
        shown = _with_ci(r.metric, r.value, r.ci)
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


def _ce_chart_svg(res: Mapping[str, Any], *, width: float = 960.0) -> Markup:
    """Next-token CE of the clean model, the SAE spliced in and the two ablations, one axis."""
    clean, sae = _f(res.get("ce_clean")), _f(res.get("ce_sae"))
    mean_abl, zero_abl = _f(res.get("ce_mean_ablation")), _f(res.get("ce_zero_ablation"))
    delta_ci = _ci(res.get("delta_ce_ci95"))
    sae_ci = (clean + delta_ci[0], clean + delta_ci[1]) if delta_ci and math.isfinite(clean) \
        else None
    kl_sae = _with_ci("kl", res.get("kl_sae"), res.get("kl_sae_ci95"))
    rows = [
        ("clean model", clean, INK, "KL 0 (the reference)"),
        ("SAE spliced in", sae, ACCENT, f"KL {kl_sae}"),
        ("mean ablation", mean_abl, BASE, f"KL {_fmt('kl', res.get('kl_mean_ablation'))}"),
        ("zero ablation", zero_abl, BASE, f"KL {_fmt('kl', res.get('kl_zero_ablation'))}"),
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
                _n(min(xc, xs)), _n(cy - 6), _n(abs(xs - xc)), BAD_SOFT, _signed(sae - clean)))
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


def _density_bins(res: Mapping[str, Any]) -> tuple[list[float], list[float], float]:
    """(log10 edges, counts, n_dead), from ``density_histogram`` or else ``feature_density``."""
    hist = _mapping(res.get("density_histogram"))
    edges, counts = _floats(hist.get("edges")), _floats(hist.get("counts"))
    dens = [v for v in _floats(res.get("feature_density")) if math.isfinite(v)]
    n_dead = _f(hist.get("n_dead"))
    if not math.isfinite(n_dead) and dens:
        n_dead = float(sum(1 for v in dens if v <= 0))
    if not math.isfinite(n_dead):
        n_dead = _f(res.get("dead_fraction")) * _f(res.get("d_sae"))
    ok = (len(edges) >= 2 and len(counts) == len(edges) - 1
          and all(map(math.isfinite, edges))
          and all(b > a for a, b in zip(edges[:-1], edges[1:], strict=True)))
    if ok:
        return edges, [c if math.isfinite(c) else 0.0 for c in counts], n_dead
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


def _density_svg(res: Mapping[str, Any], *, width: float = 960.0, height: float = 300.0) -> Markup:
    edges, counts, n_dead = _density_bins(res)
    thr = _f(res.get("dense_threshold"))
    log_thr = math.log10(thr) if math.isfinite(thr) and thr > 0 else math.nan
    n_tok = _f(res.get("n_tokens"))
    floor = -math.log10(n_tok) if math.isfinite(n_tok) and n_tok >= 1 else math.nan
    dead = n_dead if math.isfinite(n_dead) else 0.0

    a_lo, a_hi = (edges[0], edges[-1]) if edges else (-5.0, 0.0)
    if math.isfinite(log_thr):
        a_lo, a_hi = min(a_lo, log_thr), max(a_hi, log_thr)
    a_lo, a_hi = math.floor(a_lo * 2) / 2, math.ceil(a_hi * 2) / 2
    if a_hi <= a_lo:
        a_hi = a_lo + 1
    c_max = max(counts + [dead, 1.0])
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
        _count(dead), f"dead (fired on none of {_count(n_tok)} tokens): {_count(n_dead)} features"))
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
        tip = (f"density {_pct(10 ** edges[k])} to {_pct(10 ** edges[k + 1])} of tokens: "
               f"{_count(c)} features")
        add(Markup('<rect class="hist-bar" data-count="{}" x="{}" y="{}" width="{}" height="{}" '
                   'fill="{}" stroke="#ffffff" stroke-width="1"><title>{}</title></rect>').format(
            _count(c), _n(x0), _n(sy(c)), _n(max(x1 - x0, 0.5)), _n(plot_h - (sy(c) - top)),
            DENSE if dense else BAR, tip))
    add(Markup("</g>"))
    if not counts:
        add(Markup('<text x="{}" y="{}" text-anchor="middle" fill="{}" font-size="12">no density '
                   "data</text>").format(_n(plot_x0 + plot_w / 2), _n(top + plot_h / 2), MUTED))
    add(Markup('<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="1"/>').format(
        _n(left), _n(top + plot_h), _n(plot_x0 + plot_w), _n(top + plot_h), AXIS))
    if math.isfinite(log_thr):
        x = sx(log_thr)
        label = f"dense ≥ {_pct(thr)} of tokens"
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


def _curve_svg(
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
            f"step {_count(step)}: {_count(n_feat)} dead features resampled"))
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


# ----------------------------------------------------------------------- sections


def _facts(items: Sequence[tuple[str, Any]]) -> Markup:
    return Markup('<dl class="facts">{}</dl>').format(Markup("").join(
        Markup("<div><dt>{}</dt><dd>{}</dd></div>").format(k, v) for k, v in items))


def _headline(res: Mapping[str, Any]) -> str:
    parts = []
    ev, l0 = _f(res.get("explained_variance")), _f(res.get("l0"))
    if math.isfinite(ev) and math.isfinite(l0):
        parts.append(f"The SAE reconstructs {_pct(ev)} of the activations' variance with "
                     f"{format_number(l0, 1)} active features per token (of "
                     f"{_count(res.get('d_sae'))}).")
    score, score_m = _f(res.get("ce_loss_score")), _f(res.get("ce_loss_score_mean_ablation"))
    if math.isfinite(score):
        text = (f"Spliced into the model it recovers {format_number(score, 2)} of the "
                "cross-entropy lost to zero-ablation")
        if math.isfinite(score_m):
            text += f" ({format_number(score_m, 2)} against mean-ablation)"
        delta = _f(res.get("delta_ce"))
        if math.isfinite(delta):
            text += f", at a cost of {_signed(delta)} nats/token"
        parts.append(text + ".")
    dead = _f(res.get("dead_fraction"))
    if math.isfinite(dead):
        parts.append(f"{_pct(dead)} of its features never fired on the evaluation tokens.")
    return " ".join(parts) or "No headline metrics were recorded."


def _lead(res: Mapping[str, Any], checks: Sequence[_Check]) -> Markup:
    def val(metric: str, text: str) -> Markup:
        return Markup("{} {}").format(text, _mark(_check_for(checks, metric)))

    dead = res.get("dead_fraction")
    dead_text = _pct(dead)
    n_feat = res.get("dead_fraction_n", res.get("d_sae"))
    n_dead = _f(dead) * _f(n_feat)
    if math.isfinite(n_dead):
        dead_text += f" ({_count(round(n_dead))} of {_count(n_feat)})"
    headline = [
        ("L0 (active features / token)",
         val("l0", _with_ci("l0", res.get("l0"), res.get("l0_ci95")))),
        ("explained variance",
         val("explained_variance", _with_ci("explained_variance", res.get("explained_variance"),
                                            res.get("explained_variance_ci95")))),
        ("CE-loss score",
         val("ce_loss_score", _with_ci("ce_loss_score", res.get("ce_loss_score"),
                                       res.get("ce_loss_score_ci95")))),
        ("ΔCE (nats/token)", val("delta_ce", _signed(res.get("delta_ce")) + (
            f" {_ci_text('delta_ce', _ci(res.get('delta_ce_ci95')))}"
            if _ci(res.get("delta_ce_ci95")) and math.isfinite(_f(res.get("delta_ce"))) else ""))),
        ("dead features", val("dead_fraction", dead_text)),
    ]
    known = {"l0", "explained_variance", "ce_loss_score", "delta_ce", "dead_fraction"}
    for c in checks:  # targets on other metrics get a fact of their own
        if c.metric not in known:
            headline.append((c.label, val(c.metric, _fmt(c.metric, c.value))))
            known.add(c.metric)
    parts = [Markup('<p class="sae-headline" style="font-size:15px;margin:0 0 4px">{}</p>')
             .format(_headline(res))]
    if checks:
        n_pass = sum(1 for c in checks if c.passed is True)
        all_ok = n_pass == len(checks)
        parts.append(Markup('<p style="margin:0">{}</p>').format(Markup(
            '<span class="badge {}" data-targets-met="{}">meets {} of {} targets</span>').format(
            "ok" if all_ok else "warn", n_pass, n_pass, len(checks))))
    parts.append(_facts(headline))
    data = _mapping(res.get("data"))
    sha = data.get("sha256")
    parts.append(_facts([
        ("SAE", Markup("<code>{}</code>").format(res.get("sae_path") or MISSING)),
        ("evaluation text", Markup("{}{}").format(
            data.get("source") or MISSING,
            Markup(' <code title="sha256">{}…</code>').format(str(sha)[:12]) if sha else "")),
        ("tokens", f"{_count(res.get('n_tokens'))} (CE: {_count(res.get('n_ce_tokens'))})"),
    ]))
    return Markup("").join(parts)


def _reconstruction_section(res: Mapping[str, Any], checks: Sequence[_Check]) -> Section:
    def get(key: str) -> tuple[float, tuple[float, float] | None]:
        return _f(res.get(key)), _ci(res.get(f"{key}_ci95"))

    rows = []
    l0, l0_ci = get("l0")
    c_l0 = _check_for(checks, "l0")
    lo, hi = _strip_range([l0, *(l0_ci or ()),
                           c_l0.target if c_l0 else math.nan], 0.0, None)
    d_sae = _count(res.get("d_sae"))
    rows.append(_Strip("l0", "L0", f"active features per token, of {d_sae}", l0, l0_ci, lo, hi,
                       c_l0))
    ev, ev_ci = get("explained_variance")
    c_ev = _check_for(checks, "explained_variance")
    lo, hi = _strip_range([ev, *(ev_ci or ())], 0.0, 1.0)
    rows.append(_Strip("explained_variance", "explained variance",
                       "1 − error / variance; 0 = predict the mean", ev, ev_ci, lo, hi, c_ev))
    cos, cos_ci = get("cosine_similarity")
    lo, hi = _strip_range([cos, *(cos_ci or ())], 0.0, 1.0)
    rows.append(_Strip("cosine_similarity", "cosine similarity", "between x and x̂, per token",
                       cos, cos_ci, lo, hi, _check_for(checks, "cosine_similarity")))
    mse, mse_ci = get("mse")
    base = mse / (1 - ev) if math.isfinite(mse) and math.isfinite(ev) and ev < 1 else math.nan
    lo, hi = _strip_range([mse, *(mse_ci or ()), base], 0.0, None)
    rows.append(_Strip("mse", "MSE", "‖x − x̂‖², in the activations' units", mse, mse_ci, lo, hi,
                       _check_for(checks, "mse"),
                       (base, f"predicting the mean: ≈ {format_number(base, 4)} "
                              "(= MSE / (1 − EV))")))
    l0_std = _f(res.get("l0_std"))
    tbl = table(
        ["metric", "value", "95% CI", "target", "notes"],
        [
            ["L0", _fmt("l0", l0), _ci_text("l0", l0_ci), _target_cell(c_l0),
             f"std over tokens {format_number(l0_std, 1)}"],
            ["explained variance", _fmt("explained_variance", ev),
             _ci_text("explained_variance", ev_ci), _target_cell(c_ev), "baseline 0: the mean"],
            ["cosine similarity", _fmt("cosine_similarity", cos),
             _ci_text("cosine_similarity", cos_ci),
             _target_cell(_check_for(checks, "cosine_similarity")), ""],
            ["MSE", _fmt("mse", mse), _ci_text("mse", mse_ci),
             _target_cell(_check_for(checks, "mse")),
             f"predicting the mean ≈ {format_number(base, 4)}"],
        ],
    )
    caption = (f"Each metric on its own axis: the dot is the estimate over "
               f"{_count(res.get('n_tokens'))} tokens, the whisker its 95% CI, the dotted red line "
               "the target (the tinted side fails it), the grey triangle a baseline. A green dot "
               "meets its target, a red one misses it.")
    return Section("Reconstruction vs sparsity", figure(_strips_svg(rows), caption) + tbl)


def _target_cell(check: _Check | None) -> Markup | None:
    return _mark(check) if check else None


def _spliced_section(res: Mapping[str, Any], checks: Sequence[_Check]) -> Section:
    s, s_ci = _f(res.get("ce_loss_score")), _ci(res.get("ce_loss_score_ci95"))
    sm, sm_ci = (_f(res.get("ce_loss_score_mean_ablation")),
                 _ci(res.get("ce_loss_score_mean_ablation_ci95")))
    c_s = _check_for(checks, "ce_loss_score")
    lo, hi = _strip_range([s, sm, *(s_ci or ()), *(sm_ci or ())], 0.0, 1.0)
    strips = _strips_svg([
        _Strip("ce_loss_score", "CE-loss score", "vs zero-ablation; 1 = clean, 0 = zero",
               s, s_ci, lo, hi, c_s),
        _Strip("ce_loss_score_mean_ablation", "CE-loss score", "vs mean-ablation (stricter)",
               sm, sm_ci, lo, hi, _check_for(checks, "ce_loss_score_mean_ablation")),
    ])
    clean = _f(res.get("ce_clean"))

    def minus_clean(key: str) -> str:
        return _signed(_f(res.get(key)) - clean)

    tbl = table(
        ["", "clean model", "SAE spliced in", "mean ablation", "zero ablation"],
        [
            ["CE (nats/token)", _f(res.get("ce_clean")), _f(res.get("ce_sae")),
             _f(res.get("ce_mean_ablation")), _f(res.get("ce_zero_ablation"))],
            ["ΔCE vs clean", "0", _signed(res.get("delta_ce")) + (
                f" {_ci_text('delta_ce', _ci(res.get('delta_ce_ci95')))}"
                if _ci(res.get("delta_ce_ci95")) else ""),
             minus_clean("ce_mean_ablation"), minus_clean("ce_zero_ablation")],
            ["KL(clean ‖ ·) (nats/token)", "0",
             _with_ci("kl", res.get("kl_sae"), res.get("kl_sae_ci95")),
             _fmt("kl", res.get("kl_mean_ablation")), _fmt("kl", res.get("kl_zero_ablation"))],
            ["CE-loss score", "1 (by definition)", _with_ci("s", s, s_ci), "0 (mean baseline)",
             "0 (zero baseline)"],
        ],
    )
    ce_caption = (
        f"Next-token cross-entropy over {_count(res.get('n_ce_tokens'))} tokens with the "
        f"activation at {res.get('hook_point') or 'the hook point'} left alone (clean), replaced "
        "by the SAE's reconstruction, by its mean, or by zero. Dashed: the clean model. On the SAE "
        "row, red is what the SAE loses against the clean model and green what it recovers of the "
        "zero-ablation gap; their ratio is the CE-loss score. Whisker: 95% CI of ΔCE. Right: "
        "KL(clean ‖ spliced) per token."
    )
    body = (figure(_ce_chart_svg(res), ce_caption)
            + figure(strips, "The two CE-loss scores, each with its 95% CI. Zero-ablation is a "
                             "weak baseline (zero is far from any real activation); the "
                             "mean-ablation score is the harder test.")
            + tbl)
    return Section("Spliced into the model", body)


def _density_section(res: Mapping[str, Any], checks: Sequence[_Check]) -> Section:
    dens = _floats(res.get("feature_density"))
    fin = sorted(v for v in dens if math.isfinite(v))
    alive = [v for v in fin if v > 0]
    median = alive[len(alive) // 2] if alive else math.nan
    top = sorted(((v, i) for i, v in enumerate(dens) if math.isfinite(v) and v > 0),
                 reverse=True)[:8]
    n = res.get("dead_fraction_n", res.get("d_sae"))
    facts = {
        "dead features": Markup("{} ({} of {}) {}").format(
            _with_ci("dead_fraction", res.get("dead_fraction"), res.get("dead_fraction_ci95")),
            _count(_f(res.get("dead_fraction")) * _f(n)), _count(n),
            _mark(_check_for(checks, "dead_fraction"))),
        "dense features": Markup("{} (fire on more than {} of tokens) {}").format(
            _with_ci("dense_fraction", res.get("dense_fraction"), res.get("dense_fraction_ci95")),
            _pct(res.get("dense_threshold")), _mark(_check_for(checks, "dense_fraction"))),
        "median density of live features": _pct(median),
        "densest features": ", ".join(f"#{i} {_pct(v)}" for v, i in top) or None,
    }
    caption = (
        "How often each feature fires (log scale). The red bar on the left counts the dead "
        f"features, which fired on none of the {_count(res.get('n_tokens'))} tokens; the dotted "
        "line is one token, the rarest firing this sample can resolve. Features right of the "
        "orange line are dense; many dense features usually means the SAE has not learnt "
        "sparse directions."
    )
    return Section("Feature density", figure(_density_svg(res), caption) + kv_table(facts))


def _duration(seconds: Any) -> str:
    s = _f(seconds)
    if not math.isfinite(s):
        return MISSING
    if s < 60:
        return f"{s:.1f} s"
    m, sec = divmod(round(s), 60)
    h, m = divmod(m, 60)
    return f"{h} h {m:02d} min" if h else f"{m} min {sec:02d} s"


_SETTING_LABELS = {
    "layer": "layer",
    "d_sae": "features (d_sae)",
    "l1_coefficient": "L1 coefficient",
    "tokens": "training tokens",
    "batch_size": "batch size (tokens)",
    "lr": "learning rate",
    "resample_every": "resample every (steps)",
}


def _training_section(res: Mapping[str, Any], checks: Sequence[_Check]) -> Section | None:
    tr = res.get("training")
    if not isinstance(tr, Mapping) or not tr:
        return None
    hist = _mapping(tr.get("history"))
    cfg = _mapping(tr.get("train"))
    if not hist and not cfg:  # e.g. an SAE trained elsewhere: nothing to show
        return None
    resampled = []
    for ev in tr.get("resampled") or []:
        if isinstance(ev, Sequence) and not isinstance(ev, str) and len(ev) >= 2:
            resampled.append((_f(ev[0]), _f(ev[1])))

    def target(metric: str) -> list[tuple[float, str, str]]:
        c = _check_for(checks, metric)
        return [(c.target, f"target {c.target_text}", BAD)] if c else []

    def held_out(key: str) -> list[tuple[float, str, str]]:
        return [(_f(res.get(key)), "held-out eval", INK)]

    specs = [
        ("loss", "Loss (MSE + L1 penalty)", "loss", "#4e79a7", [], format_number),
        ("l0", "L0", "active features / token", "#f28e2b", held_out("l0") + target("l0"),
         lambda v: format_number(v, 1)),
        ("explained_variance", "Explained variance", "EV", "#59a14f",
         held_out("explained_variance") + target("explained_variance"), format_number),
        ("dead_fraction", "Dead fraction", "share of features", "#e15759",
         held_out("dead_fraction") + target("dead_fraction"), _pct),
    ]
    charts = []
    for key, title, y_label, color, refs, fmt in specs:
        ys = _floats(hist.get(key))
        if ys:
            charts.append(_curve_svg(title, ys, y_label=y_label, color=color,
                                     resampled=resampled, refs=refs, fmt=fmt))
    parts = []
    n_steps = max((len(_floats(v)) for v in hist.values()), default=0)
    if charts:
        caption = ("Per step on the training batch (faint) and its moving average. Dashed black: "
                   "the held-out value on this page; dashed red: the target; purple: steps where "
                   "dead features were resampled. The training dead fraction counts features "
                   "silent over the dead window, not over the evaluation tokens.")
        parts.append(figure(Markup('<div class="fig-row">{}</div>').format(
            Markup("").join(charts)), caption))
    settings: dict[str, Any] = {}
    for k, v in cfg.items():
        is_int = isinstance(v, int) and not isinstance(v, bool)
        settings[_SETTING_LABELS.get(str(k), str(k))] = f"{v:,}" if is_int else v
    settings["steps recorded"] = n_steps
    settings["resampling events"] = (
        "; ".join(f"step {_count(s)}: {_count(k)} features" for s, k in resampled)
        if resampled else "none")
    settings["training time"] = _duration(tr.get("elapsed_s"))
    tps = _f(tr.get("tokens_per_s"))
    settings["throughput"] = f"{_count(round(tps))} tokens/s" if math.isfinite(tps) else None
    parts.append(kv_table(settings, caption="Training settings"))
    return Section("Training", Markup("").join(parts))


def _howto_section(res: Mapping[str, Any]) -> Section:
    items = [
        ("L0", "the mean number of features active (> 0) per token. Lower is sparser."),
        ("explained variance (EV)", "1 − Σ‖x − x̂‖² / Σ‖x − x̄‖²: 1 is a perfect reconstruction, "
         "0 is no better than predicting the mean activation x̄ (the baseline)."),
        ("MSE", "the mean squared reconstruction error ‖x − x̂‖², in the activations' own units; "
         "compare it with the predict-the-mean baseline, not across layers or models."),
        ("cosine similarity", "the mean cosine between each activation and its reconstruction."),
        ("CE (spliced)", "the model's next-token cross-entropy (nats/token) when the activation at "
         "the hook point is replaced by the SAE's reconstruction, by the mean activation (mean "
         "ablation) or by zero (zero ablation)."),
        ("CE-loss score", "(CE_zero − CE_SAE) / (CE_zero − CE_clean): 1 is as good as the clean "
         "model, 0 as bad as zero-ablation. The mean-ablation version uses CE_mean instead of "
         "CE_zero and is the stricter one."),
        ("ΔCE", "CE_SAE − CE_clean: what splicing the SAE in costs, in nats per token."),
        ("KL", "KL(clean ‖ spliced), per token: how far the spliced model's next-token "
         "distribution moves from the clean model's, not just on the correct token."),
        ("dead / dense", f"a feature is dead if it fired on none of the evaluation tokens, dense "
         f"if it fires on more than {_pct(res.get('dense_threshold'))} of them."),
        ("95% CI", "the uncertainty of each estimate from the finite token sample, as computed "
         "by interp sae eval. Targets are judged on the point estimate."),
    ]
    dl = Markup('<dl class="sae-howto" style="margin:0 0 10px">{}</dl>').format(
        Markup("").join(Markup('<dt style="font-weight:600;margin-top:6px">{}</dt>'
                               '<dd style="margin:0 0 0 18px;max-width:92ch">{}</dd>')
                        .format(k, v) for k, v in items))
    return Section("How to read this", paragraph(
        "Reconstruction metrics say how well the SAE rebuilds the activation; the spliced metrics "
        "say whether what it loses matters to the model. Read them together, and against their "
        "baselines.") + dl + note(
        "Position 0 of every window is excluded from every metric (L0, EV, MSE, cosine, "
        "densities and the spliced CE): its residual norm is about 7× the others', and splicing "
        "there would dominate the CE numbers."))


# ------------------------------------------------------------------------- report


def render_sae_report(res: dict, manifest: dict) -> str:
    """The SAE evaluation report (``results.json`` of ``interp sae eval``) as one HTML page."""
    if not isinstance(res, Mapping):
        raise InterpError(f"SAE results must be a dict, not {type(res).__name__}")
    checks = _checks(res)
    sections = [
        _reconstruction_section(res, checks),
        _spliced_section(res, checks),
        _density_section(res, checks),
    ]
    training = _training_section(res, checks)
    if training is not None:
        sections.append(training)
    sections.append(_howto_section(res))
    model = res.get("model") or "unknown model"
    where = res.get("hook_point") or (
        f"layer {res.get('layer')}" if res.get("layer") is not None else "unknown hook point")
    subtitle = f"{where} · d_in {_count(res.get('d_in'))} → {_count(res.get('d_sae'))} features"
    return render_report(f"SAE evaluation — {model}", sections, dict(manifest),
                         subtitle=subtitle, lead=_lead(res, checks))
