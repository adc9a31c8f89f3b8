"""The sycophancy HTML report: accuracy per prompt variant with CIs, flip rates, flip matrix,
per-domain rates, the "knows but agrees" probe, the mode's validity check and filterable
transcripts.

Laid out by ``templates/sycophancy.html.j2`` from a
:class:`evals.sycophancy.SycophancyResult`; the figures come from :mod:`evals.figures`.
Missing numbers show "—"; every string is escaped. Filtering the transcripts uses radio
buttons and CSS only (the report has no script).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from typing import Any

from markupsafe import Markup

from evals.figures import accuracy_figure, accuracy_rows, hover_titles, rates_figure, rates_rows
from evals.sycophancy import SycophancyResult, net_noise_label
from evals.sycophancy_metrics import CORRECT, MISS, RATE_LABELS, WRONG, variant_label
from interp.display import MISSING, ci_text, format_number
from interp.stats.rates import Rate
from reports.html import Report, ReportFigure, render_page, warnings_box

__all__ = ["net_noise_label", "sycophancy_report"]

#: The rates shown per domain.
DOMAIN_RATES = ("sycophancy_rate", "priming_flip_rate", "are_you_sure_flip_rate")
VERDICTS = {CORRECT: "right", WRONG: "wrong", MISS: "miss"}


def _lead(r: SycophancyResult) -> Markup:
    """The mode, its validity, and the result's one-sentence summary (its headline's
    verdict)."""
    badge = (Markup('<span class="badge ok">valid</span>') if r.valid
             else Markup('<span class="badge warn">not valid on this model</span>'))
    why = Markup("") if r.valid else Markup("<ul>{}</ul>").format(
        Markup("").join(Markup("<li>{}</li>").format(x) for x in r.validity_reasons))
    return Markup("<p><b>{}</b> mode {} — {} questions.</p>{}<p>{}</p>{}").format(
        r.mode, badge, r.metrics.n_items, why, r.summary(), warnings_box(r.warnings))


def _domain_cell(rate: Rate | None, small: bool) -> dict[str, Any]:
    if rate is None:
        return {"value": math.nan, "ci": MISSING, "n": MISSING, "small": small}
    return {"value": rate.value, "ci": ci_text(rate.lo, rate.hi, 2), "n": rate.n, "small": small}


def _items(r: SycophancyResult, max_items: int) -> list[dict[str, Any]]:
    out = []
    for i, q in enumerate(r.questions[:max_items]):
        ver = {v: r.verdicts[v][i] for v in r.verdicts}
        right = ver["neutral"] == CORRECT
        tags = [tag for tag, v in (("f-syc", "suggest_incorrect"), ("f-ays", "are_you_sure"),
                                   ("f-prime", "priming")) if right and ver[v] == WRONG]
        if MISS in ver.values():
            tags.append("f-miss")
        flip = "f-syc" in tags or "f-ays" in tags
        variants = [{"label": variant_label(v), "messages": t.messages, "reply": t.reply,
                     "match": t.match, "verdict": VERDICTS[ver[v]]}
                    for v, t in r.transcripts[i].items()]
        out.append({"q": q, "cls": " ".join(["syc-item", *tags, *(["flip"] if flip else [])]),
                    "neutral": VERDICTS[ver["neutral"]],
                    "suggest": VERDICTS[ver["suggest_incorrect"]],
                    "ays": VERDICTS[ver["are_you_sure"]], "variants": variants})
    return out


def sycophancy_report(result: SycophancyResult, manifest: Mapping[str, Any] | None = None, *,
                      max_items: int = 400) -> Report:
    """The report of one ``interp eval sycophancy`` run (page and figures), with its
    manifest (``result.manifest`` unless given)."""
    manifest = manifest if manifest is not None else (result.manifest or {})
    r = result
    m = r.metrics
    small = set(m.small_n)
    rates = [{"label": RATE_LABELS[k], "key": k, "small": k in small, "value": value,
              "ci": ci_text(lo, hi, 2), "n": n} for k, value, lo, hi, n in m.overall.headline()]
    flips = [[variant_label(v), fm.right_right, fm.right_wrong, fm.wrong_right,
              fm.wrong_wrong, fm.miss, m.mcnemar[v].p_value if v in m.mcnemar else None]
             for v, fm in m.flip_matrix.items()]
    letters = [[variant_label(v), c.valid,
                ", ".join(f"{k} {format_number(x, 2)}" for k, x in c.letter_share.items()),
                c.order_consistency, c.letter_mass,
                None if c.accuracy_by_order is None else c.accuracy_by_order["forward"],
                None if c.accuracy_by_order is None else c.accuracy_by_order["reverse"],
                c.both_orders_right]
               for v, c in (r.letter_checks or {}).items()]
    neutral_check = r.letter_checks["neutral"] if r.letter_checks else None
    kinds = sorted({k for d in (r.miss_kinds or {}).values() for k in d})
    misses = [[variant_label(v), *[Counter(d)[k] for k in kinds]]
              for v, d in (r.miss_kinds or {}).items()]
    probe_rows = []
    p = r.probe
    if p is not None and p.skipped is None:
        for label, rate in (
                ("flips where the probe favours the right answer (knows but agrees)",
                 p.knows_but_agrees),
                ("baseline: shuffled-label probe, same flips", p.shuffled),
                ("baseline: suggestion prompts whose answer stayed right", p.stayed_right),
                ("probe pairwise accuracy on held-out neutral questions", p.pairwise_accuracy)):
            if rate is not None:
                probe_rows.append([label, rate.k, rate.value, ci_text(rate.lo, rate.hi, 2),
                                   rate.n])
    domains = [{"name": d, "n_items": n, "neutral": rs.accuracy["neutral"].value,
                "cells": [_domain_cell(rs.rates[k] if k in rs.rates else None,
                                       f"domains.{d}.{k}" in small)
                          for k in DOMAIN_RATES]}
               for d, (n, rs) in (m.domains or {}).items()]
    cfg = r.config
    setup = [("mode", cfg.mode), ("prompts", r.prompt_format), ("dataset", cfg.dataset),
             ("limit", cfg.limit),
             ("batch_size", cfg.batch_size), ("deterministic", cfg.deterministic),
             ("seed", cfg.seed), ("max_new_tokens", cfg.max_new_tokens),
             ("probe_layer", cfg.probe_layer), ("seconds", r.seconds)]
    figures = {
        "accuracy": ReportFigure(accuracy_figure(r), titles=hover_titles(accuracy_rows(r)),
                                 label="Accuracy by prompt variant"),
        "rates": ReportFigure(rates_figure(r), titles=hover_titles(rates_rows(r)),
                              label="Flip rates"),
    }
    return render_page(
        "sycophancy.html.j2", title="Sycophancy evaluation", manifest=manifest,
        subtitle=f"{r.model_id} · {r.mode} mode", lead=_lead(r), figures=figures,
        stylesheets=["sycophancy.css"], rates=rates, flips=flips, letters=letters,
        letter_reasons=neutral_check.reasons if neutral_check is not None else [],
        kinds=kinds, misses=misses, probe=p, probe_rows=probe_rows, domains=domains,
        items=_items(r, max_items), n_items=len(r.questions), setup=setup,
        templates=list(cfg.templates.to_dict().items()))
