"""Figures of the circuit tools (matplotlib, house style of :mod:`interp.plotting`).

* :func:`effect_heatmap`: one method's mean patching effect (exact, AtP or AtP*). Layers
  are rows, **layer 0 at the top** (an ``embed`` row above it when the run patched the
  embeddings); columns are the prompt positions, labelled by role, for the position
  families (``resid``, ``attn``, ``mlp``) and the heads for ``heads``. With
  ``per_position`` heads, one small layer × head heatmap per position, sharing one
  colour scale (summing over positions would let effects of opposite sign cancel).
  The colour map is diverging and centred on the run's baseline: blue is closer to
  the clean run than the baseline, red closer to the corrupted run. Cells are
  rectangles with gid ``cell-I-J`` (hover texts from :func:`effect_titles`), except in
  the per-position small multiples (images, no hover).
* :func:`agreement_scatter`: an approximation's (AtP, AtP*) mean effect against the
  exact one, component by component, with the y = x line; the exact top-10 components
  are named (gids ``top-K``, hover texts from :func:`agreement_titles`).
* :func:`dla_bars`: direct logit attribution: a layer × (heads, MLP) heatmap of the
  mean contributions (gids ``cell-I-J``, the MLP in the last column) and the 15
  components (heads, MLPs, embeddings) of largest ``|mean|`` with their 95% intervals
  (gids ``bar-K``); hover texts from :func:`dla_titles`.
* :func:`attention_heatmap`: one head's attention pattern, queries as rows and keys as
  columns, tokens as labels (whitespace made visible); :func:`attention_heatmaps` gives
  one per head.

The builders read results through the protocols below (the dataclasses of
:mod:`interp.circuits.results` satisfy them).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import partial
from typing import Protocol

import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize, PowerNorm, to_rgb
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.patches import Rectangle
from torch import Tensor

from interp.display import ci_text, format_number, visible_token
from interp.errors import InterpError
from interp.plotting import ACCENT, INK, MUTED, PALETTE, colormap, new_figure, styled
from interp.stats.intervals import Z95

__all__ = [
    "ATTENTION_CMAP",
    "COLORBAR_LABEL",
    "EFFECT_CMAP",
    "METHOD_LABELS",
    "AgreementLike",
    "AttentionLike",
    "DLALike",
    "EffectsLike",
    "PatchLike",
    "agreement_effects",
    "agreement_scatter",
    "agreement_titles",
    "attention_heatmap",
    "attention_heatmaps",
    "dla_bars",
    "dla_components",
    "dla_titles",
    "effect_heatmap",
    "effect_methods",
    "effect_scale",
    "effect_ci",
    "effect_titles",
    "fmt_effect",
    "token_label",
    "within_noise",
]

#: Colour map of the effect heatmaps (blue: towards the clean run; red: towards corrupted).
EFFECT_CMAP = "RdBu"
#: Colour map of the DLA heatmap (blue: pushes towards the answer).
DLA_CMAP = "RdBu"
#: Colour map of the attention patterns.
ATTENTION_CMAP = "Blues"
#: Colour-bar label of every effect heatmap (on the bar: in two lines).
COLORBAR_LABEL = "normalised logit difference (0 = corrupted, 1 = clean)"
_BAR_LABEL = "normalised logit difference\n(0 = corrupted, 1 = clean)"
#: Display names of the methods.
METHOD_LABELS = {"exact": "exact patching", "atp": "AtP", "atp-star": "AtP*"}
#: Fill of a cell without a value.
MISSING_FILL = "#e9ebef"
#: The effect colour scale spans at least ± this around the baseline (noise stays pale).
MIN_EFFECT_SCALE = 0.05
#: Components named in the scatter and bars of the DLA chart.
TOP_SCATTER = 10
TOP_DLA = 15
#: Characters of a token label on an attention axis, of a component name by the scatter.
TOKEN_CHARS = 14
NAME_CHARS = 22


# ---------------------------------------------------------------------- protocols
class EffectsLike(Protocol):
    """One method's effects, as the figures read them (an
    :class:`~interp.circuits.results.Effects`)."""

    @property
    def method(self) -> str:
        """``"exact"``, ``"atp"`` or ``"atp-star"``."""
        ...

    @property
    def mean(self) -> Tensor:
        """Mean normalised effect over pairs, ``[layers, ...]`` (the component axes)."""
        ...

    @property
    def ci95(self) -> Tensor:
        """95% CI of that mean over pairs, ``[layers, ..., 2]``."""
        ...


class AgreementLike(Protocol):
    """An approximation's agreement with the exact effects (an
    :class:`~interp.circuits.results.Agreement`)."""

    @property
    def method(self) -> str:
        """The approximation: ``"atp"`` or ``"atp-star"``."""
        ...

    @property
    def spearman(self) -> float:
        """Spearman's rank correlation of its mean effects with the exact ones."""
        ...

    @property
    def spearman_ci95(self) -> list[float]:
        """Bootstrap 95% CI of that correlation over pairs, ``[lo, hi]``."""
        ...


class PatchLike(Protocol):
    """What the patching figures read (a :class:`~interp.circuits.results.PatchResult`)."""

    @property
    def family(self) -> str:
        """The component family: ``resid``, ``attn``, ``mlp`` or ``heads``."""
        ...

    @property
    def layers(self) -> list[int]:
        """The patched layers (the rows of every heatmap)."""
        ...

    @property
    def positions(self) -> list[str] | None:
        """Position labels of the position families (None for ``heads`` without
        ``per_position``)."""
        ...

    @property
    def heads(self) -> list[int] | None:
        """The patched heads (``heads`` family only, else None)."""
        ...

    @property
    def baseline(self) -> float:
        """The effect of no patching: 0 when denoising, 1 when noising."""
        ...

    @property
    def exact(self) -> EffectsLike | None:
        """The exact patching effects, if computed."""
        ...

    @property
    def atp(self) -> EffectsLike | None:
        """Attribution patching's estimate, if computed."""
        ...

    @property
    def atp_star(self) -> EffectsLike | None:
        """AtP*'s estimate, if computed."""
        ...

    @property
    def embed_effect(self) -> Tensor | None:
        """Effect of patching the embeddings, ``[pairs, positions]`` (None if not measured)."""
        ...

    def component_names(self) -> list[str]:
        """Flat names of the components, in ``primary.mean.flatten()`` order."""
        ...


class DLALike(Protocol):
    """What :func:`dla_bars` reads (a :class:`~interp.circuits.results.DLAResult`)."""

    @property
    def heads(self) -> Tensor:
        """Per-head direct logit attribution, ``[pairs, layers, heads]``."""
        ...

    @property
    def mlp(self) -> Tensor:
        """Per-MLP direct logit attribution, ``[pairs, layers]``."""
        ...

    @property
    def embed(self) -> Tensor:
        """The embeddings' direct logit attribution, ``[pairs]``."""
        ...


class AttentionLike(Protocol):
    """What :func:`attention_heatmap` reads (an ``AttentionResult``)."""

    @property
    def tokens(self) -> list[str]:
        """The prompt's tokens as text (the axes' labels)."""
        ...

    @property
    def layer(self) -> int:
        """The layer the heads belong to."""
        ...

    @property
    def heads(self) -> list[int]:
        """The heads shown, in ``patterns`` order."""
        ...

    @property
    def patterns(self) -> Tensor:
        """Attention weights, ``[heads, query, key]``."""
        ...


# ------------------------------------------------------------------------ numbers
def fmt_effect(x: float | None, digits: int = 3) -> str:
    """A number for labels, tables and tooltips, fixed decimals: ``0.512``, ``−0.040``,
    ``0.000`` (never ``−0.000``), ``—`` when missing."""
    if x is None or not math.isfinite(x):
        return format_number(x)
    if round(x, digits) == 0:
        x = 0.0
    return f"{x:.{digits}f}".replace("-", "−")


#: A 95% interval of effects: ``[0.512, 0.601]``, ``—`` when unknown.
effect_ci = partial(ci_text, fmt=fmt_effect)


def within_noise(lo: float, hi: float, baseline: float) -> bool:
    """Whether a 95% interval ``[lo, hi]`` contains the baseline (no interval: False)."""
    return math.isfinite(lo) and math.isfinite(hi) and lo <= baseline <= hi


def _plain(text: str) -> str:
    """Text matplotlib must not read as mathtext (a ``$`` would start a formula)."""
    return str(text).replace("$", r"\$")


def token_label(text: str, max_chars: int = TOKEN_CHARS) -> str:
    """A token as an axis label: :func:`~interp.display.visible_token` (whitespace as
    ``␣``, ``↵``; control characters as ``\\xNN``; ``∅`` for the empty string), cut to
    ``max_chars`` with an ellipsis."""
    shown = visible_token(text)
    if len(shown) > max_chars:
        shown = shown[: max(1, max_chars - 1)] + "…"
    return shown


def _grid_ax(ax: Axes) -> None:
    ax.grid(False)
    for side in ("left", "bottom"):
        ax.spines[side].set_visible(False)
    ax.tick_params(length=0)


# ----------------------------------------------------------------- effect heatmaps
def effect_methods(result: PatchLike) -> list[EffectsLike]:
    """The methods a run holds, in the order exact, AtP, AtP*."""
    return [e for e in (result.exact, result.atp, result.atp_star) if e is not None]


def _effects(result: PatchLike, method: str | None) -> EffectsLike:
    present = effect_methods(result)
    if not present:
        raise InterpError("the patching result holds no effects to draw")
    if method is None:
        return present[0]
    for e in present:
        if e.method == method:
            return e
    raise InterpError(f"the patching result has no {method!r} effects: it has "
                      f"{', '.join(e.method for e in present)}")


def _pair_ci(per_pair: Tensor) -> tuple[Tensor, Tensor]:
    """Mean over pairs (dim 0) and its normal-approximation 95% interval (NaN for one
    pair), the rule of :func:`interp.circuits.results.ci95_over_pairs`."""
    x = per_pair.to(torch.float64)
    mean = x.mean(0)
    if x.shape[0] < 2:
        nan = torch.full_like(mean, math.nan)
        return mean, torch.stack([nan, nan], -1)
    half = Z95 * x.std(0, unbiased=True) / math.sqrt(x.shape[0])
    return mean, torch.stack([mean - half, mean + half], -1)


def _is_primary(result: PatchLike, eff: EffectsLike) -> bool:
    return effect_methods(result)[0] is eff


def _columns(result: PatchLike) -> tuple[str, list[str]]:
    """(axis name, labels) of the columns of a 2-D effect heatmap."""
    if result.family == "heads":
        return "head", [str(h) for h in result.heads or []]
    return "position", [str(p) for p in result.positions or []]


def _embed_row(result: PatchLike, eff: EffectsLike) -> tuple[Tensor, Tensor] | None:
    """The embedding row (mean, ci) drawn above layer 0 of the primary method's map."""
    emb = result.embed_effect
    if emb is None or result.family == "heads" or not _is_primary(result, eff):
        return None
    return _pair_ci(emb)


def _grid(result: PatchLike, eff: EffectsLike) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(row labels, mean [rows, cols], ci [rows, cols, 2]) of a 2-D effect heatmap."""
    mean = eff.mean.to(torch.float64).cpu().numpy()
    ci = eff.ci95.to(torch.float64).cpu().numpy()
    rows = [str(x) for x in result.layers]
    emb = _embed_row(result, eff)
    if emb is not None:
        mean = np.concatenate([emb[0].cpu().numpy()[None], mean])
        ci = np.concatenate([emb[1].cpu().numpy()[None], ci])
        rows = ["embed", *rows]
    return rows, mean, ci


def effect_scale(result: PatchLike, method: str | None = None) -> tuple[float, float]:
    """(vmin, vmax) of an effect heatmap: symmetric around the baseline."""
    eff = _effects(result, method)
    values = eff.mean.to(torch.float64).flatten()
    emb = _embed_row(result, eff)
    if emb is not None:
        values = torch.cat([values, emb[0].flatten()])
    finite = values[torch.isfinite(values)]
    span = float((finite - result.baseline).abs().max()) if finite.numel() else 0.0
    span = max(span, MIN_EFFECT_SCALE)
    return result.baseline - span, result.baseline + span


def _label(result: PatchLike, eff: EffectsLike) -> str:
    return METHOD_LABELS.get(eff.method, eff.method)


def _colorbar(fig: Figure, ax: Axes | list[Axes], norm: Normalize, cmap_name: str, label: str,
              n_rows: int) -> None:
    bar = fig.colorbar(ScalarMappable(norm, colormap(cmap_name)), ax=ax, fraction=0.05,
                       pad=0.02, aspect=max(8, min(40, 2 * n_rows)))
    bar.set_label(label, fontsize=8.5)
    bar.outline.set_visible(False)


@styled
def effect_heatmap(result: PatchLike, method: str | None = None) -> Figure:
    """Mean effect of ``method`` (``"exact"``, ``"atp"``, ``"atp-star"``; default the
    primary one) by layer and position (or head); see the module docstring."""
    eff = _effects(result, method)
    if result.family == "heads" and eff.mean.ndim == 3:
        return _per_position_heatmap(result, eff)
    rows, mean, _ = _grid(result, eff)
    xname, cols = _columns(result)
    n_r, n_c = len(rows), len(cols)
    if not n_r or not n_c or mean.shape != (n_r, n_c):
        raise InterpError(f"effects of shape {tuple(mean.shape)} do not match {n_r} rows × "
                          f"{n_c} {xname}s")
    vmin, vmax = effect_scale(result, eff.method)
    cmap, norm = colormap(EFFECT_CMAP), Normalize(vmin, vmax)
    long_labels = max(len(c) for c in cols) > 4 or n_c > 12
    fig = new_figure(min(2.6 + 0.55 * max(n_c, 3), 11.0),
                     1.5 + 0.24 * max(n_r, 7) + (0.5 if long_labels else 0.0))
    ax = fig.subplots()
    _grid_ax(ax)
    for i in range(n_r):
        for j in range(n_c):
            v = float(mean[i, j])
            fill = to_rgb(cmap(norm(v))) if math.isfinite(v) else to_rgb(MISSING_FILL)
            ax.add_patch(Rectangle((j, i), 1, 1, facecolor=fill, edgecolor="white",
                                   linewidth=0.6, gid=f"cell-{i}-{j}"))
    ax.set_xlim(0, n_c)
    ax.set_ylim(n_r, 0)  # layer 0 (or the embeddings) on top
    ax.set_xticks([j + 0.5 for j in range(n_c)], labels=[_plain(c) for c in cols],
                  rotation=45 if long_labels else 0, ha="right" if long_labels else "center",
                  rotation_mode="anchor")
    step = 1 if n_r <= 16 else 2
    first = 1 if rows[0] == "embed" else 0  # label embed, then every step-th layer from 0
    ticks = [i for i in range(n_r) if i < first or (i - first) % step == 0]
    ax.set_yticks([i + 0.5 for i in ticks], labels=[rows[i] for i in ticks])
    ax.set_xlabel(xname)
    ax.set_ylabel("layer")
    ax.set_title(f"{_label(result, eff)}: {result.family}", loc="left")
    _colorbar(fig, ax, norm, EFFECT_CMAP, _BAR_LABEL, n_r)
    return fig


def _per_position_heatmap(result: PatchLike, eff: EffectsLike) -> Figure:
    mean = eff.mean.to(torch.float64).cpu().numpy()  # [layers, heads, positions]
    positions = [str(p) for p in result.positions or []]
    heads = [str(h) for h in result.heads or []]
    n_l, n_h, n_p = mean.shape
    if n_l != len(result.layers) or n_h != len(heads) or n_p != len(positions):
        raise InterpError(f"effects of shape {tuple(mean.shape)} do not match "
                          f"{len(result.layers)} layers × {len(heads)} heads × "
                          f"{len(positions)} positions")
    vmin, vmax = effect_scale(result, eff.method)
    cmap, norm = colormap(EFFECT_CMAP), Normalize(vmin, vmax)
    cmap = cmap.with_extremes(bad=MISSING_FILL)
    n_cols = min(4, n_p)
    n_rows = math.ceil(n_p / n_cols)
    panel_w, panel_h = 0.8 + 0.2 * n_h, 0.9 + 0.14 * n_l
    fig = new_figure(min(1.2 + n_cols * panel_w, 11.5), 0.9 + n_rows * panel_h)
    axes = np.atleast_1d(fig.subplots(n_rows, n_cols, squeeze=False)).ravel().tolist()
    step = 1 if n_l <= 12 else (2 if n_l <= 24 else 4)
    for k, ax in enumerate(axes):
        if k >= n_p:
            ax.set_visible(False)
            continue
        _grid_ax(ax)
        ax.imshow(np.ma.masked_invalid(mean[:, :, k]), cmap=cmap, norm=norm, aspect="auto",
                  interpolation="nearest", extent=(0, n_h, n_l, 0))
        ax.set_xticks([j + 0.5 for j in range(n_h)], labels=heads, fontsize=7)
        ax.set_yticks([i + 0.5 for i in range(0, n_l, step)],
                      labels=[str(x) for x in result.layers[::step]], fontsize=7)
        if k % n_cols:
            ax.tick_params(labelleft=False)
        else:
            ax.set_ylabel("layer")
        if k // n_cols == n_rows - 1 or k + n_cols >= n_p:
            ax.set_xlabel("head")
        ax.set_title(_plain(f"@ {positions[k]}"), loc="left", fontsize=9)
    fig.suptitle(f"{_label(result, eff)}: heads, per position", x=0.02, ha="left",
                 fontsize=10.5, fontweight="bold")
    _colorbar(fig, [a for a in axes if a.get_visible()], norm, EFFECT_CMAP, _BAR_LABEL,
              n_rows * n_l)
    return fig


def effect_titles(result: PatchLike, method: str | None = None) -> dict[str, str]:
    """Hover text of every cell of :func:`effect_heatmap`, by gid (none for the
    per-position small multiples, which are images)."""
    eff = _effects(result, method)
    if result.family == "heads" and eff.mean.ndim == 3:
        return {}
    rows, mean, ci = _grid(result, eff)
    xname, cols = _columns(result)
    out: dict[str, str] = {}
    for i, row in enumerate(rows):
        where_row = "embeddings" if row == "embed" else f"layer {row}"
        for j, col in enumerate(cols):
            lo, hi = float(ci[i, j, 0]), float(ci[i, j, 1])
            tip = (f"{where_row} · {xname} {col}\n{_label(result, eff)}: "
                   f"{fmt_effect(float(mean[i, j]))} (95% CI {effect_ci(lo, hi)})")
            if within_noise(lo, hi, result.baseline):
                tip += f"\nwithin noise: the interval contains the baseline " \
                       f"{fmt_effect(result.baseline)}"
            out[f"cell-{i}-{j}"] = tip
    return out


# ---------------------------------------------------------------- agreement scatter
def agreement_effects(result: PatchLike, agreement: AgreementLike) -> EffectsLike:
    """The approximation an agreement compares to the exact effects."""
    for eff in (result.atp, result.atp_star):
        if eff is not None and eff.method == agreement.method:
            return eff
    raise InterpError(f"the patching result has no {agreement.method!r} effects")


def _top_exact(result: PatchLike, k: int = TOP_SCATTER) -> list[int]:
    if result.exact is None:
        raise InterpError("an agreement needs the exact effects")
    eff = result.exact.mean.to(torch.float64).flatten()
    score = torch.nan_to_num((eff - result.baseline).abs(), nan=-1.0)
    return [int(i) for i in torch.argsort(score, descending=True, stable=True)[:k]]


#: Vertical gap between two component names beside the scatter (axes fraction).
_NAME_GAP = 0.055


def _name_points(ax: Axes, result: PatchLike, x: np.ndarray, y: np.ndarray, ok: np.ndarray,
                 names: list[str], lo: float, hi: float) -> None:
    """Mark the exact top components and name them in a column right of the axes, each
    joined to its point by a thin line (names never overlap, however close the points)."""
    top = [(rank, idx) for rank, idx in enumerate(_top_exact(result)) if ok[idx]]
    top.sort(key=lambda t: -float(y[t[1]]))
    span = hi - lo or 1.0
    slots: list[float] = []
    for _, idx in top:  # from the highest point down, at least _NAME_GAP apart
        want = (float(y[idx]) - lo) / span
        slots.append(min(want, slots[-1] - _NAME_GAP) if slots else min(want, 1.0))
    shift = max(0.0, -min(slots, default=0.0))
    for (rank, idx), slot in zip(top, slots, strict=True):
        ax.plot([x[idx]], [y[idx]], marker="o", markersize=5, color=ACCENT, linestyle="none",
                zorder=3, gid=f"top-{rank}")
        ax.annotate(_plain(f"{rank + 1}. {token_label(names[idx], NAME_CHARS)}"),
                    (float(x[idx]), float(y[idx])),
                    xytext=(1.03, slot + shift), textcoords="axes fraction", fontsize=7.5,
                    color=ACCENT, ha="left", va="center", annotation_clip=False,
                    arrowprops={"arrowstyle": "-", "color": ACCENT, "linewidth": 0.5,
                                "alpha": 0.5, "shrinkA": 0, "shrinkB": 3})


@styled
def agreement_scatter(result: PatchLike, agreement: AgreementLike) -> Figure:
    """An approximation's mean effect (x) against the exact one (y), one point per
    component, the y = x line, the exact top-10 components named."""
    approx = agreement_effects(result, agreement)
    if result.exact is None:
        raise InterpError("an agreement needs the exact effects")
    x = approx.mean.to(torch.float64).flatten().cpu().numpy()
    y = result.exact.mean.to(torch.float64).flatten().cpu().numpy()
    names = result.component_names()
    if not (len(x) == len(y) == len(names)):
        raise InterpError(f"{len(x)} approximate, {len(y)} exact effects and {len(names)} "
                          "component names do not match")
    fig = new_figure(5.5, 4.2)  # two fit side by side in a report card
    engine = fig.get_layout_engine()
    if isinstance(engine, ConstrainedLayoutEngine):  # room for the names right of the axes
        engine.set(rect=(0.0, 0.0, 0.72, 1.0))
    ax = fig.subplots()
    ok = np.isfinite(x) & np.isfinite(y)
    ax.scatter(x[ok], y[ok], s=9, color=MUTED, alpha=0.55, linewidths=0, zorder=2)
    vals = np.concatenate([x[ok], y[ok], [result.baseline]])
    lo, hi = float(vals.min()), float(vals.max())
    pad = 0.05 * (hi - lo or 1.0)
    lo, hi = lo - pad, hi + pad
    ax.plot([lo, hi], [lo, hi], color=INK, linewidth=0.9, linestyle="--", alpha=0.6, zorder=1)
    ax.axhline(result.baseline, color=MUTED, linewidth=0.6, alpha=0.5, zorder=0)
    ax.axvline(result.baseline, color=MUTED, linewidth=0.6, alpha=0.5, zorder=0)
    _name_points(ax, result, x, y, ok, names, lo, hi)
    ax.set_xlim(lo, hi)  # the same range on both axes: y = x is the box's diagonal
    ax.set_ylim(lo, hi)
    label = METHOD_LABELS.get(agreement.method, agreement.method)
    ci = agreement.spearman_ci95
    ci_text = (f" [{fmt_effect(ci[0], 2)}, {fmt_effect(ci[1], 2)}]"
               if len(ci) == 2 and all(math.isfinite(c) for c in ci) else "")
    ax.set_title(f"{label} vs exact: Spearman ρ = {fmt_effect(agreement.spearman, 2)}{ci_text}",
                 loc="left")
    ax.set_xlabel(f"{label} estimate (normalised LD)")
    ax.set_ylabel("exact effect (normalised LD)")
    return fig


def agreement_titles(result: PatchLike, agreement: AgreementLike) -> dict[str, str]:
    """Hover text of the named points of :func:`agreement_scatter`, by gid."""
    approx = agreement_effects(result, agreement)
    assert result.exact is not None
    x = approx.mean.to(torch.float64).flatten()
    y = result.exact.mean.to(torch.float64).flatten()
    names = result.component_names()
    label = METHOD_LABELS.get(agreement.method, agreement.method)
    out = {}
    for rank, idx in enumerate(_top_exact(result)):
        if math.isfinite(float(x[idx])) and math.isfinite(float(y[idx])):
            out[f"top-{rank}"] = (f"{names[idx]} (exact rank {rank + 1})\nexact: "
                                  f"{fmt_effect(float(y[idx]))}\n{label}: "
                                  f"{fmt_effect(float(x[idx]))}")
    return out


# ------------------------------------------------------------------------- DLA
def _mean_ci(x: Tensor) -> tuple[np.ndarray, np.ndarray]:
    mean, ci = _pair_ci(x)
    return mean.cpu().numpy(), ci.cpu().numpy()


def dla_components(dla: DLALike, layers: Sequence[int], heads: Sequence[int],
                   k: int = TOP_DLA) -> list[tuple[str, float, float, float]]:
    """The ``k`` DLA components (heads ``L5H3``, ``MLP5``, ``embed``) of largest ``|mean|``:
    ``(name, mean, lo, hi)``, largest first."""
    hm, hci = _mean_ci(dla.heads)
    mm, mci = _mean_ci(dla.mlp)
    em, eci = _mean_ci(dla.embed)
    items: list[tuple[str, float, float, float]] = [
        ("embed", float(em), float(eci[0]), float(eci[1]))]
    for i, layer in enumerate(layers):
        for j, h in enumerate(heads):
            items.append((f"L{layer}H{h}", float(hm[i, j]), float(hci[i, j, 0]),
                          float(hci[i, j, 1])))
        items.append((f"MLP{layer}", float(mm[i]), float(mci[i, 0]), float(mci[i, 1])))
    finite = [it for it in items if math.isfinite(it[1])]
    return sorted(finite, key=lambda it: -abs(it[1]))[:k]


def _check_dla(dla: DLALike, layers: Sequence[int], heads: Sequence[int]) -> None:
    shape = tuple(dla.heads.shape)
    if len(shape) != 3 or shape[1] != len(layers) or shape[2] != len(heads):
        raise InterpError(f"DLA heads of shape {shape} do not match {len(layers)} layers × "
                          f"{len(heads)} heads")


@styled
def dla_bars(dla: DLALike, layers: Sequence[int], heads: Sequence[int]) -> Figure:
    """DLA of the clean runs' logit difference: a layer × (heads, MLP) heatmap of the mean
    contributions, and the 15 largest components with their 95% intervals."""
    _check_dla(dla, layers, heads)
    hm, _ = _mean_ci(dla.heads)
    mm, _ = _mean_ci(dla.mlp)
    grid = np.concatenate([hm, mm[:, None]], axis=1)  # [layers, heads + 1]
    n_l, n_c = grid.shape
    finite = grid[np.isfinite(grid)]
    span = max(float(np.abs(finite).max()) if finite.size else 0.0, 1e-3)
    cmap, norm = colormap(DLA_CMAP), Normalize(-span, span)
    top = dla_components(dla, layers, heads)
    height = max(3.6, 1.4 + 0.2 * max(n_l, len(top)))
    fig = new_figure(min(4.6 + 0.32 * n_c + 3.6, 11.5), height)
    ax, bx = fig.subplots(1, 2, width_ratios=[max(n_c, 4) * 0.32 + 1.2, 4.4])
    _grid_ax(ax)
    for i in range(n_l):
        for j in range(n_c):
            v = float(grid[i, j])
            fill = to_rgb(cmap(norm(v))) if math.isfinite(v) else to_rgb(MISSING_FILL)
            ax.add_patch(Rectangle((j + (0.3 if j == n_c - 1 else 0.0), i), 1, 1,
                                   facecolor=fill, edgecolor="white", linewidth=0.6,
                                   gid=f"cell-{i}-{j}"))
    ax.set_xlim(0, n_c + 0.3)
    ax.set_ylim(n_l, 0)
    labels = [str(h) for h in heads] + ["MLP"]
    ax.set_xticks([j + 0.5 + (0.3 if j == n_c - 1 else 0.0) for j in range(n_c)],
                  labels=labels, fontsize=7.5, rotation=90 if n_c > 16 else 0)
    step = 1 if n_l <= 16 else 2
    ax.set_yticks([i + 0.5 for i in range(0, n_l, step)],
                  labels=[str(x) for x in list(layers)[::step]])
    ax.set_xlabel("head")
    ax.set_ylabel("layer")
    ax.set_title("Mean DLA by layer and head", loc="left")
    _colorbar(fig, ax, norm, DLA_CMAP, "logit difference (nats)", n_l)
    bx.set_axisbelow(True)
    ys = list(range(len(top)))
    for k, (_, m, lo, hi) in enumerate(top):
        err = None
        if math.isfinite(lo) and math.isfinite(hi):
            err = [[max(m - lo, 0.0)], [max(hi - m, 0.0)]]
        bar = bx.barh(ys[k], m, height=0.7, color=ACCENT if m >= 0 else "#c92a2a", xerr=err,
                      error_kw={"elinewidth": 1.0, "capsize": 2, "ecolor": INK})
        bar.patches[0].set_gid(f"bar-{k}")
    bx.set_yticks(ys, [_plain(t[0]) for t in top], fontsize=8)
    bx.set_ylim(len(top) - 0.5, -0.5)  # the largest on top
    bx.axvline(0.0, color=INK, linewidth=0.7)
    bx.grid(axis="y", visible=False)
    bx.set_xlabel("contribution to the logit difference (nats)")
    bx.set_title(f"Top {len(top)} components by |mean|", loc="left")
    return fig


def dla_titles(dla: DLALike, layers: Sequence[int], heads: Sequence[int]) -> dict[str, str]:
    """Hover texts of :func:`dla_bars`, by gid (``cell-I-J``, ``bar-K``)."""
    _check_dla(dla, layers, heads)
    hm, hci = _mean_ci(dla.heads)
    mm, mci = _mean_ci(dla.mlp)
    out: dict[str, str] = {}
    for i, layer in enumerate(layers):
        for j, h in enumerate(heads):
            out[f"cell-{i}-{j}"] = (f"L{layer}H{h}: {fmt_effect(float(hm[i, j]))} nats "
                                    f"(95% CI {effect_ci(*hci[i, j].tolist())})")
        out[f"cell-{i}-{len(heads)}"] = (f"MLP{layer}: {fmt_effect(float(mm[i]))} nats "
                                         f"(95% CI {effect_ci(*mci[i].tolist())})")
    for k, (name, m, lo, hi) in enumerate(dla_components(dla, layers, heads)):
        out[f"bar-{k}"] = f"{name}: {fmt_effect(m)} nats (95% CI {effect_ci(lo, hi)})"
    return out


# -------------------------------------------------------------------- attention
@styled
def attention_heatmap(result: AttentionLike, index: int = 0) -> Figure:
    """The attention pattern of ``result.heads[index]``: queries as rows (top to bottom),
    keys as columns, weights on a square-root colour scale; above the diagonal (the
    future, never attended) in grey."""
    pat = result.patterns
    n = len(result.tokens)
    if pat.ndim != 3 or tuple(pat.shape[1:]) != (n, n):
        raise InterpError(f"attention patterns of shape {tuple(pat.shape)} do not match "
                          f"{n} tokens")
    if not 0 <= index < len(result.heads):
        raise InterpError(f"no head at index {index}: the result has {len(result.heads)}")
    w = pat[index].to(torch.float64).cpu().numpy()
    future = np.triu(np.ones((n, n), dtype=bool), k=1)
    shown = np.ma.masked_array(w, mask=future | ~np.isfinite(w))
    cmap = colormap(ATTENTION_CMAP).with_extremes(bad=MISSING_FILL)
    norm = PowerNorm(0.5, vmin=0.0, vmax=1.0)
    side = min(max(3.2, 1.6 + 0.2 * n), 15.0)
    fig = new_figure(side + 1.1, side)
    ax = fig.subplots()
    _grid_ax(ax)
    ax.imshow(shown, cmap=cmap, norm=norm, interpolation="nearest", aspect="equal",
              extent=(0, n, n, 0))
    step = max(1, math.ceil(n / 60))
    size = 8 if n <= 24 else (7 if n <= 48 else 6)
    ticks = list(range(0, n, step))
    labels = [_plain(f"{token_label(result.tokens[i])} {i}") for i in ticks]
    ax.set_xticks([i + 0.5 for i in ticks], labels=labels, rotation=90, fontsize=size,
                  family="DejaVu Sans Mono")
    ax.set_yticks([i + 0.5 for i in ticks], labels=labels, fontsize=size,
                  family="DejaVu Sans Mono")
    ax.set_xlabel("key (attended token)")
    ax.set_ylabel("query")
    ax.set_title(f"L{result.layer}H{result.heads[index]}", loc="left")
    bar = fig.colorbar(ScalarMappable(norm, cmap), ax=ax, fraction=0.04, pad=0.02)
    bar.set_label("attention weight (√ scale)", fontsize=8.5)
    bar.outline.set_visible(False)
    return fig


def attention_heatmaps(result: AttentionLike) -> list[Figure]:
    """:func:`attention_heatmap` of every head of ``result``, in its order."""
    return [attention_heatmap(result, i) for i in range(len(result.heads))]



# ------------------------------------------------------------------------ groups
class GroupComparisonLike(Protocol):
    """One component across the groups (a :class:`~interp.circuits.results.GroupComparison`)."""

    @property
    def component(self) -> str: ...
    @property
    def mean(self) -> Sequence[float]: ...
    @property
    def ci95(self) -> Sequence[Sequence[float] | None]: ...
    @property
    def differs(self) -> bool: ...
    @property
    def kind(self) -> str: ...
    @property
    def p_holm(self) -> float | None: ...


class GroupEffectsLike(Protocol):
    """Per-group effects (a :class:`~interp.circuits.results.GroupEffects`)."""

    @property
    def column(self) -> str: ...
    @property
    def groups(self) -> Sequence[str]: ...
    @property
    def n_pairs(self) -> Sequence[int]: ...
    @property
    def method(self) -> str: ...
    @property
    def baseline(self) -> float: ...
    @property
    def components(self) -> Sequence[GroupComparisonLike]: ...


#: at most this many groups get their own colour and row offset; more are left out
MAX_GROUPS = len(PALETTE)


@styled
def group_forest(g: GroupEffectsLike) -> Figure:
    """Each looked-at component's mean effect per group (dot) with its 95% interval,
    one row per component, the groups side by side in their colours; the components
    whose groups differ beyond the noise are named in bold and marked (sign or size);
    the baseline is the dashed line."""
    comps = g.components
    groups = g.groups[:MAX_GROUPS]
    n = max(len(comps), 1)
    fig = new_figure(7.2, max(2.6, 1.3 + 0.3 * n))
    ax = fig.subplots()
    ax.set_axisbelow(True)
    spread = 0.6 / max(len(groups), 1)
    for j, name in enumerate(groups):
        colour = PALETTE[j % len(PALETTE)]
        off = (j - (len(groups) - 1) / 2) * spread
        for i, c in enumerate(comps):
            m, ci = c.mean[j], c.ci95[j]
            err = None
            if ci is not None and all(math.isfinite(v) for v in ci):
                err = [[max(m - ci[0], 0.0)], [max(ci[1] - m, 0.0)]]
            mark = ax.errorbar(m, i + off, xerr=err, fmt="o", color=colour, markersize=4,
                               elinewidth=1.1, capsize=2,
                               label=_plain(f"{name} (n = {g.n_pairs[j]})") if i == 0
                               else None)
            mark.lines[0].set_gid(f"dot-{i}-{j}")
    ax.axvline(g.baseline, color=MUTED, linewidth=0.9, linestyle="--")
    labels = [_plain(c.component + (f"  ({c.kind})" if c.differs else "")) for c in comps]
    ax.set_yticks(range(len(comps)), labels, fontsize=8)
    for tick, c in zip(ax.get_yticklabels(), comps, strict=True):
        if c.differs:
            tick.set_fontweight("bold")
            tick.set_color("#c92a2a")
    ax.set_ylim(len(comps) - 0.5, -0.5)
    ax.grid(axis="y", visible=False)
    ax.set_xlabel(f"{g.method} effect (0 = corrupted, 1 = clean)")
    ax.set_title(f"Effect by {_plain(g.column)}", loc="left")
    if groups:
        fig.legend(loc="outside lower center", ncols=min(len(groups), 4), fontsize=7.5,
                   frameon=False, title=_plain(g.column), title_fontsize=7.5)
    return fig


def group_titles(g: GroupEffectsLike) -> dict[str, str]:
    """Hover texts of :func:`group_forest`, by gid (``dot-I-J``)."""
    out: dict[str, str] = {}
    for i, c in enumerate(g.components):
        p = "" if c.p_holm is None else f"; groups differ: Holm p = {c.p_holm:.2g}"
        for j, name in enumerate(g.groups[:MAX_GROUPS]):
            ci = c.ci95[j]
            interval = (f" (95% CI {effect_ci(ci[0], ci[1])})" if ci is not None
                        else " (one pair)")
            out[f"dot-{i}-{j}"] = (f"{c.component}, {g.column} {name}: "
                                   f"{fmt_effect(c.mean[j])}{interval}{p}")
    return out
