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
import os
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from markupsafe import Markup

from evals.figures import accuracy_figure, accuracy_rows, hover_titles, rates_figure, rates_rows
from evals.rates import Rate
from evals.sycophancy import SycophancyResult
from evals.sycophancy_metrics import CORRECT, MISS, RATE_LABELS, WRONG, RateSet, variant_label
from reports.html import (
    Report,
    ReportFigure,
    atomic_write_text,
    format_number,
    render_page,
    warnings_box,
)

__all__ = ["render_sycophancy_report", "sycophancy_report", "write_sycophancy_report"]

#: The rates shown per domain.
DOMAIN_RATES = ("sycophancy_rate", "priming_flip_rate", "are_you_sure_flip_rate")
VERDICTS = {CORRECT: "right", WRONG: "wrong", MISS: "miss"}


def _ci_text(lo: float, hi: float) -> str:
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "—"
    return f"[{format_number(lo, 2)}, {format_number(hi, 2)}]"


def _estimate(rs: RateSet, key: str) -> tuple[float, float, float, int | None]:
    """(value, lo, hi, n) of a headline rate; NaN and None when absent."""
    for k, value, lo, hi, n in rs.headline():
        if k == key:
            return value, lo, hi, n
    return math.nan, math.nan, math.nan, None


def net_noise_label(lo: float, hi: float) -> str:
    """The sycophancy rate against its priming control: is the difference a result?"""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return ""
    if lo <= 0 <= hi:
        return " (within noise: not a result; the interval contains 0)"
    return " (beyond the priming control's noise)"


def _lead(r: SycophancyResult) -> Markup:
    rs = r.metrics.overall
    acc = rs.accuracy["neutral"]
    syc, prime, net, ays = (_estimate(rs, k) for k in (
        "sycophancy_rate", "priming_flip_rate", "sycophancy_rate_net_of_priming",
        "are_you_sure_flip_rate"))
    badge = (Markup('<span class="badge ok">valid</span>') if r.valid
             else Markup('<span class="badge warn">not valid on this model</span>'))
    why = Markup("") if r.valid else Markup("<ul>{}</ul>").format(
        Markup("").join(Markup("<li>{}</li>").format(x) for x in r.validity_reasons))
    text = (f"Neutral accuracy {format_number(acc.value)} {_ci_text(acc.lo, acc.hi)}; "
            f"sycophancy rate {format_number(syc[0])} {_ci_text(syc[1], syc[2])} "
            f"(n = {'—' if syc[3] is None else syc[3]}); priming control "
            f"{format_number(prime[0])}; net of priming {format_number(net[0])} "
            f"{_ci_text(net[1], net[2])}{net_noise_label(net[1], net[2])}; are-you-sure flip rate "
            f"{format_number(ays[0])} "
            f"{_ci_text(ays[1], ays[2])}.")
    return Markup("<p><b>{}</b> mode {} — {} questions.</p>{}<p>{}</p>{}").format(
        r.mode, badge, r.metrics.n_items, why, text, warnings_box(r.warnings))


def _domain_cell(rate: Rate | None, small: bool) -> dict[str, Any]:
    if rate is None:
        return {"value": math.nan, "ci": "—", "n": "—", "small": small}
    return {"value": rate.value, "ci": _ci_text(rate.lo, rate.hi), "n": rate.n, "small": small}


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


def sycophancy_report(result: SycophancyResult, manifest: Mapping[str, Any], *,
                      max_items: int = 400) -> Report:
    """The report of one ``interp eval sycophancy`` run (page and figures)."""
    r = result
    m = r.metrics
    small = set(m.small_n)
    rates = [{"label": RATE_LABELS[k], "key": k, "small": k in small, "value": value,
              "ci": _ci_text(lo, hi), "n": n} for k, value, lo, hi, n in m.overall.headline()]
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
                probe_rows.append([label, rate.k, rate.value, _ci_text(rate.lo, rate.hi),
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


def render_sycophancy_report(result: SycophancyResult, manifest: Mapping[str, Any]) -> str:
    """The complete self-contained HTML document."""
    return sycophancy_report(result, manifest).html


def write_sycophancy_report(path: str | os.PathLike[str], result: SycophancyResult,
                            manifest: Mapping[str, Any]) -> Path:
    """Render and write the page atomically; returns the path."""
    return atomic_write_text(path, render_sycophancy_report(result, manifest))
