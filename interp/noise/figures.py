"""Figures of seed noise and comparisons (house style of :mod:`interp.plotting`).

* :func:`spread_figure`: each varying metric's spread over the seeds relative to its
  mean (``std / |mean|``), the noisiest first: which numbers a single run cannot be trusted on;
* :func:`compare_figure`: each compared metric's difference B − A in units of its noise
  (difference / standard error), with the ±1.96 band inside which a difference is not a
  result.
"""

from __future__ import annotations

from matplotlib.figure import Figure

from interp.noise.compare import Z95
from interp.noise.results import LARGER, CompareResult, SeedsResult
from interp.plotting import new_figure, styled

SHOWN = 25
INSIDE, OUTSIDE = "#8a8f98", "#c0392b"


@styled
def spread_figure(result: SeedsResult) -> Figure:
    """Each varying metric's seed std over its mean (``std / |mean|``), the noisiest first (up to
    25)."""
    rows = sorted((m for m in result.metrics if m.std > 0 and m.mean != 0),
                  key=lambda m: m.std / abs(m.mean), reverse=True)[:SHOWN]
    fig = new_figure(7.0, 0.28 * max(len(rows), 1) + 1.1)
    ax = fig.add_subplot()
    for i, m in enumerate(rows):
        bar = ax.barh(i, m.std / abs(m.mean), color="#4c72b0", height=0.6)
        bar[0].set_gid(f"metric-{i}")
    ax.set_yticks(range(len(rows)), [m.name for m in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel(f"std / |mean| over {len(result.seeds)} seeds")
    if not rows:
        ax.text(0.5, 0.5, "no metric varies with the seed", ha="center", va="center",
                transform=ax.transAxes)
    return fig


@styled
def compare_figure(result: CompareResult) -> Figure:
    """Each compared metric's B − A over its standard error, with the ±1.96 band of noise (up to 25,
    largest first)."""
    rows = []
    for r in result.rows:
        if r.ci95 is None:
            continue
        half = (r.ci95[1] - r.ci95[0]) / 2
        z = r.diff / (half / Z95) if half > 0 else (0.0 if r.diff == 0 else float("inf"))
        rows.append((r, z))
    rows = sorted(rows, key=lambda t: abs(t[1]), reverse=True)[:SHOWN]
    fig = new_figure(7.0, 0.28 * max(len(rows), 1) + 1.1)
    ax = fig.add_subplot()
    ax.axvspan(-Z95, Z95, color="#e8e8e8", zorder=0)
    ax.axvline(0, color="#555", lw=0.8)
    finite = [z for _, z in rows if abs(z) != float("inf")]
    edge = max([abs(z) for z in finite] + [3.0]) * 1.1
    for i, (r, z) in enumerate(rows):
        shown = max(-edge, min(edge, z))
        pt = ax.plot(shown, i, "o", color=OUTSIDE if r.verdict == LARGER else INSIDE)
        pt[0].set_gid(f"metric-{i}")
    ax.set_yticks(range(len(rows)), [r.name for r, _ in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(-edge, edge)
    ax.set_xlabel("(B − A) / standard error; grey band: within noise (|z| < 1.96)")
    return fig
