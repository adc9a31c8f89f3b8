"""Figures of transcoder evaluations (matplotlib, the house style of :mod:`interp.plotting`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from matplotlib.figure import Figure

from interp.plotting import ACCENT, INK, MUTED, new_figure, styled

if TYPE_CHECKING:
    from saes.transcoders.evaluate import TranscoderEvalResult


@styled
def eval_figure(result: TranscoderEvalResult) -> Figure:
    """Per layer: the MLP output's normalised MSE (left) and the CE-loss score with that
    layer alone replaced, with its 95% CI (right); the all-layers score as a line."""
    fig = new_figure(9.0, 3.4)
    ax1, ax2 = fig.subplots(1, 2)
    layers = np.array([m.layer for m in result.layers])
    ax1.bar(layers, [m.nmse for m in result.layers], color=ACCENT, width=0.7)
    ax1.set_xlabel("layer")
    ax1.set_ylabel("normalised MSE of the MLP output")
    ax1.set_ylim(bottom=0)
    scores = np.array([np.nan if m.ce_loss_score is None else m.ce_loss_score
                       for m in result.layers], dtype=float)
    if np.isfinite(scores).any():
        lo = np.array([m.ce_loss_score_ci95[0] if m.ce_loss_score_ci95 else np.nan
                       for m in result.layers], dtype=float)
        hi = np.array([m.ce_loss_score_ci95[1] if m.ce_loss_score_ci95 else np.nan
                       for m in result.layers], dtype=float)
        ax2.errorbar(layers, scores, yerr=[scores - lo, hi - scores], fmt="o", color=INK,
                     ms=3, lw=1, label="this layer alone")
    ax2.axhline(result.ce_loss_score_all, color=ACCENT, lw=1.2, ls="--",
                label=f"all {len(layers)} at once: {result.ce_loss_score_all:.3f}")
    ax2.axhline(1.0, color=MUTED, lw=0.8, ls=":")
    ax2.set_xlabel("layer")
    ax2.set_ylabel("CE-loss score (1: the clean loss)")
    ax2.legend(loc="lower left", fontsize=8)
    return fig


__all__ = ["eval_figure"]
