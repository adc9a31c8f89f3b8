"""The automatic-interpretation report: scores beside their null controls, the planted
features, and every feature's explanations and top contexts."""

from __future__ import annotations

from markupsafe import Markup

from interp.display import ci_text
from reports.html import Report, ReportFigure, headline_lead, render_page, script_text
from saes.autointerp.figures import scatter_figure, score_figure
from saes.autointerp.results import AutoInterpResult, ScorerControl, ScoreSummary, best_score
from saes.results import FeatureContext

#: The page's only script: filter the feature rows by the search box. Constant: never built
#: from data.
SEARCH_JS = script_text("autointerp.js")


def context_html(c: FeatureContext) -> Markup:
    """A context's text with the tokens the feature fires on marked (escaped)."""
    parts = [Markup("<mark title=\"{:.3g}\">{}</mark>").format(a, t) if a > 0 else
             Markup("{}").format(t) for t, a in zip(c.tokens, c.acts, strict=True)]
    return Markup('<span class="ctx">{}</span>').format(Markup("").join(parts))

def _feature_rows(r: AutoInterpResult, group: str) -> list[list[object]]:
    rows = []
    for f in r.features:
        if f.group != group:
            continue
        expl = Markup("<br>").join(
            Markup("<b>{}</b>: {}").format(k, v) for k, v in f.explanations.items())
        scores = [s for s in r.scores if s.group == group and s.feature == f.feature
                  and r.passed(s.scorer, s.method)]
        best = best_score(scores)
        score = (Markup("{:+.2f} {} <span class=\"badge {}\">{}</span>").format(
            best.difference, ci_text(best.difference_ci95[0], best.difference_ci95[1]),
            "ok" if best.explained else "muted",
            "explained" if best.explained else "not explained")
            if best is not None else Markup("<i>{}</i>").format(
                f.skipped or "no scorer passed its planted control"))
        where = (Markup("<br><small>{} · {} · {}</small>").format(
            best.explainer, best.scorer, best.method) if best is not None else Markup(""))
        ctx = Markup("<br>").join(context_html(c) for c in f.examples)
        rows.append([f.feature, f.n_active, expl, score + where, ctx])
    return rows

def _planted_rows(r: AutoInterpResult) -> list[list[object]]:
    rows = []
    for p in [*r.planted, *r.concepts]:
        shown = " ".join(repr(t) for t in p.tokens) if p.level == "token" else ", ".join(p.tokens)
        auc = ", ".join(f"{k} {v:.2f}" for k, v in p.auroc.items()) or "—"
        rows.append([p.level, p.feature, shown, ", ".join(p.held_out) or "—", p.reference,
                     p.explanation, "yes" if p.named else "no", auc,
                     ", ".join(k for k, v in p.recovered_by.items() if v) or "none"])
    return rows


def _summary(r: AutoInterpResult, *, passed: bool, kind: str | None = None,
             ) -> list[list[object]]:
    return [[s.kind, *s.cells()] for s in r.summary if s.scorer_passed == passed
            and (kind is None or s.kind.startswith(kind))]


def autointerp_report(result: AutoInterpResult) -> Report:
    """The report (page and figures) of one :func:`~saes.autointerp.explain.run_autointerp` run."""
    r = result
    figures: dict[str, ReportFigure] = {}
    if r.summary:
        figures["scores"] = ReportFigure(score_figure(r), label="Scores against controls")
    best = r.best("language model") or r.best("token matching")
    if best is not None:
        figures["scatter"] = ReportFigure(
            scatter_figure(r, best.explainer, best.scorer, best.method),
            label="True against shuffled")
    c = r.config
    setup = [("model", r.model_id), ("hook point", r.hook_point), ("SAE", r.sae_path),
             ("features", c.features), ("explainers", ", ".join(c.explainers)),
             ("explainer model", r.explainer_id),
             ("scorers", ", ".join(f"{k} = {v}" for k, v in r.scorer_ids.items())),
             ("methods", c.methods), ("tokens scanned", r.n_tokens),
             ("context length", c.ctx_len),
             ("contexts per feature", f"{c.n_explain} shown to the explainer; held out: "
                                      f"{c.n_score} activating ({c.n_quantiles} quantile bins), "
                                      f"{c.n_score} random non-activating, {c.n_hard} hard "
                                      "negatives"),
             ("random-SAE features", sum(f.group == "random" for f in r.features)),
             ("planted features", f"{len(r.planted)} token-level, {len(r.concepts)} "
                                  "concept-level"),
             ("explained", f"Benjamini–Hochberg at FDR {c.fdr:g} over a group's features; "
                           f"paired permutation tests, {c.n_permutations} resamples"),
             ("bootstrap resamples", c.n_boot), ("seed", c.seed),
             ("seconds", ", ".join(f"{k} {v:.1f}" for k, v in r.seconds.items()))]
    return render_page(
        "autointerp.html.j2",
        title=f"Automatic interpretation — {r.hook_point} · {r.model_id}",
        subtitle=("Each feature is explained from its top contexts and scored on held-out "
                  "ones, beside the same texts scored with another feature's explanation, a "
                  "random-weight SAE's features and planted features; a scorer's scores "
                  "count only where it recovered the planted features."),
        lead=headline_lead(r), manifest=r.manifest or {}, figures=figures, r=r,
        lm_summary=_summary(r, passed=True, kind="language model"),
        token_summary=_summary(r, passed=True, kind="token matching"),
        failed_summary=_summary(r, passed=False), columns=["kind", *ScoreSummary.COLUMNS],
        controls=[c.cells() for c in r.controls], control_columns=ScorerControl.COLUMNS,
        planted=_planted_rows(r), best=best,
        sae_rows=_feature_rows(r, "sae"), random_rows=_feature_rows(r, "random"),
        setup=setup, script=SEARCH_JS, stylesheets=["autointerp.css"])

__all__ = ["autointerp_report", "context_html"]

