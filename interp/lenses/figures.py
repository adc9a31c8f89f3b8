"""Figures of the lenses, drawn with matplotlib in the house style (:mod:`interp.plotting`).

Each builder takes a lens result and returns a :class:`~matplotlib.figure.Figure`:

- :func:`lens_curves_figure`: KL(final ‖ layer) and entropy by layer for one prompt
  (a :class:`~interp.lenses.logit.LensResult`);
- :func:`lens_compare_figure`: KL by layer, logit lens vs tuned lens, for one prompt;
- :func:`eval_kl_figure`, :func:`eval_metrics_figure`: held-out KL, cross-entropy,
  entropy and top-1 agreement per layer with 95% CIs (a
  :class:`~interp.lenses.evaluation.LensEval`);
- :func:`training_loss_figure`: a tuned lens's loss per training step.

Every point of every curve is its own artist with a gid, and the matching
``*_titles`` function gives each gid its hover text (the report shows it as a
tooltip). :func:`token_grid` turns a lens result into the coloured cells of the
token table (colours computed here, laid out by the report as an HTML table).

The builders read results through the small protocols below, so this module
imports no result module and every result module may import it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from matplotlib.colors import to_hex, to_rgb
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator
from torch import Tensor

from interp.display import format_number
from interp.plotting import INK, MUTED, PALETTE, ci_line, colormap, hover_points, new_figure, styled

#: Colours of the lenses and metrics in every lens figure.
LENS_COLORS = {"logit": PALETTE[0], "tuned": PALETTE[3]}
KL_COLOR, ENTROPY_COLOR = PALETTE[0], PALETTE[1]
GRID_COLORMAP = "viridis"


# ------------------------------------------------------------------ what the figures read


class Readout(Protocol):
    """One prompt read at every layer (a :class:`~interp.lenses.logit.LensResult`)."""

    @property
    def lens(self) -> str:
        """The lens's name: ``"logit"`` or ``"tuned"``."""
        ...

    @property
    def tokens(self) -> list[str]:
        """The prompt's tokens as text (P of them)."""
        ...

    @property
    def layers(self) -> list[int]:
        """The layers read (L of them)."""
        ...

    @property
    def kl(self) -> Tensor:  # [L, P]
        """KL(final ‖ lens) at each layer and position, ``[L, P]`` (nats)."""
        ...

    @property
    def entropy(self) -> Tensor:  # [L, P]
        """Entropy of the lens's distribution, ``[L, P]`` (nats)."""
        ...

    @property
    def topk_probs(self) -> Tensor:  # [L, P, K]
        """Probabilities of the lens's top-k tokens, ``[L, P, K]``."""
        ...

    @property
    def topk_tokens(self) -> list[list[list[str]]]:  # [L][P][K]
        """The lens's top-k tokens as text, ``[L][P][K]``."""
        ...

    @property
    def final_topk_tokens(self) -> list[list[str]]:  # [P][K]
        """The model's own top-k next tokens as text, ``[P][K]``."""
        ...


class Evaluation(Protocol):
    """Held-out metrics per layer (a :class:`~interp.lenses.evaluation.LensEval`)."""

    @property
    def layers(self) -> list[int]:
        """The layers evaluated."""
        ...

    @property
    def lenses(self) -> list[str]:
        """The lenses evaluated (``"logit"``, ``"tuned"``)."""
        ...

    @property
    def model_ce(self) -> Tensor:  # [windows]
        """The model's own cross-entropy on each held-out window, ``[windows]`` (nats)."""
        ...

    def mean_ci(self, lens: str, metric: str) -> tuple[list[float], list[list[float]]]:
        """Per layer, the mean of ``metric`` for ``lens`` over windows and its 95% CI."""
        ...


class LossHistory(Protocol):
    """A training run's loss per step (a training result or a lens's saved history)."""

    @property
    def losses(self) -> list[float]:
        """The training loss at each step."""
        ...


# ------------------------------------------------------------------ curves with hover


def fmt(x: float, digits: int = 3) -> str:
    """A number for a tooltip (a float, even when given an int): see
    :func:`~interp.display.format_number`."""
    return format_number(float(x), digits)


@dataclass(frozen=True)
class Series:
    """One curve: its values per x, an optional band, and how it looks."""

    key: str
    label: str
    y: Sequence[float]
    lo: Sequence[float] | None = None
    hi: Sequence[float] | None = None
    color: str = PALETTE[0]
    dashed: bool = False


@dataclass(frozen=True)
class Panel:
    """One axes: a title, a y label, its curves, and an optional floor of the y axis."""

    title: str
    ylabel: str
    series: list[Series]
    y_min: float | None = None


def _gid(panel: int, key: str, i: int) -> str:
    return f"p{panel}-{key}-{i}"


def _draw(x: Sequence[float], panels: Sequence[Panel], xlabel: str, width: float,
          height: float) -> Figure:
    fig = new_figure(width, height)
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for pi, (ax, panel) in enumerate(zip(axes, panels, strict=True)):
        for s in panel.series:
            ci_line(ax, x, s.y, s.lo, s.hi, label=s.label, color=s.color, marker="",
                    dashed=s.dashed)
            hover_points(ax, x, s.y, lambda i, pi=pi, key=s.key: _gid(pi, key, i),
                         color=s.color)
        ax.set_title(panel.title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(panel.ylabel)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        if panel.y_min is not None:
            ax.set_ylim(bottom=panel.y_min)
        if len(panel.series) > 1:
            ax.legend(fontsize=8)
    return fig


def _titles(x: Sequence[float], panels: Sequence[Panel], xlabel: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for pi, panel in enumerate(panels):
        for s in panel.series:
            for i, (xv, yv) in enumerate(zip(x, s.y, strict=True)):
                if not math.isfinite(yv):
                    continue
                tip = f"{s.label}\n{xlabel} {xv:g}: {fmt(yv)}"
                if s.lo is not None and s.hi is not None:
                    tip += f"  [{fmt(s.lo[i])}, {fmt(s.hi[i])}]"
                out[_gid(pi, s.key, i)] = tip
    return out


def _grid(t: Tensor) -> np.ndarray:
    return t.detach().double().cpu().numpy()


# ------------------------------------------------------------------ one prompt


def _curves(result: Readout) -> list[Panel]:
    n_pos = len(result.tokens)
    last = n_pos - 1
    panels = []
    for key, title, color in (("kl", "KL(final ‖ layer)", KL_COLOR),
                              ("entropy", "Entropy of the lens distribution", ENTROPY_COLOR)):
        grid = _grid(result.kl if key == "kl" else result.entropy)
        series = [Series(f"{key}-last", "last position", list(grid[:, last]), color=color)]
        if n_pos > 1:
            rest = grid[:, 1:]
            label = f"mean, positions 1–{last}" if last > 1 else "position 1"
            lo = hi = None
            if n_pos > 2:
                lo = list(np.nanpercentile(rest, 25, axis=1))
                hi = list(np.nanpercentile(rest, 75, axis=1))
            series.append(Series(f"{key}-mean", label, list(np.nanmean(rest, axis=1)), lo, hi,
                                 color=color, dashed=True))
        panels.append(Panel(title, "nats", series))
    return panels


@styled
def lens_curves_figure(result: Readout) -> Figure:
    """KL(final ‖ layer) and entropy by layer: the last position, and the mean of the others.

    Position 0 stays out of the mean (an attention sink); the band is the 25th–75th
    percentile over positions 1 … P−1.
    """
    return _draw(result.layers, _curves(result), "layer", 9.6, 3.4)


def lens_curves_titles(result: Readout) -> dict[str, str]:
    """Hover text by gid for :func:`lens_curves_figure`."""
    return _titles(result.layers, _curves(result), "layer")


def _compare(logit: Readout, tuned: Readout) -> list[Panel]:
    last = len(logit.tokens) - 1
    first = 1 if last >= 1 else 0
    series = []
    for style, name in (("last", "last position"), ("mean", "mean")):
        for res in (logit, tuned):
            grid = _grid(res.kl)
            y = grid[:, last] if style == "last" else np.nanmean(grid[:, first:], axis=1)
            series.append(Series(f"{res.lens}-{style}", f"{res.lens} lens, {name}", list(y),
                                 color=LENS_COLORS.get(res.lens, MUTED), dashed=style == "mean"))
    return [Panel("KL(final ‖ layer), logit lens vs tuned lens", "nats", series)]


@styled
def lens_compare_figure(logit: Readout, tuned: Readout) -> Figure:
    """KL(final ‖ layer) of both lenses: solid the last position, dashed the mean over 1 … P−1."""
    return _draw(logit.layers, _compare(logit, tuned), "layer", 9.6, 3.6)


def lens_compare_titles(logit: Readout, tuned: Readout) -> dict[str, str]:
    """Hover text by gid for :func:`lens_compare_figure`."""
    return _titles(logit.layers, _compare(logit, tuned), "layer")


# ------------------------------------------------------------------ held-out evaluation


def _metric(ev: Evaluation, metric: str) -> list[Series]:
    out = []
    for lens in ev.lenses:
        mean, ci = ev.mean_ci(lens, metric)
        out.append(Series(lens, f"{lens} lens", mean, [c[0] for c in ci], [c[1] for c in ci],
                          color=LENS_COLORS.get(lens, MUTED)))
    return out


def _eval_kl(ev: Evaluation) -> list[Panel]:
    return [Panel("KL(final ‖ lens) by layer, held-out", "nats", _metric(ev, "kl"), 0.0)]


def _eval_metrics(ev: Evaluation) -> list[Panel]:
    model_ce = float(ev.model_ce.double().mean())
    ce = [*_metric(ev, "ce"), Series("model", "model output", [model_ce] * len(ev.layers),
                                      color=MUTED, dashed=True)]
    return [
        Panel("Cross-entropy vs the next token", "nats", ce, 0.0),
        Panel("Entropy of the lens distribution", "nats", _metric(ev, "entropy"), 0.0),
        Panel("Top-1 agreement with the model", "share", _metric(ev, "top1_agreement"), 0.0),
    ]


@styled
def eval_kl_figure(ev: Evaluation) -> Figure:
    """Held-out KL(final ‖ lens) per layer for each lens, with 95% CIs over windows."""
    return _draw(ev.layers, _eval_kl(ev), "layer", 9.6, 3.6)


def eval_kl_titles(ev: Evaluation) -> dict[str, str]:
    """Hover text by gid for :func:`eval_kl_figure`."""
    return _titles(ev.layers, _eval_kl(ev), "layer")


@styled
def eval_metrics_figure(ev: Evaluation) -> Figure:
    """Cross-entropy (with the model's own), entropy and top-1 agreement per layer."""
    return _draw(ev.layers, _eval_metrics(ev), "layer", 12.0, 3.4)


def eval_metrics_titles(ev: Evaluation) -> dict[str, str]:
    """Hover text by gid for :func:`eval_metrics_figure`."""
    return _titles(ev.layers, _eval_metrics(ev), "layer")


def _loss(run: LossHistory) -> tuple[list[int], list[Panel]]:
    steps = list(range(1, len(run.losses) + 1))
    series = Series("loss", "training loss", [float(x) for x in run.losses], color=PALETTE[3])
    return steps, [Panel("Training loss", "Σ KL over layers (nats)", [series], 0.0)]


@styled
def training_loss_figure(run: LossHistory) -> Figure:
    """The loss (KL summed over the translated layers) at every training step."""
    steps, panels = _loss(run)
    return _draw(steps, panels, "step", 9.6, 3.0)


def training_loss_titles(run: LossHistory) -> dict[str, str]:
    """Hover text by gid for :func:`training_loss_figure`."""
    steps, panels = _loss(run)
    return _titles(steps, panels, "step")


# ------------------------------------------------------------------ the token grid


@dataclass(frozen=True)
class GridCell:
    """One (layer, position) cell: the lens's top-1 token, coloured by its probability."""

    token: str
    prob: float
    background: str
    color: str
    matches_final: bool
    title: str


@dataclass(frozen=True)
class GridRow:
    """One layer's row of the token table: a :class:`GridCell` per position."""
    layer: int
    cells: list[GridCell]


@dataclass(frozen=True)
class TokenGrid:
    """The cells of the token table, last layer first, and the colour key."""

    tokens: list[str]
    rows: list[GridRow]
    final: list[str]
    key: list[tuple[float, str]]


def _text_color(background: str) -> str:
    r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
               for c in to_rgb(background))
    return "#ffffff" if 0.2126 * r + 0.7152 * g + 0.0722 * b < 0.179 else INK


def cell_colors(value: float, cmap: str = GRID_COLORMAP) -> tuple[str, str]:
    """(background, text) hex colours of a value in [0, 1]; grey for NaN."""
    if not math.isfinite(value):
        return "#d0d4dc", INK
    bg = to_hex(colormap(cmap)(min(max(value, 0.0), 1.0)))
    return bg, _text_color(bg)


def _tooltip(result: Readout, li: int, p: int) -> str:
    probs = result.topk_probs[li, p].tolist()
    tokens = result.topk_tokens[li][p]
    lines = [
        f"layer {result.layers[li]} · position {p}",
        f"input token: {json.dumps(result.tokens[p], ensure_ascii=False)}",
        f"top-{len(tokens)} next-token predictions:",
        *(f"  {rank}. {json.dumps(t, ensure_ascii=False)}  {fmt(q)}"
          for rank, (t, q) in enumerate(zip(tokens, probs, strict=True), start=1)),
        f"KL(final ‖ layer) = {fmt(float(result.kl[li, p]))} nats",
        f"entropy = {fmt(float(result.entropy[li, p]))} nats",
        f"model's final top-1: {json.dumps(result.final_topk_tokens[p][0], ensure_ascii=False)}",
    ]
    return "\n".join(lines)


def token_grid(result: Readout) -> TokenGrid:
    """Each layer's top-1 token at each position, coloured by its probability (viridis)."""
    final = [row[0] for row in result.final_topk_tokens]
    rows = []
    for li in range(len(result.layers) - 1, -1, -1):  # the last layer on top
        cells = []
        for p in range(len(result.tokens)):
            prob = float(result.topk_probs[li, p, 0])
            token = result.topk_tokens[li][p][0]
            bg, ink = cell_colors(prob)
            cells.append(GridCell(token, prob, bg, ink, token == final[p],
                                  _tooltip(result, li, p)))
        rows.append(GridRow(result.layers[li], cells))
    key = [(v, cell_colors(v)[0]) for v in np.linspace(0.0, 1.0, 11)]
    return TokenGrid(list(result.tokens), rows, final, key)
