"""Figures of a steering sweep (matplotlib), drawn from its ``SweepResult``.

* :func:`heatmap_figure`: one layer × α heatmap of a metric (``"target_delta"``,
  ``"perplexity"``, ``"distinct2"``, ``"collapse"`` or ``"side_kl"``), layers top to
  bottom in sweep order, every cell annotated, the sweet spot in bold with a dark
  outline, missing values grey with a dash. Each cell is a rectangle with gid
  ``cell-I-J`` (its text: ``cell-I-J-t``); :func:`heatmap_titles` gives their hover texts.
* :func:`target_by_alpha_figure`: the mean target score against α, one line (gid
  ``line-I``) and ± one standard deviation band (``band-I``) per layer, a point per
  cell (``point-I-J``, hover texts from :func:`target_by_alpha_titles`).

The ``fmt_*`` helpers format the numbers only these figures and the report show
(coefficients, ratios, collapse rates, KL); the rest use :mod:`interp.display`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize, to_rgb
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import FuncFormatter, MaxNLocator

from interp.display import MISSING, format_number, plus_minus
from interp.errors import InterpError
from interp.plotting import INK, PALETTE, ci_line, colormap, new_figure, styled

__all__ = [
    "HEATMAPS",
    "MISSING",
    "MISSING_FILL",
    "SweepData",
    "fmt_alpha",
    "fmt_pct",
    "fmt_ratio",
    "fmt_signed",
    "fmt_small",
    "heatmap_cell_texts",
    "heatmap_figure",
    "heatmap_scale",
    "heatmap_titles",
    "target_by_alpha_figure",
    "target_by_alpha_titles",
]

Grid = list[list[float]]


class SweepThresholds(Protocol):
    """The sweep settings the figures read (a :class:`~interp.steering.sweep.SweepConfig`)."""

    @property
    def collapse_ppl_factor(self) -> float:
        """A text whose perplexity exceeds this × its layer's α = 0 mean counts as collapsed."""
        ...


class SweepData(Protocol):
    """What the figures read of a :class:`interp.steering.sweep.SweepResult` (which
    imports this module for its ``_repr_html_``, so the type is structural here)."""

    layers: list[int]
    alphas: list[float]
    target_score: Grid
    target_score_std: Grid
    perplexity: Grid
    perplexity_std: Grid
    distinct2: Grid
    distinct2_std: Grid
    collapse: Grid
    collapse_std: Grid
    side_kl: Grid
    side_kl_std: Grid

    @property
    def config(self) -> SweepThresholds:
        """The sweep's settings (the thresholds the figures mark)."""
        ...

    @property
    def base_index(self) -> int | None:
        """The column of α = 0 (None when α = 0 was not swept)."""
        ...

    @property
    def target_delta(self) -> Grid:
        """Mean target score minus the same layer's α = 0 mean, ``[layers][alphas]``."""
        ...

    @property
    def perplexity_ratio(self) -> Grid:
        """Mean perplexity over the same layer's α = 0 mean, ``[layers][alphas]``."""
        ...

    @property
    def sweet_cell(self) -> tuple[int, int] | None:
        """(layer index, α index) of the sweet spot, when it is one of the swept cells."""
        ...

    def coherent(self, i: int, j: int) -> bool | None:
        """Whether cell (i, j) passes the sweet-spot rule (None when unknown)."""
        ...

    def grid(self, name: str) -> Grid:
        """The grid called ``name`` (e.g. ``"perplexity"`` or ``"side_kl_std"``)."""
        ...

#: Fill of a cell without a value.
MISSING_FILL = "#e9ebef"
#: The Δ-target colour scale spans ±max|Δ|, never less than this (noise stays pale).
MIN_DELTA_SCALE = 0.05

# ------------------------------------------------------------------ number formats


def _minus(text: str) -> str:
    return text.replace("-", "−")


def fmt_alpha(alpha: float) -> str:
    """``-4.0`` → ``"−4"``."""
    return _minus(f"{alpha:g}") if math.isfinite(alpha) else MISSING


def fmt_signed(x: float, digits: int = 2) -> str:
    """``"+0.12"``, ``"−0.40"``, ``"0"`` when it rounds to zero, ``"—"`` for NaN."""
    if not math.isfinite(x):
        return MISSING
    if round(x, digits) == 0:
        return "0"
    return ("+" if x > 0 else "−") + f"{abs(x):.{digits}f}"


def fmt_ratio(ratio: float) -> str:
    """A ratio for a cell: ``"2.4×"``, ``"12×"`` from 10 up, ``"∞×"``, ``"—"`` for NaN."""
    if math.isnan(ratio):
        return MISSING
    if math.isinf(ratio):
        return "∞×"
    return f"{ratio:.0f}×" if ratio >= 10 else f"{ratio:.1f}×"


def fmt_pct(rate: float) -> str:
    """A rate as a whole percentage (``"37%"``), ``"—"`` when not finite."""
    return f"{100 * rate:.0f}%" if math.isfinite(rate) else MISSING


def fmt_small(x: float) -> str:
    """A short non-negative number (KL): 3 significant digits, ``<0.001``, ``0``."""
    if math.isnan(x):
        return MISSING
    if x == 0:
        return "0"
    if abs(x) < 0.001:
        return "<0.001" if x > 0 else _minus(f"{x:.0e}")
    if abs(x) >= 100:
        return _minus(f"{x:.0f}")
    return _minus(f"{x:.3g}")


# ------------------------------------------------------------------------ heatmaps


@dataclass(frozen=True)
class Heatmap:
    """How one sweep grid is drawn: its title, colour-bar label and matplotlib colormap."""

    title: str
    colorbar: str
    cmap: str


#: Heatmap name → (title, colour-bar label, colormap).
HEATMAPS: dict[str, Heatmap] = {
    "target_delta": Heatmap("Δ target score", "change vs α = 0", "RdBu"),
    "perplexity": Heatmap("Perplexity ÷ α=0", "ratio to α = 0", "PuOr_r"),
    "distinct2": Heatmap("Distinct-2", "distinct bigrams", "viridis"),
    "collapse": Heatmap("Collapse rate", "share of texts", "Reds"),
    "side_kl": Heatmap("Side-effect KL", "nats", "Blues"),
}


def _check(name: str) -> Heatmap:
    if name not in HEATMAPS:
        raise InterpError(f"unknown steering heatmap {name!r}: use {', '.join(HEATMAPS)}")
    return HEATMAPS[name]


def _finite(grid: Sequence[Sequence[float]]) -> list[float]:
    return [v for row in grid for v in row if math.isfinite(v)]


def heatmap_scale(r: SweepData, name: str) -> tuple[list[list[float]], float, float]:
    """The values a heatmap colours and its colour range (vmin, vmax)."""
    _check(name)
    if name == "target_delta":
        grid = r.target_delta
        s = max(max((abs(v) for v in _finite(grid)), default=0.0), MIN_DELTA_SCALE)
        return grid, -s, s
    if name == "perplexity":  # log2 of the ratio, symmetric around 1×
        grid = [[math.log2(v) if math.isfinite(v) and v > 0 else math.nan for v in row]
                for row in r.perplexity_ratio]
        floor = math.log2(max(r.config.collapse_ppl_factor, 2))
        s = max(max((abs(v) for v in _finite(grid)), default=0.0), floor)
        return grid, -s, s
    if name == "side_kl":
        return r.side_kl, 0.0, max(max(_finite(r.side_kl), default=0.0), 0.01)
    return r.grid(name), 0.0, 1.0


def heatmap_cell_texts(r: SweepData, name: str) -> list[list[str]]:
    """The annotation of every cell of heatmap ``name``."""
    _check(name)
    grid: list[list[float]]
    fmt: Callable[[float], str]
    if name == "target_delta":
        grid, fmt = r.target_delta, fmt_signed
    elif name == "perplexity":
        grid, fmt = r.perplexity_ratio, fmt_ratio
    elif name == "distinct2":
        grid, fmt = r.distinct2, lambda v: format_number(v, 2)
    elif name == "collapse":
        grid, fmt = r.collapse, fmt_pct
    else:
        grid, fmt = r.side_kl, fmt_small
    return [[fmt(v) for v in row] for row in grid]


def _text_colour(rgb: tuple[float, float, float]) -> str:
    lum = 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2]
    return "#ffffff" if lum < 0.5 else INK


@styled
def heatmap_figure(result: SweepData, name: str) -> Figure:
    """Heatmap ``name`` (a key of :data:`HEATMAPS`): layers as rows, α as columns."""
    spec = _check(name)
    values, vmin, vmax = heatmap_scale(result, name)
    texts = heatmap_cell_texts(result, name)
    n_l, n_a = len(result.layers), len(result.alphas)
    if not n_l or not n_a:
        raise InterpError("the sweep has no layer or no α to draw")
    cmap, norm = colormap(spec.cmap), Normalize(vmin, vmax)
    fig = new_figure(min(2.0 + 0.55 * max(n_a, 2), 10.5), 1.3 + 0.34 * max(n_l, 3))
    ax = fig.subplots()
    ax.grid(False)
    for side in ("left", "bottom"):
        ax.spines[side].set_visible(False)
    sweet = result.sweet_cell
    for i in range(n_l):
        for j in range(n_a):
            v = values[i][j]
            fill = to_rgb(cmap(norm(v))) if math.isfinite(v) else to_rgb(MISSING_FILL)
            bold = (i, j) == sweet
            ax.add_patch(Rectangle((j, i), 1, 1, facecolor=fill, linewidth=2.0 if bold else 1.0,
                                   edgecolor=INK if bold else "white", gid=f"cell-{i}-{j}",
                                   zorder=3 if bold else 2))
            ax.text(j + 0.5, i + 0.5, texts[i][j], ha="center", va="center", fontsize=8,
                    color=_text_colour(fill), fontweight="bold" if bold else "normal",
                    gid=f"cell-{i}-{j}-t", zorder=4)
    ax.set_xlim(0, n_a)
    ax.set_ylim(n_l, 0)  # the first swept layer on top
    base = result.base_index
    ax.set_xticks([j + 0.5 for j in range(n_a)],
                  labels=[fmt_alpha(a) + ("\nunsteered" if j == base else "")
                          for j, a in enumerate(result.alphas)])
    ax.set_yticks([i + 0.5 for i in range(n_l)], labels=[str(x) for x in result.layers])
    ax.tick_params(length=0)
    for i, tick in enumerate(ax.yaxis.get_major_ticks()):
        tick.label1.set_gid(f"row-{i}")
    ax.set_xlabel("α (steering coefficient)")
    ax.set_ylabel("layer")
    ax.set_title(spec.title, loc="left")
    bar = fig.colorbar(ScalarMappable(norm, cmap), ax=ax, fraction=0.05, pad=0.02,
                       aspect=max(8, 6 * n_l))
    bar.set_label(spec.colorbar)
    bar.outline.set_visible(False)
    if name == "perplexity":  # log2 ticks read as ratios: 1/4×, 1×, 4×
        bar.locator = MaxNLocator(nbins=min(6, 2 + n_l), integer=True)
        bar.formatter = FuncFormatter(
            lambda v, _pos: f"{2.0**v:g}×" if v >= 0 else f"1/{2.0**-v:g}×")
    return fig


def _where(r: SweepData, i: int, j: int) -> str:
    return f"layer {r.layers[i]} · α = {fmt_alpha(r.alphas[j])}"


def _base_text(r: SweepData, key: str, i: int, digits: int = 3) -> str:
    b = r.base_index
    if b is None:
        return ""
    return f" (α = 0: {plus_minus(r.grid(key)[i][b], r.grid(key + '_std')[i][b], digits)})"


def _coherence_tip(r: SweepData, i: int, j: int) -> str:
    if j == r.base_index:
        return "\nunsteered baseline"
    ok = r.coherent(i, j)
    if ok is None:
        return ""
    return "\nwithin the coherence tolerance" if ok else "\noutside the coherence tolerance"


def heatmap_titles(result: SweepData, name: str) -> dict[str, str]:
    """Hover text of every cell of heatmap ``name``, by gid (``cell-I-J``)."""
    _check(name)
    r, out = result, {}
    delta, ratio = r.target_delta, r.perplexity_ratio
    for i in range(len(r.layers)):
        for j in range(len(r.alphas)):
            where = _where(r, i, j)
            sweet = "\nsweet spot" if (i, j) == r.sweet_cell else ""
            if name == "target_delta":
                tip = (f"{where}\nchange vs α = 0: {fmt_signed(delta[i][j], 3)}\ntarget score: "
                       f"{plus_minus(r.target_score[i][j], r.target_score_std[i][j])}"
                       + _base_text(r, "target_score", i) + _coherence_tip(r, i, j))
            elif name == "perplexity":
                tip = (f"{where}\nperplexity: "
                       f"{plus_minus(r.perplexity[i][j], r.perplexity_std[i][j])}"
                       + _base_text(r, "perplexity", i)
                       + f"\nratio to α = 0: {fmt_ratio(ratio[i][j])}" + _coherence_tip(r, i, j))
            elif name == "distinct2":
                d2 = plus_minus(r.distinct2[i][j], r.distinct2_std[i][j])
                tip = f"{where}\ndistinct-2: {d2}" + _base_text(r, "distinct2", i)
            elif name == "collapse":
                rate = plus_minus(r.collapse[i][j], r.collapse_std[i][j])
                tip = f"{where}\ncollapse rate: {rate} ({fmt_pct(r.collapse[i][j])} of texts)"
            else:
                tip = (f"{where}\nKL(unsteered ‖ steered): "
                       f"{plus_minus(r.side_kl[i][j], r.side_kl_std[i][j], 4)} nats")
            out[f"cell-{i}-{j}"] = tip + sweet
    return out


# ------------------------------------------------------------------------- lines


@styled
def target_by_alpha_figure(result: SweepData) -> Figure:
    """Mean target score against α, one line and ± one std band per layer."""
    r = result
    fig = new_figure(7.5, 3.4)
    ax = fig.subplots()
    for i, layer in enumerate(r.layers):
        colour = PALETTE[i % len(PALETTE)]
        m, s = r.target_score[i], r.target_score_std[i]
        lo = [a - b if math.isfinite(b) else a for a, b in zip(m, s, strict=True)]
        hi = [a + b if math.isfinite(b) else a for a, b in zip(m, s, strict=True)]
        ci_line(ax, r.alphas, m, lo, hi, label=f"layer {layer}", color=colour, marker="")
        ax.lines[-1].set_gid(f"line-{i}")
        ax.collections[-1].set_gid(f"band-{i}")
        for j, (a, v) in enumerate(zip(r.alphas, m, strict=True)):
            if math.isfinite(v):
                ax.plot([a], [v], marker="o", markersize=4, color=colour, linestyle="none",
                        gid=f"point-{i}-{j}")
    ax.axvline(0.0, color=INK, linewidth=0.6, alpha=0.4, zorder=0)
    ax.set_ylim(-1.0, 1.0)
    ax.set_xlabel("α (steering coefficient)")
    ax.set_ylabel("target score")
    ax.set_title("Target score by α", loc="left")
    if r.layers:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def target_by_alpha_titles(result: SweepData) -> dict[str, str]:
    """Hover text of every point of :func:`target_by_alpha_figure`, by gid."""
    r = result
    return {f"point-{i}-{j}": f"{_where(r, i, j)}\ntarget score: "
                              f"{plus_minus(r.target_score[i][j], r.target_score_std[i][j])}"
            for i in range(len(r.layers)) for j in range(len(r.alphas))
            if math.isfinite(r.target_score[i][j])}
