"""The SAE evaluation report: reconstruction, sparsity, the SAE spliced into the model, features.

Input is the ``results.json`` of ``interp sae eval``: the headline metrics (``l0``,
``explained_variance``, ``mse``, ``cosine_similarity``, each with a ``_ci95`` sibling), the
spliced cross-entropies (``ce_clean``, ``ce_sae``, ``ce_mean_ablation``, ``ce_zero_ablation``)
with the CE-loss scores, ``delta_ce`` and the KL divergences, the feature densities
(``feature_density``, ``density_histogram``, ``dead_fraction``, ``dense_fraction``), and
optionally ``targets`` and ``training`` (settings, per-step history, resampling events).

Every number may be missing, None or NaN: it is then shown as "—" and left out of the
figures. Every string is escaped; the figures are inline SVG from :mod:`reports.sae_charts`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from interp.errors import InterpError
from reports.html import (
    MISSING,
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
from reports.sae_charts import (
    BAD,
    FRACTIONS,
    INK,
    Strip,
    as_floats,
    as_mapping,
    ce_chart_svg,
    curve_svg,
    density_bins,
    density_svg,
    fmt_ci,
    fmt_count,
    fmt_metric,
    fmt_pct,
    fmt_signed,
    fmt_with_ci,
    parse_ci,
    strip_range,
    strips_svg,
)

__all__ = ["TARGETS", "render_sae_report"]

#: Known targets: key in ``res["targets"]`` -> (metric key, comparison, label).
#: Other keys follow the suffix rule: ``<metric>_max`` is "≤", ``<metric>_min`` and a
#: bare ``<metric>`` are "≥".
TARGETS: dict[str, tuple[str, str, str]] = {
    "explained_variance": ("explained_variance", ">=", "explained variance"),
    "l0_max": ("l0", "<=", "L0"),
    "dead_fraction_max": ("dead_fraction", "<=", "dead features"),
    "ce_loss_score": ("ce_loss_score", ">=", "CE-loss score"),
}

_OPS = {">=": "≥", "<=": "≤"}


def _short(value: float) -> str:
    return f"{value:g}"


# ------------------------------------------------------------------------ targets


@dataclass
class _Check:
    key: str
    metric: str
    label: str
    op: str
    target: float
    value: float

    @property
    def passed(self) -> bool | None:
        if not (math.isfinite(self.value) and math.isfinite(self.target)):
            return None
        return self.value >= self.target if self.op == ">=" else self.value <= self.target

    @property
    def target_text(self) -> str:
        shown = fmt_pct(self.target) if self.metric in FRACTIONS else _short(self.target)
        if not math.isfinite(self.target):
            shown = MISSING
        return f"{_OPS[self.op]} {shown}"


def _checks(res: Mapping[str, Any]) -> list[_Check]:
    out = []
    for key, target in as_mapping(res.get("targets")).items():
        key = str(key)
        if key in TARGETS:
            metric, op, label = TARGETS[key]
        elif key.endswith("_max"):
            metric, op, label = key[:-4], "<=", key[:-4].replace("_", " ")
        elif key.endswith("_min"):
            metric, op, label = key[:-4], ">=", key[:-4].replace("_", " ")
        else:
            metric, op, label = key, ">=", key.replace("_", " ")
        out.append(_Check(key, metric, label, op, _f(target), _f(res.get(metric))))
    return out


def _mark(check: _Check | None) -> Markup:
    """A ✓ / ✗ / ? badge with the target, tagged for tests and tooltips."""
    if check is None:
        return Markup("")
    passed = check.passed
    if passed is True:
        cls, sym, state = "badge ok", "✓", "true"
    elif passed is False:
        cls, sym, state = "badge warn", "✗", "false"
    else:
        cls, sym, state = "badge", "?", "unknown"
    style = Markup("") if passed is not None else Markup(
        ' style="background:#eef0f4;color:#7a8496"'
    )
    tip = f"target: {check.label} {check.target_text} (judged on the point estimate)"
    return Markup(
        '<span class="{} target-mark" data-target="{}" data-pass="{}" title="{}"{}>{} target {}'
        "</span>"
    ).format(cls, check.key, state, tip, style, sym, check.target_text)


def _check_for(checks: Sequence[_Check], metric: str) -> _Check | None:
    return next((c for c in checks if c.metric == metric), None)


# ----------------------------------------------------------------------- sections


def _facts(items: Sequence[tuple[str, Any]]) -> Markup:
    return Markup('<dl class="facts">{}</dl>').format(Markup("").join(
        Markup("<div><dt>{}</dt><dd>{}</dd></div>").format(k, v) for k, v in items))


def _headline(res: Mapping[str, Any]) -> str:
    parts = []
    ev, l0 = _f(res.get("explained_variance")), _f(res.get("l0"))
    if math.isfinite(ev) and math.isfinite(l0):
        parts.append(f"The SAE reconstructs {fmt_pct(ev)} of the activations' variance with "
                     f"{format_number(l0, 1)} active features per token (of "
                     f"{fmt_count(res.get('d_sae'))}).")
    score, score_m = _f(res.get("ce_loss_score")), _f(res.get("ce_loss_score_mean_ablation"))
    if math.isfinite(score):
        text = (f"Spliced into the model it recovers {format_number(score, 2)} of the "
                "cross-entropy lost to zero-ablation")
        if math.isfinite(score_m):
            text += f" ({format_number(score_m, 2)} against mean-ablation)"
        delta = _f(res.get("delta_ce"))
        if math.isfinite(delta):
            text += f", at a cost of {fmt_signed(delta)} nats/token"
        parts.append(text + ".")
    dead = _f(res.get("dead_fraction"))
    if math.isfinite(dead):
        parts.append(f"{fmt_pct(dead)} of its features never fired on the evaluation tokens.")
    return " ".join(parts) or "No headline metrics were recorded."


def _lead(res: Mapping[str, Any], checks: Sequence[_Check]) -> Markup:
    def val(metric: str, text: str) -> Markup:
        return Markup("{} {}").format(text, _mark(_check_for(checks, metric)))

    dead = res.get("dead_fraction")
    dead_text = fmt_pct(dead)
    n_feat = res.get("dead_fraction_n", res.get("d_sae"))
    n_dead = _f(dead) * _f(n_feat)
    if math.isfinite(n_dead):
        dead_text += f" ({fmt_count(round(n_dead))} of {fmt_count(n_feat)})"
    headline = [
        ("L0 (active features / token)",
         val("l0", fmt_with_ci("l0", res.get("l0"), res.get("l0_ci95")))),
        ("explained variance",
         val("explained_variance", fmt_with_ci("explained_variance", res.get("explained_variance"),
                                            res.get("explained_variance_ci95")))),
        ("CE-loss score",
         val("ce_loss_score", fmt_with_ci("ce_loss_score", res.get("ce_loss_score"),
                                       res.get("ce_loss_score_ci95")))),
        ("ΔCE (nats/token)", val("delta_ce", fmt_signed(res.get("delta_ce")) + (
            f" {fmt_ci('delta_ce', parse_ci(res.get('delta_ce_ci95')))}"
            if parse_ci(res.get("delta_ce_ci95")) and math.isfinite(_f(res.get("delta_ce")))
            else ""))),
        ("dead features", val("dead_fraction", dead_text)),
    ]
    known = {"l0", "explained_variance", "ce_loss_score", "delta_ce", "dead_fraction"}
    for c in checks:  # targets on other metrics get a fact of their own
        if c.metric not in known:
            headline.append((c.label, val(c.metric, fmt_metric(c.metric, c.value))))
            known.add(c.metric)
    parts = [Markup('<p class="sae-headline" style="font-size:15px;margin:0 0 4px">{}</p>')
             .format(_headline(res))]
    if checks:
        n_pass = sum(1 for c in checks if c.passed is True)
        all_ok = n_pass == len(checks)
        parts.append(Markup('<p style="margin:0">{}</p>').format(Markup(
            '<span class="badge {}" data-targets-met="{}">meets {} of {} targets</span>').format(
            "ok" if all_ok else "warn", n_pass, n_pass, len(checks))))
    parts.append(_facts(headline))
    data = as_mapping(res.get("data"))
    sha = data.get("sha256")
    parts.append(_facts([
        ("SAE", Markup("<code>{}</code>").format(res.get("sae_path") or MISSING)),
        ("evaluation text", Markup("{}{}").format(
            data.get("source") or MISSING,
            Markup(' <code title="sha256">{}…</code>').format(str(sha)[:12]) if sha else "")),
        ("tokens", f"{fmt_count(res.get('n_tokens'))} (CE: {fmt_count(res.get('n_ce_tokens'))})"),
    ]))
    return Markup("").join(parts)


def _reconstruction_section(res: Mapping[str, Any], checks: Sequence[_Check]) -> Section:
    def get(key: str) -> tuple[float, tuple[float, float] | None]:
        return _f(res.get(key)), parse_ci(res.get(f"{key}_ci95"))

    rows = []
    l0, l0_ci = get("l0")
    c_l0 = _check_for(checks, "l0")
    lo, hi = strip_range([l0, *(l0_ci or ()),
                           c_l0.target if c_l0 else math.nan], 0.0, None)
    d_sae = fmt_count(res.get("d_sae"))
    rows.append(Strip("l0", "L0", f"active features per token, of {d_sae}", l0, l0_ci, lo, hi,
                       c_l0))
    ev, ev_ci = get("explained_variance")
    c_ev = _check_for(checks, "explained_variance")
    lo, hi = strip_range([ev, *(ev_ci or ())], 0.0, 1.0)
    rows.append(Strip("explained_variance", "explained variance",
                       "1 − error / variance; 0 = predict the mean", ev, ev_ci, lo, hi, c_ev))
    cos, cos_ci = get("cosine_similarity")
    lo, hi = strip_range([cos, *(cos_ci or ())], 0.0, 1.0)
    rows.append(Strip("cosine_similarity", "cosine similarity", "between x and x̂, per token",
                       cos, cos_ci, lo, hi, _check_for(checks, "cosine_similarity")))
    mse, mse_ci = get("mse")
    base = mse / (1 - ev) if math.isfinite(mse) and math.isfinite(ev) and ev < 1 else math.nan
    lo, hi = strip_range([mse, *(mse_ci or ()), base], 0.0, None)
    rows.append(Strip("mse", "MSE", "‖x − x̂‖², in the activations' units", mse, mse_ci, lo, hi,
                       _check_for(checks, "mse"),
                       (base, f"predicting the mean: ≈ {format_number(base, 4)} "
                              "(= MSE / (1 − EV))")))
    l0_std = _f(res.get("l0_std"))
    tbl = table(
        ["metric", "value", "95% CI", "target", "notes"],
        [
            ["L0", fmt_metric("l0", l0), fmt_ci("l0", l0_ci), _target_cell(c_l0),
             f"std over tokens {format_number(l0_std, 1)}"],
            ["explained variance", fmt_metric("explained_variance", ev),
             fmt_ci("explained_variance", ev_ci), _target_cell(c_ev), "baseline 0: the mean"],
            ["cosine similarity", fmt_metric("cosine_similarity", cos),
             fmt_ci("cosine_similarity", cos_ci),
             _target_cell(_check_for(checks, "cosine_similarity")), ""],
            ["MSE", fmt_metric("mse", mse), fmt_ci("mse", mse_ci),
             _target_cell(_check_for(checks, "mse")),
             f"predicting the mean ≈ {format_number(base, 4)}"],
        ],
    )
    caption = (f"Each metric on its own axis: the dot is the estimate over "
               f"{fmt_count(res.get('n_tokens'))} tokens, the whisker its 95% CI, the dotted red "
               "line the target (the tinted side fails it), the grey triangle a baseline. A green "
               "dot meets its target, a red one misses it.")
    return Section("Reconstruction vs sparsity", figure(strips_svg(rows), caption) + tbl)


def _target_cell(check: _Check | None) -> Markup | None:
    return _mark(check) if check else None


def _spliced_section(res: Mapping[str, Any], checks: Sequence[_Check]) -> Section:
    s, s_ci = _f(res.get("ce_loss_score")), parse_ci(res.get("ce_loss_score_ci95"))
    sm, sm_ci = (_f(res.get("ce_loss_score_mean_ablation")),
                 parse_ci(res.get("ce_loss_score_mean_ablation_ci95")))
    c_s = _check_for(checks, "ce_loss_score")
    lo, hi = strip_range([s, sm, *(s_ci or ()), *(sm_ci or ())], 0.0, 1.0)
    strips = strips_svg([
        Strip("ce_loss_score", "CE-loss score", "vs zero-ablation; 1 = clean, 0 = zero",
               s, s_ci, lo, hi, c_s),
        Strip("ce_loss_score_mean_ablation", "CE-loss score", "vs mean-ablation (stricter)",
               sm, sm_ci, lo, hi, _check_for(checks, "ce_loss_score_mean_ablation")),
    ])
    clean = _f(res.get("ce_clean"))

    def minus_clean(key: str) -> str:
        return fmt_signed(_f(res.get(key)) - clean)

    tbl = table(
        ["", "clean model", "SAE spliced in", "mean ablation", "zero ablation"],
        [
            ["CE (nats/token)", _f(res.get("ce_clean")), _f(res.get("ce_sae")),
             _f(res.get("ce_mean_ablation")), _f(res.get("ce_zero_ablation"))],
            ["ΔCE vs clean", "0", fmt_signed(res.get("delta_ce")) + (
                f" {fmt_ci('delta_ce', parse_ci(res.get('delta_ce_ci95')))}"
                if parse_ci(res.get("delta_ce_ci95")) else ""),
             minus_clean("ce_mean_ablation"), minus_clean("ce_zero_ablation")],
            ["KL(clean ‖ ·) (nats/token)", "0",
             fmt_with_ci("kl", res.get("kl_sae"), res.get("kl_sae_ci95")),
             fmt_metric("kl", res.get("kl_mean_ablation")),
             fmt_metric("kl", res.get("kl_zero_ablation"))],
            ["CE-loss score", "1 (by definition)", fmt_with_ci("s", s, s_ci), "0 (mean baseline)",
             "0 (zero baseline)"],
        ],
    )
    ce_caption = (
        f"Next-token cross-entropy over {fmt_count(res.get('n_ce_tokens'))} tokens with the "
        f"activation at {res.get('hook_point') or 'the hook point'} left alone (clean), replaced "
        "by the SAE's reconstruction, by its mean, or by zero. Dashed: the clean model. On the SAE "
        "row, red is what the SAE loses against the clean model and green what it recovers of the "
        "zero-ablation gap; their ratio is the CE-loss score. Whisker: 95% CI of ΔCE. Right: "
        "KL(clean ‖ spliced) per token."
    )
    body = (figure(ce_chart_svg(res), ce_caption)
            + figure(strips, "The two CE-loss scores, each with its 95% CI. Zero-ablation is a "
                             "weak baseline (zero is far from any real activation); the "
                             "mean-ablation score is the harder test.")
            + tbl)
    return Section("Spliced into the model", body)


def _density_section(res: Mapping[str, Any], checks: Sequence[_Check]) -> Section:
    dens = as_floats(res.get("feature_density"))
    fin = sorted(v for v in dens if math.isfinite(v))
    alive = [v for v in fin if v > 0]
    median = alive[len(alive) // 2] if alive else math.nan
    top = sorted(((v, i) for i, v in enumerate(dens) if math.isfinite(v) and v > 0),
                 reverse=True)[:8]
    n = res.get("dead_fraction_n", res.get("d_sae"))
    facts = {
        "dead features": Markup("{} ({} of {}) {}").format(
            fmt_with_ci("dead_fraction", res.get("dead_fraction"), res.get("dead_fraction_ci95")),
            fmt_count(_f(res.get("dead_fraction")) * _f(n)), fmt_count(n),
            _mark(_check_for(checks, "dead_fraction"))),
        "dense features": Markup("{} (fire on more than {} of tokens) {}").format(
            fmt_with_ci("dense_fraction", res.get("dense_fraction"),
                        res.get("dense_fraction_ci95")),
            fmt_pct(res.get("dense_threshold")), _mark(_check_for(checks, "dense_fraction"))),
        "median density of live features": fmt_pct(median),
        "densest features": ", ".join(f"#{i} {fmt_pct(v)}" for v, i in top) or None,
    }
    caption = (
        "How often each feature fires (log scale). The red bar on the left counts the dead "
        f"features, which fired on none of the {fmt_count(res.get('n_tokens'))} tokens; the dotted "
        "line is one token, the rarest firing this sample can resolve. Features right of the "
        "orange line are dense; many dense features usually means the SAE has not learnt "
        "sparse directions."
    )
    edges, counts, n_dead = density_bins(res)
    chart = density_svg(edges, counts, n_dead=n_dead, n_tokens=res.get("n_tokens"),
                        dense_threshold=res.get("dense_threshold"))
    return Section("Feature density", figure(chart, caption) + kv_table(facts))


def _duration(seconds: Any) -> str:
    s = _f(seconds)
    if not math.isfinite(s):
        return MISSING
    if s < 60:
        return f"{s:.1f} s"
    m, sec = divmod(round(s), 60)
    h, m = divmod(m, 60)
    return f"{h} h {m:02d} min" if h else f"{m} min {sec:02d} s"


_SETTING_LABELS = {
    "layer": "layer",
    "d_sae": "features (d_sae)",
    "l1_coefficient": "L1 coefficient",
    "tokens": "training tokens",
    "batch_size": "batch size (tokens)",
    "lr": "learning rate",
    "resample_every": "resample every (steps)",
}


def _training_section(res: Mapping[str, Any], checks: Sequence[_Check]) -> Section | None:
    tr = res.get("training")
    if not isinstance(tr, Mapping) or not tr:
        return None
    hist = as_mapping(tr.get("history"))
    cfg = as_mapping(tr.get("train"))
    if not hist and not cfg:  # e.g. an SAE trained elsewhere: nothing to show
        return None
    resampled = []
    for ev in tr.get("resampled") or []:
        if isinstance(ev, Sequence) and not isinstance(ev, str) and len(ev) >= 2:
            resampled.append((_f(ev[0]), _f(ev[1])))

    def target(metric: str) -> list[tuple[float, str, str]]:
        c = _check_for(checks, metric)
        return [(c.target, f"target {c.target_text}", BAD)] if c else []

    def held_out(key: str) -> list[tuple[float, str, str]]:
        return [(_f(res.get(key)), "held-out eval", INK)]

    specs = [
        ("loss", "Loss (MSE + L1 penalty)", "loss", "#4e79a7", [], format_number),
        ("l0", "L0", "active features / token", "#f28e2b", held_out("l0") + target("l0"),
         lambda v: format_number(v, 1)),
        ("explained_variance", "Explained variance", "EV", "#59a14f",
         held_out("explained_variance") + target("explained_variance"), format_number),
        ("dead_fraction", "Dead fraction", "share of features", "#e15759",
         held_out("dead_fraction") + target("dead_fraction"), fmt_pct),
    ]
    charts = []
    for key, title, y_label, color, refs, fmt in specs:
        ys = as_floats(hist.get(key))
        if ys:
            charts.append(curve_svg(title, ys, y_label=y_label, color=color,
                                     resampled=resampled, refs=refs, fmt=fmt))
    parts = []
    n_steps = max((len(as_floats(v)) for v in hist.values()), default=0)
    if charts:
        caption = ("Per step on the training batch (faint) and its moving average. Dashed black: "
                   "the held-out value on this page; dashed red: the target; purple: steps where "
                   "dead features were resampled. The training dead fraction counts features "
                   "silent over the dead window, not over the evaluation tokens.")
        parts.append(figure(Markup('<div class="fig-row">{}</div>').format(
            Markup("").join(charts)), caption))
    settings: dict[str, Any] = {}
    for k, v in cfg.items():
        is_int = isinstance(v, int) and not isinstance(v, bool)
        settings[_SETTING_LABELS.get(str(k), str(k))] = f"{v:,}" if is_int else v
    settings["steps recorded"] = n_steps
    settings["resampling events"] = (
        "; ".join(f"step {fmt_count(s)}: {fmt_count(k)} features" for s, k in resampled)
        if resampled else "none")
    settings["training time"] = _duration(tr.get("elapsed_s"))
    tps = _f(tr.get("tokens_per_s"))
    settings["throughput"] = f"{fmt_count(round(tps))} tokens/s" if math.isfinite(tps) else None
    parts.append(kv_table(settings, caption="Training settings"))
    return Section("Training", Markup("").join(parts))


def _howto_section(res: Mapping[str, Any]) -> Section:
    items = [
        ("L0", "the mean number of features active (> 0) per token. Lower is sparser."),
        ("explained variance (EV)", "1 − Σ‖x − x̂‖² / Σ‖x − x̄‖²: 1 is a perfect reconstruction, "
         "0 is no better than predicting the mean activation x̄ (the baseline)."),
        ("MSE", "the mean squared reconstruction error ‖x − x̂‖², in the activations' own units; "
         "compare it with the predict-the-mean baseline, not across layers or models."),
        ("cosine similarity", "the mean cosine between each activation and its reconstruction."),
        ("CE (spliced)", "the model's next-token cross-entropy (nats/token) when the activation at "
         "the hook point is replaced by the SAE's reconstruction, by the mean activation (mean "
         "ablation) or by zero (zero ablation)."),
        ("CE-loss score", "(CE_zero − CE_SAE) / (CE_zero − CE_clean): 1 is as good as the clean "
         "model, 0 as bad as zero-ablation. The mean-ablation version uses CE_mean instead of "
         "CE_zero and is the stricter one."),
        ("ΔCE", "CE_SAE − CE_clean: what splicing the SAE in costs, in nats per token."),
        ("KL", "KL(clean ‖ spliced), per token: how far the spliced model's next-token "
         "distribution moves from the clean model's, not just on the correct token."),
        ("dead / dense", f"a feature is dead if it fired on none of the evaluation tokens, dense "
         f"if it fires on more than {fmt_pct(res.get('dense_threshold'))} of them."),
        ("95% CI", "the uncertainty of each estimate from the finite token sample, as computed "
         "by interp sae eval. Targets are judged on the point estimate."),
    ]
    dl = Markup('<dl class="sae-howto" style="margin:0 0 10px">{}</dl>').format(
        Markup("").join(Markup('<dt style="font-weight:600;margin-top:6px">{}</dt>'
                               '<dd style="margin:0 0 0 18px;max-width:92ch">{}</dd>')
                        .format(k, v) for k, v in items))
    return Section("How to read this", paragraph(
        "Reconstruction metrics say how well the SAE rebuilds the activation; the spliced metrics "
        "say whether what it loses matters to the model. Read them together, and against their "
        "baselines.") + dl + note(
        "Position 0 of every window is excluded from every metric (L0, EV, MSE, cosine, "
        "densities and the spliced CE): its residual norm is about 7× the others', and splicing "
        "there would dominate the CE numbers."))


# ------------------------------------------------------------------------- report


def render_sae_report(res: dict, manifest: dict) -> str:
    """The SAE evaluation report (``results.json`` of ``interp sae eval``) as one HTML page."""
    if not isinstance(res, Mapping):
        raise InterpError(f"SAE results must be a dict, not {type(res).__name__}")
    checks = _checks(res)
    sections = [
        _reconstruction_section(res, checks),
        _spliced_section(res, checks),
        _density_section(res, checks),
    ]
    training = _training_section(res, checks)
    if training is not None:
        sections.append(training)
    sections.append(_howto_section(res))
    model = res.get("model") or "unknown model"
    where = res.get("hook_point") or (
        f"layer {res.get('layer')}" if res.get("layer") is not None else "unknown hook point")
    subtitle = (f"{where} · d_in {fmt_count(res.get('d_in'))} → "
                f"{fmt_count(res.get('d_sae'))} features")
    return render_report(f"SAE evaluation — {model}", sections, dict(manifest),
                         subtitle=subtitle, lead=_lead(res, checks))
