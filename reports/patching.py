"""The activation-patching HTML report (``interp patch``): which components carry a task.

Input is the :class:`~interp.circuits.results.PatchResult` of a patching run (its
manifest included). The page is ``templates/patching.html.j2``; the figures come from
:mod:`interp.circuits.figures`. The lead states the task, the pairs used and the clean
and corrupted logit differences; then the top-10 components (effect ± 95% CI, "within
noise" when the interval contains the baseline), the effect heatmaps (one per method),
the AtP agreement (table and scatter), direct logit attribution, and the attention
patterns of the top heads (each with an anchor ``attn-L{layer}H{head}``). Every string
is escaped; missing numbers show as "—".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch
from markupsafe import Markup

from interp.circuits.figures import (
    COLORBAR_LABEL,
    METHOD_LABELS,
    agreement_scatter,
    agreement_titles,
    attention_heatmap,
    dla_bars,
    dla_components,
    dla_titles,
    effect_ci,
    effect_heatmap,
    effect_scale,
    effect_titles,
    fmt_effect,
    group_forest,
    group_titles,
    within_noise,
)
from interp.circuits.results import (
    AttentionResult,
    Effects,
    GroupEffects,
    PatchResult,
    ci95_over_pairs,
)
from interp.display import with_ci
from interp.stats.intervals import mean_ci
from reports.attention import top_keys
from reports.html import Report, ReportFigure, render_page, token_html, warnings_box

__all__ = ["attention_anchor", "group_rows", "patching_report"]

#: Components in the top table.
TOP_K = 10

_DIRECTION = {
    "denoise": "denoising: clean activations patched into the corrupted run",
    "noise": "noising: corrupted activations patched into the clean run",
}
_FAMILY = {
    "resid": "the residual stream after each block, at one position",
    "attn": "each block's attention output, at one position",
    "mlp": "each block's MLP output, at one position",
    "heads": "each attention head's output (hook_z)",
}


def attention_anchor(layer: int, head: int) -> str:
    """The HTML anchor of a head's attention pattern on the page."""
    return f"attn-L{layer}H{head}"


#: Recalls, two decimals.
fmt2 = partial(fmt_effect, digits=2)


def _ld(values: list[float]) -> tuple[str, str]:
    mean, lo, hi = mean_ci(values)
    return fmt_effect(mean), effect_ci(lo, hi)


def _methods(r: PatchResult) -> list[Effects]:
    """The methods the run holds, in the order exact, AtP, AtP*."""
    return [e for e in (r.exact, r.atp, r.atp_star) if e is not None]


# ------------------------------------------------------------------------- lead
def _lead(r: PatchResult) -> Markup:
    t, main = r.task, r.primary
    clean, clean_ci = _ld(t.clean_ld)
    corr, corr_ci = _ld(t.corrupted_ld)
    text = (f"Task {t.name}: {t.n_used} of {t.n_read} pairs used"
            + (f" ({t.n_left_out} left out: {t.left_out_reason})" if t.n_left_out else "")
            + f". Clean logit difference {clean} nats (95% CI {clean_ci}), corrupted "
            f"{corr} (95% CI {corr_ci}). Effects are the normalised logit difference "
            f"(0 = corrupted, 1 = clean); the patched runs start from {fmt_effect(r.baseline)}.")
    top = _top_rows(r, 1)
    if top:
        row = top[0]
        text += (f" Largest effect ({METHOD_LABELS.get(main.method, main.method)}): "
                 f"{row['name']}, {row['effect']} (95% CI {row['ci']})")
        text += ", within noise." if row["noise"] else "."
    facts = r.headline().rows  # the facts a notebook shows, in the same words
    dl = Markup("").join(Markup("<div><dt>{}</dt><dd>{}</dd></div>").format(k, v)
                         for k, v in facts)
    return Markup('<p class="verdict">{}</p>{}<dl class="facts">{}</dl>').format(
        text, warnings_box(r.warnings), dl)


# ------------------------------------------------------------------- top table
def _flat(eff: Effects) -> tuple[torch.Tensor, torch.Tensor]:
    return eff.mean.flatten(), eff.ci95.reshape(-1, 2)


def _top_rows(r: PatchResult, k: int = TOP_K) -> list[dict[str, Any]]:
    names = r.component_names()
    index = {n: i for i, n in enumerate(names)}
    _, ci = _flat(r.primary)
    others = [e for e in _methods(r) if e is not r.primary]
    rows = []
    for rank, (name, effect) in enumerate(r.top_components(k)):
        i = index[name]
        lo, hi = float(ci[i, 0]), float(ci[i, 1])
        rows.append({
            "rank": rank + 1, "name": name, "effect": fmt_effect(effect), "ci": effect_ci(lo, hi),
            "importance": fmt_effect(abs(effect - r.baseline)),
            "noise": within_noise(lo, hi, r.baseline),
            "others": [fmt_effect(float(e.mean.flatten()[i])) for e in others],
        })
    return rows


def _split_half(r: PatchResult) -> Markup | None:
    """The stability sentence: the exact top-k of two disjoint halves of the pairs."""
    sh = r.split_half
    if sh is None:
        return None
    return Markup("Stability: the exact top {k} of the even-numbered pairs ({a}) and of the "
                  "odd-numbered pairs ({b}) share <strong>{o} of {k}</strong> components "
                  "(two random top-{k} sets would share {c} on average).").format(
        k=sh.k, a=sh.n_a, b=sh.n_b, o=sh.overlap, c=f"{sh.chance:.1f}")


def _split_rows(r: PatchResult) -> list[list[Any]]:
    sh = r.split_half
    if sh is None:
        return []
    n = max(len(sh.top_a), len(sh.top_b))
    pad = [None] * n
    return [[i + 1, Markup("<code>{}</code>").format(a) if a is not None else None,
             Markup("<code>{}</code>").format(b) if b is not None else None]
            for i, (a, b) in enumerate(zip([*sh.top_a, *pad][:n], [*sh.top_b, *pad][:n],
                                           strict=True))]


# --------------------------------------------------------------------- heatmaps
def _axis_text(r: PatchResult, eff: Effects) -> str:
    if r.family == "heads" and r.config.per_position:
        return ("One small heatmap per position (labelled by its role), layers as rows "
                "(layer 0 at the top), heads as columns, one colour scale for all.")
    cols = "heads" if r.family == "heads" else "prompt positions, labelled by role"
    embed = (" The top row (embed) patches the token embeddings."
             if r.embed_effect is not None and r.family != "heads" and eff is r.primary
             else "")
    return f"Layers as rows (layer 0 at the top), {cols} as columns.{embed}"


def _heatmap_caption(r: PatchResult, eff: Effects) -> str:
    lo, hi = effect_scale(r, eff.method)
    label = METHOD_LABELS.get(eff.method, eff.method)
    hover = "" if (r.family == "heads" and r.config.per_position) else \
        " Hover a cell for its mean, its 95% interval over pairs, and whether it is within noise."
    approx = (" A first-order estimate (gradient × activation difference), not a patched run."
              if eff.method in ("atp", "atp-star") else "")
    return (f"{label}: mean effect over {r.task.n_used} pairs. {_axis_text(r, eff)} Colour: "
            f"{COLORBAR_LABEL}, centred on the baseline {fmt_effect(r.baseline)} (white); blue "
            f"is closer to the clean run, red closer to the corrupted run; the scale spans "
            f"{fmt_effect(lo)} to {fmt_effect(hi)}.{approx}{hover}")


# -------------------------------------------------------------------- agreement
def _agreement_rows(r: PatchResult) -> list[list[Any]]:
    rows = []
    for a in r.agreement:
        speed = a.seconds_exact / a.seconds_approx if a.seconds_approx > 0 else math.nan
        rows.append([
            METHOD_LABELS.get(a.method, a.method), a.n_components,
            with_ci(a.spearman, a.spearman_ci95[0], a.spearman_ci95[1], fmt=fmt_effect),
            with_ci(a.recall_at_10, a.recall_at_10_ci95[0], a.recall_at_10_ci95[1], fmt=fmt2),
            with_ci(a.recall_at_30, a.recall_at_30_ci95[0], a.recall_at_30_ci95[1], fmt=fmt2),
            f"{a.tied_at_10} / {a.tied_at_30}",
            f"{a.seconds_exact:.1f} s", f"{a.seconds_approx:.1f} s",
            f"{speed:.1f}×" if math.isfinite(speed) else "—",
        ])
    return rows


# -------------------------------------------------------------------------- DLA
def _dla_axes(r: PatchResult) -> tuple[list[int], list[int]]:
    """DLA covers every layer and head of the model (it must sum to the logit difference)."""
    assert r.dla is not None
    _, n_layers, n_heads = r.dla.heads.shape
    return list(range(n_layers)), list(range(n_heads))


def _dla_summary(r: PatchResult) -> list[tuple[str, Any]]:
    assert r.dla is not None
    d = r.dla
    total, total_ci = ci95_over_pairs(d.total)
    embed, embed_ci = ci95_over_pairs(d.embed)
    const = d.constant
    summed, _ = ci95_over_pairs(d.heads.sum((1, 2)) + d.mlp.sum(1) + d.embed + const)
    rows: list[tuple[str, Any]] = [
        ("logit difference (model)", f"{fmt_effect(float(total))} nats "
                                     f"{effect_ci(float(total_ci[0]), float(total_ci[1]))}"),
        ("sum of the components" + (" and biases" if d.has_constant else ""),
         f"{fmt_effect(float(summed))} nats"),
        ("largest |sum − total| over pairs", f"{d.max_sum_error:.2e} nats"),
        ("embeddings", f"{fmt_effect(float(embed))} nats "
                       f"{effect_ci(float(embed_ci[0]), float(embed_ci[1]))}"),
    ]
    if d.has_constant:
        c, c_ci = ci95_over_pairs(const)
        rows.append(("biases (no component's)", f"{fmt_effect(float(c))} nats "
                     f"{effect_ci(float(c_ci[0]), float(c_ci[1]))}"))
    return [*rows, ("pairs", int(d.total.shape[0]))]


def _dla_rows(r: PatchResult) -> list[list[Any]]:
    assert r.dla is not None
    layers, heads = _dla_axes(r)
    return [[k + 1, name, fmt_effect(m), effect_ci(lo, hi)]
            for k, (name, m, lo, hi) in enumerate(dla_components(r.dla, layers, heads))]


# -------------------------------------------------------------------- attention
@dataclass
class _Head:
    layer: int
    head: int
    anchor: str
    figure: str
    width: int
    rows: list[list[Any]]
    n_tokens: int


def _attention(r: PatchResult, figures: dict[str, ReportFigure]) -> list[_Head]:
    out: list[_Head] = []
    seen: set[tuple[int, int]] = set()
    for a in r.attention:
        for i, h in enumerate(a.heads):
            if (a.layer, h) in seen:
                continue
            seen.add((a.layer, h))
            name = f"attn-l{a.layer}h{h}"
            fig = attention_heatmap(a, i)
            figures[name] = ReportFigure(fig, label=f"Attention pattern of L{a.layer}H{h}")
            out.append(_Head(a.layer, h, attention_anchor(a.layer, h), name,
                             round(fig.get_figwidth() * 96), _last_rows(a, i), len(a.tokens)))
    return out


def _last_rows(a: AttentionResult, index: int, n: int = 5) -> list[list[Any]]:
    """The last query's top keys: where the prediction's position looks."""
    q = len(a.tokens) - 1
    return [[k, token_html(a.tokens[k]), w] for k, w in top_keys(a, index, q, n)]


def _top_heads(r: PatchResult, heads: list[_Head]) -> list[list[Any]]:
    anchors = {(h.layer, h.head): h.anchor for h in heads}
    rows: list[list[Any]] = []
    listed = r.top_heads(r.config.top_heads) if r.family == "heads" else []
    if not listed:
        listed = [(h.layer, h.head) for h in heads]
    eff = r.primary.mean
    dla_mean = ci95_over_pairs(r.dla.heads)[0] if r.dla is not None else None
    for rank, (layer, head) in enumerate(listed):
        name = f"L{layer}H{head}"
        anchor = anchors.get((layer, head))
        link: Any = (Markup('<a href="#{}">{}</a>').format(anchor, name) if anchor else name)
        row: list[Any] = [rank + 1, link]
        if r.family == "heads":  # patching ranked the heads: show their importance
            importance = None
            if layer in r.layers and head in (r.heads or []):
                cell = eff[r.layers.index(layer), (r.heads or []).index(head)]
                importance = fmt_effect(float((cell - r.baseline).abs().sum()))
            row.append(importance)
        dla: Any = None
        if dla_mean is not None and layer < dla_mean.shape[0] and head < dla_mean.shape[1]:
            dla = fmt_effect(float(dla_mean[layer, head]))
        rows.append([*row, dla, "pattern below" if anchor else "not recorded"])
    return rows


# ----------------------------------------------------------------------- groups
def group_rows(groups: GroupEffects) -> list[list[Any]]:
    """One row per looked-at component: each group's mean [CI], Holm p, the verdict."""
    rows = []
    for c in groups.components:
        cells: list[Any] = [Markup("<code>{}</code>").format(c.component)]
        for m, ci in zip(c.mean, c.ci95, strict=True):
            cells.append(f"{fmt_effect(m)} {effect_ci(ci[0], ci[1])}" if ci is not None
                         else f"{fmt_effect(m)} (one pair)")
        cells.append(None if c.p_holm is None else f"{c.p_holm:.2g}")
        if c.differs:
            verdict: Any = Markup('<span class="badge warn" title="the groups\' means '
                                  'differ beyond the noise">differs in {}</span>').format(c.kind)
        elif c.p_value is None:
            verdict = "not tested"
        else:
            verdict = "alike within noise"
        rows.append([*cells, verdict])
    return rows


# ------------------------------------------------------------------------ setup
def _setup(r: PatchResult) -> list[tuple[str, Any]]:
    c, t = r.config, r.task
    rows: list[tuple[str, Any]] = [
        ("model", r.model_id or None), ("task", t.name), ("task file", t.source),
        ("task sha256", Markup("<code>{}</code>").format(t.sha256) if t.sha256 else None),
        ("family", f"{r.family}: {_FAMILY.get(r.family, r.family)}"),
        ("per position", "yes" if c.per_position else "no"),
        ("method", c.method), ("direction", _DIRECTION.get(c.direction, c.direction)),
        ("baseline", fmt_effect(r.baseline)),
        ("layers", ", ".join(str(x) for x in r.layers) or None),
        ("positions", ", ".join(r.positions) if r.positions else None),
        ("heads", ", ".join(str(h) for h in r.heads) if r.heads else None),
        ("pairs read / used / left out", f"{t.n_read} / {t.n_used} / {t.n_left_out}"),
        ("left out because", t.left_out_reason if t.n_left_out else None),
        ("minimum clean logit difference", c.min_gap), ("limit", c.limit),
        ("batch size", c.batch_size), ("bootstrap resamples", c.n_boot), ("seed", c.seed),
        ("groups", (f"by {r.groups.column}: " + ", ".join(
            f"{g} ({n})" for g, n in zip(r.groups.groups, r.groups.n_pairs, strict=True)))
         if r.groups is not None else f"none ({c.group_by})"),
    ]
    for e in _methods(r):
        rows.append((f"time, {METHOD_LABELS.get(e.method, e.method)}", f"{e.seconds:.1f} s"))
    return rows


def patching_report(result: PatchResult) -> Report:
    """The activation-patching report (page and figures) of a patching result."""
    r = result
    figures: dict[str, ReportFigure] = {}
    heatmaps = []
    for eff in _methods(r):
        name = f"effect-{eff.method}"
        fig = effect_heatmap(r, eff.method)
        label = METHOD_LABELS.get(eff.method, eff.method)
        figures[name] = ReportFigure(fig, titles=effect_titles(r, eff.method),
                                     label=f"{label}: mean effect by layer")
        heatmaps.append({"name": name, "title": label, "caption": _heatmap_caption(r, eff),
                         "width": round(fig.get_figwidth() * 96)})
    scatters = []
    if r.exact is not None:
        for a in r.agreement:
            name = f"agreement-{a.method}"
            fig = agreement_scatter(r, a)
            label = METHOD_LABELS.get(a.method, a.method)
            figures[name] = ReportFigure(fig, titles=agreement_titles(r, a),
                                         label=f"{label} against exact patching")
            scatters.append({"name": name, "label": label,
                             "width": round(fig.get_figwidth() * 96)})
    dla_width = 0
    if r.dla is not None:
        layers, heads = _dla_axes(r)
        fig = dla_bars(r.dla, layers, heads)
        figures["dla"] = ReportFigure(fig, titles=dla_titles(r.dla, layers, heads),
                                      label="Direct logit attribution")
        dla_width = round(fig.get_figwidth() * 96)
    heads = _attention(r, figures)
    group_width = 0
    if r.groups is not None and len(r.groups.groups) > 1:
        fig = group_forest(r.groups)
        figures["groups"] = ReportFigure(fig, titles=group_titles(r.groups),
                                         label=f"Effect by {r.groups.column}")
        group_width = round(fig.get_figwidth() * 96)
    main = r.primary
    return render_page(
        "patching.html.j2",
        title=f"Activation patching — {r.task.name} · {r.family} · {r.model_id or 'unknown model'}",
        subtitle=("Which components carry the task: each one's activation is swapped between "
                  "the clean and the corrupted prompt of every pair and the answer − wrong "
                  "logit difference measured."),
        lead=_lead(r), manifest=r.manifest or {}, figures=figures,
        stylesheets=["circuits.css"], r=r,
        main_label=METHOD_LABELS.get(main.method, main.method),
        other_labels=[METHOD_LABELS.get(e.method, e.method)
                      for e in _methods(r) if e is not main],
        top=_top_rows(r), heatmaps=heatmaps, scatters=scatters,
        agreement_rows=_agreement_rows(r),
        dla_summary=_dla_summary(r) if r.dla is not None else [],
        dla_rows=_dla_rows(r) if r.dla is not None else [], dla_width=dla_width,
        heads=heads, top_heads=_top_heads(r, heads) if heads else [],
        heads_from_dla=r.family != "heads", split=_split_half(r), split_rows=_split_rows(r),
        group_rows=group_rows(r.groups) if group_width and r.groups is not None else [],
        group_width=group_width,
        group_heads=([f"{r.groups.column} {g} (n = {n})"
                      for g, n in zip(r.groups.groups, r.groups.n_pairs, strict=True)]
                     if r.groups is not None else []),
        setup=_setup(r), baseline=fmt_effect(r.baseline),
        direction=_DIRECTION.get(r.config.direction, r.config.direction),
    )

