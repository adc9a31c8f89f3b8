"""The steering-sweep HTML report: what adding α·v after block L does, layer × α.

Input is the sweep ``results.json`` dict of :func:`interp.steering.sweep.run_sweep`.
Grids are lists over layers of lists over alphas (``[len(layers)][len(alphas)]``)::

    {"model": str, "config": {"layers", "alphas", "max_new_tokens", "temperature", "seeds",
                              "chat", "batch_size", "vector_source", "method",
                              "collapse_distinct2", "collapse_ppl_factor",
                              "coherence_ppl_factor"},
     "layers": [int], "alphas": [float],                    # alphas contain 0.0
     "target_score", "perplexity", "distinct2", "collapse", "side_kl": grid (means),
     "<same>_std": grid (std over prompts and seeds),
     "vector_norms": [float], "samples": [layer][alpha] -> [str], "n_prompts": int,
     "sweet_spot": None | {"layer", "alpha", "effect", "effect_spread", "tolerance"},
     "side_effect_prompts": [str], "texts": [...]}         # texts are not rendered

Missing numbers (None, NaN) are shown as "—". Every string is escaped.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from markupsafe import Markup

from reports.heatmap import heatmap_svg, line_chart_svg
from reports.html import (
    MISSING,
    Section,
    atomic_write_text,
    figure,
    format_number,
    kv_table,
    render_report,
    table,
    truncate,
)
from reports.html import (
    as_float as _f,
)
from reports.html import (
    is_finite as _fin,
)

__all__ = ["render_steering_report", "write_steering_report"]

GRIDS = ("target_score", "perplexity", "distinct2", "collapse", "side_kl")

#: The sweep's sweet-spot rule allows at most this collapse rate (interp.steering.sweep).
COLLAPSE_TOLERANCE = 0.25
#: Samples shown per (layer, α) cell, and characters per sample.
SAMPLES_SHOWN = 2
SAMPLE_CHARS = 360
#: The Δ-target colour scale spans ±max|Δ|, but never less than this (so noise around 0
#: is not blown up to full colour).
MIN_DELTA_SCALE = 0.05

#: ColorBrewer RdBu: negative change red, none white, positive blue.
DIVERGING = (
    "#67001f", "#b2182b", "#d6604d", "#f4a582", "#fddbc7", "#f7f7f7",
    "#d1e5f0", "#92c5de", "#4393c3", "#2166ac", "#053061",
)  # fmt: skip
#: ColorBrewer PuOr reversed: lower perplexity purple, unchanged white, higher orange.
RATIO_MAP = (
    "#2d004b", "#542788", "#8073ac", "#b2abd2", "#d8daeb", "#f7f7f7",
    "#fee0b6", "#fdb863", "#e08214", "#b35806", "#7f3b08",
)  # fmt: skip
#: ColorBrewer Reds: collapse rate.
REDS = (
    "#fff5f0", "#fee0d2", "#fcbba1", "#fc9272", "#fb6a4a",
    "#ef3b2c", "#cb181d", "#a50f15", "#67000d",
)  # fmt: skip

_FAINT = "color: var(--muted)"
_NUM = "font-family: var(--mono); font-size: 12.5px; font-variant-numeric: tabular-nums"
_SAMPLE = (
    "white-space: pre-wrap; word-break: break-word; max-width: 78ch; min-width: 36ch; "
    "font-family: var(--mono); font-size: 12px; line-height: 1.45; padding: 3px 8px; "
    "margin: 2px 0; border-left: 3px solid {}; background: {}; border-radius: 0 4px 4px 0"
)


# ------------------------------------------------------------------------ numbers


def _is_list(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


def _grid(r: Mapping[str, Any], key: str, n_l: int, n_a: int) -> list[list[float]]:
    """``r[key]`` as an n_l × n_a grid of floats (NaN where missing or short)."""
    raw = r.get(key)
    rows = list(raw) if _is_list(raw) else []
    out = []
    for i in range(n_l):
        row = rows[i] if i < len(rows) and _is_list(rows[i]) else []
        vals = [_f(v) for v in list(row)[:n_a]]
        out.append(vals + [math.nan] * (n_a - len(vals)))
    return out


def _minus(text: str) -> str:
    return text.replace("-", "−")


def _alpha_text(alpha: Any) -> str:
    a = _f(alpha)
    if not math.isfinite(a):
        return MISSING
    return _minus(f"{a:g}")


def _signed(value: Any, digits: int = 2) -> str:
    x = _f(value)
    if not math.isfinite(x):
        return MISSING
    if round(x, digits) == 0:
        return "0"
    return ("+" if x > 0 else "−") + f"{abs(x):.{digits}f}"


def _plain(value: Any, digits: int = 2) -> str:
    x = _f(value)
    return MISSING if math.isnan(x) else _minus(format_number(x, digits))


def _pm(mean: Any, std: Any, digits: int = 3) -> str:
    """``"0.512 ± 0.100"``; ``"0.512"`` without a std; ``"—"`` without a mean."""
    if not _fin(mean):
        return MISSING
    text = _minus(format_number(_f(mean), digits))
    if _fin(std):
        text += " ± " + format_number(_f(std), digits)
    return text


def _ratio_text(ratio: float) -> str:
    if math.isnan(ratio):
        return MISSING
    if math.isinf(ratio):
        return "∞×"
    return f"{ratio:.0f}×" if ratio >= 10 else f"{ratio:.1f}×"


def _pct(rate: float) -> str:
    return MISSING if not math.isfinite(rate) else f"{100 * rate:.0f}%"


def _small(x: float) -> str:
    """A short non-negative number for KL cells: 3 significant digits, ``<0.001``, ``0``."""
    if math.isnan(x):
        return MISSING
    if x == 0:
        return "0"
    if abs(x) < 0.001:
        return "<0.001" if x > 0 else _minus(f"{x:.0e}")
    if abs(x) >= 100:
        return _minus(f"{x:.0f}")
    return _minus(f"{x:.3g}")


def _sym_scale(values: Sequence[float], floor: float) -> float:
    finite = [abs(v) for v in values if math.isfinite(v)]
    return max(max(finite, default=0.0), floor)


# ---------------------------------------------------------------------- the data


def _data(r: Mapping[str, Any]) -> dict[str, Any]:
    cfg = r.get("config") if isinstance(r.get("config"), Mapping) else {}
    layers_raw = r.get("layers") if _is_list(r.get("layers")) else cfg.get("layers")
    alphas_raw = r.get("alphas") if _is_list(r.get("alphas")) else cfg.get("alphas")
    layers = [int(x) for x in layers_raw] if _is_list(layers_raw) else []
    alphas = [_f(a) for a in alphas_raw] if _is_list(alphas_raw) else []
    n_l, n_a = len(layers), len(alphas)
    d: dict[str, Any] = {"layers": layers, "alphas": alphas, "n_l": n_l, "n_a": n_a, "cfg": cfg}
    for key in GRIDS:
        d[key] = _grid(r, key, n_l, n_a)
        d[key + "_std"] = _grid(r, key + "_std", n_l, n_a)
    base = alphas.index(0.0) if 0.0 in alphas else None
    d["base"] = base
    ts, ppl = d["target_score"], d["perplexity"]
    d["delta"] = [
        [ts[i][j] - ts[i][base] if base is not None else math.nan for j in range(n_a)]
        for i in range(n_l)
    ]
    d["ratio"] = [
        [
            ppl[i][j] / ppl[i][base]
            if base is not None and math.isfinite(ppl[i][base]) and ppl[i][base] > 0
            else math.nan
            for j in range(n_a)
        ]
        for i in range(n_l)
    ]
    d["coherence_factor"] = _f(cfg.get("coherence_ppl_factor"))
    if not math.isfinite(d["coherence_factor"]):
        d["coherence_factor"] = 2.0
    d["collapse_d2"] = _f(cfg.get("collapse_distinct2"))
    if not math.isfinite(d["collapse_d2"]):
        d["collapse_d2"] = 0.5
    d["collapse_factor"] = _f(cfg.get("collapse_ppl_factor"))
    if not math.isfinite(d["collapse_factor"]):
        d["collapse_factor"] = 10.0

    sweet = r.get("sweet_spot") if isinstance(r.get("sweet_spot"), Mapping) else None
    d["sweet"] = sweet
    d["sweet_cell"] = None
    if sweet is not None and sweet.get("layer") in layers and _f(sweet.get("alpha")) in alphas:
        d["sweet_cell"] = (layers.index(sweet["layer"]), alphas.index(_f(sweet.get("alpha"))))

    raw_samples = r.get("samples") if _is_list(r.get("samples")) else []
    samples = []
    for i in range(n_l):
        row = raw_samples[i] if i < len(raw_samples) and _is_list(raw_samples[i]) else []
        cells = []
        for j in range(n_a):
            cell = row[j] if j < len(row) and _is_list(row[j]) else []
            cells.append([str(s) for s in cell])
        samples.append(cells)
    d["samples"] = samples
    norms = r.get("vector_norms") if _is_list(r.get("vector_norms")) else []
    d["norms"] = [_f(norms[i]) if i < len(norms) else math.nan for i in range(n_l)]
    return d


def _coherent(d: Mapping[str, Any], i: int, j: int) -> bool | None:
    """The sweet-spot rule for one cell: perplexity within tolerance and little collapse."""
    ratio, collapse = d["ratio"][i][j], d["collapse"][i][j]
    if math.isnan(ratio) or math.isnan(collapse):
        return None
    return ratio <= d["coherence_factor"] and collapse <= COLLAPSE_TOLERANCE


def _where(d: Mapping[str, Any], i: int, j: int) -> str:
    return f"layer {d['layers'][i]} · α = {_alpha_text(d['alphas'][j])}"


# ------------------------------------------------------------------------- header


def _sweet_sentence(d: Mapping[str, Any]) -> tuple[str, bool]:
    sweet = d["sweet"]
    tol = (
        f"mean perplexity ≤ {d['coherence_factor']:g}× the layer's α = 0 value and at most "
        f"{100 * COLLAPSE_TOLERANCE:.0f}% of texts collapsed"
    )
    if sweet is None:
        return (
            f"No coherent setting moved the target score: no steered cell stayed within the "
            f"coherence tolerance ({tol}).",
            False,
        )
    effect, spread = _f(sweet.get("effect")), _f(sweet.get("effect_spread"))
    tolerance = str(sweet.get("tolerance") or tol)
    text = (
        f"Sweet spot: layer {sweet.get('layer')}, α = {_alpha_text(sweet.get('alpha'))} changes "
        f"the target score by {_signed(effect, 3)} vs α = 0 (spread over prompts ± "
        f"{_plain(spread, 3)}), the largest change within the coherence tolerance "
        f"({tolerance})."
    )
    if math.isfinite(effect) and math.isfinite(spread) and abs(effect) < spread:
        text += " The change is smaller than the spread across prompts: read it with care."
    return text, True


def _decoding(cfg: Mapping[str, Any]) -> str:
    t = _f(cfg.get("temperature"))
    if t == 0:
        return "greedy"
    return f"sampling, T = {format_number(t)}" if math.isfinite(t) else MISSING


def _seeds(cfg: Mapping[str, Any]) -> int | None:
    seeds = cfg.get("seeds")
    return len(seeds) if _is_list(seeds) else None


def _lead(r: Mapping[str, Any], d: Mapping[str, Any]) -> Markup:
    cfg = d["cfg"]
    text, found = _sweet_sentence(d)
    badge = (
        Markup('<span class="badge ok">coherent effect</span>')
        if found
        else Markup('<span class="badge warn">no coherent effect</span>')
    )
    parts = [
        Markup('<p class="verdict" style="font-size: 15px; margin: 0 0 4px">{} {}</p>').format(
            text, badge
        )
    ]
    n_seeds = _seeds(cfg)
    prompts = format_number(r.get("n_prompts"))
    if n_seeds and n_seeds > 1:
        prompts += f" × {n_seeds} seeds"
    facts: list[tuple[str, str]] = [
        ("model", str(r.get("model") or "unknown")),
        ("vector source", str(cfg.get("vector_source") or "unknown")),
        ("method", str(cfg.get("method") or "unknown")),
        ("layers", ", ".join(str(x) for x in d["layers"]) or MISSING),
        ("coefficients", ", ".join(_alpha_text(a) for a in d["alphas"]) or MISSING),
        ("prompts", prompts),
        ("decoding", f"{_decoding(cfg)}, {format_number(cfg.get('max_new_tokens'))} new tokens"),
    ]
    dl = Markup("").join(Markup("<div><dt>{}</dt><dd>{}</dd></div>").format(k, v) for k, v in facts)
    parts.append(Markup('<dl class="facts">{}</dl>').format(dl))
    return Markup("").join(parts)


# ------------------------------------------------------------------------ heatmaps


def _heatmap(
    d: Mapping[str, Any],
    values: list[list[float]],
    texts: list[list[str]],
    tips: list[list[str]],
    *,
    title: str,
    vmin: float,
    vmax: float,
    colormap: str | Sequence[str],
    colorbar_label: str,
) -> Markup:
    emphasis = [[(i, j) == d["sweet_cell"] for j in range(d["n_a"])] for i in range(d["n_l"])]
    sub = ["unsteered" if j == d["base"] else "" for j in range(d["n_a"])]
    return heatmap_svg(
        values,
        row_labels=[str(x) for x in d["layers"]],
        col_labels=[_alpha_text(a) for a in d["alphas"]],
        cell_text=texts,
        tooltips=tips,
        vmin=vmin,
        vmax=vmax,
        colormap=colormap,
        title=title,
        colorbar_label=colorbar_label,
        x_label="α (steering coefficient)",
        y_label="layer",
        col_sublabels=sub if d["base"] is not None else None,
        emphasis=emphasis,
        visible_whitespace=False,
        max_width=1060.0,
    )


def _cells(d: Mapping[str, Any], fn: Any) -> list[list[Any]]:
    return [[fn(i, j) for j in range(d["n_a"])] for i in range(d["n_l"])]


def _base_text(d: Mapping[str, Any], key: str, i: int, digits: int = 3) -> str:
    b = d["base"]
    if b is None:
        return ""
    return f" (α = 0: {_pm(d[key][i][b], d[key + '_std'][i][b], digits)})"


def _coherence_tip(d: Mapping[str, Any], i: int, j: int) -> str:
    if j == d["base"]:
        return "\nunsteered baseline"
    ok = _coherent(d, i, j)
    if ok is None:
        return ""
    return "\nwithin the coherence tolerance" if ok else "\noutside the coherence tolerance"


def _sweet_mark(d: Mapping[str, Any], i: int, j: int) -> str:
    return "\nsweet spot" if (i, j) == d["sweet_cell"] else ""


def _bold_note(d: Mapping[str, Any]) -> str:
    return " Bold: the sweet spot." if d["sweet_cell"] is not None else ""


def _target_section(d: Mapping[str, Any]) -> Section:
    delta = d["delta"]
    scale = _sym_scale([v for row in delta for v in row], MIN_DELTA_SCALE)

    def tip(i: int, j: int) -> str:
        return (
            f"{_where(d, i, j)}\nchange vs α = 0: {_signed(delta[i][j], 3)}\n"
            f"target score: {_pm(d['target_score'][i][j], d['target_score_std'][i][j])}"
            + _base_text(d, "target_score", i)
            + _coherence_tip(d, i, j)
            + _sweet_mark(d, i, j)
        )

    svg = _heatmap(
        d,
        delta,
        _cells(d, lambda i, j: _signed(delta[i][j])),
        _cells(d, tip),
        title="Δ target score",
        vmin=-scale,
        vmax=scale,
        colormap=DIVERGING,
        colorbar_label="change vs α = 0",
    )
    caption = (
        "Mean target score (VADER compound of the continuation) minus the same layer's "
        "unsteered (α = 0) mean. Blue: moved up, red: moved down, white: no change; the colour "
        f"scale is symmetric, ±{format_number(scale, 2)}.{_bold_note(d)} Hover a cell for mean ± "
        "standard deviation over prompts and whether it stays coherent."
    )
    return Section("Target-score change", figure(svg, caption))


def _coherence_section(d: Mapping[str, Any]) -> Section:
    ratio = d["ratio"]
    logs = [
        [math.log2(v) if math.isfinite(v) and v > 0 else math.nan for v in row] for row in ratio
    ]
    scale = _sym_scale([v for row in logs for v in row], math.log2(max(d["collapse_factor"], 2)))

    def ppl_tip(i: int, j: int) -> str:
        return (
            f"{_where(d, i, j)}\nperplexity: "
            + _pm(d["perplexity"][i][j], d["perplexity_std"][i][j])
            + _base_text(d, "perplexity", i)
            + f"\nratio to α = 0: {_ratio_text(ratio[i][j])}"
            + _coherence_tip(d, i, j)
            + _sweet_mark(d, i, j)
        )

    ppl_svg = _heatmap(
        d,
        logs,
        _cells(d, lambda i, j: _ratio_text(ratio[i][j])),
        _cells(d, ppl_tip),
        title="Perplexity ÷ α=0",
        vmin=-scale,
        vmax=scale,
        colormap=RATIO_MAP,
        colorbar_label="log₂ ratio",
    )
    d2 = d["distinct2"]
    d2_svg = _heatmap(
        d,
        d2,
        _cells(d, lambda i, j: _plain(d2[i][j])),
        _cells(
            d,
            lambda i, j: (
                f"{_where(d, i, j)}\ndistinct-2: {_pm(d2[i][j], d['distinct2_std'][i][j])}"
                + _base_text(d, "distinct2", i)
                + _sweet_mark(d, i, j)
            ),
        ),
        title="Distinct-2",
        vmin=0.0,
        vmax=1.0,
        colormap="viridis",
        colorbar_label="distinct bigrams",
    )
    col = d["collapse"]
    col_svg = _heatmap(
        d,
        col,
        _cells(d, lambda i, j: _pct(col[i][j])),
        _cells(
            d,
            lambda i, j: (
                f"{_where(d, i, j)}\ncollapse rate: "
                f"{_pm(col[i][j], d['collapse_std'][i][j])} ({_pct(col[i][j])} of texts)"
                + _sweet_mark(d, i, j)
            ),
        ),
        title="Collapse rate",
        vmin=0.0,
        vmax=1.0,
        colormap=REDS,
        colorbar_label="share of texts",
    )
    body = Markup('<div class="fig-row">{}{}{}</div>').format(ppl_svg, d2_svg, col_svg)
    caption = (
        "Perplexity: the continuation's perplexity under the unsteered model, as a ratio to "
        "the same layer's α = 0 mean (orange: less fluent, purple: more predictable, often "
        "repetitive). Distinct-2: the share of distinct token bigrams (low: the text loops). "
        f"Collapse rate: the share of texts with distinct-2 < {d['collapse_d2']:g} or perplexity "
        f"> {d['collapse_factor']:g}× the layer's α = 0 value.{_bold_note(d)} Hover a cell for "
        "mean ± standard deviation."
    )
    return Section("Coherence", figure(body, caption))


def _side_section(d: Mapping[str, Any], r: Mapping[str, Any]) -> Section:
    kl = d["side_kl"]
    finite = [v for row in kl for v in row if math.isfinite(v)]
    vmax = max(max(finite, default=0.0), 0.01)
    svg = _heatmap(
        d,
        kl,
        _cells(d, lambda i, j: _small(kl[i][j])),
        _cells(
            d,
            lambda i, j: (
                f"{_where(d, i, j)}\nKL(unsteered ‖ steered): "
                f"{_pm(kl[i][j], d['side_kl_std'][i][j], 4)} nats" + _sweet_mark(d, i, j)
            ),
        ),
        title="Side-effect KL",
        vmin=0.0,
        vmax=vmax,
        colormap="blues",
        colorbar_label="nats",
    )
    prompts = r.get("side_effect_prompts")
    n = len(prompts) if _is_list(prompts) else None
    caption = (
        "KL(unsteered ‖ steered) of the next-token distribution at the last token of "
        f"{format_number(n) if n is not None else 'the'} neutral, off-target prompts (listed "
        "under Setup), mean over prompts, in nats. 0: steering leaves unrelated text alone."
        + _bold_note(d)
    )
    return Section("Side effects", figure(svg, caption))


def _line_section(d: Mapping[str, Any]) -> Section:
    series, bands = {}, {}
    for i, layer in enumerate(d["layers"]):
        name = f"layer {layer}"
        m, s = d["target_score"][i], d["target_score_std"][i]
        series[name] = m
        bands[name] = (
            [a - b if math.isfinite(b) else a for a, b in zip(m, s, strict=True)],
            [a + b if math.isfinite(b) else a for a, b in zip(m, s, strict=True)],
        )
    svg = line_chart_svg(
        series,
        d["alphas"],
        x_label="α (steering coefficient)",
        y_label="target score",
        title="Target score by α",
        bands=bands,
        width=1000.0,
        height=380.0,
        y_min=-1.0,
        y_max=1.0,
    )
    caption = (
        "Mean target score (VADER compound, from −1 to 1) of the continuations at each α, one "
        "line per layer, with a ± one standard deviation band over prompts. α = 0 is the "
        "unsteered model; negative α steers the other way. Hover a point for its value."
    )
    return Section("Target score by α", figure(svg, caption))


# ------------------------------------------------------------------------ samples


def _num(text: str, *, title: str | None = None) -> Markup:
    style = _NUM + ("; " + _FAINT if text == MISSING else "")
    tip = Markup(' title="{}"').format(title) if title else Markup("")
    return Markup('<span style="{}"{}>{}</span>').format(style, tip, text)


def _sample_html(text: str, collapsed: bool) -> Markup:
    shown = truncate(text.replace("\r\n", "\n").replace("\n", "↵").replace("\t", "⇥"), SAMPLE_CHARS)
    if not shown.strip():
        shown = "∅ (empty continuation)"
    border, bg = ("var(--warn)", "var(--warn-soft)") if collapsed else ("#c5ccda", "#f8f9fb")
    return Markup('<div class="sample" style="{}">{}</div>').format(
        _SAMPLE.format(border, bg), shown
    )


def _samples_table(d: Mapping[str, Any], i: int) -> Markup:
    rows = []
    for j, alpha in enumerate(d["alphas"]):
        collapse = d["collapse"][i][j]
        collapsed = math.isfinite(collapse) and collapse > COLLAPSE_TOLERANCE
        badges = []
        if j == d["base"]:
            badges.append(
                Markup('<span class="badge" style="{}">unsteered</span>').format(
                    "background: var(--accent-soft); color: var(--accent)"
                )
            )
        if (i, j) == d["sweet_cell"]:
            badges.append(Markup('<span class="badge ok">sweet spot</span>'))
        if math.isfinite(collapse) and collapse > 0:
            badges.append(
                Markup('<span class="badge warn collapsed">collapse {}</span>').format(
                    _pct(collapse)
                )
            )
        ok = _coherent(d, i, j)
        if j != d["base"] and ok is False and not collapsed:
            badges.append(Markup('<span class="badge warn">incoherent</span>'))
        texts = d["samples"][i][j]
        shown = [_sample_html(t, collapsed) for t in texts[:SAMPLES_SHOWN]]
        if not shown:
            shown = [Markup('<span class="missing">{}</span>').format(MISSING)]
        rows.append(
            [
                Markup('<span style="{}">{}</span>{}').format(
                    _NUM, _alpha_text(alpha), Markup("").join(badges)
                ),
                _num(
                    _signed(d["delta"][i][j], 3),
                    title="target score "
                    + _pm(d["target_score"][i][j], d["target_score_std"][i][j]),
                ),
                _num(
                    _ratio_text(d["ratio"][i][j]),
                    title=f"perplexity {_pm(d['perplexity'][i][j], d['perplexity_std'][i][j])}",
                ),
                _num(_plain(d["distinct2"][i][j])),
                Markup("").join(shown),
            ]
        )
    return table(["alpha", "Δ target", "perplexity", "distinct-2", "sample continuations"], rows)


def _samples_section(d: Mapping[str, Any]) -> Section:
    if d["sweet_cell"] is not None:
        open_rows = {d["sweet_cell"][0]}
    else:
        open_rows = {0}
    if d["n_l"] <= 2:
        open_rows = set(range(d["n_l"]))
    blocks = []
    for i, layer in enumerate(d["layers"]):
        summary = Markup("Layer {}").format(layer)
        if math.isfinite(d["norms"][i]):
            summary += Markup(' <span style="{}">· vector norm {}</span>').format(
                _FAINT, format_number(d["norms"][i])
            )
        if d["sweet_cell"] is not None and d["sweet_cell"][0] == i:
            summary += Markup(' <span class="badge ok">sweet spot</span>')
        n_collapsed = sum(
            1 for v in d["collapse"][i] if math.isfinite(v) and v > COLLAPSE_TOLERANCE
        )
        if n_collapsed:
            summary += Markup(' <span class="badge warn">collapse at {} α</span>').format(
                n_collapsed
            )
        blocks.append(
            Markup(
                '<details class="layer-samples" data-layer="{}"{}><summary>{}</summary>{}</details>'
            ).format(
                layer,
                Markup(" open") if i in open_rows else Markup(""),
                summary,
                _samples_table(d, i),
            )
        )
    body = Markup("").join(blocks)
    note = (
        f"The first {SAMPLES_SHOWN} continuations of each (layer, α) cell (every continuation "
        "is in results.json), prompt not included; "
        "↵ marks a line break. The “collapse” badge gives the share of the cell's texts that "
        f"collapsed; orange samples: more than {100 * COLLAPSE_TOLERANCE:.0f}% did. "
        f"“Incoherent”: mean perplexity above {d['coherence_factor']:g}× α = 0. "
        "Click a layer to show or hide its samples."
    )
    return Section("Sample continuations", body, note)


# ------------------------------------------------------------------------ metrics


def _metrics_section(d: Mapping[str, Any]) -> Section:
    items = [
        (
            "Steering",
            "the vector v is added to the residual stream after block L at every position "
            "while generating, h ← h + α·v. α = 0 is the unsteered model; negative α steers "
            "the other way (for a sentiment vector: towards the opposite sentiment).",
        ),
        (
            "Target score",
            "VADER's compound sentiment of the continuation only (−1 to 1), a lexicon scorer "
            "independent of the model; the heatmap shows its change vs the same layer's α = 0.",
        ),
        (
            "Perplexity",
            "of the continuation given the prompt under the unsteered model: steered text that "
            "the model itself finds unlikely is less fluent.",
        ),
        (
            "Distinct-2",
            "the share of distinct token bigrams in the continuation; a text that loops scores "
            "low.",
        ),
        (
            "Collapse",
            f"a text is flagged when its distinct-2 < {d['collapse_d2']:g} or its perplexity > "
            f"{d['collapse_factor']:g}× the layer's α = 0 mean; the rate is the share of flagged "
            "texts.",
        ),
        (
            "Side effect",
            "KL(unsteered ‖ steered) of the next-token distribution on neutral prompts the "
            "vector should not touch.",
        ),
        (
            "Sweet spot",
            "the (layer, α ≠ 0) cell with the largest |change| in target score whose mean "
            f"perplexity stays ≤ {d['coherence_factor']:g}× α = 0 and whose collapse rate is "
            f"≤ {100 * COLLAPSE_TOLERANCE:.0f}%.",
        ),
    ]
    lis = Markup("").join(Markup("<li><strong>{}</strong>: {}</li>").format(k, v) for k, v in items)
    body = Markup(
        '<div class="note"><ul style="margin: 0 0 6px; padding-left: 18px">{}</ul>{}</div>'
    ).format(
        lis,
        "Every cell is a mean over prompts (and sampling seeds); the tooltips give the "
        "standard deviation.",
    )
    return Section("Metrics", body)


def _setup_section(r: Mapping[str, Any], d: Mapping[str, Any]) -> Section:
    cfg = d["cfg"]
    seeds = cfg.get("seeds")
    chat = cfg.get("chat")
    texts = r.get("texts")
    items: dict[str, Any] = {
        "model": r.get("model"),
        "vector source": cfg.get("vector_source"),
        "method": cfg.get("method"),
        "layers": ", ".join(str(x) for x in d["layers"]) or None,
        "α": ", ".join(_alpha_text(a) for a in d["alphas"]) or None,
        "prompts": r.get("n_prompts"),
        "seeds": ", ".join(str(s) for s in seeds) if _is_list(seeds) else seeds,
        "decoding": _decoding(cfg),
        "max new tokens": cfg.get("max_new_tokens"),
        "chat template": ("yes" if chat else "no") if isinstance(chat, bool) else None,
        "batch size": cfg.get("batch_size"),
        "continuations scored": len(texts) if _is_list(texts) else None,
        "collapse rule": f"distinct-2 < {d['collapse_d2']:g} or perplexity > "
        f"{d['collapse_factor']:g}× α = 0",
        "coherence tolerance": f"perplexity ≤ {d['coherence_factor']:g}× α = 0, collapse ≤ "
        f"{100 * COLLAPSE_TOLERANCE:.0f}%",
    }
    body = kv_table(items)
    if d["n_l"]:
        body += table(
            ["layer", "vector norm"],
            [[layer, _num(format_number(d["norms"][i]))] for i, layer in enumerate(d["layers"])],
        )
    prompts = r.get("side_effect_prompts")
    if _is_list(prompts) and prompts:
        lis = Markup("").join(Markup("<li><code>{}</code></li>").format(str(p)) for p in prompts)
        body += Markup(
            '<p style="margin: 6px 0 2px">Off-target prompts for the side-effect KL:</p>'
            '<ul style="margin: 0 0 8px; padding-left: 20px">{}</ul>'
        ).format(lis)
    return Section("Setup", body)


# ------------------------------------------------------------------------- report


def _build(result: Mapping[str, Any]) -> tuple[str, str, Markup, list[Section]]:
    r = result
    d = _data(r)
    title = f"Steering sweep — {r.get('model') or 'unknown model'}"
    subtitle = (
        "A steering vector v added to the residual stream after block L (h ← h + α·v) while "
        "generating, swept over layers and coefficients α."
    )
    sections: list[Section] = []
    if d["n_l"] and d["n_a"]:
        sections += [
            _target_section(d),
            _coherence_section(d),
            _side_section(d, r),
            _line_section(d),
            _samples_section(d),
        ]
    sections += [_metrics_section(d), _setup_section(r, d)]
    return title, subtitle, _lead(r, d), sections


def render_steering_report(result: dict, manifest: dict) -> str:
    """The steering-sweep report as one self-contained HTML document."""
    title, subtitle, lead, sections = _build(result)
    return render_report(title, sections, dict(manifest), subtitle=subtitle, lead=lead)


def write_steering_report(path: str | os.PathLike[str], result: dict, manifest: dict) -> Path:
    """Render the steering report and write it atomically to ``path``."""
    return atomic_write_text(path, render_steering_report(result, manifest))
