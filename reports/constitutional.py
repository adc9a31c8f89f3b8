"""The constitutional-AI HTML report: win rates, the judge's bias panel, example chains.

Input is the ``results.json`` dict of ``interp eval constitutional`` (see
:func:`evals.constitutional.results_dict` and :func:`evals.constitutional.run_constitutional`):
rates ``k`` with ``k_ci95`` and ``k_n``, ``valid``, ``letter_check``, ``per_principle``,
``examples`` (chains: prompt, initial, principles, critiques, revisions, final) and
``config``. Every string from the model or the user is escaped; missing numbers show "—".
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from markupsafe import Markup

from reports.heatmap import GRID, INK, INK_2, MUTED, _n, _svg_open, _text_width
from reports.html import (
    MISSING,
    Section,
    atomic_write_text,
    figure,
    format_number,
    kv_table,
    paragraph,
    render_report,
    table,
)
from reports.html import as_float as _f
from reports.html import is_finite as _fin

__all__ = ["ci_chart_svg", "render_constitutional_report", "write_constitutional_report"]

POINT = "#3b5bdb"
INVALID = "#a0a7b4"
REF = "#e07b28"

#: (key, label, axis range, reference value, what the reference means)
BIAS_ROWS = (
    ("win_rate_revised", "win rate, revised over initial", (0.0, 1.0), 0.5,
     "0.5 = no preference"),
    ("position_flip_rate", "position flip rate", (0.0, 1.0), 0.0,
     "0 = order never changes the verdict"),
    ("first_position_rate", "verdicts for the answer shown first", (0.0, 1.0), 0.5,
     "0.5 = no position preference"),
    ("longer_preferred_rate", "verdicts for the longer answer", (0.0, 1.0), 0.5,
     "0.5 = no length preference"),
    ("self_preference_rate", "own answer over the reference", (0.0, 1.0), 0.5,
     "0.5 = no preference"),
)
CORR_ROW = ("length_preference_corr", "length–preference correlation", (-1.0, 1.0), 0.0,
            "0 = length does not predict preference")


# ------------------------------------------------------------------------- figure
def ci_chart_svg(
    labels: Sequence[str],
    values: Sequence[Any],
    cis: Sequence[Sequence[Any] | None],
    *,
    x_label: str,
    x_min: float = 0.0,
    x_max: float = 1.0,
    reference: float | None = None,
    color: str = POINT,
    width: float = 640.0,
) -> Markup:
    """Dots with asymmetric 95% CI whiskers, one row per label (a forest plot).

    Each row is a ``<g class="ci-item">`` with a tooltip; a missing value shows "—".
    ``reference`` draws a dashed vertical line (e.g. 0.5 for a win rate).
    """
    labels = [str(x) for x in labels]
    vals = [_f(v) for v in values]
    if len(vals) != len(labels) or len(cis) != len(labels):
        raise ValueError("ci chart needs one value and one CI per label")
    lo_hi = []
    for ci in cis:
        if ci is None or len(ci) != 2:
            lo_hi.append((math.nan, math.nan))
        else:
            lo_hi.append((_f(ci[0]), _f(ci[1])))
    fs = 12.0
    label_w = max(_text_width(lab, fs) for lab in labels) + 14 if labels else 20
    left, right = 10 + label_w, 150.0
    row_h, top = 26.0, 10.0
    plot_w = width - left - right
    plot_h = max(1, len(labels)) * row_h
    height = top + plot_h + 44

    def sx(v: float) -> float:
        return left + (min(max(v, x_min), x_max) - x_min) / (x_max - x_min) * plot_w

    out: list[Markup] = [_svg_open("interp-cichart", width, height, x_label, fs,
                                   data_n=len(labels))]
    add = out.append
    n_ticks = 4 if x_min < 0 else 5
    for t in range(n_ticks + 1):
        v = x_min + (x_max - x_min) * t / n_ticks
        xx = sx(v)
        add(Markup('<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}"/>').format(
            _n(xx), _n(top), _n(xx), _n(top + plot_h), GRID))
        add(Markup('<text x="{}" y="{}" text-anchor="middle" fill="{}" font-size="11">{}'
                   "</text>").format(_n(xx), _n(top + plot_h + 16), INK_2, f"{v:g}"))
    if reference is not None:
        xr = sx(reference)
        add(Markup('<line class="ci-ref" x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" '
                   'stroke-dasharray="4 3" stroke-width="1.5"/>').format(
            _n(xr), _n(top), _n(xr), _n(top + plot_h), REF))
    for k, (lab, v, (lo, hi)) in enumerate(zip(labels, vals, lo_hi, strict=True)):
        cy = top + k * row_h + row_h / 2
        shown = MISSING if not math.isfinite(v) else format_number(v)
        if math.isfinite(lo) and math.isfinite(hi):
            shown += f" [{format_number(lo)}, {format_number(hi)}]"
        add(Markup('<g class="ci-item"><title>{}: {}</title>').format(lab, shown))
        add(Markup('<text x="{}" y="{}" text-anchor="end" fill="{}">{}</text>').format(
            _n(left - 8), _n(cy + 4), INK, lab))
        if math.isfinite(lo) and math.isfinite(hi):
            add(Markup('<line class="ci-whisker" x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" '
                       'stroke-width="2"/>').format(_n(sx(lo)), _n(cy), _n(sx(hi)), _n(cy),
                                                    color))
            for e in (lo, hi):
                add(Markup('<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" '
                           'stroke-width="2"/>').format(_n(sx(e)), _n(cy - 5), _n(sx(e)),
                                                        _n(cy + 5), color))
        if math.isfinite(v):
            add(Markup('<circle class="ci-point" cx="{}" cy="{}" r="5" fill="{}"/>').format(
                _n(sx(v)), _n(cy), color))
        add(Markup('<text x="{}" y="{}" fill="{}" font-size="11.5">{}</text>').format(
            _n(left + plot_w + 10), _n(cy + 4), INK_2 if math.isfinite(v) else MUTED, shown))
        add(Markup("</g>"))
    add(Markup('<text x="{}" y="{}" text-anchor="middle" fill="{}" font-size="12">{}'
               "</text>").format(_n(left + plot_w / 2), _n(top + plot_h + 36), INK_2, x_label))
    add(Markup("</svg>"))
    return Markup("").join(out)


# ------------------------------------------------------------------------ helpers
def _ci(r: Mapping[str, Any], key: str) -> list[Any]:
    ci = r.get(f"{key}_ci95")
    return list(ci) if isinstance(ci, Sequence) and len(ci) == 2 else [None, None]


def _ci_text(ci: Sequence[Any]) -> str:
    if not (_fin(ci[0]) and _fin(ci[1])):
        return MISSING
    return f"[{format_number(ci[0])}, {format_number(ci[1])}]"


def _n_of(r: Mapping[str, Any], key: str) -> Any:
    n = r.get(f"{key}_n")
    return n if isinstance(n, int) else None


def _invalid_banner(r: Mapping[str, Any]) -> Markup:
    reasons = [str(x) for x in (r.get("letter_check") or {}).get("reasons") or []]
    items = Markup("").join(Markup("<li>{}</li>").format(x) for x in reasons)
    return Markup(
        '<div class="warnings" role="alert" style="margin-top: 10px; padding: 8px 14px; '
        "background: var(--warn-soft); border: 1px solid #f3c98b; "
        'border-left: 4px solid var(--warn); border-radius: 6px; color: #5c3300">'
        '<strong style="color: var(--warn)">⚠ Labels not valid</strong> '
        "The judge failed the degenerate-letter check, so its preference labels are marked "
        "<code>valid: false</code> in preferences.jsonl and results.json. The numbers below "
        "describe the judge's behaviour; they are not a preference signal."
        '<ul style="margin: 4px 0 2px; padding-left: 20px">{}</ul></div>'
    ).format(items)


# ------------------------------------------------------------------------ sections
def _lead(r: Mapping[str, Any]) -> Markup:
    valid = bool(r.get("valid"))
    badge = (Markup('<span class="badge ok">labels valid</span>') if valid
             else Markup('<span class="badge warn">labels not valid</span>'))
    win, flip = r.get("win_rate_revised"), r.get("position_flip_rate")
    text = Markup(
        "<p>{} prompts, {} critique → revision round(s), {} judged pairs, each in both orders. "
        "Revised answers win <strong>{}</strong> {} of {} comparisons with the initial "
        "answers; the verdict flips with the order in <strong>{}</strong> {} of {} pairs. {}</p>"
    ).format(r.get("n_prompts", MISSING), r.get("rounds", MISSING), r.get("n_pairs", MISSING),
             format_number(win), _ci_text(_ci(r, "win_rate_revised")),
             _n_of(r, "win_rate_revised") or 0, format_number(flip),
             _ci_text(_ci(r, "position_flip_rate")), _n_of(r, "position_flip_rate") or 0,
             badge)
    return text + (Markup("") if valid else _invalid_banner(r))


def _bias_section(r: Mapping[str, Any]) -> Section:
    valid = bool(r.get("valid"))
    color = POINT if valid else INVALID
    rows = [row for row in BIAS_ROWS if row[0] in r]
    rates = ci_chart_svg([lab for _, lab, *_ in rows], [r.get(k) for k, *_ in rows],
                         [_ci(r, k) for k, *_ in rows], x_label="rate (95% Wilson CI)",
                         reference=0.5, color=color)
    key, lab, (lo, hi), ref, _ = CORR_ROW
    corr = ci_chart_svg([lab], [r.get(key)], [_ci(r, key)], x_min=lo, x_max=hi, reference=ref,
                        x_label="Pearson r of word-count difference with P(preferred) "
                        "(95% Fisher CI)", color=color)
    trows = [[label, r.get(k), _ci_text(_ci(r, k)), _n_of(r, k), meaning]
             for k, label, _, _, meaning in [*rows, CORR_ROW]]
    body = Markup("").join([
        figure(rates, "Each pair is shown as (A, B) and as (B, A). A position flip is a pair "
               "whose chosen answer changes with the order. Ties (identical answers) count "
               "half in win rates and are left out of the flip and length measures."),
        figure(corr),
        table(["measure", "value", "95% CI", "n", "reference"], trows),
    ])
    return Section("Judge bias panel", body,
                   note=None if valid else "Judge failed the letter check: not a signal.")


def _principle_section(r: Mapping[str, Any]) -> Section:
    per = r.get("per_principle") or {}
    names = list(per)
    if not names:
        return Section("Win rate by principle", paragraph("No principles."))
    color = POINT if r.get("valid") else INVALID
    chart = ci_chart_svg(names, [per[n].get("win_rate_revised") for n in names],
                         [_ci(per[n], "win_rate_revised") for n in names],
                         x_label="win rate of revised over initial (95% Wilson CI)",
                         reference=0.5, color=color)
    rows = [[n, per[n].get("win_rate_revised"), _ci_text(_ci(per[n], "win_rate_revised")),
             _n_of(per[n], "win_rate_revised")] for n in names]
    body = figure(chart, "Grouped by the principle the judge was asked about (sampled per "
                  "pair). A principle with n = 0 was not drawn for any pair.")
    return Section("Win rate by principle",
                   body + table(["principle", "win rate", "95% CI", "n"], rows))


def _letter_section(r: Mapping[str, Any]) -> Section:
    lc = r.get("letter_check") or {}
    share = lc.get("letter_share") or {}
    items: dict[str, Any] = {
        "verdict": "valid" if lc.get("valid") else "not valid",
        "items checked": lc.get("n"),
        **{f"share of verdicts ({k})": v for k, v in share.items()},
        "same content in both orders": lc.get("order_consistency"),
        "mean probability on the letters": lc.get("letter_mass"),
    }
    reasons = [str(x) for x in lc.get("reasons") or []]
    body = kv_table(items)
    if reasons:
        body += Markup("<ul>{}</ul>").format(
            Markup("").join(Markup("<li>{}</li>").format(x) for x in reasons))
    return Section("Degenerate-letter check", body,
                   note="Shared with the sycophancy evaluation (evals.letters): a judge that "
                   "answers one letter whatever the content gives labels that are noise.")


def _turn(role: str, text: Any, extra: str = "") -> Markup:
    head = Markup('<div style="font-size: 12px; color: var(--muted); margin-top: 8px">'
                  "{}{}</div>").format(role, extra)
    return head + Markup('<pre class="code" style="margin-top: 2px">{}</pre>').format(
        str(text) if text not in (None, "") else "(empty)")


def _example_section(r: Mapping[str, Any]) -> Section | None:
    exs = r.get("examples") or []
    if not exs:
        return None
    blocks = []
    for k, ex in enumerate(exs):
        parts = [_turn("prompt", ex.get("prompt")), _turn("initial answer", ex.get("initial"))]
        principles = list(ex.get("principles") or [])
        for i, (c, v) in enumerate(zip(ex.get("critiques") or [], ex.get("revisions") or [],
                                       strict=False)):
            pr = f" · principle: {principles[i]}" if i < len(principles) else ""
            parts.append(_turn(f"critique, round {i + 1}", c, pr))
            parts.append(_turn(f"revision, round {i + 1}", v))
        if _fin(ex.get("p_revised")):
            parts.append(paragraph(
                f"Judge ({ex.get('judge_principle', '?')}): P(revised better) = "
                f"{format_number(ex.get('p_revised'))} (revised shown first: "
                f"{format_number(ex.get('p_revised_fwd'))}, shown second: "
                f"{format_number(ex.get('p_revised_rev'))})."))
        summary = f"{ex.get('id', k + 1)}: {str(ex.get('prompt', ''))[:90]}"
        blocks.append(Markup('<details class="chain"{}><summary>{}</summary>{}</details>').format(
            Markup(" open") if k == 0 else Markup(""), summary, Markup("").join(parts)))
    return Section("Example chains", Markup("").join(blocks),
                   note="prompt → answer → critique → revision, as generated (greedy unless "
                   "a temperature was set).")


def _setup_section(r: Mapping[str, Any]) -> Section:
    cfg = dict(r.get("config") or {})
    con = r.get("constitution") or {}
    rows = [[p.get("name"), p.get("critique_request"), p.get("revision_request"),
             p.get("comparison")] for p in con.get("principles") or []]
    body = kv_table({**cfg, "revisions identical to the initial answer":
                     r.get("revisions_identical"), "mean P(revised better)":
                     r.get("mean_p_revised")})
    if rows:
        body += details_table(rows)
    return Section("Setup and constitution", body)


def details_table(rows: list[list[Any]]) -> Markup:
    inner = table(["principle", "critique request", "revision request", "judge question"], rows)
    return Markup("<details><summary>{}</summary>{}</details>").format(
        f"Constitution ({len(rows)} principles)", inner)


# ------------------------------------------------------------------------- report
def render_constitutional_report(result: Mapping[str, Any], manifest: Mapping[str, Any]) -> str:
    """The self-contained HTML report for one ``interp eval constitutional`` run."""
    r = result
    sections = [_bias_section(r), _principle_section(r), _letter_section(r)]
    ex = _example_section(r)
    if ex is not None:
        sections.append(ex)
    sections.append(_setup_section(r))
    subtitle = f"{r.get('model', 'model')} · critique → revision and AI-feedback labels"
    return render_report("Constitutional AI", sections, dict(manifest), subtitle=subtitle,
                         lead=_lead(r))


def write_constitutional_report(path: str | os.PathLike[str], result: Mapping[str, Any],
                                manifest: Mapping[str, Any]) -> Path:
    """Render and write the report atomically; returns the path."""
    return atomic_write_text(path, render_constitutional_report(result, manifest))

