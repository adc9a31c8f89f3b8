"""The tuned-lens evaluation report: the logit lens and the tuned lens side by side, per layer.

It renders a :class:`~interp.lenses.evaluation.LensEval` (from
:func:`~interp.lenses.evaluation.evaluate_tuned_lens`) through
``templates/tuned_lens.html.j2`` with the figures of :mod:`interp.lenses.figures`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from interp.display import with_ci
from interp.lenses.evaluation import METRICS, LensEval
from interp.lenses.figures import (
    eval_kl_figure,
    eval_kl_titles,
    eval_metrics_figure,
    eval_metrics_titles,
    training_loss_figure,
    training_loss_titles,
)
from reports.html import Report, ReportFigure, kv_table, noise_label, render_page

__all__ = ["tuned_lens_report"]


def _rows(ev: LensEval) -> list[list[Any]]:
    """One row per layer: KL with its CI, then CE, entropy and top-1 of each lens; with
    both lenses, the paired KL difference, its CI and a noise badge after the KLs."""
    stats = {(lens, metric): ev.mean_ci(lens, metric) for lens in ev.lenses for metric in METRICS}
    paired = ev.paired
    diff, diff_ci = ev.kl_difference_ci() if paired else ([], [])
    rows = []
    for i, layer in enumerate(ev.layers):
        row: list[Any] = [str(layer)]
        for metric in METRICS:
            for lens in ev.lenses:
                mean, ci = stats[lens, metric]
                row.append(with_ci(mean[i], ci[i][0], ci[i][1]) if metric == "kl" else mean[i])
            if metric == "kl" and paired:
                lo, hi = diff_ci[i]
                row.append(with_ci(diff[i], lo, hi))
                row.append(noise_label(lo, hi))
        rows.append(row)
    return rows


def tuned_lens_report(result: LensEval, manifest: Mapping[str, Any] | None = None) -> Report:
    """The evaluation report: one page and its figures, led by the result's headline facts,
    with its manifest (``result.manifest`` unless given)."""
    ev = result
    if manifest is None:
        manifest = ev.manifest or {}
    lead = kv_table(dict(ev.headline().rows))
    figures = {
        "kl": ReportFigure(eval_kl_figure(ev), eval_kl_titles(ev), "KL by layer, both lenses"),
        "metrics": ReportFigure(eval_metrics_figure(ev), eval_metrics_titles(ev),
                                "cross-entropy, entropy and top-1 agreement by layer"),
    }
    training = ev.training if ev.training is not None and ev.training.losses else None
    if training is not None:
        figures["training"] = ReportFigure(training_loss_figure(training),
                                           training_loss_titles(training), "training loss")
    return render_page(
        "tuned_lens.html.j2", title=f"Tuned lens vs logit lens — {ev.model_id}",
        subtitle="Held-out evaluation, layer by layer.", lead=lead, manifest=manifest,
        figures=figures, rows=_rows(ev), training=training, paired=ev.paired,
        train=training.config if training is not None else None,
    )
