"""The causal reports: distributed alignment search (``interp causal das``) and edge
attribution against exact path patching (``interp causal edges``).

Input is a :class:`~interp.causal.results.DASResult` (its manifest included). The page
(``templates/das.html.j2``) shows the held-out IIA by layer
(:func:`interp.causal.figures.iia_by_layer`) and the same numbers as a table, every IIA
with its 95% interval (over templates where the task has them) beside the random
direction, the full and empty interchanges, DAS restricted to the observed span, and the
control task by type with its chance and the selectivity; every string is escaped.
"""

from __future__ import annotations

from typing import Any

from markupsafe import Markup

from interp.causal.figures import (
    agreement_scatter,
    circuit_graph,
    faithfulness_curves,
    iia_by_layer,
)
from interp.causal.results import GRADIENT_ESTIMATORS, DASResult, EdgeResult
from interp.circuits.figures import group_forest, group_titles
from interp.display import ci_text
from reports.html import Report, ReportFigure, headline_lead, render_page
from reports.patching import group_rows

__all__ = ["das_report", "edges_report"]


def _extra(r: DASResult) -> list[str]:
    """The names of the extra subspaces (an SAE's latents) scored at any layer."""
    return list(dict.fromkeys(k for x in r.layers for k in x.subspaces))


def _rows(r: DASResult) -> list[list[Any]]:
    rows = []
    extra = _extra(r)
    for x in r.layers:
        spread = (f"{min(x.das_seeds):.2f}–{max(x.das_seeds):.2f}" if len(x.das_seeds) > 1
                  else "one seed")
        def text(v: Any) -> str:
            return v.text() if v is not None else "—"

        control = "—"
        if x.control is not None and x.control_chance is not None:
            control = (f"{x.control.text()}, chance {x.control_chance:.2f}"
                       + (" (fitted)" if x.control_fits() else ""))
        span = text(x.in_span)
        if x.span_share is not None and x.span_dims is not None:
            span += f" ({x.span_share:.0%} of DAS in {x.span_dims:.0f} dims)"
        rows.append([x.layer, x.das.text() + (" (illusion)" if x.illusion() else ""), spread,
                     span, control, text(x.selectivity), text(x.probe_direction),
                     text(x.mean_difference), *[text(x.subspaces.get(k)) for k in extra],
                     text(x.probe_accuracy), x.random.text(), x.full.text(), x.none.text(),
                     f"{x.seconds:.1f} s"])
    return rows


def das_report(result: DASResult) -> Report:
    """The DAS report (page and figures) of one search."""
    r = result
    figures: dict[str, ReportFigure] = {}
    width = 0
    if r.layers:
        fig = iia_by_layer(r)
        figures["iia"] = ReportFigure(fig, label="Held-out IIA by layer")
        width = round(fig.get_figwidth() * 96)
    c = r.config
    setup = [("model", r.model_id or None), ("task", r.task),
             ("task sha256", Markup("<code>{}</code>").format(r.task_sha256)),
             ("position", r.position), ("dimensions (k)", c.dim), ("training steps", c.steps),
             ("learning rate", c.lr), ("batch size", c.batch_size), ("seeds", c.seeds),
             ("pairs", f"{r.n_pairs}, each held out once ({r.split})"),
             ("intervals", r.intervals_text()),
             ("observed span", f"principal directions explaining {c.span_variance:.0%} of "
                               "the activations' variance at the position"),
             ("SAE", f"{c.sae} ({c.sae_latents} latents)" if c.sae else None),
             ("limit", c.limit), ("seed", c.seed)]
    return render_page(
        "das.html.j2",
        title=f"Distributed alignment search — {r.task} · {r.model_id or 'unknown model'}",
        subtitle=("Is the information used where it is readable? A learned subspace of the "
                  "residual stream is swapped from the source prompt into the base prompt, "
                  "and the output follows the source or not."),
        lead=headline_lead(r), manifest=r.manifest or {}, figures=figures, r=r, width=width,
        rows=_rows(r), setup=setup, extra=_extra(r), intervals=r.intervals_text())


def _num(x: float | None, digits: int = 3) -> str:
    return "—" if x is None or x != x else f"{x:+.{digits}f}"


def _versus_rows(r: EdgeResult) -> list[list[Any]]:
    """Each estimator's top n against its matched baseline, at every n."""
    rows = []
    for v in r.versus:
        spread = (f"{min(v.matched_draws):.2f}–{max(v.matched_draws):.2f}"
                  if v.matched_draws else "—")
        rows.append([v.method, v.n, f"{v.kept:.3f}", ci_text(v.kept_ci95[0], v.kept_ci95[1]),
                     f"{v.matched:.3f}", spread, _num(v.difference),
                     ci_text(v.difference_ci95[0], v.difference_ci95[1]), v.verdict,
                     "—" if v.random is None else f"{v.random:.3f}",
                     "—" if v.exact is None else f"{v.exact:.3f}"])
    return rows


def edges_report(result: EdgeResult) -> Report:
    """The edge-attribution report (page and figures) of one run."""
    r = result
    figures: dict[str, ReportFigure] = {}
    if r.faithfulness:
        figures["faith"] = ReportFigure(faithfulness_curves(r), label="Faithfulness")
    if r.sample and r.agreement:
        figures["agreement"] = ReportFigure(agreement_scatter(r),
                                            label="Scores against exact path patching")
    if r.circuit is not None and r.circuit.edges:
        figures["circuit"] = ReportFigure(circuit_graph(r.circuit, r.n_heads, r.n_layers, r.n_kv),
                                          label="Circuit")
    if r.groups is not None and len(r.groups.groups) > 1:
        figures["groups"] = ReportFigure(group_forest(r.groups), titles=group_titles(r.groups),
                                         label=f"Effect by {r.groups.column}")
    agreement = [[a.method, a.n_edges, f"{a.spearman:.2f}",
                  ci_text(a.spearman_ci95[0], a.spearman_ci95[1], 2),
                  f"{a.spearman_random:.2f}", a.k, f"{a.recall:.2f}",
                  ci_text(a.recall_ci95[0], a.recall_ci95[1], 2)] for a in r.agreement]
    kinds = {"top": "top n by {m}", "matched": "matched to {m} (its ranks n+1…)",
             "random": "drawn from all (weak)", "exact": "top n sampled by exact (reference)"}
    faith = []
    for curve in r.faithfulness:
        for n, mu, ci in zip(curve.n, curve.mean, curve.ci95, strict=True):
            faith.append([kinds.get(curve.kind, "{m}").format(m=curve.method), n, f"{mu:.3f}",
                          ci_text(ci[0], ci[1])])
    estimators = [m for m in GRADIENT_ESTIMATORS if m in r.scores
                  or any(e.score(m) is not None for e in r.top_edges)]
    top = [[Markup("<code>{}</code>").format(e.edge), *[_num(e.score(m)) for m in estimators],
            _num(e.exact)] for e in r.top_edges]
    circuit = ([[Markup("<code>{}</code>").format(e.sender),
                 Markup("<code>{}</code>").format(e.receiver), _num(e.score)]
                for e in sorted(r.circuit.edges, key=lambda e: -abs(e.score))[:40]]
               if r.circuit is not None else [])
    c, t = r.config, r.task
    setup = [("model", r.model_id or None), ("task", t.name), ("task file", t.source),
             ("task sha256", Markup("<code>{}</code>").format(t.sha256)),
             ("pairs read / used / left out", f"{t.n_read} / {t.n_used} / {t.n_left_out}"),
             ("method", c.method), ("estimators", ", ".join(c.estimators) or "none"),
             ("direction", c.direction),
             ("eap-ig steps", f"{c.ig_steps}: the gradient at e_corr + (k/{c.ig_steps})"
                              f"(e_clean − e_corr), k = 0 … {c.ig_steps - 1}"),
             ("exact sample", f"{c.sample} edges ({c.top} top, the rest stratified random)"),
             ("matched baseline", f"{c.random_draws} draws of n edges from each estimator's "
                                  f"ranks n+1 … {1 + c.match_pool}n"),
             ("circuit edges", c.circuit_edges),
             ("bootstrap resamples", c.n_boot), ("batch size", c.batch_size),
             ("limit", c.limit), ("seed", c.seed),
             ("seconds", ", ".join(f"{k} {v:.1f}" for k, v in r.seconds.items())),
             ("one forward pass of a batch", f"{r.forward_seconds:.3f} s")]
    return render_page(
        "edges.html.j2",
        title=f"Edge attribution — {t.name} · {r.model_id or 'unknown model'}",
        subtitle=("Which edges between heads, MLPs, the input and the logits carry the "
                  "task: gradient scores for every edge (eap-clean, eap-corrupted, eap-ig), "
                  "the circuits of each estimator's top edges run against edge sets matched "
                  "in score, and a sample of edges checked one by one against exact path "
                  "patching."),
        lead=headline_lead(r), manifest=r.manifest or {}, figures=figures, r=r,
        versus=_versus_rows(r), match_pool=c.match_pool, agreement=agreement, faith=faith, top=top,
        top_heads=["edge", *estimators, "exact"], circuit=circuit, setup=setup,
        group_rows=group_rows(r.groups) if r.groups is not None else [],
        group_heads=([f"{r.groups.column} {g} (n = {n})"
                      for g, n in zip(r.groups.groups, r.groups.n_pairs, strict=True)]
                     if r.groups is not None else []),
        stylesheets=["circuits.css"])
