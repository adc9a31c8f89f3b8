"""The SAE evaluation report: reconstruction, sparsity, the SAE spliced into the model, features.

Input is the typed result of :func:`saes.metrics.evaluate_sae` (a ``results.json`` dict is
read back with :meth:`~saes.results.SAEEvalResult.from_dict`), with its manifest. Figures come from
:mod:`saes.figures`; the body is ``templates/sae.html.j2``, the header
``templates/sae_lead.html.j2``. Missing numbers (None, NaN) show as "—"; every string is
escaped.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from markupsafe import Markup, escape

from interp.display import MISSING, count, format_number, percent, signed
from reports.html import (
    Report,
    ReportFigure,
    noise_label,
    render_page,
    template_env,
)
from saes.figures import (
    ce_figure,
    density_figure,
    hover_titles,
    reconstruction_figure,
    score_figure,
    training_figure,
)
from saes.metric_format import CI, ci_known, format_ci, format_metric, format_with_ci
from saes.metrics import SAEEvalResult
from saes.results import TARGET_RULES, TargetCheck

__all__ = ["TARGETS", "sae_report"]

#: Known targets: key in ``targets`` -> (metric key, comparison, label).
TARGETS = TARGET_RULES


def _cells(row: list[Any]) -> list[Any]:
    """Text cells as escaped Markup, so the table shows them as formatted (numbers stay)."""
    return [escape(v) if isinstance(v, str) else v for v in row]


def _mark(check: TargetCheck | None, ci: CI | None = None) -> Markup | None:
    """A ✓ / ✗ / ? badge with the target, tagged for tests and tooltips; followed by a
    "within noise" badge when the metric's 95% interval ``ci`` contains the target (the
    verdict on the point estimate could go either way)."""
    if check is None:
        return None
    state = {True: ("ok", "✓", "true"), False: ("warn", "✗", "false"),
             None: ("unknown", "?", "unknown")}[check.passed]
    tip = f"target: {check.label} {check.target_text} (judged on the point estimate)"
    mark = Markup('<span class="badge {} target-mark" data-target="{}" data-pass="{}" '
                  'title="{}">{} target {}</span>').format(state[0], check.key, state[2], tip,
                                                           state[1], check.target_text)
    if ci is not None and ci_known(ci) and math.isfinite(check.target) \
            and min(ci) <= check.target <= max(ci):
        mark += Markup(' <span class="badge noise target-noise" title="the 95% interval '
                       '[{:.4g}, {:.4g}] contains the target {:g}: the verdict is within '
                       'noise">within noise</span>').format(min(ci), max(ci), check.target)
    return mark


def _target_mark(r: SAEEvalResult, metric: str) -> Markup | None:
    """The target badge of ``metric`` with its noise check against the metric's CI."""
    return _mark(r.check(metric), getattr(r, f"{metric}_ci95", None))


def _delta_noise(r: SAEEvalResult) -> Markup:
    """ΔCE against 0: "within noise" when splicing the SAE in is not shown to cost
    anything (its 95% interval over tokens holds 0)."""
    if not (math.isfinite(r.delta_ce) and ci_known(r.delta_ce_ci95)):
        return Markup("")
    return noise_label(min(r.delta_ce_ci95), max(r.delta_ce_ci95))


def _headline(r: SAEEvalResult) -> str:
    parts = []
    if math.isfinite(r.explained_variance) and math.isfinite(r.l0):
        parts.append(f"The {r.architecture_text} SAE reconstructs "
                     f"{percent(r.explained_variance)} of the "
                     f"activations' variance with {format_number(r.l0, 1)} active features per "
                     f"token (of {count(r.d_sae)}).")
    if math.isfinite(r.ce_loss_score):
        text = (f"Spliced into the model it recovers {format_number(r.ce_loss_score, 2)} of "
                "the cross-entropy lost to zero-ablation")
        if math.isfinite(r.ce_loss_score_mean_ablation):
            text += f" ({format_number(r.ce_loss_score_mean_ablation, 2)} against mean-ablation)"
        if math.isfinite(r.delta_ce):
            text += f", at a cost of {signed(r.delta_ce)} nats/token"
        parts.append(text + ".")
    if math.isfinite(r.dead_fraction):
        parts.append(f"{percent(r.dead_fraction)} of its features never fired on the "
                     "evaluation tokens.")
    return " ".join(parts) or "No headline metrics were recorded."


def _dead_text(r: SAEEvalResult) -> str:
    text = percent(r.dead_fraction)
    n = r.dead_fraction_n if r.dead_fraction_n is not None else r.d_sae
    if math.isfinite(r.n_dead):
        text += f" ({count(round(r.n_dead))} of {count(n)})"
    return text


def _lead(r: SAEEvalResult, checks: list[TargetCheck]) -> Markup:
    delta = signed(r.delta_ce)
    if math.isfinite(r.delta_ce) and ci_known(r.delta_ce_ci95):
        delta += f" {format_ci('delta_ce', r.delta_ce_ci95)}"
    delta_shown = escape(delta) + _delta_noise(r)
    facts: list[tuple[str, str, str]] = [
        ("L0 (active features / token)", format_with_ci("l0", r.l0, r.l0_ci95), "l0"),
        ("explained variance", format_with_ci("explained_variance", r.explained_variance,
                                              r.explained_variance_ci95), "explained_variance"),
        ("CE-loss score", format_with_ci("ce_loss_score", r.ce_loss_score,
                                         r.ce_loss_score_ci95), "ce_loss_score"),
        ("ΔCE (nats/token)", delta_shown, "delta_ce"),
        ("dead features", _dead_text(r), "dead_fraction"),
    ]
    known = {metric for *_, metric in facts}
    for c in checks:  # targets on other metrics get a fact of their own
        if c.metric not in known:
            facts.append((c.label, format_metric(c.metric, c.value), c.metric))
            known.add(c.metric)
    data = r.data or {}
    sha = data.get("sha256")
    return Markup(template_env().get_template("sae_lead.html.j2").render(
        headline=_headline(r), n_checks=len(checks),
        n_pass=sum(1 for c in checks if c.passed is True),
        facts=[(label, value, _target_mark(r, metric)) for label, value, metric in facts],
        sae_path=r.sae_path or MISSING, source=data.get("source") or MISSING,
        sha=str(sha)[:12] if sha else None,
        tokens=f"{count(r.n_tokens)} (CE: {count(r.n_ce_tokens)})",
    ))


def _reconstruction_rows(r: SAEEvalResult) -> list[list[Any]]:
    ev = r.explained_variance
    base = r.mse / (1 - ev) if math.isfinite(r.mse) and math.isfinite(ev) and ev < 1 else math.nan
    rows = []
    for key, label, note in (
        ("l0", "L0", f"std over tokens {format_number(r.l0_std, 1)}"),
        ("explained_variance", "explained variance", "baseline 0: the mean"),
        ("cosine_similarity", "cosine similarity", ""),
        ("mse", "MSE", f"predicting the mean ≈ {format_number(base, 4)}"),
    ):
        rows.append(_cells([label, format_metric(key, r.value(key)),
                            format_ci(key, getattr(r, f"{key}_ci95")), _target_mark(r, key),
                            note]))
    return rows


def _ce_rows(r: SAEEvalResult) -> list[list[Any]]:
    def minus_clean(v: float) -> str:
        return signed(v - r.ce_clean)

    delta = signed(r.delta_ce)
    if ci_known(r.delta_ce_ci95):
        delta += f" {format_ci('delta_ce', r.delta_ce_ci95)}"
    return [_cells(row) for row in [
        ["CE (nats/token)", r.ce_clean, r.ce_sae, r.ce_mean_ablation, r.ce_zero_ablation],
        ["ΔCE vs clean", "0", escape(delta) + _delta_noise(r), minus_clean(r.ce_mean_ablation),
         minus_clean(r.ce_zero_ablation)],
        ["KL(clean ‖ ·) (nats/token)", "0", format_with_ci("kl", r.kl_sae, r.kl_sae_ci95),
         format_metric("kl", r.kl_mean_ablation), format_metric("kl", r.kl_zero_ablation)],
        ["CE-loss score", "1 (by definition)",
         format_with_ci("s", r.ce_loss_score, r.ce_loss_score_ci95), "0 (mean baseline)",
         "0 (zero baseline)"],
    ]]


def _density_facts(r: SAEEvalResult) -> list[tuple[str, Any]]:
    alive = sorted(v for v in r.feature_density if math.isfinite(v) and v > 0)
    top = sorted(((v, i) for i, v in enumerate(r.feature_density) if math.isfinite(v) and v > 0),
                 reverse=True)[:8]
    dead_mark, dense_mark = _target_mark(r, "dead_fraction"), _target_mark(r, "dense_fraction")
    return [(k, escape(v) if isinstance(v, str) else v) for k, v in [
        ("dead features", Markup("{} {}").format(_dead_text(r), dead_mark or "")),
        ("dense features", Markup("{} (fire on more than {} of tokens) {}").format(
            percent(r.dense_fraction), percent(r.dense_threshold),
            dense_mark or "")),
        ("median density of live features",
         percent(alive[len(alive) // 2] if alive else math.nan)),
        ("densest features", ", ".join(f"#{i} {percent(v)}" for v, i in top) or None),
    ]]


def _duration(s: float | None) -> str:
    if s is None or not math.isfinite(s):
        return MISSING
    if s < 60:
        return f"{s:.1f} s"
    m, sec = divmod(round(s), 60)
    h, m = divmod(m, 60)
    return f"{h} h {m:02d} min" if h else f"{m} min {sec:02d} s"


_SETTING_LABELS = {
    "layer": "layer", "d_sae": "features (d_sae)", "l1_coefficient": "L1 coefficient",
    "l0_coefficient": "L0 coefficient", "k": "k (active latents per token)",
    "aux_k": "AuxK latents", "aux_coefficient": "AuxK coefficient",
    "tokens": "training tokens", "batch_size": "batch size (tokens)", "lr": "learning rate",
    "resample_every": "resample every (steps)",
}


def _training_settings(r: SAEEvalResult) -> list[tuple[str, Any]] | None:
    tr = r.training
    if tr is None or tr.is_empty:
        return None
    settings: list[tuple[str, Any]] = []
    train = dict(tr.train or {})
    arch = train.pop("arch", None)
    items = list(train.items())
    if isinstance(arch, Mapping):  # the architecture's own settings, flattened in front
        items[2:2] = [("architecture", arch.get("name", "relu")),
                      *((k, v) for k, v in arch.items() if k != "name")]
    for k, v in items:
        is_int = isinstance(v, int) and not isinstance(v, bool)
        settings.append((_SETTING_LABELS.get(str(k), str(k)), f"{v:,}" if is_int else v))
    events = tr.events
    tps = tr.tokens_per_s if isinstance(tr.tokens_per_s, int | float) else math.nan
    settings += [
        ("steps recorded", tr.n_steps),
        ("resampling events", "; ".join(f"step {count(s)}: {count(k)} features"
                                        for s, k in events) if events else "none"),
        ("training time", _duration(tr.elapsed_s if isinstance(tr.elapsed_s, int | float)
                                    else None)),
        ("throughput", f"{count(round(tps))} tokens/s" if math.isfinite(tps) else None),
        ("MFU", f"{100 * tr.mfu:.2f}% of {tr.peak_flops / 1e9:,.0f} GFLOP/s"
         if isinstance(tr.mfu, float) and isinstance(tr.peak_flops, float) else None),
    ]
    cal = tr.calibration or {}
    if isinstance(cal.get("threshold"), int | float):
        settings.append(("inference threshold", (
            f"{cal['threshold']:.4g}, set from the final weights on "
            f"{count(int(cal.get('tokens', 0)))} training tokens (the moving average "
            f"during training was {cal.get('threshold_moving_average', math.nan):.4g})")))
    return [(k, escape(v) if isinstance(v, str) else v) for k, v in settings]


def sae_report(result: SAEEvalResult, manifest: Mapping[str, Any] | None = None) -> Report:
    """The SAE evaluation report of ``result`` (a page and its figures), with its manifest
    (``result.manifest`` unless given)."""
    r = result
    manifest = manifest if manifest is not None else (r.manifest or {})
    checks = r.checks()
    figs = {"reconstruction": (reconstruction_figure(r), "Reconstruction metrics with 95% CIs"),
            "ce": (ce_figure(r), "Next-token cross-entropy with the SAE spliced in"),
            "scores": (score_figure(r), "CE-loss scores with 95% CIs"),
            "density": (density_figure(r), "Histogram of log10 feature density")}
    settings = _training_settings(r)
    if settings is not None:
        figs["training"] = (training_figure(r), "Training curves per step")
    where = r.hook_point or (f"layer {r.layer}" if r.layer is not None else "unknown hook point")
    return render_page(
        "sae.html.j2",
        title=r.headline().title,
        subtitle=f"{where} · d_in {count(r.d_in)} → {count(r.d_sae)} features",
        lead=_lead(r, checks), manifest=manifest, stylesheets=["sae.css"],
        figures={name: ReportFigure(fig, titles=hover_titles(fig), label=label)
                 for name, (fig, label) in figs.items()},
        r=r, n_tokens=count(r.n_tokens), n_ce_tokens=count(r.n_ce_tokens),
        hook=r.hook_point or "the hook point", recon_rows=_reconstruction_rows(r),
        ce_rows=_ce_rows(r), density_facts=_density_facts(r), settings=settings,
        dense_pct=percent(r.dense_threshold),
    )
