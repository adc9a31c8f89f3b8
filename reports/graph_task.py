"""The task check report (``interp graph --task``): graph-vs-intervention agreement over a
task's prompts, per prompt and pooled, with the worst disagreements."""

from __future__ import annotations

import math

from interp.display import short
from reports.html import Report, ReportFigure, headline_lead, render_page
from saes.graphs.figures import task_figure
from saes.graphs.tasks import GraphTaskResult

__all__ = ["graph_task_report"]


def _f(x: object) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else short(x)  # type: ignore[arg-type]


def _yes_no(flag: object) -> str:
    return "—" if flag is None else ("yes" if flag else "no")


def graph_task_report(result: GraphTaskResult) -> Report:
    """The page: lead, the per-prompt figure and table, the worst features."""
    r = result
    prompts = [[i, p["prompt"], p["answer"], p["wrong"], _f(p["target"]),
                p["active_features"], _f(p["replacement_score"]),
                _f(p.get("replacement_control")),
                _yes_no(p.get("beats_controls")),
                _f(p["spearman_real"]), _f(p["sign_real"]), _f(p["spearman_real_frozen"]),
                _f(p["spearman_replacement"]), _f(p["faithfulness"]),
                _f(p.get("faithfulness_matched")), _f(p.get("faithfulness_ceiling")),
                f"{p['elapsed_s']:.1f}"]
               for i, p in enumerate(r.prompts)]
    worst = [[w["prompt"], f"L{w['layer']} F{w['feature']}", w["token"], _f(w["predicted"]),
              _f(w["replacement"]), _f(w["real_frozen"]), _f(w["real"]),
              "yes" if w["sign_differs"] else "no"]
             for w in r.worst]
    return render_page(
        "graph_task.html.j2", title=f"Attribution graphs against the real model — {r.task}",
        subtitle="Each prompt's graph predicts what removing its top features does to "
                 "logit(answer) − logit(wrong); the real model, everything live, says what it "
                 "does.",
        lead=headline_lead(r), manifest=r.manifest or {},
        figures={"agreement": ReportFigure(task_figure(r), label="Spearman per prompt")},
        r=r, prompts=prompts, worst=worst)
