"""The figures of the saes package, drawn with matplotlib from its typed results.

Each builder takes a result of :mod:`saes.results` and returns a
:class:`~matplotlib.figure.Figure` in the house style (:mod:`interp.plotting`):

* :func:`reconstruction_figure`: L0, explained variance, cosine similarity and MSE, one strip
  each on its own axis: the estimate (green when it meets its target, red when it misses),
  its 95% CI, the target (dotted, the failing side tinted) and a baseline (MSE's
  predict-the-mean);
* :func:`score_figure`: the two CE-loss scores (zero and mean ablation) the same way;
* :func:`ce_figure`: next-token CE of the clean model, the SAE spliced in, mean and zero
  ablation on one axis; on the SAE row what it loses (red) and recovers (green);
* :func:`density_figure`: features by log10 density, the dead ones as a bar of their own,
  the dense threshold and the one-token floor (an evaluation or a browser result);
* :func:`training_figure`: loss, L0, explained variance and dead fraction per step, with
  resampling marks and, for an evaluation, its held-out values and targets.

Hover targets (a bar, a dot, a line) carry gids; :func:`hover_titles` gives their texts by
gid, for :class:`reports.figures.ReportFigure`'s ``titles``. Missing numbers (NaN) are left
out of the drawing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, cast
from weakref import WeakKeyDictionary

import numpy as np
import pandas as pd
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator
from matplotlib.transforms import blended_transform_factory

from interp.display import count, percent
from interp.plotting import ACCENT, GRID, INK, MUTED, PALETTE, new_figure, styled
from interp.stats.intervals import mean_t_ci
from saes.metric_format import CI, ci_known, format_metric, format_with_ci

if TYPE_CHECKING:  # the results call these figures: named here for type checkers only
    from saes.results import BrowserData, SAEEvalResult, TargetCheck, TrainingRecord

__all__ = [
    "ce_figure",
    "density_figure",
    "hover_titles",
    "reconstruction_figure",
    "score_figure",
    "training_figure",
]


class SparseProbeLike(Protocol):
    """What :func:`sparse_probe_figure` reads (:class:`saes.features.probing.SparseProbeResult`)."""

    hook_point: str
    ks: list[int]
    sparse_accuracy: list[list[float]]
    random_accuracy: list[list[float]]
    dense_accuracy: list[float]
    majority_accuracy: list[float]


NAN = math.nan
OK, BAD = "#2b7a3d", "#c92a2a"
OK_SOFT, BAD_SOFT = "#e3f2e6", "#fdecec"
BASE = "#8a93a6"
BAR, DENSE, DENSE_SOFT, WARN = "#8da4c8", "#e8a33d", "#fff4e5", "#b35c00"
RESAMPLE = "#9c36b5"
MONO = "DejaVu Sans Mono"

_HOVER: WeakKeyDictionary[Figure, dict[str, str]] = WeakKeyDictionary()


def hover_titles(fig: Figure) -> dict[str, str]:
    """The hover texts of ``fig``'s artists by gid (empty for a figure not built here)."""
    return dict(_HOVER.get(fig, {}))


def _hover(fig: Figure, artist: Artist, gid: str, text: str) -> None:
    artist.set_gid(gid)
    _HOVER.setdefault(fig, {})[gid] = text


def _finite(*values: float) -> bool:
    return all(math.isfinite(v) for v in values)


# ------------------------------------------------------------------------- strips


@dataclass
class _Strip:
    """One metric on its own axis ``[lo, hi]``, with its target and an optional baseline."""

    key: str
    label: str
    hint: str
    value: float
    ci: CI
    lo: float
    hi: float
    check: TargetCheck | None = None
    base: float = NAN
    base_text: str = ""


def _axis(values: Sequence[float], lo: float, hi: float | None) -> tuple[float, float]:
    """``[lo, hi]`` widened to the finite ``values`` (``hi=None``: 12% above the largest)."""
    fin = [v for v in values if math.isfinite(v)]
    if fin and min(fin) < lo:
        lo = min(fin) - 0.05 * (max(fin) - min(fin) or 1.0)
    if hi is None:
        hi = max(fin) * 1.12 if fin and max(fin) > 0 else 1.0
    else:
        hi = max([hi, *fin])
    return (lo, hi) if hi > lo else (lo, lo + 1.0)


def _strips_figure(strips: Sequence[_Strip]) -> Figure:
    fig = new_figure(8.0, 0.25 + 0.8 * len(strips))
    axes = fig.subplots(len(strips), 1, squeeze=False)[:, 0]
    for ax, s in zip(axes, strips, strict=True):
        ax.set_xlim(s.lo, s.hi)
        ax.set_ylim(-1.0, 1.3)
        ax.set_yticks([])
        ax.grid(False)
        ax.spines["left"].set_visible(False)
        ax.axhline(0, color="#c5ccda", linewidth=1.5, zorder=0)
        ax.set_title(f"{s.label}  ·  {s.hint}", loc="left", fontsize=9, fontweight="bold",
                     pad=2)
        c = s.check
        if c is not None and math.isfinite(c.target):
            left, right = (s.lo, c.target) if c.op == ">=" else (c.target, s.hi)
            ax.axvspan(left, right, ymin=0.2, ymax=0.65, color=BAD_SOFT, linewidth=0, zorder=0)
            line = ax.axvline(c.target, ymin=0.1, ymax=0.75, color=BAD, linewidth=1.6,
                              linestyle=(0, (2, 1.5)))
            _hover(fig, line, f"target-{s.key}", f"target: {c.label} {c.target_text}")
            ax.annotate("target", (c.target, 0.85), xytext=(3, 0), textcoords="offset points",
                        ha="left", va="center", color=BAD, fontsize=8)
        if math.isfinite(s.base):
            tri = ax.plot([s.base], [0.35], marker="v", markersize=8, color=BASE,
                          linestyle="none")[0]
            _hover(fig, tri, f"baseline-{s.key}", s.base_text)
            ax.text(s.base, 0.7, "baseline", ha="center", va="bottom", color=MUTED, fontsize=8)
        shown = format_with_ci(s.key, s.value, s.ci)
        if math.isfinite(s.value):
            if ci_known(s.ci):
                ax.plot(list(s.ci), [0, 0], color=INK, linewidth=2, marker="|", markersize=10,
                        markeredgewidth=2)
            passed = c.passed if c is not None else None
            colour = OK if passed is True else BAD if passed is False else ACCENT
            dot = ax.plot([s.value], [0], marker="o", markersize=9, color=colour,
                          markeredgecolor="white", markeredgewidth=1.5, linestyle="none")[0]
            tip = f"{s.label}: {shown}" + (f"  (target {c.target_text})" if c else "")
            _hover(fig, dot, f"strip-{s.key}", tip)
        ax.text(1.02, 0.45, shown, transform=ax.transAxes, va="center", ha="left",
                family=MONO, fontsize=9, color=INK if math.isfinite(s.value) else MUTED)
    return fig


@styled
def reconstruction_figure(result: SAEEvalResult) -> Figure:
    """L0, explained variance, cosine similarity and MSE, each with its CI and target."""
    r = result
    ev = r.explained_variance
    base = r.mse / (1 - ev) if _finite(r.mse, ev) and ev < 1 else NAN
    d_sae = count(r.d_sae)
    lo, hi = _axis([r.l0, *r.l0_ci95, c.target if (c := r.check("l0")) else NAN], 0.0, None)
    strips = [_Strip("l0", "L0", f"active features per token, of {d_sae}", r.l0, r.l0_ci95,
                     lo, hi, r.check("l0"))]
    for key, label, hint in (
        ("explained_variance", "explained variance", "1 − error / variance; 0 = the mean"),
        ("cosine_similarity", "cosine similarity", "between x and x̂, per token"),
    ):
        value, ci = r.value(key), getattr(r, f"{key}_ci95")
        lo, hi = _axis([value, *ci], 0.0, 1.0)
        strips.append(_Strip(key, label, hint, value, ci, lo, hi, r.check(key)))
    lo, hi = _axis([r.mse, *r.mse_ci95, base], 0.0, None)
    strips.append(_Strip("mse", "MSE", "‖x − x̂‖², in the activations' units", r.mse,
                         r.mse_ci95, lo, hi, r.check("mse"), base,
                         f"predicting the mean: ≈ {format_metric('mse', base)} "
                         "(= MSE / (1 − EV))"))
    return _strips_figure(strips)


@styled
def score_figure(result: SAEEvalResult) -> Figure:
    """The CE-loss scores against zero and against mean ablation, with CIs and targets."""
    r = result
    keys = ("ce_loss_score", "ce_loss_score_mean_ablation")
    lo, hi = _axis([v for k in keys for v in (r.value(k), *getattr(r, f"{k}_ci95"))], 0.0, 1.0)
    return _strips_figure([
        _Strip("ce_loss_score", "CE-loss score", "vs zero-ablation; 1 = clean, 0 = zero",
               r.ce_loss_score, r.ce_loss_score_ci95, lo, hi, r.check("ce_loss_score")),
        _Strip("ce_loss_score_mean_ablation", "CE-loss score", "vs mean-ablation (stricter)",
               r.ce_loss_score_mean_ablation, r.ce_loss_score_mean_ablation_ci95, lo, hi,
               r.check("ce_loss_score_mean_ablation")),
    ])


# ----------------------------------------------------------------------------- CE


@styled
def ce_figure(result: SAEEvalResult) -> Figure:
    """Next-token CE with the SAE spliced in and its baselines, on one axis (nats/token)."""
    r = result
    clean, sae, zero = r.ce_clean, r.ce_sae, r.ce_zero_ablation
    kl_sae = format_with_ci("kl", r.kl_sae, r.kl_sae_ci95)
    rows = [
        ("clean", "clean model", clean, INK, "KL 0 (the reference)"),
        ("sae", "SAE spliced in", sae, ACCENT, f"KL {kl_sae}"),
        ("mean", "mean ablation", r.ce_mean_ablation, BASE,
         f"KL {format_metric('kl', r.kl_mean_ablation)}"),
        ("zero", "zero ablation", zero, BASE, f"KL {format_metric('kl', r.kl_zero_ablation)}"),
    ]
    sae_ci = ((clean + r.delta_ce_ci95[0], clean + r.delta_ce_ci95[1])
              if ci_known(r.delta_ce_ci95) and math.isfinite(clean) else None)
    fin = [row[2] for row in rows if math.isfinite(row[2])] + list(sae_ci or ())
    fig = new_figure(8.0, 2.5)
    ax = fig.subplots()
    ax.set_xlim(0.0, max(fin) * 1.06 if fin and max(fin) > 0 else 1.0)
    ys = list(range(len(rows) - 1, -1, -1))  # the clean model on top
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.set_yticks(ys, [label for _, label, *_ in rows])
    ax.grid(False, axis="y")
    ax.set_xlabel("next-token cross-entropy (nats/token)")
    right = blended_transform_factory(ax.transAxes, ax.transData)
    y_sae = ys[1]
    if math.isfinite(clean):
        ref = ax.axvline(clean, color=MUTED, linewidth=1.2, linestyle=(0, (4, 3)), zorder=1)
        _hover(fig, ref, "ce-clean-ref", f"clean model: {format_metric('ce', clean)} nats/token")
    if _finite(clean, sae, zero) and zero > clean:
        lost = ax.barh(y_sae, sae - clean, left=clean, height=0.42, color=BAD_SOFT, zorder=1)
        _hover(fig, lost.patches[0], "ce-lost",
               f"lost vs the clean model: {sae - clean:+.3f} nats")
        if zero > sae:
            rec = ax.barh(y_sae, zero - sae, left=sae, height=0.42, color=OK_SOFT, zorder=1)
            _hover(fig, rec.patches[0], "ce-recovered",
                   f"recovered of the zero-ablation gap: {zero - sae:.3f} nats")
    for y, (key, label, v, colour, kl) in zip(ys, rows, strict=True):
        if math.isfinite(v):
            ax.hlines(y, 0, v, color="#d5dae3", linewidth=2, zorder=1)
            if key == "sae" and sae_ci is not None:
                ax.plot(list(sae_ci), [y, y], color=INK, linewidth=2, marker="|",
                        markersize=11, markeredgewidth=2, zorder=3)
            dot = ax.plot([v], [y], marker="o", markersize=9, color=colour,
                          markeredgecolor="white", markeredgewidth=1.5, linestyle="none",
                          zorder=4)[0]
            _hover(fig, dot, f"ce-{key}",
                   f"{label}: CE {format_metric('ce', v)} nats/token; {kl}")
        ax.text(1.02, y, f"{format_metric('ce', v)}   {kl}", transform=right, va="center",
                family=MONO, fontsize=8.5, color=INK if math.isfinite(v) else MUTED)
    if not fin:
        ax.text(0.5, 0.5, "not measured", transform=ax.transAxes, ha="center", color=MUTED)
    return fig


# ------------------------------------------------------------------------ density

_SUP = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def _pow10(t: float) -> str:
    return "1" if t == 0 else "10" + str(int(round(t))).translate(_SUP)


@styled
def density_figure(result: SAEEvalResult | BrowserData) -> Figure:
    """Features by the fraction of tokens they fire on (log scale), dead ones apart.

    The dense threshold (an evaluation's ``dense_threshold``) tints the dense side; a dotted
    line marks one token, the rarest firing the sample can resolve.
    """
    hist = result.histogram
    n_tokens = float(result.n_tokens) if result.n_tokens is not None else NAN
    thr = getattr(result, "dense_threshold", NAN)  # an evaluation's; the browser has none
    log_thr = math.log10(thr) if math.isfinite(thr) and thr > 0 else NAN
    floor = -math.log10(n_tokens) if math.isfinite(n_tokens) and n_tokens >= 1 else NAN
    has_bins = hist.valid and hist.total > 0
    edges, counts = (hist.edges, hist.counts) if has_bins else ([], [])

    fig = new_figure(8.0, 3.1)
    ax_dead, ax = fig.subplots(1, 2, sharey=True, gridspec_kw={"width_ratios": [1, 13]})
    dead = ax_dead.bar([0], [hist.n_dead], width=0.7, color=BAD, zorder=2)[0]
    _hover(fig, dead, "dead-bar", f"dead (fired on none of {count(n_tokens)} tokens): "
                                  f"{count(hist.n_dead)} features")
    ax_dead.set_xlim(-0.6, 0.6)
    ax_dead.set_xticks([0], ["dead"], color=BAD, fontweight="bold")
    ax_dead.grid(False, axis="x")
    ax_dead.set_ylabel("features")
    ax_dead.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(0, max([*counts, hist.n_dead, 1]) * 1.12)

    a_lo, a_hi = (edges[0], edges[-1]) if edges else (-5.0, 0.0)
    if math.isfinite(log_thr):
        a_lo, a_hi = min(a_lo, log_thr), max(a_hi, log_thr)
    a_lo, a_hi = math.floor(a_lo * 2) / 2, math.ceil(a_hi * 2) / 2
    ax.set_xlim(a_lo, a_hi if a_hi > a_lo else a_lo + 1)
    step = 1 if a_hi - a_lo <= 8 else 2
    ticks = [float(t) for t in range(math.ceil(a_lo), math.floor(a_hi) + 1) if t % step == 0]
    ax.set_xticks(ticks, [_pow10(t) for t in ticks])
    ax.set_xlabel("feature density: fraction of tokens the feature fires on (log scale)")
    ax.grid(False, axis="x")
    if math.isfinite(log_thr):
        ax.axvspan(log_thr, a_hi, color=DENSE_SOFT, linewidth=0, zorder=0)
    if counts:
        lefts, widths = edges[:-1], np.diff(edges)
        colours = [DENSE if math.isfinite(log_thr) and e >= log_thr - 1e-9 else BAR
                   for e in lefts]
        bars = ax.bar(lefts, counts, width=widths, align="edge", color=colours,
                      edgecolor="white", linewidth=0.8, zorder=2)
        for k, bar in enumerate(bars.patches):
            _hover(fig, bar, f"bin-{k}", f"density {percent(10 ** edges[k])} to "
                   f"{percent(10 ** edges[k + 1])} of tokens: "
                   f"{count(counts[k])} features")
    else:
        ax.text(0.5, 0.5, "no density data", transform=ax.transAxes, ha="center", color=MUTED)
    top = blended_transform_factory(ax.transData, ax.transAxes)
    if math.isfinite(log_thr):
        label = f"dense ≥ {percent(thr)} of tokens"
        line = ax.axvline(log_thr, color=WARN, linewidth=2, zorder=3)
        _hover(fig, line, "dense-threshold", f"dense threshold: {label}")
        ax.text(log_thr, 1.01, label, transform=top, ha="right", va="bottom", color=WARN,
                fontsize=8.5, fontweight="bold")
    if math.isfinite(floor) and a_lo <= floor <= a_hi:
        line = ax.axvline(floor, color=MUTED, linewidth=1.2, linestyle=(0, (2, 2)), zorder=3)
        _hover(fig, line, "floor", f"1 / n_tokens = {1 / n_tokens:.2g}: the rarest firing "
                                   "this sample can see")
        ax.text(floor, 1.01, "1 token", transform=top, ha="center", va="bottom", color=MUTED,
                fontsize=8.5)
    return fig


# ----------------------------------------------------------------------- training

#: The training curves: history key, title, y label.
PANELS = (
    ("loss", "Loss (MSE + the architecture's penalty: L1, L0 or AuxK)", "loss"),
    ("l0", "L0", "active features / token"),
    ("explained_variance", "Explained variance", "EV"),
    ("dead_fraction", "Dead fraction", "share of features"),
)


def _refs(result: SAEEvalResult, key: str) -> list[tuple[float, str, str]]:
    """(value, label, colour): the held-out value and the target of ``key``, when known."""
    if key == "loss":
        return []
    out = [(result.value(key), "held-out eval", INK)]
    c = result.check(key)
    if c is not None:
        out.append((c.target, f"target {c.target_text}", BAD))
    return [r for r in out if math.isfinite(r[0])]


@styled
def training_figure(result: SAEEvalResult | TrainingRecord) -> Figure:
    """Training curves per step: raw (faint) and a moving average, resampling steps marked.

    For an evaluation, its held-out values and targets are dashed horizontal lines. The
    training dead fraction counts features silent over the dead window, not the eval tokens.
    """
    evaluation = hasattr(result, "training")  # an SAEEvalResult, not its TrainingRecord
    record = (cast("SAEEvalResult", result).training if evaluation  # None: not trained here
              else cast("TrainingRecord", result))
    history = (record.history if record is not None else None) or {}
    panels = [p for p in PANELS if p[0] in history] or list(PANELS[:1])
    cols = 2 if len(panels) > 1 else 1
    rows = math.ceil(len(panels) / cols)
    fig = new_figure(8.0, 2.7 * rows + 0.2)
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    events = [(s, n) for s, n in (record.events if record is not None else [])
              if math.isfinite(s)]
    for i, (ax, (key, title, y_label)) in enumerate(zip(axes, panels, strict=False)):
        refs = _refs(cast("SAEEvalResult", result), key) if evaluation else []
        curve = record.curve(key) if record is not None else []
        _curve(fig, ax, key, curve, PALETTE[i % len(PALETTE)], events, refs)
        ax.set_title(title, loc="left")
        ax.set_xlabel("step")
        ax.set_ylabel(y_label)
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    return fig


def _curve(fig: Figure, ax: Axes, key: str, ys: list[float], colour: str,
           events: Sequence[tuple[float, float]], refs: Sequence[tuple[float, str, str]]) -> None:
    n = len(ys)
    steps = np.arange(1, n + 1)
    values = np.asarray(ys, dtype=np.float64)
    if n > 2000:  # keep the file small: every k-th step
        k = math.ceil(n / 2000)
        steps, values = steps[::k], values[::k]
    w = max(1, len(values) // 40)
    fin = values[np.isfinite(values)]
    ref_values = [v for v, _, _ in refs]
    if fin.size and fin.min() > 0 and fin.max() / fin.min() > 10 ** 1.5 and all(
            v > 0 for v in ref_values):
        ax.set_yscale("log")
    if fin.size:
        ax.plot(steps, values, color=colour, linewidth=1.1, alpha=0.35 if w > 1 else 1.0,
                label="per step")
        if w > 1:
            smooth = pd.Series(values).rolling(2 * (w // 2) + 1, center=True, min_periods=1)
            ax.plot(steps, np.asarray(smooth.mean(), dtype=np.float64), color=colour, linewidth=1.9,
                    label=f"mean of {w} steps")
    else:
        ax.text(0.5, 0.5, "no data", transform=ax.transAxes, ha="center", color=MUTED)
    ax.set_xlim(1, max(n, 2))
    for j, (step, n_feat) in enumerate(events):
        line = ax.axvline(step, color=RESAMPLE, linewidth=1.2, linestyle=(0, (3, 2)),
                          label="resampling" if j == 0 else None)
        _hover(fig, line, f"resample-{key}-{j}",
               f"step {count(step)}: {count(n_feat)} dead features resampled")
    for j, (value, label, c) in enumerate(refs):
        line = ax.axhline(value, color=c, linewidth=1.4, linestyle=(0, (5, 3)), label=label)
        _hover(fig, line, f"ref-{key}-{j}", f"{label}: {format_metric(key, value)}")
    if fin.size:
        ax.legend(fontsize=7.5, loc="best")
    ax.grid(True, color=GRID)


@styled
def sparse_probe_figure(result: SparseProbeLike) -> Figure:
    """Held-out accuracy against k: the k-sparse probe on SAE latents, k random latents,
    the dense probe on the residual stream and chance; bars are 95% t intervals over splits.
    """
    fig = new_figure(7.0, 3.6)
    ax = fig.add_subplot()
    ks = np.asarray(result.ks, dtype=np.float64)
    for name, values, colour, marker in (
            ("k-sparse probe (top latents)", result.sparse_accuracy, PALETTE[0], "o"),
            ("k random live latents", result.random_accuracy, BASE, "s")):
        stats = [mean_t_ci(v) for v in values]
        mean = np.array([s[0] for s in stats])
        lo = np.array([s[1] for s in stats])
        hi = np.array([s[2] for s in stats])
        lo, hi = np.clip(lo, 0.0, 1.0), np.clip(hi, 0.0, 1.0)  # accuracies live in [0, 1]
        err = np.where(np.isfinite(lo), np.vstack([mean - lo, hi - mean]), 0.0)
        ax.errorbar(ks, mean, yerr=err, color=colour, marker=marker, capsize=3,
                    linewidth=1.6, label=name)
        for i, k in enumerate(result.ks):
            pt = ax.plot([k], [mean[i]], linestyle="none", marker=marker, color=colour,
                         markersize=9, alpha=0.0)[0]
            ci = (f" (95% CI {lo[i]:.3f}–{hi[i]:.3f})" if math.isfinite(lo[i]) else "")
            _hover(fig, pt, f"{marker}-{k}", f"{name}, k = {k}: {mean[i]:.3f}{ci}")
    for name, values, colour, style in (
            ("dense probe (residual stream)", result.dense_accuracy, DENSE, "-"),
            ("majority class (chance)", result.majority_accuracy, MUTED, ":")):
        mean, lo, hi = mean_t_ci(values)
        line = ax.axhline(mean, color=colour, linestyle=style, linewidth=1.4, label=name)
        ci = f" (95% CI {lo:.3f}–{hi:.3f})" if math.isfinite(lo) else ""
        _hover(fig, line, f"ref-{name.split()[0]}", f"{name}: {mean:.3f}{ci}")
        if math.isfinite(lo) and colour == DENSE:
            ax.axhspan(max(lo, 0.0), min(hi, 1.0), color=colour, alpha=0.15, linewidth=0)
    ax.set_ylim(top=1.02)
    ax.set_xscale("log")
    ax.set_xticks(ks, [str(k) for k in result.ks])
    ax.minorticks_off()
    ax.set_xlabel("k (latents the probe may use)")
    ax.set_ylabel("held-out accuracy")
    ax.set_title(f"Sparse probing at {result.hook_point}", loc="left")
    ax.grid(True, color=GRID)
    ax.legend(fontsize=7.5, loc="best")
    return fig
