"""The linear-probe report: held-out accuracy by layer next to its baselines, and the
ablation check of the probe's direction.

Lays out a :class:`~interp.probing.results.ProbeResult` (with its optional
``ablation``) through ``templates/probe.html.j2``; the figures come from
:mod:`interp.probing.figures`. Missing numbers (NaN) show as "—"; every string is
escaped.
"""

from __future__ import annotations

import math
import os
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from markupsafe import Markup

from interp.display import plus_minus, signed
from interp.probing.figures import (
    DIRECTION_NAMES,
    ablation_figure,
    ablation_tooltips,
    accuracy_figure,
    accuracy_tooltips,
    panel_keys,
    pct_text,
    z_text,
)
from interp.probing.results import AblationResult, ProbeResult
from interp.runs.paths import shown_path
from reports.html import (
    MISSING,
    Report,
    ReportFigure,
    atomic_write_text,
    format_number,
    noise_label,
    render_page,
    template_env,
)

__all__ = ["probe_report", "render_probe_report", "write_probe_report"]

SHORT_NAMES = {"probe": "probe", "mean_difference": "mean difference"}


def _mean_std(values: Sequence[float | None], digits: int = 3) -> str:
    vals = [v for v in values if v is not None and math.isfinite(v)]
    if not vals:
        return MISSING
    spread = statistics.stdev(vals) if len(vals) > 1 else None
    return plus_minus(statistics.fmean(vals), spread, digits)


def _split_text(result: ProbeResult) -> str:
    ds = result.dataset
    split = ds.split if ds is not None else result.config.split
    if split == "group":
        groups = ds.n_groups if ds is not None else None
        return "by group" + (f" ({groups} groups, held out whole)" if groups else "")
    return "stratified (no groups)" if split == "stratified" else split


def _layer_rows(result: ProbeResult) -> list[dict[str, Any]]:
    best = result.best_layer()
    sel, sel_ci = result.selectivity(), result.selectivity_ci()
    rows = []
    for i, s in enumerate(result.layers):
        def f(key: str, s: Any = s) -> str:
            return format_number(s.mean(key))

        rows.append({
            "layer": s.layer, "best": s.layer == best,
            "cells": [plus_minus(s.mean("test_accuracy"), s.std("test_accuracy")), f("test_auroc")],
            "train": f("train_accuracy"),
            "train_title": "train: accuracy on the probe's own training data, "
            + plus_minus(s.mean("train_accuracy"), s.std("train_accuracy")),
            "rest": [f("shuffled_accuracy"), f("random_weights_accuracy"), f("bow_accuracy"),
                     f("control_task_accuracy"), signed(sel[i]), f("majority_rate")],
            "selectivity_noise": noise_label(*sel_ci[i]),
        })
    return rows


def _directions(ab: AblationResult) -> list[str]:
    order = {name: i for i, name in enumerate(DIRECTION_NAMES)}
    return sorted(ab.directions, key=lambda n: (order.get(n, len(order)), n))


def _ablation_rows(ab: AblationResult) -> list[dict[str, Any]]:
    clean = ab.clean_later_probe_accuracy
    rows = []
    for name in _directions(ab):
        d = ab.directions[name]
        e = d.effect
        later = math.nan if e.later_probe_accuracy is None else e.later_probe_accuracy
        acc = format_number(later)
        if clean is not None and math.isfinite(later) and math.isfinite(clean):
            acc += f" ({signed(later - clean)})"
        removed = e.logit_diff_removed_fraction
        rnd = d.random
        rows.append({
            "name": SHORT_NAMES.get(name, name),
            "cells": [format_number(e.kl, 4), _pct_z(d.kl_percentile, d.kl_z),
                      signed(e.logit_diff_change),
                      _pct_z(d.logit_diff_percentile, d.logit_diff_z),
                      f"{100 * removed:.0f}%" if removed is not None and math.isfinite(removed)
                      else MISSING, acc, format_number(e.variance)],
            "n_random": len(rnd),
            "random": [_mean_std([r.kl for r in rnd], 4), "", _mean_std(
                [r.logit_diff_change for r in rnd]), "", "",
                _mean_std([r.later_probe_accuracy for r in rnd]),
                _mean_std([r.variance for r in rnd])],
        })
    return rows


def _pct_z(pct: float | None, z: float | None) -> str:
    if (pct is None or not math.isfinite(pct)) and (z is None or math.isnan(z)):
        return MISSING
    return f"{pct_text(pct)} / {z_text(z)}"


def _lead(result: ProbeResult) -> Markup:
    ds = result.dataset
    facts: list[tuple[str, Any]] = [
        ("model", result.model_id),
        ("dataset", shown_path(ds.path) if ds else result.config.dataset),
        ("examples", f"{format_number(ds.n if ds else result.n_examples)} "
                     f"({result.n_train} train / {result.n_test} test)"),
        ("split", _split_text(result)),
    ]
    if ds is not None and ds.label_names:
        facts.append(("labels", " / ".join(ds.label_names)))
    v = result.verdict()
    if result.layers:
        st = result.stats(result.best_layer())
        facts += [("best layer", st.layer),
                  ("held-out accuracy",
                   f"{plus_minus(st.mean('test_accuracy'), st.std('test_accuracy'))}"
                   f" over {result.config.seeds} seeds")]
        sel = st.mean("test_accuracy") - st.mean("control_task_accuracy")
        ct = st.mean("control_task_accuracy")
        memorises = math.isfinite(ct) and ct >= 0.6
    else:
        st, sel, ct, memorises = None, math.nan, math.nan, False
    html = template_env().get_template("probe_lead.html.j2").render(
        v=v, layer=st.layer if st else None, sel=sel, ct=ct, memorises=memorises, facts=facts,
        warnings=result.warnings)
    return Markup(html)


def probe_report(result: ProbeResult, manifest: Mapping[str, Any] | None = None) -> Report:
    """The linear-probe report of ``result`` (a page and its figures), with its manifest
    (``result.manifest`` unless given)."""
    manifest = manifest if manifest is not None else (result.manifest or {})
    figures: dict[str, ReportFigure] = {}
    if result.layers:
        figures["accuracy"] = ReportFigure(accuracy_figure(result),
                                           titles=accuracy_tooltips(result),
                                           label="Held-out accuracy by layer")
    ab = result.ablation
    names = _directions(ab) if ab is not None else []
    for name in names:
        assert ab is not None
        figures[f"ablation-{name}"] = ReportFigure(
            ablation_figure(ab, name), titles=ablation_tooltips(ab, name),
            label=f"Ablating the {DIRECTION_NAMES.get(name, name)}: effect vs random directions")
    ds = result.dataset
    path = ds.path if ds is not None else (result.config.dataset or "unknown")
    layers = result.layer_numbers
    if len(layers) > 8 and layers == list(range(layers[0], layers[-1] + 1)):
        layer_text = f"{layers[0]}–{layers[-1]} ({len(layers)} layers)"
    else:
        layer_text = ", ".join(str(x) for x in layers) or MISSING
    pos = result.config.position
    setup = [
        ("dataset", path),
        ("dataset hash", Markup("<code>{}</code>").format(result.config.dataset_hash)
         if result.config.dataset_hash else None),
        ("examples", ds.n if ds is not None else result.n_examples),
        ("labels (0 / 1)", " / ".join(ds.label_names) if ds is not None else None),
        ("split", _split_text(result)),
        ("test fraction", result.config.test_size),
        ("train / test examples (per seed)", f"{result.n_train} / {result.n_test}"),
        ("seeds", result.config.seeds),
        ("layers", layer_text),
        ("position", "last token" if pos == "last" else "mean over tokens" if pos == "mean"
         else f"token {pos}"),
        ("regularisation C", result.config.C),
    ]
    random_weights_off = bool(layers) and all(
        math.isnan(x) for x in result.means("random_weights_accuracy"))
    return render_page(
        "probe.html.j2",
        title=f"Linear probe — {result.model_id}",
        subtitle=f"Is the label linearly readable from the residual stream? Dataset: {path}.",
        lead=_lead(result), manifest=manifest, figures=figures, stylesheets=["probe.css"],
        n_layers=len(layers), best_layer=result.best_layer() if layers else None,
        layer_rows=_layer_rows(result) if layers else [],
        split=ds.split if ds is not None else result.config.split,
        random_weights_off=random_weights_off, setup=setup, ablation=ab, directions=names,
        direction_names=DIRECTION_NAMES, ablation_rows=_ablation_rows(ab) if ab else [],
        has_gap={name: "gap" in panel_keys(ab, name) for name in names} if ab else {},
    )


def render_probe_report(result: ProbeResult, manifest: Mapping[str, Any]) -> str:
    """The linear-probe report as one self-contained HTML document."""
    return probe_report(result, manifest).html


def write_probe_report(path: str | os.PathLike[str], result: ProbeResult,
                       manifest: Mapping[str, Any]) -> Path:
    """Render the probe report and write it atomically to ``path``."""
    return atomic_write_text(path, render_probe_report(result, manifest))
