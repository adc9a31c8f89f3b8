"""The linear-probe HTML report: held-out accuracy by layer, next to its baselines.

Input is the probe ``results.json`` dict (see :meth:`interp.probing.probes.ProbeResult.to_dict`),
lists per layer aligned with ``layers``::

    {"model": str, "config": {...}, "n_examples": int, "n_train": int, "n_test": int,
     "layers": [int], "best_layer": int, "warnings": [str],
     "<metric>_mean": [float], "<metric>_std": [float],   # for every metric in METRICS
     "control_accuracy_mean": [float], "selectivity": [float],
     "dataset": {"path": str, "n": int, "label_names": [str, str], "split": str,
                 "n_groups": int | None},
     "ablation": {...}}                                    # optional, interp.probing.ablation

Missing numbers (None, NaN) are shown as "—". Every string is escaped.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from markupsafe import Markup

from reports.heatmap import bar_chart_svg, histogram_svg, line_chart_svg
from reports.html import (
    MISSING,
    Section,
    atomic_write_text,
    figure,
    format_number,
    kv_table,
    paragraph,
    render_report,
    table,
)
from reports.html import (
    as_float as _f,
)
from reports.html import (
    is_finite as _fin,
)

__all__ = ["render_probe_report", "verdict", "write_probe_report"]

METRICS = (
    "test_accuracy", "test_auroc", "train_accuracy", "shuffled_accuracy",
    "random_weights_accuracy", "bow_accuracy", "control_task_accuracy",
    "control_task_train_accuracy", "majority_rate",
)  # fmt: skip

#: The verdict rule: the best layer beats its best control clearly when the margin is
#: at least this much accuracy and more than SIGMAS seed standard deviations.
MIN_MARGIN = 0.05
SIGMAS = 3.0

CONTROLS = {
    "shuffled_accuracy": "shuffled labels",
    "random_weights_accuracy": "random weights",
    "bow_accuracy": "bag of words",
}

TEST_COLOR = "#3b5bdb"
TRAIN_COLOR = "#b9c4de"
CONTROL_COLOR = "#e07b28"
CONTROL_TASK_COLOR = "#9c4fb0"
MAJORITY_COLOR = "#8a93a3"
BOW_COLOR = "#d9a441"
SHUFFLED_COLOR = "#e8a06a"
RANDOM_COLOR = "#c77c4a"

DIRECTION_NAMES = {"probe": "probe direction", "mean_difference": "mean-difference direction"}
SHORT_NAMES = {"probe": "probe", "mean_difference": "mean difference"}

_FAINT = "color: var(--muted)"
_NUM = "font-family: var(--mono); font-size: 12.5px; font-variant-numeric: tabular-nums"


# ------------------------------------------------------------------------ numbers


def _series(r: Mapping[str, Any], key: str, n: int) -> list[float]:
    """``r[key]`` as n floats (NaN where missing or too short)."""
    raw = r.get(key)
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        return [math.nan] * n
    vals = [_f(v) for v in raw[:n]]
    return vals + [math.nan] * (n - len(vals))


def _mean(xs: Sequence[Any]) -> float:
    vals = [_f(x) for x in xs if _fin(x)]
    return sum(vals) / len(vals) if vals else math.nan


def _std(xs: Sequence[Any]) -> float:
    vals = [_f(x) for x in xs if _fin(x)]
    if len(vals) < 2:
        return math.nan
    m = sum(vals) / len(vals)
    return math.sqrt(sum((v - m) ** 2 for v in vals) / (len(vals) - 1))


def _pm(mean: Any, std: Any, digits: int = 3) -> str:
    """``"0.912 ± 0.013"``, ``"0.912"`` without a std, ``"—"`` without a mean."""
    if not _fin(mean):
        return MISSING
    m, sd = _f(mean), _f(std)
    if math.isfinite(sd) and abs(m) < 0.5 * 10**-digits <= sd:
        m = 0.0  # a mean that is zero at this precision, next to a visible spread
    text = format_number(m, digits).replace("-", "−")
    if math.isfinite(sd) and sd > 0:
        tiny = 0.5 * 10**-digits
        text += f" ± {sd:.{digits}f}" if sd >= tiny else f" ± <{10**-digits:.{digits}f}"
    return text


def _signed(value: Any, digits: int = 3) -> str:
    if not _fin(value):
        return MISSING
    x = _f(value)
    return ("+" if x > 0 else "−" if x < 0 else "") + format_number(abs(x), digits)


def _z_text(value: Any) -> str:
    x = _f(value)
    if math.isnan(x):
        return MISSING
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    return f"{x:.1f}".replace("-", "−")


def _pct_text(value: Any) -> str:
    return f"{_f(value):.0f}" if _fin(value) else MISSING


def _num_cell(text: str, *, faint: bool = False, title: str | None = None) -> Markup:
    """A numeric table cell as Markup (monospace; ``—`` muted; optionally faint)."""
    style = _NUM + ("; " + _FAINT if faint or text == MISSING else "")
    tip = Markup(' title="{}"').format(title) if title else Markup("")
    return Markup('<span style="{}"{}>{}</span>').format(style, tip, text)


def _note_div(text: str) -> Markup:
    """A note block as wide as the list notes (a ``<p class="note">`` is narrower)."""
    return Markup('<div class="note">{}</div>').format(text)


# ---------------------------------------------------------------------- the data


def _layer_data(r: Mapping[str, Any]) -> dict[str, Any]:
    layers = [int(x) for x in r.get("layers") or []]
    n = len(layers)
    d: dict[str, Any] = {"layers": layers, "n": n}
    for key in METRICS:
        d[key] = _series(r, f"{key}_mean", n)
        d[key + "_std"] = _series(r, f"{key}_std", n)
    d["control"] = _series(r, "control_accuracy_mean", n)
    if all(math.isnan(v) for v in d["control"]):
        d["control"] = [
            max((d[k][i] for k in CONTROLS if math.isfinite(d[k][i])), default=math.nan)
            for i in range(n)
        ]
    d["selectivity"] = _series(r, "selectivity", n)
    if all(math.isnan(v) for v in d["selectivity"]):
        d["selectivity"] = [
            t - c for t, c in zip(d["test_accuracy"], d["control_task_accuracy"], strict=True)
        ]
    best = r.get("best_layer")
    if isinstance(best, int) and best in layers:
        bi = layers.index(best)
    else:
        finite = [i for i in range(n) if math.isfinite(d["test_accuracy"][i])]
        bi = max(finite, key=lambda i: d["test_accuracy"][i]) if finite else 0
    d["best_index"] = bi
    return d


def verdict(result: Mapping[str, Any]) -> dict[str, Any]:
    """The headline judgement at the best layer.

    ``margin`` = held-out accuracy − best control accuracy (shuffled labels, random
    weights, bag of words); ``clear`` when margin ≥ 0.05 and margin > 3 × the
    held-out accuracy's seed std. Returns the numbers and a one-line ``text``.
    """
    d = _layer_data(result)
    if d["n"] == 0:
        return {"clear": False, "margin": math.nan, "text": "No layer was probed."}
    bi = d["best_index"]
    layer = d["layers"][bi]
    test, std, control = d["test_accuracy"][bi], d["test_accuracy_std"][bi], d["control"][bi]
    named = [name for k, name in CONTROLS.items() if abs(d[k][bi] - control) < 1e-9]
    control_name = named[0] if named else "best control"
    out: dict[str, Any] = {
        "layer": layer, "test": test, "std": std, "control": control,
        "control_name": control_name, "margin": math.nan, "sigmas": math.nan, "clear": False,
    }  # fmt: skip
    if not math.isfinite(test):
        out["text"] = f"Layer {layer} has no held-out accuracy: nothing to judge."
        return out
    if not math.isfinite(control):
        out["text"] = (
            f"Layer {layer} reaches {format_number(test)} held-out accuracy, but there is no "
            "control baseline to compare it with."
        )
        return out
    margin = test - control
    sigmas = margin / std if math.isfinite(std) and std > 0 else math.nan
    clear = margin >= MIN_MARGIN and (margin > SIGMAS * std if math.isfinite(std) else False)
    if math.isfinite(sigmas):
        spread = f"{sigmas:.1f} seed-std".replace("-", "−", 1 if sigmas < 0 else 0)
    elif math.isfinite(std):
        spread = "no seed-to-seed spread"
    else:
        spread = "seed spread unknown"
    ctrl = f"{control_name}, {format_number(control)}"
    if clear:
        text = (
            f"Layer {layer} beats the best control ({ctrl}) by {format_number(margin)} ({spread})."
        )
    else:
        text = (
            f"Layer {layer} does not clearly beat its controls: margin {_signed(margin)} over "
            f"the best control ({ctrl}), {spread}; a clear win needs ≥ {MIN_MARGIN:g} and "
            f"> {SIGMAS:g} seed-std."
        )
    out.update(margin=margin, sigmas=sigmas, clear=clear, text=text)
    return out


def _dataset(r: Mapping[str, Any]) -> dict[str, Any]:
    cfg = r.get("config") if isinstance(r.get("config"), Mapping) else {}
    ds = r.get("dataset") if isinstance(r.get("dataset"), Mapping) else {}
    labels = ds.get("label_names")
    return {
        "path": str(ds.get("path") or cfg.get("dataset") or "unknown"),
        "n": ds.get("n", r.get("n_examples")),
        "labels": [str(x) for x in labels]
        if isinstance(labels, Sequence) and not isinstance(labels, str)
        else None,
        "split": str(ds.get("split") or cfg.get("split") or "unknown"),
        "n_groups": ds.get("n_groups"),
        "hash": cfg.get("dataset_hash"),
    }


def _split_text(ds: Mapping[str, Any]) -> str:
    if ds["split"] == "group":
        groups = ds["n_groups"]
        return "by group" + (f" ({groups} groups, held out whole)" if groups else "")
    if ds["split"] == "stratified":
        return "stratified (no groups)"
    return ds["split"]


def _position_text(position: Any) -> str:
    if position == "last" or position is None:
        return "last token"
    if position == "mean":
        return "mean over tokens"
    return f"token {position}"


# ------------------------------------------------------------------------- header


def _lead(r: Mapping[str, Any], d: Mapping[str, Any]) -> Markup:
    v = verdict(r)
    ds = _dataset(r)
    bi = d["best_index"]
    cfg = r.get("config") if isinstance(r.get("config"), Mapping) else {}
    badge = (
        Markup('<span class="badge ok">clear</span>')
        if v["clear"]
        else Markup('<span class="badge warn">not clear</span>')
    )
    parts = [
        Markup('<p class="verdict" style="font-size: 15px; margin: 0 0 4px">{} {}</p>').format(
            v["text"], badge
        )
    ]
    if d["n"]:
        sel = d["selectivity"][bi]
        ct = d["control_task_accuracy"][bi]
        extra = f"Selectivity (held-out − control-task accuracy) at layer {d['layers'][bi]}: "
        extra += f"{format_number(sel)}."
        if math.isfinite(ct) and ct >= 0.6:
            extra += (
                f" The control task reaches {format_number(ct)}, well above chance: the probe "
                "can memorise final words, so read the accuracy with that in mind."
            )
        parts.append(Markup('<p style="margin: 0; color: var(--ink-2)">{}</p>').format(extra))

    dataset_text = ds["path"]
    facts: list[tuple[str, Any]] = [
        ("model", r.get("model", "unknown")),
        ("dataset", dataset_text),
        (
            "examples",
            f"{format_number(ds['n'])} ({format_number(r.get('n_train'))} train / "
            f"{format_number(r.get('n_test'))} test)",
        ),
        ("split", _split_text(ds)),
    ]
    if ds["labels"]:
        facts.append(("labels", " / ".join(ds["labels"])))
    if d["n"]:
        facts.append(("best layer", d["layers"][bi]))
        facts.append(
            (
                "held-out accuracy",
                _pm(d["test_accuracy"][bi], d["test_accuracy_std"][bi])
                + f" over {format_number(cfg.get('seeds'))} seeds",
            )
        )
    dl = Markup("").join(
        Markup("<div><dt>{}</dt><dd>{}</dd></div>").format(
            k, format_number(val) if isinstance(val, int | float) else str(val)
        )
        for k, val in facts
    )
    parts.append(Markup('<dl class="facts">{}</dl>').format(dl))
    warnings = [str(w) for w in r.get("warnings") or []]
    if warnings:
        items = Markup("").join(Markup("<li>{}</li>").format(w) for w in warnings)
        parts.append(
            Markup(
                '<div class="warnings" role="alert" style="margin-top: 14px; padding: 8px 14px; '
                "background: var(--warn-soft); border: 1px solid #f3c98b; "
                'border-left: 4px solid var(--warn); border-radius: 6px; color: #5c3300">'
                '<strong style="color: var(--warn)">{} {}</strong>'
                '<ul style="margin: 4px 0 2px; padding-left: 20px">{}</ul></div>'
            ).format("⚠", "Warning" if len(warnings) == 1 else f"{len(warnings)} warnings", items)
        )
    return Markup("").join(parts)


# ------------------------------------------------------------------------ figures


def _accuracy_figure(d: Mapping[str, Any]) -> Section:
    bi = d["best_index"]
    if d["n"] == 1:
        rows = [
            ("held-out accuracy", "test_accuracy", TEST_COLOR),
            ("train accuracy", "train_accuracy", TRAIN_COLOR),
            ("shuffled labels", "shuffled_accuracy", SHUFFLED_COLOR),
            ("random weights", "random_weights_accuracy", RANDOM_COLOR),
            ("bag of words", "bow_accuracy", BOW_COLOR),
            ("control task", "control_task_accuracy", CONTROL_TASK_COLOR),
            ("majority class", "majority_rate", MAJORITY_COLOR),
        ]
        svg = bar_chart_svg(
            [label for label, _, _ in rows],
            [d[k][0] for _, k, _ in rows],
            errors=[d[k + "_std"][0] for _, k, _ in rows],
            colors=[c for _, _, c in rows],
            x_label="accuracy",
            title=f"Accuracy at layer {d['layers'][0]}",
            x_min=0.0,
            x_max=1.0,
            width=720.0,
        )
        caption = (
            "Mean over seeds, whiskers ± one standard deviation. Only one layer was probed, so "
            "the baselines are shown side by side instead of as curves."
        )
        return Section("Accuracy and baselines", figure(svg, caption))

    test, std = d["test_accuracy"], d["test_accuracy_std"]
    series = {
        "held-out accuracy (± seed std)": test,
        "best control": d["control"],
        "control task": d["control_task_accuracy"],
        "majority class": d["majority_rate"],
        "train accuracy": d["train_accuracy"],
    }
    styles = {
        "held-out accuracy (± seed std)": {"color": TEST_COLOR},
        "best control": {"color": CONTROL_COLOR},
        "control task": {"color": CONTROL_TASK_COLOR, "dash": True},
        "majority class": {"color": MAJORITY_COLOR},
        "train accuracy": {"color": TRAIN_COLOR},
    }
    lo = [m - s if math.isfinite(s) else m for m, s in zip(test, std, strict=True)]
    hi = [m + s if math.isfinite(s) else m for m, s in zip(test, std, strict=True)]
    svg = line_chart_svg(
        series,
        d["layers"],
        x_label="layer",
        y_label="accuracy",
        title="Held-out accuracy by layer",
        bands={"held-out accuracy (± seed std)": (lo, hi)},
        styles=styles,
        width=1000.0,
        height=380.0,
        y_min=0.0,
        y_max=1.0,
    )
    caption = (
        f"Held-out (test) accuracy, mean over seeds with a ± one standard deviation band; "
        f"best layer {d['layers'][bi]}. Best control: per layer, the best of shuffled labels, "
        "random weights and bag of words. Control task (dashed): random labels per final "
        "word, the probe's memorisation capacity. Train accuracy is drawn faintly: it is "
        "measured on the data the probe was fit on. Hover a point for its value."
    )
    return Section("Accuracy by layer", figure(svg, caption))


def _table_section(d: Mapping[str, Any]) -> Section:
    bi = d["best_index"]
    cols = [
        "layer", "test acc (mean ± std)", "AUROC", "train acc", "shuffled", "random weights",
        "BoW", "control task", "selectivity", "majority",
    ]  # fmt: skip
    rows, classes = [], []
    for i, layer in enumerate(d["layers"]):
        best = i == bi
        rows.append(
            [
                Markup('<strong>{}</strong> <span class="badge ok">best</span>').format(layer)
                if best
                else Markup("{}").format(layer),
                _num_cell(_pm(d["test_accuracy"][i], d["test_accuracy_std"][i])),
                _num_cell(format_number(d["test_auroc"][i])),
                _num_cell(
                    format_number(d["train_accuracy"][i]),
                    faint=True,
                    title="train: accuracy on the probe's own training data, "
                    + _pm(d["train_accuracy"][i], d["train_accuracy_std"][i]),
                ),
                _num_cell(format_number(d["shuffled_accuracy"][i])),
                _num_cell(format_number(d["random_weights_accuracy"][i])),
                _num_cell(format_number(d["bow_accuracy"][i])),
                _num_cell(format_number(d["control_task_accuracy"][i])),
                _num_cell(_signed(d["selectivity"][i])),
                _num_cell(format_number(d["majority_rate"][i])),
            ]
        )
        classes.append("baseline best-layer" if best else None)
    body = table(cols, rows, row_classes=classes)
    return Section(
        "Layer by layer",
        body,
        "Means over seeds (± standard deviation for test accuracy). The train column (faint) is "
        "accuracy on the probe's own training data. BoW: bag of words. Selectivity = test "
        "accuracy − control-task accuracy. Highlighted row: the best layer by held-out "
        "accuracy.",
    )


def _baselines_section(d: Mapping[str, Any], r: Mapping[str, Any]) -> Section:
    ds = _dataset(r)
    rw_off = d["n"] > 0 and all(math.isnan(v) for v in d["random_weights_accuracy"])
    items = [
        (
            "Held-out accuracy",
            "the probe (standardised logistic regression on one layer's "
            "residual stream) scored on examples it was not trained on, averaged over seeds.",
        ),
        (
            "Shuffled labels",
            "the same probe trained on randomly permuted labels and scored "
            "on the true ones: what a probe reaches from chance and memorisation alone.",
        ),
        (
            "Random weights",
            "the same probe on the same architecture with random weights, "
            "which tells whether training the model put the feature there"
            + (" (disabled for this run)." if rw_off else "."),
        ),
        (
            "Bag of words",
            "logistic regression on the text's word counts: if it matches the "
            "probe, the label can be read off the surface words without the model.",
        ),
        ("Majority class", "the accuracy of always answering the test split's most common label."),
        (
            "Best control",
            "per layer, the best of shuffled labels, random weights and bag of "
            "words; the verdict compares the probe with it.",
        ),
    ]
    lis = Markup("").join(Markup("<li><strong>{}</strong>: {}</li>").format(k, v) for k, v in items)
    baselines = Markup(
        '<div class="note" style="margin-bottom: 10px"><ul style="margin: 0; '
        'padding-left: 18px">{}</ul></div>'
    ).format(lis)
    split_remark = (
        " Here the split is by group, so test examples mostly end in words the probe never saw "
        "in training and the control task should sit near chance."
        if ds["split"] == "group"
        else " Here the split is stratified, so the same final words can appear in train and "
        "test and the control task can sit well above chance."
    )
    control = _note_div(
        "Control task and selectivity (Hewitt & Liang, 2019): every final word type gets a "
        "fixed random label, and the probe is trained and tested on those labels. When the "
        "same final words appear in train and test (city names, say), a probe can memorise "
        "word → label, so control-task accuracy well above chance measures the probe's "
        "memorisation capacity, not the feature. Selectivity = held-out accuracy − "
        "control-task accuracy; a probe that is accurate but not selective may be "
        "memorising rather than reading the feature." + split_remark
    )
    return Section("Baselines, control task and selectivity", baselines + control)


def _setup_section(r: Mapping[str, Any]) -> Section:
    cfg = r.get("config") if isinstance(r.get("config"), Mapping) else {}
    ds = _dataset(r)
    layers = [int(x) for x in r.get("layers") or []]
    if len(layers) > 8 and layers == list(range(layers[0], layers[-1] + 1)):
        layer_text = f"{layers[0]}–{layers[-1]} ({len(layers)} layers)"
    else:
        layer_text = ", ".join(str(x) for x in layers) or MISSING
    items: dict[str, Any] = {
        "dataset": ds["path"],
        "dataset hash": Markup("<code>{}</code>").format(ds["hash"]) if ds["hash"] else None,
        "examples": ds["n"],
        "labels (0 / 1)": " / ".join(ds["labels"]) if ds["labels"] else None,
        "split": _split_text(ds),
        "test fraction": cfg.get("test_size"),
        "train / test examples (per seed)": f"{format_number(r.get('n_train'))} / "
        f"{format_number(r.get('n_test'))}",
        "seeds": cfg.get("seeds"),
        "layers": layer_text,
        "position": _position_text(cfg.get("position")),
        "regularisation C": cfg.get("C"),
    }
    return Section("Setup", kv_table(items))


# ----------------------------------------------------------------------- ablation


def _directions(ab: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    found = [
        (str(k), v)
        for k, v in ab.items()
        if isinstance(v, Mapping) and "kl" in v and isinstance(v.get("random"), Mapping)
    ]
    order = {name: i for i, name in enumerate(DIRECTION_NAMES)}
    return sorted(found, key=lambda kv: (order.get(kv[0], len(order)), kv[0]))


def _random(dd: Mapping[str, Any], key: str) -> list[float]:
    vals = dd["random"].get(key) or []
    return [_f(v) for v in vals] if isinstance(vals, Sequence) else []


def _bins(n: int) -> int:
    """Histogram bins for n values: about √n + 2, between 4 and 12."""
    return max(4, min(12, math.ceil(math.sqrt(max(n, 1))) + 2))


def _direction_section(ab: Mapping[str, Any], name: str, dd: Mapping[str, Any]) -> Section:
    label = DIRECTION_NAMES.get(name, name)
    kls = _random(dd, "kl")
    n_rand = len(kls)
    panels = [
        histogram_svg(
            kls,
            marker=_f(dd.get("kl")),
            marker_label=f"{label}: {format_number(dd.get('kl'))} (percentile "
            f"{_pct_text(dd.get('kl_percentile', dd.get('percentile')))}, "
            f"z {_z_text(dd.get('kl_z'))})",
            x_label="KL(clean ‖ ablated), nats",
            y_label="random directions",
            title="KL of the next-token distribution",
            bins=_bins(len(kls)),
        )
    ]
    lds = _random(dd, "logit_diff_change")
    has_ld = _fin(dd.get("logit_diff_change")) and any(math.isfinite(v) for v in lds)
    if has_ld:
        panels.append(
            histogram_svg(
                lds,
                marker=_f(dd.get("logit_diff_change")),
                marker_label=f"{label}: {format_number(dd.get('logit_diff_change'))} "
                f"(percentile {_pct_text(dd.get('logit_diff_percentile'))}, "
                f"z {_z_text(dd.get('logit_diff_z'))})",
                x_label="drop in logit-gap separation",
                y_label="random directions",
                title="Logit-gap separation removed",
                bins=_bins(len(lds)),
            )
        )
    body = figure(
        Markup('<div class="fig-row">{}</div>').format(Markup("").join(panels)),
        f"Bars: the effects of {n_rand} variance-matched random directions at layer "
        f"{ab.get('layer')}. Red line: the {label}."
        + ("" if has_ld else " No logit-gap histogram: the dataset names no target tokens."),
    )
    return Section(f"Ablating the {label} at layer {ab.get('layer')}", body)


def _pct_z(pct: Any, z: Any) -> str:
    if not _fin(pct) and math.isnan(_f(z)):
        return MISSING
    return f"{_pct_text(pct)} / {_z_text(z)}"


def _ablation_summary(ab: Mapping[str, Any]) -> Section:
    clean_acc = _f(ab.get("clean_later_probe_accuracy"))
    later = ab.get("later_layer")
    cols = [
        "direction", "KL (nats)", "KL pct / z", "gap change", "gap pct / z", "gap removed",
        f"probe acc, layer {later}", "variance",
    ]  # fmt: skip
    rows, classes = [], []
    for name, dd in _directions(ab):
        label = SHORT_NAMES.get(name, name)
        acc = _f(dd.get("later_probe_accuracy"))
        acc_text = format_number(acc)
        if math.isfinite(acc) and math.isfinite(clean_acc):
            acc_text += f" ({_signed(acc - clean_acc)})"
        removed = _f(dd.get("logit_diff_removed_fraction"))
        rows.append(
            [
                Markup("<strong>{}</strong>").format(label),
                _num_cell(format_number(dd.get("kl"), 4)),
                _num_cell(
                    _pct_z(dd.get("kl_percentile", dd.get("percentile")), dd.get("kl_z")),
                    title="percentile among the random directions / z-score",
                ),
                _num_cell(_signed(dd.get("logit_diff_change"))),
                _num_cell(
                    _pct_z(dd.get("logit_diff_percentile"), dd.get("logit_diff_z")),
                    title="percentile among the random directions / z-score",
                ),
                _num_cell(f"{100 * removed:.0f}%" if math.isfinite(removed) else MISSING),
                _num_cell(acc_text),
                _num_cell(format_number(dd.get("variance"))),
            ]
        )
        classes.append(None)
        rkl, rld = _random(dd, "kl"), _random(dd, "logit_diff_change")
        racc, rvar = _random(dd, "later_probe_accuracy"), _random(dd, "variance")
        rows.append(
            [
                Markup('<span style="{}">{} random, same variance</span>').format(_FAINT, len(rkl)),
                _num_cell(_pm(_mean(rkl), _std(rkl), 4), faint=True),
                _num_cell("", faint=True),
                _num_cell(_pm(_mean(rld), _std(rld)), faint=True),
                _num_cell("", faint=True),
                _num_cell("", faint=True),
                _num_cell(_pm(_mean(racc), _std(racc)), faint=True),
                _num_cell(
                    _pm(_mean(rvar), _std(rvar)),
                    faint=True,
                    title="mean ± std of the random directions' variance",
                ),
            ]
        )
        classes.append("dim")
    clean = (
        f"Ablation at layer {ab.get('layer')} on {format_number(ab.get('n_examples'))} "
        f"prompts. Clean model: logit-gap separation {format_number(ab.get('clean_logit_diff'))}; "
        f"a probe retrained at layer {later} reaches {format_number(clean_acc)} held-out "
        "accuracy."
    )
    body = paragraph(clean) + table(cols, rows, row_classes=classes)
    explain = _note_div(
        f"Each direction u is removed from the residual stream at layer {ab.get('layer')}, at "
        "every position (h ← h − (h·u) u), and compared with random directions matched in "
        "variance: the activations vary as much along each random direction as along u (see "
        "the variance column), so a random direction is not a weaker intervention. "
        "KL: the mean KL(clean ‖ ablated) of the next-token distribution at the last token. "
        "Logit gap: logit(target₁) − logit(target₀); separation: its class-1 mean minus its "
        "class-0 mean; gap change: clean minus ablated separation; gap removed: that change "
        f"as a share of the clean separation. Probe acc: a probe retrained at layer {later} on "
        "the ablated stream (in brackets: the change from clean). pct / z: the percentile of "
        "the effect among the random directions (the share with a smaller effect) and its "
        "z-score, (effect − random mean) / random std. Faint rows: the random directions, "
        "mean ± std."
    )
    return Section("Directional ablation", body + explain)


# ------------------------------------------------------------------------- report


def _build(result: Mapping[str, Any]) -> tuple[str, str, Markup, list[Section]]:
    r = result
    d = _layer_data(r)
    title = f"Linear probe — {r.get('model', 'unknown model')}"
    ds = _dataset(r)
    subtitle = f"Is the label linearly readable from the residual stream? Dataset: {ds['path']}."
    sections = []
    if d["n"]:
        sections += [_accuracy_figure(d), _table_section(d)]
    sections += [_baselines_section(d, r), _setup_section(r)]
    ab = r.get("ablation")
    if isinstance(ab, Mapping):
        dirs = _directions(ab)
        sections.append(_ablation_summary(ab))
        sections += [_direction_section(ab, name, dd) for name, dd in dirs]
    return title, subtitle, _lead(r, d), sections


def render_probe_report(result: dict, manifest: dict) -> str:
    """The linear-probe report as one self-contained HTML document."""
    title, subtitle, lead, sections = _build(result)
    return render_report(title, sections, dict(manifest), subtitle=subtitle, lead=lead)


def write_probe_report(path: str | os.PathLike[str], result: dict, manifest: dict) -> Path:
    """Render the probe report and write it atomically to ``path``."""
    return atomic_write_text(path, render_probe_report(result, manifest))
