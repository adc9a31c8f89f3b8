"""The constitutional-AI HTML report: win rates, the judge's bias panel, example chains.

Laid out by ``templates/constitutional.html.j2`` from an
:class:`evals.constitutional.ConstitutionalResult`; the figures come from
:mod:`evals.figures`. Every string from the model or the user is escaped; missing numbers
show "—".
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from markupsafe import Markup

from evals.constitutional import ConstitutionalResult
from evals.figures import (
    BIAS_ROWS,
    CORR_LABEL,
    CORR_MEANING,
    bias_figure,
    bias_rows,
    correlation_figure,
    correlation_rows,
    hover_titles,
    principle_figure,
    principle_rows,
)
from interp.display import ci_text, format_number
from reports.html import Report, ReportFigure, noise_label, render_page

__all__ = ["constitutional_report"]


def _vs(lo: float | None, hi: float | None, reference: float) -> Markup:
    """"within noise" when the 95% interval holds the measure's no-effect reference."""
    return noise_label(math.nan if lo is None else lo, math.nan if hi is None else hi,
                       reference)


def _lead(r: ConstitutionalResult) -> Markup:
    """The result's one-sentence summary (its headline's verdict) and the labels' validity."""
    badge = (Markup('<span class="badge ok">labels valid</span>') if r.valid
             else Markup('<span class="badge warn">labels not valid</span>'))
    text = Markup("<p>{} {}</p>").format(r.summary(), badge)
    if r.valid:
        return text
    return text + Markup(
        '<div class="cai-warn" role="alert"><strong>⚠ Labels not valid</strong> '
        "The judge failed the degenerate-letter check, so its preference labels are marked "
        "<code>valid: false</code> in preferences.jsonl and results.json. The numbers below "
        "describe the judge's behaviour; they are not a preference signal."
        "<ul>{}</ul></div>"
    ).format(Markup("").join(Markup("<li>{}</li>").format(x) for x in r.letter_check.reasons))


def constitutional_report(result: ConstitutionalResult,
                          manifest: Mapping[str, Any] | None = None) -> Report:
    """The report of one ``interp eval constitutional`` run (page and figures), with its
    manifest (``result.manifest`` unless given)."""
    manifest = manifest if manifest is not None else (result.manifest or {})
    r = result
    m = r.measures
    rates = m.rates()
    bias = [[label, rates[k].value, ci_text(rates[k].lo, rates[k].hi), rates[k].n, meaning,
             _vs(rates[k].lo, rates[k].hi, ref)]
            for k, label, ref, meaning in BIAS_ROWS]
    c = m.length_preference_corr
    bias.append([CORR_LABEL, c.r, ci_text(c.lo, c.hi), c.n, CORR_MEANING, _vs(c.lo, c.hi, 0.0)])
    principles = [[name, rate.value, ci_text(rate.lo, rate.hi), rate.n,
                   _vs(rate.lo, rate.hi, 0.5)]
                  for name, rate in m.per_principle.items()]
    lc = r.letter_check
    letter = [("verdict", "valid" if lc.valid else "not valid"), ("items checked", lc.n),
              *[(f"share of verdicts ({k})", v) for k, v in lc.letter_share.items()],
              ("same content in both orders", lc.order_consistency),
              ("mean probability on the letters", lc.letter_mass)]
    examples = []
    for ex in r.examples():
        ch, j = ex.chain, ex.judgement
        rounds = [{"n": i + 1, "critique": crit, "revision": rev,
                   "principle": ch.principles[i] if i < len(ch.principles) else None}
                  for i, (crit, rev) in enumerate(zip(ch.critiques, ch.revisions, strict=False))]
        judge = None
        if j is not None and math.isfinite(j.p_x):
            judge = (f"Judge ({ex.principle}): P(revised better) = {format_number(j.p_x)} "
                     f"(revised shown first: {format_number(j.p_x_fwd)}, shown second: "
                     f"{format_number(j.p_x_rev)}).")
        examples.append({"chain": ch, "summary": f"{ch.id}: {ch.prompt[:90]}",
                         "rounds": rounds, "judge": judge})
    cfg = r.config
    setup = [("rounds", cfg.rounds), ("max_new_tokens", cfg.max_new_tokens),
             ("temperature", cfg.temperature), ("seed", cfg.seed),
             ("batch_size", cfg.batch_size), ("deterministic", cfg.deterministic),
             ("n_prompts", r.n_prompts), ("constitution", r.constitution.source),
             ("revisions identical to the initial answer", m.revisions_identical),
             ("mean P(revised better)", m.mean_p_revised)]
    constitution = [[p.name, p.critique_request, p.revision_request, p.comparison]
                    for p in r.constitution.principles]
    figures = {
        "bias": ReportFigure(bias_figure(r), label="Judge bias panel",
                             titles=hover_titles(bias_rows(r), ci_digits=3, with_n=False)),
        "correlation": ReportFigure(
            correlation_figure(r), label="Length–preference correlation",
            titles=hover_titles(correlation_rows(r), ci_digits=3, with_n=False)),
        "principles": ReportFigure(
            principle_figure(r), label="Win rate by principle",
            titles=hover_titles(principle_rows(r), ci_digits=3, with_n=False)),
    }
    return render_page(
        "constitutional.html.j2", title="Constitutional AI", manifest=manifest,
        subtitle=f"{r.model_id} · critique → revision and AI-feedback labels", lead=_lead(r),
        figures=figures, stylesheets=["constitutional.css"], valid=r.valid, bias=bias,
        principles=principles, letter=letter, letter_reasons=lc.reasons, examples=examples,
        setup=setup, constitution=constitution)
