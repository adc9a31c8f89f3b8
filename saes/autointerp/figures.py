"""Figures of automatic interpretation, drawn with matplotlib in the house style.

* :func:`score_figure`: per group × explainer × scorer × method (of the scorers that
  passed their planted control), the mean AUROC
  difference between true and shuffled explanations with its 95% bootstrap CI (a forest
  plot; 0, the null, dotted). A row whose interval crosses 0 is inside the noise.
* :func:`scatter_figure`: each feature's true AUROC against its shuffled-explanation AUROC
  for one explainer × scorer × method, by group; above the diagonal the explanation beat
  its control.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from matplotlib.figure import Figure

from interp.plotting import GRID, MUTED, PALETTE, new_figure, styled

if TYPE_CHECKING:
    from saes.autointerp.results import AutoInterpResult

_GROUP_COLOUR = {"sae": PALETTE[0], "random": PALETTE[1], "planted": PALETTE[2],
                 "concept": PALETTE[3]}


@styled
def score_figure(result: AutoInterpResult) -> Figure:
    """The difference (true − shuffled AUROC) per summary row of a scorer that passed its
    planted control, with its CI."""
    rows = [s for s in result.summary if s.n_features and s.scorer_passed]
    fig = new_figure(7.5, 0.9 + 0.32 * max(len(rows), 1))
    ax = fig.add_subplot(1, 1, 1)
    for i, s in enumerate(reversed(rows)):
        c = _GROUP_COLOUR.get(s.group, MUTED)
        lo, hi = s.difference_ci95
        if lo == lo and hi == hi:
            ax.plot([lo, hi], [i, i], color=c, linewidth=2.2, solid_capstyle="butt")
        ax.plot([s.difference], [i], "o", color=c, markersize=5,
                gid=f"ai-{s.group}-{s.explainer}-{s.scorer}-{s.method}")
    ax.axvline(0, color=MUTED, linestyle=":", linewidth=1)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"{s.group} · {s.explainer} · {s.scorer} · {s.method} (n={s.n_features})"
                        for s in reversed(rows)], fontsize=8)
    ax.set_xlabel("AUROC of true − shuffled explanations (mean over features, 95% CI)")
    ax.grid(axis="x", color=GRID)
    return fig


@styled
def scatter_figure(result: AutoInterpResult, explainer: str, scorer: str, method: str,
                   ) -> Figure:
    """True against shuffled AUROC per feature for one explainer × scorer × method."""
    fig = new_figure(4.8, 4.2)
    ax = fig.add_subplot(1, 1, 1)
    ax.plot([0, 1], [0, 1], color=MUTED, linestyle=":", linewidth=1)
    for g, c in _GROUP_COLOUR.items():
        pts = [(r.shuffled_auroc, r.auroc) for r in result.scores
               if (r.group, r.explainer, r.scorer, r.method) == (g, explainer, scorer, method)]
        if pts:
            xs, ys = zip(*pts, strict=True)
            ax.scatter(xs, ys, s=16, color=c, alpha=0.8, label=f"{g} ({len(pts)})",
                       edgecolors="none")
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("AUROC, shuffled explanation")
    ax.set_ylabel("AUROC, true explanation")
    ax.set_title(f"{explainer} · {scorer} · {method}", fontsize=9)
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(color=GRID)
    return fig


__all__ = ["scatter_figure", "score_figure"]
