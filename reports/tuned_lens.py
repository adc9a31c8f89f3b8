"""The tuned-lens evaluation report: the logit lens and the tuned lens side by side, per layer.

Input is the ``results.json`` of ``interp tuned-lens eval`` (see
:meth:`interp.lenses.evaluation.LensEval.to_dict`): lists per layer aligned with ``layers``
for ``{kl,ce,entropy,top1_agreement}_{logit,tuned}_lens`` with ``_ci95`` siblings, the
headline ``kl_ratio`` (+ ``_ci95``) over ``summary_layers``, ``model_ce``, and
``training`` (the lens's loss history). Every string is escaped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup

from reports.heatmap import line_chart_svg
from reports.html import (
    Section,
    figure,
    format_number,
    kv_table,
    note,
    paragraph,
    render_report,
    table,
)
from reports.html import as_float as _f

__all__ = ["render_tuned_lens_report"]

LOGIT_COLOR = "#3b6fb6"
TUNED_COLOR = "#d1495b"
MODEL_COLOR = "#555555"
LENSES = (("logit", "logit lens", LOGIT_COLOR), ("tuned", "tuned lens", TUNED_COLOR))


def _ci_text(value: Any, ci: Sequence[Any] | None, digits: int = 3) -> str:
    if ci is None:
        return format_number(value, digits)
    return f"{format_number(value, digits)} [{format_number(ci[0], digits)}, " \
        f"{format_number(ci[1], digits)}]"


def _chart(r: Mapping[str, Any], metric: str, title: str, y_label: str,
           extra: Mapping[str, float] | None = None, width: float = 520.0) -> Markup:
    series: dict[str, list[float]] = {}
    bands: dict[str, tuple[list[float], list[float]]] = {}
    styles: dict[str, dict[str, Any]] = {}
    for key, label, color in LENSES:
        name = f"{metric}_{key}_lens"
        series[label] = [_f(v) for v in r[name]]
        ci = r.get(f"{name}_ci95")
        if ci:
            bands[label] = ([_f(c[0]) for c in ci], [_f(c[1]) for c in ci])
        styles[label] = {"color": color}
    for label, value in (extra or {}).items():
        series[label] = [value] * len(r["layers"])
        styles[label] = {"color": MODEL_COLOR, "dash": True}
    return line_chart_svg(series, r["layers"], x_label="layer", y_label=y_label, title=title,
                          bands=bands, styles=styles, width=width, height=320.0, y_min=0.0)


def _lead(r: Mapping[str, Any]) -> Markup:
    layers = r.get("summary_layers") or r["layers"]
    lo, hi = r["kl_ratio_ci95"]
    n_better = len(r.get("tuned_lower_kl_layers", []))
    facts = {
        f"mean KL, layers {layers[0]}–{layers[-1]}": (
            f"logit {format_number(r['mean_kl_logit_lens'])} · tuned "
            f"{format_number(r['mean_kl_tuned_lens'])} nats"),
        "ratio logit / tuned": f"{format_number(r['kl_ratio'], 2)}× (95% CI "
                               f"{format_number(lo, 2)}–{format_number(hi, 2)})",
        "layers where the tuned lens has lower KL": f"{n_better} of {len(r['layers'])}",
        "held-out text": f"{r['n_positions']} positions in {r['n_windows']} windows of "
                         f"{r['config']['seq_len']} tokens ({(r.get('data') or {}).get('source')})",
        "model's own cross-entropy": _ci_text(r["model_ce"], r.get("model_ce_ci95")),
        "lens": str(r.get("lens_path")),
    }
    return kv_table(facts)


def _kl_section(r: Mapping[str, Any]) -> Section:
    svg = _chart(r, "kl", "KL(final ‖ lens) by layer, held-out", "nats", width=760.0)
    caption = (
        "Mean over held-out positions of the KL divergence from the model's final "
        "distribution to each lens's reading of that layer. Shaded: 95% CI over windows. "
        "The last layer needs no translation, so both lenses are exact there (KL 0)."
    )
    return Section("KL to the model's output, per layer", figure(svg, caption))


def _other_section(r: Mapping[str, Any]) -> Section:
    panels = Markup('<div class="fig-row">{}{}{}</div>').format(
        _chart(r, "ce", "Cross-entropy vs the next token", "nats",
               {"model output": _f(r["model_ce"])}, width=420.0),
        _chart(r, "entropy", "Entropy of the lens distribution", "nats", width=420.0),
        _chart(r, "top1_agreement", "Top-1 agreement with the model", "share", width=420.0),
    )
    caption = (
        "Cross-entropy against the actual next token (dashed: the model's own), the lens "
        "distribution's entropy, and the share of positions where the lens's top-1 token is "
        "the model's. Shaded: 95% CI over windows."
    )
    return Section("Cross-entropy, entropy and top-1 agreement", figure(panels, caption))


def _table_section(r: Mapping[str, Any]) -> Section:
    rows = []
    for i, layer in enumerate(r["layers"]):
        row: list[Any] = [str(layer)]
        for metric in ("kl", "ce", "entropy", "top1_agreement"):
            for key, _, _ in LENSES:
                name = f"{metric}_{key}_lens"
                ci = r.get(f"{name}_ci95")
                row.append(_ci_text(r[name][i], ci[i] if ci else None) if metric == "kl"
                           else r[name][i])
        rows.append(row)
    cols = ["layer", "KL logit [95% CI]", "KL tuned [95% CI]", "CE logit", "CE tuned",
            "H logit", "H tuned", "top-1 logit", "top-1 tuned"]
    return Section(
        "Numbers per layer", table(cols, rows),
        "All in nats except top-1 agreement (a share of positions). Position 0 of every "
        "window is left out of every mean: its residual norm is several times the others'.",
    )


def _training_section(r: Mapping[str, Any]) -> Section | None:
    tr = r.get("training") or {}
    losses = tr.get("losses") or []
    if not losses:
        return None
    svg = line_chart_svg({"training loss": [_f(x) for x in losses]},
                         list(range(1, len(losses) + 1)), x_label="step",
                         y_label="Σ KL over layers (nats)", title="Training loss",
                         styles={"training loss": {"color": TUNED_COLOR}}, width=760.0,
                         height=280.0, y_min=0.0)
    cfg = tr.get("train") or {}
    facts = {
        "steps": tr.get("steps"),
        "init": cfg.get("init"),
        "optimizer": f"{cfg.get('optimizer')} (lr {cfg.get('lr')}, weight decay "
                     f"{cfg.get('weight_decay')})",
        "tokens": cfg.get("tokens"),
        "windows × length per step": f"{cfg.get('batch_size')} × {cfg.get('seq_len')} "
                                     f"({cfg.get('positions_per_window')} positions each)",
        "training text": (tr.get("data") or {}).get("source"),
        "training time (s)": tr.get("elapsed_s"),
        "tokens/s": tr.get("tokens_per_s"),
    }
    body = figure(svg, "Loss per step on the training batch (sampled positions, summed over "
                  "the translated layers).") + kv_table(facts)
    return Section("How the lens was trained", body)


def render_tuned_lens_report(result: Mapping[str, Any], manifest: Mapping[str, Any]) -> str:
    """The evaluation report as one self-contained HTML document."""
    r = result
    sections = [_kl_section(r), _other_section(r), _table_section(r)]
    training = _training_section(r)
    if training is not None:
        sections.append(training)
    sections.append(Section("How to read this", paragraph(
        "The logit lens decodes each layer with the model's final norm and unembedding; the "
        "tuned lens first applies a learned affine translator per layer. Lower KL means the "
        "lens's reading is closer to what the model finally outputs. The logit lens is the "
        "baseline; the 95% intervals come from the spread between held-out windows."
    ) + note("The translators never saw this text: it is the corpus's held-out split (or the "
             "held-out half of --text).")))
    return render_report(
        f"Tuned lens vs logit lens — {r['model']}", sections, dict(manifest),
        subtitle="Held-out evaluation, layer by layer.", lead=_lead(r),
    )
