"""Figures of a probe run, drawn with matplotlib in the house style.

* :func:`accuracy_figure`: held-out accuracy by layer (± seed std band) with the best
  control, the control task, the majority class and train accuracy; for a single
  layer, one bar per measure instead.
* :func:`ablation_figure`: one tested direction's effect (KL, and the logit-gap
  separation removed when the dataset names target tokens) as a marker over the
  histogram of its variance-matched random directions.

Hover targets carry gids (``pt-test-3``, ``bar-2``, ``kl-bar-0``, ``kl-marker``, ...);
:func:`accuracy_tooltips` and :func:`ablation_tooltips` give their texts, for
``reports.figures.ReportFigure(fig, titles=...)``.

The builders read results through the small protocols below (a
:class:`~interp.probing.results.ProbeResult` and an
:class:`~interp.probing.results.AblationResult` satisfy them), so that the results can
draw themselves in a notebook without this module importing them back.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from interp.display import format_number
from interp.plotting import ACCENT, MUTED, ci_line, hover_points, new_figure, styled

TEST_COLOR = ACCENT
TRAIN_COLOR = "#b9c4de"
CONTROL_COLOR = "#e07b28"
CONTROL_TASK_COLOR = "#9c4fb0"
MAJORITY_COLOR = "#8a93a3"
BOW_COLOR = "#d9a441"
SHUFFLED_COLOR = "#e8a06a"
RANDOM_COLOR = "#c77c4a"
BAR_COLOR = "#8da4c8"
MARKER_COLOR = "#c92a2a"

#: Names of the directions an ablation tests, as the figures and the report call them.
DIRECTION_NAMES = {"probe": "probe direction", "mean_difference": "mean-difference direction"}


# ---------------------------------------------------------------------- protocols
class LayerSweep(Protocol):
    """What :func:`accuracy_figure` reads (a ``ProbeResult``)."""

    @property
    def layer_numbers(self) -> list[int]:
        """The probed layers, in order."""
        ...

    def means(self, metric: str) -> list[float]:
        """``metric``'s mean over seeds, per layer."""
        ...

    def stds(self, metric: str) -> list[float]:
        """``metric``'s standard deviation over seeds, per layer."""
        ...

    def control_accuracy(self) -> list[float]:
        """Per layer, the best of the controls' mean accuracies."""
        ...

    def best_layer(self) -> int:
        """The layer with the highest mean held-out accuracy."""
        ...


class EffectLike(Protocol):
    """One ablation's effect (an :class:`~interp.probing.results.AblationEffect`)."""

    @property
    def kl(self) -> float:
        """Mean KL(clean ‖ ablated) of the next-token distribution (nats)."""
        ...

    @property
    def logit_diff_change(self) -> float | None:
        """Change of the answer's logit gap (None when not measured)."""
        ...


class DirectionLike(Protocol):
    """One tested direction against its random directions (a
    :class:`~interp.probing.results.DirectionReport`)."""

    @property
    def effect(self) -> EffectLike:
        """The direction's own effect."""
        ...

    @property
    def random(self) -> Sequence[EffectLike]:
        """The variance-matched random directions' effects."""
        ...

    @property
    def kl_percentile(self) -> float:
        """Percentile of the direction's KL among the random directions' (0–100)."""
        ...

    @property
    def kl_z(self) -> float:
        """z-score of the direction's KL against the random directions' (∞ when they do not
        vary)."""
        ...

    @property
    def logit_diff_percentile(self) -> float | None:
        """Percentile of its logit-gap change among the random directions' (None when not
        measured)."""
        ...

    @property
    def logit_diff_z(self) -> float | None:
        """z-score of its logit-gap change (None when not measured)."""
        ...


class AblationLike(Protocol):
    """What :func:`ablation_figure` reads (an ``AblationResult``)."""

    @property
    def layer(self) -> int:
        """The ablated layer."""
        ...

    @property
    def directions(self) -> Mapping[str, DirectionLike]:
        """Each tested direction by name."""
        ...


# ------------------------------------------------------------------------ numbers
num = format_number  # a label-friendly number, ``—`` when missing (the reports' rule)


def z_text(x: float | None) -> str:
    """A z-score with one decimal (``∞`` when the random directions do not vary)."""
    if x is None or math.isnan(x):
        return "—"
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    return f"{x:.1f}".replace("-", "−")


def pct_text(x: float | None) -> str:
    """A percentile as a whole number (``"97"``), ``"—"`` when missing."""
    return "—" if x is None or math.isnan(x) else f"{x:.0f}"


def _finite(values: Sequence[float | None]) -> list[float]:
    return [float(v) for v in values if v is not None and math.isfinite(v)]


# ----------------------------------------------------------------- accuracy figure
#: (key, legend label, colour, dashed) of the curves of a layer sweep, drawn in order.
CURVES = (
    ("test", "held-out accuracy (± seed std)", TEST_COLOR, False),
    ("control", "best control", CONTROL_COLOR, False),
    ("control-task", "control task", CONTROL_TASK_COLOR, True),
    ("majority", "majority class", MAJORITY_COLOR, False),
    ("train", "train accuracy", TRAIN_COLOR, False),
)
#: (label, metric, colour) of the bars of a single layer.
BARS = (
    ("held-out accuracy", "test_accuracy", TEST_COLOR),
    ("train accuracy", "train_accuracy", TRAIN_COLOR),
    ("shuffled labels", "shuffled_accuracy", SHUFFLED_COLOR),
    ("random weights", "random_weights_accuracy", RANDOM_COLOR),
    ("bag of words", "bow_accuracy", BOW_COLOR),
    ("control task", "control_task_accuracy", CONTROL_TASK_COLOR),
    ("majority class", "majority_rate", MAJORITY_COLOR),
)


def _curves(result: LayerSweep) -> dict[str, list[float]]:
    return {
        "test": result.means("test_accuracy"),
        "control": result.control_accuracy(),
        "control-task": result.means("control_task_accuracy"),
        "majority": result.means("majority_rate"),
        "train": result.means("train_accuracy"),
    }


def _band(result: LayerSweep) -> tuple[list[float], list[float]]:
    test, std = result.means("test_accuracy"), result.stds("test_accuracy")
    lo = [m - s if math.isfinite(s) else m for m, s in zip(test, std, strict=True)]
    hi = [m + s if math.isfinite(s) else m for m, s in zip(test, std, strict=True)]
    return lo, hi


def _bar_text(result: LayerSweep, metric: str) -> str:
    m, s = result.means(metric)[0], result.stds(metric)[0]
    text = num(m)
    if math.isfinite(m) and math.isfinite(s) and s > 0:
        text += f" ± {num(s)}"
    return text


@styled
def accuracy_figure(result: LayerSweep) -> Figure:
    """Held-out accuracy by layer with its baselines (a bar per measure for one layer).

    Gids: ``line-KEY`` for each curve (KEY in :data:`CURVES`), ``band-test``,
    ``pt-KEY-I`` for the point of curve KEY at the I-th layer; for one layer
    ``bar-I`` for the I-th bar of :data:`BARS`.
    """
    layers = result.layer_numbers
    if len(layers) == 1:
        return _bars_figure(result)
    fig = new_figure(9.0, 3.8)
    ax = fig.subplots()
    curves, (lo, hi) = _curves(result), _band(result)
    for key, label, color, dashed in CURVES:
        ys = curves[key]
        ci_line(ax, layers, ys, lo if key == "test" else None, hi if key == "test" else None,
                label=label, color=color, marker="None", dashed=dashed)
        ax.lines[-1].set_gid(f"line-{key}")
        if key == "test":
            ax.collections[-1].set_gid("band-test")
        hover_points(ax, layers, ys, lambda i, key=key: f"pt-{key}-{i}", color=color)
    best = result.best_layer()
    ax.axvline(best, color=MUTED, linewidth=0.8, linestyle=":", zorder=0, gid="best-layer")
    ax.set_ylim(0.0, 1.0)
    ax.set_xlim(min(layers) - 0.5, max(layers) + 0.5)
    if max(layers) - min(layers) <= 30:
        ax.set_xticks(layers if len(layers) <= 16 else layers[::2])
    ax.set_xlabel("layer")
    ax.set_ylabel("accuracy")
    ax.set_title("Held-out accuracy by layer", loc="left")
    fig.legend(loc="outside upper center", ncols=len(CURVES), fontsize=8.5)
    return fig


def _bars_figure(result: LayerSweep) -> Figure:
    fig = new_figure(7.5, 3.0)
    ax = fig.subplots()
    ax.set_axisbelow(True)
    ys = list(range(len(BARS)))[::-1]  # first bar on top
    for i, ((_, metric, color), y) in enumerate(zip(BARS, ys, strict=True)):
        m, s = result.means(metric)[0], result.stds(metric)[0]
        finite = math.isfinite(m)
        err = s if finite and math.isfinite(s) and s > 0 else None
        bar = ax.barh(y, m if finite else 0.0, height=0.7, color=color, xerr=err,
                      error_kw={"elinewidth": 1.2, "capsize": 3, "ecolor": "#1d2330"})
        bar.patches[0].set_gid(f"bar-{i}")
        end = (m + (err or 0.0)) if finite else 0.0
        ax.text(min(end, 1.0) + 0.015, y, _bar_text(result, metric), va="center",
                fontsize=8.5, family="DejaVu Sans Mono", color="#1d2330" if finite else MUTED)
    ax.set_yticks(ys, [label for label, _, _ in BARS])
    ax.set_xlim(0.0, 1.3)
    ax.set_xticks([0.0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ax.grid(axis="y", visible=False)
    ax.set_xlabel("accuracy")
    ax.set_title(f"Accuracy at layer {result.layer_numbers[0]}", loc="left")
    return fig


def accuracy_tooltips(result: LayerSweep) -> dict[str, str]:
    """Hover texts by gid for :func:`accuracy_figure`."""
    layers = result.layer_numbers
    if len(layers) == 1:
        return {f"bar-{i}": f"{label}: {_bar_text(result, metric)}"
                for i, (label, metric, _) in enumerate(BARS)}
    out: dict[str, str] = {}
    curves, (lo, hi) = _curves(result), _band(result)
    for key, label, _, _ in CURVES:
        for i, (x, y) in enumerate(zip(layers, curves[key], strict=True)):
            if math.isfinite(y):
                tip = f"{label}\nlayer {x}: {num(y)}"
                if key == "test":
                    tip += f"  [{num(lo[i])}, {num(hi[i])}]"
                out[f"pt-{key}-{i}"] = tip
    return out


# ----------------------------------------------------------------- ablation figure
def histogram_bins(n: int) -> int:
    """Histogram bins for n values: about √n + 2, between 4 and 12."""
    return max(4, min(12, math.ceil(math.sqrt(max(n, 1))) + 2))


def _histogram(values: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """(edges, counts) over the finite values; a constant sample gets a small span."""
    if not values:
        return np.zeros(0), np.zeros(0, dtype=np.int64)
    lo, hi = min(values), max(values)
    if hi <= lo:
        half = abs(lo) * 0.05 or 0.5
        lo, hi = lo - half, hi + half
    counts, edges = np.histogram(values, bins=histogram_bins(len(values)), range=(lo, hi))
    return edges, counts


def _panels(d: DirectionLike) -> list[tuple[str, float, list[float]]]:
    """(key, tested value, random values) of the panels of one direction."""
    out = [("kl", float(d.effect.kl), _finite([r.kl for r in d.random]))]
    ld = d.effect.logit_diff_change
    lds = _finite([r.logit_diff_change for r in d.random])
    if ld is not None and math.isfinite(ld) and lds:
        out.append(("gap", float(ld), lds))
    return out


def panel_keys(ablation: AblationLike, name: str) -> list[str]:
    """The panels :func:`ablation_figure` draws for ``name``: "kl", and "gap" when the
    logit-gap change was measured."""
    return [key for key, _, _ in _panels(ablation.directions[name])]


def marker_label(ablation: AblationLike, name: str, key: str) -> str:
    """The tested direction's label on panel ``key`` ("kl" or "gap")."""
    d = ablation.directions[name]
    label = DIRECTION_NAMES.get(name, name)
    if key == "kl":
        return (f"{label}: {num(d.effect.kl)} (percentile {pct_text(d.kl_percentile)}, "
                f"z {z_text(d.kl_z)})")
    return (f"{label}: {num(d.effect.logit_diff_change)} (percentile "
            f"{pct_text(d.logit_diff_percentile)}, z {z_text(d.logit_diff_z)})")


PANEL_TEXT = {
    "kl": ("KL of the next-token distribution", "KL(clean ‖ ablated), nats"),
    "gap": ("Logit-gap separation removed", "drop in logit-gap separation"),
}


@styled
def ablation_figure(ablation: AblationLike, name: str) -> Figure:
    """Direction ``name``'s effect (red line) over its random directions' histogram.

    One panel for the KL, a second for the logit-gap change when the dataset names
    target tokens. Gids per panel KEY ("kl", "gap"): ``KEY-hist`` (the axes),
    ``KEY-bar-I`` (bin I), ``KEY-marker`` (the line), ``KEY-marker-label``.
    """
    panels = _panels(ablation.directions[name])
    fig = new_figure(4.6 * len(panels) + 0.4, 3.3)
    axes: list[Axes] = list(np.atleast_1d(fig.subplots(1, len(panels))))
    for ax, (key, value, values) in zip(axes, panels, strict=True):
        ax.set_gid(f"{key}-hist")
        ax.set_axisbelow(True)
        edges, counts = _histogram(values)
        for i, c in enumerate(counts):
            bar = ax.bar(edges[i], int(c), width=edges[i + 1] - edges[i], align="edge",
                         color=BAR_COLOR, edgecolor="white", linewidth=0.8)
            bar.patches[0].set_gid(f"{key}-bar-{i}")
        lo, hi = (edges[0], edges[-1]) if len(edges) else (value - 0.5, value + 0.5)
        lo, hi = min(lo, value), max(hi, value)
        pad = (hi - lo) * 0.04
        ax.set_xlim(lo - pad, hi + pad)
        ax.set_ylim(0, max(1, int(max(counts, default=0))) * 1.15)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        if not values:
            ax.text(0.5, 0.5, "no data", transform=ax.transAxes, ha="center", color=MUTED)
        ax.axvline(value, color=MARKER_COLOR, linewidth=2.0, gid=f"{key}-marker")
        ax.set_title(PANEL_TEXT[key][0], loc="left", pad=20)
        ax.text(0.0, 1.02, marker_label(ablation, name, key), transform=ax.transAxes,
                color=MARKER_COLOR, fontsize=8.5, fontweight="bold", gid=f"{key}-marker-label")
        ax.set_xlabel(PANEL_TEXT[key][1])
        ax.set_ylabel("random directions")
    return fig


def ablation_tooltips(ablation: AblationLike, name: str) -> dict[str, str]:
    """Hover texts by gid for :func:`ablation_figure`."""
    out: dict[str, str] = {}
    for key, _, values in _panels(ablation.directions[name]):
        edges, counts = _histogram(values)
        for i, c in enumerate(counts):
            out[f"{key}-bar-{i}"] = f"{num(edges[i])} to {num(edges[i + 1])}: {int(c)}"
        out[f"{key}-marker"] = marker_label(ablation, name, key)
    return out


__all__ = [
    "DIRECTION_NAMES", "ablation_figure", "ablation_tooltips", "accuracy_figure",
    "accuracy_tooltips", "histogram_bins", "marker_label", "num", "panel_keys",
]
