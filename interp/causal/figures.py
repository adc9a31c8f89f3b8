"""Figures of the causal tools: held-out IIA by layer, DAS beside its controls; edge
attribution's faithfulness curves, its agreement with exact path patching, the circuit."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullLocator

from interp.plotting import INK, MUTED, PALETTE, ci_line, new_figure, styled

if TYPE_CHECKING:
    from interp.causal.results import Circuit, DASResult, EdgeResult

#: (field, label, colour, dashed, marker) of each line, in drawing order (the last on top)
LINES = (
    ("full", "full interchange (ceiling)", INK, True, "s"),
    ("none", "no interchange (floor)", MUTED, False, "s"),
    ("probe_accuracy", "probe accuracy (readable)", PALETTE[5], True, "o"),
    ("control", "control task (labels by type)", PALETTE[2], True, "o"),
    ("in_span", "DAS in the observed span", PALETTE[7], True, "^"),
    ("mean_difference", "class-mean difference", PALETTE[4], False, "o"),
    ("probe_direction", "probe direction", PALETTE[3], False, "o"),
    ("random", "random direction", PALETTE[1], False, "x"),
    ("das", "DAS", PALETTE[0], False, "o"),
)


def _nan(x: float | None) -> float:
    return math.nan if x is None else float(x)


@styled
def iia_by_layer(result: DASResult) -> Figure:
    """Held-out IIA by layer: DAS (and its part in the observed span), the random
    direction, the control task by type (its chance: a short grey tick at each layer), and
    the full and empty interchanges, each with its 95% band."""
    fig = new_figure(7.2, 3.8)
    ax = fig.subplots()
    xs = [r.layer for r in result.layers]
    for name, label, colour, dashed, marker in LINES:
        rates = [getattr(r, name) for r in result.layers]
        if any(x is None for x in rates):
            continue
        ci_line(ax, xs, [x.value for x in rates], [_nan(x.ci95[0]) for x in rates],
                [_nan(x.ci95[1]) for x in rates], label=label, color=colour,
                dashed=dashed, marker=marker)
    for i, name in enumerate(dict.fromkeys(k for r in result.layers for k in r.subspaces)):
        pts = [(r.layer, r.subspaces[name]) for r in result.layers if name in r.subspaces]
        ci_line(ax, [p[0] for p in pts], [p[1].value for p in pts],
                [_nan(p[1].ci95[0]) for p in pts], [_nan(p[1].ci95[1]) for p in pts],
                label=name, color=PALETTE[(6 + i) % len(PALETTE)], marker="D")
    chance = [(r.layer, r.control_chance) for r in result.layers
              if r.control_chance is not None]
    if chance:
        ax.scatter([c[0] for c in chance], [c[1] for c in chance], marker="_", s=160,
                   color=PALETTE[2], linewidths=1.6, label="control task's chance", zorder=3)
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
METHOD_COLOURS = {"eap-ig": PALETTE[0], "eap-corrupted": PALETTE[3], "eap-clean": PALETTE[2],
                  "exact": INK, "random": MUTED}


@styled
def faithfulness_curves(result: EdgeResult) -> Figure:
    """One panel per estimator: the share of the clean − corrupted gap kept by its top n
    edges, by its matched baseline (n edges from its next ranks), by n edges drawn from all
    (the weak baseline) and by the top n sampled edges by exact patching (the reference),
    with 95% CIs over pairs; log x."""
    curves = result.faithfulness
    methods = list(dict.fromkeys(c.method for c in curves if c.kind == "top"))
    fig = new_figure(7.2, 3.6)
    axes = fig.subplots(1, max(len(methods), 1), squeeze=False, sharey=True)[0]
    draws = result.config.random_draws
    pool = 1 + result.config.match_pool
    for i, (ax, m) in enumerate(zip(axes, methods, strict=False)):
        shown = [
            (c, "top n by the panel's estimator" if i == 0 else None,
             METHOD_COLOURS.get(m, PALETTE[5]), False, "o")
            for c in curves if c.kind == "top" and c.method == m]
        shown += [(c, f"matched: n of its ranks n+1…{pool}n ({draws} draws)"
                   if i == 0 else None, METHOD_COLOURS.get(m, PALETTE[5]), True, "x")
                  for c in curves if c.kind == "matched" and c.method == m]
        shown += [(c, f"n edges drawn from all ({draws} draws; weak)" if i == 0 else None,
                   MUTED, True, ".") for c in curves if c.kind == "random"]
        shown += [(c, "top n sampled edges by exact patching (reference)" if i == 0 else None,
                   INK, False, "s") for c in curves if c.kind == "exact"]
        for c, label, colour, dashed, marker in shown:
            ci_line(ax, c.n, c.mean, [_nan(x[0]) for x in c.ci95], [_nan(x[1]) for x in c.ci95],
                    label=label, color=colour, dashed=dashed, marker=marker)
        ax.axhline(1.0, color=MUTED, linewidth=0.8, linestyle=":")
        ax.axhline(0.0, color=MUTED, linewidth=0.8, linestyle=":")
        ax.set_xscale("log")
        ax.set_title(m, loc="left", fontsize=9)
        ax.set_xlabel("edges kept (n)")
    axes[0].set_ylabel("share of the gap kept")
    fig.suptitle(f"Faithfulness of circuits on {result.task.name}", x=0.02, ha="left",
                 fontsize=10)
    fig.legend(loc="outside lower center", ncols=2, fontsize=7.5, frameon=False)
    return fig


def symlog_ticks(values: Sequence[float], per_side: int = 2) -> tuple[float, list[float]]:
    """A symlog axis for ``values``: its linear threshold (the 10th percentile of the
    nonzero ``|values|``, at least 1e-3 of the largest) and its ticks: zero and at most
    ``per_side`` decades each side, none inside ten times the threshold, so no label
    crowds zero."""
    a = np.abs(np.asarray([v for v in values if v == v], dtype=np.float64))
    a = a[a > 0]
    top = float(a.max()) if a.size else 1.0
    thresh = max(float(np.quantile(a, 0.1)) if a.size else top / 100, top * 1e-3)
    first, last = math.floor(math.log10(thresh)) + 1, math.floor(math.log10(top))
    decades = list(range(first, last + 1)) or [last]
    step = max(1, math.ceil(len(decades) / per_side))
    keep = decades[::-1][::step][::-1]
    ticks = sorted([0.0] + [s * 10.0**k for k in keep for s in (-1, 1)])
    return thresh, ticks


def _power(v: float) -> str:
    """``0`` or ``±10^k`` (mathtext): short labels for a symlog axis's decade ticks."""
    if v == 0:
        return "0"
    k = round(math.log10(abs(v)))
    return f"${'−' if v < 0 else ''}10^{{{k}}}$"


def _symlog(ax: Axes, axis: str, values: Sequence[float], per_side: int) -> None:
    thresh, ticks = symlog_ticks(values, per_side)
    target = ax.xaxis if axis == "x" else ax.yaxis
    (ax.set_xscale if axis == "x" else ax.set_yscale)("symlog", linthresh=thresh)
    target.set_major_locator(FixedLocator(ticks))
    target.set_major_formatter(FuncFormatter(lambda v, _: _power(v)))
    target.set_minor_locator(NullLocator())


@styled
def agreement_scatter(result: EdgeResult) -> Figure:
    """Each sampled edge's exact effect against each estimator's score (symlog axes whose
    linear region and ticks come from the data: :func:`symlog_ticks`)."""
    methods = [a.method for a in result.agreement]
    fig = new_figure(7.2, 3.4)
    axes = fig.subplots(1, max(len(methods), 1), squeeze=False)[0]
    exact = [s.exact for s in result.sample]
    for ax, m in zip(axes, methods, strict=False):
        scores = [_nan(s.score(m)) for s in result.sample]
        for origin, marker in (("random", "."), ("top", "o")):
            pts = [(s.exact, _nan(s.score(m))) for s in result.sample if s.chosen == origin]
            if pts:
                ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=9, marker=marker,
                           color=METHOD_COLOURS[m] if origin == "top" else MUTED,
                           label=f"{origin} edges", alpha=0.8)
        lim = max([abs(x) for x in exact + scores if x == x] + [1e-3])
        ax.plot([-lim, lim], [-lim, lim], color=MUTED, linewidth=0.8, linestyle=":")
        _symlog(ax, "x", exact, 2 if len(methods) < 3 else 1)
        _symlog(ax, "y", scores, 2)
        rho = next((a for a in result.agreement if a.method == m), None)
        title = m if rho is None else f"{m}: Spearman {rho.spearman:.2f}"
        ax.set_title(title, loc="left", fontsize=8.5)
        ax.set_xlabel("exact path patching (Δ LD)")
    if methods:
        axes[0].set_ylabel("score")
        axes[0].legend(fontsize=7.5, frameon=False)
    fig.suptitle("Each sampled edge patched alone against its score (a local check)",
                 x=0.02, ha="left", fontsize=10)
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
