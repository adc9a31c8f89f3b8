"""The transcoder evaluation report (``interp transcoder eval``): every layer replaced at once,
then a row per layer (NMSE, L0, dead latents, the CE-loss score alone), and the figure."""

from __future__ import annotations

from markupsafe import Markup

from interp.display import short
from reports.html import Report, ReportFigure, render_page
from saes.transcoders.evaluate import TranscoderEvalResult
from saes.transcoders.figures import eval_figure

__all__ = ["transcoder_report"]


def transcoder_report(result: TranscoderEvalResult) -> Report:
    """The page: lead (the all-layers CE-loss score with its CI), figure, per-layer table."""
    r = result
    lo, hi = r.ce_loss_score_all_ci95
    lead = Markup(
        "<p>{} transcoder{} on {} held-out tokens. With every one of them replacing its MLP "
        "at once, the next-token loss is <b>{:.3f}</b> nats against {:.3f} clean and {:.3f} with "
        "those MLPs zero-ablated: a CE-loss score of <b>{:.3f}</b> [{:.3f}, {:.3f}] (1 is the "
        "clean loss, 0 the ablation).</p>").format(
        len(r.layers), "s" if len(r.layers) != 1 else "", f"{r.tokens:,}", r.ce_all,
        r.ce_clean, r.ce_zero_all, r.ce_loss_score_all, lo, hi)
    rows = [[m.layer, short(m.nmse), short(m.explained_variance), f"{m.l0:.1f}",
             f"{100 * m.dead_fraction:.1f}%",
             "—" if m.ce_loss_score is None else short(m.ce_loss_score),
             "—" if not m.ce_loss_score_ci95 else
             f"[{m.ce_loss_score_ci95[0]:.3f}, {m.ce_loss_score_ci95[1]:.3f}]",
             "—" if m.delta_ce is None else f"{m.delta_ce:+.4f}"] for m in r.layers]
    return render_page(
        "transcoder.html.j2", title="Transcoders — held-out metrics",
        subtitle="How well each transcoder stands in for its MLP, alone and all together.",
        lead=lead, manifest=r.manifest or {},
        figures={"transcoders": ReportFigure(eval_figure(r), label="NMSE and CE-loss score by "
                                                                  "layer")},
        r=r, rows=rows)
