"""The logit-lens HTML report.

Input is the lens ``results.json`` dict (L layers, P positions, K top-k)::

    {"model": str, "prompt": str, "chat": bool, "lens": "logit",
     "tokens": [str]*P, "layers": [int]*L,
     "top1": [[str]*P]*L, "top1_prob": [[float]*P]*L,
     "topk": [[[{"token": str, "id": int, "prob": float}]*K]*P]*L,
     "kl": [[float]*P]*L, "entropy": [[float]*P]*L,
     "final_top1": [str]*P}

``kl`` is KL(final ‖ layer) in nats, ``entropy`` the lens distribution's
entropy in nats, ``final_top1`` the model's own top-1 next token.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from markupsafe import Markup

from interp.errors import InterpError
from reports.heatmap import heatmap_svg, line_chart_svg
from reports.html import (
    Section,
    atomic_write_text,
    figure,
    format_number,
    paragraph,
    render_report,
    table,
    token_html,
    token_repr,
)

__all__ = ["render_lens_report", "validate_lens_result", "write_lens_report"]

KL_COLOR = "#3b6fb6"
ENTROPY_COLOR = "#e07b28"
TUNED_COLOR = "#d1495b"

NOTE_POS0 = (
    "Position 0 is left out of the means: its residual stream is an outlier (it acts as an "
    "attention sink, with a huge norm and near-constant predictions) and would dominate "
    "any average."
)
NOTE_KL0 = (
    "KL(final ‖ layer) is 0 at the last layer by construction: there the lens applies the "
    "model's own final norm and unembedding, so it reproduces the model's logits exactly."
)


# --------------------------------------------------------------------- validation


def _num(value: Any, where: str) -> float:
    if value is None:
        return math.nan
    if isinstance(value, bool):
        raise InterpError(f"lens result {where} must be a number, got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise InterpError(f"lens result {where} must be a number, got {value!r}") from None


def _grid(result: Mapping[str, Any], key: str, n_layers: int, n_pos: int) -> list[list[Any]]:
    grid = result[key]
    if not isinstance(grid, list) or len(grid) != n_layers:
        raise InterpError(f"lens result {key!r} must have one row per layer ({n_layers})")
    for li, row in enumerate(grid):
        if not isinstance(row, list) or len(row) != n_pos:
            raise InterpError(
                f"lens result {key!r} row {li} must have one entry per position ({n_pos})"
            )
    return grid


def validate_lens_result(result: Mapping[str, Any]) -> dict[str, Any]:
    """Check the schema and shapes of a lens result; return a normalised copy.

    Raises :class:`InterpError` naming the first problem (missing key, wrong
    shape, non-numeric value).
    """
    if not isinstance(result, Mapping):
        raise InterpError(f"lens result must be a dict, not {type(result).__name__}")
    required = (
        "model", "prompt", "tokens", "layers", "top1", "top1_prob",
        "topk", "kl", "entropy", "final_top1",
    )  # fmt: skip
    missing = [k for k in required if k not in result]
    if missing:
        raise InterpError(f"lens result is missing {', '.join(repr(k) for k in missing)}")
    tokens = result["tokens"]
    if not isinstance(tokens, list) or not tokens:
        raise InterpError("lens result 'tokens' must be a non-empty list of strings")
    layers = result["layers"]
    if not isinstance(layers, list) or not layers:
        raise InterpError("lens result 'layers' must be a non-empty list of ints")
    try:
        layers = [int(x) for x in layers]
    except (TypeError, ValueError):
        raise InterpError("lens result 'layers' must be a list of ints") from None
    n_layers, n_pos = len(layers), len(tokens)

    top1 = _grid(result, "top1", n_layers, n_pos)
    top1_prob = _grid(result, "top1_prob", n_layers, n_pos)
    kl = _grid(result, "kl", n_layers, n_pos)
    entropy = _grid(result, "entropy", n_layers, n_pos)
    topk = _grid(result, "topk", n_layers, n_pos)
    final_top1 = result["final_top1"]
    if not isinstance(final_top1, list) or len(final_top1) != n_pos:
        raise InterpError(f"lens result 'final_top1' must have one entry per position ({n_pos})")

    norm_topk: list[list[list[dict[str, Any]]]] = []
    for li, row in enumerate(topk):
        norm_row = []
        for p, entries in enumerate(row):
            if not isinstance(entries, list):
                raise InterpError(f"lens result topk[{li}][{p}] must be a list")
            items = []
            for e in entries:
                if not isinstance(e, Mapping) or "token" not in e or "prob" not in e:
                    raise InterpError(
                        f"lens result topk[{li}][{p}] entries need 'token' and 'prob'"
                    )
                items.append(
                    {
                        "token": str(e["token"]),
                        "id": e.get("id"),
                        "prob": _num(e["prob"], f"topk[{li}][{p}] prob"),
                    }
                )
            norm_row.append(items)
        norm_topk.append(norm_row)

    def nums(grid: list[list[Any]], key: str) -> list[list[float]]:
        return [
            [_num(v, f"{key}[{li}][{p}]") for p, v in enumerate(row)] for li, row in enumerate(grid)
        ]

    return {
        "model": str(result["model"]),
        "prompt": str(result["prompt"]),
        "chat": bool(result.get("chat", False)),
        "lens": str(result.get("lens", "logit")),
        "tokens": [str(t) for t in tokens],
        "layers": layers,
        "top1": [[str(t) for t in row] for row in top1],
        "top1_prob": nums(top1_prob, "top1_prob"),
        "topk": norm_topk,
        "kl": nums(kl, "kl"),
        "entropy": nums(entropy, "entropy"),
        "final_top1": [str(t) for t in final_top1],
        **{
            k: [float(x) for x in result[k]]
            for k in ("final_top1_prob", "final_entropy")
            if isinstance(result.get(k), list) and len(result[k]) == len(tokens)
        },
    }


# ------------------------------------------------------------------------ helpers


def _mean(xs: Sequence[float]) -> float:
    vals = [x for x in xs if math.isfinite(x)]
    return sum(vals) / len(vals) if vals else math.nan


def _quantile(xs: Sequence[float], q: float) -> float:
    vals = sorted(x for x in xs if math.isfinite(x))
    if not vals:
        return math.nan
    pos = q * (len(vals) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(vals) - 1)
    return vals[lo] + (vals[hi] - vals[lo]) * (pos - lo)


def _cell_tooltip(r: Mapping[str, Any], li: int, p: int) -> str:
    layer = r["layers"][li]
    lines = [
        f"layer {layer} · position {p}",
        f"input token: {token_repr(r['tokens'][p])}",
        f"top-{len(r['topk'][li][p])} next-token predictions:",
    ]
    for rank, e in enumerate(r["topk"][li][p], start=1):
        lines.append(f"  {rank}. {token_repr(e['token'])}  {format_number(e['prob'])}")
    lines.append(f"KL(final ‖ layer) = {format_number(r['kl'][li][p])} nats")
    lines.append(f"entropy = {format_number(r['entropy'][li][p])} nats")
    lines.append(f"model's final top-1: {token_repr(r['final_top1'][p])}")
    return "\n".join(lines)


def _lead(r: Mapping[str, Any]) -> Markup:
    last = len(r["tokens"]) - 1
    # Earliest layer from which the lens's top-1 matches the model's, at every later layer.
    first_match = None
    for li in range(len(r["layers"]) - 1, -1, -1):
        if r["top1"][li][last] != r["final_top1"][last]:
            break
        first_match = r["layers"][li]
    facts = [
        ("lens", Markup("{}").format(r["lens"])),
        ("chat template", Markup("yes" if r["chat"] else "no")),
        ("layers × positions", Markup("{} × {}").format(len(r["layers"]), len(r["tokens"]))),
        ("model's next token", token_html(r["final_top1"][last])),
        (
            "lens agrees from layer",
            Markup("{}").format(first_match if first_match is not None else "never"),
        ),
    ]
    dl = Markup("").join(Markup("<div><dt>{}</dt><dd>{}</dd></div>").format(k, v) for k, v in facts)
    return Markup(
        '<p class="prompt-label">Prompt</p><pre class="prompt">{}</pre><dl class="facts">{}</dl>'
    ).format(r["prompt"], dl)


# ------------------------------------------------------------------------ report


def _heatmap_svg(r: Mapping[str, Any]) -> Markup:
    n_layers, n_pos = len(r["layers"]), len(r["tokens"])
    order = list(range(n_layers - 1, -1, -1))  # last layer at the top
    return heatmap_svg(
        [r["top1_prob"][li] for li in order],
        row_labels=[str(r["layers"][li]) for li in order],
        col_labels=r["tokens"],
        col_sublabels=[str(p) for p in range(n_pos)],
        cell_text=[r["top1"][li] for li in order],
        tooltips=[[_cell_tooltip(r, li, p) for p in range(n_pos)] for li in order],
        emphasis=[[r["top1"][li][p] == r["final_top1"][p] for p in range(n_pos)] for li in order],
        vmin=0.0,
        vmax=1.0,
        colormap="viridis",
        colorbar_label="top-1 probability",
        x_label="input token (position)",
        y_label="layer",
    )


HEATMAP_CAPTION = (
        "Each cell shows the lens's top-1 next-token prediction at that layer, read from the "
        "residual stream at the input token below it, coloured by its probability. Bold: "
        "the same token as the model's own final prediction at that position. Whitespace is "
        "shown as ␣ (space) and ↵ (newline). Hover a cell for the top-k tokens, KL and entropy."
)


def _heatmap_section(r: Mapping[str, Any]) -> Section:
    return Section("Top-1 prediction by layer and position",
                   figure(_heatmap_svg(r), HEATMAP_CAPTION))


def _side_by_side_section(r: Mapping[str, Any], t: Mapping[str, Any]) -> Section:
    panels = Markup('<div class="fig-row">{}{}</div>').format(
        figure(_heatmap_svg(r), "Logit lens"), figure(_heatmap_svg(t), "Tuned lens")
    )
    return Section("Top-1 prediction by layer and position: logit lens | tuned lens",
                   panels, HEATMAP_CAPTION)


def _compare_section(r: Mapping[str, Any], t: Mapping[str, Any]) -> Section:
    last = len(r["tokens"]) - 1
    first = 1 if last >= 1 else 0

    def mean_kl(res: Mapping[str, Any]) -> list[float]:
        return [_mean(row[first:]) for row in res["kl"]]

    series = {
        "logit lens, last position": [row[last] for row in r["kl"]],
        "tuned lens, last position": [row[last] for row in t["kl"]],
        "logit lens, mean": mean_kl(r),
        "tuned lens, mean": mean_kl(t),
    }
    styles = {
        "logit lens, last position": {"color": KL_COLOR},
        "tuned lens, last position": {"color": TUNED_COLOR},
        "logit lens, mean": {"color": KL_COLOR, "dash": True},
        "tuned lens, mean": {"color": TUNED_COLOR, "dash": True},
    }
    svg = line_chart_svg(series, r["layers"], x_label="layer", y_label="nats",
                         title="KL(final ‖ layer), logit lens vs tuned lens", styles=styles,
                         width=760.0, height=320.0)
    caption = ("Solid: the last position. Dashed: the mean over positions "
               f"{first}–{last}. The tuned lens reads layer L through a learned translator.")
    return Section("KL to the final output, both lenses", figure(svg, caption),
                   (NOTE_KL0 + " " + (NOTE_POS0 if last >= 1 else "")).strip())


def _curve_svg(r: Mapping[str, Any], key: str, title: str, color: str) -> Markup:
    """One panel: ``key`` ("kl" or "entropy") by layer at the last position, and its mean."""
    n_pos = len(r["tokens"])
    last = n_pos - 1
    series: dict[str, list[float]] = {"last position": [row[last] for row in r[key]]}
    styles: dict[str, dict[str, Any]] = {"last position": {"color": color}}
    bands: dict[str, tuple[list[float], list[float]]] = {}
    if n_pos > 1:
        label = "mean, positions 1–" + str(last) if last > 1 else "position 1"
        per_layer = [[row[p] for p in range(1, n_pos)] for row in r[key]]
        series[label] = [_mean(v) for v in per_layer]
        styles[label] = {"color": color, "dash": True}
        if n_pos > 2:
            bands[label] = (
                [_quantile(v, 0.25) for v in per_layer],
                [_quantile(v, 0.75) for v in per_layer],
            )
    return line_chart_svg(
        series,
        r["layers"],
        x_label="layer",
        y_label="nats",
        title=title,
        bands=bands or None,
        styles=styles,
        width=520.0,
        height=300.0,
    )


def _curves_section(r: Mapping[str, Any]) -> Section:
    n_pos = len(r["tokens"])
    panels = Markup('<div class="fig-row">{}{}</div>').format(
        _curve_svg(r, "kl", "KL(final ‖ layer)", KL_COLOR),
        _curve_svg(r, "entropy", "Entropy of the lens distribution", ENTROPY_COLOR),
    )
    caption = "Solid: the last position (the prediction of the next token)."
    if n_pos > 2:
        caption += (
            " Dashed: mean over positions 1 to P−1, shaded between the 25th and 75th "
            "percentile over those positions."
        )
    elif n_pos == 2:
        caption += " Dashed: position 1."
    note = NOTE_KL0 + " " + (NOTE_POS0 if n_pos > 1 else "")
    return Section(
        "KL to the final output and entropy, by layer", figure(panels, caption), note.strip()
    )


def _table_section(r: Mapping[str, Any], title: str = "Last position, layer by layer"
                   ) -> Section:
    last = len(r["tokens"]) - 1
    final = r["final_top1"][last]
    final_prob = (r.get("final_top1_prob") or [None] * (last + 1))[last]
    final_ent = (r.get("final_entropy") or [None] * (last + 1))[last]
    rows: list[list[Any]] = [
        [Markup("<strong>model output</strong>"), token_html(final), final_prob, 0.0,
         final_ent, None]
    ]
    classes: list[str | None] = ["baseline"]
    for li in range(len(r["layers"]) - 1, -1, -1):
        tok = r["top1"][li][last]
        same = tok == final
        rows.append(
            [
                str(r["layers"][li]),
                token_html(tok),
                r["top1_prob"][li][last],
                r["kl"][li][last],
                r["entropy"][li][last],
                Markup('<span class="check" title="matches the final prediction">✓</span>')
                if same
                else Markup(""),
            ]
        )
        classes.append(None)
    body = paragraph(
        Markup("Predictions for the token after the last input token {}.").format(
            token_html(r["tokens"][last])
        )
    ) + table(
        ["layer", "top-1", "prob", "KL (nats)", "entropy (nats)", "matches final"],
        rows,
        row_classes=classes,
    )
    return Section(
        title,
        body,
        "First row: the model's own next-token prediction, the reference the lens is "
        "compared to (its KL to itself is 0 by definition). ✓ marks layers whose top-1 "
        "already matches it.",
    )


def _build(result: Mapping[str, Any]) -> tuple[str, str, Markup, list[Section]]:
    r = validate_lens_result(result)
    if isinstance(result.get("tuned"), Mapping):
        t = validate_lens_result(result["tuned"])
        sections = [
            _side_by_side_section(r, t), _compare_section(r, t),
            _table_section(r, "Logit lens: last position, layer by layer"),
            _table_section(t, "Tuned lens: last position, layer by layer"),
        ]
        return (f"Logit lens and tuned lens — {r['model']}",
                "Each layer read with the model's final norm and unembedding, directly (logit "
                "lens) and through a learned per-layer translator (tuned lens).",
                _lead(r), sections)
    title = f"Logit lens — {r['model']}"
    subtitle = (
        "What each layer's residual stream would predict if decoded with the model's final "
        "norm and unembedding."
    )
    sections = [_heatmap_section(r), _curves_section(r), _table_section(r)]
    return title, subtitle, _lead(r), sections


def render_lens_report(result: dict, manifest: dict) -> str:
    """The logit-lens report as one self-contained HTML document."""
    title, subtitle, lead, sections = _build(result)
    return render_report(title, sections, manifest, subtitle=subtitle, lead=lead)


def write_lens_report(path: str | os.PathLike[str], result: dict, manifest: dict) -> Path:
    """Render the logit-lens report and write it atomically to ``path``."""
    return atomic_write_text(path, render_lens_report(result, manifest))
