"""Figures of the causal tools: held-out IIA by layer, DAS beside its controls."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from interp.plotting import INK, MUTED, PALETTE, ci_line, new_figure, styled

if TYPE_CHECKING:
    from interp.causal.results import DASResult

#: (field, label, colour, dashed, marker) of each line, in drawing order (the last on top)
LINES = (
    ("full", "full interchange (ceiling)", INK, True, "s"),
    ("none", "no interchange (floor)", MUTED, False, "s"),
    ("probe_accuracy", "probe accuracy (readable)", PALETTE[5], True, "o"),
    ("control", "control task (random labels)", PALETTE[2], True, "o"),
    ("mean_difference", "class-mean difference", PALETTE[4], False, "o"),
    ("probe_direction", "probe direction", PALETTE[3], False, "o"),
    ("random", "random direction", PALETTE[1], False, "x"),
    ("das", "DAS", PALETTE[0], False, "o"),
)


def _nan(x: float | None) -> float:
    return math.nan if x is None else float(x)


@styled
def iia_by_layer(result: DASResult) -> Figure:
    """Held-out IIA by layer: DAS, the random direction, the control task, and the full
    and empty interchanges, each with its 95% Wilson band; chance (0.5) dotted."""
    fig = new_figure(7.2, 3.8)
    ax = fig.subplots()
    xs = [r.layer for r in result.layers]
    for name, label, colour, dashed, marker in LINES:
        rates = [getattr(r, name) for r in result.layers]
        if any(x is None for x in rates):
            continue
        ci_line(ax, xs, [x.iia for x in rates], [_nan(x.iia_ci95[0]) for x in rates],
                [_nan(x.iia_ci95[1]) for x in rates], label=label, color=colour,
                dashed=dashed, marker=marker)
    ax.axhline(0.5, color=MUTED, linewidth=0.8, linestyle=":")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("layer (residual stream after the block)")
    ax.set_ylabel("held-out IIA (or accuracy)")
    k = result.config.dim
    ax.set_title(f"Interchange-intervention accuracy at {result.position}, "
                 f"{k} dimension{'s' * (k > 1)}", loc="left")
    fig.legend(loc="outside lower center", ncols=3, fontsize=7.5, frameon=False)
    return fig
