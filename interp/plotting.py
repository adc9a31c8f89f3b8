"""The house style of every figure: one palette, sizes and helpers shared by the tools.

Each tool draws its own figures (``interp/<tool>/figures.py``) from its result with
these helpers and returns a :class:`matplotlib.figure.Figure`; nothing here knows
about a tool, a report or a file. Figures are built with the object API
(:class:`~matplotlib.figure.Figure`, never ``pyplot``), so drawing touches no global
state and needs no display.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib
from matplotlib.axes import Axes
from matplotlib.colors import Colormap
from matplotlib.figure import Figure

#: Ink, muted ink and grid colours (the report stylesheet's).
INK = "#1d2330"
MUTED = "#7a8496"
GRID = "#e3e6ec"
ACCENT = "#3b5bdb"
#: Categorical colours, in order of use (matplotlib's tab10, colour-blind friendly enough).
PALETTE: tuple[str, ...] = (
    "#3b5bdb", "#e8590c", "#2b8a3e", "#c2255c", "#7048e8", "#0c8599", "#868e96", "#f08c00",
)

_RC = {
    "font.size": 9.5,
    "font.family": "DejaVu Sans",
    "axes.edgecolor": MUTED,
    "axes.labelcolor": INK,
    "axes.titlesize": 10.5,
    "axes.titleweight": "semibold",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": GRID,
    "grid.linewidth": 0.8,
    "xtick.color": MUTED,
    "ytick.color": MUTED,
    "xtick.labelcolor": INK,
    "ytick.labelcolor": INK,
    "legend.frameon": False,
    "savefig.bbox": "tight",
    "savefig.pad_inches": 0.06,
    "figure.dpi": 100,
}


def new_figure(
    width: float = 7.5, height: float = 3.6, *, nrows: int = 1, ncols: int = 1, **kwargs: object
) -> tuple[Figure, Axes | Sequence[Axes]]:
    """A figure in the house style and its axes (one :class:`Axes`, or an array)."""
    with matplotlib.rc_context(_RC):
        fig = Figure(figsize=(width, height), layout="constrained")
        axes = fig.subplots(nrows, ncols, squeeze=True, **kwargs)  # type: ignore[arg-type]
    return fig, axes


def style(fig: Figure) -> Figure:
    """Apply the house style to text drawn after :func:`new_figure` (titles, labels)."""
    for ax in fig.get_axes():
        ax.set_axisbelow(True)
    return fig


def colormap(name: str) -> Colormap:
    """A matplotlib colormap by name (``"viridis"``, ``"RdBu_r"``, ...)."""
    return matplotlib.colormaps[name]


def ci_line(
    ax: Axes,
    x: Sequence[float],
    y: Sequence[float],
    lo: Sequence[float] | None = None,
    hi: Sequence[float] | None = None,
    *,
    label: str | None = None,
    color: str | None = None,
    marker: str = "o",
    dashed: bool = False,
) -> None:
    """A line with markers and, when given, its 95% CI as a shaded band."""
    line = ax.plot(x, y, marker=marker, markersize=3.5, linewidth=1.6, label=label, color=color,
                   linestyle="--" if dashed else "-")[0]
    if lo is not None and hi is not None:
        ax.fill_between(x, lo, hi, color=line.get_color(), alpha=0.18, linewidth=0)
