"""The pruned attribution graph as a static figure, and the check against the real model."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure

from interp.display import visible_token
from interp.plotting import ACCENT, INK, MUTED, new_figure, styled

if TYPE_CHECKING:
    from saes.graphs.results import AttributionGraph

KIND_COLOURS = {"feature": "#4C72B0", "error": "#C44E52", "bias": "#8C8C8C",
                "constant": "#B0B0B0",
                "embedding": "#55A868", "target": "#DD8452"}
POSITIVE, NEGATIVE = "#2F6FB0", "#C0392B"
#: The static figure draws at most this many edges, the strongest (a file, not a viewer).
FIGURE_EDGES = 1500


def node_xy(graph: AttributionGraph) -> dict[int, tuple[float, float]]:
    """Where each kept node sits: x the position (features of one cell spread across it),
    y the layer (embeddings at −1, targets above the last layer, biases at their layer's
    left edge)."""
    cells: dict[tuple[int, int], list[int]] = {}
    for n in graph.nodes:
        cells.setdefault((n["layer"], n["position"]), []).append(n["id"])
    xy = {}
    for (layer, pos), ids in cells.items():
        k = len(ids)
        for j, i in enumerate(sorted(ids)):
            dx = 0.0 if k == 1 else (j / (k - 1) - 0.5) * 0.7
            xy[i] = (float(pos if pos >= 0 else -1) + dx, float(layer))
    return xy


@styled
def graph_figure(graph: AttributionGraph) -> Figure:
    """The pruned graph: nodes by layer × position (size: influence), edges by weight
    (blue: positive, red: negative)."""
    n_pos = len(graph.tokens)
    n_layers = max([n["layer"] for n in graph.nodes if n["kind"] == "target"] or [1])
    fig = new_figure(max(7.0, 0.55 * n_pos + 2), max(4.0, 0.18 * n_layers + 2.5))
    ax = fig.subplots()
    xy = node_xy(graph)
    drawn = sorted(graph.edges, key=lambda e: -abs(e["weight"]))[:FIGURE_EDGES]
    weights = np.array([abs(e["weight"]) for e in drawn]) if drawn else np.zeros(0)
    top = float(weights.max()) if weights.size else 1.0
    segs, colours, widths = [], [], []
    for e in drawn:
        if e["source"] in xy and e["target"] in xy:
            segs.append([xy[e["source"]], xy[e["target"]]])
            colours.append(POSITIVE if e["weight"] > 0 else NEGATIVE)
            widths.append(0.2 + 2.5 * abs(e["weight"]) / top)
    if segs:
        ax.add_collection(LineCollection(segs, colors=colours, linewidths=widths, alpha=0.35,
                                         zorder=1))
    infl = np.array([n["influence"] for n in graph.nodes])
    big = float(infl.max()) if infl.size and infl.max() > 0 else 1.0
    for kind, colour in KIND_COLOURS.items():
        pts = [(xy[n["id"]], n["influence"]) for n in graph.nodes if n["kind"] == kind]
        if not pts:
            continue
        xs, ys = zip(*[p for p, _ in pts], strict=True)
        sizes = [12 + 80 * (v / big) ** 0.5 for _, v in pts] if kind != "target" else 70
        ax.scatter(xs, ys, s=sizes, c=colour, label=kind, zorder=2, edgecolors="white",
                   linewidths=0.4)
    ax.set_xticks(range(n_pos))
    ax.set_xticklabels([visible_token(t) for t in graph.tokens], rotation=60,
                       fontsize=8, ha="right")
    ax.set_ylabel("layer")
    ax.set_xlim(-1.5, n_pos - 0.3)
    ax.set_ylim(-1.8, n_layers + 0.8)
    ax.legend(loc="upper left", fontsize=7, ncol=5, bbox_to_anchor=(0, 1.12))
    target = graph.target if len(graph.target) <= 60 else graph.target[:57] + "…"
    shown = (f"{len(drawn)} strongest of {graph.n_edges_kept:,} edges"
             if len(drawn) < graph.n_edges_kept else f"{len(drawn)} edges")
    ax.set_title(f"{target} — {len(graph.nodes)} nodes, {shown}",
                 fontsize=9, color=INK, loc="left", pad=22)
    return fig


@styled
def check_figure(graph: AttributionGraph) -> Figure:
    """Predicted against measured change of the target for the checked features: the real
    model, the real model with attention patterns and norm scales frozen, and the frozen
    replacement model."""
    fig = new_figure(11.0, 3.6)
    axes = fig.subplots(1, 3)
    pred = np.array([c.predicted for c in graph.checks])
    for ax, key, title in ((axes[0], "real", "real model"),
                           (axes[1], "real_frozen", "real, attention and norms frozen"),
                           (axes[2], "replacement", "frozen replacement model")):
        meas = np.array([getattr(c, key) for c in graph.checks])
        ax.scatter(pred, meas, s=14, color=ACCENT)
        if pred.size:
            lim = float(np.nanmax(np.abs(np.concatenate([pred, meas])))) * 1.1 or 1.0
            ax.plot([-lim, lim], [-lim, lim], color=MUTED, lw=0.8, ls=":")
        ax.axhline(0, color=MUTED, lw=0.5)
        ax.axvline(0, color=MUTED, lw=0.5)
        rho = graph.agreement.get(f"spearman_{key}")
        ax.set_title(f"{title}: Spearman {rho:.2f}" if rho is not None else title, fontsize=9)
        ax.set_xlabel("graph's prediction (feature removed)")
        ax.set_ylabel("measured change")
    return fig




@styled
def task_figure(result) -> Figure:  # noqa: ANN001 - GraphTaskResult (no import cycle)
    """Per prompt: Spearman between the graph's predictions and the real model's (and the
    frozen replacement model's) measured effects."""
    fig = new_figure(8.0, 3.4)
    ax = fig.subplots()
    x = np.arange(len(result.prompts))
    for key, colour, label in (("spearman_real", ACCENT, "real model"),
                               ("spearman_real_frozen", INK, "real, attention and norms frozen"),
                               ("spearman_replacement", MUTED, "frozen replacement")):
        ax.plot(x, [p.get(key) if p.get(key) is not None else np.nan for p in result.prompts],
                "o", color=colour, ms=4, label=label)
    ax.axhline(0.8, color=INK, lw=0.8, ls=":", label="goal 0.8")
    ax.set_xlabel("prompt")
    ax.set_ylabel("Spearman (predicted vs measured)")
    ax.set_ylim(-1.05, 1.05)
    ax.legend(fontsize=8, loc="lower left")
    return fig


__all__ = ["KIND_COLOURS", "check_figure", "graph_figure", "node_xy", "task_figure"]
