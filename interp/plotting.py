"""The house style of every figure: one palette, sizes and helpers shared by the tools.

Each tool draws its own figures (``interp/<tool>/figures.py``) from its result with
these helpers and returns a :class:`matplotlib.figure.Figure`; nothing here knows
about a tool or a report. A builder looks like::

    @styled
    def accuracy_figure(result: ProbeResult) -> Figure:
        fig = new_figure(7.5, 3.4)
        ax = fig.subplots()
        ci_line(ax, result.layers, result.accuracy, result.lo, result.hi, label="probe")
        return fig

Figures are built with the object API
(:class:`~matplotlib.figure.Figure`, never ``pyplot``), so drawing touches no global
state and needs no display.
"""

from __future__ import annotations

import functools
import io
import math
from collections.abc import Callable, Sequence
from typing import Any, ParamSpec, TypeVar

import matplotlib
from matplotlib.axes import Axes
from matplotlib.colors import Colormap
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.typing import RcKeyType

P = ParamSpec("P")
R = TypeVar("R")

#: Ink, muted ink and grid colours (the report stylesheet's).
INK = "#1d2330"
MUTED = "#7a8496"
GRID = "#e3e6ec"
ACCENT = "#3b5bdb"
#: Categorical colours, in order of use (matplotlib's tab10, colour-blind friendly enough).
PALETTE: tuple[str, ...] = (
    "#3b5bdb", "#e8590c", "#2b8a3e", "#c2255c", "#7048e8", "#0c8599", "#868e96", "#f08c00",
)

_RC: dict[RcKeyType, Any] = {
    "font.size": 9.5,
    "font.family": "DejaVu Sans",
    "axes.edgecolor": MUTED,
    "axes.labelcolor": INK,
    "axes.titlesize": 10.5,
    "axes.titleweight": "bold",
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


def styled(builder: Callable[P, R]) -> Callable[P, R]:
    """Decorate a figure builder: everything it draws uses the house style.

    Matplotlib reads its settings when an artist is made, so the whole builder
    runs inside the style's ``rc_context``, not just the figure's creation.
    """

    @functools.wraps(builder)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with matplotlib.rc_context(_RC):
            return builder(*args, **kwargs)

    return wrapper


class NotebookFigure(Figure):
    """A matplotlib Figure that shows itself in a notebook.

    interp never imports pyplot, so IPython's inline backend has not registered its
    formatters when a tool returns a figure; a bare ``Figure`` would show as
    ``<Figure size …>``. This one answers IPython's ``_repr_svg_`` with the same
    byte-stable SVG the reports embed.
    """

    def _repr_svg_(self) -> str:
        return svg_text(self)


def new_figure(width: float = 7.5, height: float = 3.6) -> Figure:
    """An empty figure with constrained layout (call inside a :func:`styled` builder);
    in a notebook it draws itself (:class:`NotebookFigure`)."""
    # browsers and the PNG renderer draw text a little wider than matplotlib measures it:
    # pad the constrained layout so long axis labels are never clipped
    fig = NotebookFigure(figsize=(width, height), layout="constrained")
    engine = fig.get_layout_engine()
    assert isinstance(engine, ConstrainedLayoutEngine)
    engine.set(w_pad=0.1, h_pad=0.06)
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


# ------------------------------------------------------------------ figure to bytes

_SVG_RC: dict[RcKeyType, Any] = {
    "svg.fonttype": "none",  # text stays <text>: searchable, copyable
    "svg.hashsalt": "interp",  # fixed ids: a rerun gives the same bytes
    "svg.image_inline": True,
}


def _freeze_layout(fig: Figure) -> None:
    """Run the layout engine once and keep its result.

    Constrained layout moves axes a little on every draw; frozen, the inline SVG,
    the saved SVG and the PNG all show the same geometry, and a rerun gives the
    same bytes.
    """
    if fig.get_layout_engine() is not None:
        fig.draw_without_rendering()
        fig.set_layout_engine("none")


def svg_text(fig: Figure) -> str:
    """The figure as a standalone, byte-stable SVG document."""
    _freeze_layout(fig)
    buf = io.StringIO()
    with matplotlib.rc_context(_SVG_RC):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    return buf.getvalue()


def png_bytes(fig: Figure, dpi: int = 144) -> bytes:
    """The figure as a PNG (no software or date metadata)."""
    _freeze_layout(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    return buf.getvalue()




def hover_points(
    ax: Axes,
    x: Sequence[float],
    y: Sequence[float],
    gid: Callable[[int], str],
    *,
    color: str | None = None,
) -> list[int]:
    """One marker per finite point, each its own artist with gid ``gid(i)`` (a hover target).

    Returns the indices that got a marker (NaN points get none), so the caller can give
    exactly those gids a tooltip.
    """
    drawn = []
    for i, (xv, yv) in enumerate(zip(x, y, strict=True)):
        if math.isfinite(yv):
            point = ax.plot([xv], [yv], marker="o", markersize=3.5, color=color,
                            linestyle="none")[0]
            point.set_gid(gid(i))
            drawn.append(i)
    return drawn
