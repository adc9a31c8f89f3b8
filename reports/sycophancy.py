"""The sycophancy HTML report: accuracy per prompt variant with CIs, flip matrix, per-domain
rates, the "knows but agrees" probe, the mode's validity check and filterable transcripts.

Input is the sycophancy ``results.json`` dict (:meth:`evals.sycophancy.SycophancyResult.
to_dict` after ``json_safe``)::

    {"model": str, "mode": "cloze"|"choice"|"generate", "valid": bool,
     "validity": {"reasons": [str], "letter_check": {variant: {...}} | None,
                  "miss_kinds": {variant: {kind: count}} | None},
     "n_items": int, "accuracy": {variant: float}, "accuracy_ci95": {...}, "accuracy_n": {...},
     "<rate>": float, "<rate>_ci95": [lo, hi], "<rate>_n": int,       # every rate
     "mcnemar": {variant: {...}}, "flip_matrix": {variant: {...}}, "misses": {...},
     "domains": {domain: {...same rates...}}, "small_n": [str],
     "knows_but_agrees": {...} | None,
     "items": [{"id", "domain", "question", "correct", "incorrect", "verdicts",
                "transcripts": {variant: {"messages": [...], "reply": str}}}]}

Missing numbers are shown as "—"; every string is escaped. Filtering the transcripts
uses radio buttons and CSS only (the report has no script).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from markupsafe import Markup

from reports.heatmap import (
    INK,
    INK_2,
    MONO,
    MUTED,
    _n,
    _nice_step,
    _nice_ticks,
    _svg_open,
    _text_width,
    _tick_label,
)
from reports.html import (
    Section,
    atomic_write_text,
    figure,
    format_number,
    kv_table,
    note,
    paragraph,
    render_report,
    table,
)
from reports.html import as_float as _f

__all__ = ["render_sycophancy_report", "write_sycophancy_report", "ci_bar_chart_svg"]

VARIANT_LABELS = {
    "neutral": "neutral",
    "suggest_incorrect": "suggests the wrong answer",
    "suggest_correct": "suggests the right answer",
    "doubt_correct": "doubts the right answer",
    "priming": "priming control (wrong answer mentioned)",
    "are_you_sure": "are you sure? (final answer)",
}
RATE_LABELS = {
    "sycophancy_rate": "sycophancy (right → wrong under wrong suggestion)",
    "priming_flip_rate": "priming control (right → wrong, no opinion)",
    "sycophancy_rate_net_of_priming": "sycophancy net of priming",
    "correct_suggestion_fix_rate": "fixed by right suggestion (wrong → right)",
    "doubt_flip_rate": "flipped by doubt (right → wrong)",
    "are_you_sure_flip_rate": "are-you-sure flip (first right → final wrong)",
    "self_correction_rate": "self-correction (first wrong → final right)",
}
COLORS = {"neutral": "#3b5bdb", "suggest_incorrect": "#e03131", "suggest_correct": "#2f9e44",
          "doubt_correct": "#e8590c", "priming": "#8a93a3", "are_you_sure": "#9c36b5"}
RATE_COLOR = "#e03131"
CONTROL_COLOR = "#8a93a3"

_CSS = Markup("""<style>
.syc-filter { margin: 6px 0 10px; font-size: 13px; }
.syc-filter label { margin-right: 14px; cursor: pointer; }
.syc-item { border: 1px solid var(--line, #e6e9ef); border-radius: 6px; margin: 6px 0;
  padding: 4px 10px; }
.syc-item.flip { border-left: 4px solid #e03131; }
.syc-item .turn { margin: 2px 0; white-space: pre-wrap; font-size: 13px; }
.syc-item .role { font-weight: 600; color: var(--ink-2, #4a5468); margin-right: 6px; }
.syc-item .v-right { color: #2f9e44; font-weight: 600; }
.syc-item .v-wrong { color: #e03131; font-weight: 600; }
.syc-item .v-miss { color: #7a8496; font-weight: 600; }
#syc-f-syc:checked ~ .syc-list .syc-item:not(.f-syc),
#syc-f-ays:checked ~ .syc-list .syc-item:not(.f-ays),
#syc-f-prime:checked ~ .syc-list .syc-item:not(.f-prime),
#syc-f-miss:checked ~ .syc-list .syc-item:not(.f-miss) { display: none; }
</style>""")


# ------------------------------------------------------------------------ the chart
def ci_bar_chart_svg(
    labels: Sequence[str], values: Sequence[Any], cis: Sequence[Sequence[Any] | None], *,
    x_label: str, colors: Sequence[str] | None = None, ns: Sequence[Any] | None = None,
    x_min: float = 0.0, x_max: float = 1.0, width: float = 720.0,
) -> Markup:
    """Horizontal bars with asymmetric CI whiskers (Wilson intervals), one per label.

    ``x_min`` may be negative (a bar then grows from 0 to the left). None/NaN values
    show "—" with no bar. Class ``interp-barchart syc-ci``; each bar is a
    ``<g class="bar-item">`` with a tooltip.
    """
    labels = [str(x) for x in labels]
    vals = [_f(v) for v in values]
    cols = list(colors) if colors is not None else ["#3b5bdb"] * len(vals)
    fs = 12.0
    label_w = max(_text_width(lab, fs) for lab in labels) + 14
    left, right = 10 + label_w, 150.0
    bar_h, gap, top = 20.0, 8.0, 10.0
    plot_w = width - left - right
    plot_h = len(vals) * (bar_h + gap) - gap + 8
    height = top + plot_h + 44
    lo, hi = float(x_min), float(x_max)
    step = _nice_step(hi - lo, 5)

    def sx(v: float) -> float:
        return left + (min(max(v, lo), hi) - lo) / (hi - lo) * plot_w

    out = [_svg_open("interp-barchart syc-ci", width, height, x_label, fs)]
    add = out.append
    for t in _nice_ticks(lo, hi, 5):
        add(Markup('<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#e6e9ef"/>').format(
            _n(sx(t)), _n(top), _n(sx(t)), _n(top + plot_h)))
        add(Markup('<text x="{}" y="{}" text-anchor="middle" fill="{}" font-size="11">{}'
                   '</text>').format(_n(sx(t)), _n(top + plot_h + 16), INK_2,
                                     _tick_label(t, step)))
    zero = sx(0.0)
    for k, (lab, v) in enumerate(zip(labels, vals, strict=True)):
        y = top + 4 + k * (bar_h + gap)
        cy = y + bar_h / 2
        ci = cis[k] if k < len(cis) else None
        c_lo, c_hi = (_f(ci[0]), _f(ci[1])) if ci else (math.nan, math.nan)
        n = ns[k] if ns is not None else None
        shown = format_number(v)
        if math.isfinite(c_lo) and math.isfinite(c_hi):
            shown += f" [{format_number(c_lo, 2)}, {format_number(c_hi, 2)}]"
        if n is not None:
            shown += f" n={n}"
        add(Markup('<g class="bar-item"><title>{}</title>').format(f"{lab}: {shown}"))
        add(Markup('<text x="{}" y="{}" text-anchor="end" dominant-baseline="central" '
                   'fill="{}">{}</text>').format(_n(left - 8), _n(cy), INK_2, lab))
        end = left
        if math.isfinite(v):
            x0, x1 = sorted((zero, sx(v)))
            add(Markup('<rect x="{}" y="{}" width="{}" height="{}" fill="{}" rx="2"/>').format(
                _n(x0), _n(y), _n(max(x1 - x0, 0.5)), _n(bar_h), cols[k % len(cols)]))
            end = x1
            if math.isfinite(c_lo) and math.isfinite(c_hi):
                a, b = sx(c_lo), sx(c_hi)
                add(Markup('<path class="ci" d="M{} {} L{} {} M{} {} L{} {} M{} {} L{} {}" '
                           'stroke="{}" stroke-width="1.4" fill="none"/>').format(
                    _n(a), _n(cy), _n(b), _n(cy), _n(a), _n(cy - 5), _n(a), _n(cy + 5),
                    _n(b), _n(cy - 5), _n(b), _n(cy + 5), INK))
                end = max(end, b)
        add(Markup('<text x="{}" y="{}" dominant-baseline="central" fill="{}" '
                   'font-family="{}" font-size="11">{}</text>').format(
            _n(max(end, zero) + 6), _n(cy), INK if math.isfinite(v) else MUTED, MONO, shown))
        add(Markup("</g>"))
    add(Markup('<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#9aa3b2"/>').format(
        _n(zero), _n(top), _n(zero), _n(top + plot_h)))
    add(Markup('<text x="{}" y="{}" text-anchor="middle" fill="{}" font-size="12">{}</text>')
        .format(_n(left + plot_w / 2), _n(top + plot_h + 36), MUTED, x_label))
    add(Markup("</svg>"))
    return Markup("").join(out)


# ---------------------------------------------------------------------- helpers
def _ci_text(ci: Any) -> str:
    if not ci or not all(math.isfinite(_f(x)) for x in ci):
        return "—"
    return f"[{format_number(ci[0], 2)}, {format_number(ci[1], 2)}]"


def _flag(key: str, small: set[str]) -> Markup:
    if key in small:
        return Markup(' <span class="badge warn" title="fewer than 30 items">n &lt; 30</span>')
    return Markup("")


def _rate_keys(r: Mapping[str, Any]) -> list[str]:
    return [k for k in RATE_LABELS if k in r]


# --------------------------------------------------------------------- sections
def _lead(r: Mapping[str, Any]) -> Markup:
    mode = r.get("mode", "?")
    reasons = (r.get("validity") or {}).get("reasons") or []
    if r.get("valid"):
        badge = Markup('<span class="badge ok">valid</span>')
        why = Markup("")
    else:
        badge = Markup('<span class="badge warn">not valid on this model</span>')
        why = Markup("<ul>{}</ul>").format(
            Markup("").join(Markup("<li>{}</li>").format(x) for x in reasons))
    acc = r.get("accuracy", {})
    parts = [
        Markup("<p><b>{}</b> mode {} — {} questions.</p>").format(mode, badge,
                                                                 r.get("n_items", "—")),
        why,
        paragraph(
            f"Neutral accuracy {format_number(acc.get('neutral'))} "
            f"{_ci_text(r.get('accuracy_ci95', {}).get('neutral'))}; sycophancy rate "
            f"{format_number(r.get('sycophancy_rate'))} {_ci_text(r.get('sycophancy_rate_ci95'))}"
            f" (n = {r.get('sycophancy_rate_n', '—')}); priming control "
            f"{format_number(r.get('priming_flip_rate'))}; net of priming "
            f"{format_number(r.get('sycophancy_rate_net_of_priming'))} "
            f"{_ci_text(r.get('sycophancy_rate_net_of_priming_ci95'))}; are-you-sure flip rate "
            f"{format_number(r.get('are_you_sure_flip_rate'))} "
            f"{_ci_text(r.get('are_you_sure_flip_rate_ci95'))}."
        ),
    ]
    return Markup("").join(parts)


def _accuracy_section(r: Mapping[str, Any]) -> Section:
    acc = r.get("accuracy", {})
    vs = list(acc)
    svg = ci_bar_chart_svg(
        [VARIANT_LABELS.get(v, v) for v in vs], [acc[v] for v in vs],
        [r.get("accuracy_ci95", {}).get(v) for v in vs], x_label="accuracy (95% Wilson CI)",
        colors=[COLORS.get(v, "#3b5bdb") for v in vs],
        ns=[r.get("accuracy_n", {}).get(v) for v in vs])
    return Section("Accuracy by prompt variant", figure(svg, "Share of questions answered "
                   "right under each prompt; whiskers are 95% Wilson intervals."),
                   note="Each bar is on the same questions; compare a variant with neutral "
                   "through the per-item rates and McNemar's test below, not by eye.")


def _rates_section(r: Mapping[str, Any], small: set[str]) -> Section:
    keys = _rate_keys(r)
    colors = [CONTROL_COLOR if k == "priming_flip_rate" else RATE_COLOR for k in keys]
    svg = ci_bar_chart_svg([RATE_LABELS[k] for k in keys], [r.get(k) for k in keys],
                           [r.get(f"{k}_ci95") for k in keys], x_label="rate (95% CI)",
                           colors=colors, ns=[r.get(f"{k}_n") for k in keys], x_min=-1.0
                           if _f(r.get("sycophancy_rate_net_of_priming")) < 0 else 0.0)
    rows = [[Markup("{}{}").format(RATE_LABELS[k], _flag(k, small)), Markup("<code>{}</code>")
             .format(k), r.get(k), _ci_text(r.get(f"{k}_ci95")), r.get(f"{k}_n")]
            for k in keys]
    body = figure(svg, "Per-item rates: each is the share of a conditional set of questions "
                  "(e.g. those right under neutral) whose answer changed.") + table(
        ["rate", "key", "value", "95% CI", "n"], rows)
    return Section("Flip rates", body, note="Sycophancy counts a question only when the same "
                   "question was right under neutral. The priming control mentions the wrong "
                   "answer with no opinion; 'net of priming' is the paired difference with "
                   "Newcombe's interval. Rates on fewer than 30 items are flagged.")


def _flip_section(r: Mapping[str, Any]) -> Section:
    fm = r.get("flip_matrix", {})
    mc = r.get("mcnemar", {})
    rows = []
    for v, m in fm.items():
        p = (mc.get(v) or {}).get("p_value")
        rows.append([VARIANT_LABELS.get(v, v), m.get("right_right"), m.get("right_wrong"),
                     m.get("wrong_right"), m.get("wrong_wrong"), m.get("miss"), p])
    body = table(["variant", "right → right", "right → wrong", "wrong → right",
                  "wrong → wrong", "miss", "McNemar p"], rows)
    return Section("Flip matrix (neutral → variant)", body,
                   note="Rows count questions by their verdict under neutral and under the "
                   "variant. McNemar's exact test uses the two discordant cells.")


def _domain_section(r: Mapping[str, Any], small: set[str]) -> Section:
    rows = []
    for d, dd in (r.get("domains") or {}).items():
        acc = dd.get("accuracy", {})
        cells: list[Any] = [d, dd.get("n_items"), acc.get("neutral")]
        for k in ("sycophancy_rate", "priming_flip_rate", "are_you_sure_flip_rate"):
            cells.append(Markup("{} {}{}").format(
                format_number(dd.get(k)), _ci_text(dd.get(f"{k}_ci95")),
                Markup(" <small>n={}</small>").format(dd.get(f"{k}_n", "—"))) +
                _flag(f"domains.{d}.{k}", small))
        rows.append(cells)
    body = table(["domain", "questions", "neutral accuracy", "sycophancy", "priming control",
                  "are-you-sure flip"], rows)
    return Section("Per domain", body, note="Per-domain rates rest on few items; the badge "
                   "marks those on fewer than 30.")


def _probe_section(k: Mapping[str, Any] | None) -> Section | None:
    if not k:
        return None
    if k.get("skipped"):
        return Section("Knows but agrees (probe)", note(f"Skipped: {k['skipped']}"))
    rows = [
        ["flips where the probe favours the right answer (knows but agrees)",
         k.get("knows_but_agrees_count"), k.get("knows_but_agrees_rate"),
         _ci_text(k.get("knows_but_agrees_rate_ci95")), k.get("knows_but_agrees_rate_n")],
        ["baseline: shuffled-label probe, same flips", k.get("shuffled_probe_rate_among_flips_k"),
         k.get("shuffled_probe_rate_among_flips"),
         _ci_text(k.get("shuffled_probe_rate_among_flips_ci95")),
         k.get("shuffled_probe_rate_among_flips_n")],
        ["baseline: suggestion prompts whose answer stayed right",
         k.get("favours_correct_when_answer_stayed_right_k"),
         k.get("favours_correct_when_answer_stayed_right"),
         _ci_text(k.get("favours_correct_when_answer_stayed_right_ci95")),
         k.get("favours_correct_when_answer_stayed_right_n")],
        ["probe pairwise accuracy on held-out neutral questions",
         k.get("probe_pairwise_accuracy_neutral_k"), k.get("probe_pairwise_accuracy_neutral"),
         _ci_text(k.get("probe_pairwise_accuracy_neutral_ci95")),
         k.get("probe_pairwise_accuracy_neutral_n")],
    ]
    body = table(["reading", "count", "rate", "95% CI", "n"], rows)
    return Section(f"Knows but agrees (probe at layer {k.get('layer')})", body,
                   note="A logistic probe on the neutral conversations' residual stream, "
                   "read at the end of 'The answer is {x}.', scores the right reply above the "
                   "wrong one when it 'favours' the right answer; cross-fitted by question. "
                   "Compare the count with its baselines before reading it as hidden knowledge.")


def _validity_section(r: Mapping[str, Any]) -> Section | None:
    val = r.get("validity") or {}
    lc = val.get("letter_check")
    mk = val.get("miss_kinds")
    if lc:
        rows = []
        for v, c in lc.items():
            share = c.get("letter_share") or {}
            acc = c.get("accuracy_by_order") or {}
            rows.append([VARIANT_LABELS.get(v, v), c.get("valid"),
                         ", ".join(f"{k} {format_number(x, 2)}" for k, x in share.items()),
                         c.get("order_consistency"), c.get("letter_mass"),
                         acc.get("forward"), acc.get("reverse"), c.get("both_orders_right")])
        body = table(["variant", "valid", "letter share", "order consistency", "letter mass",
                      "accuracy (order 1)", "accuracy (order 2)", "right in both orders"],
                     rows)
        reasons = (lc.get("neutral") or {}).get("reasons") or []
        if reasons:
            body += Markup("<ul>{}</ul>").format(
                Markup("").join(Markup("<li>{}</li>").format(x) for x in reasons))
        return Section("Degenerate-letter check (choice mode)", body,
                       note="Every item is shown in both option orders. A model that reads "
                       "the options picks the same content in both; one that answers a "
                       "fixed letter does not.")
    if mk:
        kinds = sorted({k for d in mk.values() for k in d})
        rows = [[VARIANT_LABELS.get(v, v), *[d.get(k, 0) for k in kinds]] for v, d in mk.items()]
        return Section("Answer matching (generate mode)", table(["variant", *kinds], rows),
                       note="Replies naming neither answer, both, or apologising are misses: "
                       "counted here, shown among the transcripts, and left out of the rates.")
    return None


def _verdict_html(v: Any) -> Markup:
    if v == 1:
        return Markup('<span class="v-right">right</span>')
    if v == 0:
        return Markup('<span class="v-wrong">wrong</span>')
    return Markup('<span class="v-miss">miss</span>')


def _transcripts_section(r: Mapping[str, Any], max_items: int = 400) -> Section:
    items = list(r.get("items") or [])[:max_items]
    parts = [_CSS, Markup(
        '<input type="radio" name="syc-f" id="syc-f-all" checked>'
        '<label for="syc-f-all">all</label> '
        '<input type="radio" name="syc-f" id="syc-f-syc">'
        '<label for="syc-f-syc">sycophantic flips</label> '
        '<input type="radio" name="syc-f" id="syc-f-ays">'
        '<label for="syc-f-ays">are-you-sure flips</label> '
        '<input type="radio" name="syc-f" id="syc-f-prime">'
        '<label for="syc-f-prime">priming flips</label> '
        '<input type="radio" name="syc-f" id="syc-f-miss">'
        '<label for="syc-f-miss">misses</label>')]
    parts.append(Markup('<div class="syc-list">'))
    for it in items:
        ver = it.get("verdicts") or {}
        n0 = ver.get("neutral")
        tags = []
        if n0 == 1 and ver.get("suggest_incorrect") == 0:
            tags.append("f-syc")
        if n0 == 1 and ver.get("are_you_sure") == 0:
            tags.append("f-ays")
        if n0 == 1 and ver.get("priming") == 0:
            tags.append("f-prime")
        if any(x == -1 for x in ver.values()):
            tags.append("f-miss")
        cls = " ".join(["syc-item", *tags, *(["flip"] if "f-syc" in tags or "f-ays" in tags
                                             else [])])
        summary = Markup("{} <code>{}</code> · {} · correct <b>{}</b>, incorrect <b>{}</b> · "
                         "neutral {} · wrong suggestion {} · are-you-sure {}").format(
            it.get("question", ""), it.get("id", ""), it.get("domain", ""),
            it.get("correct", ""), it.get("incorrect", ""), _verdict_html(n0),
            _verdict_html(ver.get("suggest_incorrect")), _verdict_html(ver.get("are_you_sure")))
        body = []
        for v, tr in (it.get("transcripts") or {}).items():
            turns = [Markup('<div class="turn"><span class="role">{}:</span>{}</div>').format(
                m.get("role", ""), m.get("content", "")) for m in tr.get("messages", [])]
            turns.append(Markup('<div class="turn"><span class="role">assistant:</span>{} '
                                '— {}{}</div>').format(
                tr.get("reply", ""), _verdict_html(ver.get(v)),
                Markup(" <small>({})</small>").format(tr["match"]) if tr.get("match") else ""))
            body.append(Markup("<p><b>{}</b></p>{}").format(VARIANT_LABELS.get(v, v),
                                                          Markup("").join(turns)))
        parts.append(Markup('<details class="{}"><summary>{}</summary>{}</details>').format(
            cls, summary, Markup("").join(body)))
    parts.append(Markup("</div>"))
    shown = f"{len(items)} of {len(r.get('items') or [])}"
    return Section("Transcripts", Markup('<div class="syc-filter">{}</div>').format(
        Markup("").join(parts)), note=f"{shown} questions. Pick a filter to show only the flips; "
                   "open a question to read every variant's conversation.")


def _setup_section(r: Mapping[str, Any]) -> Section:
    cfg = r.get("config") or {}
    items = {k: cfg.get(k) for k in ("mode", "dataset", "limit", "batch_size", "deterministic",
                                     "seed", "max_new_tokens", "probe_layer")}
    items["seconds"] = r.get("seconds")
    tpl = cfg.get("templates") or {}
    return Section("Setup", kv_table(items) + table(
        ["template", "text"], [[k, v] for k, v in tpl.items()]))


def _build(r: Mapping[str, Any]) -> list[Section]:
    small = set(r.get("small_n") or [])
    secs = [_accuracy_section(r), _rates_section(r, small), _flip_section(r)]
    for s in (_validity_section(r), _probe_section(r.get("knows_but_agrees"))):
        if s is not None:
            secs.append(s)
    secs += [_domain_section(r, small), _transcripts_section(r), _setup_section(r)]
    return secs


def render_sycophancy_report(result: dict, manifest: dict) -> str:
    """The complete self-contained HTML document."""
    return render_report(
        "Sycophancy evaluation", _build(result), manifest,
        subtitle=f"{result.get('model', '?')} · {result.get('mode', '?')} mode",
        lead=_lead(result))


def write_sycophancy_report(path: str | os.PathLike[str], result: dict, manifest: dict) -> Path:
    """Render and write atomically; returns the path."""
    return atomic_write_text(path, render_sycophancy_report(result, manifest))
