"""Figures of the causal tools: held-out IIA by layer, DAS beside its controls; edge
attribution's faithfulness curves, its agreement with exact path patching, the circuit."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from interp.plotting import INK, MUTED, PALETTE, ci_line, new_figure, styled

if TYPE_CHECKING:
    from interp.causal.results import Circuit, DASResult, EdgeResult

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
    for i, name in enumerate(dict.fromkeys(k for r in result.layers for k in r.subspaces)):
        pts = [(r.layer, r.subspaces[name]) for r in result.layers if name in r.subspaces]
        ci_line(ax, [p[0] for p in pts], [p[1].iia for p in pts],
                [_nan(p[1].iia_ci95[0]) for p in pts], [_nan(p[1].iia_ci95[1]) for p in pts],
                label=name, color=PALETTE[(6 + i) % len(PALETTE)], marker="D")
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


#: colour of each edge-scoring method on the edge figures
METHOD_COLOURS = {"eap-ig": PALETTE[0], "eap": PALETTE[3], "exact": INK, "random": MUTED}


@styled
def faithfulness_curves(result: EdgeResult) -> Figure:
    """The share of the clean − corrupted gap kept by the top-n edges of each method,
    against random edge sets of the same size, with 95% CIs over pairs; log x."""
    fig = new_figure(7.2, 3.8)
    ax = fig.subplots()
    for curve in result.faithfulness:
        colour = METHOD_COLOURS.get(curve.method, PALETTE[5])
        label = (f"random edges (mean of {result.config.random_draws} draws)"
                 if curve.method == "random" else f"top edges by {curve.method}")
        ci_line(ax, curve.n, curve.mean, [_nan(c[0]) for c in curve.ci95],
                [_nan(c[1]) for c in curve.ci95], label=label, color=colour,
                dashed=curve.method == "random", marker="o")
    ax.axhline(1.0, color=MUTED, linewidth=0.8, linestyle=":")
    ax.axhline(0.0, color=MUTED, linewidth=0.8, linestyle=":")
    ax.set_xscale("log")
    ax.set_xlabel("edges kept (the rest read the corrupted run)")
    ax.set_ylabel("share of the logit-difference gap kept")
    ax.set_title(f"Faithfulness of circuits on {result.task.name}", loc="left")
    fig.legend(loc="outside lower center", ncols=3, fontsize=7.5, frameon=False)
    return fig


@styled
def agreement_scatter(result: EdgeResult) -> Figure:
    """Each sampled edge's exact effect against each approximation's score (symlog)."""
    fig = new_figure(7.2, 3.6)
    methods = [m for m in ("eap", "eap-ig") if any(getattr(s, m.replace("-", "_")) is not None
                                                   for s in result.sample)]
    axes = fig.subplots(1, max(len(methods), 1), squeeze=False)[0]
    for ax, m in zip(axes, methods, strict=False):
        key = m.replace("-", "_")
        for origin, marker in (("random", "."), ("top", "o")):
            pts = [(s.exact, getattr(s, key)) for s in result.sample if s.chosen == origin]
            if pts:
                ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=9, marker=marker,
                           color=METHOD_COLOURS[m] if origin == "top" else MUTED,
                           label=f"{origin} edges", alpha=0.8)
        lim = max([abs(s.exact) for s in result.sample] + [1e-3])
        ax.plot([-lim, lim], [-lim, lim], color=MUTED, linewidth=0.8, linestyle=":")
        ax.set_xscale("symlog", linthresh=lim / 100)
        ax.set_yscale("symlog", linthresh=lim / 100)
        rho = next((a for a in result.agreement if a.method == m), None)
        title = m if rho is None else f"{m}: Spearman {rho.spearman:.2f}"
        ax.set_title(title, loc="left", fontsize=9)
        ax.set_xlabel("exact path patching (Δ logit diff.)")
        ax.set_ylabel("score")
    if methods:
        axes[0].legend(fontsize=7.5, frameon=False)
    return fig


def _node_xy(name: str, n_heads: int, rep: int) -> tuple[float, float]:
    """Where a node sits: a head at (head, layer); a key/value head (a receiver shared by
    ``rep`` query heads) below the middle of its heads; an MLP right of the heads, half a
    layer up; the input below layer 0; the logits (y = inf) above the last layer."""
    if name == "input":
        return (n_heads / 2, -1.0)
    if name == "logits":
        return (n_heads / 2, math.inf)
    layer_part, _, rest = name.partition(".")
    layer = int(layer_part[1:])
    if name.startswith("m"):
        return (n_heads + 0.5, layer + 0.5)
    if rest.startswith("kv"):
        g = int(rest[2:])
        return (g * rep + (rep - 1) / 2, layer - 0.3)
    return (float(rest[1:]), float(layer))


@styled
def circuit_graph(circuit: Circuit, n_heads: int, n_layers: int, n_kv: int) -> Figure:
    """The pruned circuit: heads by (head, layer), key/value heads (shared receivers)
    just below their query heads, MLPs at the right, input below and the logits above;
    an edge's width is its ``|score|``, blue positive, orange negative."""
    rep = max(n_heads // max(n_kv, 1), 1)
    fig = new_figure(7.2, 6.2)
    ax = fig.subplots()
    top = max((abs(e.score) for e in circuit.edges), default=1.0) or 1.0
    nodes: set[str] = set()
    for e in circuit.edges:
        x0, y0 = _node_xy(e.sender, n_heads, rep)
        rcv = e.receiver.split("<")[0]
        x1, y1 = _node_xy(rcv, n_heads, rep)
        y1 = n_layers if math.isinf(y1) else y1
        ax.plot([x0, x1], [y0, y1], color=PALETTE[0] if e.score > 0 else PALETTE[1],
                linewidth=0.3 + 2.7 * abs(e.score) / top, alpha=0.7, zorder=1)
        nodes.update([e.sender, rcv])
    for n in nodes:
        x, y = _node_xy(n, n_heads, rep)
        y = n_layers if math.isinf(y) else y
        shared = ".kv" in n
        ax.scatter([x], [y], s=18 if shared else 36, marker="s" if shared else "o",
                   color=INK if n in ("input", "logits") else MUTED, zorder=2)
        ax.annotate(n, (x, y), fontsize=6, xytext=(3, 2), textcoords="offset points")
    ax.set_xlabel("head (MLP at the right)")
    ax.set_ylabel("layer")
    ax.set_title(f"Circuit: top {circuit.n_top} edges by {circuit.method}, "
                 f"{len(circuit.edges)} after pruning", loc="left")
    return fig
