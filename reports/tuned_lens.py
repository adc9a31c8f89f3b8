"""The tuned-lens evaluation report: the logit lens and the tuned lens side by side, per layer.

It renders a :class:`~interp.lenses.evaluation.LensEval` (from
:func:`~interp.lenses.evaluation.evaluate_tuned_lens`) through
``templates/tuned_lens.html.j2`` with the figures of :mod:`interp.lenses.figures`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from interp.lenses.evaluation import METRICS, LensEval
from interp.lenses.figures import (
    eval_kl_figure,
    eval_kl_titles,
    eval_metrics_figure,
    eval_metrics_titles,
    training_loss_figure,
    training_loss_titles,
)
from reports.html import Report, ReportFigure, format_number, kv_table, noise_label, render_page

__all__ = ["render_tuned_lens_report", "tuned_lens_report"]


def _ci_text(value: float, lo: float, hi: float, digits: int = 3) -> str:
    return (f"{format_number(value, digits)} [{format_number(lo, digits)}, "
            f"{format_number(hi, digits)}]")


def _rows(ev: LensEval) -> list[list[Any]]:
    """One row per layer: KL with its CI, then CE, entropy and top-1 of each lens; with
    both lenses, the paired KL difference, its CI and a noise badge after the KLs."""
    stats = {(lens, metric): ev.mean_ci(lens, metric) for lens in ev.lenses for metric in METRICS}
    paired = {"logit", "tuned"} <= set(ev.lenses)
    diff, diff_ci = ev.kl_difference_ci() if paired else ([], [])
    rows = []
    for i, layer in enumerate(ev.layers):
        row: list[Any] = [str(layer)]
        for metric in METRICS:
            for lens in ev.lenses:
                mean, ci = stats[lens, metric]
                row.append(_ci_text(mean[i], ci[i][0], ci[i][1]) if metric == "kl" else mean[i])
            if metric == "kl" and paired:
                lo, hi = diff_ci[i]
                row.append(_ci_text(diff[i], lo, hi))
                row.append(noise_label(lo, hi))
        rows.append(row)
    return rows


def tuned_lens_report(result: LensEval, manifest: Mapping[str, Any]) -> Report:
    """The evaluation report: one page and its figures."""
    ev = result
    summary = [ev.layers[i] for i in ev.summary_layers()] or ev.layers
    ratio, (lo, hi) = ev.kl_ratio()
    ce, ce_lo, ce_hi = ev.model_ce_ci()
    lead = kv_table({
        f"mean KL, layers {summary[0]}–{summary[-1]}":
            f"logit {format_number(ev.mean_kl('logit'))} · tuned "
            f"{format_number(ev.mean_kl('tuned'))} nats",
        "ratio logit / tuned": f"{format_number(ratio, 2)}× (95% CI {format_number(lo, 2)}–"
                               f"{format_number(hi, 2)})",
        "layers where the tuned lens has lower KL":
            f"{len(ev.lower_kl_layers())} of {len(ev.layers)}; beyond noise (paired 95% CI "
            f"of the difference excludes 0) at {len(ev.lower_kl_beyond_noise())}",
        "held-out text": f"{ev.n_positions} positions in {int(ev.model_ce.shape[0])} windows of "
                         f"{ev.config.seq_len} tokens ({ev.data_source})",
        "model's own cross-entropy": _ci_text(ce, ce_lo, ce_hi),
        "lens": str(ev.lens_path),
    })
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
        figures=figures, rows=_rows(ev), training=training,
        paired={"logit", "tuned"} <= set(ev.lenses),
        train=training.config if training is not None else None,
    )


def render_tuned_lens_report(result: LensEval, manifest: Mapping[str, Any]) -> str:
    """The evaluation report as one self-contained HTML document."""
    return tuned_lens_report(result, manifest).html
