"""The steering-sweep HTML report: what adding α·v after block L does, layer × α.

Input is the :class:`~interp.steering.sweep.SweepResult` of
:func:`interp.steering.sweep.run_sweep`. The page is ``templates/steering.html.j2``;
the figures come from :mod:`interp.steering.figures`. Missing numbers show as "—";
every string is escaped.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup

from interp.display import format_number, plus_minus
from interp.steering.figures import (
    HEATMAPS,
    fmt_alpha,
    fmt_pct,
    fmt_ratio,
    fmt_signed,
    heatmap_figure,
    heatmap_scale,
    heatmap_titles,
    target_by_alpha_figure,
    target_by_alpha_titles,
)
from interp.steering.sweep import COLLAPSE_TOLERANCE, SweepResult
from reports.html import Report, ReportFigure, render_page, warnings_box

__all__ = ["steering_report"]

#: The badge after the lead's verdict, by :meth:`~interp.steering.sweep.SweepResult.verdict`'s kind.
BADGES = {
    "none": ("warn", "no coherent effect"),
    "noise": ("noise", "within noise"),
    "ok": ("ok", "coherent effect"),
    "unknown": ("noise", "no noise estimate"),
}

#: Samples shown per (layer, α) cell, and characters per sample.
SAMPLES_SHOWN = 2
SAMPLE_CHARS = 360


@dataclass
class _Row:
    """One α of a layer's sample table."""

    alpha: str
    badges: list[tuple[str, str]]
    delta: str
    target: str
    ratio: str
    perplexity: str
    distinct2: str
    collapsed: bool
    samples: list[str]


@dataclass
class _Layer:
    layer: int
    norm: float
    open: bool
    sweet: bool
    n_collapsed: int
    rows: list[_Row] = field(default_factory=list)


def _lead(r: SweepResult) -> Markup:
    text, kind = r.verdict()
    cls, label = BADGES[kind]
    badge = Markup('<span class="badge {}">{}</span>').format(cls, label)
    facts = r.headline().rows
    dl = Markup("").join(Markup("<div><dt>{}</dt><dd>{}</dd></div>").format(k, v)
                         for k, v in facts)
    return Markup('<p class="verdict">{} {}</p>{}<dl class="facts">{}</dl>').format(
        text, badge, warnings_box(r.warnings), dl)


def _layers(r: SweepResult) -> list[_Layer]:
    sweet, base = r.sweet_cell, r.base_index
    delta, ratio, delta_ci = r.target_delta, r.perplexity_ratio, r.target_delta_ci()
    open_rows = set(range(len(r.layers))) if len(r.layers) <= 2 else \
        {sweet[0] if sweet is not None else 0}
    out = []
    for i, layer in enumerate(r.layers):
        rows = []
        for j, alpha in enumerate(r.alphas):
            c = r.collapse[i][j]
            collapsed = math.isfinite(c) and c > COLLAPSE_TOLERANCE
            badges = [("badge base", "unsteered")] if j == base else []
            if (i, j) == sweet:
                badges.append(("badge ok", "sweet spot"))
            if math.isfinite(c) and c > 0:
                badges.append(("badge warn collapsed", f"collapse {fmt_pct(c)}"))
            if j != base and r.coherent(i, j) is False and not collapsed:
                badges.append(("badge warn", "incoherent"))
            lo, hi = delta_ci[i][j]
            if j != base and math.isfinite(lo) and lo <= 0 <= hi:
                badges.append(("badge noise", "Δ within noise"))
            rows.append(_Row(
                fmt_alpha(alpha), badges, fmt_signed(delta[i][j], 3),
                "target score " + plus_minus(r.target_score[i][j], r.target_score_std[i][j]),
                fmt_ratio(ratio[i][j]),
                "perplexity " + plus_minus(r.perplexity[i][j], r.perplexity_std[i][j]),
                format_number(r.distinct2[i][j], 2), collapsed,
                r.samples[i][j][:SAMPLES_SHOWN]))
        n_collapsed = sum(1 for v in r.collapse[i] if math.isfinite(v) and v > COLLAPSE_TOLERANCE)
        out.append(_Layer(layer, r.vector_norms[i], i in open_rows,
                          sweet is not None and sweet[0] == i, n_collapsed, rows))
    return out


def _setup(r: SweepResult) -> list[tuple[str, Any]]:
    c = r.config
    return [
        ("model", r.model or None), ("vector source", c.vector_source or None),
        ("method", c.method or None), ("layers", ", ".join(str(x) for x in r.layers) or None),
        ("α", ", ".join(fmt_alpha(a) for a in r.alphas) or None), ("prompts", r.n_prompts),
        ("seeds", ", ".join(str(s) for s in c.seeds)), ("decoding", r.decoding),
        ("max new tokens", c.max_new_tokens), ("chat template", "yes" if c.chat else "no"),
        ("batch size", c.batch_size), ("continuations scored", len(r.texts) or None),
        ("collapse rule", f"distinct-2 < {c.collapse_distinct2:g} or perplexity > "
                          f"{c.collapse_ppl_factor:g}× α = 0"),
        ("coherence tolerance", f"perplexity ≤ {c.coherence_ppl_factor:g}× α = 0, collapse ≤ "
                                f"{100 * COLLAPSE_TOLERANCE:.0f}%"),
    ]


def steering_report(result: SweepResult, manifest: Mapping[str, Any] | None = None) -> Report:
    """The steering-sweep report (page and figures) of a sweep result, with its manifest
    (``result.manifest`` unless given)."""
    r = result
    manifest = manifest if manifest is not None else (r.manifest or {})
    figures: dict[str, ReportFigure] = {}
    if r.layers and r.alphas:
        figures = {name: ReportFigure(heatmap_figure(r, name), titles=heatmap_titles(r, name),
                                      label=spec.title) for name, spec in HEATMAPS.items()}
        figures["target_by_alpha"] = ReportFigure(
            target_by_alpha_figure(r), titles=target_by_alpha_titles(r), label="Target score by α")
    return render_page(
        "steering.html.j2",
        title=f"Steering sweep — {r.model or 'unknown model'}",
        subtitle="A steering vector v added to the residual stream after block L (h ← h + α·v) "
                 "while generating, swept over layers and coefficients α.",
        lead=_lead(r), manifest=manifest, figures=figures, stylesheets=["steering.css"],
        r=r, cfg=r.config, delta_scale=format_number(heatmap_scale(r, "target_delta")[2], 2)
        if figures else "", has_sweet=r.sweet_cell is not None, layers=_layers(r),
        width={name: round(f.figure.get_figwidth() * 96) for name, f in figures.items()},
        setup=_setup(r), norms=[[layer, r.vector_norms[i]] for i, layer in enumerate(r.layers)],
        tolerance_pct=f"{100 * COLLAPSE_TOLERANCE:.0f}%", samples_shown=SAMPLES_SHOWN,
        sample_chars=SAMPLE_CHARS,
    )
