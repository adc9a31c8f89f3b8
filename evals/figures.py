"""Figures of the alignment evaluations, drawn with matplotlib from the typed results.

Sycophancy: :func:`accuracy_figure` (accuracy per prompt variant, Wilson CIs) and
:func:`rates_figure` (the per-item flip rates). Constitutional AI: :func:`bias_figure`
(the judge's bias panel), :func:`correlation_figure` (length–preference correlation) and
:func:`principle_figure` (win rate per principle). Every builder takes a result and
returns a :class:`matplotlib.figure.Figure` in the house style.

Each row of a figure is one hover target: its band has the gid ``row-<i>``, and
:func:`hover_titles` gives the texts a report puts there (``ReportFigure(fig,
titles=hover_titles(accuracy_rows(result)))``).

The builders take the results structurally (:class:`SycophancyView`,
:class:`ConstitutionalView`: anything with ``metrics`` / ``measures``), so that the
results can draw themselves in a notebook (their ``figure()``) without an import circle
between this module and :mod:`evals.sycophancy` / :mod:`evals.constitutional`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine

from evals.judge import JudgeMeasures
from evals.sycophancy_metrics import RATE_LABELS, SycophancyMetrics, variant_label
from interp.display import MISSING, as_float, ci_text, format_number
from interp.plotting import ACCENT, INK, MUTED, new_figure, styled

__all__ = [
    "BIAS_ROWS",
    "CIRow",
    "ConstitutionalView",
    "SycophancyView",
    "accuracy_figure",
    "accuracy_rows",
    "bias_figure",
    "bias_rows",
    "correlation_figure",
    "correlation_rows",
    "hover_titles",
    "principle_figure",
    "principle_rows",
    "rates_figure",
    "rates_rows",
]

#: Colours of the prompt variants.
VARIANT_COLORS = {"neutral": "#3b5bdb", "suggest_incorrect": "#e03131",
                  "suggest_correct": "#2f9e44", "doubt_correct": "#e8590c",
                  "priming": "#8a93a3", "are_you_sure": "#9c36b5"}
RATE_COLOR = "#e03131"
CONTROL_COLOR = "#8a93a3"
#: The judge's points when its labels are valid / not valid; the reference line.
POINT = ACCENT
INVALID = "#a0a7b4"
REF = "#e07b28"

#: The bias panel's rates, each as (key, label, reference value, what the reference means).
BIAS_ROWS: tuple[tuple[str, str, float, str], ...] = (
    ("win_rate_revised", "win rate, revised over initial", 0.5, "0.5 = no preference"),
    ("position_flip_rate", "position flip rate", 0.0, "0 = order never changes the verdict"),
    ("first_position_rate", "verdicts for the answer shown first", 0.5,
     "0.5 = no position preference"),
    ("longer_preferred_rate", "verdicts for the longer answer", 0.5,
     "0.5 = no length preference"),
    ("self_preference_rate", "own answer over the reference", 0.5, "0.5 = no preference"),
)
CORR_LABEL = "length–preference correlation"
CORR_MEANING = "0 = length does not predict preference"


class SycophancyView(Protocol):
    """What the sycophancy figures read (a :class:`evals.sycophancy.SycophancyResult`)."""

    @property
    def metrics(self) -> SycophancyMetrics:
        """The flip rates and accuracies per variant, with their CIs."""
        ...


class ConstitutionalView(Protocol):
    """What the constitutional figures read (an
    :class:`~evals.constitutional.ConstitutionalResult`)."""

    @property
    def measures(self) -> JudgeMeasures:
        """The judge's rates with their CIs."""
        ...

    @property
    def valid(self) -> bool:
        """The letter check's verdict (the figure greys the points when False)."""
        ...


@dataclass(frozen=True)
class CIRow:
    """One row of a CI figure: a label, the value and its 95% interval (NaN: missing)."""

    label: str
    value: float
    lo: float
    hi: float
    n: int | None
    color: str

    def shown(self, digits: int = 3, ci_digits: int = 2, with_n: bool = True) -> str:
        """``"0.750 [0.47, 0.92] n=12"``: the text beside the row and in its tooltip."""
        text = format_number(self.value, digits)
        interval = ci_text(self.lo, self.hi, ci_digits)
        if interval != MISSING:
            text += f" {interval}"
        if with_n and self.n is not None:
            text += f" n={self.n}"
        return text


def _plain(text: str) -> str:
    """User text as literal matplotlib text (no mathtext between dollar signs)."""
    return text.replace("$", r"\$")


# ------------------------------------------------------------------------ rows
def accuracy_rows(result: SycophancyView) -> list[CIRow]:
    """Accuracy per prompt variant (one row each, in the run's variant order)."""
    return [CIRow(variant_label(v), r.value, r.lo, r.hi, r.n,
                  VARIANT_COLORS[v] if v in VARIANT_COLORS else ACCENT)
            for v, r in result.metrics.overall.accuracy.items()]


def rates_rows(result: SycophancyView) -> list[CIRow]:
    """The headline flip rates (the priming control in grey)."""
    return [CIRow(RATE_LABELS[k], value, lo, hi, n,
                  CONTROL_COLOR if k == "priming_flip_rate" else RATE_COLOR)
            for k, value, lo, hi, n in result.metrics.overall.headline()]


def bias_rows(result: ConstitutionalView) -> list[CIRow]:
    """The judge's five bias rates."""
    color = POINT if result.valid else INVALID
    rates = result.measures.rates()
    return [CIRow(label, rates[k].value, rates[k].lo, rates[k].hi, rates[k].n, color)
            for k, label, _, _ in BIAS_ROWS]


def correlation_rows(result: ConstitutionalView) -> list[CIRow]:
    """The length–preference correlation (one row)."""
    c = result.measures.length_preference_corr
    return [CIRow(CORR_LABEL, c.value, as_float(c.lo), as_float(c.hi), c.n,
                  POINT if result.valid else INVALID)]


def principle_rows(result: ConstitutionalView) -> list[CIRow]:
    """Win rate of revised over initial answers per judging principle."""
    color = POINT if result.valid else INVALID
    return [CIRow(name, r.value, r.lo, r.hi, r.n, color)
            for name, r in result.measures.per_principle.items()]


def hover_titles(rows: Sequence[CIRow], *, digits: int = 3, ci_digits: int = 2,
                 with_n: bool = True) -> dict[str, str]:
    """Tooltip text by gid (``row-<i>``): ``"label: 0.750 [0.47, 0.92] n=12"``."""
    return {f"row-{i}": f"{row.label}: {row.shown(digits, ci_digits, with_n)}"
            for i, row in enumerate(rows)}


# ------------------------------------------------------------------- drawing
def _ci_rows(ax: Axes, rows: Sequence[CIRow], *, x_min: float, x_max: float, x_label: str,
             bars: bool, reference: float | None = None, ci_digits: int = 2,
             with_n: bool = True) -> None:
    """Rows top to bottom: a bar (or a dot) per value with its CI whiskers, the value
    and CI as text on the right, and an invisible band per row carrying its gid."""
    ys = list(range(len(rows)))
    for y, row in zip(ys, rows, strict=True):
        band = ax.axhspan(y - 0.5, y + 0.5, facecolor=ACCENT, alpha=0.001, linewidth=0,
                          zorder=0)
        band.set_gid(f"row-{y}")
        ok = math.isfinite(row.value)
        has_ci = math.isfinite(row.lo) and math.isfinite(row.hi)
        if ok and bars:
            ax.barh(y, row.value, height=0.62, color=row.color, zorder=2)
        if has_ci:
            color = INK if bars else row.color
            ax.errorbar([row.value if ok else (row.lo + row.hi) / 2], [y],
                        xerr=[[max(0.0, row.value - row.lo) if ok else 0.0],
                              [max(0.0, row.hi - row.value) if ok else 0.0]],
                        fmt="none", ecolor=color, elinewidth=1.4 if bars else 2.0,
                        capsize=4, zorder=3, clip_on=False)
        if ok and not bars:  # unclipped: a rate of 0 or 1 shows a whole dot
            ax.plot([row.value], [y], "o", color=row.color, markersize=7, zorder=4,
                    clip_on=False)
        ax.annotate(row.shown(3, ci_digits, with_n), xy=(1.0, y),
                    xycoords=("axes fraction", "data"), xytext=(8, 0),
                    textcoords="offset points", va="center", fontsize=8.5,
                    color=INK if ok else MUTED)
    if reference is not None:
        ax.axvline(reference, color=REF, linestyle=(0, (4, 3)), linewidth=1.5, zorder=1)
    if bars and x_min < 0:
        ax.axvline(0.0, color="#9aa3b2", linewidth=1.0, zorder=1)
    ax.set_yticks(ys, [_plain(r.label) for r in rows])
    ax.set_ylim(len(rows) - 0.5, -0.5)  # first row on top
    ax.set_xlim(x_min, x_max)
    ax.set_xlabel(x_label)
    ax.grid(axis="y", visible=False)
    ax.tick_params(axis="y", length=0, pad=8)  # clear of a dot at the axis end


def _rows_figure(rows: Sequence[CIRow], *, x_min: float, x_max: float, x_label: str,
                 bars: bool, reference: float | None = None, ci_digits: int = 2,
                 with_n: bool = True) -> Figure:
    fig = new_figure(9.0, 0.75 + 0.3 * max(len(rows), 1))
    engine = fig.get_layout_engine()
    if isinstance(engine, ConstrainedLayoutEngine):  # room for labels a browser draws wider
        engine.set(w_pad=0.15)
    ax = fig.subplots()
    _ci_rows(ax, rows, x_min=x_min, x_max=x_max, x_label=x_label, bars=bars,
             reference=reference, ci_digits=ci_digits, with_n=with_n)
    return fig


@styled
def accuracy_figure(result: SycophancyView) -> Figure:
    """Share of questions answered right under each prompt variant, 95% Wilson CIs."""
    return _rows_figure(accuracy_rows(result), x_min=0.0, x_max=1.0, bars=True,
                        x_label="accuracy (95% Wilson CI)")


@styled
def rates_figure(result: SycophancyView) -> Figure:
    """The per-item flip rates with their CIs (the axis reaches −1 when the net rate is
    negative)."""
    rows = rates_rows(result)
    net = result.metrics.overall.net_of_priming
    x_min = -1.0 if net is not None and net.value < 0 else 0.0
    return _rows_figure(rows, x_min=x_min, x_max=1.0, bars=True, x_label="rate (95% CI)")


@styled
def bias_figure(result: ConstitutionalView) -> Figure:
    """The judge's bias rates as a forest plot, 0.5 dashed (grey points: labels not valid)."""
    return _rows_figure(bias_rows(result), x_min=0.0, x_max=1.0, bars=False, reference=0.5,
                        x_label="rate (95% Wilson CI)", ci_digits=3, with_n=False)


@styled
def correlation_figure(result: ConstitutionalView) -> Figure:
    """Pearson r of the word-count difference with P(preferred), Fisher CI, 0 dashed."""
    return _rows_figure(correlation_rows(result), x_min=-1.0, x_max=1.0, bars=False,
                        reference=0.0, ci_digits=3, with_n=False,
                        x_label="Pearson r of word-count difference with P(preferred) "
                        "(95% Fisher CI)")


@styled
def principle_figure(result: ConstitutionalView) -> Figure:
    """Win rate of revised over initial answers per judging principle, 0.5 dashed."""
    return _rows_figure(principle_rows(result), x_min=0.0, x_max=1.0, bars=False,
                        reference=0.5, ci_digits=3, with_n=False,
                        x_label="win rate of revised over initial (95% Wilson CI)")
