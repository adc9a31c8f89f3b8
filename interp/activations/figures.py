"""The figure of a capture (``interp capture``): the residual-stream norm by layer.

:func:`norm_figure` draws the mean L2 norm of the captured rows at each layer with
its 95% CI (and, for ``positions="all"``, the first token apart from the others);
every point has a gid and :func:`norm_titles` its hover text. It reads the result
through :class:`NormSource`, so this module imports no result module.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from interp.plotting import PALETTE, ci_line, hover_points, new_figure, styled

XLABEL = "layer (resid_post)"


class HookRow(Protocol):
    """One hook point's norm summary, as :func:`norm_figure` reads it (a
    :class:`~interp.activations.capture.HookNorms`)."""

    @property
    def layer(self) -> int | None:
        """The block the hook point belongs to (None: not in a block, e.g. ``hook_embed``)."""
        ...

    @property
    def norm_mean(self) -> float:
        """Mean L2 norm of the rows."""
        ...

    @property
    def norm_ci95(self) -> list[float]:
        """95% CI of that mean, ``[lo, hi]``."""
        ...

    @property
    def first_norm_mean(self) -> float | None:
        """Mean norm of the first token alone (None unless every position was captured)."""
        ...

    @property
    def rest_norm_mean(self) -> float | None:
        """Mean norm of the tokens after the first (None unless every position was captured)."""
        ...


class NormSource(Protocol):
    """A capture result (:class:`~interp.activations.capture.CaptureResult`)."""

    def resid_norms(self) -> Sequence[HookRow]:
        """The residual-stream hook points, one per layer, in capture order."""
        ...


Curve = tuple[str, str, list[float], list[float] | None, list[float] | None]


def _curves(result: NormSource) -> tuple[list[int], list[Curve]]:
    rows = result.resid_norms()
    x = [int(h.layer or 0) for h in rows]
    curves: list[Curve] = [("mean", "mean ‖h‖ (captured positions)",
                            [h.norm_mean for h in rows], [h.norm_ci95[0] for h in rows],
                            [h.norm_ci95[1] for h in rows])]
    firsts = [h.first_norm_mean for h in rows]
    rests = [h.rest_norm_mean for h in rows]
    if rows and all(v is not None for v in firsts):
        curves.append(("first", "mean ‖h‖, first token", [float(v or 0) for v in firsts],
                       None, None))
        curves.append(("rest", "mean ‖h‖, other tokens",
                       [math.nan if v is None else float(v) for v in rests], None, None))
    return x, curves


@styled
def norm_figure(result: NormSource) -> Figure:
    """Mean L2 norm of the captured activations by layer; band: 95% CI of the mean."""
    x, curves = _curves(result)
    fig = new_figure(9.6, 3.4)
    ax = fig.subplots()
    for (key, label, y, lo, hi), color in zip(curves, PALETTE, strict=False):
        ci_line(ax, x, y, lo, hi, label=label, color=color, marker="")
        hover_points(ax, x, y, lambda i, key=key: f"{key}-{i}", color=color)
    ax.set_xlabel(XLABEL)
    ax.set_ylabel("L2 norm")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(fontsize=8)
    return fig


def norm_titles(result: NormSource) -> dict[str, str]:
    """Hover text by gid for :func:`norm_figure`."""
    x, curves = _curves(result)
    out = {}
    for key, label, y, lo, hi in curves:
        for i, (xv, yv) in enumerate(zip(x, y, strict=True)):
            if math.isfinite(yv):
                tip = f"{label}\n{XLABEL} {xv}: {yv:.3f}"
                if lo is not None and hi is not None:
                    tip += f"  [{lo[i]:.3f}, {hi[i]:.3f}]"
                out[f"{key}-{i}"] = tip
    return out
