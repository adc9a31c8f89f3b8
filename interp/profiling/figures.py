"""Profile figures (house style of :mod:`interp.plotting`).

* :func:`phases_figure`: seconds per phase of the whole run, and the time no phase
  covers;
* :func:`categories_figure`: the steady state's wall time by operator category, with
  the time outside any operator (Python and framework overhead).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from matplotlib.figure import Figure

from interp.plotting import new_figure, styled

if TYPE_CHECKING:
    from interp.profiling.results import ProfileResult

OUTSIDE = "outside operators (Python, framework)"


@styled
def phases_figure(result: ProfileResult) -> Figure:
    """Seconds per phase of the whole run, longest first, and the time no phase covers."""
    top = {k: v for k, v in result.phases.items() if not k.endswith("(nested)")}
    rows = sorted(top.items(), key=lambda t: -t[1])
    rows.append(("(no phase)", max(result.wall_s - sum(top.values()), 0.0)))
    fig = new_figure(6.5, 0.32 * len(rows) + 1.0)
    ax = fig.add_subplot()
    for i, (name, secs) in enumerate(rows):
        bar = ax.barh(i, secs, color="#8a8f98" if name == "(no phase)" else "#4c72b0",
                      height=0.6)
        bar[0].set_gid(f"phase-{i}")
        ax.annotate(f"{secs:.2f} s", (secs, i), xytext=(4, 0), textcoords="offset points",
                    va="center", fontsize=8)
    ax.set_yticks(range(len(rows)), [r[0] for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel(f"seconds of the run's {result.wall_s:.2f} s wall time")
    ax.margins(x=0.15)
    return fig


@styled
def categories_figure(result: ProfileResult) -> Figure:
    """The steady state's share of wall time by operator category, with the time outside any
    operator."""
    rows = list(result.categories.items())
    fig = new_figure(6.5, 0.32 * max(len(rows), 1) + 1.0)
    ax = fig.add_subplot()
    for i, (name, share) in enumerate(rows):
        bar = ax.barh(i, share, color="#c0392b" if name == OUTSIDE else "#2a7f62", height=0.6)
        bar[0].set_gid(f"category-{i}")
        ax.annotate(f"{share:.0%}", (share, i), xytext=(4, 0), textcoords="offset points",
                    va="center", fontsize=8)
    ax.set_yticks(range(len(rows)), [r[0] for r in rows])
    ax.invert_yaxis()
    ax.set_xlim(0, 1.1)
    ax.set_xlabel(f"share of the analysed window's wall time\n({result.window})")
    return fig
